/* Frames from the spool without a merge per record (versions 2 and 3).
 *
 * A frame is the next FRAME_EVENTS records in canonical (time, thread)
 * order, stored grouped by thread (docs/trace-format.md). So what the
 * writer needs from the merge is where each frame ends, not the order of
 * the records inside it: per thread, how many of its next records fall
 * before the frame's last key. Those counts come from binary searches over
 * sorted per-thread look-ahead, and each thread's share is copied in one
 * piece. A k-way merge choosing every record took a fifth of a real
 * program's `weft trace` (pigz: 6 threads, 300 million events); the
 * frames are the same bytes.
 *
 * Memory: one frame plus at most one decode batch per thread beyond it
 * (a thread is decoded further only while its last decoded record is the
 * earliest among the threads', see fill_until). */
#include "trace_finish.h"

#include <stdlib.h>
#include <string.h>

/* Records decoded at a time per thread: a spool chunk's worth. */
#define SELECT_BATCH BLOCK_EVENTS

typedef struct lookahead {
    trc_rec *r;
    uint32_t h, n, cap; /* r[h..n) decoded, not yet in a frame */
    bool done;          /* nothing left to decode */
} lookahead;

/* Decode thread t's next batch into its look-ahead: 0, or -1. */
static int extend(trc_merge *m, lookahead *a, uint32_t t)
{
    if (a->n + SELECT_BATCH > a->cap) {
        if (a->h && a->h >= a->cap / 2) {
            memmove(a->r, a->r + a->h, (size_t)(a->n - a->h) * sizeof *a->r);
            a->n -= a->h;
            a->h = 0;
        }
        if (a->n + SELECT_BATCH > a->cap) {
            uint32_t cap = a->cap ? 2 * a->cap : SELECT_BATCH;
            trc_rec *r = realloc(a->r, (size_t)cap * sizeof *r);
            if (!r) {
                trc_seterr(m->err, m->errlen, "%s: out of memory", m->spool_path);
                return -1;
            }
            a->r = r;
            a->cap = cap;
        }
    }
    int k = trc_merge_decode(m, t, a->r + a->n, SELECT_BATCH);
    if (k < 0)
        return -1;
    if (k == 0)
        a->done = true;
    a->n += (uint32_t)k;
    return 0;
}

/* Look-ahead records with time < x (x = UINT64_MAX: all of them). */
static inline uint32_t count_before(const lookahead *a, uint64_t x)
{
    if (x == UINT64_MAX)
        return a->n - a->h;
    uint32_t lo = a->h, hi = a->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a->r[mid].time < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - a->h;
}

static uint64_t count_all_before(const lookahead *la, uint32_t nt, uint64_t x)
{
    uint64_t c = 0;
    for (uint32_t t = 0; t < nt; t++)
        c += count_before(&la[t], x);
    return c;
}

/* Decode until at least `want` records are known to come before every
 * record not yet decoded: each thread not done has look-ahead, and the
 * records with time < M, M the earliest of the threads' last decoded
 * times, number `want` or more. Only the thread holding M is extended, so
 * no thread runs more than a batch past M. Sets *bound to M (UINT64_MAX
 * once every thread is done); 0, or -1 with m's error set. */
static int fill_until(trc_merge *m, lookahead *la, uint32_t nt, uint64_t want, uint64_t *bound)
{
    for (;;) {
        uint64_t M = UINT64_MAX;
        uint32_t arg = UINT32_MAX;
        for (uint32_t t = 0; t < nt; t++) {
            lookahead *a = &la[t];
            while (!a->done && a->h == a->n)
                if (extend(m, a, t) < 0)
                    return -1;
            if (!a->done && a->r[a->n - 1].time < M) {
                M = a->r[a->n - 1].time;
                arg = t;
            }
        }
        if (arg == UINT32_MAX || count_all_before(la, nt, M) >= want) {
            *bound = M;
            return 0;
        }
        if (extend(m, &la[arg], arg) < 0)
            return -1;
    }
}

/* The next frame: its `want` records, the earliest in canonical order, all
 * decoded and before `bound`. Its last record's time X is the smallest
 * with `want` records at or before it; of the records at X, the threads
 * take theirs in id order until the frame is full, as (time, thread)
 * order has it. */
static uint32_t cut_frame(lookahead *la, uint32_t nt, uint64_t want, uint64_t bound, trc_rec *out,
                          uint64_t *base_time)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t t = 0; t < nt; t++) {
        const lookahead *a = &la[t];
        if (a->h == a->n)
            continue;
        if (a->r[a->h].time < lo)
            lo = a->r[a->h].time;
        if (a->r[a->n - 1].time > hi)
            hi = a->r[a->n - 1].time;
    }
    if (bound != UINT64_MAX)
        hi = bound - 1; /* bound is above lo: records before it exist */
    *base_time = lo;
    while (lo < hi) { /* smallest X with count(time <= X) >= want */
        uint64_t mid = lo + (hi - lo) / 2;
        if (count_all_before(la, nt, mid + 1) >= want)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint64_t x = lo;
    uint64_t need = want - count_all_before(la, nt, x);
    uint32_t n = 0;
    for (uint32_t t = 0; t < nt; t++) {
        lookahead *a = &la[t];
        uint32_t before = count_before(a, x);
        uint32_t at = (x == UINT64_MAX ? a->n - a->h : count_before(a, x + 1)) - before;
        uint32_t take = before + (uint32_t)(at < need ? at : need);
        need -= take - before;
        if (!take)
            continue; /* a thread without records has no look-ahead at all */
        memcpy(out + n, a->r + a->h, (size_t)take * sizeof *out);
        a->h += take;
        n += take;
    }
    return n;
}

int trc_select_frames(trc_merge *m, frame_out *fo, uint64_t *nevents)
{
    uint32_t nt = m->ix->nthreads;
    uint64_t left = 0;
    for (uint32_t t = 0; t < nt; t++)
        left += m->ix->threads[t].events;
    lookahead *la = calloc(nt ? nt : 1, sizeof *la);
    if (!la) {
        trc_seterr(m->err, m->errlen, "%s: out of memory", m->spool_path);
        return -1;
    }
    /* A thread without records gets no look-ahead: a damaged spool's
     * thread ids can be anything up to 2^20, and a tail-keeping writer's
     * threads may have skip records only. */
    for (uint32_t t = 0; t < nt; t++)
        la[t].done = m->ix->threads[t].events == 0;
    int rc = 0;
    while (left) {
        uint64_t want = left < FRAME_EVENTS ? left : FRAME_EVENTS, bound, base;
        if (fill_until(m, la, nt, want, &bound) < 0) {
            rc = -1;
            break;
        }
        uint64_t avail = count_all_before(la, nt, bound);
        if (avail < want) { /* the index promised more records than the spool holds */
            trc_seterr(m->err, m->errlen, "%s: %llu events missing from the spool", m->spool_path,
                       (unsigned long long)(left - avail));
            rc = -1;
            break;
        }
        trc_rec *out = frame_out_next(fo);
        uint32_t n = cut_frame(la, nt, want, bound, out, &base);
        frame_out_publish(fo, n, base);
        *nevents += n;
        left -= n;
    }
    for (uint32_t t = 0; t < nt; t++)
        free(la[t].r);
    free(la);
    return rc;
}
