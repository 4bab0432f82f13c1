/* Exact mode by speculation: the check that tells whether a run that left
 * most plain accesses ungated still executed every conflicting pair in
 * virtual-time order, and which instructions must be gated if not.
 * Private to the tracer (plugin and unit test); see docs/platform.md.
 *
 * Order keys are (time, PE) compared lexicographically, the arbiter's order.
 * Each access comes with its thread's *sync key*: every access of another
 * thread with a smaller key has executed (and been checked) on the host
 * before this one. A passed gate gives the access's own key; otherwise it is
 * the last gate the thread passed, its creator's at clone, or its waker's
 * after a futex wake. A pair of accesses to the same word from two threads,
 * at least one a write, is ordered iff the earlier key is below the later
 * access's sync key. The check sees every unordered pair, whichever order
 * the host processes them in: either the later one comes first (an access
 * with a larger key is already there) or the earlier one does and lies at or
 * above the later one's sync key. It blames the pc whose gate would have
 * ordered the pair: the virtual-later access's. */
#ifndef WEFT_SPEC_SHADOW_H
#define WEFT_SPEC_SHADOW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SPEC_WORD_SHIFT 3   /* granule: 8-byte words; sub-word sharing counts as sharing */
#define SPEC_LINE_SHIFT 6   /* a line is its first thread's until a second touches it */
#define SPEC_PAGE_SHIFT 12  /* shadow is allocated per 4 KiB of guest memory */
#define SPEC_MAX_BLAMES 20  /* per access: up to 9 words touched, 2 pcs each, deduplicated */
#define SPEC_MAX_PE 0xffffu /* PE ids live in 16 bits of an entry */

typedef struct spec_shadow spec_shadow;

/* One thread's last looked-up page (a lookup cache) and its busy flag;
 * zero-initialize. The shadow remembers each PE's latest cursor, which takers
 * of its lines wait on: it must stay allocated until spec_shadow_free, and be
 * given by one thread at a time. */
typedef struct spec_cursor {
    uint64_t page;
    void *chunk;
    _Atomic uint32_t busy;
} spec_cursor;

typedef struct spec_access {
    uint64_t addr;
    uint32_t size;
    int write;       /* write or read-modify-write */
    uint64_t t;      /* virtual time (cycles) */
    uint32_t pe;     /* <= SPEC_MAX_PE */
    uint64_t pc;     /* nonzero, < 2^48, a multiple of 4 (AArch64) */
    int gated;       /* passed a gate: a blame on it is a hole gating cannot close */
    uint64_t sync_t; /* sync key; sync_pe < 0: none (nothing is known to be ordered before) */
    int32_t sync_pe;
} spec_access;

/* A shadow that may use up to max_bytes for its records. NULL if out of memory. */
spec_shadow *spec_shadow_new(size_t max_bytes);
void spec_shadow_free(spec_shadow *s);

/* Check one access against what the shadow holds, then add it. Thread-safe.
 * Writes the pcs to blame into blame[] (deduplicated; bit 0 set if that
 * access was gated) and returns how many, or -1 once the memory budget is
 * exhausted (the run cannot be checked). */
int spec_shadow_check(spec_shadow *s, spec_cursor *cur, const spec_access *a,
                      uint64_t blame[SPEC_MAX_BLAMES]);

/* Bytes of records allocated so far: SPEC_PAGE_RECORD_BYTES per guest page
 * touched, SPEC_LINE_WORDS_BYTES more per 64-byte line two threads touched. */
#define SPEC_PAGE_RECORD_BYTES (64u << (SPEC_PAGE_SHIFT - SPEC_LINE_SHIFT))
#define SPEC_LINE_WORDS_BYTES (64u << (SPEC_LINE_SHIFT - SPEC_WORD_SHIFT))
size_t spec_shadow_bytes(const spec_shadow *s);

#endif
