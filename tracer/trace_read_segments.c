/* The trace reader's version 4 side: segments checked at open, each
 * thread's read in its order (decompressed one at a time, its chunks
 * decoded in batches), and the threads merged into canonical order by a
 * tournament tree (layout: docs/trace-format.md). Memory: a small cursor
 * per thread, and one segment and one batch per thread with events left. */
#include "trace_internal.h"
#include "trace_ltree.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Records decoded at a time per thread (as the writer's merge). */
#define SEG_BATCH 256

struct trc_seg_cursor {
    uint64_t *segs; /* the thread's segments' offsets, in its order */
    uint32_t nsegs, cap, next;
    uint64_t events; /* in its segments, from their headers */
    uint8_t *raw;    /* the current segment, decompressed */
    size_t raw_cap;
    const uint8_t *p, *end; /* its next chunk; its end */
    uint32_t chunks_left;   /* of the segment, not opened yet */
    uint32_t seg_events;    /* of the segment, not in opened chunks */
    uint32_t left;          /* of the open chunk, not decoded */
    uint64_t seg_off, last; /* for messages; the last time decoded */
    bool any;
    /* Made when the thread is first read, freed when it is done: a trace
     * may have many threads, most of them short. */
    trc_chunk_state *d;
    trc_rec *rec; /* [SEG_BATCH] */
    uint32_t i, n;
};

static int seg_header_ok(const uint8_t *h, uint64_t off, uint64_t footer_off)
{
    uint32_t nchunks = get_u32(h + 8), events = get_u32(h + 12), raw = get_u32(h + 16),
             len = get_u32(h + 20);
    return get_u32(h) == SEG_MAGIC && nchunks && events >= nchunks &&
           (uint64_t)events <= (uint64_t)nchunks * BLOCK_MAX_EVENTS && raw <= SEG_RAW_MAX &&
           (uint64_t)raw >= (uint64_t)nchunks * CHUNK_HDR_SIZE && len &&
           len <= ZSTD_compressBound(raw) && off + SEG_HDR_SIZE + len <= footer_off;
}

static int add_seg(struct trc_seg_cursor *c, uint64_t off)
{
    if (c->nsegs == c->cap) {
        uint32_t cap = c->cap ? 2 * c->cap : 8;
        uint64_t *v = realloc(c->segs, cap * sizeof *v);
        if (!v)
            return -1;
        c->segs = v;
        c->cap = cap;
    }
    c->segs[c->nsegs++] = off;
    return 0;
}

/* Walk the segment headers once: a damaged or cut chain, segments out of
 * canonical order or per-thread counts unlike the footer's are reported at
 * open, and each thread learns where its segments are. */
