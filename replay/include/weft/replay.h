/* weft replay: runs of a program under a priority scheduler, their
 * verdicts, campaigns over many seeds and their summaries.
 *
 *   campaign_file.c  campaign.json, shards, starting a campaign
 *   profile.c        the profiling runs: k, n and the points they learn
 *   learn_points.c   the pcs of shared (or racy) accesses in their traces
 *   run.c            one seed: run, verdict, JSON line
 *   campaign.c       many seeds in parallel, runs.jsonl, resume, progress
 *   server.c         fork servers: the program run once to its first thread,
 *                    a forked child per seed from there
 *   summary.c        the summary of a runs.jsonl
 *   merge.c          weft merge: shards into one campaign
 *   inject.c         injected runs and their traces (weft inject)
 *   inject_plan.c    weft inject: a plan's runs, refinement, the report
 *   schedule.c       a run's switch log; schedule files (weft replay --schedule)
 *   explain.c        why a failing run failed: its switches, races, verdict
 *   minimize.c       the fewest preemptions that still fail (ddmin)
 *   runs_file.c      a runs.jsonl: its lines in seed order, the seeds done
 *   request.c        a weft replay command line: its checks and its run
 *
 * docs/replay.md describes the command, the verdicts and the files. */
#ifndef WEFT_REPLAY_H
#define WEFT_REPLAY_H

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>

#include "weft/guest.h"
#include "weft/pct.h"
#include "weft/races.h"
#include "weft/trace.h"

typedef enum replay_verdict {
    REPLAY_PASS = 0,
    REPLAY_BUG,          /* non-zero exit with the oracle's "BUG:" line */
    REPLAY_EXIT,         /* unexpected exit status, no BUG line */
    REPLAY_WRONG_OUTPUT, /* stdout differs from --expect-output */
    REPLAY_ABORT,        /* SIGABRT: failed assertion, abort() */
    REPLAY_CRASH,        /* killed by another signal */
    REPLAY_DEADLOCK,     /* no enabled thread, live blocked threads */
    REPLAY_TIMEOUT,      /* killed at the time limit: livelock or too slow */
    REPLAY_LIVELOCK,     /* every thread that could run spun without progress */
    REPLAY_VERDICT_COUNT
} replay_verdict;

const char *replay_verdict_name(replay_verdict v);
/* A bug found: any verdict but pass and timeout. */
int replay_verdict_is_hit(replay_verdict v);
int replay_verdict_parse(const char *name, replay_verdict *out);

/* Which plain accesses are schedule points (besides what each mode adds):
 * visible (default): the program's own operations only (docs/replay.md);
 * shared: every syscall and atomic, and the accesses to shared addresses,
 * library code included (weft before visible points); none; all; pcs:FILE. */
typedef enum replay_points {
    POINTS_NONE,
    POINTS_SHARED,
    POINTS_ALL,
    POINTS_PCS,
    POINTS_VISIBLE
} replay_points;
const char *replay_points_name(replay_points p);

typedef struct replay_pool replay_pool;     /* a campaign's fork servers (server.c) */
typedef struct replay_server replay_server; /* one job slot's fork server */

/* Spool a learning run records before it stops (--learn-size): about ten
 * million events of a real program, at about 3 bytes an event. */
#define REPLAY_LEARN_BYTES (32ull << 20)

/* --runs at most, and a --for campaign's without --runs. */
#define REPLAY_RUNS_MAX (UINT64_C(1) << 40)
#define REPLAY_PORTFOLIO_RUNS 100 /* a portfolio's runs without --runs or --for */

