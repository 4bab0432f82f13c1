/* weft replay: run a program under PCT, PPCT, RPro or random scheduling on
 * the ideal platform, one seed or a campaign of many, and report verdicts,
 * hit rates and the policies' guaranteed bounds (the work is replay_start's,
 * replay/campaign_file.c). See docs/replay.md. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "weft/replay.h"

typedef struct replay_cli {
    replay_config c;
    const char *out, *summary, *schedule;
    uint64_t seed, runs, jobs, timeout, expect_exit, minimize_runs;
    int explain, minimize, verdict_only;
    replay_shard shard;
} replay_cli;

#define C(field) offsetof(replay_cli, c.field)
#define O(field) offsetof(replay_cli, field)

static int parse_sched(const cli_command *cmd, const char *arg, void *opts)
{
    replay_cli *o = opts;
    if (!strcmp(arg, "script")) {
        cli_usage_error(cmd, "--sched script: give the schedule file instead, --schedule FILE");
        return -1;
    }
    if (pct_kind_parse(arg, &o->c.kind) || o->c.kind == PCT_KIND_IDEAL) {
        cli_usage_error(cmd, "--sched: expected pct, ppct, rpro, random, pos, pb or db, got '%s'",
                        arg);
        return -1;
    }
    return 0;
}

/* -s was --sched before it meant --seed everywhere: a policy name after -s
 * still selects the policy, with the deprecation warning. */
static int parse_seed(const cli_command *cmd, const char *arg, void *opts)
{
    replay_cli *o = opts;
    if (arg[0] && strspn(arg, "0123456789") != strlen(arg)) {
        pct_kind k;
        if (pct_kind_parse(arg, &k) == 0) {
            cli_warning(cmd, "-s %s is deprecated, use --sched %s", arg, arg);
            return parse_sched(cmd, arg, opts);
        }
    }
    return cli_parse_u64(cmd, "--seed", arg, 0, UINT64_MAX / 2, &o->seed);
}

static int parse_points(const cli_command *cmd, const char *arg, void *opts)
{
    replay_config *c = &((replay_cli *)opts)->c;
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
        if (!realpath(arg + 8, c->pcs_path)) {
            cli_usage_error(cmd, "--points %s: %s", arg, strerror(errno));
            return -1;
        }
    } else if (!strcmp(arg, "all"))
        c->points = POINTS_ALL;
    else if (!strncmp(arg, "pcs:", 4) && arg[4]) {
        c->points = POINTS_PCS;
        if (!realpath(arg + 4, c->pcs_path)) {
            cli_usage_error(cmd, "--points %s: %s", arg, strerror(errno));
            return -1;
        }
    } else {
        cli_usage_error(cmd,
                        "--points: expected visible, races, shared, none, all, pcs:FILE or "
                        "visible:FILE, got '%s'",
                        arg);
        return -1;
    }
    return 0;
}

static int parse_starvation(const cli_command *cmd, const char *arg, void *opts)
{
    replay_config *c = &((replay_cli *)opts)->c;
    char *end;
    errno = 0;
    c->starvation = strtod(arg, &end);
    if (errno || end == arg || *end || !(c->starvation >= 0 && c->starvation < 1)) {
        cli_usage_error(cmd, "--starvation: expected a probability in [0, 1), got '%s'", arg);
        return -1;
    }
    return 0;
}

static int parse_expect_output(const cli_command *cmd, const char *arg, void *opts)
{
    if (access(arg, R_OK) != 0) {
        cli_usage_error(cmd, "--expect-output %s: %s", arg, strerror(errno));
        return -1;
    }
    ((replay_cli *)opts)->c.expect_output = arg;
    return 0;
}

static int parse_match(const cli_command *cmd, const char *arg, void *opts)
{
    replay_cli *o = opts;
    if (strcmp(arg, "line") && strcmp(arg, "verdict")) {
        cli_usage_error(cmd, "--minimize-match: expected line or verdict, got '%s'", arg);
        return -1;
    }
    o->verdict_only = !strcmp(arg, "verdict");
    return 0;
}

