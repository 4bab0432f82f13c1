/* The race detector's state and the types its files share. */
#ifndef WEFT_RACES_STATE_H
#define WEFT_RACES_STATE_H

#include <stdint.h>
#include <stdlib.h>

#include "weft/races.h"

/* ---- u64 -> u32 hash map (open addressing; value 0 means empty) ------------ */

typedef struct rmap {
    uint64_t *keys;
    uint32_t *vals;
    size_t mask, used;
    unsigned shift; /* 64 - log2(capacity): Fibonacci hashing takes the top bits */
} rmap;

/* A growable array of elements of `size` bytes, n of them in use: room for
 * one more (capacity doubled from `first`). Returns the array, moved or
 * not, or NULL (the old one is left alone) when out of memory. */
void *races_grow(void *v, size_t n, size_t *cap, size_t size, size_t first);

int rmap_init(rmap *m, size_t cap);
void rmap_free(rmap *m);
/* Slot of key (found or the empty one to fill). */
static inline size_t rmap_slot(const rmap *m, uint64_t key)
{
    size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> m->shift);
    while (m->vals[h] && m->keys[h] != key)
        h = (h + 1) & m->mask;
    return h;
}
static inline uint32_t rmap_get(const rmap *m, uint64_t key)
{
    return m->vals[rmap_slot(m, key)];
}
/* Set key to val (non-zero); grows the table. Returns 0 or -1. */
int rmap_put(rmap *m, uint64_t key, uint32_t val);

/* ---- vector clocks ------------------------------------------------------------ */

/* An epoch c@t packs the clock above the thread index: thread indices are
 * below WEFT_TRACE_MAX_THREADS = 2^20. Epoch 0 is the bottom epoch. */
#define EPOCH_SHIFT 20
#define EPOCH_TID(e) ((uint32_t)((e) & ((1u << EPOCH_SHIFT) - 1)))
#define EPOCH_CLOCK(e) ((e) >> EPOCH_SHIFT)
#define EPOCH(c, t) (((uint64_t)(c) << EPOCH_SHIFT) | (t))

typedef struct vclock {
    uint64_t *c;
    uint32_t n; /* entries beyond n are 0 */
} vclock;

static inline uint64_t vc_get(const vclock *v, uint32_t t)
{
    return t < v->n ? v->c[t] : 0;
}
/* Does the access of epoch e happen before a thread with clock v? */
static inline int vc_covers(const vclock *v, uint64_t e)
{
    return EPOCH_CLOCK(e) <= vc_get(v, EPOCH_TID(e));
}
int vc_set(vclock *v, uint32_t t, uint64_t c);
/* dst := dst join src. Returns 1 if dst grew in some entry, 0 if not, -1. */
int vc_join(vclock *dst, const vclock *src);
int vc_copy(vclock *dst, const vclock *src);
void vc_free(vclock *v);

/* ---- shadow memory (races_shadow.c) ------------------------------------------ */

/* One remembered access. */
typedef struct sh_access {
    uint64_t epoch, pc, time, seq;
    uint8_t kind, atomic, size;
    uint8_t local; /* WEFT_EVF_LOCAL: on the accessing thread's own stack */
} sh_access;

/* Read-shared state: one remembered read per thread (clock 0 = none). */
typedef struct sh_readers {
    uint32_t n;
    sh_access r[]; /* r[u].epoch holds u's read clock c@u */
} sh_readers;

/* The FastTrack state of some bytes of one granule (`mask`, bit i = byte i). */
typedef struct sh_cell {
    sh_access w, r;      /* r is meaningful while readers == NULL */
    sh_readers *readers; /* read-shared */
    uint32_t next;       /* next cell of the granule: index + 1 in the pool, 0 = none */
    uint8_t mask;
} sh_cell;

typedef struct sh_granule {
    uint32_t first;      /* first cell: index + 1 in the pool, 0 = none yet */
    uint8_t atomic_mask; /* bytes some atomic instruction touches (prescan) */
} sh_granule;

typedef struct shadow {
    rmap index; /* granule number + 1 -> index + 1 in granules */
    sh_granule *granules;
    size_t ngranules, cap_granules;
    sh_cell *cells;
    size_t ncells, cap_cells;
    uint32_t free_cell; /* freed cells, chained through next */
} shadow;

int shadow_init(shadow *s);
void shadow_free(shadow *s);
/* The index in s->granules of granule number g (the bytes [8g, 8g+8)),
 * created when missing. Returns 0, or -1 when out of memory. */
int shadow_granule_index(shadow *s, uint64_t g, uint32_t *idx);
/* races_atomic.c: mark the program's atomic globals (cfg->binary's debug
 * info) as atomic locations. 0, or -1 when out of memory. */
int races_atomic_globals(weft_races *d, const weft_races_config *cfg);

