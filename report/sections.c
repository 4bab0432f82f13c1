/* The report's tables: the Table-1-style summary, the plans and searches,
 * the injected runs, the campaigns against their bounds, and each failing
 * schedule with the command that reproduces it. */
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

static void verdict_text(rbuf *b, json_t *v)
{
    if (!v) {
        rb_puts(b, "&ndash;");
        return;
    }
    const char *end = JS(v, "end");
    if (json_is_true(json_object_get(v, "passes")))
        rb_puts(b, "<span class='pass'>passes</span> (exit 0)");
    else if (end && !strcmp(end, "exited"))
        rb_printf(b, "<span class='fail'>exit %lld</span>", (long long)JI(v, "status"));
    else if (end && !strcmp(end, "signaled"))
        rb_printf(b, "<span class='fail'>killed by signal %lld</span>", (long long)JI(v, "status"));
    else {
        rb_puts(b, "<span class='fail'>");
        rb_esc(b, end ? end : "?");
        rb_puts(b, "</span>");
    }
    if (JS(v, "bug")) {
        rb_puts(b, ": ");
        rb_esc(b, JS(v, "bug"));
    }
}

static void trace_end(rbuf *b, const report_trace *rt)
{
    uint32_t fl = rt->sum->flags;
    int32_t st = rt->sum->exit_status;
    if (fl & WEFT_TRACE_DEADLOCK)
        rb_puts(b, "<span class='fail'>deadlock</span>");
    else if (fl & WEFT_TRACE_TIMED_OUT)
        rb_puts(b, "<span class='fail'>timed out</span>");
    else if (st < 0)
        rb_printf(b, "<span class='fail'>killed by signal %d</span>", -st);
    else if (st)
        rb_printf(b, "<span class='fail'>exit %d</span>", st);
    else
        rb_puts(b, "<span class='pass'>exit 0</span>");
    if (fl & WEFT_TRACE_TRUNCATED)
        rb_puts(b, " (trace salvaged)");
}

