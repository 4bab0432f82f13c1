/* Partial order sampling (Yuan, Yang, Gu, CAV 2018; docs/policies.md).
 *
 * Every live thread's pending event carries a priority, uniform over 63
 * bits and drawn from the sched stream; the enabled event of highest
 * priority runs. After an event runs, the thread's next event gets a fresh
 * priority, and so does every pending event that races with the one that
 * ran. Without that reset (BasicPOS) a priority that lost once keeps losing,
 * and the chance of an ordering can shrink like 1/|V|!; with it, each race
 * is decided by fresh draws. The reset only ever re-draws, so racing with
 * too much (unknown objects) costs sampling power, never correctness. */
#include "policy_internal.h"

static int64_t fresh_priority(pct_policy *p)
{
    uint64_t hi = gsl_rng_get(p->sched), lo = gsl_rng_get(p->sched);
    return (int64_t)(((hi & 0xffffffffu) << 31) | ((lo & 0xffffffffu) >> 1));
}

/* Events of two different threads race unless one touches nothing shared,
 * both only read, or both name known objects that differ. */
static bool races(uint64_t oa, pct_access aa, uint64_t ob, pct_access ab)
{
    if (aa == PCT_ACCESS_NONE || ab == PCT_ACCESS_NONE)
        return false;
    if (aa == PCT_ACCESS_READ && ab == PCT_ACCESS_READ)
        return false;
    if (aa == PCT_ACCESS_UNKNOWN || ab == PCT_ACCESS_UNKNOWN)
        return true;
    return oa == 0 || ob == 0 || oa == ob;
}

void pct_pos_created(pct_policy *p, struct thread *t)
{
    t->prio = fresh_priority(p);
}

void pct_pos_step(pct_policy *p, struct thread *t, uint64_t object, pct_access access)
{
    if (access == PCT_ACCESS_UNKNOWN) {
        object = t->pend_object;
        access = t->pend_access;
    }
    /* Blocked threads' events are pending too: a fresh draw now or when
     * they are enabled again has the same distribution, and now keeps the
     * number of draws independent of when wake-ups are reported. */
    for (size_t i = 0; i < p->nthreads; i++) {
        struct thread *o = &p->threads[i];
        if (o != t && o->state != PCT_THREAD_EXITED &&
            races(object, access, o->pend_object, o->pend_access))
            o->prio = fresh_priority(p);
    }
    t->prio = fresh_priority(p);
}

/* A yield says the thread waits for another one. A thread whose pending
 * event does not race with the spin would otherwise keep a low priority
 * against the spinner's fresh draws, and wait 1/u decisions for a uniform
 * u: a wait of infinite mean. So a yield races with every pending event. */
void pct_pos_yielded(pct_policy *p, struct thread *t)
{
    for (size_t i = 0; i < p->nthreads; i++) {
        struct thread *o = &p->threads[i];
        if (o != t && o->state != PCT_THREAD_EXITED)
            o->prio = fresh_priority(p);
    }
}

size_t pct_pos_next(pct_policy *p, pct_tid *out, size_t cap)
{
    const struct thread *best = NULL;
    for (size_t i = 0; i < p->nthreads; i++) {
        const struct thread *t = &p->threads[i];
        if (t->state == PCT_THREAD_ENABLED && (!best || t->prio > best->prio))
            best = t;
    }
    return best ? pct_emit(out, cap, 0, best->tid) : 0;
}