static int parse_shard(const cli_command *cmd, const char *arg, void *opts)
{
    replay_shard *sh = &((replay_cli *)opts)->shard;
    const char *slash = strchr(arg, '/');
    size_t ni = slash ? (size_t)(slash - arg) : 0;
    if (ni && ni < 20 && strspn(arg, "0123456789") == ni && slash[1] &&
        strspn(slash + 1, "0123456789") == strlen(slash + 1) && strlen(slash + 1) < 20) {
        sh->index = strtoull(arg, NULL, 10);
        sh->count = strtoull(slash + 1, NULL, 10);
        if (sh->index >= 1 && sh->index <= sh->count && sh->count <= (1u << 20))
            return 0;
    }
    cli_usage_error(cmd, "--shard: expected I/N with 1 <= I <= N <= %u (e.g. 2/4), got '%s'",
                    1u << 20, arg);
    return -1;
}

static const cli_option replay_options[] = {
    {"sched", 0, "KIND",
     "pct, ppct, rpro, random, pos (partial order sampling), pb or db\n"
     "(preemption / delay bounding); without it a portfolio shares the\n"
     "runs: random, PCT at depths 1, 2 and 3, and POS",
     CLI_CUSTOM, 0, 0, 0, parse_sched, NULL},
    {"depth", 'd', "D",
     "bug depth targeted: D-1 change points (default 3, or k+1 when k\n"
     "leaves no room)",
     CLI_U64, C(depth), 1, PCT_MAX_DEPTH, NULL, NULL},
    {"steps", 0, "K", "step budget k (default: measured by a profiling run)", CLI_U64, C(k), 1,
     UINT64_C(1) << 62, NULL, NULL},
    {"threads", 0, "N", "thread count n (default: measured by a profiling run)", CLI_U64, C(n), 1,
     PCT_MAX_THREADS, NULL, NULL},
    {"radius", 0, "R", "rpro: radius in steps (default min(10, k))", CLI_U64, C(radius), 1,
     UINT64_C(1) << 62, NULL, NULL},
    {"bound", 0, "C",
     "pb, db: at most C preemptions / delays (default 2); seeds 1, 2, ...\n"
     "run the schedules with 0 deviations, then 1, ... up to C, and a\n"
     "campaign stops when they are exhausted",
     CLI_U64, C(max_bound), 0, PCT_MAX_BOUND, NULL, NULL},
    {"points", 'p', "P",
     "schedule points: visible (default): the program's own operations\n"
     "(its lock, unlock, wait, signal, create, join and exit calls, its\n"
     "atomics, its accesses to shared addresses), none of the C\n"
     "library's internals; races: the same, but of the plain accesses\n"
     "only those at the pcs weft races reports in the profiling trace;\n"
     "shared: every syscall and atomic, library code included, and\n"
     "accesses to shared addresses; none; all; pcs:FILE, visible:FILE\n"
     "(the point pcs of a campaign)",
     CLI_CUSTOM, 0, 0, 0, parse_points, NULL},
    {"profile-runs", 0, "N",
     "profiling runs (random policy, seeds 0..N-1) whose largest step\n"
     "and thread counts are k and n (default 3)",
     CLI_U64, C(profile_runs), 1, 1000, NULL, NULL},
    {"starvation", 0, "P", "per-decision starvation override probability (default 0.001)",
     CLI_CUSTOM, 0, 0, 0, parse_starvation, NULL},
    {"host-parallel", 0, NULL,
     "ppct: run the high set in parallel on the host (faster, not\nreproducible)", CLI_FLAG,
     C(host_parallel), 0, 0, NULL, NULL},
    {"seed", 's', "S",
     "the first seed (default 1); alone, one run with seed S described in\ndetail", CLI_CUSTOM, 0,
     0, 0, parse_seed, NULL},
    {"runs", 'n', "N", "a campaign of N runs, seeds S..S+N-1 (default 1)", CLI_U64, O(runs), 1,
     UINT64_C(1) << 40, NULL, NULL},
    {"jobs", 'j', "J", "runs at once (default: online CPUs)", CLI_U64, O(jobs), 1, 1024, NULL,
     NULL},
    {"timeout", 't', "SEC", "kill a run after SEC s: verdict timeout (default 60)", CLI_U64,
     O(timeout), 1, 86400 * 7, NULL, NULL},
    {"expect-exit", 0, "N", "the exit status of a passing run (default 0)", CLI_U64, O(expect_exit),
     0, 255, NULL, NULL},
    {"expect-output", 0, "FILE", "a passing run's stdout must equal FILE", CLI_CUSTOM, 0, 0, 0,
     parse_expect_output, NULL},
    {"output", 'o', "DIR",
     "runs.jsonl, summary.json, timing.json, traces (default weft-replay,\n"
     "weft-replay-seed-S for one seed, weft-replay-shard-I-of-N)",
     CLI_STRING, O(out), 0, 0, NULL, NULL},
    {"resume", 0, NULL, "continue the campaign in DIR: run only missing seeds", CLI_FLAG, C(resume),
     0, 0, NULL, NULL},
    {"save-trace", 0, NULL, "keep traces of failing runs in DIR/traces", CLI_FLAG, C(save_trace), 0,
     0, NULL, NULL},
    {"no-fork-server", 0, NULL,
     "start a qemu for every run, instead of forking each run from a\n"
     "server that ran the program to its first thread (docs/replay.md)",
     CLI_FLAG, C(no_fork_server), 0, 0, NULL, NULL},
    {"stop-on-hit", 0, NULL, "stop dispatching seeds after the first failing run", CLI_FLAG,
     C(stop_on_hit), 0, 0, NULL, NULL},
    {"sysroot", 0, "DIR", "AArch64 root filesystem for a dynamically linked PROGRAM", CLI_STRING,
     C(run.sysroot), 0, 0, NULL, NULL},
    {"quiet", 'q', NULL, "no per-hit lines or progress", CLI_FLAG, C(quiet), 0, 0, NULL, NULL},
    {"summary", 0, "FILE", "print the summary of a runs.jsonl and exit", CLI_STRING, O(summary), 0,
     0, NULL, NULL},
    {"explain", 0, NULL,
     "with --seed S: after the run, the thread switches the policy made\n"
     "(step, from, to, why, where, who else was enabled), the races of\n"
     "the run's trace with the last accesses to their variables, and the\n"
     "verdict (implies --save-trace)",
     CLI_FLAG, O(explain), 0, 0, NULL, NULL},
    {"minimize", 0, NULL,
     "with --seed S of a failing run: the fewest of its preemptions that\n"
     "still fail the same way (ddmin, each candidate one replay), saved\n"
     "as DIR/schedule.json (implies --save-trace)",
     CLI_FLAG, O(minimize), 0, 0, NULL, NULL},
    {"minimize-runs", 0, "N", "--minimize: at most N candidate replays (default 300)", CLI_U64,
     O(minimize_runs), 1, 100000, NULL, NULL},
    {"minimize-match", 0, "M",
     "--minimize: a candidate fails the same way when it has the same\n"
     "verdict and, for bug, the same BUG line (line, the default), or\n"
     "the same verdict (verdict)",
     CLI_CUSTOM, 0, 0, 0, parse_match, NULL},
    {"schedule", 0, "FILE",
     "replay a schedule file (--minimize's DIR/schedule.json) under the\n"
     "script policy: its program (unless one is given), n, k, points\n"
     "and switches; says whether it fails as the file says",
     CLI_STRING, O(schedule), 0, 0, NULL, NULL},
    {"shard", 0, "I/N",
     "run only part I of N of the seeds (contiguous ranges), for\n'weft merge' "
     "(docs/scale-out.md)",
     CLI_CUSTOM, 0, 0, 0, parse_shard, NULL},
    {"out", 0, "DIR", "", CLI_STRING, O(out), 0, 0, NULL, "--output"},
    {"first-seed", 0, "S", "", CLI_CUSTOM, 0, 0, 0, parse_seed, "--seed"},
    {NULL, 'r', "R", "", CLI_U64, C(radius), 1, UINT64_C(1) << 62, NULL, "--radius"},
};

