/* weft demo: the whole job on a bundled program (or the user's): trace on
 * the ideal platform, the info summary, the exact solver and the searches
 * for delays that align writes, the injected replay of the plans, PCT,
 * PPCT and RPro campaigns, a short summary of what was found with the
 * command reproducing each finding, and the HTML report.
 *
 * Every step is the weft binary run as a child with the arguments printed
 * above its output (steps.c), so each printed command reproduces its
 * step, and everything random derives from the one printed seed. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/demo.h"
#include "weft/optimizer.h"
#include "weft/report.h"

#define DEMO_HUNG_RUNS 4       /* replay runs per policy when the traced run never ended */
#define DEMO_MAX_PAIRS 16      /* pairs in the exact plan */
#define DEMO_MAX_EVENTS 250000 /* the traced run records about this many at most */

static const char *const policies[] = {"pct", "ppct", "rpro"};

const char *demo_fixture_path(const char *name)
{
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "../fixtures/%s", name); /* the build tree */
    const char *found = guest_installed_path(path);
    if (!found) {
        snprintf(path, sizeof path, "../" WEFT_PKGLIBDIR "/fixtures/%s", name);
        found = guest_installed_path(path);
    }
    if (!found) { /* named in the "no such file" error that follows */
        static char missing[PATH_MAX * 2];
        const char *dir = guest_self_dir();
        snprintf(missing, sizeof missing, "%s/%s", dir ? dir : ".", path);
        found = missing;
    }
    /* a copy: guest_installed_path's buffer is reused by its next call */
    static char real[PATH_MAX];
    return realpath(found, real) ? real : found;
}

static void header(int n, const char *what)
{
    printf("\n== %d. %s\n", n, what);
    fflush(stdout);
}

static void add_guest(demo_cmd *c, const demo_opts *o)
{
    if (o->sysroot) {
        demo_cmd_add(c, "--sysroot");
        demo_cmd_add(c, o->sysroot);
    }
    demo_cmd_add(c, "--");
    for (int i = 0; i < o->gargc; i++)
        demo_cmd_add(c, o->gargv[i]);
}

/* Outputs of an earlier demo in DIR that this one might not rewrite. */
static void remove_stale(const char *dir)
{
    static const char *const files[] = {"plan-exact.json",   "plan-sa.json",   "search-rnd.json",
                                        "search-shc.json",   "search-sa.json", "convergence.json",
                                        "inject-exact.json", "inject-sa.json", "report.html",
                                        "demo.json"};
    char path[PATH_MAX + 64];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
}

static int exists(const char *dir, const char *name)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, R_OK) == 0;
}

static json_t *load(const char *dir, const char *name)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return json_load_file(path, 0, NULL);
}

/* The exact solver's plan, at most DEMO_MAX_PAIRS pairs. */
static int optimize_exact(demo_ctx *ctx, const demo_opts *o, const char *trace, int *step)
{
    char log[PATH_MAX + 64];
    demo_cmd c = {0};
    header(++*step, "weft optimize --algo exact: every pair one delay aligns, a plan");
    demo_cmd_add(&c, "weft"), demo_cmd_add(&c, "optimize"), demo_cmd_add(&c, trace);
    demo_cmd_add(&c, "--algo"), demo_cmd_add(&c, "exact");
    /* a prefix of the greedy selection is itself consistent; a few pairs keep
       the injected run and its report readable on programs with thousands */
    demo_cmd_add(&c, "--pairs"), demo_cmd_addf(&c, "%d", DEMO_MAX_PAIRS);
    demo_cmd_add(&c, "-o");
    demo_cmd_addf(&c, "%s/plan-exact.json", o->dir);
    demo_step(ctx, "optimize-exact", &c, DEMO_PROGRESS_TIME, NULL, 0, log, sizeof log);
    demo_cmd_free(&c);
    demo_print_log(log, 14, NULL);
    return ctx->interrupted ? -1 : 0;
}

/* One run of each search, in-process, for the report's convergence plot.
 * Returns 1 (and says so) when the trace has nothing to align. */
