/* The speculation check's shadow memory (see spec_shadow.h for the rule).
 *
 * Per 8-byte guest word, 64 bytes: for writes and for reads separately, the
 * largest key seen and the largest key from any other thread than that one,
 * each with its pc. That is enough because a check only ever asks for the
 * largest key among other threads' conflicting accesses. Each word has its
 * own spin lock (the top bit of its first time): threads that touch different
 * words never meet, and the critical section is a few compares.
 *
 * Eight times the guest's memory is more than the host's caches hold, and
 * the misses were most of the check's time, while most lines of a program
 * are only ever touched by one thread. So a 64-byte guest line starts in one
 * 64-byte record of its owner, the first thread that touches it: its largest
 * write and read keys and, per word, when it last wrote and read it, in 255
 * steps from the owner's first access, each step 2^shift cycles (the shift
 * grows as the line lives on, rounding up). Its accesses meet no other
 * thread's and are not checked. The first access of another thread gives the
 * line its words, those the owner touched seeded with the owner's key at the
 * end of the word's step (or its largest key, if earlier): at least as large
 * as the owner's on that word, so every pair the words would have caught is
 * still caught. A word's own time matters: pbzip2's workers store into a
 * stream object once per input byte, and a malloc of the writer thread read
 * an allocator header on the same line, which the owner had written long
 * before; with the line's largest key seeded on every word that read was
 * blamed on the per-byte store, gated then 16 million times a run. The seed
 * is late by less than a step, and its pc is the owner's last of the kind
 * on the line, not necessarily the word's.
 *
 * The owner records its accesses without a locked instruction (about half
 * of the check's time went to that one fetch-or): it says it is busy in its
 * cursor, then reads the line's state; a thread taking the line over sets
 * the state's lock bit, then has every thread fence (membarrier), then waits
 * for the owner not to be busy. Either the owner's busy flag is seen, or its
 * read of the state comes after the fence and sees the lock: it never
 * writes a record the taker has already copied. Without membarrier the owner
 * takes the lock as well. Pages of 64 line records are allocated on first
 * touch and found through an open-addressing table that is read without
 * locks. */
#include "spec_shadow.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PC_MASK ((1ull << 48) - 1)
#define LOCK_BIT (1ull << 63)
#define WORDS_PER_LINE (1u << (SPEC_LINE_SHIFT - SPEC_WORD_SHIFT))
#define LINES_PER_PAGE (1u << (SPEC_PAGE_SHIFT - SPEC_LINE_SHIFT))
#define TABLE_BITS 20

/* A line's state: untouched, owned by one PE, or shared (words in use; final). */
#define LINE_OWNED (1ull << 16)
#define LINE_SHARED (1ull << 17)
#define LINE_PE_MASK 0xffffull

typedef struct entry {
    uint64_t t;
    uint64_t pcpe; /* pc in bits 0..47 (bit 0: gated), PE in 48..63; 0 = empty */
} entry;

typedef struct word {
    _Atomic uint64_t w1_t; /* w1's time, with LOCK_BIT while a thread checks this word */
    uint64_t w1_pcpe;
    entry w2, r1, r2;
} word;

#define BASE_TIME ((1ull << 56) - 1)
#define BASE_SHIFT 56
#define STEPS 255u

typedef struct line {
    _Atomic uint64_t state; /* LINE_* with the owner's PE, LOCK_BIT while changed */
    entry w, r;             /* the owner's largest write and read keys */
    union {
        uint64_t base; /* while owned: the owner's first time, and the shift above BASE_SHIFT */
        word *words;   /* once shared (read after an acquire of a shared state) */
    };
    /* Per word, the step of the owner's last write and read: the access was
     * at most base + (step << shift) - 1; 0: not touched. */
    uint8_t wstep[WORDS_PER_LINE], rstep[WORDS_PER_LINE];
} line;

_Static_assert(sizeof(line) == 64, "a line record is one host cache line");
_Static_assert(sizeof(line) * LINES_PER_PAGE == SPEC_PAGE_RECORD_BYTES, "spec_shadow.h's sizes");
_Static_assert(sizeof(word) * WORDS_PER_LINE == SPEC_LINE_WORDS_BYTES, "spec_shadow.h's sizes");

struct spec_shadow {
    _Atomic uint64_t keys[1u << TABLE_BITS]; /* page number + 1; 0 = free */
    _Atomic(line *) pages[1u << TABLE_BITS];
    pthread_mutex_t insert_lock;
    _Atomic size_t bytes;
    size_t max_bytes;
    /* Each PE's cursor, whose busy flag a taker of its lines waits on (the
     * latest one its PE used, if qemu gave the PE's vCPU to a later thread). */
    _Atomic(spec_cursor *) owners[SPEC_MAX_PE + 1];
    int fenced; /* membarrier works: owners record without locking */
};