static int summary_only(const char *path)
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

/* --schedule FILE: the file decides the policy, its parameters and points. */
static int check_schedule(cli_seen seen)
{
    static const char *const decided[] = {"sched",      "depth",         "steps", "threads",
                                          "radius",     "points",        "runs",  "profile-runs",
                                          "starvation", "host-parallel", "shard", "resume"};
    for (size_t i = 0; i < sizeof decided / sizeof *decided; i++)
        if (cli_given(&cli_cmd_replay, seen, decided[i])) {
            cli_usage_error(&cli_cmd_replay, "--%s: the schedule file decides it (--schedule)",
                            decided[i]);
            return -1;
        }
    return 0;
}

/* Options that only make sense together, and what --seed means with or
 * without --runs. 0, or -1 after one line. */
static int check_combinations(replay_cli *o, cli_seen seen)
{
    const cli_command *cmd = &cli_cmd_replay;
    replay_config *c = &o->c;
    if (o->schedule && check_schedule(seen))
        return -1;
    c->radius_given = cli_given(cmd, seen, "radius");
    c->runs_given = cli_given(cmd, seen, "runs");
    c->jobs_given = cli_given(cmd, seen, "jobs");
    c->k_given = cli_given(cmd, seen, "steps");
    c->depth_given = cli_given(cmd, seen, "depth");
    /* No --sched: the portfolio, whose policies bring their own depths. */
    c->portfolio = !cli_given(cmd, seen, "sched") && !o->schedule;
    if (c->portfolio) {
        static const char *const own[] = {"depth", "radius", "host-parallel", "shard", "resume"};
        for (size_t i = 0; i < sizeof own / sizeof *own; i++)
            if (cli_given(cmd, seen, own[i])) {
                cli_usage_error(cmd,
                                "--%s needs --sched (without it, weft replay runs a portfolio "
                                "of random, PCT at depths 1-3 and POS)",
                                own[i]);
                return -1;
            }
    }
    c->n_given = cli_given(cmd, seen, "threads");
    int seed_given = cli_given(cmd, seen, "seed");
    /* --seed S alone: one run in detail; with --runs N: a campaign from S. */
    c->seed_given = (seed_given && !c->runs_given) || o->schedule;
    c->first_given = seed_given && c->runs_given;
    c->first_seed = seed_given ? o->seed : 1;
    c->runs = c->runs_given ? o->runs : 1;
    c->jobs = (unsigned)o->jobs;
    c->timeout = (unsigned)o->timeout;
    c->expect_exit = (int)o->expect_exit;
    if ((o->explain || o->minimize) && !c->seed_given) {
        cli_usage_error(cmd, "--%s describes one run: give --seed S without --runs",
                        o->explain ? "explain" : "minimize");
        return -1;
    }
    if ((cli_given(cmd, seen, "minimize-runs") || cli_given(cmd, seen, "minimize-match")) &&
        !o->minimize) {
        cli_usage_error(cmd, "--minimize-runs and --minimize-match: only with --minimize");
        return -1;
    }
    if (c->portfolio && c->seed_given) {
        cli_usage_error(cmd, "--seed alone replays one run of one policy: give --sched too");
        return -1;
    }
    if (c->seed_given && o->shard.index) {
        cli_usage_error(cmd, "--shard splits a campaign (--runs), not a single --seed run");
        return -1;
    }
    if (c->seed_given && c->resume) {
        cli_usage_error(cmd, "--resume continues a campaign (--runs), not a single --seed run");
        return -1;
    }
    if (c->radius_given && c->kind != PCT_KIND_RPRO) {
        cli_usage_error(cmd, "--radius: only for --sched rpro");
        return -1;
    }
    if (cli_given(cmd, seen, "bound") && c->kind != PCT_KIND_PB && c->kind != PCT_KIND_DB) {
        cli_usage_error(cmd, "--bound: only for --sched pb or db");
        return -1;
    }
    if (c->host_parallel && c->kind != PCT_KIND_PPCT) {
        cli_usage_error(cmd, "--host-parallel: only for --sched ppct");
        return -1;
    }
    if (c->k_given && c->radius_given && c->radius > c->k) {
        cli_usage_error(cmd, "--radius %" PRIu64 ": larger than the step budget k = %" PRIu64,
                        c->radius, c->k);
        return -1;
    }
    return 0;
}

