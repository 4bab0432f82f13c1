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
} optimize_ctx;

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
