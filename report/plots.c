/* Plots for the report, drawn by gnuplot's svg terminal and inlined, and
 * their captions: the optimizer's convergence, box plots of evaluations to
 * the first alignment (as Bhattacharya et al. plot them), and the policies'
 * hit rates with 95% intervals against their guaranteed bounds. Data goes into the script as
 * datablocks, so one self-contained script per plot. */
#include <ctype.h>
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
    "set encoding utf8\n"                                                                          \
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

/* "sa" -> "SA", as the captions and tables name the algorithms. */
static void algo_name(char *out, size_t len, const char *algo)
{
    snprintf(out, len, "%s", algo ? algo : "?");
    for (char *p = out; *p; p++)
        *p = (char)toupper((unsigned char)*p);
}

/* One search of the convergence data: its name (upper case), whether it
 * aligned, after how many evaluations, and its last best fitness. */
typedef struct conv_run {
    char name[16];
    int hit;
    long long evals;
    double first, last;
} conv_run;

static size_t conv_runs(json_t *conv, conv_run *out, size_t max)
{
    size_t i, n = 0;
    json_t *r;
    json_array_foreach(json_object_get(conv, "runs"), i, r)
    {
        if (n == max)
            break;
        conv_run *c = &out[n++];
        algo_name(c->name, sizeof c->name, json_string_value(json_object_get(r, "algorithm")));
        c->hit = json_is_true(json_object_get(r, "hit"));
        c->evals = (long long)json_integer_value(
            json_object_get(r, c->hit ? "evals_to_hit" : "evaluations"));
        json_t *pts = json_object_get(r, "points");
        c->first = json_number_value(json_array_get(json_array_get(pts, 0), 1));
        c->last =
            json_number_value(json_array_get(json_array_get(pts, json_array_size(pts) - 1), 1));
    }
    return n;
}

/* The y range with a margin, so that no curve runs along the frame. */
static void conv_yrange(json_t *runs, double *lo, double *hi)
{
    *lo = INFINITY, *hi = -INFINITY;
    size_t i, k;
    json_t *r, *pt;
    json_array_foreach(runs, i, r) json_array_foreach(json_object_get(r, "points"), k, pt)
    {
        double y = json_number_value(json_array_get(pt, 1));
        *lo = y < *lo ? y : *lo;
        *hi = y > *hi ? y : *hi;
    }
    double pad = (*hi - *lo) * 0.08;
    pad = pad > 0.5 ? pad : 0.5;
    *lo -= pad, *hi += pad;
}

int report_plot_convergence(rbuf *out, json_t *conv, const char *id)
{
    json_t *runs = json_object_get(conv, "runs");
    if (!json_array_size(runs)) {
        note(out, "convergence", "no search was run (nothing to align)");
        return -1;
    }
    double ylo, yhi;
    conv_yrange(runs, &ylo, &yhi);
    conv_run cr[8];
    size_t i, nc = conv_runs(conv, cr, 8);
    long long rightmost = 1;
    for (i = 0; i < nc; i++)
        rightmost = cr[i].evals > rightmost ? cr[i].evals : rightmost;
    rbuf s = {0};
    /* margins on both axes: no curve or dot on the frame */
    rb_printf(&s,
              "set logscale x\nset grid\nset key outside top center horizontal\n"
              "set yrange [%.9g:%.9g]\nset xrange [0.7:%lld]\n"
              "set xlabel 'fitness evaluations so far (log scale)'\n"
              "set ylabel 'best fitness so far (lower is better)'\n",
              ylo, yhi, rightmost * 2);
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
    /* The first alignment of each search: a dashed line down to the axis
     * and a label, since that evaluation count (not the height) is the
     * result. */
    for (i = 0; i < nc; i++) {
        if (!cr[i].hit)
            continue;
        /* the rightmost label goes left of its dot, inside the frame */
        int left = cr[i].evals == rightmost;
        rb_printf(&s,
                  "set arrow from %lld, graph 0 to %lld, first %.9g nohead dt 2 lw 1.5 "
                  "lc rgb '%s'\nset label '%s aligned' at %lld, first %.9g %s offset %s "
                  "textcolor rgb '%s'\n",
                  cr[i].evals, cr[i].evals, cr[i].last, algo_colors[i % 3], cr[i].name, cr[i].evals,
                  cr[i].last, left ? "right" : "left", left ? "-0.8,0.9" : "0.6,-0.9",
                  algo_colors[i % 3]);
    }
    rb_puts(&s, "plot ");
    for (i = 0; i < nc; i++) {
        char title[128];
        if (cr[i].hit)
            snprintf(title, sizeof title, "%.15s: first alignment after %lld evaluations",
                     cr[i].name, cr[i].evals);
        else
            snprintf(title, sizeof title, "%.15s: no alignment in %lld evaluations", cr[i].name,
                     cr[i].evals);
        rb_printf(&s, "%s$r%zu using 1:2 with steps lw 2 lc rgb '%s' title '%s'", i ? ", " : "", i,
                  algo_colors[i % 3], title);
        if (cr[i].hit) /* the last point of a hit run is the first alignment */
            rb_printf(&s,
                      ", $r%zu every ::%zu using 1:2 with points pt 7 ps 1.2 lc rgb '%s' "
                      "notitle",
                      i, json_array_size(json_object_get(json_array_get(runs, i), "points")) - 1,
                      algo_colors[i % 3]);
    }
    rb_puts(&s, "\n");
    int rc = s.oom ? -1 : plot(out, s.s, id, "convergence");
    rb_free(&s);
    return rc;
}