typedef struct replay_config {
    pct_kind kind;
    uint64_t depth, radius;
    uint64_t k, n;        /* 0 until given or profiled */
    int k_given, n_given; /* from --steps / --threads */
    int radius_given, runs_given, first_given, jobs_given;
    uint64_t profile_runs; /* profiling runs that measure k and n (their maximum) */
    uint64_t learn_bytes;  /* a learning run stops at this much spool (0: whole runs) */
    uint64_t max_bound;    /* pb, db: deviations at most (--bound); seed S runs schedule S-1 */
    int portfolio;         /* no --sched: several policies share the runs (portfolio.c) */
    int inner;             /* a portfolio member: no per-campaign lines or summary */
    int depth_given;
    double starvation; /* < 0: the plugin's default */
    replay_points points;
    /* --points races: the visible points, with the plain accesses at the pcs
     * the race detector reports on the profiling trace instead of every
     * shared access (race_points.c), the C library's racing accesses
     * included (a copy the program hands to memcpy). The campaign is a
     * visible one, its file named races:FILE. */
    int race_points;
    char pcs_path[PATH_MAX + 32]; /* the shared-access pcs: SHARED, VISIBLE (profiled), PCS */
    char k_source[128];           /* where k came from, for campaign.json and the plan line */
    uint64_t npcs;
    int host_parallel;
    int real_sleeps;      /* --real-sleeps: the host sleeps as the program asks */
    int real_random;      /* --real-random: getrandom and /dev/urandom give the host's bytes */
    unsigned max_threads; /* --max-threads: a run's threads, over its life (0: the tracer's 512) */
    uint64_t first_seed, runs;
    int seed_given; /* --seed S: one run, printed in detail */
    unsigned jobs, timeout;
    const char *expect_output; /* NULL: not checked */
    int expect_exit;
    char out_dir[PATH_MAX];
    int resume, save_trace, stop_on_hit, quiet;
    /* --for SEC: no run starts after `deadline` (weft_now_s(), SEC after
     * weft started; 0: none), the runs under way finish. */
    uint64_t budget_s;
    double deadline;
    char schedule_path[PATH_MAX + 64]; /* --schedule: the script policy's switches */
    guest_run run;                     /* binary, argv, sysroot; plugin_args built per seed */
    int no_fork_server;                /* --no-fork-server: a qemu of its own for every run */
    replay_pool *pool;     /* fork servers shared by several campaigns (the portfolio's), or NULL */
    replay_server *server; /* a worker's: its job slot's server, NULL for one qemu per run */
} replay_config;

/* A line of a runs.jsonl, to put lines in seed order (then in the order
 * read: `order`); `tag` is the caller's (weft merge: which folder). */
typedef struct replay_line {
    uint64_t seed;
    size_t order, tag;
    char *text;
} replay_line;
int replay_line_cmp(const void *a, const void *b); /* qsort comparator */
/* Append the whole lines of a runs.jsonl (a last line cut short is not a
 * finished run; NUL bytes become spaces); a line without a seed gets
 * UINT64_MAX. -1: out of memory. */
int replay_lines_read(FILE *f, size_t tag, replay_line **lines, size_t *n, size_t *cap);

/* ---- one run (run.c) ------------------------------------------------ */

/* Run seed `seed` with its files under `tmp_dir`, classify it, and return
 * its JSON line (malloc'd, ending in '\n') in *line; *verdict is set.
 * Traces of failing runs are kept in out_dir/traces with --save-trace.
 * Returns 0; 1 if the run was interrupted (nothing to record); -1 after
 * printing an error (the tracer did not run). */
int replay_run_seed(const replay_config *c, uint64_t seed, const char *tmp_dir, char **line,
                    replay_verdict *verdict);

/* pb, db: the (bound, index) of the schedule a seed runs: seeds 1, 2, ...
 * enumerate bound 0, then 1, ... up to max_bound (iterative deepening).
 * -1 past the last schedule: the search is exhausted. */
int replay_bounded_schedule(const replay_config *c, uint64_t seed, uint32_t *bound,
                            uint64_t *index);

/* The policy's plugin arguments (sched=, seed=, depth=, ...) for this seed. */
int replay_policy_args(const replay_config *c, uint64_t seed, char *buf, size_t len);
/* The plugin arguments of a replay with this config and seed (no out=). */
int replay_plugin_args(const replay_config *c, uint64_t seed, char *buf, size_t len);
/* Appends what a campaign's run (a qemu of its own or a server's child) adds
 * to replay_plugin_args: its trace is read or removed at once (sync=0), has
 * no size limit but REPLAY_RUN_MAX_EVENTS, and without --save-trace keeps no
 * event unless the run deadlocks or livelocks (lazy=1: weft reads the
 * outcome from the footer, the events only to say who waits on what), and
 * watches libraries' plain loads for spinning only in wait loops and their
 * plain stores by block (libaccess=loops; lazy runs do not see the others
 * nor the stores at all). Profiling's learning runs leave it out: their
 * races need every access. */
