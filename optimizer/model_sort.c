/* Re-sorting one address's entries after a full evaluation changed every tau
 * (what RND does on every evaluation). qsort, with its indirect comparisons
 * and copies, was about a third of an RND evaluation on the CFFT model: the
 * traced programs' shared addresses carry a handful of events, and the long
 * ones are a few presorted runs, neither of which qsort exploits. */
#include "model_sort.h"

#include <string.h>

/* At or below this many entries, insertion sort from the previous order:
 * no calls, no copies, and on these sizes fewer moves than merging. */
#define SORT_INSERTION_MAX 32

static void insertion_sort(model_entry *e, size_t n, const uint64_t *tau)
{
    for (size_t i = 0; i < n; i++)
        e[i].tau = tau[e[i].ev];
    for (size_t i = 1; i < n; i++) {
        model_entry x = e[i];
        size_t j = i;
        for (; j > 0 && entry_before(&x, &e[j - 1]); j--)
            e[j] = e[j - 1];
        e[j] = x;
    }
}

static void merge(const model_entry *x, size_t nx, const model_entry *y, size_t ny,
                  model_entry *out)
{
    size_t i = 0, j = 0, k = 0;
    while (i < nx && j < ny)
        out[k++] = entry_before(&y[j], &x[i]) ? y[j++] : x[i++];
    while (i < nx)
        out[k++] = x[i++];
    while (j < ny)
        out[k++] = y[j++];
}

/* Natural merge sort starting from event order, not from the previous
 * order: in event order each thread's events are one run already sorted
 * whenever its traced times do not decrease (Eq. 2 only adds non-negative
 * delays), so a trace costs log2(threads) merge passes. The runs are found,
 * not assumed, so any input is sorted correctly, only more slowly. */
static void merge_sort(model_entry *ent, size_t n, const uint64_t *tau, const uint32_t *order,
                       const model_event *ev, model_sort_scratch s)
{
    model_entry *src = s.a, *dst = s.b;
    size_t *run = s.runs, nr = 0;
    for (size_t k = 0; k < n; k++) {
        const model_event *e = &ev[order[k]];
        src[k] = (model_entry){
            .tau = tau[order[k]], .ev = order[k], .thread = e->thread, .is_write = e->is_write};
        if (k == 0 || entry_before(&src[k], &src[k - 1]))
            run[nr++] = k;
    }
    run[nr] = n;
    while (nr > 1) {
        size_t out = 0;
        for (size_t r = 0; r < nr; r += 2) {
            /* An odd last run has mid == hi == n and is copied as it is. */
            size_t lo = run[r], mid = run[r + 1], hi = r + 2 <= nr ? run[r + 2] : mid;
            merge(src + lo, mid - lo, src + mid, hi - mid, dst + lo);
            run[out++] = lo;
        }
        run[out] = n;
        nr = out;
        model_entry *t = src;
        src = dst;
        dst = t;
    }
    memcpy(ent, src, n * sizeof *src);
}

void model_sort_entries(model_entry *ent, size_t n, const uint64_t *tau, const uint32_t *order,
                        const model_event *ev, model_sort_scratch scratch)
{
    if (n <= SORT_INSERTION_MAX)
        insertion_sort(ent, n, tau);
    else
        merge_sort(ent, n, tau, order, ev, scratch);
}
