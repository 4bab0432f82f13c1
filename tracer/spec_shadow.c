/* The speculation check's shadow memory (see spec_shadow.h for the rule).
 *
 * Per 8-byte guest word, 64 bytes: for writes and for reads separately, the
 * largest key seen and the largest key from any other thread than that one,
 * each with its pc. That is enough because a check only ever asks for the
 * largest key among other threads' conflicting accesses. Records are
 * allocated per guest page on first touch and found through an
 * open-addressing table that is read without locks. Each word has its own
 * spin lock (the top bit of its first time): threads that touch different
 * words never meet, and the critical section is a few compares. */
#include "spec_shadow.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define PC_MASK ((1ull << 48) - 1)
#define LOCK_BIT (1ull << 63)
#define WORDS_PER_PAGE (1u << (SPEC_PAGE_SHIFT - SPEC_WORD_SHIFT))
#define TABLE_BITS 20

typedef struct entry {
    uint64_t t;
    uint64_t pcpe; /* pc in bits 0..47 (bit 0: gated), PE in 48..63; 0 = empty */
} entry;

typedef struct word {
    _Atomic uint64_t w1_t; /* w1's time, with LOCK_BIT while a thread checks this word */
    uint64_t w1_pcpe;
    entry w2, r1, r2;
} word;

struct spec_shadow {
    _Atomic uint64_t keys[1u << TABLE_BITS]; /* page number + 1; 0 = free */
    _Atomic(word *) chunks[1u << TABLE_BITS];
    pthread_mutex_t insert_lock;
    _Atomic size_t bytes;
    size_t max_bytes;
};

spec_shadow *spec_shadow_new(size_t max_bytes)
{
    spec_shadow *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->insert_lock, NULL);
    s->max_bytes = max_bytes;
    return s;
}

void spec_shadow_free(spec_shadow *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < (1u << TABLE_BITS); i++)
        free(atomic_load(&s->chunks[i]));
    pthread_mutex_destroy(&s->insert_lock);
    free(s);
}

size_t spec_shadow_bytes(const spec_shadow *s)
{
    return atomic_load(&s->bytes);
}

static size_t slot_of(uint64_t page)
{
    return (size_t)((page * 0x9e3779b97f4a7c15ull) >> (64 - TABLE_BITS));
}

static word *find(spec_shadow *s, uint64_t page)
{
    for (size_t i = slot_of(page), n = 0; n < (1u << TABLE_BITS);
         i = (i + 1) & ((1u << TABLE_BITS) - 1), n++) {
        uint64_t k = atomic_load_explicit(&s->keys[i], memory_order_acquire);
        if (k == page + 1)
            return atomic_load_explicit(&s->chunks[i], memory_order_acquire);
        if (k == 0)
            return NULL;
    }
    return NULL;
}

/* NULL when the budget or the table is exhausted. */
static word *find_or_add(spec_shadow *s, uint64_t page)
{
    word *w = find(s, page);
    if (w)
        return w;
    pthread_mutex_lock(&s->insert_lock);
    w = find(s, page); /* another thread may have added it meanwhile */
    size_t size = WORDS_PER_PAGE * sizeof(word);
    if (!w && atomic_load(&s->bytes) + size <= s->max_bytes) {
        size_t i = slot_of(page), n = 0;
        while (atomic_load(&s->keys[i]) != 0 && n++ < (1u << TABLE_BITS) / 2)
            i = (i + 1) & ((1u << TABLE_BITS) - 1);
        if (n < (1u << TABLE_BITS) / 2 && (w = calloc(WORDS_PER_PAGE, sizeof(word))) != NULL) {
            /* The chunk before its key: a reader that sees the key sees the chunk. */
            atomic_store_explicit(&s->chunks[i], w, memory_order_release);
            atomic_store_explicit(&s->keys[i], page + 1, memory_order_release);
            atomic_fetch_add(&s->bytes, size);
        }
    }
    pthread_mutex_unlock(&s->insert_lock);
    return w;
}

static uint64_t lock_word(word *w)
{
    for (unsigned spins = 0;; spins++) {
        uint64_t old = atomic_fetch_or_explicit(&w->w1_t, LOCK_BIT, memory_order_acquire);
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

static void check_word(word *w, const spec_access *a, uint64_t *blame, int *nblame)
{
    entry me = {a->t, (a->pc & PC_MASK) | (a->gated ? 1u : 0u) | ((uint64_t)a->pe << 48)};
    uint64_t t1 = lock_word(w);
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

int spec_shadow_check(spec_shadow *s, spec_cursor *cur, const spec_access *a,
                      uint64_t blame[SPEC_MAX_BLAMES])
{
    int n = 0;
    uint64_t first = a->addr >> SPEC_WORD_SHIFT;
    uint64_t last = (a->addr + (a->size ? a->size : 1) - 1) >> SPEC_WORD_SHIFT;
    for (uint64_t wi = first; wi <= last; wi++) {
        uint64_t page = wi >> (SPEC_PAGE_SHIFT - SPEC_WORD_SHIFT);
        if (!cur->chunk || cur->page != page) {
            word *c = find_or_add(s, page);
            if (!c)
                return -1;
            cur->chunk = c;
            cur->page = page;
        }
        word *w = (word *)cur->chunk + (wi & (WORDS_PER_PAGE - 1));
        check_word(w, a, blame, &n);
    }
    return n;
}