/* --schedule FILE: read it and make c its replay; the file's time limit
 * and expected exit status unless given. 0, or -1 after one line. */
static int load_schedule(replay_cli *o, cli_seen seen, replay_schedule *s)
{
    char err[PATH_MAX + 256];
    if (replay_schedule_read(o->schedule, s, err, sizeof err)) {
        weft_error("--schedule %s", err);
        return -1;
    }
    if (!cli_given(&cli_cmd_replay, seen, "timeout"))
        o->c.timeout = s->timeout;
    if (!cli_given(&cli_cmd_replay, seen, "expect-exit"))
        o->c.expect_exit = s->expect_exit;
    return replay_schedule_apply(&o->c, s, o->schedule, o->out);
}

/* What a single run's options add once it has run: the schedule file's
 * verdict compared, the explanation, the minimal schedule. */
static int after_run(const replay_cli *o, const replay_schedule *s, int rc)
{
    const replay_config *c = &o->c;
    int ran = rc == WEFT_EXIT_OK || rc == 10;
    if (o->schedule && ran)
        replay_schedule_verify(c->out_dir, c->first_seed, s);
    if (o->explain && ran) {
        replay_explanation x;
        char err[PATH_MAX + 512];
        if (replay_explanation_load(c->out_dir, c->first_seed, &x, err, sizeof err)) {
            weft_error("--explain: %s", err);
            return WEFT_EXIT_FAIL;
        }
        replay_explanation_print(&x, stdout);
        replay_explanation_free(&x);
    }
    if (o->minimize && rc == 10)
        rc = replay_minimize(c, c->first_seed, o->minimize_runs ? o->minimize_runs : 300,
                             o->verdict_only);
    else if (o->minimize && ran)
        printf("weft: seed %" PRIu64 " passed: nothing to minimize\n", c->first_seed);
    return rc;
}