spec_shadow *spec_shadow_new(size_t max_bytes)
{
    spec_shadow *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->insert_lock, NULL);
    s->max_bytes = max_bytes;
    s->fenced = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    return s;
}

void spec_shadow_free(spec_shadow *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < (1u << TABLE_BITS); i++) {
        line *p = atomic_load(&s->pages[i]);
        for (unsigned l = 0; p && l < LINES_PER_PAGE; l++)
            if (atomic_load(&p[l].state) & LINE_SHARED)
                free(p[l].words);
        free(p);
    }
    pthread_mutex_destroy(&s->insert_lock);
    free(s);
}

size_t spec_shadow_bytes(const spec_shadow *s)
{
    return atomic_load(&s->bytes);
}

/* size zeroed bytes aligned to a host cache line, counted against the
 * budget; NULL if they do not fit or cannot be had. */
static void *budget_alloc(spec_shadow *s, size_t size)
{
    size_t old = atomic_load(&s->bytes);
    do {
        if (old + size > s->max_bytes)
            return NULL;
    } while (!atomic_compare_exchange_weak(&s->bytes, &old, old + size));
    void *p = aligned_alloc(64, size);
    if (!p) {
        atomic_fetch_sub(&s->bytes, size);
        return NULL;
    }
    return memset(p, 0, size);
}

static size_t slot_of(uint64_t page)
{
    return (size_t)((page * 0x9e3779b97f4a7c15ull) >> (64 - TABLE_BITS));
}

static line *find(spec_shadow *s, uint64_t page)
{
    for (size_t i = slot_of(page), n = 0; n < (1u << TABLE_BITS);
         i = (i + 1) & ((1u << TABLE_BITS) - 1), n++) {
        uint64_t k = atomic_load_explicit(&s->keys[i], memory_order_acquire);
        if (k == page + 1)
            return atomic_load_explicit(&s->pages[i], memory_order_acquire);
        if (k == 0)
            return NULL;
    }
    return NULL;
}