int replay_run_args(const replay_config *c, char *buf, size_t len);

/* Shell command reproducing one seed of this config. */
void replay_repro_command(const replay_config *c, uint64_t seed, char *buf, size_t len);

/* Profiling (docs/replay.md): with --points visible (no file), shared or
 * races, rounds of c->profile_runs runs under sched=random (seeds 0..R-1)
 * learn the points' pcs into c->pcs_path until a round adds none; k and n
 * (unless given) are the largest steps and threads of the last round, whose
 * runs used the final points. Prints what it learned. 0; -1 after one
 * line; 128 + the signal after SIGINT or SIGTERM (one line). */
int replay_profile(replay_config *c);

/* ---- a campaign's folder (campaign_file.c) ---------------------------------- */

#define REPLAY_DEFAULT_TIMEOUT 60
#define REPLAY_DEFAULT_RADIUS 10

/* --shard I/N: this invocation runs part I (1-based) of a campaign whose
 * whole seed range is first_seed..first_seed+runs-1 (docs/scale-out.md).
 * index 0: not a shard. */
typedef struct replay_shard {
    uint64_t index, count, first_seed, runs;
} replay_shard;

/* Cut c's seed range down to shard sh (and remember the whole range in sh).
 * 0, or -1 after one line (the shard would get no seed). */
int replay_shard_apply(replay_config *c, replay_shard *sh);
/* Write DIR/campaign.json atomically. 0 or -1 (printed). */
int replay_campaign_write(const replay_config *c, const replay_shard *sh);
/* --resume: take k, n, points and the seed range from DIR/campaign.json
 * unless given, and refuse a different configuration. 0 or -1 (printed). */
int replay_campaign_load(replay_config *c, replay_shard *sh);
/* Everything after the command line: check the program, make the output
 * folder `out`, resume or cut a shard, profile, check the policy's
 * parameters, say what will run, write campaign.json and run the campaign.
 * Returns weft's exit status. */
int replay_start(replay_config *c, const char *out, replay_shard *sh);

/* ---- a weft replay command line (request.c) --------------------------------- */

#define REPLAY_MAX_SHARDS (1u << 20)

/* What `weft replay` was asked: the config and the options that are not
 * part of it (cli/cmd_replay.c's option table parses into this struct).
 * given(given_ctx, NAME): 1 if the option --NAME was on the command line. */
typedef struct replay_request {
    replay_config c;
    const char *out, *summary, *schedule;
    uint64_t seed, runs, jobs, timeout, expect_exit, minimize_runs, max_threads;
    int explain, minimize, verdict_only;
    replay_shard shard;
    int (*given)(const void *given_ctx, const char *name);
    const void *given_ctx;
} replay_request;

/* The defaults of every option (jobs: the online CPUs). */
void replay_request_init(replay_request *r);
/* --points P into c: 0; -1 not a kind of points; -2 its FILE has no real
 * path (errno says why). */
int replay_points_parse(const char *arg, replay_config *c);
/* --starvation P, a probability in [0, 1): 0, or -1. */
int replay_starvation_parse(const char *arg, double *p);
/* --shard I/N with 1 <= I <= N <= REPLAY_MAX_SHARDS: 0, or -1. */
int replay_shard_parse(const char *arg, replay_shard *sh);
/* --summary FILE: print the summary of a runs.jsonl. weft's exit status. */
int replay_summary_show(const char *path);
/* Options that only make sense together, and what --seed means with or
 * without --runs (fills c's *_given, seeds, jobs, timeout). 0, or -1 with
 * the one line of the usage error in err. */
int replay_request_check(replay_request *r, char *err, size_t errlen);
/* Run a checked request: program[0..nprogram-1] the program and its
 * arguments (nprogram 0: --schedule's), then what --schedule, --explain and
 * --minimize add. Returns weft's exit status. */
int replay_request_run(replay_request *r, char **program, int nprogram);

/* ---- the portfolio (portfolio.c) ------------------------------------------ */

/* Split c->runs over random, PCT at depths 1-3 and POS, a chunk of seeds
 * per policy in turn, each policy a campaign in c->out_dir/POLICY; print a
 * table per policy. k, n and the points must be known (profiled). Returns
 * weft's exit status (10 if some policy found a bug). */
