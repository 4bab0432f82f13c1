/* A campaign folder for the report: its campaign.json and summary, its
 * failing runs in seed order, the table of hit rates against the guaranteed
 * bounds, and the failing seeds with one reproduction command per policy. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define JI(o, k) json_integer_value(json_object_get((o), (k)))
#define JS(o, k) json_string_value(json_object_get((o), (k)))

int report_campaign_load(const char *dir, report_campaign *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    char path[PATH_MAX + 32];
    if (!realpath(dir, c->dir))
        snprintf(c->dir, sizeof c->dir, "%s", dir);
    snprintf(path, sizeof path, "%s/campaign.json", dir);
    json_error_t je;
    c->campaign = json_load_file(path, 0, &je);
    if (!json_is_object(c->campaign)) {
        snprintf(err, errlen, "%s: %s", path, c->campaign ? "not a JSON object" : je.text);
        weft_one_line(err); /* jansson's "near '...'" may quote a newline */
        json_decref(c->campaign);
        c->campaign = NULL;
        return -1;
    }
    snprintf(path, sizeof path, "%s/runs.jsonl", dir);
    c->have_sum = replay_summary_read(path, &c->sum, err, errlen) == 0;
    replay_config *g = &c->cfg;
    json_t *o = c->campaign;
    if (pct_kind_parse(JS(o, "policy"), &g->kind))
        g->kind = PCT_KIND_PCT;
    g->depth = (uint64_t)JI(o, "depth");
    g->radius = (uint64_t)JI(o, "radius");
    g->k = (uint64_t)JI(o, "k");
    g->n = (uint64_t)JI(o, "n");
    const char *pts = JS(o, "points");
    g->points = !pts || !strcmp(pts, "shared") ? POINTS_SHARED
                : !strcmp(pts, "none")         ? POINTS_NONE
                : !strcmp(pts, "all")          ? POINTS_ALL
                : !strcmp(pts, "visible")      ? POINTS_VISIBLE
                                               : POINTS_PCS;
    snprintf(g->pcs_path, sizeof g->pcs_path, "%s", JS(o, "pcs_file") ? JS(o, "pcs_file") : "");
    json_t *st = json_object_get(o, "starvation");
    g->starvation = st ? json_number_value(st) : -1;
    g->host_parallel = json_is_true(json_object_get(o, "host_parallel"));
    json_t *to = json_object_get(o, "timeout");
    g->timeout = json_is_integer(to) ? (unsigned)json_integer_value(to) : 60;
    g->expect_exit = (int)JI(o, "expect_exit");
    g->expect_output = JS(o, "expect_output");
    g->run.sysroot = JS(o, "sysroot");
    snprintf(g->out_dir, sizeof g->out_dir, "%s", c->dir);
    json_t *argv = json_object_get(o, "argv");
    /* The reproduction commands quote every argument. */
    for (size_t i = 0; i < json_array_size(argv); i++)
        if (!json_is_string(json_array_get(argv, i))) {
            snprintf(err, errlen, "%s/campaign.json: argv[%zu] is not a string", dir, i);
            weft_one_line(err);
            report_campaign_free(c);
            return -1;
        }
    g->run.argc = (int)json_array_size(argv);
    g->run.argv = calloc((size_t)g->run.argc + 1, sizeof *g->run.argv);
    for (int i = 0; g->run.argv && i < g->run.argc; i++)
        g->run.argv[i] = (char *)json_string_value(json_array_get(argv, (size_t)i));
    if (!g->run.argv)
        g->run.argc = 0;
    g->run.binary = g->run.argc ? g->run.argv[0] : "";
    return 0;
}

void report_campaign_free(report_campaign *c)
{
    free(c->cfg.run.argv);
    json_decref(c->campaign);
    memset(c, 0, sizeof *c);
}

void report_campaign_repro(const report_campaign *c, uint64_t seed, char *buf, size_t len)
{
    replay_repro_command(&c->cfg, seed, buf, len);
}

/* Calls fn for each failing run in seed order (runs.jsonl is sorted by the
 * campaign and by weft merge); stops when fn returns non-zero. */
static void each_failure(const report_campaign *c, int (*fn)(void *, json_t *), void *arg)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/runs.jsonl", c->dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) > 0) {
        if (line[got - 1] != '\n')
            break;
        json_t *o = json_loads(line, 0, NULL);
        const char *v = o ? JS(o, "verdict") : NULL;
        int stop = v && strcmp(v, "pass") ? fn(arg, o) : 0;
        json_decref(o);
        if (stop)
            break;
    }
    free(line);
    fclose(f);
}