int trc_read_check_segments(weft_trace *t, char *why, size_t wl)
{
    uint32_t nt = t->summary.nthreads;
    if (!(t->sc = calloc(nt ? nt : 1, sizeof *t->sc)) || lt_init(&t->lt, nt ? nt : 1) < 0) {
        trc_seterr(why, wl, "out of memory");
        return -1;
    }
    uint64_t off = t->header_len, events = 0, segs = 0, prev_time = 0;
    uint32_t prev_thread = 0;
    while (off < t->footer_off) {
        uint8_t h[SEG_HDR_SIZE];
        if (off + SEG_HDR_SIZE > t->footer_off ||
            trc_pread_all(t->fd, h, sizeof h, off) != (ssize_t)sizeof h) {
            trc_seterr(why, wl, "corrupt block at offset %llu (cut short)",
                       (unsigned long long)off);
            return -1;
        }
        if (!seg_header_ok(h, off, t->footer_off)) {
            trc_seterr(why, wl, "corrupt block at offset %llu (bad header)",
                       (unsigned long long)off);
            return -1;
        }
        uint32_t th = get_u32(h + 4);
        uint64_t first = get_u64(h + 24);
        if (th >= nt) {
            trc_seterr(why, wl, "corrupt block at offset %llu (thread %u, the footer has %u)",
                       (unsigned long long)off, th, nt);
            return -1;
        }
        if (segs && (first < prev_time || (first == prev_time && th < prev_thread))) {
            trc_seterr(why, wl, "corrupt block at offset %llu (segments out of order)",
                       (unsigned long long)off);
            return -1;
        }
        if (add_seg(&t->sc[th], off) < 0) {
            trc_seterr(why, wl, "out of memory");
            return -1;
        }
        t->sc[th].events += get_u32(h + 12);
        events += get_u32(h + 12);
        prev_time = first;
        prev_thread = th;
        segs++;
        off += SEG_HDR_SIZE + (uint64_t)get_u32(h + 20);
    }
    if (events != t->nevents || segs != t->nblocks) {
        trc_seterr(why, wl, "corrupt (segments hold %llu events, footer says %llu)",
                   (unsigned long long)events, (unsigned long long)t->nevents);
        return -1;
    }
    for (uint32_t i = 0; i < nt; i++)
        if (t->sc[i].events != t->summary.threads[i].events) {
            trc_seterr(why, wl,
                       "corrupt footer (thread %u has %llu events in the segments, the footer "
                       "says %llu)",
                       i, (unsigned long long)t->sc[i].events,
                       (unsigned long long)t->summary.threads[i].events);
            return -1;
        }
    return 0;
}

void trc_read_segments_free(weft_trace *t)
{
    for (uint32_t i = 0; t->sc && i < t->summary.nthreads; i++) {
        free(t->sc[i].segs);
        free(t->sc[i].raw);
        free(t->sc[i].d);
        free(t->sc[i].rec);
    }
    free(t->sc);
    t->sc = NULL;
    lt_free(&t->lt);
}

/* Read, check and decompress thread th's next segment. */
static int load_segment(weft_trace *t, uint32_t th, struct trc_seg_cursor *c)
{
    uint64_t off = c->segs[c->next++];
    uint8_t h[SEG_HDR_SIZE];
    if (trc_pread_all(t->fd, h, sizeof h, off) != (ssize_t)sizeof h)
        return trc_read_fail(t, off, "cannot read header");
    /* Re-check: the file may have changed since open. */
    if (!seg_header_ok(h, off, t->footer_off) || get_u32(h + 4) != th)
        return trc_read_fail(t, off, "bad header");
    uint32_t raw = get_u32(h + 16), len = get_u32(h + 20);
    if (trc_read_zstd_payload(t, off, h, SEG_HDR_SIZE, len, &c->raw, &c->raw_cap, raw) < 0)
        return -1;
    if (get_u64(c->raw + 16) != get_u64(h + 24))
        return trc_read_fail(t, off, "first time unlike its first chunk's");
    c->p = c->raw;
    c->end = c->raw + raw;
    c->chunks_left = get_u32(h + 8);
    c->seg_events = get_u32(h + 12);
    c->seg_off = off;
    return 0;
}

/* Open the segment's next chunk, checked as the writer checked it. */
static int open_chunk(weft_trace *t, uint32_t th, struct trc_seg_cursor *c)
{
    const uint8_t *p = c->p;
    if ((size_t)(c->end - p) < CHUNK_HDR_SIZE)
        return trc_read_fail(t, c->seg_off, "chunk cut short");
    uint32_t count = get_u32(p + 8), len = get_u32(p + 12);
    uint64_t base = get_u64(p + 16);
    if (!trc_chunk_magic_ok(get_u32(p)) || get_u32(p + 4) != th || count == 0 ||
        count > BLOCK_MAX_EVENTS || count > c->seg_events ||
        len > (size_t)(c->end - p) - CHUNK_HDR_SIZE)
        return trc_read_fail(t, c->seg_off, "bad chunk header");
    if (trc_crc32(trc_crc32(0, p, 24), p + CHUNK_HDR_SIZE, len) != get_u32(p + 24))
        return trc_read_fail(t, c->seg_off, "chunk checksum mismatch");
    if (c->any && base < c->last)
        return trc_read_fail(t, c->seg_off, "thread goes back in time");
    if ((!c->d && !(c->d = aligned_alloc(_Alignof(trc_chunk_state), sizeof *c->d))) ||
        (!c->rec && !(c->rec = malloc(SEG_BATCH * sizeof *c->rec))))
        return trc_read_fail(t, c->seg_off, "out of memory");
    const char *why = NULL;
    if (trc_chunk_open(c->d, p, th, &why) < 0)
        return trc_read_fail(t, c->seg_off, why);
    c->p = p + CHUNK_HDR_SIZE + len;
    c->left = count;
    c->seg_events -= count;
    c->chunks_left--;
    return 0;
}

