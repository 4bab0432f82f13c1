/* The report page: one self-contained HTML page (inline CSS and SVG, nothing
 * fetched) from the outputs of weft demo or of replay campaigns. See
 * docs/report.md for what it shows and where each part comes from. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report_internal.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.0.0"
#endif

#define MAX_CAMPAIGNS 16
/* Failing seeds per policy in view; the rest are folded under <details>. */
#define MAX_FAILURES_SHOWN 5

/* ---- what a folder holds --------------------------------------------------- */

typedef struct report_inputs {
    const char *dir;
    json_t *demo, *convergence;
    json_t *plans[2], *injects[2];
    const char *plan_names[2];
    size_t nplans;
    json_t *stats[3];
    const char *stat_names[3];
    size_t nstats;
    report_campaign camps[MAX_CAMPAIGNS];
    size_t ncamps;
    char trace_path[PATH_MAX + 64], injected_path[PATH_MAX + 64], trace_title[256];
} report_inputs;

static json_t *load_json(const char *dir, const char *name)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, R_OK) == 0 ? json_load_file(path, 0, NULL) : NULL;
}

static int is_campaign(const char *dir)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/campaign.json", dir);
    return access(path, R_OK) == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void find_campaigns(report_inputs *in)
{
    char err[512];
    if (is_campaign(in->dir)) {
        if (report_campaign_load(in->dir, &in->camps[0], err, sizeof err) == 0)
            in->ncamps = 1;
        return;
    }
    DIR *d = opendir(in->dir);
    if (!d)
        return;
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        char sub[PATH_MAX + 300];
        snprintf(sub, sizeof sub, "%s/%s", in->dir, e->d_name);
        if (e->d_name[0] != '.' && is_campaign(sub))
            names[n++] = strdup(sub);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (in->ncamps < MAX_CAMPAIGNS &&
            report_campaign_load(names[i], &in->camps[in->ncamps], err, sizeof err) == 0)
            in->ncamps++;
        free(names[i]);
    }
}

static void find_inputs(report_inputs *in)
{
    in->demo = load_json(in->dir, "demo.json");
    in->convergence = load_json(in->dir, "convergence.json");
    static const char *const plan_names[] = {"exact", "sa"};
    for (size_t i = 0; i < 2; i++) {
        char name[64];
        snprintf(name, sizeof name, "plan-%s.json", plan_names[i]);
        json_t *p = load_json(in->dir, name);
        if (!p)
            continue;
        snprintf(name, sizeof name, "inject-%s.json", plan_names[i]);
        in->plans[in->nplans] = p;
        in->injects[in->nplans] = load_json(in->dir, name);
        in->plan_names[in->nplans++] = plan_names[i];
    }
    static const char *const algos[] = {"rnd", "shc", "sa"};
    for (size_t i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "search-%s.json", algos[i]);
        json_t *s = load_json(in->dir, name);
        if (s) {
            in->stats[in->nstats] = s;
            in->stat_names[in->nstats++] = algos[i];
        }
    }
    find_campaigns(in);
    snprintf(in->trace_path, sizeof in->trace_path, "%s/run.wtr", in->dir);
    snprintf(in->trace_title, sizeof in->trace_title, "The traced run");
    if (access(in->trace_path, R_OK) != 0) {
        in->trace_path[0] = 0;
        /* a campaign: the first failing schedule whose trace was saved */
        for (size_t i = 0; i < in->ncamps && !in->trace_path[0]; i++) {
            uint64_t seed;
            char v[64], detail[512];
            if (report_campaign_first_failure(&in->camps[i], &seed, v, sizeof v, detail,
                                              sizeof detail))
                continue;
            snprintf(in->trace_path, sizeof in->trace_path, "%s/traces/seed-%llu.wtr",
                     in->camps[i].dir, (unsigned long long)seed);
            snprintf(in->trace_title, sizeof in->trace_title, "Failing schedule: %s seed %llu (%s)",
                     in->camps[i].sum.policy, (unsigned long long)seed, v);
            if (access(in->trace_path, R_OK) != 0)
                in->trace_path[0] = 0;
        }
    }
    /* The injected run to draw: the last run of the first plan's replay. */
    json_t *runs = in->nplans && in->injects[0] ? json_object_get(in->injects[0], "runs") : NULL;
    if (json_array_size(runs)) {
        snprintf(in->injected_path, sizeof in->injected_path, "%s/inject-%s/injected-%zu.wtr",
                 in->dir, in->plan_names[0], json_array_size(runs) - 1);
        if (access(in->injected_path, R_OK) != 0)
            in->injected_path[0] = 0;
    }
}