static int convergence(const demo_opts *o, const char *trace, int *step)
{
    char why[512] = "", path[PATH_MAX + 64];
    header(++*step, "the optimizer's convergence: one RND, SHC and SA run (in-process)");
    snprintf(path, sizeof path, "%s/convergence.json", o->dir);
    int conv = optimizer_convergence(trace, o->seed, o->dmax, o->budget, path, why, sizeof why);
    if (conv == 1) {
        printf("   nothing to align: %s; skipping the searches and the injections\n", why);
        return 1;
    }
    json_t *cj = conv == 0 ? json_load_file(path, 0, NULL) : NULL;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(cj, "runs"), i, r)
    {
        printf("   %-4s seed %" PRIu64 ": ", json_string_value(json_object_get(r, "algorithm")),
               o->seed);
        if (json_is_true(json_object_get(r, "hit")))
            printf("first alignment after %lld evaluations (%.3f s)\n",
                   (long long)json_integer_value(json_object_get(r, "evals_to_hit")),
                   json_number_value(json_object_get(r, "seconds")));
        else
            printf("no alignment within %lld evaluations (best fitness %.6g)\n",
                   (long long)json_integer_value(json_object_get(r, "evaluations")),
                   json_number_value(json_object_get(r, "best_fitness")));
    }
    json_decref(cj);
    return 0;
}

/* --search-runs runs of each search for the box plot; SA's first hit also
 * gives a plan. */
static int searches(demo_ctx *ctx, const demo_opts *o, const char *trace, int *step)
{
    static const char *const algos[] = {"sa", "shc", "rnd"};
    char log[PATH_MAX + 64];
    demo_cmd c = {0};
    for (size_t a = 0; a < 3 && o->search_runs; a++) {
        char what[128];
        snprintf(what, sizeof what, "weft optimize --algo %s: %" PRIu64 " runs for the box plot%s",
                 algos[a], o->search_runs, a == 0 ? ", and a plan from the first hit" : "");
        header(++*step, what);
        demo_cmd_add(&c, "weft"), demo_cmd_add(&c, "optimize"), demo_cmd_add(&c, trace);
        demo_cmd_add(&c, "--algo"), demo_cmd_add(&c, algos[a]);
        demo_cmd_add(&c, "--seed"), demo_cmd_addf(&c, "%" PRIu64, o->seed);
        demo_cmd_add(&c, "--runs"), demo_cmd_addf(&c, "%" PRIu64, o->search_runs);
        demo_cmd_add(&c, "--budget"), demo_cmd_addf(&c, "%" PRIu64, o->budget);
        demo_cmd_add(&c, "--dmax"), demo_cmd_addf(&c, "%" PRIu64, o->dmax);
        demo_cmd_add(&c, "--stats-json"), demo_cmd_addf(&c, "%s/search-%s.json", o->dir, algos[a]);
        if (a == 0)
            demo_cmd_add(&c, "-o"), demo_cmd_addf(&c, "%s/plan-sa.json", o->dir);
        demo_cmd_add(&c, "-q");
        char name[32];
        snprintf(name, sizeof name, "optimize-%s", algos[a]);
        demo_step(ctx, name, &c, DEMO_PROGRESS_TIME, NULL, 0, log, sizeof log);
        demo_cmd_free(&c);
        demo_print_log(log, 2, NULL); /* the settings and the statistics */
        if (ctx->interrupted)
            return -1;
    }
    return 0;
}

