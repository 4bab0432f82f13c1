/* The policy state machine: priorities, change points, events and decisions.
 *
 * Priorities (pct, ppct, rpro), larger runs first, live in three bands:
 *   initial  d .. d+m-1   one slot per thread in creation order (m = n plus
 *                         threads beyond n), drawn as a random permutation;
 *   reserved 1 .. d-1     d - i is given at change point k_i (Nagarakatte et al. Fig. 4
 *                         line 14), each at most once since the k_i differ;
 *   demoted  <= 0         yielding threads, below everything else.
 * Sleepers (pct, rpro) sit between the initial and the reserved band: at d - 1
 * with a rank, nap, that orders them above the change point's d - 1 (nap 0)
 * and among themselves. So priorities are always distinct and no tie-break
 * is needed. In ppct the
 * low set L is exactly the threads with priority <= d. pos keeps its random
 * priority per pending event in the same field (pos.c); pb and db decide
 * by creation order and their schedule (bounded.c). */
#include "policy_internal.h"

#include <gsl/gsl_randist.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool prioritized(const pct_policy *p)
{
    pct_kind k = p->cfg.kind;
    return k == PCT_KIND_PCT || k == PCT_KIND_PPCT || k == PCT_KIND_RPRO;
}

/* gsl_rng_uniform_int stops at the generator's 2^32 - 1. */
uint64_t pct_draw(gsl_rng *r, uint64_t n)
{
    if (n <= UINT64_C(0xffffffff))
        return gsl_rng_uniform_int(r, (unsigned long)n);
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    for (;;) {
        uint64_t x = ((uint64_t)gsl_rng_get(r) << 32) | (uint64_t)gsl_rng_get(r);
        if (x < limit)
            return x % n;
    }
}

/* m distinct values of [0, space) in uniformly random order: Floyd's subset
 * sampling, then a shuffle, so each ordered tuple of distinct values has
 * probability 1/(space (space-1) ... (space-m+1)). */
static void draw_distinct(gsl_rng *r, uint64_t space, uint64_t *out, size_t m)
{
    for (size_t i = 0; i < m; i++) {
        uint64_t j = space - m + i;
        uint64_t t = pct_draw(r, j + 1);
        for (size_t q = 0; q < i; q++) {
            if (out[q] == t) {
                t = j;
                break;
            }
        }
        out[i] = t;
    }
    if (m > 1)
        gsl_ran_shuffle(r, out, m, sizeof *out);
}

static int cmp_cp(const void *a, const void *b)
{
    const struct change_point *x = a, *y = b;
    return (x->step > y->step) - (x->step < y->step);
}

static void draw_change_points(pct_policy *p)
{
    const pct_config *c = &p->cfg;
    size_t m = p->ncps;
    if (m == 0)
        return;
    if (c->kind == PCT_KIND_RPRO) {
        /* Cai and Yang Alg. 2: k_1 anywhere, the others around it, within r. */
        uint64_t k1 = 1 + pct_draw(p->sched, c->k);
        uint64_t lo = k1 > c->r ? k1 - c->r : 1;
        uint64_t hi = k1 + c->r < c->k ? k1 + c->r : c->k;
        p->kpoint[0] = k1;
        draw_distinct(p->sched, hi - lo, p->kpoint + 1, m - 1);
        for (size_t i = 1; i < m; i++) {
            uint64_t v = lo + p->kpoint[i];
            p->kpoint[i] = v >= k1 ? v + 1 : v; /* skip k_1 itself */
        }
    } else {
        draw_distinct(p->sched, c->k, p->kpoint, m);
        for (size_t i = 0; i < m; i++)
            p->kpoint[i] += 1;
    }
    for (size_t i = 0; i < m; i++)
        p->cps[i] = (struct change_point){p->kpoint[i], (uint32_t)(i + 1)};
    qsort(p->cps, m, sizeof *p->cps, cmp_cp);
}

static unsigned long fold_seed(uint64_t seed)
{
    /* GSL's mt19937 keeps 32 bits of its seed: fold the high half in. */
    return (unsigned long)((seed ^ (seed >> 32)) & 0xffffffffu);
}