/* The bytes of granule g that [addr, addr+size) covers, bit i = byte 8g+i. */
static inline uint8_t granule_mask(uint64_t addr, uint64_t size, uint64_t g)
{
    uint64_t start = g << 3;
    uint64_t lo = addr > start ? addr - start : 0;
    uint64_t end = addr + size < addr ? UINT64_MAX : addr + size; /* saturate at the top */
    uint64_t hi = end - start >= 8 ? 8 : end - start;
    return (uint8_t)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* The access being checked. */
typedef struct cur_access {
    uint32_t thread;
    uint64_t epoch;  /* current epoch of the thread */
    const vclock *C; /* the thread's clock */
    sh_access a;
    uint64_t id; /* serial number: one dynamic instance per pc pair */
} cur_access;

/* Called for each race found: prev happened earlier, not before cur. */
typedef int (*race_sink)(void *ctx, const sh_access *prev, uint32_t prev_thread,
                         const cur_access *cur, uint64_t addr);

/* Check and record cur on the bytes `mask` of granule number gno (index gi).
 * Returns 0, or -1 when out of memory (or when the sink fails). */
int shadow_access(shadow *s, uint32_t gi, uint64_t gno, uint8_t mask, const cur_access *cur,
                  race_sink sink, void *ctx);

/* ---- instructions (races_insn.c) ----------------------------------------------- */

typedef struct races_code races_code;
races_code *races_code_open(const char *path, uint64_t start_code, const weft_trace_object *objects,
                            uint32_t nobjects, char *err, size_t errlen);
/* Is addr in a GOT of the program's or its objects' (lazy binding is racy
 * by design)? */
int races_code_in_got(const races_code *c, uint64_t addr);
/* Is pc in the dynamic loader's code? */
int races_code_in_loader(const races_code *c, uint64_t pc);
void races_code_close(races_code *c);
/* weft_races_classify_fn over the code's executable segments. */
unsigned races_code_classify(void *code, uint64_t pc);

/* ---- the detector (races.c, races_tables.c) ---------------------------------- */

typedef struct rthread {
    vclock C;       /* FastTrack's C_t */
    uint64_t epoch; /* E_t = C_t(t)@t */
    /* At each of its clones, in order: its clock and its last write (see
     * on_clone), until the child it made starts. */
    struct clone_snap {
        vclock C;
        uint64_t time; /* of the clone event */
        uint64_t anchor;
        int has_anchor, used;
    } * snaps;
    uint32_t nsnaps;
    size_t cap_snaps;
    /* Where its creator set it up (glibc: its descriptor), for joins. */
    uint64_t anchor;
    int has_anchor;
    uint64_t last_write;
    int has_last_write;
    vclock exit_clock;
    uint64_t exit_time;
    int exited;
    /* In a futex wait: the word, when it began, and the wakers' clocks. */
    vclock pending;
    uint64_t wait_addr, wait_time;
    int waiting, woken;
    int born; /* seen in the trace: C is set */
} rthread;

/* Unordered pc pair -> race index. */
typedef struct pair_table {
    uint64_t *lo, *hi;
    uint32_t *idx; /* index + 1, 0 = empty */
    size_t mask, used;
} pair_table;

int pairs_init(pair_table *p);
void pairs_free(pair_table *p);
/* 0 and *idx if {a, b} is known, -1 if not. */
int pairs_find(const pair_table *p, uint64_t a, uint64_t b, uint32_t *idx);
int pairs_add(pair_table *p, uint64_t a, uint64_t b, uint32_t idx);

typedef struct race_entry {
    weft_race race;
    uint64_t last_id; /* the access that counted the last instance */
} race_entry;

typedef struct anchor {
    uint64_t addr;
    uint32_t thread;
} anchor;

struct weft_races {
    weft_races_config cfg;
    races_code *code;
    rthread *th;
    uint32_t nth, cap_th;
    shadow sh;
    rmap sync_index; /* address of an atomic access -> index + 1 in syncs */
    vclock *syncs;   /* the release clock of each such address */
    size_t nsyncs, cap_syncs;
    rmap insn_cache; /* pc -> classification + 1 */
    rmap lib_cache;  /* pc -> 1 + library_relaxed(pc) */
    pair_table pairs;
    race_entry *races;
    size_t nraces, cap_races;
    uint64_t access_id;
    uint64_t *pcs;
    size_t npcs;
    int pcs_valid;
    anchor *anchors; /* sorted by address when anchors_sorted */
    size_t nanchors, cap_anchors;
    int anchors_sorted;
    uint32_t *exits; /* threads in the order they exited */
    size_t nexits, cap_exits;
    uint32_t *waiters; /* threads in a futex wait */
    size_t nwaiters, cap_waiters;
    /* Each thread's creation time (its creator's clone), from the trace's
     * thread table (weft_races_threads); NULL: unknown. */
    uint64_t *born_at;
    uint32_t nborn_at;
    weft_races_stats stats;
    char error[256];
};

int anchors_add(weft_races *d, uint64_t addr, uint32_t thread);
/* The thread whose anchor is nearest addr, within window bytes (ties: the
 * later thread), or UINT32_MAX. */
uint32_t anchors_nearest(weft_races *d, uint64_t addr, uint64_t window);
int exits_add(weft_races *d, uint32_t thread);
/* The last thread to exit at a time in (after, upto], or UINT32_MAX. */
uint32_t exits_latest_between(const weft_races *d, uint64_t after, uint64_t upto);
int waiters_add(weft_races *d, uint32_t thread);
void waiters_remove(weft_races *d, uint32_t thread);

int races_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