int replay_portfolio(replay_config *c);

/* ---- campaigns (campaign.c) ---------------------------------------- */

/* Run seeds first_seed..first_seed+runs-1 (skipping those already in
 * runs.jsonl with --resume), `jobs` at a time. Returns weft's exit status. */
int replay_campaign(replay_config *c);

/* Events a replayed run records at most; the run goes on to its end, its
 * trace flagged truncated. A size limit that stopped the run instead would
 * turn a long program's every run into a failure (exit 124); 10^8 events
 * are a few hundred MB of spool. */
#define REPLAY_RUN_MAX_EVENTS 100000000ull

/* ---- fork servers (server.c) ----------------------------------------- */

/* Fork servers for campaigns of c's program (docs/replay.md, "The fork
 * server"): one per job slot, each started at its first use, each a qemu
 * that ran the program to its first thread creation and forks a child per
 * seed from there. A pool is "off" when the program or the options rule a
 * server out (--no-fork-server, a single --seed run, --host-parallel, stdin
 * a pipe, a program a server declines): it then says why in one line
 * (unless quiet) and every run has its own qemu. */
replay_pool *replay_pool_create(const replay_config *c);
/* Why stdin is shared by every run (a pipe, a socket, ...), or NULL for a
 * file or a device: weft says so before profiling, whose runs share it too. */
const char *replay_stdin_shared(void);
/* Stops every server (SIGKILL to its process group) and frees the pool. */
void replay_pool_destroy(replay_pool *p);
/* Job slot `slot`'s server for a run of c, started if need be (which waits
 * until it is ready, or until *stop); NULL: run this seed with a qemu of
 * its own. */
replay_server *replay_pool_server(replay_pool *p, const replay_config *c, unsigned slot,
                                  volatile sig_atomic_t *stop);
/* The slot's server failed, or its worker ended without reading every
 * answer: stop it. It is started again at its next use, up to a few times. */
void replay_pool_lost(replay_pool *p, unsigned slot);
/* waitpid reaped `pid`: if it was a server, it is gone. */
void replay_pool_reaped(replay_pool *p, pid_t pid);

/* In a worker: run one seed as a child of server s, its files at these
 * paths, with c's time limit, then settle its trace as guest_trace_run
 * does. 0 (r and flags filled; r->end GUEST_INTERRUPTED after SIGINT or
 * SIGTERM), -1 no readable trace, -2 after one line (its files could not
 * be made), 1 the server failed before the run started: run it with a qemu
 * of its own. replay_server_lost then says whether to restart the server. */
typedef struct replay_run_files {
    const char *trace, *record, *switches, *out,
        *err; /* the record, the switch log, stdout, stderr */
} replay_run_files;
int replay_server_run(replay_server *s, const replay_config *c, uint64_t seed,
                      const replay_run_files *files, guest_result *r, uint32_t *flags);
int replay_server_lost(const replay_server *s);
/* In a worker, before replay_server_run: once the server has answered the
 * run's status, store 1 in *flag and write a byte to wake_fd, so that the
 * campaign sends the next seed to the server while this worker still
 * judges the run. s may be NULL (nothing to say). */
void replay_server_when_free(replay_server *s, volatile int *flag, int wake_fd);

/* ---- summaries (summary.c) ----------------------------------------- */

typedef struct replay_summary {
    char policy[16], points[16];
    uint64_t depth, radius, n, k;
    /* hits: runs that found a bug (every verdict but pass and timeout); a
     * timeout may be a livelock or a too-short --timeout, so it is counted
     * beside the hits, not in them. */
    uint64_t runs, hits, timeouts, verdicts[REPLAY_VERDICT_COUNT];
    uint64_t runs_without_override;
    /* runs that took more steps than k, both counted as profiling counts k
     * (without the steps that resumed a yielding or spinning thread): the
     * bound does not speak of them; kept_steps_max is their most */
    uint64_t runs_beyond_k, kept_steps_max;
    /* pb, db: runs whose schedule repeated one with fewer deviations */
    uint64_t duplicates;
    /* runs where a gate gave up waiting (a host stall, a thread stuck in
     * qemu): they left the policy's order and may not repeat by seed */
    uint64_t runs_departed;
    double hit_rate, ci_lo, ci_hi, bound;
    uint64_t seed_min, seed_max, first_hit_seed; /* first_hit_seed: UINT64_MAX if none */
    uint64_t steps_max, threads_max;
    double steps_mean, makespan_mean_ns, wall_mean_s, wall_total_s;
    int complete_prefix; /* every seed from seed_min to first_hit_seed was run */
} replay_summary;