void report_section_table1(rbuf *b, const report_trace *rt, json_t *plan, json_t *inject,
                           const report_campaign *camps, size_t ncamps)
{
    rb_puts(b, "<table class='kv'>\n");
    if (rt) {
        rb_puts(b, "<tr><th>program</th><td><code>");
        for (uint32_t i = 0; i < rt->meta->argc; i++) {
            rb_esc(b, rt->meta->argv[i]);
            rb_puts(b, i + 1 < rt->meta->argc ? " " : "");
        }
        rb_printf(b,
                  "</code></td></tr>\n<tr><th>threads</th><td>%u</td></tr>\n"
                  "<tr><th>events</th><td>%zu: %" PRIu64 " reads, %" PRIu64 " writes, %" PRIu64
                  " atomic read-modify-writes, %" PRIu64
                  " other (threads, futexes, syscalls)</td></tr>\n"
                  "<tr><th>virtual makespan</th><td>%" PRIu64 " ns</td></tr>\n"
                  "<tr><th>shared addresses</th><td>%zu accessed by 2+ threads; %zu plainly "
                  "written by 2+ threads (what the optimizer aligns)</td></tr>\n",
                  rt->sum->nthreads, rt->n, rt->reads, rt->writes, rt->rmw, rt->sync,
                  rt->sum->makespan, rt->shared_addrs, rt->ww_addrs);
        if (rt->total > rt->n)
            rb_printf(b,
                      "<tr><th>note</th><td>the trace has %" PRIu64 " events; this page "
                      "reads the first %zu</td></tr>\n",
                      rt->total, rt->n);
        rb_puts(b, "<tr><th>pattern (seed 004 Table 1)</th><td>");
        if (!rt->nvars)
            rb_puts(b, "no address is written by two threads");
        for (size_t i = 0; i < rt->nvars; i++) {
            rb_puts(b, i ? "<br>" : "");
            rb_puts(b, "<code>");
            rb_esc(b, rt->vars[i].name);
            rb_puts(b, "</code>: ");
            rb_esc(b, rt->vars[i].pattern);
        }
        if (rt->ww_addrs > rt->nvars)
            rb_printf(b, "<br>(and %zu more)", rt->ww_addrs - rt->nvars);
        rb_puts(b, "</td></tr>\n<tr><th>traced run</th><td>");
        trace_end(b, rt);
        rb_puts(b, "</td></tr>\n");
    } else if (ncamps && camps[0].cfg.run.argc) {
        rb_puts(b, "<tr><th>program</th><td><code>");
        for (int i = 0; i < camps[0].cfg.run.argc; i++) {
            rb_esc(b, camps[0].cfg.run.argv[i]);
            rb_puts(b, i + 1 < camps[0].cfg.run.argc ? " " : "");
        }
        rb_printf(b,
                  "</code></td></tr>\n<tr><th>threads n, steps k</th><td>%" PRIu64 ", %" PRIu64
                  " (measured by the campaign's profiling run)</td></tr>\n",
                  camps[0].cfg.n, camps[0].cfg.k);
    }
    json_t *inj0 = json_array_get(json_object_get(plan, "injections"), 0);
    if (inj0) {
        json_t *p = json_object_get(inj0, "predicted");
        rb_printf(b, "<tr><th>collision found</th><td>%lld ns before T%lld seq %lld",
                  (long long)JI(inj0, "delay_ns"), (long long)JI(inj0, "thread"),
                  (long long)JI(inj0, "seq"));
        if (JS(inj0, "function")) {
            rb_puts(b, " (");
            rb_esc(b, JS(inj0, "function"));
            if (JS(inj0, "file"))
                rb_printf(b, ", %s:%lld", JS(inj0, "file"), (long long)JI(inj0, "line"));
            rb_puts(b, ")");
        }
        if (json_is_object(p))
            rb_printf(b, " makes its write meet T%lld seq %lld at %lld ns",
                      (long long)JI(p, "thread_b"), (long long)JI(p, "seq_b"),
                      (long long)JI(p, "time"));
        if (JS(inj0, "variable")) {
            rb_puts(b, " on <code>");
            rb_esc(b, JS(inj0, "variable"));
            rb_puts(b, "</code>");
        }
        size_t ni = json_array_size(json_object_get(plan, "injections"));
        if (ni > 1)
            rb_printf(b, " (and %zu more pairs in the plan)", ni - 1);
        rb_puts(b, "</td></tr>\n");
    } else if (rt) {
        rb_puts(b, "<tr><th>collision found</th><td>none: no pair of writes can be aligned"
                   "</td></tr>\n");
    }
    if (inject) {
        json_t *runs = json_object_get(inject, "runs");
        json_t *last = json_array_get(runs, json_array_size(runs) - 1);
        rb_printf(b,
                  "<tr><th>injected run</th><td>%lld of %lld planned alignments collided; "
                  "program: ",
                  (long long)JI(inject, "achieved"), (long long)JI(inject, "planned"));
        verdict_text(b, json_object_get(last, "verdict"));
        rb_puts(b, " (without the delays: ");
        verdict_text(b, json_object_get(inject, "uninjected"));
        rb_puts(b, ")</td></tr>\n");
    }
    for (size_t i = 0; i < ncamps; i++) {
        const replay_summary *s = &camps[i].sum;
        if (!camps[i].have_sum)
            continue;
        rb_printf(b, "<tr><th>%s, depth %" PRIu64 "</th><td>%" PRIu64 "/%" PRIu64 " runs failed",
                  s->policy, s->depth, s->hits, s->runs);
        const char *sep = ": ";
        for (int v = 1; v < REPLAY_VERDICT_COUNT; v++)
            if (s->verdicts[v]) {
                rb_printf(b, "%s%s %" PRIu64, sep, replay_verdict_name((replay_verdict)v),
                          s->verdicts[v]);
                sep = ", ";
            }
        rb_puts(b, "</td></tr>\n");
    }
    rb_puts(b, "</table>\n");
}