/* NULL when the budget or the table is exhausted. */
static line *find_or_add(spec_shadow *s, uint64_t page)
{
    line *p = find(s, page);
    if (p)
        return p;
    pthread_mutex_lock(&s->insert_lock);
    p = find(s, page); /* another thread may have added it meanwhile */
    size_t size = LINES_PER_PAGE * sizeof(line);
    if (!p) {
        size_t i = slot_of(page), n = 0;
        while (atomic_load(&s->keys[i]) != 0 && n++ < (1u << TABLE_BITS) / 2)
            i = (i + 1) & ((1u << TABLE_BITS) - 1);
        if (n < (1u << TABLE_BITS) / 2 && (p = budget_alloc(s, size)) != NULL) {
            /* The records before the key: a reader that sees the key sees them. */
            atomic_store_explicit(&s->pages[i], p, memory_order_release);
            atomic_store_explicit(&s->keys[i], page + 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&s->insert_lock);
    return p;
}

/* Sets LOCK_BIT in *x, waiting while another thread holds it; returns the rest. */
static uint64_t lock_bits(_Atomic uint64_t *x)
{
    for (unsigned spins = 0;; spins++) {
        uint64_t old = atomic_fetch_or_explicit(x, LOCK_BIT, memory_order_acquire);
        if (!(old & LOCK_BIT))
            return old;
        if (spins % 64 == 63)
            sched_yield(); /* the holder was preempted */
    }
}

static int valid(const entry *e)
{
    return (e->pcpe & PC_MASK) != 0;
}

static uint32_t pe_of(const entry *e)
{
    return (uint32_t)(e->pcpe >> 48);
}

static int key_lt(uint64_t t1, int64_t pe1, uint64_t t2, int64_t pe2)
{
    return t1 < t2 || (t1 == t2 && pe1 < pe2);
}

static int entry_lt(const entry *a, const entry *b)
{
    return key_lt(a->t, pe_of(a), b->t, pe_of(b));
}

/* Keep e1 the largest key, e2 the largest from a thread other than e1's. */
static void pair_add(entry *e1, entry *e2, const entry *n)
{
    if (!valid(e1)) {
        *e1 = *n;
    } else if (pe_of(e1) == pe_of(n)) {
        if (entry_lt(e1, n))
            *e1 = *n;
    } else if (entry_lt(e1, n)) {
        *e2 = *e1;
        *e1 = *n;
    } else if (!valid(e2) || entry_lt(e2, n)) {
        *e2 = *n;
    }
}

/* The largest key of a thread other than pe in the pair, or NULL. */
static const entry *pair_other(const entry *e1, const entry *e2, uint32_t pe)
{
    if (valid(e1) && pe_of(e1) != pe)
        return e1;
    return valid(e2) ? e2 : NULL;
}

static void add_blame(uint64_t *blame, int *n, uint64_t pc)
{
    for (int i = 0; i < *n; i++)
        if (blame[i] == pc)
            return;
    if (*n < SPEC_MAX_BLAMES)
        blame[(*n)++] = pc;
}

static void check_word(word *w, const spec_access *a, entry me, uint64_t *blame, int *nblame)
{
    uint64_t t1 = lock_bits(&w->w1_t);
    entry w1 = {t1, w->w1_pcpe};
    const entry *m = pair_other(&w1, &w->w2, a->pe);
    if (a->write) {
        const entry *r = pair_other(&w->r1, &w->r2, a->pe);
        if (r && (!m || entry_lt(m, r)))
            m = r;
    }
    if (m) {
        if (entry_lt(&me, m)) {
            /* m is later in virtual time, yet already done: its gate orders
             * this pair. Pairs of this access with earlier ones are hidden
             * behind m, so an ungated one is blamed too: a gate more costs
             * less than another run. */
            add_blame(blame, nblame, m->pcpe & PC_MASK);
            if (!a->gated) /* a gated one is ordered after every earlier access */
                add_blame(blame, nblame, me.pcpe & PC_MASK);
        } else if (a->sync_pe < 0 || !key_lt(m->t, pe_of(m), a->sync_t, a->sync_pe))
            add_blame(blame, nblame, me.pcpe & PC_MASK); /* nothing ordered it after m */
    }
    if (a->write)
        pair_add(&w1, &w->w2, &me);
    else
        pair_add(&w->r1, &w->r2, &me);
    w->w1_pcpe = w1.pcpe;
    atomic_store_explicit(&w->w1_t, w1.t & ~LOCK_BIT, memory_order_release);
}

/* The owner's access: its largest key of the kind, and the words' steps. */
static __attribute__((noinline, cold)) uint64_t coarser_steps(line *l, uint64_t d, uint64_t shift)
{
    while (d >> shift >= STEPS) {
        shift++;
        for (unsigned i = 0; i < WORDS_PER_LINE; i++) { /* rounding up: still late enough */
            l->wstep[i] = (uint8_t)((l->wstep[i] + 1) >> 1);
            l->rstep[i] = (uint8_t)((l->rstep[i] + 1) >> 1);
        }
    }
    l->base = (l->base & BASE_TIME) | shift << BASE_SHIFT;
    return shift;
}

static inline void owner_add(line *l, const entry *me, int write, uint8_t mask)
{
    entry *e = write ? &l->w : &l->r;
    if (!valid(e) || entry_lt(e, me))
        *e = *me;
    uint64_t base = l->base & BASE_TIME, shift = l->base >> BASE_SHIFT;
    uint64_t d = me->t > base ? me->t - base : 0; /* a later thread on the PE may be earlier */
    if (__builtin_expect(d >> shift >= STEPS, 0))
        shift = coarser_steps(l, d, shift);
    uint8_t step = (uint8_t)((d >> shift) + 1), *steps = write ? l->wstep : l->rstep;
    for (unsigned m = mask; m; m &= m - 1) { /* nearly always one word */
        unsigned i = (unsigned)__builtin_ctz(m);
        if (steps[i] < step)
            steps[i] = step;
    }
}

/* The owner's key on one word, seeded into its first entry: the end of the
 * word's step, or the owner's largest key of the kind if that is earlier. */
static entry owner_seed(const line *l, const entry *largest, uint8_t step)
{
    entry e = *largest;
    uint64_t base = l->base & BASE_TIME, shift = l->base >> BASE_SHIFT;
    uint64_t end = base + ((uint64_t)step << shift) - 1;
    if (end < e.t)
        e.t = end;
    return e;
}

/* Waits until the owner of a line this thread has locked can no longer be
 * writing its records (see the top of the file). */
static void owner_quiesce(spec_shadow *s, uint64_t state)
{
    spec_cursor *owner =
        atomic_load_explicit(&s->owners[state & LINE_PE_MASK], memory_order_relaxed);
    if (!s->fenced || !owner)
        return;
    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    for (unsigned spins = 0; atomic_load_explicit(&owner->busy, memory_order_acquire); spins++)
        if (spins % 64 == 63)
            sched_yield(); /* the owner was preempted inside */
}

/* Records me in line l while one thread owns it, giving it to that thread if
 * untouched: NULL then, nothing to check. Otherwise the line's words, made
 * and seeded here if this is another thread's first access. *full is set if
 * the budget cannot pay for them. */
static word *line_access(spec_shadow *s, spec_cursor *cur, line *l, const entry *me, int write,
                         uint8_t mask, int *full)
{
    uint64_t pe = pe_of(me);
    uint64_t st = atomic_load_explicit(&l->state, memory_order_acquire);
    if (st & LINE_SHARED)
        return atomic_load_explicit(&l->words, memory_order_relaxed);
    /* The owner's cursor too: a PE given to a later thread takes the lock once. */
    if (st == (LINE_OWNED | pe) && s->fenced &&
        atomic_load_explicit(&s->owners[pe], memory_order_relaxed) == cur) {
        atomic_store_explicit(&cur->busy, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst); /* the taker's membarrier orders the rest */
        int mine = atomic_load_explicit(&l->state, memory_order_relaxed) == st;
        if (mine)
            owner_add(l, me, write, mask);
        atomic_store_explicit(&cur->busy, 0, memory_order_release);
        if (mine)
            return NULL;
    }
    st = lock_bits(&l->state);
    if (st & LINE_SHARED) {
        word *w = l->words;
        atomic_store_explicit(&l->state, st, memory_order_release);
        return w;
    }
    if (!(st & LINE_OWNED) || (st & LINE_PE_MASK) == pe) {
        if (atomic_load_explicit(&s->owners[pe], memory_order_relaxed) != cur)
            atomic_store_explicit(&s->owners[pe], cur, memory_order_relaxed);
        if (!(st & LINE_OWNED))
            l->base = me->t;
        owner_add(l, me, write, mask);
        atomic_store_explicit(&l->state, LINE_OWNED | pe, memory_order_release);
        return NULL;
    }
    word *w = budget_alloc(s, WORDS_PER_LINE * sizeof(word));
    if (!w) {
        atomic_store_explicit(&l->state, st, memory_order_release);
        *full = 1;
        return NULL;
    }
    owner_quiesce(s, st);
    for (unsigned i = 0; i < WORDS_PER_LINE; i++) { /* the rest stays empty */
        if (l->wstep[i]) {
            entry e = owner_seed(l, &l->w, l->wstep[i]);
            atomic_init(&w[i].w1_t, e.t);
            w[i].w1_pcpe = e.pcpe;
        }
        if (l->rstep[i])
            w[i].r1 = owner_seed(l, &l->r, l->rstep[i]);
    }
    l->words = w;
    atomic_store_explicit(&l->state, LINE_SHARED, memory_order_release);
    return w;
}

int spec_shadow_check(spec_shadow *s, spec_cursor *cur, const spec_access *a,
                      uint64_t blame[SPEC_MAX_BLAMES])
{
    int n = 0, full = 0;
    entry me = {a->t, (a->pc & PC_MASK) | (a->gated ? 1u : 0u) | ((uint64_t)a->pe << 48)};
    uint64_t first = a->addr >> SPEC_WORD_SHIFT;
    uint64_t last = (a->addr + (a->size ? a->size : 1) - 1) >> SPEC_WORD_SHIFT;
    for (uint64_t wi = first; wi <= last;) {
        uint64_t li = wi >> (SPEC_LINE_SHIFT - SPEC_WORD_SHIFT);
        uint64_t page = li >> (SPEC_PAGE_SHIFT - SPEC_LINE_SHIFT);
        if (!cur->chunk || cur->page != page) {
            line *p = find_or_add(s, page);
            if (!p)
                return -1;
            cur->chunk = p;
            cur->page = page;
        }
        line *l = (line *)cur->chunk + (li & (LINES_PER_PAGE - 1));
        uint64_t end = (li + 1) << (SPEC_LINE_SHIFT - SPEC_WORD_SHIFT); /* next line's first */
        unsigned lo = wi & (WORDS_PER_LINE - 1),
                 hi = (last < end ? last : end - 1) & (WORDS_PER_LINE - 1);
        uint8_t mask = (uint8_t)((2u << hi) - (1u << lo));
        word *w = line_access(s, cur, l, &me, a->write, mask, &full);
        if (full)
            return -1;
        for (; wi <= last && wi < end; wi++)
            if (w)
                check_word(&w[wi & (WORDS_PER_LINE - 1)], a, me, blame, &n);
    }
    return n;
}
