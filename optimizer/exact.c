/* Exact solver: every pair one delay can align, and a greedy choice of pairs
 * that all hold at once. Works on traced times, whatever the model's current
 * point is. On 10^5 writes the cost is mostly first-touch of fresh memory, so
 * candidates stay 16 bytes from the sweep to the caller. */
#include "model_internal.h"

#include <stdlib.h>
#include <string.h>

/* Candidates are collected as radix records {key = va·T + thread(b),
 * val = va:vb}, the layout the first ranking sort wants. The key fits far
 * fewer bits than va:vb, which saves sort passes. */
typedef struct sweep {
    const optimizer_model *m;
    size_t *next_any, *next_write; /* per thread, SIZE_MAX = none yet */
    uint32_t *present;             /* threads met at the current address */
    size_t npresent;
    radix_rec *out;
    size_t count, cap;
} sweep;

static int emit(sweep *s, size_t va, size_t vb)
{
    if (s->count == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : s->m->nev + 1024;
        radix_rec *p = realloc(s->out, cap * sizeof *p);
        if (!p)
            return -1;
        s->out = p, s->cap = cap;
    }
    const optimizer_model *m = s->m;
    s->out[s->count++] =
        (radix_rec){(uint64_t)va * m->nthreads + m->ev[vb].thread, (uint64_t)va << 32 | vb};
    return 0;
}

/* One address, its events (val) sorted by (t, index), swept from the latest:
 * after a group of equal times is added, next_any[B] is B's earliest event at
 * or after that time (lowest index on ties) and next_write[B] its earliest
 * write. */
static int sweep_address(sweep *s, const radix_rec *e, size_t n)
{
    const optimizer_model *m = s->m;
    size_t i = n;
    while (i > 0) {
        size_t j = i - 1;
        uint64_t t = m->ev[e[i - 1].val].t;
        while (j > 0 && m->ev[e[j - 1].val].t == t)
            j--;
        for (size_t k = i; k-- > j;) {
            const model_event *ev = &m->ev[e[k].val];
            if (s->next_any[ev->thread] == SIZE_MAX)
                s->present[s->npresent++] = ev->thread;
            s->next_any[ev->thread] = e[k].val;
            if (ev->is_write)
                s->next_write[ev->thread] = e[k].val;
        }
        for (size_t k = j; k < i; k++) {
            const model_event *a = &m->ev[e[k].val];
            for (size_t p = 0; p < s->npresent; p++) {
                uint32_t th = s->present[p];
                if (th == a->thread)
                    continue;
                size_t b = a->is_write ? s->next_any[th] : s->next_write[th];
                if (b == SIZE_MAX)
                    continue;
                if (m->ev[b].t == a->t && th < a->thread)
                    continue; /* the same tie is listed from the lower thread */
                if (emit(s, e[k].val, b) < 0)
                    return -1;
            }
        }
        i = j;
    }
    for (size_t p = 0; p < s->npresent; p++)
        s->next_any[s->present[p]] = s->next_write[s->present[p]] = SIZE_MAX;
    s->npresent = 0;
    return 0;
}

/* Events grouped by address, each group in (t, index) order: two stable
 * sorts, by time and then by address. */
static radix_rec *by_address_and_time(const optimizer_model *m, radix_rec *a, radix_rec *tmp)
{
    for (size_t i = 0; i < m->nev; i++)
        a[i] = (radix_rec){m->ev[i].t, i};
    radix_rec *r = optimizer_radix_sort(a, tmp, m->nev);
    radix_rec *other = r == a ? tmp : a;
    for (size_t i = 0; i < m->nev; i++)
        r[i].key = m->ev[r[i].val].addr_id;
    return optimizer_radix_sort(r, other, m->nev);
}

/* Rank order (delay, va, thread of vb) by two stable sorts, and turn the
 * records into candidates in place (same size). Returns the buffer holding
 * them; the other one is freed. */
static optimizer_candidate *rank(const optimizer_model *m, radix_rec *a, size_t n)
{
    radix_rec *b = malloc((n ? n : 1) * sizeof *b);
    if (!b)
        return NULL;
    radix_rec *r = optimizer_radix_sort(a, b, n);
    radix_rec *other = r == a ? b : a;
    for (size_t i = 0; i < n; i++) {
        uint32_t va = (uint32_t)(r[i].val >> 32), vb = (uint32_t)r[i].val;
        r[i].key = m->ev[vb].t - m->ev[va].t;
    }
    r = optimizer_radix_sort(r, other, n);
    free(r == a ? b : a);
    _Static_assert(sizeof(optimizer_candidate) == sizeof(radix_rec), "in-place conversion");
    optimizer_candidate *c = (optimizer_candidate *)r;
    for (size_t i = 0; i < n; i++) {
        radix_rec x = r[i];
        c[i] = (optimizer_candidate){(uint32_t)(x.val >> 32), (uint32_t)x.val, x.key};
    }
    return c;
}

