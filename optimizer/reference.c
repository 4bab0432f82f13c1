/* Reference implementations, written straight from the definitions with no
 * sorting or sweeping, so the tests can hold the fast paths against them. */
#include "model_internal.h"

#include <stdlib.h>

double optimizer_fitness_naive(const optimizer_model *m, const uint64_t *delta, size_t *aligned)
{
    size_t n = m->nev;
    uint64_t *tau = malloc((n ? n : 1) * sizeof *tau);
    if (!tau)
        return -1;
    /* Eq. 2: τ_{i,j} = t_{i,j} + Σ_{k ≤ j} Δ_{i,k}. */
    for (size_t j = 0; j < n; j++) {
        tau[j] = m->ev[j].t;
        for (size_t k = 0; k <= j; k++)
            if (m->ev[k].thread == m->ev[j].thread)
                tau[j] += delta[k];
    }
    /* Eq. 4 with the closest-later-event restriction. */
    double sum = 0;
    size_t zeros = 0;
    for (size_t q = 0; q < n; q++) {
        const model_event *eq = &m->ev[q];
        int found = 0;
        uint64_t best = 0;
        for (size_t r = 0; r < n; r++) {
            const model_event *er = &m->ev[r];
            if (er->thread == eq->thread || er->addr_id != eq->addr_id || tau[r] < tau[q])
                continue;
            if (!eq->is_write && !er->is_write)
                continue;
            uint64_t d = tau[r] - tau[q];
            if (!found || d < best)
                best = d, found = 1;
        }
        if (!found)
            continue;
        sum += 1.0 - 1.0 / (1.0 + (double)best);
        zeros += best == 0;
    }
    free(tau);
    if (aligned)
        *aligned = zeros;
    return sum;
}

int optimizer_exact_pairs_bruteforce(const optimizer_model *m, optimizer_candidate **out, size_t *n,
                                     char *err, size_t errlen)
{
    size_t cap = 16, cnt = 0;
    optimizer_candidate *p = malloc(cap * sizeof *p);
    if (!p)
        return optimizer_fail(err, errlen, "optimizer: out of memory");
    for (size_t a = 0; a < m->nev; a++) {
        const model_event *ea = &m->ev[a];
        for (uint32_t th = 0; th < m->nthreads; th++) {
            if (th == ea->thread)
                continue;
            size_t best = SIZE_MAX;
            for (size_t b = 0; b < m->nev; b++) {
                const model_event *eb = &m->ev[b];
                if (eb->thread != th || eb->addr_id != ea->addr_id || eb->t < ea->t)
                    continue;
                if (!ea->is_write && !eb->is_write)
                    continue;
                if (best == SIZE_MAX || eb->t < m->ev[best].t)
                    best = b; /* b ascends, so ties keep the earliest in program order */
            }
            if (best == SIZE_MAX)
                continue;
            if (m->ev[best].t == ea->t && th < ea->thread)
                continue;
            if (cnt == cap) {
                optimizer_candidate *q = realloc(p, 2 * cap * sizeof *p);
                if (!q) {
                    free(p);
                    return optimizer_fail(err, errlen, "optimizer: out of memory");
                }
                p = q, cap *= 2;
            }
            p[cnt++] = (optimizer_candidate){(uint32_t)a, (uint32_t)best, m->ev[best].t - ea->t};
        }
    }
    /* Generated in (a, thread of b) order; a stable sort by delay completes
     * the ranking. Insertion sort: test-sized inputs only. */
    for (size_t i = 1; i < cnt; i++) {
        optimizer_candidate x = p[i];
        size_t j = i;
        for (; j > 0 && p[j - 1].delay > x.delay; j--)
            p[j] = p[j - 1];
        p[j] = x;
    }
    *out = p;
    *n = cnt;
    return 0;
}