/* Thread th's next batch: 1 = got some, 0 = the thread is done, -1. */
static int fill(weft_trace *t, uint32_t th)
{
    struct trc_seg_cursor *c = &t->sc[th];
    while (c->left == 0) {
        if (c->chunks_left == 0) {
            if (c->p != c->end || c->seg_events)
                return trc_read_fail(t, c->seg_off, "segment longer than its chunks");
            if (c->next == c->nsegs) {
                free(c->raw);
                free(c->d);
                free(c->rec);
                c->raw = NULL;
                c->d = NULL;
                c->rec = NULL;
                c->raw_cap = 0;
                return 0;
            }
            if (load_segment(t, th, c) < 0)
                return -1;
        }
        if (open_chunk(t, th, c) < 0)
            return -1;
    }
    uint32_t n = c->left < SEG_BATCH ? c->left : SEG_BATCH;
    const char *why = NULL;
    if (trc_chunk_decode(c->d, c->rec, n, &why) < 0)
        return trc_read_fail(t, c->seg_off, why);
    c->left -= n;
    if (c->left == 0 && !trc_chunk_consumed(c->d))
        return trc_read_fail(t, c->seg_off, "trailing bytes in a chunk");
    if (c->any && c->rec[0].time < c->last)
        return trc_read_fail(t, c->seg_off, "thread goes back in time");
    c->any = true;
    c->last = c->rec[n - 1].time;
    c->i = 0;
    c->n = n;
    return 1;
}

/* Every thread's first batch, then the first matches. */
static int prime(weft_trace *t)
{
    for (uint32_t th = 0; th < t->lt.k; th++)
        t->lt.key[th] = (lt_key){UINT64_MAX, LT_DONE};
    for (uint32_t th = 0; th < t->summary.nthreads; th++) {
        struct trc_seg_cursor *c = &t->sc[th];
        c->next = c->chunks_left = c->seg_events = c->left = c->i = c->n = 0;
        c->p = c->end = NULL;
        c->any = false;
        int r = fill(t, th);
        if (r < 0)
            return -1;
        if (r)
            t->lt.key[th] = (lt_key){c->rec[0].time, th};
    }
    if (lt_build(&t->lt) < 0)
        return trc_read_fail(t, t->header_len, "out of memory");
    t->primed = true;
    return 0;
}

int trc_read_segment_next(weft_trace *t, weft_event *ev)
{
    if (!t->primed && prime(t) < 0)
        return -1;
    uint32_t th = t->lt.node[0];
    if (t->lt.key[th].rank == LT_DONE)
        return 0;
    struct trc_seg_cursor *c = &t->sc[th];
    const trc_rec *r = &c->rec[c->i];
    *ev = (weft_event){.time = r->time,
                       .addr = r->addr,
                       .pc = r->pc,
                       .thread = th,
                       .kind = r->kind,
                       .size = r->size,
                       .flags = r->flags};
    if (++c->i == c->n) {
        int k = fill(t, th);
        if (k < 0)
            return -1;
        if (k == 0)
            t->lt.key[th] = (lt_key){UINT64_MAX, LT_DONE};
    }
    if (t->lt.key[th].rank != LT_DONE)
        t->lt.key[th].time = c->rec[c->i].time;
    lt_replay(&t->lt, th);
    return 1;
}
