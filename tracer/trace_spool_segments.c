/* Segments written as the threads append (docs/trace-format.md).
 *
 * A version 4 trace is made of segments, each one thread's consecutive
 * chunks compressed together. Finishing used to cut them from a spool of
 * raw chunks after the guest had exited: on a real program that spool was
 * three bytes an event (3.7 GB for pigz on 16 MB), written while the guest
 * ran and read back and compressed after, two fifths of a free trace's
 * wall time. Here each thread compresses its segment when the next chunk
 * would not fit (the same rule the finish applied, so the trace is the
 * same bytes) and the spool receives the segment as the trace will hold
 * it; finishing copies them in canonical order.
 *
 * A segment's chunks wait for it in the thread's pending area, in the
 * buffer file beside the spool (trace_live.c), so a run killed meanwhile
 * loses none of them: salvage finds them there. Where no area can be had
 * they wait in private memory, which a crash loses (as for the buffers). */
#include "trace_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* ---- a segment record, as the spool and the trace hold it ---- */

size_t trc_seg_pack(void *zc, uint8_t *z, size_t zcap, const uint8_t *raw, size_t raw_len,
                    uint32_t thread, uint32_t nchunks, uint32_t events, uint64_t first_time)
{
    size_t n = ZSTD_compress2(zc, z + SEG_HDR_SIZE, zcap - SEG_HDR_SIZE, raw, raw_len);
    if (ZSTD_isError(n))
        return 0;
    put_u32(z, SEG_MAGIC);
    put_u32(z + 4, thread);
    put_u32(z + 8, nchunks);
    put_u32(z + 12, events);
    put_u32(z + 16, (uint32_t)raw_len);
    put_u32(z + 20, (uint32_t)n);
    put_u64(z + 24, first_time);
    put_u32(z + 32, trc_crc32(trc_crc32(0, z, 32), z + SEG_HDR_SIZE, n));
    return SEG_HDR_SIZE + n;
}

void *trc_seg_zctx(int level)
{
    ZSTD_CCtx *zc = ZSTD_createCCtx();
    /* A fixed level, one thread and no checksum or dictionary: the same
     * chunks give the same bytes, run to run. */
    if (zc && (ZSTD_isError(ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, level)) ||
               ZSTD_isError(ZSTD_CCtx_setParameter(zc, ZSTD_c_checksumFlag, 0)) ||
               ZSTD_isError(ZSTD_CCtx_setParameter(zc, ZSTD_c_nbWorkers, 0)))) {
        ZSTD_freeCCtx(zc);
        zc = NULL;
    }
    return zc;
}

void trc_seg_zctx_free(void *zc)
{
    ZSTD_freeCCtx(zc);
}

int trc_seg_parse(const uint8_t *h, uint32_t *thread, trc_seg *sg)
{
    *thread = get_u32(h + 4);
    sg->nchunks = get_u32(h + 8);
    sg->events = get_u32(h + 12);
    sg->raw_len = get_u32(h + 16);
    sg->comp_len = get_u32(h + 20);
    sg->first_time = get_u64(h + 24);
    return get_u32(h) == SEG_MAGIC && *thread < WEFT_TRACE_MAX_THREADS && sg->nchunks > 0 &&
                   sg->events >= sg->nchunks && sg->raw_len <= SEG_RAW_MAX &&
                   sg->nchunks <= sg->raw_len / CHUNK_HDR_SIZE &&
                   sg->comp_len <= ZSTD_compressBound(sg->raw_len)
               ? 0
               : -1;
}

int trc_seg_read(int fd, const trc_seg *sg, uint32_t thread, uint8_t *z, size_t zcap)
{
    size_t need = SEG_HDR_SIZE + (size_t)sg->comp_len;
    trc_seg got;
    uint32_t t;
    if (need > zcap || trc_pread_all(fd, z, need, sg->off) != (ssize_t)need)
        return -1;
    return trc_seg_parse(z, &t, &got) == 0 && t == thread && got.nchunks == sg->nchunks &&
                   got.events == sg->events && got.raw_len == sg->raw_len &&
                   got.comp_len == sg->comp_len && got.first_time == sg->first_time &&
                   trc_crc32(trc_crc32(0, z, 32), z + SEG_HDR_SIZE, sg->comp_len) == get_u32(z + 32)
               ? 0
               : -1;
}

