/* Plots for the report, drawn by gnuplot's svg terminal and inlined: the
 * optimizer's convergence, box plots of evaluations to the first alignment
 * (seed 004 Fig. 5-8), and the policies' hit rates with 95% intervals
 * against their guaranteed bounds. Data goes into the script as datablocks,
 * so one self-contained script per plot. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "report_internal.h"

#define GNUPLOT_TIMEOUT_S 60
#define TERMINAL                                                                                   \
    "set terminal svg size 900,400 dynamic noenhanced font 'sans,11' background '#ffffff'\n"

int report_have_gnuplot(void)
{
    const char *path = getenv("PATH");
    char buf[4096];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)n, p);
        if (access(buf, X_OK) == 0)
            return 1;
        p += n + (colon ? 1 : 0);
    }
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    rbuf b = {0};
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        rb_add(&b, chunk, got);
    fclose(f);
    if (b.oom) {
        rb_free(&b);
        return NULL;
    }
    return b.s ? b.s : strdup("");
}

/* s with every `from` replaced by `to` (malloc'd), or NULL. */
static char *replace_all(const char *s, const char *from, const char *to)
{
    rbuf b = {0};
    size_t fl = strlen(from);
    for (const char *p = s;;) {
        const char *q = strstr(p, from);
        if (!q) {
            rb_puts(&b, p);
            break;
        }
        rb_add(&b, p, (size_t)(q - p));
        rb_puts(&b, to);
        p = q + fl;
    }
    return b.oom ? (rb_free(&b), NULL) : b.s;
}

/* gnuplot's SVG made fit to sit in HTML: no XML prolog, no namespace URLs
 * (HTML puts <svg> in its namespace by itself), ids unique per plot. */
static int inline_svg(rbuf *out, const char *svg, const char *id)
{
    const char *start = strstr(svg, "<svg");
    if (!start)
        return -1;
    char *a = replace_all(start, " xmlns=\"http://www.w3.org/2000/svg\"", "");
    char *b = a ? replace_all(a, " xmlns:xlink=\"http://www.w3.org/1999/xlink\"", "") : NULL;
    /* gpPt0, gpDot, gnuplot_canvas, textbox, ... and their references */
    char id1[64], id2[64], ref[64];
    snprintf(id1, sizeof id1, "id='%s_", id);
    snprintf(id2, sizeof id2, "id=\"%s_", id);
    snprintf(ref, sizeof ref, "href='#%s_", id);
    char *c = b ? replace_all(b, "id='", id1) : NULL;
    char *d = c ? replace_all(c, "id=\"", id2) : NULL;
    char *e = d ? replace_all(d, "href='#", ref) : NULL;
    char tag[96];
    snprintf(tag, sizeof tag, "<svg id='%s' class='plot'", id);
    char *g = e ? replace_all(e, "<svg", tag) : NULL;
    int rc = g ? 0 : -1;
    if (g)
        rb_puts(out, g);
    free(a), free(b), free(c), free(d), free(e), free(g);
    return rc;
}

static int run_gnuplot(const char *script, rbuf *out, const char *id, char *err, size_t errlen)
{
    const char *tmpdir = getenv("TMPDIR");
    char dir[4096], sp[4200], svg[4200], log[4200];
    snprintf(dir, sizeof dir, "%s/weft-report.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(err, errlen, "%.300s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(sp, sizeof sp, "%s/plot.gp", dir);
    snprintf(svg, sizeof svg, "%s/plot.svg", dir);
    snprintf(log, sizeof log, "%s/gnuplot.log", dir);
    FILE *f = fopen(sp, "w");
    int rc = -1;
    if (!f) {
        snprintf(err, errlen, "%.300s: %s", sp, strerror(errno));
        goto out;
    }
    fprintf(f, TERMINAL "set output '%s'\n%s", svg, script);
    fclose(f);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        FILE *l = freopen(log, "w", stderr);
        (void)l;
        if (!freopen("/dev/null", "w", stdout))
            _exit(127);
        execlp("gnuplot", "gnuplot", sp, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (w < 0 || now.tv_sec - t0.tv_sec > GNUPLOT_TIMEOUT_S) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            snprintf(err, errlen, "gnuplot did not finish within %d s", GNUPLOT_TIMEOUT_S);
            goto out;
        }
        struct timespec nap = {0, 20000000};
        nanosleep(&nap, NULL);
    }
    char *text = slurp(svg);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !text || inline_svg(out, text, id)) {
        char *msg = slurp(log);
        char *nl = msg ? strchr(msg, '\n') : NULL;
        if (nl)
            *nl = 0;
        snprintf(err, errlen, "gnuplot failed%s%s", msg && *msg ? ": " : "", msg ? msg : "");
        free(msg);
        free(text);
        goto out;
    }
    free(text);
    rc = 0;