pct_policy *pct_policy_create(const pct_config *cfg, char *err, size_t errlen)
{
    if (pct_config_check(cfg, err, errlen) != 0)
        return NULL;
    pct_policy *p = calloc(1, sizeof *p);
    if (!p)
        goto oom;
    p->cfg = *cfg;
    p->relief_from = PCT_NO_PARENT;
    p->sched = gsl_rng_alloc(gsl_rng_mt19937);
    p->choice = gsl_rng_alloc(gsl_rng_mt19937);
    if (!p->sched || !p->choice)
        goto oom;
    gsl_rng_set(p->sched, fold_seed(cfg->seed));
    gsl_rng_set(p->choice, gsl_rng_get(p->sched));
    if (prioritized(p)) {
        p->band = cfg->n;
        p->slot = malloc(cfg->n * sizeof *p->slot);
        p->ncps = cfg->d - 1;
        p->kpoint = calloc(p->ncps + 1, sizeof *p->kpoint);
        p->cps = calloc(p->ncps + 1, sizeof *p->cps);
        if (!p->slot || !p->kpoint || !p->cps)
            goto oom;
        /* Fig. 4 line 6: p[t] = d + pi(t) - 1 for a random permutation pi.
         * In ppct the thread that gets d is the one starting in L. */
        for (uint32_t j = 0; j < cfg->n; j++)
            p->slot[j] = (int64_t)cfg->d + j;
        gsl_ran_shuffle(p->sched, p->slot, cfg->n, sizeof *p->slot);
        draw_change_points(p);
    }
    if (pct_bounded_init(p) != 0 || pct_script_init(p) != 0)
        goto oom;
    return p;
oom:
    if (err && errlen)
        snprintf(err, errlen, "%s: out of memory", pct_kind_name(cfg->kind));
    pct_policy_destroy(p);
    return NULL;
}

void pct_policy_destroy(pct_policy *p)
{
    if (!p)
        return;
    gsl_rng_free(p->sched);
    gsl_rng_free(p->choice);
    free(p->threads);
    free(p->slot);
    free(p->kpoint);
    free(p->cps);
    free(p->scratch);
    pct_bounded_free(p);
    pct_script_free(p);
    pct_decision_free(p);
    free(p);
}

static bool is_low(const pct_policy *p, const struct thread *t)
{
    return p->cfg.kind == PCT_KIND_PPCT && t->prio <= (int64_t)p->cfg.d;
}

/* Record that t is in L now; the count is what keeps ppct honest (<= d). */
static void note_low(pct_policy *p, struct thread *t)
{
    if (is_low(p, t) && !t->ever_low) {
        t->ever_low = true;
        p->low_ever++;
    }
}

/* Initial priority of the thread created with index j. Within n it is the
 * pre-drawn slot, as in Fig. 4. Beyond n the thread takes a uniformly random
 * rank among all initial slots and the slots above it move up by one: this
 * is the insertion construction of a uniform permutation, so the initial
 * order of all threads stays a uniform random permutation. In ppct the new
 * thread never takes the bottom rank: L was chosen at the start, and putting
 * a newcomer there would let more than d threads pass through L. */
static int64_t initial_priority(pct_policy *p, size_t j)
{
    if (j < p->cfg.n)
        return p->slot[j];
    uint64_t m = p->band;
    uint64_t u =
        p->cfg.kind == PCT_KIND_PPCT ? 1 + pct_draw(p->sched, m) : pct_draw(p->sched, m + 1);
    int64_t v = (int64_t)p->cfg.d + (int64_t)u;
    for (size_t i = 0; i < p->nthreads; i++) {
        if (p->threads[i].prio >= v)
            p->threads[i].prio++;
    }
    for (size_t i = p->nthreads; i < p->cfg.n; i++) {
        if (p->slot[i] >= v)
            p->slot[i]++;
    }
    p->band++;
    return v;
}

int pct_thread_created(pct_policy *p, pct_tid tid, pct_tid parent)
{
    if (pct_find(p, tid))
        return -1;
    if (p->nthreads == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        struct thread *t = realloc(p->threads, cap * sizeof *t);
        size_t *s = realloc(p->scratch, cap * sizeof *s);
        if (t)
            p->threads = t;
        if (s)
            p->scratch = s;
        if (!t || !s)
            return -1;
        p->cap = cap;
    }
    const struct thread *par = pct_find(p, parent);
    struct thread t = {.tid = tid, .parent = parent, .state = PCT_THREAD_ENABLED};
    t.time = par ? par->time : 0;
    if (prioritized(p))
        t.prio = initial_priority(p, p->nthreads);
    p->threads[p->nthreads] = t;
    if (p->cfg.kind == PCT_KIND_POS)
        pct_pos_created(p, &p->threads[p->nthreads]);
    note_low(p, &p->threads[p->nthreads]);
    p->nthreads++;
    /* The first thread runs before any decision (the platform starts it
     * with the token): a first decision for another is a switch from it. */
    if (!p->dec.have_last) {
        p->dec.have_last = true;
        p->dec.last = tid;
    }
    return 0;
}

