/* The trace reader's version 2 side: frames checked at open, then read,
 * decompressed and decoded one at a time, each thread's run of records
 * merged back into canonical order (layout: docs/trace-format.md). */
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

int trc_read_fail(weft_trace *t, uint64_t off, const char *what)
{
    snprintf(t->err, sizeof t->err, "%s: corrupt block at offset %llu (%s)", t->path,
             (unsigned long long)off, what);
    t->failed = true;
    return -1;
}

int trc_read_zstd_payload(weft_trace *t, uint64_t off, const uint8_t *h, size_t hdr_size,
                          uint32_t len, uint8_t **raw, size_t *raw_cap, uint32_t raw_len)
{
    if (trc_grow(&t->blk, &t->blk_cap, len) < 0 || trc_grow(raw, raw_cap, raw_len) < 0)
        return trc_read_fail(t, off, "out of memory");
    if (trc_pread_all(t->fd, t->blk, len, off + hdr_size) != (ssize_t)len)
        return trc_read_fail(t, off, "cut short");
    if (trc_crc32(trc_crc32(0, h, hdr_size - 4), t->blk, len) != get_u32(h + hdr_size - 4))
        return trc_read_fail(t, off, "checksum mismatch");
    size_t got = ZSTD_decompressDCtx(t->zd, *raw, raw_len, t->blk, len);
    if (ZSTD_isError(got) || got != raw_len)
        return trc_read_fail(t, off, "does not decompress");
    return 0;
}

/* Threads in a frame up to which the merge scans rather than keeps a heap. */
#define SCAN_RUNS 16

/* Version 2: the frames' headers, as for blocks below. */
int trc_read_check_frames(weft_trace *t, char *why, size_t wl)
{
    uint64_t off = t->header_len, events = 0, frames = 0;
    while (off < t->footer_off) {
        uint8_t h[FRAME_HDR_SIZE];
        if (off + FRAME_HDR_SIZE > t->footer_off ||
            trc_pread_all(t->fd, h, sizeof h, off) != (ssize_t)sizeof h) {
            trc_seterr(why, wl, "corrupt block at offset %llu (cut short)",
                       (unsigned long long)off);
            return -1;
        }
        uint32_t count = get_u32(h + 4), raw = get_u32(h + 8), len = get_u32(h + 12);
        if (get_u32(h) != FRAME_MAGIC) {
            trc_seterr(why, wl, "corrupt block at offset %llu (bad magic)",
                       (unsigned long long)off);
            return -1;
        }
        if (count == 0 || count > FRAME_MAX_EVENTS || raw > FRAME_RAW_MAX(count) ||
            len > ZSTD_compressBound(raw) || off + FRAME_HDR_SIZE + len > t->footer_off) {
            trc_seterr(why, wl, "corrupt block at offset %llu (bad length)",
                       (unsigned long long)off);
            return -1;
        }
        off += FRAME_HDR_SIZE + (uint64_t)len;
        events += count;
        frames++;
    }
    if (events != t->nevents || frames != t->nblocks) {
        trc_seterr(why, wl, "corrupt (frames hold %llu events, footer says %llu)",
                   (unsigned long long)events, (unsigned long long)t->nevents);
        return -1;
    }
    return 0;
}

/* The heap orders runs by their next event's (time, thread). */
static inline bool run_before(const weft_trace *t, uint32_t a, uint32_t b)
{
    const weft_event *x = &t->fev[t->run_pos[a]], *y = &t->fev[t->run_pos[b]];
    return x->time < y->time || (x->time == y->time && x->thread < y->thread);
}

static void heap_down(weft_trace *t, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, m = i;
        if (l < t->nruns && run_before(t, t->heap[l], t->heap[m]))
            m = l;
        if (l + 1 < t->nruns && run_before(t, t->heap[l + 1], t->heap[m]))
            m = l + 1;
        if (m == i)
            return;
        uint32_t x = t->heap[i];
        t->heap[i] = t->heap[m];
        t->heap[m] = x;
        i = m;
    }
}

/* Decode the whole frame: one run of records per thread, threads in
 * ascending order (the layout requires it), each run in its thread's
 * order; then heap them for the merge. */
