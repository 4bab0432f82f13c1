/* The detector's side tables (pc pairs, thread anchors, exits, waiters) and
 * the whole-trace driver. */
#include <stdio.h>
#include <string.h>

#include "races_state.h"

/* ---- unordered pc pairs -------------------------------------------------------- */

int pairs_init(pair_table *p)
{
    size_t n = 64;
    p->lo = malloc(n * sizeof *p->lo);
    p->hi = malloc(n * sizeof *p->hi);
    p->idx = calloc(n, sizeof *p->idx);
    p->mask = n - 1;
    p->used = 0;
    return p->lo && p->hi && p->idx ? 0 : -1;
}

void pairs_free(pair_table *p)
{
    free(p->lo), free(p->hi), free(p->idx);
    memset(p, 0, sizeof *p);
}

static size_t pair_slot(const pair_table *p, uint64_t lo, uint64_t hi)
{
    size_t h =
        (size_t)(((lo * 0x9E3779B97F4A7C15ull) ^ hi) * 0xC2B2AE3D27D4EB4Full >> 17) & p->mask;
    while (p->idx[h] && (p->lo[h] != lo || p->hi[h] != hi))
        h = (h + 1) & p->mask;
    return h;
}

int pairs_find(const pair_table *p, uint64_t a, uint64_t b, uint32_t *idx)
{
    uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
    size_t h = pair_slot(p, lo, hi);
    if (!p->idx[h])
        return -1;
    *idx = p->idx[h] - 1;
    return 0;
}

int pairs_add(pair_table *p, uint64_t a, uint64_t b, uint32_t idx)
{
    if (2 * (p->used + 1) > p->mask + 1) {
        pair_table bigger;
        size_t n = 2 * (p->mask + 1);
        bigger.lo = malloc(n * sizeof *bigger.lo);
        bigger.hi = malloc(n * sizeof *bigger.hi);
        bigger.idx = calloc(n, sizeof *bigger.idx);
        bigger.mask = n - 1;
        bigger.used = p->used;
        if (!bigger.lo || !bigger.hi || !bigger.idx) {
            pairs_free(&bigger);
            return -1;
        }
        for (size_t i = 0; i <= p->mask; i++) {
            if (!p->idx[i])
                continue;
            size_t h = pair_slot(&bigger, p->lo[i], p->hi[i]);
            bigger.lo[h] = p->lo[i], bigger.hi[h] = p->hi[i], bigger.idx[h] = p->idx[i];
        }
        pairs_free(p);
        *p = bigger;
    }
    uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
    size_t h = pair_slot(p, lo, hi);
    p->lo[h] = lo, p->hi[h] = hi, p->idx[h] = idx + 1;
    p->used++;
    return 0;
}

/* ---- thread lists ---------------------------------------------------------------- */

int anchors_add(weft_races *d, uint64_t addr, uint32_t thread)
{
    anchor *v = races_grow(d->anchors, d->nanchors, &d->cap_anchors, sizeof *v, 16);
    if (!v)
        return -1;
    d->anchors = v;
    v[d->nanchors++] = (anchor){addr, thread};
    d->anchors_sorted = 0;
    return 0;
}

/* Append a thread index to one of the detector's lists. */
static int push_thread(uint32_t **v, size_t *n, size_t *cap, uint32_t thread)
{
    uint32_t *nv = races_grow(*v, *n, cap, sizeof *nv, 16);
    if (!nv)
        return -1;
    *v = nv;
    nv[(*n)++] = thread;
    return 0;
}

static int anchor_cmp(const void *a, const void *b)
{
    const anchor *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->thread < y->thread ? -1 : x->thread > y->thread;
}

static uint64_t distance(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

uint32_t anchors_nearest(weft_races *d, uint64_t addr, uint64_t window)
{
    if (!d->nanchors)
        return UINT32_MAX;
    if (!d->anchors_sorted) {
        qsort(d->anchors, d->nanchors, sizeof *d->anchors, anchor_cmp);
        d->anchors_sorted = 1;
    }
    /* First anchor at or above addr; the nearest is it or the one before
     * (the last of a run of equal addresses is the latest thread). */
    size_t lo = 0, hi = d->nanchors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->anchors[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t best = SIZE_MAX;
    if (lo > 0)
        best = lo - 1;
    if (lo < d->nanchors) {
        size_t up = lo;
        while (up + 1 < d->nanchors && d->anchors[up + 1].addr == d->anchors[lo].addr)
            up++;
        if (best == SIZE_MAX ||
            distance(d->anchors[up].addr, addr) <= distance(d->anchors[best].addr, addr))
            best = up;
    }
    if (best == SIZE_MAX || distance(d->anchors[best].addr, addr) > window)
        return UINT32_MAX;
    return d->anchors[best].thread;
}

int exits_add(weft_races *d, uint32_t thread)
{
    return push_thread(&d->exits, &d->nexits, &d->cap_exits, thread);
}

uint32_t exits_latest_between(const weft_races *d, uint64_t after, uint64_t upto)
{
    for (size_t k = d->nexits; k-- > 0;) {
        const rthread *t = &d->th[d->exits[k]];
        if (t->exit_time <= after)
            break; /* exits come in time order */
        if (t->exit_time <= upto)
            return d->exits[k];
    }
    return UINT32_MAX;
}

int waiters_add(weft_races *d, uint32_t thread)
{
    for (size_t k = 0; k < d->nwaiters; k++)
        if (d->waiters[k] == thread)
            return 0;
    return push_thread(&d->waiters, &d->nwaiters, &d->cap_waiters, thread);
}

void waiters_remove(weft_races *d, uint32_t thread)
{
    for (size_t k = 0; k < d->nwaiters; k++) {
        if (d->waiters[k] == thread) {
            d->waiters[k] = d->waiters[--d->nwaiters];
            return;
        }
    }
}

/* ---- results ---------------------------------------------------------------------- */

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t weft_races_pcs(weft_races *d, const uint64_t **pcs)
{
    if (!d->pcs_valid) {
        uint64_t *v = realloc(d->pcs, (2 * d->nraces + 1) * sizeof *v);
        if (!v) {
            *pcs = NULL;
            return 0;
        }
        d->pcs = v;
        size_t n = 0;
        for (size_t i = 0; i < d->nraces; i++) {
            v[n++] = d->races[i].race.first.pc;
            v[n++] = d->races[i].race.second.pc;
        }
        qsort(v, n, sizeof *v, u64_cmp);
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (m == 0 || v[m - 1] != v[i])
                v[m++] = v[i];
        d->npcs = m;
        d->pcs_valid = 1;
    }
    *pcs = d->pcs;
    return d->npcs;
}