static void free_inputs(report_inputs *in)
{
    json_decref(in->demo);
    json_decref(in->convergence);
    for (size_t i = 0; i < in->nplans; i++)
        json_decref(in->plans[i]), json_decref(in->injects[i]);
    for (size_t i = 0; i < in->nstats; i++)
        json_decref(in->stats[i]);
    for (size_t i = 0; i < in->ncamps; i++)
        report_campaign_free(&in->camps[i]);
}

/* The planned pairs of the first plan, with what its last injected run
 * measured. */
static size_t plan_pairs(report_inputs *in, report_pair *pairs, size_t max)
{
    if (!in->nplans)
        return 0;
    json_t *injs = json_object_get(in->plans[0], "injections");
    json_t *runs = in->injects[0] ? json_object_get(in->injects[0], "runs") : NULL;
    json_t *last = json_array_get(runs, json_array_size(runs) - 1);
    size_t n = 0, i;
    json_t *inj;
    json_array_foreach(injs, i, inj)
    {
        json_t *p = json_object_get(inj, "predicted");
        if (!json_is_object(p) || n == max)
            continue;
        report_pair *r = &pairs[n++];
        memset(r, 0, sizeof *r);
        r->ta = (uint32_t)json_integer_value(json_object_get(p, "thread_a"));
        r->sa = (uint64_t)json_integer_value(json_object_get(p, "seq_a"));
        r->tb = (uint32_t)json_integer_value(json_object_get(p, "thread_b"));
        r->sb = (uint64_t)json_integer_value(json_object_get(p, "seq_b"));
        r->predicted = (uint64_t)json_integer_value(json_object_get(p, "time"));
        r->delay_ns = (uint64_t)json_integer_value(json_object_get(inj, "delay_ns"));
        size_t k;
        json_t *al;
        json_array_foreach(json_object_get(last, "alignments"), k, al)
        {
            if (json_integer_value(json_object_get(al, "thread_a")) == r->ta &&
                (uint64_t)json_integer_value(json_object_get(al, "seq_a")) == r->sa &&
                json_object_get(al, "achieved_a")) {
                r->measured = 1;
                r->collided = json_is_true(json_object_get(al, "collided"));
                r->achieved_a = (uint64_t)json_integer_value(json_object_get(al, "achieved_a"));
                r->achieved_b = (uint64_t)json_integer_value(json_object_get(al, "achieved_b"));
            }
        }
    }
    return n;
}

static const char *const css =
    "body{font-family:sans-serif;margin:24px auto;max-width:1160px;color:#222;line-height:1.4}"
    "h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;border-bottom:2px solid #1f5fbf;"
    "padding-bottom:3px;margin-top:32px}h3{font-size:15px;margin-bottom:6px}"
    "table{border-collapse:collapse;margin:6px 0 4px;font-size:13px}"
    "th,td{border:1px solid #ccd;padding:3px 7px;text-align:left;vertical-align:top}"
    "th{background:#eef2f8}table.kv th{width:200px}code{font-size:12px}"
    "table.cmds code{overflow-wrap:anywhere}"
    ".pass{color:#19703a;font-weight:bold}.fail{color:#b3261e;font-weight:bold}"
    ".note{color:#555;font-size:13px}.seed{font-weight:bold}"
    "p.d2{color:#222;background:#fff8e1;border-left:3px solid #e08a00;padding:4px 8px}"
    "figure{margin:6px 0 18px}figcaption{color:#444;font-size:13px;max-width:1000px;"
    "margin-top:4px}details{margin:2px 0 6px;font-size:13px}summary{cursor:pointer;"
    "color:#1f5fbf}"
    "svg{display:block;margin:8px 0}svg.plot{width:100%;max-width:900px;height:auto}"
    "#timeline,.timeline{width:100%;height:auto;border:1px solid #dde}"
    "pre{background:#f6f8fa;padding:8px;font-size:12px;overflow-x:auto;white-space:pre}";

