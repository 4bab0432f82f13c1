/* A tournament (loser) tree over per-thread streams keyed by (time,
 * thread): the k-way merge of the writer's version 1 output and of the
 * version 4 reader. Header-only so that each caller's loop inlines it. */
#ifndef WEFT_TRACE_LTREE_H
#define WEFT_TRACE_LTREE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Tournament (loser) tree over the threads' next records, keyed by (time,
 * thread): replacing the winner costs one comparison per level on a fixed
 * path, where a binary heap's sift-down costs two and branches on which
 * child to follow. Leaves are thread ids, padded to a power of two with
 * exhausted ones. */
#define LT_DONE UINT32_MAX /* rank of an exhausted leaf: after every thread */

typedef struct lt_key {
    uint64_t time;
    uint32_t rank; /* the thread id, or LT_DONE */
} lt_key;

typedef struct ltree {
    uint32_t k;     /* leaves */
    uint32_t *node; /* node[0]: overall winner; node[1..k): loser of that match */
    lt_key *key;    /* per leaf */
} ltree;

/* Bitwise, not short-circuit: the outcome is a coin toss when threads run
 * side by side, so a branch on it would mispredict half the time. */
static inline bool lt_less(lt_key a, lt_key b)
{
    return (a.time < b.time) | ((a.time == b.time) & (a.rank < b.rank));
}

static inline int lt_init(ltree *t, uint32_t nthreads)
{
    uint32_t k = 1;
    while (k < nthreads)
        k *= 2;
    t->k = k;
    t->node = calloc(k, sizeof *t->node);
    t->key = malloc(k * sizeof *t->key);
    if (!t->node || !t->key)
        return -1;
    for (uint32_t i = 0; i < k; i++)
        t->key[i] = (lt_key){UINT64_MAX, LT_DONE};
    return 0;
}

static inline void lt_free(ltree *t)
{
    free(t->node);
    free(t->key);
}

/* Play every match once the leaves' keys are set. */
static inline int lt_build(ltree *t)
{
    uint32_t k = t->k;
    uint32_t *win = malloc(2 * (size_t)k * sizeof *win);
    if (!win)
        return -1;
    for (uint32_t i = 0; i < k; i++)
        win[k + i] = i;
    for (uint32_t i = k - 1; i >= 1; i--) {
        uint32_t a = win[2 * i], b = win[2 * i + 1];
        bool b_wins = lt_less(t->key[b], t->key[a]);
        win[i] = b_wins ? b : a;
        t->node[i] = b_wins ? a : b;
    }
    t->node[0] = k > 1 ? win[1] : 0;
    free(win);
    return 0;
}

/* Leaf w's key changed (it was the winner): replay its path to the root,
 * carrying the candidate's key along and selecting without branches. */
static inline void lt_replay(ltree *t, uint32_t w)
{
    uint32_t cand = w;
    lt_key kc = t->key[w];
    for (uint32_t i = (w + t->k) >> 1; i; i >>= 1) {
        uint32_t o = t->node[i];
        lt_key ko = t->key[o];
        bool swap = lt_less(ko, kc);
        t->node[i] = swap ? cand : o;
        cand = swap ? o : cand;
        kc.time = swap ? ko.time : kc.time;
        kc.rank = swap ? ko.rank : kc.rank;
    }
    t->node[0] = cand;
}

#endif
