/* Shadow memory: FastTrack's per-location state (Flanagan and Freund, PLDI
 * 2009, Fig. 2), kept per 8-byte granule. A granule holds a short chain of
 * cells, each with the state of some of its bytes (a byte mask): an access
 * that covers part of a cell splits it, so two accesses conflict exactly
 * when their byte ranges overlap, while the usual aligned access of a whole
 * word or of the same bytes again finds one cell whose mask it matches. */
#include <string.h>

#include "races_state.h"

int shadow_init(shadow *s)
{
    memset(s, 0, sizeof *s);
    return rmap_init(&s->index, 1024);
}

void shadow_free(shadow *s)
{
    for (size_t i = 0; i < s->ncells; i++)
        free(s->cells[i].readers);
    free(s->cells);
    free(s->granules);
    rmap_free(&s->index);
    memset(s, 0, sizeof *s);
}

int shadow_granule_index(shadow *s, uint64_t g, uint32_t *idx)
{
    uint64_t key = g + 1;
    size_t h = rmap_slot(&s->index, key);
    if (s->index.vals[h]) {
        *idx = s->index.vals[h] - 1;
        return 0;
    }
    sh_granule *v = races_grow(s->granules, s->ngranules, &s->cap_granules, sizeof *v, 1024);
    if (!v)
        return -1;
    s->granules = v;
    if (s->ngranules >= UINT32_MAX - 1 || rmap_put(&s->index, key, (uint32_t)s->ngranules + 1))
        return -1;
    memset(&s->granules[s->ngranules], 0, sizeof *s->granules);
    *idx = (uint32_t)s->ngranules++;
    return 0;
}

/* A new cell (index + 1), zeroed. */
static uint32_t cell_new(shadow *s)
{
    uint32_t id = s->free_cell;
    if (id) {
        s->free_cell = s->cells[id - 1].next;
    } else {
        sh_cell *v = s->ncells < UINT32_MAX - 1
                         ? races_grow(s->cells, s->ncells, &s->cap_cells, sizeof *v, 1024)
                         : NULL;
        if (!v)
            return 0;
        s->cells = v;
        id = (uint32_t)++s->ncells;
    }
    memset(&s->cells[id - 1], 0, sizeof(sh_cell));
    return id;
}

static sh_readers *readers_new(uint32_t n)
{
    sh_readers *r = calloc(1, sizeof *r + (size_t)n * sizeof(sh_access));
    if (r)
        r->n = n;
    return r;
}

static sh_readers *readers_copy(const sh_readers *r)
{
    sh_readers *c = readers_new(r->n);
    if (c)
        memcpy(c->r, r->r, (size_t)r->n * sizeof(sh_access));
    return c;
}

/* Make room for thread t's entry. */
static int readers_fit(sh_readers **rp, uint32_t t)
{
    if (t < (*rp)->n)
        return 0;
    uint32_t n = (*rp)->n;
    while (n <= t)
        n *= 2;
    sh_readers *r = realloc(*rp, sizeof *r + (size_t)n * sizeof(sh_access));
    if (!r)
        return -1;
    memset(&r->r[r->n], 0, (size_t)(n - r->n) * sizeof(sh_access));
    r->n = n;
    *rp = r;
    return 0;
}

/* Atomic against atomic is never a race (C11: no data race between atomic
 * operations); anything else unordered is. */
static int report(const sh_access *prev, const cur_access *cur, uint64_t addr, race_sink sink,
                  void *ctx)
{
    if (prev->atomic && cur->a.atomic)
        return 0;
    return sink(ctx, prev, EPOCH_TID(prev->epoch), cur, addr);
}

/* FastTrack's read rules on one cell. */
static int cell_read(sh_cell *c, const cur_access *cur, uint64_t addr, race_sink sink, void *ctx)
{
    const vclock *C = cur->C;
    uint32_t t = cur->thread;
    /* [FT read same epoch], and its extension to read-shared cells. */
    sh_access *same = NULL;
    if (!c->readers && c->r.epoch == cur->epoch)
        same = &c->r;
    else if (c->readers && t < c->readers->n && c->readers->r[t].epoch == cur->epoch)
        same = &c->readers->r[t];
    if (same) {
        /* Nothing to check; remember the latest read (and a plain one over
         * an atomic one, which can race where the atomic one could not). */
        if (!cur->a.atomic || same->atomic)
            *same = cur->a;
        return 0;
    }
    /* Every other read rule checks the last write first. */
    if (!vc_covers(C, c->w.epoch) && report(&c->w, cur, addr, sink, ctx) != 0)
        return -1;
    if (c->readers) { /* [FT read shared] */
        if (readers_fit(&c->readers, t) != 0)
            return -1;
        c->readers->r[t] = cur->a;
    } else if (vc_covers(C, c->r.epoch)) { /* [FT read exclusive] */
        c->r = cur->a;
    } else { /* [FT read share]: two concurrent reads, keep both */
        uint32_t u = EPOCH_TID(c->r.epoch);
        sh_readers *r = readers_new(8);
        if (!r || readers_fit(&r, u > t ? u : t) != 0) {
            free(r);
            return -1;
        }
        r->r[u] = c->r;
        r->r[t] = cur->a;
        c->readers = r;
    }
    return 0;
}