static int set_state(pct_policy *p, pct_tid tid, pct_thread_state s)
{
    struct thread *t = pct_find(p, tid);
    if (!t)
        return -1;
    t->state = s;
    return 0;
}

int pct_thread_enabled(pct_policy *p, pct_tid tid)
{
    return set_state(p, tid, PCT_THREAD_ENABLED);
}

int pct_thread_blocked(pct_policy *p, pct_tid tid)
{
    return set_state(p, tid, PCT_THREAD_BLOCKED);
}

int pct_thread_exited(pct_policy *p, pct_tid tid)
{
    return set_state(p, tid, PCT_THREAD_EXITED);
}

int pct_thread_time(pct_policy *p, pct_tid tid, uint64_t time)
{
    struct thread *t = pct_find(p, tid);
    if (!t)
        return -1;
    t->time = time;
    return 0;
}

/* Put t below every other live thread and below the reserved priorities,
 * so the threads it waits for run first, and several yielders take turns
 * (each yield sends the yielder to the very bottom). */
static void demote(pct_policy *p, struct thread *t)
{
    int64_t low = 1;
    for (size_t i = 0; i < p->nthreads; i++) {
        const struct thread *o = &p->threads[i];
        if (o != t && o->state != PCT_THREAD_EXITED && o->prio < low)
            low = o->prio;
    }
    if (t->prio < low)
        return;
    t->prio = low - 1;
    t->nap = 0;
    p->overrides++;
}

static bool above(const struct thread *a, const struct thread *b)
{
    return a->prio > b->prio || (a->prio == b->prio && a->nap > b->nap);
}

int pct_thread_yielded(pct_policy *p, pct_tid tid)
{
    struct thread *t = pct_find(p, tid);
    if (!t)
        return -1;
    t->yields++;
    t->yielded_since = true;
    t->after_yield = true;
    if (p->cfg.kind == PCT_KIND_PB || p->cfg.kind == PCT_KIND_DB)
        pct_bounded_yielded(p, t);
    else if (p->cfg.kind == PCT_KIND_POS)
        pct_pos_yielded(p, t);
    /* ideal: time decides; random: fair with probability 1. */
    if (!prioritized(p))
        return 0;
    if (p->cfg.kind == PCT_KIND_PPCT && !is_low(p, t)) {
        /* Demoting an H thread would move it into L and break |L| <= d. It
         * runs in parallel anyway; what it may be starving is L, which runs
         * only when H is idle. Nagarakatte et al. §5.5: let one L thread run a step. */
        p->relief = true;
        p->relief_from = tid;
        return 0;
    }
    demote(p, t); /* a ppct L thread stays in L */
    return 0;
}

/* A program that sleeps to let another thread finish something (sleep as
 * synchronization) fails when that thread is delayed for longer than the
 * sleep: under pct, when a change point delays it. Demoted below everything,
 * the sleeper would wait for the delayed thread too, and the bug would need
 * a second change point that no sleep needs. */
/* A delay outlasts this many sleeps of each thread (a bounded retry that
 * sleeps between tries fails when its helper is late); past them a sleep is
 * a yield until the next change point. A poller whose every check takes a
 * lock makes progress of its own between its sleeps, so each was a first
 * one and stayed above the delayed thread: md5deep's main thread, a million
 * steps and 27 s for a run of 0.2. */
#define NAPS_PER_CHANGE_POINT 8

int pct_thread_slept(pct_policy *p, pct_tid tid, bool again)
{
    struct thread *t = pct_find(p, tid);
    if (!t)
        return -1;
    bool undelayed = t->prio >= (int64_t)p->cfg.d || t->nap > 0;
    pct_kind k = p->cfg.kind;
    if (again || !undelayed || t->naps_since_cp >= NAPS_PER_CHANGE_POINT ||
        (k != PCT_KIND_PCT && k != PCT_KIND_RPRO)) {
        int rc = pct_thread_yielded(p, tid);
        t->after_yield = false; /* a sleep's steps are the program's: time runs */
        return rc;
    }
    t->yields++;
    t->yielded_since = true;
    t->prio = (int64_t)p->cfg.d - 1;
    t->nap = INT64_MAX - ++p->naps; /* below the earlier sleepers: they take turns */
    t->naps_since_cp++;
    p->overrides++;
    return 0;
}

