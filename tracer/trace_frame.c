/* Version 2 frames: records as seven byte streams with per-thread
 * predictions, compressed by zstd (the compression itself is in
 * trace_blockout.c and trace_read.c). Layout: docs/trace-format.md.
 *
 * Both sides run the same predictor over the same records, so the tables
 * evolve identically: a table slot is a cache line's worth of history that
 * the next record either matches (one tag bit) or replaces. */
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { S_TAG, S_THREAD, S_TIME, S_SIZE, S_FLAGS, S_ADDR, S_PC };
/* Worst case bytes per record of each stream (they add up to REC_MAX). */
static const uint8_t stream_max[FRAME_STREAMS] = {1, 5, 10, 1, 3, 10, 10};
#define REC_P 0x80u /* version 2: pc, time step, size and flags as predicted */

/* A table's 2^PRED_BITS entries are chunks of 2^PRED_CHUNK_BITS, each made
 * zeroed the first time a record hashes into it, side by side in one
 * mapping of fresh pages. A table of its own would be 2.6 MB that a short
 * trace's few hundred pcs scatter over hundreds of pages, each a page
 * fault: in a campaign's run that was a fifth of the run's time. */
#define PRED_CHUNK_BITS 4
#define PRED_CHUNK ((size_t)1 << PRED_CHUNK_BITS)
#define PRED_CHUNKS ((size_t)1 << (PRED_BITS - PRED_CHUNK_BITS))
#define PRED_ARENA_SIZE                                                                            \
    (2 * PRED_CHUNKS * sizeof(trc_pred *) + 2 * ((size_t)1 << PRED_BITS) * sizeof(trc_pred))

static trc_pred *pred_chunk(trc_frame *f, trc_pred **slot)
{
    *slot = (trc_pred *)(f->arena + f->arena_used);
    f->arena_used += PRED_CHUNK * sizeof(trc_pred);
    return *slot;
}

int trc_frame_init(trc_frame *f, uint32_t nslots)
{
    memset(f, 0, sizeof *f);
    f->nslots = nslots;
    size_t n = nslots ? nslots : 1;
    f->slot_gen = calloc(n, sizeof *f->slot_gen);
    f->prev_pc = calloc(n, sizeof *f->prev_pc);
    f->prev_addr = calloc(n, sizeof *f->prev_addr);
    f->prev_time = calloc(n, sizeof *f->prev_time);
    void *m =
        mmap(NULL, PRED_ARENA_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
        f->arena = m;
        f->next = (trc_pred **)f->arena;
        f->addr = f->next + PRED_CHUNKS;
        f->arena_used = 2 * PRED_CHUNKS * sizeof(trc_pred *);
    }
    if (!f->slot_gen || !f->prev_pc || !f->prev_addr || !f->prev_time || !f->arena) {
        trc_frame_free(f);
        return -1;
    }
    return 0;
}

void trc_frame_free(trc_frame *f)
{
    free(f->slot_gen);
    free(f->prev_pc);
    free(f->prev_addr);
    free(f->prev_time);
    if (f->arena)
        munmap(f->arena, PRED_ARENA_SIZE);
    free(f->s[0]);
    memset(f, 0, sizeof *f);
}

/* Generation stamps make a reset O(1) whatever the thread count. */
void trc_frame_reset(trc_frame *f, uint64_t base_time)
{
    f->base_time = base_time;
    f->thread = 0;
    if (++f->gen == 0) {
        memset(f->slot_gen, 0, (f->nslots ? f->nslots : 1) * sizeof *f->slot_gen);
        for (size_t c = 0; c < 2 * PRED_CHUNKS; c++)
            for (size_t i = 0; f->next[c] && i < PRED_CHUNK; i++)
                f->next[c][i].gen = 0; /* f->addr is f->next + PRED_CHUNKS */
        f->gen = 1;
    }
}

int trc_frame_alloc_streams(trc_frame *f, uint32_t events)
{
    uint8_t *b = malloc((size_t)events * REC_MAX);
    if (!b)
        return -1;
    for (int i = 0; i < FRAME_STREAMS; i++) {
        f->s[i] = f->p[i] = b;
        b += (size_t)events * stream_max[i];
    }
    return 0;
}

static inline uint32_t frame_slot(trc_frame *f, uint32_t thread)
{
    if (f->slot_gen[thread] != f->gen) {
        f->slot_gen[thread] = f->gen;
        f->prev_pc[thread] = 0;
        f->prev_addr[thread] = 0;
        f->prev_time[thread] = f->base_time;
    }
    return thread;
}

