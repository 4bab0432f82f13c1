/* Which thread owns each 8-byte word of guest memory, learnt from the
 * accesses themselves, so exact mode can skip the gate of an access that is
 * about to touch a word only this thread has ever touched. Nothing can be
 * out of order there; every other access is gated. The first time a thread
 * reaches a word of another thread through an instruction whose previous
 * access was private, that access has already happened ungated: it is
 * counted, and the trace is flagged, rather than silently called exact.
 *
 * Words, not cache lines: threads working on adjacent parts of an array
 * would otherwise look shared and be gated at every access.
 * A lock-free open-addressing table: entry = (word + 1) << 16 | owner,
 * owner OWNER_SHARED once two threads touched the word. */
#include <stdatomic.h>
#include <stdint.h>

#include "plugin_state.h"

#define OWNER_BITS 22
#define OWNER_SLOTS (1u << OWNER_BITS)
#define OWNER_SHARED 0xffffu
#define OWNER_PROBES 64

static _Atomic uint64_t table[OWNER_SLOTS];

static inline uint64_t line_of(uint64_t addr)
{
    return addr >> 3;
}

static inline uint32_t slot_of(uint64_t line)
{
    return (uint32_t)((line * 0x9e3779b97f4a7c15ull) >> (64 - OWNER_BITS));
}

/* The owner of addr's line (OWNER_SHARED when shared or unknown/full),
 * after recording that `pe` touched it. */
static unsigned touch(uint64_t addr, unsigned pe)
{
    uint64_t key = line_of(addr) + 1;
    uint32_t s = slot_of(key);
    for (unsigned i = 0; i < OWNER_PROBES; i++, s = (s + 1) & (OWNER_SLOTS - 1)) {
        uint64_t e = atomic_load_explicit(&table[s], memory_order_relaxed);
        if (e == 0) {
            uint64_t mine = key << 16 | pe;
            if (atomic_compare_exchange_strong(&table[s], &e, mine))
                return pe;
            /* lost the race for the slot: e now holds the winner */
        }
        if (e >> 16 != key)
            continue;
        unsigned owner = (unsigned)(e & 0xffff);
        if (owner == pe || owner == OWNER_SHARED)
            return owner;
        uint64_t shared = key << 16 | OWNER_SHARED;
        atomic_compare_exchange_strong(&table[s], &e, shared);
        return OWNER_SHARED;
    }
    return OWNER_SHARED; /* table too full here: assume shared, i.e. gate */
}

int owners_private_to(uint64_t addr, int pe)
{
    uint64_t key = line_of(addr) + 1;
    uint32_t s = slot_of(key);
    for (unsigned i = 0; i < OWNER_PROBES; i++, s = (s + 1) & (OWNER_SLOTS - 1)) {
        uint64_t e = atomic_load_explicit(&table[s], memory_order_relaxed);
        if (e == 0)
            return 0;
        if (e >> 16 == key)
            return (unsigned)(e & 0xffff) == (unsigned)pe;
    }
    return 0;
}

int owners_touch_private(uint64_t addr, unsigned size, int pe)
{
    int mine = 1;
    for (uint64_t w = addr & ~7ull; w < addr + (size ? size : 1); w += 8)
        mine &= touch(w, (unsigned)pe) == (unsigned)pe;
    return mine;
}