int pct_thread_yield_napped(pct_policy *p, pct_tid tid)
{
    int rc = pct_thread_slept(p, tid, false);
    struct thread *t = pct_find(p, tid);
    if (t)
        t->after_yield = true;
    return rc;
}

/* Some other live thread is enabled, so the decision that follows this
 * step has an alternative (the platform calls pct_step at the stepping
 * thread's gate, with no event in between, and then decides). A step with
 * no alternative is no choice: a change point there would lower the only
 * runnable thread and change nothing until its next choice. */
static bool is_choice(const pct_policy *p, const struct thread *t)
{
    for (size_t i = 0; i < p->nthreads; i++) {
        if (&p->threads[i] != t && p->threads[i].state == PCT_THREAD_ENABLED)
            return true;
    }
    return false;
}

static bool valid_access(pct_access a)
{
    return (unsigned)a <= PCT_ACCESS_SYNC;
}

int pct_thread_pending(pct_policy *p, pct_tid tid, uint64_t object, pct_access access)
{
    struct thread *t = pct_find(p, tid);
    if (!t || !valid_access(access))
        return -1;
    t->pend_object = object;
    t->pend_access = access;
    return 0;
}

int pct_step(pct_policy *p, pct_tid tid)
{
    return pct_step_access(p, tid, 0, PCT_ACCESS_UNKNOWN);
}

int pct_step_access(pct_policy *p, pct_tid tid, uint64_t object, pct_access access)
{
    struct thread *t = pct_find(p, tid);
    if (!t || !valid_access(access))
        return -1;
    t->steps++;
    bool counted = p->cfg.count_all_steps || is_choice(p, t);
    if (counted && t->after_yield)
        p->yield_steps++;
    t->after_yield = false;
    if (counted) {
        p->steps++;
        /* Fig. 4 lines 12-15: the thread that executed step k_i drops to d - i. */
        if (p->next_cp < p->ncps && p->cps[p->next_cp].step == p->steps) {
            t->prio = (int64_t)p->cfg.d - (int64_t)p->cps[p->next_cp].index;
            t->nap = 0;
            note_low(p, t);
            p->dec.cp_fired = true;
            p->dec.cp_tid = t->tid;
            p->dec.cp_index = p->cps[p->next_cp].index;
            p->next_cp++;
            for (size_t i = 0; i < p->nthreads; i++)
                p->threads[i].naps_since_cp = 0;
        }
    }
    if (p->cfg.kind == PCT_KIND_POS)
        pct_pos_step(p, t, object, access);
    else if (p->cfg.kind == PCT_KIND_PB || p->cfg.kind == PCT_KIND_DB)
        pct_bounded_step(p, t, counted);
    /* Its next event is a new one, not described yet. */
    t->pend_object = 0;
    t->pend_access = PCT_ACCESS_UNKNOWN;
    pct_mirror_counts(p);
    return 0;
}

/* The listed thread (indices into threads) of highest priority. */
static size_t best_of(const pct_policy *p, const size_t *idx, size_t n)
{
    size_t best = idx[0];
    for (size_t i = 1; i < n; i++) {
        if (above(&p->threads[idx[i]], &p->threads[best]))
            best = idx[i];
    }
    return best;
}

enum which { ALL, LOW, HIGH };

/* Indices of the enabled threads of a set, in creation order, into scratch;
 * skip (if not NULL) names a thread to leave out. */
static size_t enabled(pct_policy *p, enum which w, const pct_tid *skip)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nthreads; i++) {
        const struct thread *t = &p->threads[i];
        if (t->state != PCT_THREAD_ENABLED || (skip && t->tid == *skip))
            continue;
        if ((w == LOW && !is_low(p, t)) || (w == HIGH && is_low(p, t)))
            continue;
        p->scratch[n++] = i;
    }
    return n;
}

static size_t emit_scratch(const pct_policy *p, size_t n, pct_tid *out, size_t cap)
{
    for (size_t i = 0; i < n; i++)
        pct_emit(out, cap, i, p->threads[p->scratch[i]].tid);
    return n;
}

static size_t pick_ideal(pct_policy *p, pct_tid *out, size_t cap)
{
    size_t n = enabled(p, ALL, NULL);
    if (n == 0)
        return 0;
    const struct thread *best = &p->threads[p->scratch[0]];
    for (size_t i = 1; i < n; i++) {
        const struct thread *t = &p->threads[p->scratch[i]];
        if (t->time < best->time || (t->time == best->time && t->tid < best->tid))
            best = t;
    }
    return pct_emit(out, cap, 0, best->tid);
}