typedef struct first_fail {
    uint64_t seed;
    char *verdict, *detail;
    size_t vlen, dlen;
    int found;
} first_fail;

static int take_first(void *arg, json_t *o)
{
    first_fail *ff = arg;
    ff->seed = (uint64_t)JI(o, "seed");
    snprintf(ff->verdict, ff->vlen, "%s", JS(o, "verdict"));
    snprintf(ff->detail, ff->dlen, "%s", JS(o, "detail") ? JS(o, "detail") : "");
    ff->found = 1;
    return 1;
}

int report_campaign_first_failure(const report_campaign *c, uint64_t *seed, char *verdict,
                                  size_t vlen, char *detail, size_t dlen)
{
    first_fail ff = {0, verdict, detail, vlen, dlen, 0};
    each_failure(c, take_first, &ff);
    *seed = ff.seed;
    return ff.found ? 0 : -1;
}

/* At depth 2 RPro draws its one change point anywhere in the run, as PCT
 * does, and has d - 2 = 0 points within its radius: it is PCT, and with the
 * same seed runs the same schedule. A reader who sees both list the same
 * failing seeds is told why, once where both appear. */
static int rpro_is_pct_here(const report_campaign *camps, size_t n)
{
    int pct = 0, rpro = 0;
    for (size_t i = 0; i < n; i++) {
        if (!camps[i].have_sum || camps[i].sum.depth != 2)
            continue;
        pct |= !strcmp(camps[i].sum.policy, "pct");
        rpro |= !strcmp(camps[i].sum.policy, "rpro");
    }
    return pct && rpro;
}

static void rpro_is_pct_line(rbuf *b)
{
    rb_puts(b, "<p class='note d2'>At depth 2, RPro is the same algorithm as PCT: both draw "
               "their one change point anywhere in the run, and RPro adds d &minus; 2 = 0 "
               "points within its radius. With the same seed and settings they run the same "
               "schedule, so they fail on the same seeds and share one bound.</p>\n");
}

void report_section_campaigns(rbuf *b, const report_campaign *camps, size_t n)
{
    rb_puts(b, "<figure><table><tr><th>policy</th><th>d</th><th>n</th><th>k</th><th>points</th>"
               "<th>runs</th><th>failed</th><th>hit rate</th><th>hit rate: 95% "
               "Clopper&ndash;Pearson interval</th><th>bound</th><th>interval's low end / "
               "bound</th><th>verdicts</th><th>first failing seed</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        const replay_summary *s = &camps[i].sum;
        if (!camps[i].have_sum) {
            rb_puts(b, "<tr><td colspan='13'>");
            rb_esc(b, camps[i].dir);
            rb_puts(b, ": no finished runs</td></tr>\n");
            continue;
        }
        rb_printf(b, "<tr><td>%s", s->policy);
        if (!strcmp(s->policy, "rpro"))
            rb_printf(b, " (r = %" PRIu64 ")", s->radius);
        rb_printf(b,
                  "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%s</td>"
                  "<td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%.3g%%</td>"
                  "<td>%.3g%% .. %.3g%%</td><td>%.3g%%</td><td>",
                  s->depth, s->n, s->k, s->points, s->runs, s->hits, 100 * s->hit_rate,
                  100 * s->ci_lo, 100 * s->ci_hi, 100 * s->bound);
        if (s->bound > 0)
            rb_printf(b, "%s%.3g</td><td>", s->ci_lo >= s->bound ? "" : "<span class='fail'>",
                      s->ci_lo / s->bound);
        else
            rb_puts(b, "no bound</td><td>");
        for (int v = 0; v < REPLAY_VERDICT_COUNT; v++)
            if (s->verdicts[v])
                rb_printf(b, "%s %" PRIu64 " ", replay_verdict_name((replay_verdict)v),
                          s->verdicts[v]);
        if (s->first_hit_seed != UINT64_MAX)
            rb_printf(b, "</td><td>%" PRIu64 "</td></tr>\n", s->first_hit_seed);
        else
            rb_puts(b, "</td><td>&ndash;</td></tr>\n");
    }
    rb_puts(b, "</table>\n<figcaption>One row per campaign: d is the bug depth the policy "
               "targets, n the threads and k the scheduling steps its profiling run measured, "
               "<i>points</i> which steps count. The bound is the policy's guaranteed "
               "probability of exposing a depth-d bug per run (PCT and PPCT 1/(n k<sup>d&minus;1"
               "</sup>), RPro 1/(n k (2r)<sup>d&minus;2</sup>); docs/policies.md); it holds for "
               "bugs of that depth and, for RPro, within the radius. A ratio of the interval's "
               "low end to the bound of at least 1 means the policy beat its guarantee here. "
               "The failing seeds and how to replay them are in the next section.</figcaption>"
               "</figure>\n");
}