static void page_summary(rbuf *b, report_inputs *in, const report_trace *rt)
{
    rb_puts(b, "<h2>Summary</h2>\n<figure>");
    report_section_table1(b, rt, in->nplans ? in->plans[0] : NULL,
                          in->nplans ? in->injects[0] : NULL,
                          in->demo || in->convergence || in->nstats, in->camps, in->ncamps);
    rb_puts(b, "<figcaption>What was run and what each step found; the sections below show "
               "each finding and the command that reproduces it.");
    if (rt)
        rb_puts(b, " The read/write pattern lists, per thread, the accesses to each variable "
                   "two threads write, in program order: R read, W write, M atomic "
                   "read-modify-write; (RW)x50 is fifty reads each followed by a write.");
    rb_puts(b, "</figcaption></figure>\n");
}

static void page_timeline(rbuf *b, report_inputs *in, const report_trace *rt,
                          const report_trace *inj)
{
    rb_puts(b, "<h2>Timeline</h2>\n");
    if (!rt) {
        rb_puts(b, "<p class='note'>no trace in this folder (a campaign keeps the traces of its "
                   "failing runs with --save-trace)</p>\n");
        return;
    }
    report_pair pairs[64];
    size_t np = plan_pairs(in, pairs, 64);
    rb_puts(b, "<figure>");
    report_timeline_svg(b, rt, inj, pairs, np);
    rb_puts(b, "<figcaption>");
    rb_esc(b, in->trace_title);
    rb_puts(b, ": one lane per thread in virtual time (the strip on top is the whole run, "
               "the blue part the window shown); ticks are accesses to addresses two threads "
               "touch.");
    if (np)
        rb_puts(b, " Red circles mark the planned pair of writes and the dashed arrow the "
                   "injected delay.");
    if (inj)
        rb_puts(b, " Below, on the same axis, the run with the plan's delays shows where the "
                   "pair met.");
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/timeline.json", in->dir);
    rb_puts(b, " To see every event, ");
    if (access(path, R_OK) != 0) {
        rb_puts(b, "convert the trace with <code>weft export --format chrome -o timeline.json ");
        rb_esc(b, in->trace_path);
        rb_puts(b, "</code> and ");
        snprintf(path, sizeof path, "timeline.json");
    }
    rb_puts(b, "open <code>");
    rb_esc(b, path);
    rb_puts(b, "</code> in Perfetto's trace viewer.");
    rb_puts(b, "</figcaption></figure>\n");
}

static void page_optimizer(rbuf *b, report_inputs *in)
{
    if (!in->convergence && !in->nstats && !in->nplans)
        return;
    rb_puts(b, "<h2>Optimizer</h2>\n<h3>convergence: the best fitness each search has found, "
               "against the evaluations it has made</h3>\n");
    if (in->convergence) {
        rb_puts(b, "<figure>");
        report_plot_convergence(b, in->convergence, "conv");
        rb_puts(b, "<figcaption>");
        report_caption_convergence(b, in->convergence);
        rb_puts(b, "</figcaption></figure>\n");
    } else {
        rb_puts(b, "<p class='note'>no convergence data</p>\n");
    }
    rb_puts(b, "<h3>evaluations to the first alignment, per algorithm, over several seeds</h3>\n");
    if (in->nstats) {
        rb_puts(b, "<figure>");
        report_plot_boxes(b, in->stats, in->stat_names, in->nstats, "boxes");
        rb_puts(b, "<figcaption>");
        report_caption_boxes(b, in->stats, in->stat_names, in->nstats);
        rb_puts(b, "</figcaption></figure>\n");
    } else {
        rb_puts(b, "<p class='note'>no search statistics</p>\n");
    }
    report_section_plans(b, in->dir, in->plans, in->plan_names, in->nplans, in->stats,
                         in->stat_names, in->nstats);
}

