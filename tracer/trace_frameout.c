/* The trace writer's frame output (versions 2 and 3), fed whole frames by
 * the selector (trace_select.c).
 *
 * Encoding a frame (predictions, streams, zstd) costs about three times
 * cutting it from the spool, and every frame starts from empty
 * predictions, so frames are encoded side by side: FRAME_ENCODERS helper
 * threads take the published frames in turn, each with its own tables and
 * zstd context, while the caller cuts the next ones. The caller alone
 * writes, in frame order. The bytes do not depend on which helper encoded
 * which frame, nor on whether any helper started (the caller then encodes
 * each frame itself). The guest is gone by then and its cores are idle. */
#include "trace_finish.h"
#include "quiet_thread.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static int encoder_init(frame_encoder *e, frame_out *f, uint32_t nthreads, int level)
{
    e->fo = f;
    e->zc = ZSTD_createCCtx();
    if (!f->segments &&
        (!(e->raw = malloc(FRAME_RAW_MAX(FRAME_EVENTS))) || trc_frame_init(&e->fr, nthreads) < 0 ||
         trc_frame_alloc_streams(&e->fr, FRAME_EVENTS) < 0))
        return -1;
    if (!e->zc || ZSTD_isError(ZSTD_CCtx_setParameter(e->zc, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(e->zc, ZSTD_c_checksumFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(e->zc, ZSTD_c_nbWorkers, 0)))
        return -1;
    return 0;
}

static void encoder_free(frame_encoder *e)
{
    trc_frame_free(&e->fr);
    ZSTD_freeCCtx(e->zc);
    free(e->raw);
    e->zc = NULL;
    e->raw = NULL;
}

/* zstd with a fixed level, one thread and no dictionary gives the same
 * bytes for the same input, which keeps traces byte-identical run to run. */
/* A segment: its chunks compressed as they are, behind a header whose
 * checksum covers the compressed bytes (each chunk keeps its own). */
static void encode_segment(frame_encoder *e, frame_job *j)
{
    j->zlen = trc_seg_pack(e->zc, j->z, j->zcap, j->in, j->in_len, j->thread, j->nchunks, j->n,
                           j->base_time);
    if (!j->zlen)
        j->err = ENOMEM;
}

static void encode(frame_encoder *e, frame_job *j)
{
    if (j->ready)
        return;
    if (e->fo->segments) {
        encode_segment(e, j);
        return;
    }
    trc_frame_reset(&e->fr, j->base_time);
    trc_frame_put(&e->fr, j->rec, j->n);
    size_t raw = trc_frame_finish(&e->fr, e->raw);
    size_t z = ZSTD_compress2(e->zc, j->z + FRAME_HDR_SIZE, j->zcap - FRAME_HDR_SIZE, e->raw, raw);
    if (ZSTD_isError(z)) {
        j->err = ENOMEM; /* the only way it fails with a bound-sized buffer */
        j->zlen = 0;
        return;
    }
    uint8_t *h = j->z;
    put_u32(h, FRAME_MAGIC);
    put_u32(h + 4, j->n);
    put_u32(h + 8, (uint32_t)raw);
    put_u32(h + 12, (uint32_t)z);
    put_u64(h + 16, j->base_time);
    put_u32(h + 24, trc_crc32(trc_crc32(0, h, 24), h + FRAME_HDR_SIZE, z));
    j->zlen = FRAME_HDR_SIZE + z;
}

static void *encoder_main(void *arg)
{
    frame_encoder *e = arg;
    frame_out *f = e->fo;
    pthread_mutex_lock(&f->lock);
    for (;;) {
        while (f->taken == f->published && !f->stop)
            pthread_cond_wait(&f->wake_enc, &f->lock);
        if (f->taken == f->published)
            break;
        frame_job *j = &f->job[f->taken++ % f->nslots];
        pthread_mutex_unlock(&f->lock);
        encode(e, j);
        pthread_mutex_lock(&f->lock);
        j->encoded = true;
        pthread_cond_signal(&f->wake_main); /* the caller is its only waiter */
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

/* 0, or -1 if out of memory; helpers that do not start are not an error. */
int frame_out_start(frame_out *f, trc_out *o, uint32_t nthreads, int level, bool segments)
{
    memset(f, 0, sizeof *f);
    f->o = o;
    f->segments = segments;
    f->nslots = segments ? SEGMENT_SLOTS : FRAME_SLOTS;
    size_t zcap = segments ? SEG_HDR_SIZE + ZSTD_compressBound(SEG_RAW_MAX)
                           : FRAME_HDR_SIZE + ZSTD_compressBound(FRAME_RAW_MAX(FRAME_EVENTS));
    for (uint32_t i = 0; i < f->nslots; i++) {
        if (segments)
            f->job[i].in = malloc(SEG_RAW_MAX);
        else
            f->job[i].rec = malloc(FRAME_EVENTS * sizeof(trc_rec));
        f->job[i].z = malloc(zcap);
        f->job[i].zcap = zcap;
        if (!(segments ? (void *)f->job[i].in : (void *)f->job[i].rec) || !f->job[i].z)
            return -1;
    }
    /* enc[0] doubles as the caller's own encoder when no helper runs. */
    if (encoder_init(&f->enc[0], f, nthreads, level) < 0)
        return -1;
    if (pthread_mutex_init(&f->lock, NULL) != 0)
        return 0;
    if (pthread_cond_init(&f->wake_enc, NULL) != 0 || pthread_cond_init(&f->wake_main, NULL) != 0) {
        pthread_mutex_destroy(&f->lock);
        return 0;
    }
    for (uint32_t i = 0; i < FRAME_ENCODERS; i++) {
        if (i > 0 && encoder_init(&f->enc[i], f, nthreads, level) < 0) {
            encoder_free(&f->enc[i]);
            break;
        }
        if (quiet_thread_create(&f->enc[i].thread, encoder_main, &f->enc[i]) != 0) {
            if (i > 0)
                encoder_free(&f->enc[i]);
            break;
        }
        f->nenc++;
    }
    if (!f->nenc) {
        pthread_cond_destroy(&f->wake_enc);
        pthread_cond_destroy(&f->wake_main);
        pthread_mutex_destroy(&f->lock);
    }
    return 0;
}

/* Write frame number `written`, waiting for its helper if need be. */
static void write_next(frame_out *f)
{
    frame_job *j = &f->job[f->written % f->nslots];
    if (f->nenc) {
        pthread_mutex_lock(&f->lock);
        while (!j->encoded)
            pthread_cond_wait(&f->wake_main, &f->lock);
        pthread_mutex_unlock(&f->lock);
    }
    if (j->err && !f->o->err)
        f->o->err = j->err;
    if (j->zlen) {
        trc_out_write(f->o, j->z, j->zlen);
        if (!f->o->direct) /* a frame is large: hand it to the kernel now */
            trc_out_flush(f->o);
        f->nframes++;
    }
    f->written++;
}

trc_rec *frame_out_next(frame_out *f)
{
    while (f->published - f->written >= f->nslots)
        write_next(f);
    return f->job[f->published % f->nslots].rec;
}

static void publish(frame_out *f)
{
    pthread_mutex_lock(&f->lock);
    f->published++;
    pthread_cond_signal(&f->wake_enc);
    pthread_mutex_unlock(&f->lock);
}

void frame_out_publish(frame_out *f, uint32_t n, uint64_t base_time)
{
    frame_job *j = &f->job[f->published % f->nslots];
    j->n = n;
    j->base_time = base_time;
    j->err = 0;
    j->zlen = 0;
    j->encoded = false;
    j->ready = false;
    if (!f->nenc) {
        encode(&f->enc[0], j);
        j->encoded = true;
        f->published++;
        return;
    }
    publish(f);
}

uint8_t *frame_out_next_ready(frame_out *f, size_t *cap)
{
    while (f->published - f->written >= f->nslots)
        write_next(f);
    frame_job *j = &f->job[f->published % f->nslots];
    *cap = j->zcap;
    return j->z;
}

void frame_out_publish_ready(frame_out *f, size_t zlen)
{
    frame_job *j = &f->job[f->published % f->nslots];
    j->zlen = zlen;
    j->err = 0;
    j->ready = true;
    if (!f->nenc) {
        j->encoded = true;
        f->published++;
        return;
    }
    /* Nothing to encode, but a helper passes it on all the same: the slot
     * is reused only once the helpers have taken it. */
    j->encoded = false;
    publish(f);
}

uint8_t *frame_out_next_segment(frame_out *f)
{
    while (f->published - f->written >= f->nslots)
        write_next(f);
    return f->job[f->published % f->nslots].in;
}

void frame_out_publish_segment(frame_out *f, size_t len, uint32_t thread, uint32_t nchunks,
                               uint32_t events, uint64_t first_time)
{
    frame_job *j = &f->job[f->published % f->nslots];
    j->in_len = len;
    j->thread = thread;
    j->nchunks = nchunks;
    frame_out_publish(f, events, first_time);
}

void frame_out_stop(frame_out *f)
{
    while (f->written < f->published)
        write_next(f);
    if (!f->nenc)
        return;
    pthread_mutex_lock(&f->lock);
    f->stop = true;
    pthread_cond_broadcast(&f->wake_enc);
    pthread_mutex_unlock(&f->lock);
    for (uint32_t i = 0; i < f->nenc; i++)
        pthread_join(f->enc[i].thread, NULL);
    pthread_cond_destroy(&f->wake_enc);
    pthread_cond_destroy(&f->wake_main);
    pthread_mutex_destroy(&f->lock);
    f->nenc = 0;
}

/* After a failure too: the helpers are stopped (what was published is
 * still written, into a file about to be removed) before anything goes. */
void frame_out_free(frame_out *f)
{
    frame_out_stop(f);
    for (int i = 0; i < FRAME_ENCODERS; i++)
        encoder_free(&f->enc[i]);
    for (int i = 0; i < OUT_SLOTS_MAX; i++) {
        free(f->job[i].rec);
        free(f->job[i].in);
        free(f->job[i].z);
    }
    memset(f, 0, sizeof *f);
}