/* weft inject of each plan that was written. */
static int injections(demo_ctx *ctx, const demo_opts *o, int *step)
{
    static const char *const plans[] = {"exact", "sa"};
    char log[PATH_MAX + 64];
    demo_cmd c = {0};
    for (size_t p = 0; p < 2; p++) {
        char plan[64], what[160];
        snprintf(plan, sizeof plan, "plan-%s.json", plans[p]);
        snprintf(what, sizeof what, "weft inject %s: replay with the delays, measure the collision",
                 plan);
        header(++*step, what);
        if (!exists(o->dir, plan)) {
            printf("   no %s plan (no alignment found): nothing to inject\n", plans[p]);
            continue;
        }
        demo_cmd_add(&c, "weft"), demo_cmd_add(&c, "inject");
        demo_cmd_addf(&c, "%s/%s", o->dir, plan);
        demo_cmd_add(&c, "--timeout"), demo_cmd_addf(&c, "%" PRIu64, o->timeout);
        demo_cmd_add(&c, "--report-json"), demo_cmd_addf(&c, "%s/inject-%s.json", o->dir, plans[p]);
        demo_cmd_add(&c, "--keep"), demo_cmd_addf(&c, "%s/inject-%s", o->dir, plans[p]);
        if (o->sysroot)
            demo_cmd_add(&c, "--sysroot"), demo_cmd_add(&c, o->sysroot);
        char name[32];
        snprintf(name, sizeof name, "inject-%s", plans[p]);
        demo_step(ctx, name, &c, DEMO_PROGRESS_TIME, NULL, 0, log, sizeof log);
        demo_cmd_free(&c);
        static const char *const skip[] = {"  refining", NULL};
        demo_print_log(log, 16, skip);
        if (ctx->interrupted)
            return -1;
    }
    return 0;
}

/* Steps 4-5: the optimizer and the injected replays. Says so when there is
 * nothing to align. */
static int optimize_and_inject(demo_ctx *ctx, const demo_opts *o, const char *trace, int *step)
{
    if (optimize_exact(ctx, o, trace, step))
        return -1;
    if (convergence(o, trace, step))
        return 0;
    if (searches(ctx, o, trace, step))
        return -1;
    return injections(ctx, o, step);
}

/* Step 6: a campaign per policy. */
static int campaigns(demo_ctx *ctx, demo_opts *o, uint64_t runs, int *step)
{
    char log[PATH_MAX + 64], what[160];
    for (size_t p = 0; p < 3; p++) {
        snprintf(what, sizeof what, "weft replay --sched %s: %" PRIu64 " runs, depth %" PRIu64,
                 policies[p], runs, o->depth);
        header(++*step, what);
        demo_cmd c = {0};
        demo_cmd_add(&c, "weft"), demo_cmd_add(&c, "replay");
        demo_cmd_add(&c, "--sched"), demo_cmd_add(&c, policies[p]);
        demo_cmd_add(&c, "--depth"), demo_cmd_addf(&c, "%" PRIu64, o->depth);
        demo_cmd_add(&c, "--runs"), demo_cmd_addf(&c, "%" PRIu64, runs);
        demo_cmd_add(&c, "--seed"), demo_cmd_addf(&c, "%" PRIu64, o->seed);
        demo_cmd_add(&c, "--jobs"), demo_cmd_addf(&c, "%" PRIu64, o->jobs);
        demo_cmd_add(&c, "--timeout"), demo_cmd_addf(&c, "%" PRIu64, o->timeout);
        demo_cmd_add(&c, "--save-trace"), demo_cmd_add(&c, "-q");
        demo_cmd_add(&c, "-o"), demo_cmd_addf(&c, "%s/replay-%s", o->dir, policies[p]);
        add_guest(&c, o);
        char runs_path[PATH_MAX + 64];
        snprintf(runs_path, sizeof runs_path, "%s/replay-%s/runs.jsonl", o->dir, policies[p]);
        unlink(runs_path); /* progress counts this campaign's lines only */
        int st =
            demo_step(ctx, policies[p], &c, DEMO_PROGRESS_RUNS, runs_path, runs, log, sizeof log);
        demo_cmd_free(&c);
        static const char *const skip[] = {"weft: seeds ", "weft: profiling", "  files", NULL};
        demo_print_log(log, 12, skip);
        if (ctx->interrupted)
            return -1;
        if (st != 0 && st != 10 &&
            demo_log_find(log, "weft: ", o->campaign_why[p], sizeof o->campaign_why[p]))
            snprintf(o->campaign_why[p], sizeof o->campaign_why[p], "see %.200s", log);
    }
    return 0;
}

