/* Private layout of optimizer_model, shared by the fast path (model.c), the
 * reference implementations (reference.c) and the exact solver (exact.c). */
#ifndef WEFT_OPTIMIZER_MODEL_INTERNAL_H
#define WEFT_OPTIMIZER_MODEL_INTERNAL_H

#include "weft/optimizer.h"

#include "model_sort.h"

#include <stdarg.h>
#include <stdio.h>

struct optimizer_model {
    optimizer_options opt;
    uint32_t nthreads;
    size_t nev;
    model_event *ev;
    size_t *thread_begin, *thread_end; /* [nthreads]: kept events of each thread */
    size_t naddr;
    size_t *addr_begin; /* [naddr + 1]: each address's slice of ent */
    model_entry *ent;
    uint32_t *base_ev; /* [nev]: each address's events in event order, the merge sort's input */
    size_t *runs;      /* [max_per_addr + 1]: the merge sort's run boundaries */
    size_t max_per_addr;

    /* Current point. */
    uint64_t *cur; /* Δ per variable (= per kept event) */
    uint64_t *tau; /* τ per kept event */
    double *asum;  /* Eq. 4 terms of each address */
    size_t *azero; /* zero terms of each address */
    size_t zeros;
    /* Sum over addresses as a fixed binary tree: the root is a pure function
     * of the leaves, so incremental updates and full recomputation agree to
     * the last bit, and undoing a move restores the exact previous value. */
    double *tree;
    size_t leaves;

    /* Scratch for moves. */
    uint32_t *mark;
    uint32_t stamp;
    size_t *touched, ntouched;
    model_entry *moved, *still;

    /* The addresses as they were before the last move, so that the search's
     * undo of a rejected move is a copy instead of a re-sort and re-scan. */
    int undo_valid;
    size_t undo_v;
    uint64_t undo_from, undo_to;
    model_entry *undo_ent; /* touched addresses' entries, back to back */
    double *undo_sum;
    size_t *undo_zero;
};

/* Put address a's entries in entry_before order at the current tau (model_sort.c). */
static inline void optimizer_sort_address(optimizer_model *m, size_t a)
{
    size_t b = m->addr_begin[a];
    model_sort_entries(m->ent + b, m->addr_begin[a + 1] - b, m->tau, m->base_ev + b, m->ev,
                       (model_sort_scratch){m->moved, m->still, m->runs});
}

int optimizer_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fill the identity fields of a pair (a = va, b = vb); delay = t_b - t_a when
 * t_b >= t_a, else 0. */
void optimizer_pair_fill(const optimizer_model *m, size_t va, size_t vb, optimizer_pair *p);
typedef struct radix_rec {
    uint64_t key;
    uint64_t val;
} radix_rec;
/* Stable sort of a[0..n) by key, using tmp[0..n) as scratch. Returns
 * whichever of the two buffers holds the result. */
radix_rec *optimizer_radix_sort(radix_rec *a, radix_rec *tmp, size_t n);

#endif
