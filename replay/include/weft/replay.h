/* weft replay: runs of a program under a priority scheduler, their
 * verdicts, campaigns over many seeds and their summaries.
 *
 *   campaign_file.c  campaign.json, shards, starting a campaign
 *   profile.c        the profiling runs: k, n and the shared-access pcs
 *   run.c            one seed: run, verdict, JSON line
 *   campaign.c       many seeds in parallel, runs.jsonl, resume, progress
 *   summary.c        the summary of a runs.jsonl
 *   merge.c          weft merge: shards into one campaign
 *   inject.c         injected runs and their traces (weft inject)
 *   inject_plan.c    weft inject: a plan's runs, refinement, the report
 *
 * docs/replay.md describes the command, the verdicts and the files. */
#ifndef WEFT_REPLAY_H
#define WEFT_REPLAY_H

#include <limits.h>
#include <stdio.h>
#include <stdint.h>

#include "weft/guest.h"
#include "weft/pct.h"
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

typedef struct replay_config {
    pct_kind kind;
    uint64_t depth, radius;
    uint64_t k, n;        /* 0 until given or profiled */
    int k_given, n_given; /* from --steps / --threads */
    int radius_given, runs_given, first_given, jobs_given;
    uint64_t profile_runs; /* profiling runs that measure k and n (their maximum) */
    int portfolio;         /* no --sched: several policies share the runs (portfolio.c) */
    int inner;             /* a portfolio member: no per-campaign lines or summary */
    int depth_given;
    double starvation; /* < 0: the plugin's default */
    replay_points points;
    char pcs_path[PATH_MAX + 32]; /* the shared-access pcs: SHARED, VISIBLE (profiled), PCS */
    uint64_t npcs;
    int host_parallel;
    uint64_t first_seed, runs;
    int seed_given; /* --seed S: one run, printed in detail */
    unsigned jobs, timeout;
    const char *expect_output; /* NULL: not checked */
    int expect_exit;
    char out_dir[PATH_MAX];
    int resume, save_trace, stop_on_hit, quiet;
    guest_run run; /* binary, argv, sysroot; plugin_args built per seed */
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

/* The plugin arguments of a replay with this config and seed (no out=). */
int replay_plugin_args(const replay_config *c, uint64_t seed, char *buf, size_t len);

/* Shell command reproducing one seed of this config. */
void replay_repro_command(const replay_config *c, uint64_t seed, char *buf, size_t len);

/* ---- profiling (profile.c) ----------------------------------------- */

/* With --points shared: trace the program once (exact mode, no policy) and
 * write the pcs of accesses to shared addresses to c->pcs_path. Then, if k
 * or n is missing, run once with sched=random, seed 0 and the same points,
 * and take k = its steps, n = its threads. Prints what it learned. */
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

/* ---- summaries (summary.c) ----------------------------------------- */

typedef struct replay_summary {
    char policy[16], points[16];
    uint64_t depth, radius, n, k;
    /* hits: runs that found a bug (every verdict but pass and timeout); a
     * timeout may be a livelock or a too-short --timeout, so it is counted
     * beside the hits, not in them. */
    uint64_t runs, hits, timeouts, verdicts[REPLAY_VERDICT_COUNT];
    uint64_t runs_without_override;
    /* runs that took more steps than k: the bound does not speak of them */
    uint64_t runs_beyond_k;
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

/* ---- merging campaigns (merge.c) -------------------------------------------- */

/* Combine the runs.jsonl of campaign folders `dirs` (shards, or campaigns of
 * one configuration) into folder `out` (docs/scale-out.md). Returns weft's
 * exit status; prints what it did unless quiet. */
int replay_merge(const char *const *dirs, size_t n, const char *out, int allow_gaps, int quiet);

#endif