int optimizer_exact_pairs(const optimizer_model *m, optimizer_candidate **out, size_t *n, char *err,
                          size_t errlen)
{
    size_t nt = m->nthreads ? m->nthreads : 1, ne = m->nev ? m->nev : 1;
    sweep s = {.m = m};
    s.next_any = malloc(nt * sizeof *s.next_any);
    s.next_write = malloc(nt * sizeof *s.next_write);
    s.present = malloc(nt * sizeof *s.present);
    radix_rec *a = malloc(ne * sizeof *a), *tmp = malloc(ne * sizeof *tmp);
    optimizer_candidate *ranked = NULL;
    int failed = !s.next_any || !s.next_write || !s.present || !a || !tmp;
    if (!failed) {
        for (size_t t = 0; t < nt; t++)
            s.next_any[t] = s.next_write[t] = SIZE_MAX;
        radix_rec *byaddr = by_address_and_time(m, a, tmp);
        for (size_t ad = 0; ad < m->naddr && !failed; ad++) {
            size_t b = m->addr_begin[ad];
            failed = sweep_address(&s, byaddr + b, m->addr_begin[ad + 1] - b) < 0;
        }
    }
    free(s.next_any), free(s.next_write), free(s.present), free(a), free(tmp);
    if (!failed && !s.out)
        s.out = malloc(sizeof *s.out);
    if (!failed && s.out)
        ranked = rank(m, s.out, s.count);
    if (!ranked) {
        free(s.out);
        return optimizer_fail(err, errlen, "optimizer: out of memory");
    }
    *out = ranked;
    *n = s.count;
    return 0;
}

/* Fenwick tree over kept events holding the delays placed so far: the shift
 * of event v is the sum over its thread's events up to v. */
static void fenwick_add(uint64_t *f, size_t n, size_t i, uint64_t d)
{
    for (i++; i <= n; i += i & -i)
        f[i] += d;
}

static uint64_t fenwick_prefix(const uint64_t *f, size_t i) /* sum of [0, i) */
{
    uint64_t s = 0;
    for (; i > 0; i -= i & -i)
        s += f[i];
    return s;
}

static uint64_t shift_of(const optimizer_model *m, const uint64_t *f, size_t v)
{
    return fenwick_prefix(f, v + 1) - fenwick_prefix(f, m->thread_begin[m->ev[v].thread]);
}

uint64_t optimizer_pair_nudge(const optimizer_model *m, size_t va, size_t vb, uint64_t order_nudge)
{
    if (va >= m->nev || vb >= m->nev)
        return 0;
    return m->ev[va].is_write != m->ev[vb].is_write ? order_nudge : 0;
}

int optimizer_exact_select(const optimizer_model *m, const optimizer_candidate *cand, size_t n,
                           uint64_t max_delay, uint64_t *delta, optimizer_pair **chosen,
                           size_t *nchosen, char *err, size_t errlen)
{
    return optimizer_exact_select_order(m, cand, n, max_delay, 0, delta, chosen, nchosen, err,
                                        errlen);
}

int optimizer_exact_select_order(const optimizer_model *m, const optimizer_candidate *cand,
                                 size_t n, uint64_t max_delay, uint64_t order_nudge,
                                 uint64_t *delta, optimizer_pair **chosen, size_t *nchosen,
                                 char *err, size_t errlen)
{
    size_t nt = m->nthreads ? m->nthreads : 1;
    uint64_t *fw = calloc(m->nev + 1, sizeof *fw);
    /* free_from[T]: first event of T that no taken pair pins; a new delay in
     * T must go at or after it, so delays in a thread are placed in program
     * order and never move an event a taken pair relies on. */
    size_t *free_from = malloc(nt * sizeof *free_from);
    size_t cap = 64, k = 0;
    optimizer_pair *c = malloc(cap * sizeof *c);
    if (!fw || !free_from || !c)
        goto oom;
    for (uint32_t t = 0; t < m->nthreads; t++)
        free_from[t] = m->thread_begin[t];
    memset(delta, 0, m->nev * sizeof *delta);
    for (size_t i = 0; i < n; i++) {
        size_t va = cand[i].va, vb = cand[i].vb;
        if (va >= m->nev || vb >= m->nev)
            continue;
        const model_event *a = &m->ev[va], *b = &m->ev[vb];
        if (a->thread == b->thread || va < free_from[a->thread])
            continue;
        uint64_t ta = a->t + shift_of(m, fw, va);
        uint64_t tb = b->t + shift_of(m, fw, vb);
        uint64_t nudge = optimizer_pair_nudge(m, va, vb, order_nudge);
        if (tb < ta || (max_delay && tb - ta + nudge > max_delay))
            continue;
        if (k == cap) {
            optimizer_pair *p = realloc(c, 2 * cap * sizeof *c);
            if (!p)
                goto oom;
            c = p, cap *= 2;
        }
        uint64_t d = tb - ta + nudge;
        delta[va] = d;
        fenwick_add(fw, m->nev, va, d);
        free_from[a->thread] = va + 1;
        if (vb + 1 > free_from[b->thread])
            free_from[b->thread] = vb + 1;
        optimizer_pair_fill(m, va, vb, &c[k]);
        c[k].applied = d;
        c[k].aligned_time = tb;
        c[k].nudge = nudge;
        k++;
    }
    free(fw), free(free_from);
    *chosen = c;
    *nchosen = k;
    return 0;
oom:
    free(fw), free(free_from), free(c);
    return optimizer_fail(err, errlen, "optimizer: out of memory");
}
