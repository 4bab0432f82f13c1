/* The scripted policy: a given list of switches over a non-preemptive base
 * (docs/policies.md). The base runs the thread chosen last for as long as it
 * can go on (enabled and not yielded); when it cannot, the enabled thread
 * with the lowest id, a yielder last. A switch (step s, thread t, preempt)
 * applies at the first decision at step s of its kind: a preempting one
 * where the current thread could go on, a non-preempting one where it
 * cannot. So a recorded run's switches, replayed, make the same decisions
 * one for one, and a subset of its preemptions is a schedule of its own
 * (weft replay --minimize). Nothing is random. */
#include "policy_internal.h"

#include <stdlib.h>
#include <string.h>

int pct_script_init(pct_policy *p)
{
    struct script *s = &p->script;
    if (p->cfg.kind != PCT_KIND_SCRIPT || p->cfg.script_len == 0)
        return 0;
    s->e = malloc(p->cfg.script_len * sizeof *s->e);
    if (!s->e)
        return -1;
    memcpy(s->e, p->cfg.script, p->cfg.script_len * sizeof *s->e);
    s->n = p->cfg.script_len;
    /* The config points at the caller's memory, which may go. */
    p->cfg.script = s->e;
    return 0;
}

void pct_script_free(pct_policy *p)
{
    free(p->script.e);
}

void pct_policy_script_counts(const pct_policy *p, uint64_t *applied, uint64_t *missed)
{
    *applied = p->script.applied;
    /* Switches never reached by the end of the run are missed too. */
    *missed = p->script.missed + (p->script.n - p->script.next);
}

/* The base's choice when the current thread cannot go on: the lowest
 * enabled id, a thread that just yielded only if nobody else can run. */
static const struct thread *lowest(const pct_policy *p)
{
    const struct thread *best = NULL, *yielder = NULL;
    for (size_t i = 0; i < p->nthreads; i++) {
        const struct thread *t = &p->threads[i];
        if (t->state != PCT_THREAD_ENABLED)
            continue;
        if (t->yielded_since) {
            if (!yielder || t->tid < yielder->tid)
                yielder = t;
        } else if (!best || t->tid < best->tid) {
            best = t;
        }
    }
    return best ? best : yielder;
}

size_t pct_script_next(pct_policy *p, pct_tid *out, size_t cap)
{
    struct script *s = &p->script;
    const struct thread *cur = p->dec.have_last ? pct_find(p, p->dec.last) : NULL;
    bool can_go_on = cur && cur->state == PCT_THREAD_ENABLED && !cur->yielded_since;
    const struct thread *pick = NULL, *base = can_go_on ? cur : lowest(p);
    if (!base)
        return 0; /* nothing enabled: no decision, the switches wait */
    /* A switch whose step has passed had no decision of its kind there. */
    while (s->next < s->n && s->e[s->next].step < p->steps) {
        s->next++;
        s->missed++;
    }
    if (s->next < s->n && s->e[s->next].step == p->steps && s->e[s->next].preempt == can_go_on) {
        const struct thread *t = pct_find(p, s->e[s->next].thread);
        s->next++;
        if (t && t->state == PCT_THREAD_ENABLED) {
            pick = t;
            s->applied++;
            p->dec.forced = PCT_WHY_SCHEDULE;
        } else {
            s->missed++;
        }
    }
    if (!pick)
        pick = base;
    return pct_emit(out, cap, 0, pick->tid);
}