/* The program's line of the summary: threads, events, shared variables. */
static void summarize_trace(const demo_opts *o, const char *trace)
{
    char err[512];
    report_trace rt;
    if (report_trace_load(trace, &rt, err, sizeof err) != 0)
        return;
    printf("program    %s: %u threads, %zu events, %zu shared addresses, %zu plainly "
           "written by 2+ threads",
           o->gargv[0], rt.sum->nthreads, rt.n, rt.shared_addrs, rt.ww_addrs);
    for (size_t i = 0; i < rt.nvars && i < 3; i++)
        printf("%s%s", i ? ", " : " (", rt.vars[i].name);
    printf("%s\n", rt.nvars ? (rt.ww_addrs > 3 ? ", ...)" : ")") : "");
    if (rt.nvars)
        printf("pattern    %s: %s\n", rt.vars[0].name, rt.vars[0].pattern);
    report_trace_free(&rt);
}

/* The injected run's line of a plan: alignments achieved and the verdicts. */
static void summarize_injection(const demo_opts *o, const char *plan)
{
    char name[64];
    snprintf(name, sizeof name, "inject-%s.json", plan);
    json_t *in = load(o->dir, name);
    if (!in)
        return;
    json_t *runs = json_object_get(in, "runs");
    json_t *v = json_object_get(json_array_get(runs, json_array_size(runs) - 1), "verdict");
    json_t *u = json_object_get(in, "uninjected");
    const char *bug = json_string_value(json_object_get(v, "bug"));
    printf("           injected: %lld/%lld collided; program %s%s%s%s (uninjected: %s)\n",
           (long long)json_integer_value(json_object_get(in, "achieved")),
           (long long)json_integer_value(json_object_get(in, "planned")),
           json_is_true(json_object_get(v, "passes")) ? "passes" : "fails", bug ? " (" : "",
           bug ? bug : "", bug ? ")" : "",
           json_is_true(json_object_get(u, "passes")) ? "passes" : "fails");
    json_decref(in);
}

/* A plan's first collision, what injecting it did, and its command. Only
 * the first plan (exact) says when there is none. */
static void summarize_plan(const demo_opts *o, const char *plan, int first)
{
    char name[64];
    snprintf(name, sizeof name, "plan-%s.json", plan);
    json_t *pj = load(o->dir, name);
    json_t *inj0 = json_array_get(json_object_get(pj, "injections"), 0);
    json_t *pr = json_object_get(inj0, "predicted");
    if (!inj0 || !json_is_object(pr)) {
        if (first)
            printf("collision  none: no two threads' writes can be aligned\n");
        json_decref(pj);
        return;
    }
    const char *var = json_string_value(json_object_get(inj0, "variable"));
    char varbuf[160];
    json_int_t off = json_integer_value(json_object_get(inj0, "offset"));
    if (var && off) {
        snprintf(varbuf, sizeof varbuf, "%s+%lld", var, (long long)off);
        var = varbuf;
    }
    printf("collision  %s: %lld ns before T%lld seq %lld makes it meet T%lld seq %lld on %s "
           "at %lld ns\n",
           plan, (long long)json_integer_value(json_object_get(inj0, "delay_ns")),
           (long long)json_integer_value(json_object_get(pr, "thread_a")),
           (long long)json_integer_value(json_object_get(pr, "seq_a")),
           (long long)json_integer_value(json_object_get(pr, "thread_b")),
           (long long)json_integer_value(json_object_get(pr, "seq_b")),
           var ? var : json_string_value(json_object_get(pr, "address")),
           (long long)json_integer_value(json_object_get(pr, "time")));
    summarize_injection(o, plan);
    printf("           reproduce: weft inject %s/plan-%s.json\n", o->dir, plan);
    json_decref(pj);
}

/* Policy p's campaign: failures with their interval and guarantee, and the
 * command reproducing the first failing seed. */