out:
    unlink(sp), unlink(svg), unlink(log);
    rmdir(dir);
    return rc;
}

static void note(rbuf *out, const char *what, const char *why)
{
    rb_puts(out, "<p class='note'>");
    rb_esc(out, what);
    rb_puts(out, ": ");
    rb_esc(out, why);
    rb_puts(out, "</p>\n");
}

static int plot(rbuf *out, const char *script, const char *id, const char *what)
{
    char err[512];
    if (!report_have_gnuplot()) {
        note(out, what, "not drawn: gnuplot is not installed (scripts/bootstrap installs it)");
        return -1;
    }
    if (run_gnuplot(script, out, id, err, sizeof err)) {
        note(out, what, err);
        return -1;
    }
    return 0;
}

static const char *const algo_colors[] = {"#9aa3ad", "#2a9d8f", "#1f5fbf"};

int report_plot_convergence(rbuf *out, json_t *conv, const char *id)
{
    json_t *runs = json_object_get(conv, "runs");
    if (!json_array_size(runs)) {
        note(out, "convergence", "no search was run (nothing to align)");
        return -1;
    }
    rbuf s = {0};
    rb_puts(&s, "set logscale x\nset grid\nset key top right\n"
                "set xlabel 'fitness evaluations'\n"
                "set ylabel 'best fitness so far (Eq. 4)'\n");
    size_t i;
    json_t *r;
    json_array_foreach(runs, i, r)
    {
        rb_printf(&s, "$r%zu << EOD\n", i);
        size_t k;
        json_t *pt;
        json_array_foreach(json_object_get(r, "points"), k, pt)
            rb_printf(&s, "%lld %.9g\n", (long long)json_integer_value(json_array_get(pt, 0)),
                      json_number_value(json_array_get(pt, 1)));
        rb_puts(&s, "EOD\n");
    }
    rb_puts(&s, "plot ");
    json_array_foreach(runs, i, r)
    {
        const char *algo = json_string_value(json_object_get(r, "algorithm"));
        int hit = json_is_true(json_object_get(r, "hit"));
        char title[128];
        if (hit)
            snprintf(title, sizeof title, "%s: aligned after %lld evaluations", algo ? algo : "?",
                     (long long)json_integer_value(json_object_get(r, "evals_to_hit")));
        else
            snprintf(title, sizeof title, "%s: no alignment in %lld evaluations", algo ? algo : "?",
                     (long long)json_integer_value(json_object_get(r, "evaluations")));
        rb_printf(&s, "%s$r%zu using 1:2 with steps lw 2 lc rgb '%s' title '%s'", i ? ", " : "", i,
                  algo_colors[i % 3], title);
        if (hit) /* the last point of a hit run is the first alignment */
            rb_printf(&s,
                      ", $r%zu every ::%zu using 1:2 with points pt 7 ps 1.2 lc rgb '%s' "
                      "notitle",
                      i, json_array_size(json_object_get(r, "points")) - 1, algo_colors[i % 3]);
    }
    rb_puts(&s, "\n");
    int rc = s.oom ? -1 : plot(out, s.s, id, "convergence");
    rb_free(&s);
    return rc;
}

int report_plot_boxes(rbuf *out, json_t *const stats[], const char *const names[], size_t n,
                      const char *id)
{
    rbuf s = {0};
    rb_puts(&s, "set logscale y\nset grid ytics\nset style fill solid 0.3 border -1\n"
                "set style boxplot outliers pointtype 7\nset boxwidth 0.5\n"
                "set ylabel 'evaluations to the first alignment'\nset key off\n");
    rb_printf(&s, "set xrange [0.4:%zu.6]\nset xtics (", n);
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        json_int_t hits = json_integer_value(json_object_get(stats[i], "hits"));
        json_int_t runs = json_integer_value(json_object_get(stats[i], "runs"));
        rb_printf(&s, "%s'%s: %lld/%lld runs aligned' %zu", i ? ", " : "", names[i],
                  (long long)hits, (long long)runs, i + 1);
        any |= hits > 0;
    }
    rb_puts(&s, ")\n");
    if (!any) {
        rb_free(&s);
        note(out, "box plots", "no search run found an alignment");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        rb_printf(&s, "$b%zu << EOD\n", i);
        size_t k;
        json_t *v;
        json_array_foreach(json_object_get(stats[i], "evals_to_hit"), k,
                           v) if (json_integer_value(v) > 0)
            rb_printf(&s, "%lld\n", (long long)json_integer_value(v));
        rb_puts(&s, "EOD\n");
    }
    rb_puts(&s, "plot ");
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        if (json_integer_value(json_object_get(stats[i], "hits")) <= 0)
            continue;
        rb_printf(&s, "%s$b%zu using (%zu):1 with boxplot lc rgb '%s'", first ? "" : ", ", i, i + 1,
                  algo_colors[i % 3]);
        first = 0;
    }
    rb_puts(&s, "\n");
    int rc = s.oom ? -1 : plot(out, s.s, id, "box plots");
    rb_free(&s);
    return rc;
}

