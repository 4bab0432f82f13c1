/* What weft optimize and weft inject share: which trace events the model
 * sees, symbolizing events, the happens-before that thread creation imposes,
 * and running a guest with a plan's delays. Internal to cli/. */
#ifndef WEFT_CLI_OPTIMIZE_H
#define WEFT_CLI_OPTIMIZE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "weft/optimizer.h"
#include "weft/trace.h"

#define OPT_MAX_VARS 16

/* Which accesses the interference model keeps (besides the optimizer's own
 * rule: addresses another thread writes). */
typedef struct opt_filter {
    int atomics; /* keep atomic / exclusive accesses (off: they synchronize, they cannot lose
                    an update) */
    size_t nranges;
    uint64_t lo[OPT_MAX_VARS], hi[OPT_MAX_VARS]; /* --var NAME: [lo, hi) */
} opt_filter;

/* Resolve --var NAME in the traced binary's symbols; one line on error. */
int opt_filter_add_var(opt_filter *f, weft_symbols *syms, const char *binary, const char *name);

/* Build the model from a trace's events, keeping what the filter allows.
 * One line in err on failure. */
optimizer_model *opt_model_load(weft_trace *t, const opt_filter *f, const optimizer_options *o,
                                char *err, size_t errlen);

/* 1 if thread creation alone orders event (ta, time_a) before (tb, time_b):
 * ta is an ancestor of tb and the event precedes the clone leading to tb.
 * Such a pair cannot be aligned by delaying the earlier event: the delay
 * shifts the clone and so the later event too. */
int opt_ordered_by_creation(const weft_trace_summary *s, uint32_t ta, uint64_t time_a, uint32_t tb,
                            uint64_t time_b);

/* "function (file:line)" / "variable+off" of a pc / address, or hex. */
void opt_describe_pc(weft_symbols *syms, uint64_t pc, char *buf, size_t len);
void opt_describe_addr(weft_symbols *syms, uint64_t addr, char *buf, size_t len);

/* Fill the symbol fields of an injection (strings owned by syms). */
void opt_symbolize_injection(weft_symbols *syms, uint64_t addr, optimizer_injection *inj);

/* ---- weft optimize internals (cmd_optimize.c, optimize_search.c) -------- */

typedef struct optimize_opts {
    const char *trace, *out, *stats;
    search_algorithm algo;
    int exact;
    uint64_t dmax, budget, seed, runs, pairs;
    int dmax_set, reads, keep_ordered, quiet;
    opt_filter filter;
    const char *vars[OPT_MAX_VARS];
    size_t nvars;
} optimize_opts;

typedef struct optimize_ctx {
    optimize_opts *o;
    weft_trace *t;
    const weft_trace_meta *meta;
    const weft_trace_summary *sum;
    weft_symbols *syms;
    optimizer_model *m;
    optimizer_plan plan;
    int have_plan;
} optimize_ctx;

double opt_now_s(void);
/* Print kept event v (traced or model time) / a pair and its delay. */
void opt_print_event(optimize_ctx *c, size_t v, const char *what, uint64_t time);
void opt_print_pair(optimize_ctx *c, size_t k, const optimizer_pair *p, uint64_t delay,
                    uint64_t at);
/* --reads: how far a write-read pair's delayed event is put past the other
 * (one cycle, in whole ns); 0 without --reads. */
uint64_t opt_order_nudge(const optimize_ctx *c);
/* Add an injection of `delay` before p->va, predicting p, to the plan. */
int opt_plan_add_pair(optimize_ctx *c, const optimizer_pair *p, uint64_t delay);
/* The searches: runs, statistics, plan from a hit. Returns the exit status. */
int opt_run_search(optimize_ctx *c);

/* ---- running a guest for weft inject (inject_run.c) ---------------------- */

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

#endif