void report_caption_convergence(rbuf *out, json_t *conv)
{
    conv_run cr[8];
    size_t nc = conv_runs(conv, cr, 8);
    if (!nc)
        return;
    rb_printf(out,
              "Each curve is one search (seed %lld) lowering its fitness: for every write that "
              "a write of another thread to the same address follows, 1 &minus; 1/(1 + the ns "
              "between them), summed. Lower is better; it starts at %.1f (a term is nearly 1 "
              "while its two writes are far apart). A search has <b>aligned</b> when one term is 0 "
              "&mdash; two writes at the same virtual time &mdash; whatever the sum: no fitness "
              "value means &ldquo;aligned&rdquo;. The dot and the dashed line mark that "
              "evaluation, where the search stops; the metric is how far right it is, not how "
              "low the curve ends.",
              (long long)json_integer_value(json_object_get(conv, "seed")), cr[0].first);
    /* Say it with this page's numbers when the lowest curve is not the
     * fastest search, which is what puzzles a reader. */
    size_t lowest = 0, fastest = SIZE_MAX;
    for (size_t i = 0; i < nc; i++) {
        lowest = cr[i].last < cr[lowest].last ? i : lowest;
        if (cr[i].hit && (fastest == SIZE_MAX || cr[i].evals < cr[fastest].evals))
            fastest = i;
    }
    if (fastest != SIZE_MAX && fastest != lowest)
        rb_printf(out,
                  " Here %s ends lowest (%.1f) but searched for %lld evaluations, %s aligned after "
                  "%lld: the sum also falls when delays move a write past every write of the "
                  "other threads (it then adds nothing), which brings no two writes together.",
                  cr[lowest].name, cr[lowest].last, cr[lowest].evals, cr[fastest].name,
                  cr[fastest].evals);
}

int report_plot_boxes(rbuf *out, json_t *const stats[], const char *const names[], size_t n,
                      const char *id)
{
    rbuf s = {0};
    rb_puts(&s, "set logscale y\nset grid ytics\nset style fill solid 0.3 border -1\n"
                "set style boxplot outliers pointtype 7\nset boxwidth 0.5\n"
                "set ylabel 'evaluations to the first alignment (log scale, lower is faster)'\n"
                "set key off\n");
    rb_printf(&s, "set xrange [0.4:%zu.6]\nset xtics (", n);
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        json_int_t hits = json_integer_value(json_object_get(stats[i], "hits"));
        json_int_t runs = json_integer_value(json_object_get(stats[i], "runs"));
        char upper[16];
        algo_name(upper, sizeof upper, names[i]);
        rb_printf(&s, "%s'%s: %lld/%lld runs aligned' %zu", i ? ", " : "", upper, (long long)hits,
                  (long long)runs, i + 1);
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

void report_caption_boxes(rbuf *out, json_t *const stats[], const char *const names[], size_t n)
{
    if (!n)
        return;
    json_t *s0 = stats[0];
    long long seed = (long long)json_integer_value(json_object_get(s0, "seed0"));
    long long runs = (long long)json_integer_value(json_object_get(s0, "runs"));
    rb_printf(out,
              "How many fitness evaluations each search needed to reach its first alignment, "
              "over %lld runs per algorithm (seeds %lld to %lld); a run that used its whole "
              "budget without aligning is left out and shows in the count under its box. The "
              "box holds the middle half of the runs, the line in it is the median, the "
              "whiskers reach the rest up to 1.5 box heights away, dots are runs beyond; lower "
              "is faster. For a firmer comparison, run more seeds: <code>weft optimize ",
              runs, seed, seed + runs - 1);
    rb_esc(out, json_string_value(json_object_get(s0, "trace")));
    rb_printf(out, " --algo %s --runs 100</code>.", names[n - 1]);
}

void report_caption_rates(rbuf *out)
{
    rb_puts(out, "For each policy (d: bug depth it targets, r: RPro's radius), the fraction of "
                 "its runs that failed (blue dot) with its 95% Clopper&ndash;Pearson interval "
                 "(bar), against the policy's guaranteed lower bound per run (red square); a "
                 "policy with no failing run shows only the interval's upper end (grey). A bar "
                 "wholly above its square: the policy did at least as well as promised on this "
                 "program. For narrower bars, run more seeds (<code>--runs</code>).");
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
              "set xrange [0.5:%zu.5]\nset ylabel 'fraction of runs that failed (log scale)'\n"
              "set format y '%%g'\n"
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
                  "title 'measured hit rate with its 95%% Clopper\u2013Pearson interval'",
                  sep);
        sep = ", ";
    }
    if (any_zero) {
        rb_printf(&s,
                  "%s$zero using 1:2:3:4 with yerrorbars pt 6 ps 1.3 lw 2 lc rgb '#9aa3ad' "
                  "title 'no failing run: upper end of the 95%% Clopper\u2013Pearson interval'",
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
