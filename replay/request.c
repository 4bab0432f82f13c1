/* A weft replay command line once parsed: its strings turned into replay
 * types, the options that only make sense together checked, and what a
 * single run's options add after replay_start. The command (cli/cmd_replay.c)
 * keeps only its option table and its messages, so the rules of what may be
 * combined live beside the code that relies on them. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/replay.h"

void replay_request_init(replay_request *r)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    *r = (replay_request){.c = {.kind = PCT_KIND_PCT,
                                .depth = 3,
                                .starvation = -1,
                                .points = POINTS_VISIBLE,
                                .profile_runs = 3,
                                .learn_bytes = REPLAY_LEARN_BYTES,
                                .max_bound = 2},
                          .jobs = ncpu > 0 ? (uint64_t)ncpu : 1,
                          .timeout = REPLAY_DEFAULT_TIMEOUT};
}

int replay_points_parse(const char *arg, replay_config *c)
{
    if (!strcmp(arg, "none"))
        c->points = POINTS_NONE;
    else if (!strcmp(arg, "shared"))
        c->points = POINTS_SHARED;
    else if (!strcmp(arg, "visible"))
        c->points = POINTS_VISIBLE;
    else if (!strcmp(arg, "races")) {
        c->points = POINTS_VISIBLE;
        c->race_points = 1;
    } else if (!strncmp(arg, "visible:", 8) && arg[8]) {
        c->points = POINTS_VISIBLE;
        if (!realpath(arg + 8, c->pcs_path))
            return -2;
    } else if (!strncmp(arg, "races:", 6) && arg[6]) {
        c->points = POINTS_VISIBLE;
        c->race_points = 1;
        if (!realpath(arg + 6, c->pcs_path))
            return -2;
    } else if (!strcmp(arg, "all"))
        c->points = POINTS_ALL;
    else if (!strncmp(arg, "pcs:", 4) && arg[4]) {
        c->points = POINTS_PCS;
        if (!realpath(arg + 4, c->pcs_path))
            return -2;
    } else
        return -1;
    return 0;
}

int replay_starvation_parse(const char *arg, double *p)
{
    char *end;
    errno = 0;
    *p = strtod(arg, &end);
    return errno || end == arg || *end || !(*p >= 0 && *p < 1) ? -1 : 0;
}

int replay_shard_parse(const char *arg, replay_shard *sh)
{
    const char *slash = strchr(arg, '/');
    size_t ni = slash ? (size_t)(slash - arg) : 0;
    /* Digits only and fewer than 20 of them: strtoull cannot overflow. */
    if (ni && ni < 20 && strspn(arg, "0123456789") == ni && slash[1] &&
        strspn(slash + 1, "0123456789") == strlen(slash + 1) && strlen(slash + 1) < 20) {
        sh->index = strtoull(arg, NULL, 10);
        sh->count = strtoull(slash + 1, NULL, 10);
        if (sh->index >= 1 && sh->index <= sh->count && sh->count <= REPLAY_MAX_SHARDS)
            return 0;
    }
    return -1;
}

int replay_summary_show(const char *path)
{
    replay_summary s;
    char err[512];
    if (replay_summary_read(path, &s, err, sizeof err)) {
        weft_error("%s", err);
        return WEFT_EXIT_FAIL;
    }
    replay_summary_print(&s, stdout);
    return WEFT_EXIT_OK;
}

/* The first of names the command line gave, or NULL. */
static const char *first_given(const replay_request *r, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (r->given(r->given_ctx, names[i]))
            return names[i];
    return NULL;
}

static int check_fail(char *err, size_t errlen, const char *fmt, const char *name)
{
    snprintf(err, errlen, fmt, name);
    return -1;
}

/* --schedule FILE: the file decides the policy, its parameters and points,
 * so an option that would decide them too is a contradiction. No --sched:
 * the portfolio's policies bring their own depths and run no shards. */
