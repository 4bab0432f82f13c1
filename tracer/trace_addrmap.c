/* Open-addressing hash map from 64-bit keys (addresses, pcs) to 64-bit
 * values. The views key per-address state by it and the symbol cache keys
 * pcs by it; both see millions of lookups on few distinct keys. */
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t key, size_t cap)
{
    /* Fibonacci hashing: addresses share low zero bits and high prefixes. */
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static int grow(trc_addrmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = malloc(cap * sizeof *keys);
    uint64_t *vals = malloc(cap * sizeof *vals);
    uint8_t *used = calloc(cap, 1);
    if (!keys || !vals || !used) {
        free(keys);
        free(vals);
        free(used);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        size_t s = slot_of(m->keys[i], cap);
        while (used[s])
            s = (s + 1) & (cap - 1);
        used[s] = 1;
        keys[s] = m->keys[i];
        vals[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    free(m->used);
    m->keys = keys;
    m->vals = vals;
    m->used = used;
    m->cap = cap;
    return 0;
}

uint64_t *trc_addrmap_find(const trc_addrmap *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t s = slot_of(key, m->cap);; s = (s + 1) & (m->cap - 1)) {
        if (!m->used[s])
            return NULL;
        if (m->keys[s] == key)
            return &m->vals[s];
    }
}

uint64_t *trc_addrmap_get(trc_addrmap *m, uint64_t key, bool *inserted)
{
    uint64_t *v = trc_addrmap_find(m, key);
    if (inserted)
        *inserted = false;
    if (v)
        return v;
    if ((m->n + 1) * 4 > m->cap * 3 && grow(m) < 0) /* keep load below 3/4 */
        return NULL;
    size_t s = slot_of(key, m->cap);
    while (m->used[s])
        s = (s + 1) & (m->cap - 1);
    m->used[s] = 1;
    m->keys[s] = key;
    m->vals[s] = 0;
    m->n++;
    if (inserted)
        *inserted = true;
    return &m->vals[s];
}

void trc_addrmap_free(trc_addrmap *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof *m);
}
