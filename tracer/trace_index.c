/* A spool's index: each thread's chunks in the order they were written,
 * built by the writer as it appends, by salvage from the live buffers and
 * by the merge's rescan of a spool. */
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>

static int index_grow(trc_spool_index *ix, uint32_t thread)
{
    if (thread >= ix->nthreads) {
        trc_thread_chunks *t = realloc(ix->threads, ((size_t)thread + 1) * sizeof *t);
        if (!t)
            return -1;
        memset(t + ix->nthreads, 0, (thread + 1 - ix->nthreads) * sizeof *t);
        ix->threads = t;
        ix->nthreads = thread + 1;
    }
    return 0;
}

int trc_index_skip(trc_spool_index *ix, uint32_t thread, uint64_t n, uint64_t last_time)
{
    if (index_grow(ix, thread) < 0)
        return -1;
    ix->threads[thread].skipped += n;
    ix->threads[thread].last_time = last_time;
    return 0;
}

int trc_index_add(trc_spool_index *ix, uint32_t thread, const trc_chunk *c)
{
    if (index_grow(ix, thread) < 0)
        return -1;
    trc_thread_chunks *t = &ix->threads[thread];
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        trc_chunk *v = realloc(t->v, cap * sizeof *v);
        if (!v)
            return -1;
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = *c;
    t->events += c->count;
    return 0;
}

int trc_index_add_seg(trc_spool_index *ix, uint32_t thread, const trc_seg *sg)
{
    if (index_grow(ix, thread) < 0)
        return -1;
    trc_thread_chunks *t = &ix->threads[thread];
    if (t->nsegs == t->segs_cap) {
        size_t cap = t->segs_cap ? t->segs_cap * 2 : 16;
        trc_seg *v = realloc(t->segs, cap * sizeof *v);
        if (!v)
            return -1;
        t->segs = v;
        t->segs_cap = cap;
    }
    t->segs[t->nsegs++] = *sg;
    return 0;
}

void trc_index_free(trc_spool_index *ix)
{
    for (uint32_t i = 0; i < ix->nthreads; i++) {
        free(ix->threads[i].v);
        free(ix->threads[i].segs);
    }
    free(ix->threads);
    ix->threads = NULL;
    ix->nthreads = 0;
}