/* Read a runs.jsonl (lines with the same configuration; a repeated seed
 * counts once) into a summary. Returns 0, or -1 with a one-line error. */
int replay_summary_read(const char *jsonl_path, replay_summary *s, char *err, size_t errlen);
/* Write it as JSON atomically (summary.json): nothing in it depends on
 * wall time, so equal runs give equal bytes (docs/scale-out.md). */
int replay_summary_write(const replay_summary *s, const char *path, char *err, size_t errlen);
/* The wall times (timing.json): per run, all runs, the campaign (< 0: null). */
int replay_timing_write(const replay_summary *s, const char *path, double campaign_wall_s,
                        char *err, size_t errlen);
void replay_summary_print(const replay_summary *s, FILE *out);

/* ---- injected runs (inject.c: runs and their traces; inject_plan.c: weft inject) ---- */

typedef enum inj_end {
    INJ_EXITED,
    INJ_SIGNALED,
    INJ_TIMED_OUT,
    INJ_DEADLOCK,
    INJ_NO_TRACE
} inj_end;

typedef struct inj_verdict {
    inj_end end;
    int status;    /* exit status or signal */
    char bug[256]; /* first "BUG:" line of the guest's stdout, "" if none */
    double wall_s;
} inj_verdict;

/* 1 when the guest exited 0 and printed no BUG line. */
int inj_verdict_passes(const inj_verdict *v);
void inj_verdict_describe(const inj_verdict *v, char *buf, size_t len);

/* Run the guest in exact mode under the tracer, writing trace_path; the
 * guest's stdout goes to stdout_path. inject_path / report_path may be NULL
 * (uninjected). Returns 0 when a readable trace exists (the verdict is
 * filled), -1 after printing one line. */
int inj_run_guest(const guest_run *base, uint32_t cpi, uint64_t ps_per_cycle,
                  const char *trace_path, const char *stdout_path, const char *inject_path,
                  const char *report_path, inj_verdict *v);

/* A traced run indexed by thread and *uninjected* sequence number: DELAY
 * events are skipped in the numbering, so (thread, seq) of the plan finds the
 * same event in the injected trace. */
typedef struct inj_index {
    uint32_t nthreads;
    size_t *count;       /* per thread: events without delays */
    weft_event **events; /* per thread, events without delays, seq = uninjected number */
    uint64_t *delays;    /* per thread: DELAY events seen */
    size_t aligned;      /* pairs of plain writes of different threads at one address and time */
} inj_index;

int inj_index_load(const char *trace_path, inj_index *ix, char *err, size_t errlen);
const weft_event *inj_index_get(const inj_index *ix, uint32_t thread, uint64_t seq);
void inj_index_free(inj_index *ix);

/* weft inject: run the program as is and with the plan's delays, refining
 * missed alignments up to `refine` times, and report each. */
typedef struct replay_inject_opts {
    const char *plan_path, *keep, *report, *sysroot;
    uint64_t refine, timeout;
    int quiet;
    char **argv; /* the program and its arguments; NULL: the plan's */
    int argc;
} replay_inject_opts;

/* Returns WEFT_EXIT_OK if every planned alignment was achieved in the last
 * injected run, WEFT_EXIT_FAIL if not or on error (after one line). */
int replay_inject(const replay_inject_opts *o);

/* ---- switch logs and schedule files (schedule.c; docs/replay.md) ------------- */

/* One entry of a run's switch log (the plugin's record, traces/seed-S.sched.json
 * with --save-trace): a switch, or a yielded thread chosen again (stay). */