static int run_replay(int argc, char **argv)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    replay_cli o = {.c = {.kind = PCT_KIND_PCT,
                          .depth = 3,
                          .starvation = -1,
                          .points = POINTS_VISIBLE,
                          .profile_runs = 3,
                          .max_bound = 2},
                    .jobs = ncpu > 0 ? (uint64_t)ncpu : 1,
                    .timeout = REPLAY_DEFAULT_TIMEOUT};
    int first;
    cli_seen seen;
    int rc = cli_parse(&cli_cmd_replay, argc, argv, &o, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (o.summary)
        return summary_only(o.summary);
    if (first >= argc && !o.schedule) {
        cli_usage_error(&cli_cmd_replay, "no program given (weft replay [options] -- PROGRAM)");
        return WEFT_EXIT_USAGE;
    }
    if (check_combinations(&o, seen))
        return WEFT_EXIT_USAGE;
    replay_config *c = &o.c;
    if (c->seed_given)
        c->jobs = 1;
    if (o.explain || o.minimize)
        c->save_trace = 1;
    char def_out[64];
    if (!o.out) {
        if (o.schedule)
            snprintf(def_out, sizeof def_out, "weft-replay-schedule");
        else if (c->seed_given)
            snprintf(def_out, sizeof def_out, "weft-replay-seed-%" PRIu64, c->first_seed);
        else if (o.shard.index)
            snprintf(def_out, sizeof def_out, "weft-replay-shard-%" PRIu64 "-of-%" PRIu64,
                     o.shard.index, o.shard.count);
        else
            snprintf(def_out, sizeof def_out, "weft-replay");
        o.out = def_out;
    }
    if (first < argc) {
        c->run.binary = argv[first];
        c->run.argv = argv + first;
        c->run.argc = argc - first;
    }
    replay_schedule sched = {0};
    if (o.schedule && load_schedule(&o, seen, &sched))
        return WEFT_EXIT_FAIL;
    rc = replay_start(c, o.out, &o.shard);
    rc = after_run(&o, &sched, rc);
    replay_schedule_free(&sched);
    return rc;
}

const cli_command cli_cmd_replay = {
    .name = "replay",
    .summary = "replay a program under PCT, PPCT, RPro or random scheduling; verdicts and rates",
    .usage = "[options] -- PROGRAM [ARGS...]  |  --schedule FILE [options] [-- PROGRAM ...]",
    .about = "Replays PROGRAM (AArch64 Linux) on the ideal platform under a priority\n"
             "scheduler, one seed or a campaign of seeds, and reports each run's verdict:\n"
             "pass, bug (the program's BUG: line), exit, wrong_output, abort, crash,\n"
             "deadlock (with who waits on what), livelock or timeout, the hit rate with\n"
             "its 95% interval and the policy's guaranteed bound. One failing seed can be\n"
             "explained (--explain) and cut down to its fewest preemptions (--minimize),\n"
             "which gives a schedule file that --schedule replays exactly.\n",
    .footer = "Exit status: 0 if no run found a bug (a timeout is not one), 10 if some run\n"
              "did, 130 (SIGINT) or 143 (SIGTERM) if interrupted (--resume continues), 1 on\n"
              "errors, 2 on a bad command line.\n",
    .opts = replay_options,
    .nopts = sizeof replay_options / sizeof *replay_options,
    .stop_at_operand = 1,
    .run = run_replay,
};
