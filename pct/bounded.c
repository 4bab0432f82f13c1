/* Preemption bounding and delay bounding, one schedule per run
 * (docs/policies.md).
 *
 * The base scheduler is non-preemptive round-robin: the thread chosen last
 * (the current one) runs while it is enabled and has not yielded; then the
 * next enabled thread after it in creation order, cyclically. A schedule is
 * a list of deviations at step positions; the one placed at step s applies
 * to the first decision after step s. Schedules are numbered per level (the
 * number c of deviations) in colexicographic order of their positions, so a
 * schedule's number does not depend on k: k only says where a level ends. */
#include "policy_internal.h"

#include <stdlib.h>

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    if (a != 0 && b > UINT64_MAX / a)
        return UINT64_MAX;
    return a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* C(n, r), saturated. The partial products C(n-r+i, i) grow with i, so the
 * first one that saturates settles the answer. Each step is exact: with
 * g = gcd(C, i), i/g divides n-r+i because i divides C (n-r+i). */
static uint64_t binom(uint64_t n, uint64_t r)
{
    if (r > n)
        return 0;
    if (r > n - r)
        r = n - r;
    uint64_t c = 1;
    for (uint64_t i = 1; i <= r; i++) {
        uint64_t g = gcd(c, i);
        c = mul_sat(c / g, (n - r + i) / (i / g));
        if (c == UINT64_MAX)
            break;
    }
    return c;
}

static uint64_t pow_sat(uint64_t b, uint32_t e)
{
    uint64_t x = 1;
    for (uint32_t i = 0; i < e && x != 0; i++) {
        x = mul_sat(x, b);
        if (x == UINT64_MAX)
            break;
    }
    return x;
}

static bool bounded_kind(pct_kind kind)
{
    return kind == PCT_KIND_PB || kind == PCT_KIND_DB;
}

uint64_t pct_bounded_count(pct_kind kind, uint64_t k, uint32_t n, uint32_t c)
{
    if (!bounded_kind(kind))
        return 0;
    if (c == 0)
        return 1;
    if (kind == PCT_KIND_PB)
        return n < 2 ? 0 : mul_sat(binom(k, c), pow_sat(n - 1, c));
    return k == 0 ? 0 : binom(k + c - 1, c);
}

uint64_t pct_bounded_total(pct_kind kind, uint64_t k, uint32_t n, uint32_t c)
{
    uint64_t sum = 0;
    if (c > PCT_MAX_BOUND)
        c = PCT_MAX_BOUND;
    for (uint32_t j = 0; j <= c && sum != UINT64_MAX; j++)
        sum = add_sat(sum, pct_bounded_count(kind, k, n, j));
    return sum;
}

int pct_bounded_locate(pct_kind kind, uint64_t k, uint32_t n, uint32_t max_bound, uint64_t g,
                       uint32_t *bound, uint64_t *schedule)
{
    if (!bounded_kind(kind))
        return -1;
    if (max_bound > PCT_MAX_BOUND)
        max_bound = PCT_MAX_BOUND;
    for (uint32_t c = 0; c <= max_bound; c++) {
        uint64_t cnt = pct_bounded_count(kind, k, n, c);
        if (g < cnt) {
            *bound = c;
            *schedule = g;
            return 0;
        }
        g -= cnt;
    }
    return -1;
}

/* The combination of rank x (colexicographic) of c values in [0, m), in
 * increasing order: the combinatorial number system, largest first. The
 * caller made sure x < C(m, c); a saturated C(v, s) is > x, so comparing
 * against it is still right, and only exact values are subtracted. */
static void unrank_colex(uint64_t x, uint64_t m, uint32_t c, uint64_t *out)
{
    uint64_t hi = m; /* values of this and later (smaller) elements are < hi */
    for (uint32_t s = c; s >= 1; s--) {
        /* The largest v in [s-1, hi) with C(v, s) <= x. */
        uint64_t lo = s - 1, top = hi - 1;
        while (lo < top) {
            uint64_t mid = lo + (top - lo + 1) / 2;
            if (binom(mid, s) <= x)
                lo = mid;
            else
                top = mid - 1;
        }
        out[s - 1] = lo;
        x -= binom(lo, s);
        hi = lo;
    }
}

