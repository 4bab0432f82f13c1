/* What a campaign says as it goes: its progress on stderr (done and hits
 * against the runs to go, or against the time left under --for), and its
 * failing runs on stdout, in seed order. */
#include "campaign_progress.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/trace.h"

void progress_clear(const progress *p)
{
    if (p->tty)
        fputs("\r\033[K", stderr);
}

/* Under --for: the time is the budget, the runs are what fit. */
static void progress_show_timed(progress *p)
{
    double now = weft_now_s(), el = now - p->t0, span = p->deadline - p->t0;
    double left = p->deadline > now ? p->deadline - now : 0;
    double per = p->done ? el / (double)p->done : 0;
    if (p->tty) {
        int width = 30, fill = span > 0 && el < span ? (int)(width * el / span) : width;
        fprintf(stderr,
                "\r\033[K[%.*s%*s] %" PRIu64 " runs, %" PRIu64 " hit%s, %.2f s/run, %.0f s left",
                fill, "##############################", width - fill, "", p->done, p->hits,
                p->hits == 1 ? "" : "s", per, left);
        fflush(stderr);
    } else if (now - p->last_line > (span / 10 < 60 ? span / 10 : 60)) {
        fprintf(stderr, "weft: %" PRIu64 " runs, %" PRIu64 " hit%s, %.2f s/run, %.0f s left\n",
                p->done, p->hits, p->hits == 1 ? "" : "s", per, left);
        p->last_line = now;
    }
}

void progress_show(progress *p)
{
    if (p->deadline) {
        progress_show_timed(p);
        return;
    }
    double el = weft_now_s() - p->t0;
    double per = p->done ? el / (double)p->done : 0;
    double eta = per * (double)(p->total - p->done);
    if (p->tty) {
        int width = 30, fill = p->total ? (int)(width * p->done / p->total) : width;
        fprintf(stderr,
                "\r\033[K[%.*s%*s] %" PRIu64 "/%" PRIu64 " runs, %" PRIu64
                " hit%s, %.2f s/run, ETA %.0f s",
                fill, "##############################", width - fill, "", p->done, p->total,
                p->hits, p->hits == 1 ? "" : "s", per, eta);
        fflush(stderr);
    } else if (p->done >= p->next_line_at || weft_now_s() - p->last_line > 60) {
        fprintf(stderr, "weft: %" PRIu64 "/%" PRIu64 " runs, %" PRIu64 " hit%s, %.2f s/run\n",
                p->done, p->total, p->hits, p->hits == 1 ? "" : "s", per);
        p->last_line = weft_now_s();
        uint64_t step = p->total / 10 ? p->total / 10 : 1;
        while (p->next_line_at <= p->done)
            p->next_line_at += step;
    }
}

/* What the parent says about a finished failing run (or the --seed run):
 * the first REPLAY_HITS_SHOWN failures of the process, each with the command
 * that reproduces it; a portfolio's default 100 runs printed 100 of them. */
#define REPLAY_HITS_SHOWN 10
#define MEMBER_HITS_SHOWN 2 /* each policy of a portfolio */
static unsigned hits_shown_in(const replay_config *c)
{
    static char dirs[16][PATH_MAX];
    static unsigned shown[16], ndirs;
    unsigned i = 0;
    while (i < ndirs && strcmp(dirs[i], c->out_dir))
        i++;
    if (i == ndirs && ndirs < 16)
        snprintf(dirs[ndirs++], sizeof dirs[0], "%s", c->out_dir);
    return i < 16 ? ++shown[i] : UINT_MAX;
}

static void report_run(const replay_config *c, uint64_t seed, const char *tmp_dir)
{
    char path[PATH_MAX + 64], cmd[8192];
    snprintf(path, sizeof path, "%s/%" PRIu64 ".line", tmp_dir, seed);
    json_t *o = json_load_file(path, 0, NULL);
    unlink(path);
    if (!o)
        return;
    const char *verdict = json_string_value(json_object_get(o, "verdict"));
    const char *detail = json_string_value(json_object_get(o, "detail"));
    const char *trace = json_string_value(json_object_get(o, "trace"));
    unsigned shown, cap = c->inner ? MEMBER_HITS_SHOWN : REPLAY_HITS_SHOWN;
    if (c->seed_given) {
        json_t *st = json_object_get(o, "steps"), *cp = json_object_get(o, "change_points");
        char *cps = json_is_array(cp) ? json_dumps(cp, JSON_COMPACT) : NULL;
        char steps[32] = "unknown";
        if (json_is_integer(st))
            snprintf(steps, sizeof steps, "%" JSON_INTEGER_FORMAT, json_integer_value(st));
        printf("seed %" PRIu64 ": %s%s%s\n", seed, verdict, detail && *detail ? ": " : "",
               detail ? detail : "");
        printf("  steps %s, change points %s, starvation overrides %" JSON_INTEGER_FORMAT
               ", threads %" JSON_INTEGER_FORMAT ", virtual makespan %" JSON_INTEGER_FORMAT
               " ns, wall %.3f s%s\n",
               steps, cps ? cps : "unknown", json_integer_value(json_object_get(o, "overrides")),
               json_integer_value(json_object_get(o, "threads")),
               json_integer_value(json_object_get(o, "makespan_ns")),
               json_number_value(json_object_get(o, "wall_s")),
               json_is_integer(st) ? "" : " (the run ended before the plugin wrote its record)");
        free(cps);
        if (trace)
            printf("  trace %s/%s (weft info, weft export)\n", c->out_dir, trace);
    } else if (!c->quiet && (shown = hits_shown_in(c)) > cap) {
        if (shown == cap + 1)
            printf("(%s: more failing runs are not printed: its runs.jsonl lists every run)\n",
                   c->out_dir);
    } else if (!c->quiet) {
        printf("seed %" PRIu64 ": %s: %s\n", seed, verdict, detail ? detail : "");
        replay_repro_command(c, seed, cmd, sizeof cmd);
        printf("  reproduce: %s\n", cmd);
        if (trace)
            printf("  trace: %s/%s\n", c->out_dir, trace);
    }
    fflush(stdout);
    json_decref(o);
}

void unsaid_add(unsaid_runs *u, const replay_config *c, uint64_t seed, const char *tmp_dir,
                const progress *pg)
{
    if (u->n == u->cap) {
        size_t cap = u->cap ? 2 * u->cap : 16;
        uint64_t *n = realloc(u->seeds, cap * sizeof *n);
        if (!n) { /* said now, out of order, rather than lost */
            progress_clear(pg);
            report_run(c, seed, tmp_dir);
            return;
        }
        u->seeds = n;
        u->cap = cap;
    }
    size_t i = u->n++;
    for (; i > 0 && u->seeds[i - 1] > seed; i--)
        u->seeds[i] = u->seeds[i - 1];
    u->seeds[i] = seed;
}

void unsaid_say(unsaid_runs *u, uint64_t below, const replay_config *c, const char *tmp_dir,
                const progress *pg)
{
    size_t n = 0;
    while (n < u->n && u->seeds[n] < below)
        n++;
    if (!n)
        return;
    progress_clear(pg);
    for (size_t i = 0; i < n; i++)
        report_run(c, u->seeds[i], tmp_dir);
    memmove(u->seeds, u->seeds + n, (u->n - n) * sizeof *u->seeds);
    u->n -= n;
}
