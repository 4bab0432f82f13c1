/* The trace writer's version 1 block output (WEFT_TRACE_ZSTD_LEVEL=0), fed
 * by the k-way merge (trace_merge.c); versions 2 and 3: trace_frameout.c.
 *
 * The merge (decoding the spool, choosing the next record) and the output
 * (encoding blocks, checksumming and writing them) each take about half of
 * finish's time and share nothing but the merged records, so the output
 * runs on a helper thread fed through a ring of merged blocks. The guest is
 * gone by then and its cores are idle. If the thread cannot be started the
 * merge encodes each block itself; the bytes are the same either way. */
#include "trace_finish.h"
#include "quiet_thread.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_ROOM (BLOCK_HDR_SIZE + (size_t)BLOCK_EVENTS * REC_MAX)

/* Encode one block in place in the output buffer. */
static void block_encode(block_out *b, const mblock *mb)
{
    trc_delta *d = &b->d;
    uint8_t *h = trc_out_reserve(b->o, BLOCK_ROOM);
    uint8_t *payload = h + BLOCK_HDR_SIZE, *p = payload;
    uint64_t base = mb->rec[0].time;
    trc_delta_reset(d, base, 0);
    for (uint32_t i = 0; i < mb->n; i++) {
        const trc_rec *r = &mb->rec[i];
        /* The merge wrote these on another core; asking for them ahead
         * hides most of the transfer (a quarter of the encoder's time). */
        __builtin_prefetch(r + 24);
        uint32_t t = r->thread;
        uint32_t s = trc_delta_slot(d, t);
        p = trc_rec_put(p, r->kind, t != d->thread, t, r->time - d->time, r->size, r->flags,
                        r->addr - d->prev_addr[s], r->pc - d->prev_pc[s]);
        d->time = r->time;
        d->thread = t;
        d->prev_addr[s] = r->addr;
        d->prev_pc[s] = r->pc;
    }
    size_t len = (size_t)(p - payload);
    put_u32(h, BLOCK_MAGIC);
    put_u32(h + 4, mb->n);
    put_u32(h + 8, (uint32_t)len);
    put_u64(h + 12, base);
    put_u32(h + 20, trc_crc32(trc_crc32(0, h, 20), payload, len));
    trc_out_commit(b->o, BLOCK_HDR_SIZE + len);
    b->nblocks++;
}

static void *encoder_main(void *arg)
{
    block_out *b = arg;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while (b->tail == b->head && !b->done) {
            b->encoder_waits = true;
            pthread_cond_wait(&b->wake_encoder, &b->lock);
        }
        if (b->tail == b->head)
            break;
        pthread_mutex_unlock(&b->lock);
        block_encode(b, &b->slot[b->tail % b->nslots]);
        pthread_mutex_lock(&b->lock);
        b->tail++;
        if (b->merge_waits && b->head - b->tail <= b->nslots / 2) {
            b->merge_waits = false;
            pthread_cond_signal(&b->wake_merge);
        }
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* 0, or -1 if out of memory; a thread that does not start is not an error. */
int block_out_start(block_out *b, trc_out *o, uint32_t nthreads)
{
    b->o = o;
    if (trc_delta_init(&b->d, nthreads, false) < 0)
        return -1;
    b->nslots = RING_SLOTS_BLOCKS;
    b->slot = malloc(b->nslots * sizeof *b->slot);
    if (!b->slot)
        return -1;
    if (pthread_mutex_init(&b->lock, NULL) != 0)
        return 0;
    if (pthread_cond_init(&b->wake_merge, NULL) != 0) {
        pthread_mutex_destroy(&b->lock);
        return 0;
    }
    if (pthread_cond_init(&b->wake_encoder, NULL) != 0) {
        pthread_cond_destroy(&b->wake_merge);
        pthread_mutex_destroy(&b->lock);
        return 0;
    }
    b->threaded = quiet_thread_create(&b->thread, encoder_main, b) == 0;
    if (!b->threaded) {
        pthread_cond_destroy(&b->wake_encoder);
        pthread_cond_destroy(&b->wake_merge);
        pthread_mutex_destroy(&b->lock);
    }
    return 0;
}

/* The slot for the merge's next block, empty. */
mblock *block_out_next(block_out *b)
{
    mblock *mb = &b->slot[0];
    if (b->threaded) {
        pthread_mutex_lock(&b->lock);
        while (b->head - b->tail == b->nslots) {
            b->merge_waits = true;
            pthread_cond_wait(&b->wake_merge, &b->lock);
        }
        mb = &b->slot[b->head % b->nslots];
        pthread_mutex_unlock(&b->lock);
    }
    mb->n = 0;
    return mb;
}

/* Hand over the block filled in the slot from block_out_next. */
void block_out_publish(block_out *b, mblock *mb)
{
    if (!b->threaded) {
        block_encode(b, mb);
        return;
    }
    pthread_mutex_lock(&b->lock);
    b->head++;
    if (b->encoder_waits && b->head - b->tail >= b->nslots / 2) {
        b->encoder_waits = false;
        pthread_cond_signal(&b->wake_encoder);
    }
    pthread_mutex_unlock(&b->lock);
}

/* Wait until every published block is encoded (into the output buffer) and
 * stop the thread; the output is then the caller's again. */
void block_out_stop(block_out *b)
{
    if (b->threaded) {
        pthread_mutex_lock(&b->lock);
        b->done = true;
        b->encoder_waits = false;
        pthread_cond_signal(&b->wake_encoder);
        pthread_mutex_unlock(&b->lock);
        pthread_join(b->thread, NULL);
        pthread_cond_destroy(&b->wake_encoder);
        pthread_cond_destroy(&b->wake_merge);
        pthread_mutex_destroy(&b->lock);
        b->threaded = false;
    }
}

void block_out_free(block_out *b)
{
    block_out_stop(b);
    trc_delta_free(&b->d);
    free(b->slot);
}