#define REPLAY_SWITCH_ENABLED 16
typedef struct replay_switch {
    uint64_t step;
    int64_t from, to;
    char why[16]; /* pct_why_name */
    uint32_t change_point;
    int preempt, stay;
    int timeout;               /* to was asleep in a timed wait: the decision fired it */
    int timed_wait;            /* from yielded by falling asleep in a timed wait */
    uint64_t from_pc, to_pc;   /* the last gate each thread reached, 0 if unknown */
    uint64_t from_seq, to_seq; /* events each had recorded: to's next event is to_seq */
    int64_t enabled[REPLAY_SWITCH_ENABLED];
    size_t nenabled; /* threads enabled at the decision (the first 16 listed) */
    uint64_t time;   /* replay_explanation_load: virtual ns of to's next event */
    int have_time;
} replay_switch;

typedef struct replay_switch_log {
    replay_switch *v; /* oldest first */
    size_t n;
    uint64_t switches, stays, preemptions, dropped; /* dropped: oldest entries not kept */
    char policy[16];
    uint64_t seed, depth, k, n_threads, steps, overrides;
    uint64_t change_points[16];
    size_t nchange_points;
    /* Read from the file the plugin appends as the run goes: the run died
     * before its record (steps: the last switch's and overrides unknown,
     * unless counted: the counts its policy kept were kept too). */
    int partial, counted;
} replay_switch_log;

/* Read the switch log of a plugin record. 0, or -1 with one line in err. */
int replay_switch_log_load(const char *record_path, replay_switch_log *log, char *err,
                           size_t errlen);
/* The log seed S of a replay folder kept (traces/seed-S.sched.json, or
 * seed-S.switches.jsonl for a run that died of a signal). 0, or -1 with one
 * line (not kept, unreadable). */
int replay_switch_log_load_kept(const char *dir, uint64_t seed, replay_switch_log *log, char *err,
                                size_t errlen);
void replay_switch_log_free(replay_switch_log *log);

struct json_t;
/* Copy a record's switch counts into a runs.jsonl line (run.c). */
void replay_line_add_switches(struct json_t *line, struct json_t *record);

/* A schedule file: a program and the switches that make it fail, replayed
 * by the script policy (weft replay --schedule FILE). */
typedef struct replay_schedule {
    char *program;
    char **argv;
    int argc;
    char *sysroot; /* NULL: none */
    uint64_t n, k;
    replay_points points; /* NONE, ALL, VISIBLE or PCS (a campaign's SHARED is PCS) */
    int races;            /* VISIBLE from --points races: library pcs of the file too */
    uint64_t *pcs;        /* the point pcs of VISIBLE and PCS */
    size_t npcs;
    int expect_exit;
    unsigned timeout;
    char verdict[32], detail[1024]; /* how it fails */
    char from_policy[16];           /* where it came from (informative) */
    uint64_t from_seed, from_depth, from_switches, from_preemptions;
    pct_script_switch *sw;
    size_t nsw;
    /* The guest's environment where the schedule was found ("NAME=value",
     * guest_environment): the program's input too. NULL: not recorded. */
    char **env;
    size_t nenv;
} replay_schedule;

int replay_schedule_write(const replay_schedule *s, const char *path, char *err, size_t errlen);
int replay_schedule_read(const char *path, replay_schedule *s, char *err, size_t errlen);
void replay_schedule_free(replay_schedule *s);
/* Turn c into a replay of the schedule at path: the script policy, its n, k
 * and points (written to out_dir/points.pcs), the program unless c has one.
 * 0, or -1 after one line. */
int replay_schedule_apply(replay_config *c, const replay_schedule *s, const char *path,
                          const char *out_dir);
/* After a replay of schedule s as seed in dir: print whether the run failed
 * as the file says (same verdict; for bug the same BUG line) and whether
 * every switch applied. 1 same, 0 not, -1 no run or nothing to compare. */
int replay_schedule_verify(const char *dir, uint64_t seed, const replay_schedule *s);
/* The runs.jsonl line of seed in dir: 0 with its verdict and detail, or -1. */
int replay_seed_outcome(const char *dir, uint64_t seed, char *verdict, size_t vlen, char *detail,
                        size_t dlen);

/* ---- why a run failed (explain.c) ------------------------------------------- */

#define REPLAY_EXPLAIN_LAST 8 /* last accesses kept per racing variable */

