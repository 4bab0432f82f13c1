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

/* Steps 4-5: the optimizer and the injected replays. Fills *why when there
 * is nothing to align. */
static int optimize_and_inject(demo_ctx *ctx, const demo_opts *o, const char *trace, int *step)
{
    char log[PATH_MAX + 64], why[512] = "", path[PATH_MAX + 64];
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
    if (ctx->interrupted)
        return -1;

    header(++*step, "the optimizer's convergence: one RND, SHC and SA run (in-process)");
    snprintf(path, sizeof path, "%s/convergence.json", o->dir);
    int conv = optimizer_convergence(trace, o->seed, o->dmax, o->budget, path, why, sizeof why);
    if (conv == 1) {
        printf("   nothing to align: %s; skipping the searches and the injections\n", why);
        return 0;
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

    static const char *const algos[] = {"sa", "shc", "rnd"};
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

    static const char *const plans[] = {"exact", "sa"};
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

/* The findings, each with the command that reproduces it. */
static void summary(const demo_opts *o, const char *trace, const char *report)
{
    char err[512];
    printf("\n== summary (seed %" PRIu64 ")\n", o->seed);
    report_trace rt;
    if (report_trace_load(trace, &rt, err, sizeof err) == 0) {
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
    static const char *const plans[] = {"exact", "sa"};
    for (size_t p = 0; p < 2; p++) {
        char name[64];
        snprintf(name, sizeof name, "plan-%s.json", plans[p]);
        json_t *plan = load(o->dir, name);
        json_t *inj0 = json_array_get(json_object_get(plan, "injections"), 0);
        json_t *pr = json_object_get(inj0, "predicted");
        if (!inj0 || !json_is_object(pr)) {
            if (p == 0)
                printf("collision  none: no two threads' writes can be aligned\n");
            json_decref(plan);
            continue;
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
               plans[p], (long long)json_integer_value(json_object_get(inj0, "delay_ns")),
               (long long)json_integer_value(json_object_get(pr, "thread_a")),
               (long long)json_integer_value(json_object_get(pr, "seq_a")),
               (long long)json_integer_value(json_object_get(pr, "thread_b")),
               (long long)json_integer_value(json_object_get(pr, "seq_b")),
               var ? var : json_string_value(json_object_get(pr, "address")),
               (long long)json_integer_value(json_object_get(pr, "time")));
        snprintf(name, sizeof name, "inject-%s.json", plans[p]);
        json_t *in = load(o->dir, name);
        if (in) {
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
        }
        printf("           reproduce: weft inject %s/plan-%s.json\n", o->dir, plans[p]);
        json_decref(in);
        json_decref(plan);
    }
    for (size_t p = 0; p < 3; p++) {
        char dir[PATH_MAX + 32];
        snprintf(dir, sizeof dir, "%s/replay-%s", o->dir, policies[p]);
        report_campaign c;
        if (report_campaign_load(dir, &c, err, sizeof err) || !c.have_sum) {
            const char *why = o->campaign_why[p][0] ? o->campaign_why[p] : "see the logs";
            printf("%-10s no campaign: %s\n", policies[p],
                   strncmp(why, "weft: ", 6) ? why : why + 6);
            if (c.campaign)
                report_campaign_free(&c);
            continue;
        }
        const replay_summary *s = &c.sum;
        printf("%-4s d%-4" PRIu64 " %" PRIu64 "/%" PRIu64
               " runs failed = %.3g%% (95%% CI %.3g%% .. "
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
    if (report)
        printf("report     %s (open it in a browser; it needs no network)\n", report);
}

int demo_run(demo_opts *o)
{
    if (weft_mkdirs(o->dir))
        return WEFT_EXIT_FAIL;
    if (guest_check_binary(o->gargv[0], o->sysroot))
        return WEFT_EXIT_FAIL;
    demo_ctx ctx = {.dir = o->dir, .tty = isatty(2)};
    ssize_t n = readlink("/proc/self/exe", ctx.self, sizeof ctx.self - 1);
    if (n <= 0) {
        weft_error("cannot find the weft binary (/proc/self/exe): %s", strerror(errno));
        return WEFT_EXIT_FAIL;
    }
    ctx.self[n] = 0;
    remove_stale(o->dir);
    json_t *prog = json_array();
    for (int i = 0; i < o->gargc; i++)
        json_array_append_new(prog, json_string(o->gargv[i]));
    ctx.steps = json_array();
    ctx.doc = json_pack("{s:s, s:i, s:o, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:o}",
                        "format", "weft-demo", "version", 1, "program", prog, "seed",
                        (json_int_t)o->seed, "settings", "runs", (json_int_t)o->runs, "depth",
                        (json_int_t)o->depth, "search_runs", (json_int_t)o->search_runs, "budget",
                        (json_int_t)o->budget, "dmax", (json_int_t)o->dmax, "jobs",
                        (json_int_t)o->jobs, "timeout", (json_int_t)o->timeout, "steps", ctx.steps);
    /* doc owns steps; ctx.steps stays a borrowed pointer into it */
    printf("weft demo: %s", o->gargv[0]);
    for (int i = 1; i < o->gargc; i++)
        printf(" %s", o->gargv[i]);
    printf("\nseed %" PRIu64 " (--seed), outputs in %s/; 'weft' below is %s\n", o->seed, o->dir,
           ctx.self);

    char trace[PATH_MAX + 32], log[PATH_MAX + 64], path[PATH_MAX + 64];
    snprintf(trace, sizeof trace, "%s/run.wtr", o->dir);
    int step = 0, rc = WEFT_EXIT_OK;
    demo_cmd c = {0};
    header(++step, "weft trace: the program on the ideal platform, exact mode");
    demo_cmd_add(&c, "weft"), demo_cmd_add(&c, "trace"), demo_cmd_add(&c, "--mode");
    demo_cmd_add(&c, "exact"), demo_cmd_add(&c, "--timeout");
    demo_cmd_addf(&c, "%" PRIu64, o->timeout);
    /* A program that spins records tens of millions of events a second; the
     * steps below (timeline, search) are for a readable amount. */
    demo_cmd_add(&c, "--max-events"), demo_cmd_addf(&c, "%d", DEMO_MAX_EVENTS);
    demo_cmd_add(&c, "-o"), demo_cmd_add(&c, trace);
    add_guest(&c, o);
    int tst = demo_step(&ctx, "trace", &c, DEMO_PROGRESS_TIME, NULL, 0, log, sizeof log);
    demo_cmd_free(&c);
    demo_print_log(log, 10, NULL);
    char err[512];
    weft_trace *t = ctx.interrupted ? NULL : weft_trace_open(trace, err, sizeof err);
    if (!t) {
        if (!ctx.interrupted)
            weft_error("demo: no trace to work on (%s); see %s", err, log);
        rc = ctx.interrupted ? 128 + ctx.interrupted : WEFT_EXIT_FAIL;
        goto out;
    }
    int hung = (weft_trace_get_summary(t)->flags & WEFT_TRACE_TIMED_OUT) || tst == 124;
    weft_trace_close(t);

    header(++step, "weft info: threads, events, shared variables");
    demo_cmd_add(&c, "weft"), demo_cmd_add(&c, "info"), demo_cmd_add(&c, trace);
    demo_step(&ctx, "info", &c, DEMO_PROGRESS_TIME, NULL, 0, log, sizeof log);
    demo_cmd_free(&c);
    demo_print_log(log, 32, NULL);

    header(++step, "weft export: the timeline for Perfetto / chrome://tracing");
    demo_cmd_add(&c, "weft"), demo_cmd_add(&c, "export"), demo_cmd_add(&c, "--format");
    demo_cmd_add(&c, "chrome"), demo_cmd_add(&c, "-o");
    demo_cmd_addf(&c, "%s/timeline.json", o->dir);
    demo_cmd_add(&c, trace);
    demo_step(&ctx, "export", &c, DEMO_PROGRESS_TIME, NULL, 0, log, sizeof log);
    demo_cmd_free(&c);
    demo_print_log(log, 4, NULL);

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