static int check_decided(const replay_request *r, char *err, size_t errlen)
{
    static const char *const decided[] = {"sched",      "depth",         "steps", "threads",
                                          "radius",     "points",        "runs",  "profile-runs",
                                          "starvation", "host-parallel", "shard", "resume"};
    static const char *const own[] = {"depth", "radius", "host-parallel", "shard", "resume"};
    const char *name;
    if (r->schedule && (name = first_given(r, decided, sizeof decided / sizeof *decided)))
        return check_fail(err, errlen, "--%s: the schedule file decides it (--schedule)", name);
    if (r->c.portfolio && (name = first_given(r, own, sizeof own / sizeof *own)))
        return check_fail(err, errlen,
                          "--%s needs --sched (without it, weft replay runs a portfolio "
                          "of random, PCT at depths 1-3 and POS)",
                          name);
    return 0;
}

/* --seed S alone is one run in detail; with --runs N a campaign from S. */
static void take_seeds(replay_request *r)
{
    replay_config *c = &r->c;
    int seed_given = r->given(r->given_ctx, "seed");
    c->seed_given = (seed_given && !c->runs_given) || r->schedule;
    c->first_given = seed_given && c->runs_given;
    c->first_seed = seed_given ? r->seed : 1;
    /* The plain `weft replay PROG`: a search, not one run per policy (5 runs
     * said "no bug" on programs whose bugs 8 to 38% of runs hit). */
    c->runs = c->runs_given ? r->runs : c->portfolio && !seed_given ? REPLAY_PORTFOLIO_RUNS : 1;
    if (r->given(r->given_ctx, "for")) {
        c->deadline = weft_now_s() + (double)c->budget_s; /* profiling's time counts too */
        if (!c->runs_given)
            c->runs = REPLAY_RUNS_MAX; /* as many as fit */
    }
    c->jobs = (unsigned)r->jobs;
    c->timeout = (unsigned)r->timeout;
    c->expect_exit = (int)r->expect_exit;
    c->max_threads = (unsigned)r->max_threads;
}

/* One run's options against a campaign's, in the order the command has
 * always reported them: the first that applies is the line. */
static const char *single_run_conflict(const replay_request *r)
{
    const replay_config *c = &r->c;
    if ((r->explain || r->minimize) && !c->seed_given)
        return r->explain ? "--explain describes one run: give --seed S without --runs"
                          : "--minimize describes one run: give --seed S without --runs";
    if ((r->given(r->given_ctx, "minimize-runs") || r->given(r->given_ctx, "minimize-match")) &&
        !r->minimize)
        return "--minimize-runs and --minimize-match: only with --minimize";
    if (c->portfolio && c->seed_given)
        return "--seed alone replays one run of one policy: give --sched too";
    if (c->seed_given && r->shard.index)
        return "--shard splits a campaign (--runs), not a single --seed run";
    if (c->seed_given && c->resume)
        return "--resume continues a campaign (--runs), not a single --seed run";
    if (r->shard.index && c->deadline && !c->runs_given)
        return "--shard splits a range of seeds: give --runs N with --for";
    if (c->seed_given && c->deadline)
        return "--for bounds a campaign's time, not a single run (--seed alone, --schedule)";
    return NULL;
}

/* A policy's own parameters given to another policy. */
static int check_policy_options(const replay_request *r, char *err, size_t errlen)
{
    const replay_config *c = &r->c;
    const char *msg = NULL;
    if (c->radius_given && c->kind != PCT_KIND_RPRO)
        msg = "--radius: only for --sched rpro";
    else if (r->given(r->given_ctx, "bound") && c->kind != PCT_KIND_PB && c->kind != PCT_KIND_DB)
        msg = "--bound: only for --sched pb or db";
    else if (c->host_parallel && c->kind != PCT_KIND_PPCT)
        msg = "--host-parallel: only for --sched ppct";
    if (msg)
        return check_fail(err, errlen, "%s", msg);
    if (c->k_given && c->radius_given && c->radius > c->k) {
        snprintf(err, errlen, "--radius %" PRIu64 ": larger than the step budget k = %" PRIu64,
                 c->radius, c->k);
        return -1;
    }
    return 0;
}

