/* What weft optimize's files share (run.c, run_search.c, narrate.c). */
#ifndef WEFT_OPTIMIZER_RUN_INTERNAL_H
#define WEFT_OPTIMIZER_RUN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "weft/optimizer.h"
#include "weft/trace.h"

typedef struct optimize_ctx {
    optimize_opts *o;
    weft_trace *t;
    const weft_trace_meta *meta;
    const weft_trace_summary *sum;
    weft_symbols *syms;
    optimizer_model *m;
    optimizer_plan plan;
    int have_plan;
    /* --from-races (from_races.c): the racing pairs of pcs, (lo, hi) sorted */
    uint64_t (*race_pairs)[2];
    size_t nrace_pairs;
    uint64_t *race_pcs; /* every pc of them, sorted (the model's filter) */
    size_t nrace_pcs;
} optimize_ctx;

/* --from-races: run weft races on the trace and fill race_pairs, race_pcs
 * and the filter's pcs (so the model keeps only accesses at racy pcs). 0; 1 when the trace has no
 * race (said); -1 after one line. */
int opt_races_load(optimize_ctx *c);
/* 1 if the two pcs form a racing pair (either order). */
int opt_pair_races(const optimize_ctx *c, uint64_t pc_a, uint64_t pc_b);
/* Reorder ranked candidates stably: those whose two pcs are a reported race
 * first. Returns how many are. */
size_t opt_races_first(const optimize_ctx *c, optimizer_candidate *cand, size_t n);
void opt_races_free(optimize_ctx *c);

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

#endif