int trc_seg_unpack(void *zd, const uint8_t *z, const trc_seg *sg, uint8_t *raw)
{
    size_t n = ZSTD_decompressDCtx(zd, raw, sg->raw_len, z + SEG_HDR_SIZE, sg->comp_len);
    return !ZSTD_isError(n) && n == sg->raw_len ? 0 : -1;
}

/* ---- the writer's side ---- */

/* One thread's segment in the making. */
struct trc_pending {
    pthread_mutex_t mu;
    trc_pend_area *area; /* in the buffer file, or NULL: raw is private */
    uint8_t *raw;        /* NULL once the thread exited (until it appends again) */
    uint32_t len, nchunks, events;
    uint64_t first_time;
    uint32_t segs;   /* written to the spool so far */
    uint64_t chunks; /* appended so far, those in segments included */
};

int trc_online_init(trc_online *o, int level, trc_live *live)
{
    memset(o, 0, sizeof *o);
    o->level = level;
    o->live = live;
    return pthread_mutex_init(&o->lock, NULL) == 0 ? 0 : -1;
}

void trc_online_free(trc_online *o)
{
    for (uint32_t t = 0; t < o->nth; t++)
        if (o->th[t]) {
            pthread_mutex_destroy(&o->th[t]->mu);
            if (!o->th[t]->area)
                free(o->th[t]->raw);
            free(o->th[t]);
        }
    free(o->th);
    for (uint32_t i = 0; i < o->nzc; i++) {
        trc_seg_zctx_free(o->zc[i].zc);
        free(o->zc[i].z);
    }
    pthread_mutex_destroy(&o->lock);
    memset(o, 0, sizeof *o);
}

trc_pending *trc_online_thread(trc_online *o, uint32_t thread)
{
    pthread_mutex_lock(&o->lock);
    trc_pending *p = NULL;
    if (thread >= o->nth) {
        uint32_t n = thread + 1 > 2 * o->nth ? thread + 1 : 2 * o->nth;
        trc_pending **v = realloc(o->th, (size_t)n * sizeof *v);
        if (!v)
            goto out;
        memset(v + o->nth, 0, (size_t)(n - o->nth) * sizeof *v);
        o->th = v;
        o->nth = n;
    }
    if (!(p = o->th[thread]) && (p = calloc(1, sizeof *p))) {
        pthread_mutex_init(&p->mu, NULL);
        o->th[thread] = p;
    }
out:
    pthread_mutex_unlock(&o->lock);
    return p;
}

/* Where p's chunks wait: an area of the buffer file, or private memory. */
static int pending_raw(trc_online *o, trc_pending *p, uint32_t thread)
{
    if (p->raw)
        return 0;
    p->area = trc_live_area(o->live, thread, p->segs);
    p->raw = p->area ? p->area->raw : malloc(SEG_RAW_TARGET);
    return p->raw ? 0 : -1;
}

/* The thread exited: its area (or memory) goes back, for threads to come. */
static void pending_release(trc_online *o, trc_pending *p)
{
    if (p->area)
        trc_live_area_give(o->live, p->area);
    else
        free(p->raw);
    p->area = NULL;
    p->raw = NULL;
}

/* A zstd context and its output buffer, from the idle ones or new. */
static int zctx_take(trc_online *o, trc_seg_zctx_buf *out)
{
    pthread_mutex_lock(&o->lock);
    int have = o->nzc > 0;
    if (have)
        *out = o->zc[--o->nzc];
    pthread_mutex_unlock(&o->lock);
    if (have)
        return 0;
    out->zc = trc_seg_zctx(o->level);
    out->z = malloc(SEG_HDR_SIZE + ZSTD_compressBound(SEG_RAW_TARGET));
    if (out->zc && out->z)
        return 0;
    trc_seg_zctx_free(out->zc);
    free(out->z);
    return -1;
}