int pct_bounded_schedule(pct_kind kind, uint64_t k, uint32_t n, uint32_t c, uint64_t schedule,
                         uint64_t *pos, uint32_t *alt)
{
    if (c > PCT_MAX_BOUND || schedule >= pct_bounded_count(kind, k, n, c))
        return -1;
    if (c == 0)
        return 0;
    if (kind == PCT_KIND_DB) {
        /* Stars and bars: b_1 < ... < b_c in [0, k+c-1) is the multiset
         * a_i = b_i - (i - 1) of [0, k). */
        unrank_colex(schedule, k + c - 1, c, pos);
        for (uint32_t i = 0; i < c; i++) {
            pos[i] = pos[i] - i + 1;
            if (alt)
                alt[i] = 1;
        }
        return 0;
    }
    /* pb: positions major, then the alternatives in lexicographic order. */
    uint64_t nalt = pow_sat(n - 1, c), digits = schedule, comb = 0;
    if (nalt != UINT64_MAX) { /* saturated: the true count exceeds schedule */
        digits = schedule % nalt;
        comb = schedule / nalt;
    }
    unrank_colex(comb, k, c, pos);
    for (uint32_t i = c; i-- > 0;) {
        pos[i] += 1;
        if (alt)
            alt[i] = 1 + (uint32_t)(digits % (n - 1));
        digits /= n - 1;
    }
    return 0;
}

int pct_bounded_init(pct_policy *p)
{
    struct bounded *b = &p->b;
    b->current = SIZE_MAX;
    if (!bounded_kind(p->cfg.kind) || p->cfg.bound == 0)
        return 0;
    b->npos = p->cfg.bound;
    b->pos = calloc(b->npos, sizeof *b->pos);
    b->alt = calloc(b->npos, sizeof *b->alt);
    if (!b->pos || !b->alt)
        return -1;
    return pct_bounded_schedule(p->cfg.kind, p->cfg.k, p->cfg.n, p->cfg.bound, p->cfg.schedule,
                                b->pos, b->alt);
}

void pct_bounded_free(pct_policy *p)
{
    free(p->b.pos);
    free(p->b.alt);
}

void pct_bounded_step(pct_policy *p, struct thread *t, bool counted)
{
    struct bounded *b = &p->b;
    if (b->armed) {
        /* Two steps without a decision between them (not the platform's
         * serial order): the deviation had nothing to act on. */
        b->duplicate = true;
        b->armed = 0;
    }
    if (!counted)
        return;
    uint32_t m = 0;
    while (b->next < b->npos && b->pos[b->next] == p->steps) {
        b->armed_alt = b->alt[b->next];
        b->next++;
        m++;
    }
    if (m == 0)
        return;
    b->armed = m;
    b->armed_by = (size_t)(t - p->threads);
}

void pct_bounded_yielded(pct_policy *p, struct thread *t)
{
    if (p->b.current == (size_t)(t - p->threads))
        p->b.current_yielded = true;
}

/* The enabled threads into scratch, in cyclic creation order starting at
 * the base scheduler's choice; returns how many. */
static size_t round_robin(pct_policy *p)
{
    const struct bounded *b = &p->b;
    size_t n = p->nthreads, first = 0;
    if (b->current < n) {
        bool keep = p->threads[b->current].state == PCT_THREAD_ENABLED && !b->current_yielded;
        first = keep ? b->current : b->current + 1;
    }
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
        size_t i = (first + j) % n;
        if (p->threads[i].state == PCT_THREAD_ENABLED)
            p->scratch[m++] = i;
    }
    return m;
}

size_t pct_bounded_next(pct_policy *p, pct_tid *out, size_t cap)
{
    struct bounded *b = &p->b;
    size_t m = round_robin(p);
    if (m == 0)
        return 0; /* an armed deviation stays pending: nothing to act on */
    size_t pick = 0;
    if (b->armed) {
        /* db: m delays skip m threads. pb: a preemption exists only where
         * the base would go on with the thread that stepped. Too few
         * alternatives: the run is the schedule without this deviation. */
        bool pb = p->cfg.kind == PCT_KIND_PB;
        uint32_t want = pb ? b->armed_alt : b->armed;
        if ((pb && p->scratch[0] != b->armed_by) || want >= m)
            b->duplicate = true;
        else {
            pick = want;
            p->dec.forced = PCT_WHY_DEVIATION;
        }
        b->armed = 0;
    }
    b->current = p->scratch[pick];
    b->current_yielded = false;
    return pct_emit(out, cap, 0, p->threads[b->current].tid);
}

pct_schedule_status pct_policy_schedule_status(const pct_policy *p)
{
    if (p->b.duplicate)
        return PCT_SCHEDULE_DUPLICATE;
    if (p->b.next < p->b.npos || p->b.armed)
        return PCT_SCHEDULE_PENDING;
    return PCT_SCHEDULE_DONE;
}