static void page_campaigns(rbuf *b, report_inputs *in)
{
    if (!in->ncamps)
        return;
    replay_summary sums[MAX_CAMPAIGNS];
    size_t ns = 0;
    for (size_t i = 0; i < in->ncamps; i++)
        if (in->camps[i].have_sum)
            sums[ns++] = in->camps[i].sum;
    rb_puts(b, "<h2>Schedulers: hit rates against guaranteed bounds</h2>\n<figure>");
    report_plot_rates(b, sums, ns, "rates");
    rb_puts(b, "<figcaption>");
    report_caption_rates(b);
    rb_puts(b, "</figcaption></figure>\n");
    report_section_campaigns(b, in->camps, in->ncamps);
    rb_puts(b, "<h2>Failing schedules</h2>\n");
    report_section_failures(b, in->camps, in->ncamps, MAX_FAILURES_SHOWN);
    report_section_explain(b, in->camps, in->ncamps);
}

static void page(rbuf *b, report_inputs *in, const report_trace *rt, const report_trace *inj)
{
    char title[256] = "";
    if (rt && rt->meta->argc)
        snprintf(title, sizeof title, "%s", rt->meta->argv[0]);
    else if (in->ncamps && in->camps[0].cfg.run.argc)
        snprintf(title, sizeof title, "%s", in->camps[0].cfg.run.argv[0]);
    const char *base = strrchr(title, '/') ? strrchr(title, '/') + 1 : title;
    rb_puts(b, "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n<title>weft "
               "report: ");
    rb_esc(b, base);
    rb_printf(b, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>weft report: ", css);
    rb_esc(b, base);
    rb_puts(b, "</h1>\n<p class='note'>From <code>");
    rb_esc(b, in->dir);
    rb_printf(b, "</code> by weft %s", WEFT_VERSION);
    json_t *seed = json_object_get(in->demo, "seed");
    if (json_is_integer(seed))
        rb_printf(b, "; demo seed %lld (every step below is reproducible from it)",
                  (long long)json_integer_value(seed));
    rb_puts(b, ".</p>\n");
    page_summary(b, in, rt);
    page_timeline(b, in, rt, inj);
    page_optimizer(b, in);
    size_t ninj = 0;
    json_t *injects[2];
    const char *inj_names[2];
    for (size_t i = 0; i < in->nplans; i++)
        if (in->injects[i])
            injects[ninj] = in->injects[i], inj_names[ninj++] = in->plan_names[i];
    if (ninj) {
        rb_puts(b, "<h2>Injected replay</h2>\n");
        report_section_inject(b, injects, inj_names, ninj);
    }
    page_campaigns(b, in);
    if (json_array_size(json_object_get(in->demo, "steps"))) {
        rb_puts(b, "<h2>Commands</h2>\n");
        report_section_commands(b, in->demo);
    }
    rb_puts(b, "</body>\n</html>\n");
}

int report_generate(const char *dir, const char *out, int quiet)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        weft_error("%s: %s", dir, stat(dir, &st) != 0 ? strerror(errno) : "not a folder");
        return -1;
    }
    report_inputs in = {.dir = dir};
    find_inputs(&in);
    if (!in.demo && !in.ncamps && !in.trace_path[0] && !in.nplans) {
        weft_error("%s: no weft demo or campaign outputs here (demo.json, run.wtr, "
                   "campaign.json)",
                   dir);
        free_inputs(&in);
        return -1;
    }
    char err[512];
    report_trace rt, inj;
    int have_rt = in.trace_path[0] && report_trace_load(in.trace_path, &rt, err, sizeof err) == 0;
    if (in.trace_path[0] && !have_rt)
        fprintf(stderr, "weft: report: no timeline: %s\n", err);
    int have_inj = have_rt && in.injected_path[0] &&
                   report_trace_load(in.injected_path, &inj, err, sizeof err) == 0;
    if (!report_have_gnuplot())
        fprintf(stderr, "weft: report: gnuplot not found: the plots are left out\n");
    rbuf b = {0};
    page(&b, &in, have_rt ? &rt : NULL, have_inj ? &inj : NULL);
    if (have_inj)
        report_trace_free(&inj);
    if (have_rt)
        report_trace_free(&rt);
    free_inputs(&in);
    int rc = 0;
    if (b.oom) {
        weft_error("%s: out of memory", out);
        rc = -1;
    } else if (weft_write_atomic(out, b.s, b.len, err, sizeof err)) {
        weft_error("%s", err);
        rc = -1;
    } else if (!quiet) {
        printf("weft: report written: %s (%zu bytes; open it in a browser, it needs no "
               "network)\n",
               out, b.len);
    }
    rb_free(&b);
    return rc;
}
