/* weft replay: runs of a program under a priority scheduler, their
 * verdicts, campaigns over many seeds and their summaries.
 *
 *   cmd_replay.c       options, profiling decisions, what is printed
 *   replay_profile.c   the profiling runs: k, n and the shared-access pcs
 *   replay_run.c       one seed: run, verdict, JSON line
 *   replay_campaign.c  many seeds in parallel, runs.jsonl, resume, progress
 *   replay_summary.c   the summary of a runs.jsonl
 *
 * docs/replay.md describes the command, the verdicts and the files. */
#ifndef WEFT_CLI_REPLAY_H
#define WEFT_CLI_REPLAY_H

#include <limits.h>
#include <stdio.h>
#include <stdint.h>

#include "cli.h"
#include "weft/pct.h"

typedef enum replay_verdict {
    REPLAY_PASS = 0,
    REPLAY_BUG,          /* non-zero exit with the oracle's "BUG:" line */
    REPLAY_EXIT,         /* unexpected exit status, no BUG line */
    REPLAY_WRONG_OUTPUT, /* stdout differs from --expect-output */
    REPLAY_ABORT,        /* SIGABRT: failed assertion, abort() */
    REPLAY_CRASH,        /* killed by another signal */
    REPLAY_DEADLOCK,     /* no enabled thread, live blocked threads */
    REPLAY_TIMEOUT,      /* killed at the time limit: livelock or too slow */
    REPLAY_VERDICT_COUNT
} replay_verdict;

const char *replay_verdict_name(replay_verdict v);
int replay_verdict_parse(const char *name, replay_verdict *out);

typedef enum replay_points { POINTS_NONE, POINTS_SHARED, POINTS_ALL, POINTS_PCS } replay_points;
const char *replay_points_name(replay_points p);

typedef struct replay_config {
    pct_kind kind;
    uint64_t depth, radius;
    uint64_t k, n;        /* 0 until given or profiled */
    int k_given, n_given; /* from --steps / --threads */
    double starvation;    /* < 0: the plugin's default */
    replay_points points;
    char pcs_path[PATH_MAX + 32]; /* POINTS_SHARED (after profiling) and POINTS_PCS */
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
 * finished run); a line without a seed gets UINT64_MAX. -1: out of memory. */
int replay_lines_read(FILE *f, size_t tag, replay_line **lines, size_t *n, size_t *cap);

/* ---- one run (replay_run.c) ------------------------------------------------ */

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

/* ---- profiling (replay_profile.c) ----------------------------------------- */

/* With --points shared: trace the program once (exact mode, no policy) and
 * write the pcs of accesses to shared addresses to c->pcs_path. Then, if k
 * or n is missing, run once with sched=random, seed 0 and the same points,
 * and take k = its steps, n = its threads. Prints what it learned. */
int replay_profile(replay_config *c);

/* ---- campaigns (replay_campaign.c) ---------------------------------------- */

/* Run seeds first_seed..first_seed+runs-1 (skipping those already in
 * runs.jsonl with --resume), `jobs` at a time. Returns weft's exit status. */
int replay_campaign(replay_config *c);

/* ---- summaries (replay_summary.c) ----------------------------------------- */

typedef struct replay_summary {
    char policy[16], points[16];
    uint64_t depth, radius, n, k;
    uint64_t runs, hits, verdicts[REPLAY_VERDICT_COUNT];
    uint64_t runs_without_override;
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

/* ---- small shared helpers -------------------------------------------------- */

double replay_now_s(void);
/* mkdir -p; 0 or -1 (prints the error). */
int replay_mkdirs(const char *path);
/* Write buf to path atomically (temporary file + rename). 0 or -1 (err). */
int replay_write_atomic(const char *path, const char *buf, size_t len, char *err, size_t errlen);

#endif
