/* weft replay: run a program under PCT, PPCT, RPro or random scheduling on
 * the ideal platform, one seed or a campaign of many, and report verdicts,
 * hit rates and the policies' guaranteed bounds. Here only the option table
 * and its messages: what the options mean together, and the run, are
 * replay/request.c's and replay_start's. See docs/replay.md. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "weft/replay.h"

#define C(field) offsetof(replay_request, c.field)
#define O(field) offsetof(replay_request, field)

static int parse_sched(const cli_command *cmd, const char *arg, void *opts)
{
    replay_request *o = opts;
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
    replay_request *o = opts;
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
    int rc = replay_points_parse(arg, &((replay_request *)opts)->c);
    if (rc == -2)
        cli_usage_error(cmd, "--points %s: %s", arg, strerror(errno));
    else if (rc)
        cli_usage_error(cmd,
                        "--points: expected visible, races, shared, none, all, pcs:FILE, "
                        "visible:FILE or races:FILE, got '%s'",
                        arg);
    return rc ? -1 : 0;
}

static int parse_starvation(const cli_command *cmd, const char *arg, void *opts)
{
    if (replay_starvation_parse(arg, &((replay_request *)opts)->c.starvation)) {
        cli_usage_error(cmd, "--starvation: expected a probability in [0, 1), got '%s'", arg);
        return -1;
    }
    return 0;
}

static int parse_learn_size(const cli_command *cmd, const char *arg, void *opts)
{
    if (cli_parse_size(arg, &((replay_request *)opts)->c.learn_bytes)) {
        cli_usage_error(
            cmd, "--learn-size: expected a size like 32M or 1G (0: whole runs), got '%s'", arg);
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
    ((replay_request *)opts)->c.expect_output = arg;
    return 0;
}

static int parse_match(const cli_command *cmd, const char *arg, void *opts)
{
    if (strcmp(arg, "line") && strcmp(arg, "verdict")) {
        cli_usage_error(cmd, "--minimize-match: expected line or verdict, got '%s'", arg);
        return -1;
    }
    ((replay_request *)opts)->verdict_only = !strcmp(arg, "verdict");
    return 0;
}

static int parse_shard(const cli_command *cmd, const char *arg, void *opts)
{
    if (replay_shard_parse(arg, &((replay_request *)opts)->shard) == 0)
        return 0;
    cli_usage_error(cmd, "--shard: expected I/N with 1 <= I <= N <= %u (e.g. 2/4), got '%s'",
                    REPLAY_MAX_SHARDS, arg);
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
     "only those at the pcs weft races reports in the profiling trace,\n"
     "the library's too (a racing memcpy of the program's data);\n"
     "shared: every syscall and atomic, library code included, and\n"
     "accesses to shared addresses; none; all; pcs:FILE, visible:FILE,\n"
     "races:FILE (the point pcs of a campaign)",
     CLI_CUSTOM, 0, 0, 0, parse_points, NULL},
    {"profile-runs", 0, "N",
     "runs per profiling round (random policy, seeds 0..N-1): rounds\n"
     "learn the points until one adds none; the last round's largest\n"
     "step and thread counts are k and n (default 3)",
     CLI_U64, C(profile_runs), 1, 1000, NULL, NULL},
    {"learn-size", 0, "S",
     "a learning round's run stops after S of spool (default 32M, about\n"
     "ten million events); 0: whole runs (no counting round after)",
     CLI_CUSTOM, 0, 0, 0, parse_learn_size, NULL},
    {"starvation", 0, "P", "per-decision starvation override probability (default 0.001)",
     CLI_CUSTOM, 0, 0, 0, parse_starvation, NULL},
    {"host-parallel", 0, NULL,
     "ppct: run the high set in parallel on the host (faster, not\nreproducible)", CLI_FLAG,
     C(host_parallel), 0, 0, NULL, NULL},
    {"real-sleeps", 0, NULL,
     "the host's time: the program's sleeps take their time on the host,\n"
     "its timed waits time out by the host's clock, and its clocks are the\n"
     "host's (default: a sleep takes no host time, the schedule fires\n"
     "timeouts, and the clocks are virtual)",
     CLI_FLAG, C(real_sleeps), 0, 0, NULL, NULL},
    {"real-random", 0, NULL,
     "let getrandom and /dev/urandom give the host's bytes (default: one\n"
     "fixed stream, the same in every run)",
     CLI_FLAG, C(real_random), 0, 0, NULL, NULL},
    {"seed", 's', "S",
     "the first seed (default 1); alone, one run with seed S described in\ndetail", CLI_CUSTOM, 0,
     0, 0, parse_seed, NULL},
    {"runs", 'n', "N", "a campaign of N runs, seeds S..S+N-1 (default 1; a portfolio's 100)",
     CLI_U64, O(runs), 1, REPLAY_RUNS_MAX, NULL, NULL},
    {"for", 0, "SEC",
     "a time budget: start no run once SEC s have passed since weft\n"
     "started (profiling included; the runs under way finish); without\n"
     "--runs, as many runs as fit",
     CLI_U64, C(budget_s), 1, 86400 * 365, NULL, NULL},
    {"jobs", 'j', "J", "runs at once (default: online CPUs)", CLI_U64, O(jobs), 1, 1024, NULL,
     NULL},
    {"timeout", 't', "SEC", "kill a run after SEC s: verdict timeout (default 60)", CLI_U64,
     O(timeout), 1, 86400 * 7, NULL, NULL},
    {"max-threads", 0, "N",
     "threads a run may start over its life, each a processing element of\n"
     "its own (default 512); a run that starts more stops the campaign",
     CLI_U64, O(max_threads), 1, 65536, NULL, NULL},
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

static int given(const void *seen, const char *name)
{
    return cli_given(&cli_cmd_replay, *(const cli_seen *)seen, name);
}

static int run_replay(int argc, char **argv)
{
    replay_request o;
    replay_request_init(&o);
    int first;
    cli_seen seen;
    int rc = cli_parse(&cli_cmd_replay, argc, argv, &o, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (o.summary)
        return replay_summary_show(o.summary);
    if (first >= argc && !o.schedule) {
        cli_usage_error(&cli_cmd_replay, "no program given (weft replay [options] -- PROGRAM)");
        return WEFT_EXIT_USAGE;
    }
    o.given = given;
    o.given_ctx = &seen;
    char err[256];
    if (replay_request_check(&o, err, sizeof err)) {
        cli_usage_error(&cli_cmd_replay, "%s", err);
        return WEFT_EXIT_USAGE;
    }
    return replay_request_run(&o, argv + first, first < argc ? argc - first : 0);
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