/* Failing seeds listed per policy, the rest counted: a page stays small. */
#define MAX_FAILURES_LISTED 500

typedef struct fail_list {
    rbuf *b;
    const report_campaign *c;
    size_t max, total, listed;
    uint64_t first;
} fail_list;

#define FAIL_HEADER "<tr><th>seed</th><th>verdict</th><th>detail</th><th>change points</th></tr>\n"

static int list_failure(void *arg, json_t *o)
{
    fail_list *fl = arg;
    if (fl->total++ == 0)
        fl->first = (uint64_t)JI(o, "seed");
    if (fl->listed >= MAX_FAILURES_LISTED)
        return 0;
    /* The first few in the table, the rest folded away: a campaign of a
     * shallow bug fails in a third of its runs. */
    if (fl->listed == fl->max) {
        uint64_t hits = fl->c->sum.hits;
        uint64_t rest = (hits < MAX_FAILURES_LISTED ? hits : MAX_FAILURES_LISTED) - fl->max;
        rb_printf(fl->b,
                  "</table>\n<details><summary>%" PRIu64 " more failing seed%s</summary>\n"
                  "<table class='fails more'>" FAIL_HEADER,
                  rest, rest == 1 ? "" : "s");
    }
    fl->listed++;
    uint64_t seed = (uint64_t)JI(o, "seed");
    rb_printf(fl->b, "<tr><td class='seed'>%" PRIu64 "</td><td class='fail'>", seed);
    rb_esc(fl->b, JS(o, "verdict"));
    rb_puts(fl->b, "</td><td>");
    rb_esc(fl->b, JS(o, "detail") ? JS(o, "detail") : "");
    char *cps = json_dumps(json_object_get(o, "change_points"), JSON_COMPACT | JSON_ENCODE_ANY);
    rb_puts(fl->b, "</td><td>");
    rb_esc(fl->b, cps ? cps : "");
    free(cps);
    rb_puts(fl->b, "</td></tr>\n");
    return 0;
}

/* One policy's failing seeds and the command that replays the first. */
static void policy_failures(rbuf *b, const report_campaign *c, size_t max_each)
{
    rb_puts(b, "<table class='fails'>" FAIL_HEADER);
    fail_list fl = {b, c, max_each, 0, 0, 0};
    each_failure(c, list_failure, &fl);
    rb_puts(b, "</table>\n");
    if (fl.listed > fl.max)
        rb_puts(b, "</details>\n");
    if (fl.total > fl.listed) {
        rb_printf(b, "<p class='note'>%zu more failing seeds in <code>", fl.total - fl.listed);
        rb_esc(b, c->dir);
        rb_puts(b, "/runs.jsonl</code>.</p>\n");
    }
    char cmd[8192];
    report_campaign_repro(c, fl.first, cmd, sizeof cmd);
    rb_printf(b,
              "<figcaption>Replay the first, seed %" PRIu64 " (for another, change "
              "<code>--seed</code> and <code>--output</code>):\n<pre class='repro'>",
              fl.first);
    rb_esc(b, cmd);
    rb_puts(b, "</pre></figcaption>\n");
}

void report_section_failures(rbuf *b, const report_campaign *camps, size_t n, size_t max_each)
{
    int d2 = rpro_is_pct_here(camps, n);
    rb_printf(b,
              "<p class='note'>Each failing run: its seed, the program's verdict, and the "
              "change points (the steps at which the running thread's priority was lowered); "
              "the first %zu per policy, the rest folded below them. The same seed replays the "
              "same schedule: each policy's command replays its first failing seed and keeps "
              "its trace (<code>--save-trace</code>) in its <code>--output</code> folder, "
              "where <code>weft report FOLDER</code> draws that schedule's timeline.</p>\n",
              max_each);
    for (size_t i = 0; i < n; i++) {
        const replay_summary *s = &camps[i].sum;
        if (!camps[i].have_sum)
            continue;
        rb_printf(b, "<h3>%s, depth %" PRIu64 ": ", s->policy, s->depth);
        if (s->hits)
            rb_printf(b, "%" PRIu64 " of %" PRIu64 " runs failed</h3>\n", s->hits, s->runs);
        else
            rb_printf(b, "no failing schedule in %" PRIu64 " runs</h3>\n", s->runs);
        if (d2 && s->depth == 2 && !strcmp(s->policy, "rpro"))
            rpro_is_pct_line(b);
        if (!s->hits)
            continue;
        rb_puts(b, "<figure>");
        policy_failures(b, &camps[i], max_each);
        rb_puts(b, "</figure>\n");
    }
}