static void summarize_campaign(const demo_opts *o, size_t p)
{
    char dir[PATH_MAX + 32], err[512];
    snprintf(dir, sizeof dir, "%s/replay-%s", o->dir, policies[p]);
    report_campaign c;
    if (report_campaign_load(dir, &c, err, sizeof err) || !c.have_sum) {
        const char *why = o->campaign_why[p][0] ? o->campaign_why[p] : "see the logs";
        printf("%-10s no campaign: %s\n", policies[p], strncmp(why, "weft: ", 6) ? why : why + 6);
        if (c.campaign)
            report_campaign_free(&c);
        return;
    }
    const replay_summary *s = &c.sum;
    printf("%-4s d%-4" PRIu64 " %" PRIu64 "/%" PRIu64 " runs failed = %.3g%% (95%% CI %.3g%% .. "
           "%.3g%%); guaranteed >= %.3g%% per run\n",
           policies[p], s->depth, s->hits, s->runs, 100 * s->hit_rate, 100 * s->ci_lo,
           100 * s->ci_hi, 100 * s->bound);
    uint64_t seed;
    char v[64], detail[512], cmd[8192];
    if (report_campaign_first_failure(&c, &seed, v, sizeof v, detail, sizeof detail) == 0) {
        report_campaign_repro(&c, seed, cmd, sizeof cmd);
        printf("           first failing seed %" PRIu64 ": %s%s%s\n           reproduce: %s\n",
               seed, v, detail[0] ? ": " : "", detail, cmd);
    }
    report_campaign_free(&c);
}

/* The findings, each with the command that reproduces it. */
static void summary(const demo_opts *o, const char *trace, const char *report)
{
    printf("\n== summary (seed %" PRIu64 ")\n", o->seed);
    summarize_trace(o, trace);
    summarize_plan(o, "exact", 1);
    summarize_plan(o, "sa", 0);
    for (size_t p = 0; p < 3; p++)
        summarize_campaign(o, p);
    if (report)
        printf("report     %s (open it in a browser; it needs no network)\n", report);
}

/* demo.json's header: the program, the seed and the settings; its steps
 * are appended as they run. */
static void start_doc(demo_ctx *ctx, const demo_opts *o)
{
    json_t *prog = json_array();
    for (int i = 0; i < o->gargc; i++)
        json_array_append_new(prog, json_string(o->gargv[i]));
    ctx->steps = json_array();
    ctx->doc = json_pack(
        "{s:s, s:i, s:o, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:o}", "format", "weft-demo",
        "version", 1, "program", prog, "seed", (json_int_t)o->seed, "settings", "runs",
        (json_int_t)o->runs, "depth", (json_int_t)o->depth, "search_runs",
        (json_int_t)o->search_runs, "budget", (json_int_t)o->budget, "dmax", (json_int_t)o->dmax,
        "jobs", (json_int_t)o->jobs, "timeout", (json_int_t)o->timeout, "steps", ctx->steps);
    /* doc owns steps; ctx->steps stays a borrowed pointer into it */
}

/* Step 1: the traced run. Returns 0 with *hung set when it did not end in
 * time, or weft's exit status when there is no trace to go on with. */
static int trace_step(demo_ctx *ctx, const demo_opts *o, const char *trace, int *step, int *hung)
{
    char log[PATH_MAX + 64], err[512];
    demo_cmd c = {0};
    header(++*step, "weft trace: the program on the ideal platform, exact mode");
    demo_cmd_add(&c, "weft"), demo_cmd_add(&c, "trace"), demo_cmd_add(&c, "--mode");
    demo_cmd_add(&c, "exact"), demo_cmd_add(&c, "--timeout");
    demo_cmd_addf(&c, "%" PRIu64, o->timeout);
    /* A program that spins records tens of millions of events a second; the
     * steps below (timeline, search) are for a readable amount. */
    demo_cmd_add(&c, "--max-events"), demo_cmd_addf(&c, "%d", DEMO_MAX_EVENTS);
    demo_cmd_add(&c, "-o"), demo_cmd_add(&c, trace);
    add_guest(&c, o);
    int tst = demo_step(ctx, "trace", &c, DEMO_PROGRESS_TIME, NULL, 0, log, sizeof log);
    demo_cmd_free(&c);
    demo_print_log(log, 10, NULL);
    weft_trace *t = ctx->interrupted ? NULL : weft_trace_open(trace, err, sizeof err);
    if (!t) {
        if (!ctx->interrupted)
            weft_error("demo: no trace to work on (%s); see %s", err, log);
        return ctx->interrupted ? 128 + ctx->interrupted : WEFT_EXIT_FAIL;
    }
    *hung = (weft_trace_get_summary(t)->flags & WEFT_TRACE_TIMED_OUT) || tst == 124;
    weft_trace_close(t);
    return 0;
}