int report_plot_rates(rbuf *out, const replay_summary *sm, size_t n, const char *id)
{
    if (!n) {
        note(out, "hit rates", "no campaign");
        return -1;
    }
    /* A log axis shows a 12% rate next to a 0.07% bound; runs without a hit
     * sit on the floor with only their upper 95% limit. */
    double lo = 1;
    for (size_t i = 0; i < n; i++) {
        if (sm[i].ci_lo > 0 && sm[i].ci_lo < lo)
            lo = sm[i].ci_lo;
        if (sm[i].bound > 0 && sm[i].bound < lo)
            lo = sm[i].bound;
        if (sm[i].ci_hi > 0 && sm[i].ci_hi < lo)
            lo = sm[i].ci_hi;
    }
    double floor_y = pow(10, floor(log10(lo)) - 1);
    rbuf s = {0};
    rb_printf(&s,
              "set logscale y\nset grid ytics\nset key outside top center horizontal\n"
              "set yrange [%g:1.5]\n"
              "set xrange [0.5:%zu.5]\nset ylabel 'failing runs per run'\nset format y '%%g'\n"
              "set xtics (",
              floor_y, n);
    for (size_t i = 0; i < n; i++) {
        rb_printf(&s, "%s'%s d%llu", i ? ", " : "", sm[i].policy, (unsigned long long)sm[i].depth);
        if (!strcmp(sm[i].policy, "rpro"))
            rb_printf(&s, " r%llu", (unsigned long long)sm[i].radius);
        rb_printf(&s, ": %llu/%llu' %zu", (unsigned long long)sm[i].hits,
                  (unsigned long long)sm[i].runs, i + 1);
    }
    rb_puts(&s, ")\n$hit << EOD\n");
    int any_hit = 0, any_zero = 0, any_bound = 0;
    for (size_t i = 0; i < n; i++)
        if (sm[i].hits) {
            rb_printf(&s, "%zu %.9g %.9g %.9g\n", i + 1, sm[i].hit_rate, sm[i].ci_lo, sm[i].ci_hi);
            any_hit = 1;
        }
    rb_puts(&s, "EOD\n$zero << EOD\n");
    for (size_t i = 0; i < n; i++)
        if (!sm[i].hits) {
            rb_printf(&s, "%zu %.9g %.9g %.9g\n", i + 1, floor_y, floor_y, sm[i].ci_hi);
            any_zero = 1;
        }
    rb_puts(&s, "EOD\n$bound << EOD\n");
    for (size_t i = 0; i < n; i++)
        if (sm[i].bound > 0) {
            rb_printf(&s, "%zu %.9g\n", i + 1, sm[i].bound);
            any_bound = 1;
        }
    rb_puts(&s, "EOD\nplot ");
    const char *sep = "";
    if (any_hit) {
        rb_printf(&s,
                  "%s$hit using 1:2:3:4 with yerrorbars pt 7 ps 1.3 lw 2 lc rgb '#1f5fbf' "
                  "title 'measured hit rate, 95%% Clopper-Pearson interval'",
                  sep);
        sep = ", ";
    }
    if (any_zero) {
        rb_printf(&s,
                  "%s$zero using 1:2:3:4 with yerrorbars pt 6 ps 1.3 lw 2 lc rgb '#9aa3ad' "
                  "title 'no failing run: upper 95%% limit'",
                  sep);
        sep = ", ";
    }
    if (any_bound)
        rb_printf(&s,
                  "%s$bound using 1:2 with points pt 5 ps 1.4 lc rgb '#d62828' "
                  "title 'guaranteed lower bound per run'",
                  sep);
    rb_puts(&s, "\n");
    int rc = s.oom ? -1 : plot(out, s.s, id, "hit rates");
    rb_free(&s);
    return rc;
}