static bool override_now(pct_policy *p)
{
    return p->cfg.starvation > 0.0 && gsl_rng_uniform(p->choice) < p->cfg.starvation;
}

/* pct and rpro: exactly the highest-priority enabled thread. */
static size_t pick_serial(pct_policy *p, pct_tid *out, size_t cap)
{
    size_t n = enabled(p, ALL, NULL);
    if (n == 0)
        return 0;
    size_t best = best_of(p, p->scratch, n);
    if (override_now(p)) {
        /* Nagarakatte et al. §3.1.3: any enabled thread, for this one decision. */
        size_t o = p->scratch[pct_draw(p->choice, n)];
        if (o != best) {
            p->overrides++;
            p->dec.forced = PCT_WHY_OVERRIDE;
        }
        best = o;
    }
    return pct_emit(out, cap, 0, p->threads[best].tid);
}

/* ppct, Fig. 4 line 10: any enabled thread with priority > d (the set H),
 * or else the enabled thread of maximal priority (the best of L). */
static size_t pick_parallel(pct_policy *p, pct_tid *out, size_t cap)
{
    if (enabled(p, ALL, NULL) == 0)
        return 0;
    size_t nlow = enabled(p, LOW, NULL);
    if (p->relief) {
        p->relief = false;
        /* Nagarakatte et al. §5.5: a starved thread of L runs a single step. */
        if (nlow > 0) {
            p->overrides++;
            p->dec.forced = PCT_WHY_OVERRIDE;
            return pct_emit(out, cap, 0, p->threads[p->scratch[pct_draw(p->choice, nlow)]].tid);
        }
        /* Nothing in L to help: the yielder waits for another H thread,
         * so leave it out of this one decision if anyone else can run. */
        size_t nhigh = enabled(p, HIGH, &p->relief_from);
        if (nhigh > 0) {
            p->overrides++;
            p->dec.forced = PCT_WHY_OVERRIDE;
            return emit_scratch(p, nhigh, out, cap);
        }
    }
    size_t best_low = nlow > 0 ? best_of(p, p->scratch, nlow) : 0;
    if (override_now(p) && nlow > 0) {
        size_t o = p->scratch[pct_draw(p->choice, nlow)];
        if (o != best_low || enabled(p, HIGH, NULL) > 0) {
            p->overrides++;
            p->dec.forced = PCT_WHY_OVERRIDE;
        }
        return pct_emit(out, cap, 0, p->threads[o].tid);
    }
    size_t nhigh = enabled(p, HIGH, NULL);
    if (nhigh > 0)
        return emit_scratch(p, nhigh, out, cap);
    return pct_emit(out, cap, 0, p->threads[best_low].tid);
}

static size_t decide(pct_policy *p, pct_tid *out, size_t cap)
{
    switch (p->cfg.kind) {
    case PCT_KIND_IDEAL:
        return pick_ideal(p, out, cap);
    case PCT_KIND_RANDOM: {
        size_t n = enabled(p, ALL, NULL);
        if (n == 0)
            return 0;
        return pct_emit(out, cap, 0, p->threads[p->scratch[pct_draw(p->choice, n)]].tid);
    }
    case PCT_KIND_PPCT:
        return pick_parallel(p, out, cap);
    case PCT_KIND_POS:
        return pct_pos_next(p, out, cap);
    case PCT_KIND_PB:
    case PCT_KIND_DB:
        return pct_bounded_next(p, out, cap);
    case PCT_KIND_SCRIPT:
        return pct_script_next(p, out, cap);
    default:
        return pick_serial(p, out, cap);
    }
}

size_t pct_policy_next(pct_policy *p, pct_tid *out, size_t cap)
{
    p->dec.forced = PCT_WHY_NONE;
    size_t n = decide(p, out, cap);
    pct_decision_note(p, out, n < cap ? n : cap);
    pct_mirror_counts(p);
    return n;
}

bool pct_policy_deadlocked(const pct_policy *p)
{
    bool blocked = false;
    for (size_t i = 0; i < p->nthreads; i++) {
        if (p->threads[i].state == PCT_THREAD_ENABLED)
            return false;
        if (p->threads[i].state == PCT_THREAD_BLOCKED)
            blocked = true;
    }
    return blocked;
}
