/* Sorting one address's entries by (tau, event) after a move changed their
 * times (model_sort.c). The model's fast path (model.c) keeps each address's
 * entries in this order; the sort sees only the arrays it sorts. */
#ifndef WEFT_OPTIMIZER_MODEL_SORT_H
#define WEFT_OPTIMIZER_MODEL_SORT_H

#include <stddef.h>
#include <stdint.h>

/* A kept event. Kept events are stored in (thread, per-thread order), so an
 * index comparison between two events of one thread is a program-order
 * comparison. */
typedef struct model_event {
    uint64_t t; /* traced time */
    uint64_t seq;
    uint64_t pc;
    uint64_t addr;
    uint32_t thread;
    uint32_t addr_id; /* dense index of the shared address (after granule rounding) */
    uint8_t is_write;
} model_event;

/* One event in its address's array, which is kept sorted by (tau, ev): a total
 * order, so the scan (and the floating-point sum it produces) depends only on
 * the current times and never on the history of moves. */
typedef struct model_entry {
    uint64_t tau;
    uint32_t ev;
    uint32_t thread;
    uint8_t is_write;
} model_entry;

/* The total order of an address's entries: by tau, then by event index. */
static inline int entry_before(const model_entry *a, const model_entry *b)
{
    return a->tau < b->tau || (a->tau == b->tau && a->ev < b->ev);
}

/* Room the merge sort needs for n entries: two entry arrays of n and n + 1
 * run boundaries. */
typedef struct model_sort_scratch {
    model_entry *a, *b;
    size_t *runs;
} model_sort_scratch;

/* Sort ent[0..n) (the entries of one address) by (tau[ev], ev), taking the
 * times from tau. order[0..n) is the address's events in event order, where
 * the merge sort finds its presorted runs; ev gives their thread and kind. */
void model_sort_entries(model_entry *ent, size_t n, const uint64_t *tau, const uint32_t *order,
                        const model_event *ev, model_sort_scratch scratch);

#endif