int replay_request_check(replay_request *r, char *err, size_t errlen)
{
    replay_config *c = &r->c;
    c->radius_given = r->given(r->given_ctx, "radius");
    c->runs_given = r->given(r->given_ctx, "runs");
    c->jobs_given = r->given(r->given_ctx, "jobs");
    c->k_given = r->given(r->given_ctx, "steps");
    c->depth_given = r->given(r->given_ctx, "depth");
    c->portfolio = !r->given(r->given_ctx, "sched") && !r->schedule;
    c->n_given = r->given(r->given_ctx, "threads");
    if (check_decided(r, err, errlen))
        return -1;
    take_seeds(r);
    const char *conflict = single_run_conflict(r);
    if (conflict)
        return check_fail(err, errlen, "%s", conflict);
    return check_policy_options(r, err, errlen);
}

/* The output folder's default name says what ran in it, so that a seed, a
 * shard and a campaign of one program do not overwrite each other. */
static void default_out(const replay_request *r, char *buf, size_t len)
{
    if (r->schedule)
        snprintf(buf, len, "weft-replay-schedule");
    else if (r->c.seed_given)
        snprintf(buf, len, "weft-replay-seed-%" PRIu64, r->c.first_seed);
    else if (r->shard.index)
        snprintf(buf, len, "weft-replay-shard-%" PRIu64 "-of-%" PRIu64, r->shard.index,
                 r->shard.count);
    else
        snprintf(buf, len, "weft-replay");
}

/* --schedule FILE: read it and make c its replay; the file's time limit
 * and expected exit status unless given. 0, or -1 after one line. */
static int load_schedule(replay_request *r, const char *out, replay_schedule *s)
{
    char err[PATH_MAX + 256];
    if (replay_schedule_read(r->schedule, s, err, sizeof err)) {
        weft_error("--schedule %s", err);
        return -1;
    }
    if (!r->given(r->given_ctx, "timeout"))
        r->c.timeout = s->timeout;
    if (!r->given(r->given_ctx, "expect-exit"))
        r->c.expect_exit = s->expect_exit;
    return replay_schedule_apply(&r->c, s, r->schedule, out);
}

/* What a single run's options add once it has run: the schedule file's
 * verdict compared, the explanation, the minimal schedule. */
static int after_run(const replay_request *r, const replay_schedule *s, int rc)
{
    const replay_config *c = &r->c;
    int ran = rc == WEFT_EXIT_OK || rc == 10;
    if (r->schedule && ran)
        replay_schedule_verify(c->out_dir, c->first_seed, s);
    if (r->explain && ran) {
        replay_explanation x;
        char err[PATH_MAX + 512];
        if (replay_explanation_load(c->out_dir, c->first_seed, &x, err, sizeof err)) {
            weft_error("--explain: %s", err);
            return WEFT_EXIT_FAIL;
        }
        replay_explanation_print(&x, stdout, 0);
        replay_explanation_free(&x);
    }
    if (r->minimize && rc == 10)
        rc = replay_minimize(c, c->first_seed, r->minimize_runs ? r->minimize_runs : 300,
                             r->verdict_only);
    else if (r->minimize && ran)
        printf("weft: seed %" PRIu64 " passed: nothing to minimize\n", c->first_seed);
    return rc;
}

int replay_request_run(replay_request *r, char **program, int nprogram)
{
    replay_config *c = &r->c;
    if (c->seed_given)
        c->jobs = 1;
    /* --explain and --minimize read the run's kept trace and switch log. */
    if (r->explain || r->minimize)
        c->save_trace = 1;
    char def_out[64];
    const char *out = r->out;
    if (!out) {
        default_out(r, def_out, sizeof def_out);
        out = def_out;
    }
    if (nprogram > 0) {
        c->run.binary = program[0];
        c->run.argv = program;
        c->run.argc = nprogram;
    }
    replay_schedule sched = {0};
    if (r->schedule && load_schedule(r, out, &sched))
        return WEFT_EXIT_FAIL;
    int rc = replay_start(c, out, &r->shard);
    rc = after_run(r, &sched, rc);
    replay_schedule_free(&sched);
    return rc;
}