static inline trc_pred *pred_at(trc_frame *f, trc_pred **tab, uint32_t thread, uint64_t pc,
                                uint64_t mul)
{
    size_t i = ((pc * mul) ^ (thread * 0xc2b2ae3d27d4eb4full)) >> (64 - PRED_BITS);
    trc_pred *c = tab[i >> PRED_CHUNK_BITS];
    if (__builtin_expect(!c, 0))
        c = pred_chunk(f, &tab[i >> PRED_CHUNK_BITS]);
    return &c[i & (PRED_CHUNK - 1)];
}

static inline trc_pred *next_at(trc_frame *f, uint32_t t, uint64_t prev_pc)
{
    return pred_at(f, f->next, t, prev_pc, 0x9e3779b97f4a7c15ull);
}

static inline trc_pred *addr_at(trc_frame *f, uint32_t t, uint64_t pc)
{
    return pred_at(f, f->addr, t, pc, 0xff51afd7ed558ccdull);
}

static inline bool pred_valid(const trc_frame *f, const trc_pred *e, uint32_t t, uint64_t pc)
{
    return e->gen == f->gen && e->thread == t && e->pc == pc;
}

/* The address a record is stored against: its pc's previous address plus
 * that pc's last stride, else the thread's previous address. */
static inline uint64_t addr_base(const trc_frame *f, const trc_pred *a, bool valid, uint32_t s)
{
    return valid ? a->a + a->b : f->prev_addr[s];
}

static inline void addr_learn(trc_frame *f, trc_pred *a, bool valid, uint32_t t, uint64_t pc,
                              uint64_t addr)
{
    a->b = valid ? addr - a->a : 0;
    a->a = addr;
    a->pc = pc;
    a->thread = t;
    a->gen = f->gen;
}

static inline void frame_put(trc_frame *f, const trc_rec *r)
{
    uint32_t t = r->thread, s = frame_slot(f, t);
    uint8_t tag = r->kind & 0x0f;
    if (t != f->thread) {
        tag |= REC_T;
        f->p[S_THREAD] = trc_put_varint(f->p[S_THREAD], t);
    }
    uint64_t dt = r->time - f->prev_time[s];
    trc_pred *n = next_at(f, t, f->prev_pc[s]);
    if (pred_valid(f, n, t, f->prev_pc[s]) && n->a == r->pc && n->b == dt && n->kind == r->kind &&
        n->size == r->size && n->flags == r->flags) {
        tag |= REC_P;
    } else {
        f->p[S_TIME] = trc_put_varint(f->p[S_TIME], dt);
        if (r->size) {
            tag |= REC_S;
            *f->p[S_SIZE]++ = r->size;
        }
        if (r->flags) {
            tag |= REC_F;
            f->p[S_FLAGS] = trc_put_varint(f->p[S_FLAGS], r->flags);
        }
        f->p[S_PC] = trc_put_varint(f->p[S_PC], trc_zigzag(r->pc - f->prev_pc[s]));
        *n = (trc_pred){.pc = f->prev_pc[s],
                        .a = r->pc,
                        .b = dt,
                        .thread = t,
                        .gen = f->gen,
                        .kind = r->kind,
                        .size = r->size,
                        .flags = r->flags};
    }
    trc_pred *a = addr_at(f, t, r->pc);
    bool av = pred_valid(f, a, t, r->pc);
    f->p[S_ADDR] = trc_put_varint(f->p[S_ADDR], trc_zigzag(r->addr - addr_base(f, a, av, s)));
    addr_learn(f, a, av, t, r->pc, r->addr);
    *f->p[S_TAG]++ = tag;
    f->prev_pc[s] = r->pc;
    f->prev_addr[s] = r->addr;
    f->prev_time[s] = r->time;
    f->thread = t;
}

void trc_frame_put(trc_frame *f, const trc_rec *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        frame_put(f, &r[i]);
}

size_t trc_frame_finish(trc_frame *f, uint8_t *out)
{
    uint8_t *o = out + FRAME_STREAMS * 4;
    for (int i = 0; i < FRAME_STREAMS; i++) {
        size_t len = (size_t)(f->p[i] - f->s[i]);
        put_u32(out + 4 * i, (uint32_t)len);
        memcpy(o, f->s[i], len);
        o += len;
        f->p[i] = f->s[i];
    }
    return (size_t)(o - out);
}

