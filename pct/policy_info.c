/* Introspection of a policy, for logs, records and tests. */
#include "policy_internal.h"

const pct_config *pct_policy_config(const pct_policy *p)
{
    return &p->cfg;
}

uint64_t pct_policy_steps(const pct_policy *p)
{
    return p->steps;
}

uint64_t pct_policy_yield_steps(const pct_policy *p)
{
    return p->yield_steps;
}

size_t pct_policy_change_points(const pct_policy *p, uint64_t *out, size_t cap)
{
    if (p->cfg.kind == PCT_KIND_PB || p->cfg.kind == PCT_KIND_DB) {
        for (size_t i = 0; i < p->b.npos && i < cap; i++)
            out[i] = p->b.pos[i];
        return p->b.npos;
    }
    for (size_t i = 0; i < p->ncps && i < cap; i++)
        out[i] = p->kpoint[i];
    return p->ncps;
}

size_t pct_policy_low_set_ever(const pct_policy *p)
{
    return p->low_ever;
}

uint64_t pct_policy_overrides(const pct_policy *p)
{
    return p->overrides;
}

size_t pct_policy_thread_count(const pct_policy *p)
{
    return p->nthreads;
}

static void fill_info(const pct_policy *p, const struct thread *t, pct_thread_info *out)
{
    *out = (pct_thread_info){.tid = t->tid,
                             .parent = t->parent,
                             .state = t->state,
                             .priority = t->prio,
                             .in_low_set =
                                 p->cfg.kind == PCT_KIND_PPCT && t->prio <= (int64_t)p->cfg.d,
                             .steps = t->steps,
                             .yields = t->yields,
                             .time = t->time};
}

int pct_policy_thread_at(const pct_policy *p, size_t index, pct_thread_info *out)
{
    if (index >= p->nthreads)
        return -1;
    fill_info(p, &p->threads[index], out);
    return 0;
}

int pct_policy_thread_info(const pct_policy *p, pct_tid tid, pct_thread_info *out)
{
    const struct thread *t = pct_find(p, tid);
    for (size_t i = p->nthreads; !t && i-- > 0;) {
        if (p->threads[i].tid == tid)
            t = &p->threads[i];
    }
    if (!t)
        return -1;
    fill_info(p, t, out);
    return 0;
}

void pct_mirror_counts(pct_policy *p)
{
    pct_status *s = p->mirror;
    if (!s)
        return;
    s->steps = p->steps;
    s->yield_steps = p->yield_steps;
    s->overrides = p->overrides;
    s->threads = p->nthreads;
    s->low_set_ever = p->low_ever;
}

void pct_policy_mirror(pct_policy *p, pct_status *s)
{
    p->mirror = s;
    if (!s)
        return;
    s->nchange_points = pct_policy_change_points(p, s->change_points, PCT_MAX_DEPTH);
    pct_mirror_counts(p);
    s->magic = PCT_STATUS_MAGIC;
}
