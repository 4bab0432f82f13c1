/* Atomic locations (docs/races.md): bytes whose plain accesses are relaxed
 * atomics, those some atomic instruction of the trace touches (the
 * prescan) and the program's globals of an atomic type. */
#include "races_state.h"

/* Bytes [addr, addr + size) are an atomic location; at most max granules. */
static int mark_atomic(weft_races *d, uint64_t addr, uint64_t size, uint64_t max)
{
    uint64_t first = addr >> 3, last = (addr + size - 1) >> 3;
    if (last < first)
        last = UINT64_MAX >> 3;
    for (uint64_t g = first; g <= last && g - first < max; g++) {
        uint32_t k;
        if (shadow_granule_index(&d->sh, g, &k) != 0)
            return -1;
        d->sh.granules[k].atomic_mask |= granule_mask(addr, size, g);
    }
    return 0;
}

int weft_races_prescan(weft_races *d, const weft_event *ev)
{
    if (!weft_event_is_access(ev->kind) || (ev->flags & WEFT_EVF_STACK) || ev->size == 0)
        return 0;
    if (!(ev->flags & (WEFT_EVF_ATOMIC | WEFT_EVF_EXCLUSIVE)) && ev->kind != WEFT_EV_RMW)
        return 0;
    return mark_atomic(d, ev->addr, ev->size, 10);
}

static int mark_atomic_global(void *ctx, uint64_t addr, uint64_t size)
{
    /* An array of a million atomics: its first 64 KiB. */
    return mark_atomic(ctx, addr, size, 8192);
}

/* The program's atomic globals are atomic locations whether or not an
 * atomic instruction touches them in the trace (symbols_atomic.c). */
int races_atomic_globals(weft_races *d, const weft_races_config *cfg)
{
    if (!cfg->atomic_locations || !cfg->binary)
        return 0;
    char err[64];
    weft_symbols *s = weft_symbols_open(cfg->binary, err, sizeof err);
    if (!s)
        return 0; /* races_code_open has read it: nothing left to say */
    weft_symbols_relocate(s, cfg->start_code);
    int rc = weft_symbols_atomic_globals(s, mark_atomic_global, d);
    weft_symbols_close(s);
    return rc;
}