static int frame_decode(weft_trace *t, uint32_t count, const char **why)
{
    if (count > t->fev_cap) {
        weft_event *v = realloc(t->fev, count * sizeof *v);
        if (!v) {
            *why = "out of memory";
            return -1;
        }
        t->fev = v;
        t->fev_cap = count;
    }
    t->nruns = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (trc_frame_get(&t->fr, &t->fev[i], why) < 0)
            return -1;
        uint32_t th = t->fev[i].thread;
        if (i && th == t->fev[i - 1].thread)
            continue;
        if (i && th < t->fev[i - 1].thread) {
            *why = "threads not in order";
            return -1;
        }
        if (t->nruns == t->runs_cap) {
            uint32_t cap = t->runs_cap ? 2 * t->runs_cap : 16;
            uint32_t *a = realloc(t->run_pos, cap * sizeof *a);
            if (a)
                t->run_pos = a;
            uint32_t *b = a ? realloc(t->run_end, cap * sizeof *b) : NULL;
            if (b)
                t->run_end = b;
            uint32_t *c = b ? realloc(t->heap, cap * sizeof *c) : NULL;
            if (c)
                t->heap = c;
            uint64_t *d = c ? realloc(t->run_time, cap * sizeof *d) : NULL;
            if (!d) {
                *why = "out of memory";
                return -1;
            }
            t->run_time = d;
            t->runs_cap = cap;
        }
        if (t->nruns)
            t->run_end[t->nruns - 1] = i;
        t->run_pos[t->nruns] = i;
        t->heap[t->nruns] = t->nruns;
        t->nruns++;
    }
    if (trc_frame_done(&t->fr, why) < 0)
        return -1;
    t->run_end[t->nruns - 1] = count;
    for (uint32_t r = 0; r < t->nruns; r++)
        t->run_time[r] = t->fev[t->run_pos[r]].time;
    if (t->nruns > SCAN_RUNS)
        for (uint32_t i = t->nruns / 2; i-- > 0;)
            heap_down(t, i);
    return 0;
}

/* Version 2: read, check and decompress the next frame, and decode it. */
int trc_read_load_frame(weft_trace *t)
{
    uint64_t off = t->off;
    uint8_t h[FRAME_HDR_SIZE];
    if (trc_pread_all(t->fd, h, sizeof h, off) != (ssize_t)sizeof h)
        return trc_read_fail(t, off, "cannot read header");
    uint32_t count = get_u32(h + 4), raw = get_u32(h + 8), len = get_u32(h + 12);
    /* Re-check: the file may have changed since open. */
    if (get_u32(h) != FRAME_MAGIC || count == 0 || count > FRAME_MAX_EVENTS ||
        raw > FRAME_RAW_MAX(count) || len > ZSTD_compressBound(raw) ||
        off + FRAME_HDR_SIZE + len > t->footer_off)
        return trc_read_fail(t, off, "bad header");
    if (trc_read_zstd_payload(t, off, h, FRAME_HDR_SIZE, len, &t->raw, &t->raw_cap, raw) < 0)
        return -1;
    const char *why;
    if (trc_frame_open(&t->fr, t->raw, raw, get_u64(h + 16), &why) < 0)
        return trc_read_fail(t, off, why);
    if (frame_decode(t, count, &why) < 0)
        return trc_read_fail(t, off, why);
    t->fleft = count;
    t->foff = off;
    t->off = off + FRAME_HDR_SIZE + len;
    return 0;
}

/* The run holding the frame's next event in canonical order. Up to
 * SCAN_RUNS runs (threads in the frame), a scan of their next times, the
 * lowest index winning ties (runs are in thread order); beyond, the heap. */

static inline uint32_t next_run(weft_trace *t)
{
    if (t->nruns > SCAN_RUNS)
        return t->heap[0];
    uint32_t best = t->heap[0];
    uint64_t bt = t->run_time[best];
    for (uint32_t k = 1; k < t->nruns; k++) {
        uint32_t r = t->heap[k];
        uint64_t rt = t->run_time[r];
        bool b = rt < bt || (rt == bt && r < best);
        best = b ? r : best;
        bt = b ? rt : bt;
    }
    return best;
}

/* Version 2: the next event of the current frame, checked like a block's. */
int trc_read_frame_next(weft_trace *t, weft_event *ev)
{
    uint32_t r = next_run(t);
    *ev = t->fev[t->run_pos[r]++];
    bool done = t->run_pos[r] == t->run_end[r];
    if (!done)
        t->run_time[r] = t->fev[t->run_pos[r]].time;
    if (t->nruns > SCAN_RUNS) {
        if (done)
            t->heap[0] = t->heap[--t->nruns];
        heap_down(t, 0);
    } else if (done) {
        uint32_t k = 0;
        while (t->heap[k] != r)
            k++;
        t->heap[k] = t->heap[--t->nruns];
    }
    if (t->any &&
        (ev->time < t->last_time || (ev->time == t->last_time && ev->thread < t->last_thread)))
        return trc_read_fail(t, t->foff, "events out of order");
    t->any = true;
    t->last_time = ev->time;
    t->last_thread = ev->thread;
    t->fleft--;
    return 0;
}
