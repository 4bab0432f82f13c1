/* What weft optimize prints about events and pairs, and the plan it builds
 * from them: shared by the exact solver and the searches (run.c,
 * run_search.c). */
#include <inttypes.h>
#include <stdio.h>

#include "run_internal.h"

void opt_print_event(optimize_ctx *c, size_t v, const char *what, uint64_t time)
{
    optimizer_var x;
    if (optimizer_model_var(c->m, v, &x) != 0)
        return;
    char where[512];
    opt_describe_pc(c->syms, x.pc, where, sizeof where);
    printf("    T%" PRIu32 " seq %-6" PRIu64 " %-5s %s at %" PRIu64 " ns, %s\n", x.thread, x.seq,
           x.is_write ? "write" : "read", what, time, where);
}

/* An order violation is exposed only if the two accesses run in the order
 * opposite to the trace's. Aligned at one virtual time, the platform runs
 * them in thread order (ties by PE), which for the usual pattern (main
 * initialises, a thread it created uses) is the traced order again. So the
 * delayed event goes one cycle past the other: the smallest delay that
 * settles the order. Rounded up to whole ns, the plan's unit, so that it is
 * never less than one cycle. */
uint64_t opt_order_nudge(const optimize_ctx *c)
{
    if (!c->o->reads)
        return 0;
    uint64_t ps = c->meta->settings.ps_per_cycle ? c->meta->settings.ps_per_cycle : 1000;
    return (ps + 999) / 1000;
}

/* One pair: va is delayed by `delay` so that it meets vb at `at` (or, for a
 * write-read pair with a nudge, lands just after it). */
void opt_print_pair(optimize_ctx *c, size_t k, const optimizer_pair *p, uint64_t delay, uint64_t at)
{
    char var[256];
    opt_describe_addr(c->syms, p->addr, var, sizeof var);
    printf("  pair %zu on %s (0x%" PRIx64 "):\n", k, var, p->addr);
    opt_print_event(c, p->va, "traced", p->time_a);
    opt_print_event(c, p->vb, "traced", p->time_b);
    uint64_t insns =
        optimizer_delay_insns(delay, c->meta->settings.cpi, c->meta->settings.ps_per_cycle);
    if (p->nudge)
        printf("    delay %" PRIu64 " ns (%" PRIu64 " insns) before T%" PRIu32 " seq %" PRIu64
               " -> T%" PRIu32 " seq %" PRIu64 " first at %" PRIu64 " ns, then T%" PRIu32
               " seq %" PRIu64 " at %" PRIu64 " ns (order reversed; %" PRIu64 " ns nudge)\n",
               delay, insns, p->thread_a, p->seq_a, p->thread_b, p->seq_b, at, p->thread_a,
               p->seq_a, at + p->nudge, p->nudge);
    else
        printf("    delay %" PRIu64 " ns (%" PRIu64 " insns) before T%" PRIu32 " seq %" PRIu64
               " -> both at %" PRIu64 " ns\n",
               delay, insns, p->thread_a, p->seq_a, at);
}

int opt_plan_add_pair(optimize_ctx *c, const optimizer_pair *p, uint64_t delay)
{
    optimizer_injection inj;
    optimizer_injection_for_var(c->m, p->va, delay, p, &inj);
    opt_symbolize_injection(c->syms, p->addr, &inj);
    if (optimizer_plan_add(&c->plan, &inj) != 0) {
        weft_error("out of memory");
        return -1;
    }
    return 0;
}
