/* Vector clocks and the hash map the detector keys its state by. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "races_state.h"

int races_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void *races_grow(void *v, size_t n, size_t *cap, size_t size, size_t first)
{
    if (n < *cap)
        return v;
    size_t c = *cap ? 2 * *cap : first;
    void *nv = realloc(v, c * size);
    if (nv)
        *cap = c;
    return nv;
}

int rmap_init(rmap *m, size_t cap)
{
    size_t n = 16;
    unsigned bits = 4;
    while (n < cap)
        n *= 2, bits++;
    m->keys = malloc(n * sizeof *m->keys);
    m->vals = calloc(n, sizeof *m->vals);
    if (!m->keys || !m->vals) {
        free(m->keys), free(m->vals);
        m->keys = NULL, m->vals = NULL;
        return -1;
    }
    m->mask = n - 1;
    m->shift = 64 - bits;
    m->used = 0;
    return 0;
}

void rmap_free(rmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static int rmap_grow(rmap *m)
{
    rmap bigger;
    if (rmap_init(&bigger, 2 * (m->mask + 1)) != 0)
        return -1;
    for (size_t i = 0; i <= m->mask; i++) {
        if (!m->vals[i])
            continue;
        size_t h = rmap_slot(&bigger, m->keys[i]);
        bigger.keys[h] = m->keys[i];
        bigger.vals[h] = m->vals[i];
    }
    bigger.used = m->used;
    rmap_free(m);
    *m = bigger;
    return 0;
}

int rmap_put(rmap *m, uint64_t key, uint32_t val)
{
    /* At most half full: probes stay short for runs of nearby addresses. */
    if (2 * (m->used + 1) > m->mask + 1 && rmap_grow(m) != 0)
        return -1;
    size_t h = rmap_slot(m, key);
    if (!m->vals[h])
        m->used++;
    m->keys[h] = key;
    m->vals[h] = val;
    return 0;
}

static int vc_reserve(vclock *v, uint32_t n)
{
    if (n <= v->n)
        return 0;
    /* Sized in steps so that a clock that grows thread by thread does not
     * reallocate each time. */
    uint32_t cap = 8;
    while (cap < n)
        cap *= 2;
    uint64_t *c = realloc(v->c, (size_t)cap * sizeof *c);
    if (!c)
        return -1;
    memset(c + v->n, 0, (size_t)(cap - v->n) * sizeof *c);
    v->c = c;
    v->n = cap;
    return 0;
}

int vc_set(vclock *v, uint32_t t, uint64_t c)
{
    if (vc_reserve(v, t + 1) != 0)
        return -1;
    v->c[t] = c;
    return 0;
}

int vc_join(vclock *dst, const vclock *src)
{
    uint32_t n = src->n;
    while (n > 0 && src->c[n - 1] == 0)
        n--;
    if (vc_reserve(dst, n) != 0)
        return -1;
    int grew = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (src->c[i] > dst->c[i]) {
            dst->c[i] = src->c[i];
            grew = 1;
        }
    }
    return grew;
}

int vc_copy(vclock *dst, const vclock *src)
{
    if (vc_reserve(dst, src->n) != 0)
        return -1;
    if (src->n)
        memcpy(dst->c, src->c, (size_t)src->n * sizeof *dst->c);
    if (dst->n > src->n)
        memset(dst->c + src->n, 0, (size_t)(dst->n - src->n) * sizeof *dst->c);
    return 0;
}

void vc_free(vclock *v)
{
    free(v->c);
    v->c = NULL;
    v->n = 0;
}