static void zctx_give(trc_online *o, trc_seg_zctx_buf *b)
{
    pthread_mutex_lock(&o->lock);
    if (o->nzc < TRC_ONLINE_ZCTX) {
        o->zc[o->nzc++] = *b;
        b = NULL;
    }
    pthread_mutex_unlock(&o->lock);
    if (b) {
        trc_seg_zctx_free(b->zc);
        free(b->z);
    }
}

/* Close p's segment (if it has chunks) into sink; p's lock is held. */
static int online_close(trc_online *o, trc_pending *p, uint32_t thread, trc_seg_sink sink,
                        void *ctx)
{
    if (!p->nchunks)
        return 0;
    trc_seg_zctx_buf zb;
    if (zctx_take(o, &zb) < 0)
        return sink(ctx, thread, NULL, 0, NULL);
    trc_seg sg = {.raw_len = p->len,
                  .nchunks = p->nchunks,
                  .events = p->events,
                  .first_time = p->first_time,
                  .chunk0 = (size_t)(p->chunks - p->nchunks)};
    size_t zlen = trc_seg_pack(zb.zc, zb.z, SEG_HDR_SIZE + ZSTD_compressBound(SEG_RAW_TARGET),
                               p->raw, p->len, thread, p->nchunks, p->events, p->first_time);
    sg.comp_len = zlen ? (uint32_t)(zlen - SEG_HDR_SIZE) : 0;
    int rc = sink(ctx, thread, zlen ? zb.z : NULL, zlen, &sg);
    zctx_give(o, &zb);
    if (rc)
        return rc;
    /* In the spool now. The area empties first: a death in between leaves
     * an empty area, or one whose segs_before says the spool has it. */
    p->len = p->nchunks = p->events = 0;
    p->segs++;
    if (p->area) {
        __atomic_store_n(&p->area->len, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&p->area->segs_before, p->segs, __ATOMIC_RELEASE);
    }
    return 0;
}

int trc_online_add(trc_online *o, trc_pending *p, uint32_t thread, const uint8_t *buf,
                   trc_chunk *chunks, size_t nchunks, int exited, trc_seg_sink sink, void *ctx)
{
    int rc = 0;
    pthread_mutex_lock(&p->mu);
    if (pending_raw(o, p, thread) < 0) {
        pthread_mutex_unlock(&p->mu);
        return sink(ctx, thread, NULL, 0, NULL);
    }
    for (size_t c = 0; c < nchunks; c++) {
        uint32_t len = CHUNK_HDR_SIZE + chunks[c].len;
        if (p->nchunks && p->len + len > SEG_RAW_TARGET &&
            (rc = online_close(o, p, thread, sink, ctx)) != 0)
            break;
        memcpy(p->raw + p->len, buf + chunks[c].off, len);
        if (!p->nchunks)
            p->first_time = chunks[c].base_time;
        /* Where the index will find it: the segment it will be in. */
        chunks[c].off = p->len;
        chunks[c].seg = p->segs + 1;
        p->len += len;
        p->nchunks++;
        p->events += chunks[c].count;
        p->chunks++;
        /* The bytes before the length that covers them (salvage). */
        if (p->area)
            __atomic_store_n(&p->area->len, p->len, __ATOMIC_RELEASE);
    }
    /* Its last events: the segment the finish would end here, closed now,
     * so that a program of many short threads holds one area per thread
     * alive, not per thread that ever ran. */
    if (rc == 0 && exited && (rc = online_close(o, p, thread, sink, ctx)) == 0)
        pending_release(o, p);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int trc_online_flush(trc_online *o, trc_seg_sink sink, void *ctx)
{
    int rc = 0;
    for (uint32_t t = 0; t < o->nth && rc == 0; t++)
        if (o->th[t]) {
            pthread_mutex_lock(&o->th[t]->mu);
            rc = online_close(o, o->th[t], t, sink, ctx);
            pthread_mutex_unlock(&o->th[t]->mu);
        }
    return rc;
}