typedef struct replay_race_var {
    weft_race race;
    char variable[160];                    /* symbol+offset, or hex */
    weft_event last[REPLAY_EXPLAIN_LAST];  /* the last accesses to race.addr, oldest first */
    uint64_t repeats[REPLAY_EXPLAIN_LAST]; /* the same thread's same access just before, folded */
    size_t nlast;
} replay_race_var;

#define REPLAY_END_PCS 256
typedef struct replay_explanation {
    uint64_t seed;
    char verdict[32], detail[1024];
    char trace_path[PATH_MAX + 64];
    char binary[PATH_MAX]; /* the traced program, "" if not found */
    weft_symbols *syms;    /* its symbols, placed where the run had it; NULL without */
    replay_switch_log log;
    /* The access that faulted and killed the run (the trace's fault event),
     * if it did. */
    struct {
        int have, write, near; /* near: an unobserved access of its block may be it */
        uint32_t thread;
        uint64_t addr, pc, time;
    } fault;
    /* The thread whose end killed the run: the one that faulted, else the
     * one that signalled itself last (abort's tgkill: an assertion, glibc's
     * heap checks); the pcs of its last events, newest first. */
    struct {
        int have, raised; /* raised: by its own signal, not a fault */
        uint32_t thread;
        uint64_t time;
        uint64_t pcs[REPLAY_END_PCS];
        size_t npcs;
        uint64_t prog_pc, user_pc; /* its last pc in the program with a line, and
                                    * with a line of the user's, however long ago */
    } end;
    replay_race_var *races; /* the first races found */
    size_t nraces, nraces_total;
    int decoded; /* the race detector read the program's instructions */
} replay_explanation;

/* The kept files of seed in a replay folder (traces/seed-S.wtr and
 * .sched.json, runs.jsonl): its switches, the races of its trace and the
 * last accesses to their variables. 0, or -1 with one line in err. */
/* What killed the run and where (the fault, or the thread that raised the
 * signal, and its last code in the program), as --explain prints it;
 * nothing if the run was not killed. */
void replay_explanation_print_end(const replay_explanation *x, FILE *out);
int replay_explanation_load(const char *dir, uint64_t seed, replay_explanation *x, char *err,
                            size_t errlen);
void replay_explanation_free(replay_explanation *x);
/* One line for a switch's reason, e.g. "change point k_1: T1 dropped to priority 1". */
void replay_switch_reason(const replay_switch *w, const replay_switch_log *log, char *buf,
                          size_t len);
/* The explanation as text (docs/replay.md, "Explaining a failing run");
 * header: its first line, the seed and verdict (weft replay --explain has
 * just printed them). */
void replay_explanation_print(const replay_explanation *x, FILE *out, int header);

/* ---- a minimal schedule (minimize.c) ---------------------------------------- */

/* Zeller's ddmin over n items: test(ctx, idx, m) says whether the subset idx
 * (ascending, m items) still fails (1), passes (0) or could not be run (-1,
 * which stops the search). Returns a 1-minimal failing subset (malloc'd in
 * *out, possibly empty) with respect to the tests it ran; at most max_tests
 * tests (0: no limit), each subset tested once. 0, 1 when the budget ran out
 * (the best subset so far is returned), -1 on error or a failed test. */
typedef int (*replay_ddmin_test)(void *ctx, const size_t *idx, size_t m);
int replay_ddmin(size_t n, replay_ddmin_test test, void *ctx, size_t max_tests, size_t **out,
                 size_t *nout, size_t *tests_run);

/* weft replay --seed S --minimize: the fewest preemptions of seed S's
 * schedule (its kept switch log) that still fail the same way (the same
 * verdict and, for bug, the same BUG line; verdict_only: the same verdict),
 * each candidate replayed under the script policy, at most max_runs of
 * them, saved as DIR/schedule.json and checked by a replay of that file.
 * Returns weft's exit status (10: the saved schedule fails). */
int replay_minimize(const replay_config *c, uint64_t seed, size_t max_runs, int verdict_only);

/* ---- merging campaigns (merge.c) -------------------------------------------- */

/* Combine the runs.jsonl of campaign folders `dirs` (shards, or campaigns of
 * one configuration) into folder `out` (docs/scale-out.md). Returns weft's
 * exit status; prints what it did unless quiet. */
int replay_merge(const char *const *dirs, size_t n, const char *out, int allow_gaps, int quiet);

#endif
