/* weft optimize --from-races: the data races of the trace (weft races)
 * choose what to align. The model keeps only the accesses at racy pcs, so
 * every search aligns racy accesses and pairs that synchronization orders
 * in the traced run (a lock taken around both writes) are left out: a
 * delay would only move the lock's wait, and the replay would refute the
 * plan. The exact solver then ranks first the candidates whose two pcs are
 * a reported race; the others stay after them, since FastTrack checks an
 * access against the last write only and so does not report every racing
 * pair of pcs. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/races.h"

#include "run_internal.h"

static int cmp_pair(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

int opt_pair_races(const optimize_ctx *c, uint64_t pc_a, uint64_t pc_b)
{
    uint64_t key[2] = {pc_a < pc_b ? pc_a : pc_b, pc_a < pc_b ? pc_b : pc_a};
    return c->nrace_pairs &&
           bsearch(key, c->race_pairs, c->nrace_pairs, sizeof *c->race_pairs, cmp_pair) != NULL;
}

void opt_races_free(optimize_ctx *c)
{
    free(c->race_pairs);
    free(c->race_pcs);
    c->race_pairs = NULL;
    c->race_pcs = NULL;
}

int opt_races_load(optimize_ctx *c)
{
    char err[512];
    weft_races_config cfg = weft_races_config_default();
    /* As weft races sees them: where the objects were, the C library's
     * own relaxed atomics no race. */
    weft_symbols *syms = weft_races_config_run(&cfg, c->meta->binary_path, c->meta);
    weft_races *d = weft_races_create(&cfg, err, sizeof err);
    if (!d || weft_races_analyze(d, c->t, err, sizeof err)) {
        weft_error("%s: --from-races: %s", c->o->trace, err);
        weft_races_free(d);
        weft_symbols_close(syms);
        return -1;
    }
    weft_symbols_close(syms);
    size_t n = weft_races_count(d);
    const uint64_t *pcs;
    size_t npcs = weft_races_pcs(d, &pcs);
    c->race_pairs = malloc((n ? n : 1) * sizeof *c->race_pairs);
    c->race_pcs = malloc((npcs ? npcs : 1) * sizeof *c->race_pcs);
    if (!c->race_pairs || !c->race_pcs) {
        weft_races_free(d);
        weft_error("out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const weft_race *r = weft_races_get(d, i);
        uint64_t a = r->first.pc, b = r->second.pc;
        c->race_pairs[i][0] = a < b ? a : b;
        c->race_pairs[i][1] = a < b ? b : a;
    }
    qsort(c->race_pairs, n, sizeof *c->race_pairs, cmp_pair);
    memcpy(c->race_pcs, pcs, npcs * sizeof *pcs);
    c->nrace_pairs = n;
    c->nrace_pcs = npcs;
    weft_races_free(d);
    c->o->filter.pcs = c->race_pcs;
    c->o->filter.npcs = npcs;
    if (!c->o->quiet || !n)
        printf("weft: --from-races: weft races finds %zu race%s (%zu pcs) in %s%s\n", n,
               n == 1 ? "" : "s", npcs, c->o->trace,
               cfg.binary ? ""
                          : " (program not readable: every atomic counted as acquire and "
                            "release)");
    if (!n) {
        printf("weft: no data race in this trace: nothing to align\n");
        return 1;
    }
    return 0;
}

size_t opt_races_first(const optimize_ctx *c, optimizer_candidate *cand, size_t n)
{
    optimizer_candidate *rest = malloc((n ? n : 1) * sizeof *rest);
    size_t first = 0, later = 0;
    for (size_t i = 0; rest && i < n; i++) {
        optimizer_var a, b;
        optimizer_model_var(c->m, cand[i].va, &a);
        optimizer_model_var(c->m, cand[i].vb, &b);
        if (opt_pair_races(c, a.pc, b.pc))
            cand[first++] = cand[i];
        else
            rest[later++] = cand[i];
    }
    if (!rest) /* keep the rank order: still correct, just not racing pairs first */
        return 0;
    memcpy(cand + first, rest, later * sizeof *rest);
    free(rest);
    return first;
}