void report_section_plans(rbuf *b, json_t *const plans[], const char *const names[], size_t n,
                          json_t *const stats[], const char *const snames[], size_t ns)
{
    for (size_t i = 0; i < n; i++) {
        json_t *injs = json_object_get(plans[i], "injections");
        json_t *srch = json_object_get(plans[i], "search");
        rb_printf(b, "<h3>plan %s: %zu injection%s", names[i], json_array_size(injs),
                  json_array_size(injs) == 1 ? "" : "s");
        if (srch && JI(srch, "evaluations"))
            rb_printf(b, " (seed %lld, found after %lld evaluations)", (long long)JI(srch, "seed"),
                      (long long)JI(srch, "evaluations"));
        rb_puts(b, "</h3>\n<table><tr><th>delay</th><th>before</th><th>at</th><th>variable</th>"
                   "<th>meets</th><th>predicted time</th></tr>\n");
        size_t k;
        json_t *in;
        json_array_foreach(injs, k, in)
        {
            if (k == 30) {
                rb_printf(b, "<tr><td colspan='6'>... %zu more</td></tr>\n",
                          json_array_size(injs) - 30);
                break;
            }
            json_t *p = json_object_get(in, "predicted");
            rb_printf(b, "<tr><td>%lld ns</td><td>T%lld seq %lld</td><td>",
                      (long long)JI(in, "delay_ns"), (long long)JI(in, "thread"),
                      (long long)JI(in, "seq"));
            rb_esc(b, JS(in, "function") ? JS(in, "function") : JS(in, "pc"));
            if (JS(in, "file"))
                rb_printf(b, " %s:%lld", JS(in, "file"), (long long)JI(in, "line"));
            rb_puts(b, "</td><td>");
            rb_esc(b, JS(in, "variable") ? JS(in, "variable") : "");
            if (json_is_object(p))
                rb_printf(b, "</td><td>T%lld seq %lld</td><td>%lld ns</td></tr>\n",
                          (long long)JI(p, "thread_b"), (long long)JI(p, "seq_b"),
                          (long long)JI(p, "time"));
            else
                rb_puts(b, "</td><td></td><td></td></tr>\n");
        }
        rb_puts(b, "</table>\n");
    }
    if (!ns)
        return;
    rb_puts(b, "<h3>searches (seed 004 §6: RND, SHC, SA)</h3>\n<table><tr><th>algorithm</th>"
               "<th>runs</th><th>aligned</th><th>95% CI</th><th>evaluations to the first "
               "alignment: quartiles</th><th>budget</th><th>D<sub>max</sub></th><th>wall</th>"
               "</tr>\n");
    for (size_t i = 0; i < ns; i++) {
        json_t *s = stats[i], *ci = json_object_get(s, "ci95"),
               *q = json_object_get(s, "quartiles");
        rb_printf(b, "<tr><td>%s</td><td>%lld</td><td>%lld</td><td>%.1f%% .. %.1f%%</td><td>",
                  snames[i], (long long)JI(s, "runs"), (long long)JI(s, "hits"),
                  100 * json_number_value(json_array_get(ci, 0)),
                  100 * json_number_value(json_array_get(ci, 1)));
        if (json_is_array(q))
            rb_printf(b, "%.0f / <b>%.0f</b> / %.0f", json_number_value(json_array_get(q, 0)),
                      json_number_value(json_array_get(q, 1)),
                      json_number_value(json_array_get(q, 2)));
        else
            rb_puts(b, "none aligned");
        rb_printf(b, "</td><td>%lld</td><td>%lld ns</td><td>%.2f s</td></tr>\n",
                  (long long)JI(s, "budget"), (long long)JI(s, "dmax"),
                  json_number_value(json_object_get(s, "wall_seconds")));
    }
    rb_puts(b, "</table>\n");
}

void report_section_inject(rbuf *b, json_t *const injects[], const char *const names[], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_t *in = injects[i], *runs = json_object_get(in, "runs");
        rb_printf(b,
                  "<h3>plan %s replayed: %lld/%lld alignments collided</h3>\n<p>without the "
                  "delays the program ",
                  names[i], (long long)JI(in, "achieved"), (long long)JI(in, "planned"));
        verdict_text(b, json_object_get(in, "uninjected"));
        rb_puts(b, "</p>\n<table><tr><th>injected run</th><th>program</th><th>pair</th>"
                   "<th>predicted</th><th>achieved</th><th>result</th></tr>\n");
        size_t k;
        json_t *r;
        json_array_foreach(runs, k, r)
        {
            size_t j;
            json_t *al;
            json_array_foreach(json_object_get(r, "alignments"), j, al)
            {
                if (j == 10)
                    break;
                rb_printf(b, "<tr><td>%zu</td><td>", k + 1);
                if (j == 0)
                    verdict_text(b, json_object_get(r, "verdict"));
                rb_printf(b, "</td><td>T%lld seq %lld / T%lld seq %lld</td><td>%lld ns</td>",
                          (long long)JI(al, "thread_a"), (long long)JI(al, "seq_a"),
                          (long long)JI(al, "thread_b"), (long long)JI(al, "seq_b"),
                          (long long)JI(al, "predicted"));
                if (json_object_get(al, "achieved_a"))
                    rb_printf(b, "<td>%lld / %lld ns</td>", (long long)JI(al, "achieved_a"),
                              (long long)JI(al, "achieved_b"));
                else
                    rb_puts(b, "<td>&ndash;</td>");
                if (json_is_true(json_object_get(al, "collided")))
                    rb_puts(b, "<td class='pass'>collided</td></tr>\n");
                else {
                    rb_puts(b, "<td class='fail'>missed");
                    if (JS(al, "why")) {
                        rb_puts(b, ": ");
                        rb_esc(b, JS(al, "why"));
                    }
                    rb_puts(b, "</td></tr>\n");
                }
            }
        }
        rb_puts(b, "</table>\n");
    }
}