/* Steps 2-3: weft info and the Perfetto timeline. */
static void info_and_export(demo_ctx *ctx, const demo_opts *o, const char *trace, int *step)
{
    char log[PATH_MAX + 64];
    demo_cmd c = {0};
    header(++*step, "weft info: threads, events, shared variables");
    demo_cmd_add(&c, "weft"), demo_cmd_add(&c, "info"), demo_cmd_add(&c, trace);
    demo_step(ctx, "info", &c, DEMO_PROGRESS_TIME, NULL, 0, log, sizeof log);
    demo_cmd_free(&c);
    demo_print_log(log, 32, NULL);

    header(++*step, "weft export: the timeline for Perfetto / chrome://tracing");
    demo_cmd_add(&c, "weft"), demo_cmd_add(&c, "export"), demo_cmd_add(&c, "--format");
    demo_cmd_add(&c, "chrome"), demo_cmd_add(&c, "-o");
    demo_cmd_addf(&c, "%s/timeline.json", o->dir);
    demo_cmd_add(&c, trace);
    demo_step(ctx, "export", &c, DEMO_PROGRESS_TIME, NULL, 0, log, sizeof log);
    demo_cmd_free(&c);
    demo_print_log(log, 4, NULL);
}

int demo_run(demo_opts *o)
{
    if (weft_mkdirs(o->dir))
        return WEFT_EXIT_FAIL;
    if (guest_check_binary(o->gargv[0], &o->sysroot))
        return WEFT_EXIT_FAIL;
    demo_ctx ctx = {.dir = o->dir, .tty = isatty(2)};
    ssize_t n = readlink("/proc/self/exe", ctx.self, sizeof ctx.self - 1);
    if (n <= 0) {
        weft_error("cannot find the weft binary (/proc/self/exe): %s", strerror(errno));
        return WEFT_EXIT_FAIL;
    }
    ctx.self[n] = 0;
    remove_stale(o->dir);
    start_doc(&ctx, o);
    printf("weft demo: %s", o->gargv[0]);
    for (int i = 1; i < o->gargc; i++)
        printf(" %s", o->gargv[i]);
    printf("\nseed %" PRIu64 " (--seed), outputs in %s/; 'weft' below is %s\n", o->seed, o->dir,
           ctx.self);

    char trace[PATH_MAX + 32], path[PATH_MAX + 64];
    snprintf(trace, sizeof trace, "%s/run.wtr", o->dir);
    int step = 0, hung = 0;
    int rc = trace_step(&ctx, o, trace, &step, &hung);
    if (rc)
        goto out;
    info_and_export(&ctx, o, trace, &step);
    if (ctx.interrupted || optimize_and_inject(&ctx, o, trace, &step)) {
        rc = 128 + (ctx.interrupted ? ctx.interrupted : SIGINT);
        goto out;
    }
    uint64_t runs = o->runs;
    if (hung && !o->runs_given) {
        runs = DEMO_HUNG_RUNS;
        printf("\nnote: the traced run did not end within %" PRIu64 " s, so each replay may "
               "too: %d runs per policy instead of %" PRIu64 " (--runs N to insist)\n",
               o->timeout, DEMO_HUNG_RUNS, o->runs);
    }
    if (campaigns(&ctx, o, runs, &step)) {
        rc = 128 + (ctx.interrupted ? ctx.interrupted : SIGINT);
        goto out;
    }
    header(++step, "weft report: one HTML page");
    snprintf(path, sizeof path, "%s/report.html", o->dir);
    printf("   $ weft report %s\n   ", o->dir);
    fflush(stdout);
    int have_report = report_generate(o->dir, path, 0) == 0;
    demo_save(&ctx);
    summary(o, trace, have_report ? path : NULL);
    if (!have_report)
        rc = WEFT_EXIT_FAIL;
out:
    if (rc == 128 + SIGINT || rc == 128 + SIGTERM)
        printf("\nweft: demo interrupted; the outputs so far are in %s/\n", o->dir);
    json_decref(ctx.doc);
    return rc;
}
