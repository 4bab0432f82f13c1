/* --filter shared: plain accesses are recorded only on pages that more than
 * one thread has touched (Eraser's exclusive state, at page granularity).
 * A compressor's threads write their own buffers almost all the time (xz:
 * 0.1% of its writes go to addresses two threads touch), and encoding and
 * compressing those events is most of what recording costs.
 *
 * One 64-bit word per guest page: the owner (0 untouched, PE + 1 while one
 * thread has touched it, SHARED after) and a virtual time in units of
 * 2^TIME_SHIFT cycles: the owner's latest access while it is exclusive, the
 * sharing access's time after. Threads run in parallel in free mode, so
 * which thread touches a page first is the host's order; when that order
 * disagrees with virtual time (the owner touched the page later in virtual
 * time than the access that shared it, or an access at a time before the
 * sharing is recorded), which accesses were left out may differ between
 * runs: such transitions are counted and the trace is flagged. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "plugin_state.h"

#define PAGE_BITS 12
#define L2_BITS 12 /* pages per second-level table: 16 MiB of guest memory */
#define L1_BITS 24 /* up to 2^48 bytes of guest addresses */
#define OWNER_MASK 0xffffull
#define SHARED 0xffffull
#define TIME_SHIFT 6 /* 64 cycles: an owner's word is rewritten once per 64 */
#define TIME_MAX ((1ull << 48) - 1)

typedef _Atomic uint64_t page_word;

static _Atomic(page_word *) *g_l1;
static atomic_int g_behind; /* a choice went against virtual time */

int plugin_shared_init(void)
{
    size_t bytes = sizeof *g_l1 << L1_BITS;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return -1;
    g_l1 = m;
    return 0;
}

static page_word *word_of(uint64_t vaddr)
{
    uint64_t page = vaddr >> PAGE_BITS;
    uint64_t hi = page >> L2_BITS;
    if (hi >> L1_BITS)
        return NULL;
    page_word *l2 = atomic_load_explicit(&g_l1[hi], memory_order_acquire);
    if (!l2) {
        page_word *fresh = calloc(1u << L2_BITS, sizeof *fresh);
        if (!fresh)
            return NULL;
        if (atomic_compare_exchange_strong(&g_l1[hi], &l2, fresh))
            l2 = fresh;
        else
            free(fresh); /* another thread installed it first */
    }
    return &l2[page & ((1u << L2_BITS) - 1)];
}

static uint64_t coarse(uint64_t cycles)
{
    uint64_t t = cycles >> TIME_SHIFT;
    return t > TIME_MAX ? TIME_MAX : t;
}

/* A flag, not a count: a count would be a store to one line from every
 * thread on every such access. */
static void note_behind(void)
{
    if (!atomic_load_explicit(&g_behind, memory_order_relaxed))
        atomic_store_explicit(&g_behind, 1, memory_order_relaxed);
}

int plugin_shared_record(int pe, uint64_t vaddr, uint64_t cycles)
{
    page_word *w = word_of(vaddr);
    if (!w || (uint64_t)pe + 1 >= SHARED)
        return 1; /* no word for it: record, as without the filter */
    uint64_t me = (uint64_t)pe + 1, t = coarse(cycles);
    uint64_t cur = atomic_load_explicit(w, memory_order_relaxed);
    for (;;) {
        uint64_t owner = cur & OWNER_MASK, when = cur >> 16;
        if (owner == SHARED) {
            if (t < when) /* recorded, though it comes before the sharing */
                note_behind();
            return 1;
        }
        if (owner == me && when >= t)
            return 0; /* the common case: no store */
        uint64_t next = owner == me || owner == 0 ? me | t << 16 : SHARED | t << 16;
        if (atomic_compare_exchange_weak_explicit(w, &cur, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            if (owner == me || owner == 0)
                return 0;
            if (when >= t) /* the owner touched it at or after this time */
                note_behind();
            return 1;
        }
    }
}

int plugin_shared_behind(void)
{
    return atomic_load_explicit(&g_behind, memory_order_relaxed);
}