void report_section_campaigns(rbuf *b, const report_campaign *camps, size_t n)
{
    rb_puts(b, "<table><tr><th>policy</th><th>d</th><th>n</th><th>k</th><th>points</th>"
               "<th>runs</th><th>failed</th><th>hit rate</th><th>95% CI</th><th>bound</th>"
               "<th>CI low / bound</th><th>verdicts</th><th>first failing seed</th></tr>\n");
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
    rb_puts(b, "</table>\n<p class='note'>The bound is the policy's guaranteed probability of "
               "exposing a depth-d bug per run (PCT/PPCT 1/(n k<sup>d-1</sup>), RPro 1/(n k "
               "(2r)<sup>d-2</sup>), docs/policies.md); it holds for bugs of that depth and, for "
               "RPro, within the radius.</p>\n");
}

typedef struct fail_list {
    rbuf *b;
    const report_campaign *c;
    size_t shown, max, total;
} fail_list;

static int list_failure(void *arg, json_t *o)
{
    fail_list *fl = arg;
    fl->total++;
    if (fl->shown >= fl->max)
        return 0;
    fl->shown++;
    char cmd[8192];
    uint64_t seed = (uint64_t)JI(o, "seed");
    report_campaign_repro(fl->c, seed, cmd, sizeof cmd);
    rb_printf(fl->b, "<tr><td class='seed'>%" PRIu64 "</td><td class='fail'>", seed);
    rb_esc(fl->b, JS(o, "verdict"));
    rb_puts(fl->b, "</td><td>");
    rb_esc(fl->b, JS(o, "detail") ? JS(o, "detail") : "");
    char *cps = json_dumps(json_object_get(o, "change_points"), JSON_COMPACT | JSON_ENCODE_ANY);
    rb_puts(fl->b, "</td><td>");
    rb_esc(fl->b, cps ? cps : "");
    free(cps);
    rb_puts(fl->b, "</td><td><code class='repro'>");
    rb_esc(fl->b, cmd);
    rb_puts(fl->b, "</code></td></tr>\n");
    return 0;
}

void report_section_failures(rbuf *b, const report_campaign *camps, size_t n, size_t max_each)
{
    for (size_t i = 0; i < n; i++) {
        const replay_summary *s = &camps[i].sum;
        if (!camps[i].have_sum)
            continue;
        rb_printf(b, "<h3>%s, depth %" PRIu64 ": ", s->policy, s->depth);
        if (!s->hits) {
            rb_printf(b, "no failing schedule in %" PRIu64 " runs</h3>\n", s->runs);
            continue;
        }
        rb_printf(b, "%" PRIu64 " failing schedule%s</h3>\n", s->hits, s->hits == 1 ? "" : "s");
        rb_puts(b, "<table class='fails'><tr><th>seed</th><th>verdict</th><th>detail</th>"
                   "<th>change points</th><th>reproduce</th></tr>\n");
        fail_list fl = {b, &camps[i], 0, max_each, 0};
        each_failure(&camps[i], list_failure, &fl);
        rb_puts(b, "</table>\n");
        if (fl.total > fl.shown) {
            rb_printf(b, "<p class='note'>%zu more failing seeds in <code>", fl.total - fl.shown);
            rb_esc(b, camps[i].dir);
            rb_puts(b, "/runs.jsonl</code>.</p>\n");
        }
    }
}

void report_section_commands(rbuf *b, json_t *demo)
{
    json_t *steps = json_object_get(demo, "steps");
    rb_puts(b, "<table class='cmds'><tr><th>step</th><th>exit</th><th>command</th><th>log</th>"
               "</tr>\n");
    size_t i;
    json_t *st;
    json_array_foreach(steps, i, st)
    {
        rb_puts(b, "<tr><td>");
        rb_esc(b, JS(st, "name"));
        rb_printf(b, "</td><td>%lld</td><td><code>", (long long)JI(st, "status"));
        rb_esc(b, JS(st, "command"));
        rb_puts(b, "</code></td><td>");
        rb_esc(b, JS(st, "log"));
        rb_puts(b, "</td></tr>\n");
    }
    rb_puts(b, "</table>\n");
}
