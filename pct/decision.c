/* The decision log: after every decision, whether it switched threads and
 * why, told to the caller's callback (the tracer records the switches of a
 * run, weft replay --explain prints them, --minimize replays them). The
 * reason is decided here, from what the policy saw since the previous
 * decision: the previous thread's state, its yields, a change point at its
 * step, and what the pick itself did (an override, a deviation, a switch
 * of a script). */
#include "policy_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const why_names[] = {
    "none",   "blocked", "exited", "yield", "override",  "change_point", "priority",
    "random", "pos",     "time",   "set",   "deviation", "schedule",     "base"};

const char *pct_why_name(pct_why why)
{
    if ((unsigned)why >= sizeof why_names / sizeof *why_names)
        return "?";
    return why_names[why];
}

void pct_policy_on_decision(pct_policy *p, pct_decision_fn fn, void *ctx)
{
    p->dec.fn = fn;
    p->dec.ctx = ctx;
}

void pct_decision_free(pct_policy *p)
{
    free(p->dec.last_set);
}

/* The policy's own reason when the previous thread could have gone on. */
static pct_why kind_reason(pct_kind kind)
{
    switch (kind) {
    case PCT_KIND_PCT:
    case PCT_KIND_RPRO:
        return PCT_WHY_PRIORITY;
    case PCT_KIND_RANDOM:
        return PCT_WHY_RANDOM;
    case PCT_KIND_POS:
        return PCT_WHY_POS;
    case PCT_KIND_IDEAL:
        return PCT_WHY_TIME;
    case PCT_KIND_PPCT:
        return PCT_WHY_SET;
    default:
        return PCT_WHY_BASE;
    }
}

static pct_why reason(const pct_policy *p, const struct thread *from, bool yielded,
                      uint32_t *change_point)
{
    const struct decisions *d = &p->dec;
    if (!from || from->state == PCT_THREAD_EXITED)
        return PCT_WHY_EXITED;
    if (from->state == PCT_THREAD_BLOCKED)
        return PCT_WHY_BLOCKED;
    if (yielded)
        return PCT_WHY_YIELD;
    if (d->forced != PCT_WHY_NONE)
        return d->forced;
    if (d->cp_fired && d->cp_tid == from->tid) {
        *change_point = d->cp_index;
        return PCT_WHY_CHANGE_POINT;
    }
    return kind_reason(p->cfg.kind);
}

/* ppct: did the allowed set change? Keeps the new one. */
static bool set_changed(struct decisions *d, const pct_tid *out, size_t n)
{
    bool changed = n != d->nlast_set || memcmp(out, d->last_set, n * sizeof *out) != 0;
    if (!changed)
        return false;
    if (n > d->set_cap) {
        pct_tid *s = realloc(d->last_set, n * sizeof *s);
        if (!s) {
            d->nlast_set = 0; /* every next decision counts as a change: harmless */
            return true;
        }
        d->last_set = s;
        d->set_cap = n;
    }
    memcpy(d->last_set, out, n * sizeof *out);
    d->nlast_set = n;
    return true;
}

void pct_decision_note(pct_policy *p, const pct_tid *out, size_t n)
{
    struct decisions *d = &p->dec;
    if (n == 0)
        return; /* nothing ran: the reasons gathered so far still stand */
    pct_tid to = out[0];
    bool sw = p->cfg.kind == PCT_KIND_PPCT ? set_changed(d, out, n) : to != d->last;
    if (d->have_last && d->fn) {
        const struct thread *from = pct_find(p, d->last);
        bool yielded = from && from->yielded_since;
        if (sw || (yielded && to == d->last)) {
            pct_decision x = {.step = p->steps,
                              .from = d->last,
                              .to = to,
                              .preempt = from && from->state == PCT_THREAD_ENABLED && !yielded,
                              .stay = !sw,
                              .allowed = out,
                              .nallowed = n};
            x.why = reason(p, from, yielded, &x.change_point);
            d->fn(d->ctx, p, &x);
        }
    }
    d->last = to;
    d->have_last = true;
    d->cp_fired = false;
    for (size_t i = 0; i < p->nthreads; i++)
        p->threads[i].yielded_since = false;
}