int trc_frame_open(trc_frame *f, const uint8_t *raw, size_t raw_len, uint64_t base_time,
                   const char **why)
{
    if (raw_len < FRAME_STREAMS * 4) {
        *why = "frame too short";
        return -1;
    }
    const uint8_t *p = raw + FRAME_STREAMS * 4;
    size_t left = raw_len - FRAME_STREAMS * 4;
    for (int i = 0; i < FRAME_STREAMS; i++) {
        uint32_t len = get_u32(raw + 4 * i);
        if (len > left) {
            *why = "stream lengths exceed the frame";
            return -1;
        }
        f->p[i] = (uint8_t *)p; /* read only from here on */
        f->end[i] = p + len;
        p += len;
        left -= len;
    }
    if (left) {
        *why = "trailing bytes";
        return -1;
    }
    trc_frame_reset(f, base_time);
    return 0;
}

static inline int get_v(trc_frame *f, int s, uint64_t *v)
{
    const uint8_t *q = trc_get_varint(f->p[s], f->end[s], v);
    if (!q)
        return -1;
    f->p[s] = (uint8_t *)q;
    return 0;
}

/* The fields a hit takes from the prediction, or the stored ones. */
static int get_unpredicted(trc_frame *f, uint8_t tag, uint32_t s, weft_event *ev, uint64_t *dt,
                           const char **why)
{
    uint64_t v;
    if (get_v(f, S_TIME, dt) < 0) {
        *why = "bad time field";
        return -1;
    }
    if (tag & REC_S) {
        if (f->p[S_SIZE] >= f->end[S_SIZE] || *f->p[S_SIZE] == 0 || *f->p[S_SIZE] > 64) {
            *why = "bad size field";
            return -1;
        }
        ev->size = *f->p[S_SIZE]++;
    }
    if (tag & REC_F) {
        if (get_v(f, S_FLAGS, &v) < 0 || v == 0 || v > UINT16_MAX) {
            *why = "bad flags field";
            return -1;
        }
        ev->flags = (uint16_t)v;
    }
    if (get_v(f, S_PC, &v) < 0) {
        *why = "bad pc field";
        return -1;
    }
    ev->pc = f->prev_pc[s] + trc_unzigzag(v);
    return 0;
}

int trc_frame_get(trc_frame *f, weft_event *ev, const char **why)
{
    uint64_t v, dt;
    if (f->p[S_TAG] >= f->end[S_TAG]) {
        *why = "record runs past the frame";
        return -1;
    }
    uint8_t tag = *f->p[S_TAG]++;
    if ((tag & 0x0f) >= WEFT_EV_KIND_COUNT) {
        *why = "unknown event kind";
        return -1;
    }
    memset(ev, 0, sizeof *ev);
    ev->kind = tag & 0x0f;
    uint32_t t = f->thread;
    if (tag & REC_T) {
        if (get_v(f, S_THREAD, &v) < 0 || v > UINT32_MAX) {
            *why = "bad thread field";
            return -1;
        }
        if (v >= f->nslots) {
            *why = "thread id out of range";
            return -1;
        }
        t = (uint32_t)v;
    }
    uint32_t s = frame_slot(f, t);
    trc_pred *n = next_at(f, t, f->prev_pc[s]);
    if (tag & REC_P) {
        if ((tag & (REC_S | REC_F)) || !pred_valid(f, n, t, f->prev_pc[s]) || n->kind != ev->kind) {
            *why = "prediction without history";
            return -1;
        }
        ev->pc = n->a;
        dt = n->b;
        ev->size = n->size;
        ev->flags = n->flags;
    } else {
        if (get_unpredicted(f, tag, s, ev, &dt, why) < 0)
            return -1;
        *n = (trc_pred){.pc = f->prev_pc[s],
                        .a = ev->pc,
                        .b = dt,
                        .thread = t,
                        .gen = f->gen,
                        .kind = ev->kind,
                        .size = ev->size,
                        .flags = ev->flags};
    }
    if (f->prev_time[s] + dt < f->prev_time[s]) {
        *why = "bad time field";
        return -1;
    }
    ev->time = f->prev_time[s] + dt;
    trc_pred *a = addr_at(f, t, ev->pc);
    bool av = pred_valid(f, a, t, ev->pc);
    if (get_v(f, S_ADDR, &v) < 0) {
        *why = "bad address field";
        return -1;
    }
    ev->addr = addr_base(f, a, av, s) + trc_unzigzag(v);
    addr_learn(f, a, av, t, ev->pc, ev->addr);
    ev->thread = t;
    f->prev_pc[s] = ev->pc;
    f->prev_addr[s] = ev->addr;
    f->prev_time[s] = ev->time;
    f->thread = t;
    return 0;
}

int trc_frame_done(const trc_frame *f, const char **why)
{
    for (int i = 0; i < FRAME_STREAMS; i++)
        if (f->p[i] != f->end[i]) {
            *why = "trailing bytes";
            return -1;
        }
    return 0;
}