/* FastTrack's write rules on one cell (an atomic read-modify-write is a
 * write here: its read conflicts with nothing its write does not). */
static int cell_write(sh_cell *c, const cur_access *cur, uint64_t addr, race_sink sink, void *ctx)
{
    const vclock *C = cur->C;
    if (c->w.epoch == cur->epoch) { /* [FT write same epoch]: keep the latest write */
        if (!cur->a.atomic || c->w.atomic)
            c->w = cur->a;
        return 0;
    }
    if (c->readers) { /* [FT write shared]: every thread's read */
        for (uint32_t u = 0; u < c->readers->n; u++) {
            const sh_access *r = &c->readers->r[u];
            if (r->epoch && !vc_covers(C, r->epoch) && report(r, cur, addr, sink, ctx) != 0)
                return -1;
        }
    } else if (!vc_covers(C, c->r.epoch) && report(&c->r, cur, addr, sink, ctx) != 0) {
        return -1; /* [FT write exclusive] */
    }
    if (!vc_covers(C, c->w.epoch) && report(&c->w, cur, addr, sink, ctx) != 0)
        return -1;
    c->w = cur->a;
    if (c->readers) { /* back to an epoch: this write is ordered after all those reads */
        free(c->readers);
        c->readers = NULL;
        memset(&c->r, 0, sizeof c->r);
    }
    return 0;
}

/* Split the bytes outside `keep` off cell id into a new cell after it. */
static int cell_split(shadow *s, uint32_t id, uint8_t keep)
{
    uint32_t nid = cell_new(s);
    if (!nid)
        return -1;
    sh_cell *c = &s->cells[id - 1], *n = &s->cells[nid - 1];
    *n = *c;
    if (c->readers && !(n->readers = readers_copy(c->readers)))
        return -1;
    n->mask = c->mask & (uint8_t)~keep;
    c->mask &= keep;
    c->next = nid;
    return 0;
}

/* After a write of the whole granule its cells often hold the same state:
 * fold them back into one, so that the next access takes the fast path. */
static void granule_fold(shadow *s, sh_granule *g)
{
    sh_cell *first = &s->cells[g->first - 1];
    if (!first->next || first->readers)
        return;
    for (uint32_t id = first->next; id; id = s->cells[id - 1].next) {
        const sh_cell *c = &s->cells[id - 1];
        if (c->readers || memcmp(&c->w, &first->w, sizeof c->w) ||
            memcmp(&c->r, &first->r, sizeof c->r))
            return;
    }
    uint32_t id = first->next;
    while (id) {
        sh_cell *c = &s->cells[id - 1];
        uint32_t next = c->next;
        first->mask |= c->mask;
        c->next = s->free_cell;
        s->free_cell = id;
        id = next;
    }
    first->next = 0;
}

int shadow_access(shadow *s, uint32_t gi, uint64_t gno, uint8_t mask, const cur_access *cur,
                  race_sink sink, void *ctx)
{
    sh_granule *g = &s->granules[gi];
    uint64_t base = gno << 3;
    int writes = cur->a.kind != WEFT_EV_READ;
    uint8_t covered = 0;
    uint32_t last = 0; /* the chain's last cell: cells may move, so no pointer */
    for (uint32_t id = g->first; id; last = id, id = s->cells[id - 1].next) {
        uint8_t ov = s->cells[id - 1].mask & mask;
        if (!ov)
            continue;
        if (ov != s->cells[id - 1].mask && cell_split(s, id, ov) != 0)
            return -1;
        covered |= ov;
        sh_cell *c = &s->cells[id - 1]; /* the pool may have moved */
        uint64_t addr = base + (uint64_t)__builtin_ctz(ov);
        if ((writes ? cell_write(c, cur, addr, sink, ctx) : cell_read(c, cur, addr, sink, ctx)))
            return -1;
    }
    uint8_t rest = mask & (uint8_t)~covered;
    if (rest) { /* bytes never accessed before: nothing to check */
        uint32_t nid = cell_new(s);
        if (!nid)
            return -1;
        sh_cell *c = &s->cells[nid - 1];
        c->mask = rest;
        if (writes)
            c->w = cur->a;
        else
            c->r = cur->a;
        if (last)
            s->cells[last - 1].next = nid;
        else
            g->first = nid;
    }
    if (writes && mask == 0xff)
        granule_fold(s, g);
    return 0;
}
