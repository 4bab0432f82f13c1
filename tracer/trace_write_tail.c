/* A trace writer that keeps each thread's last events only (a campaign's
 * run whose trace nobody reads unless it deadlocks): the rings, their skip
 * records in the spool, and the chunks they become at finish. */
#include "trace_writer.h"

#include <stdlib.h>
#include <string.h>

void weft_trace_writer_keep_tail(weft_trace_writer *w, uint32_t events_per_thread)
{
    if (w)
        w->tail = events_per_thread;
}

/* The ring of thread t, made on its first append; NULL: out of memory. */
static struct writer_tail *tail_of(weft_trace_writer *w, uint32_t t)
{
    if (t >= w->ntails) {
        uint32_t n = t + 1 > 2 * w->ntails ? t + 1 : 2 * w->ntails;
        struct writer_tail *v = realloc(w->tails, (size_t)n * sizeof *v);
        if (!v)
            return NULL;
        memset(v + w->ntails, 0, (size_t)(n - w->ntails) * sizeof *v);
        w->tails = v;
        w->ntails = n;
    }
    struct writer_tail *r = &w->tails[t];
    if (!r->ev)
        r->ev = malloc((size_t)w->tail * sizeof *r->ev);
    return r->ev ? r : NULL;
}

/* An append that keeps the events' tail in memory and writes a skip
 * record: encoding and writing the events of a run nobody reads (a
 * campaign's, without --save-trace) was a tenth of a real program's PCT run.
 * The ring is the thread's last events whatever the appends' sizes; a
 * deadlocked run's trace is made of it (trc_writer_tail_chunks). */
int trc_writer_tail_append(weft_trace_writer *w, uint32_t thread, const weft_event *events,
                           size_t n)
{
    uint8_t rec[CHUNK_HDR_SIZE] = {0};
    put_u32(rec, SKIP_MAGIC);
    put_u32(rec + 4, thread);
    put_u32(rec + 8, (uint32_t)n);
    put_u64(rec + 16, events[n - 1].time);
    put_u32(rec + 24, trc_crc32(0, rec, 24));
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    struct writer_tail *r = NULL;
    if (w->failed) {
        rc = -1;
    } else if (trc_writer_limits_allow(w, sizeof rec)) {
        rc = 1;
    } else if (trc_index_seen(&w->ix, thread) && events[0].time < w->ix.threads[thread].last_time) {
        rc =
            trc_writer_fail(w, "%s: thread %u: event time %llu is before the previous event (%llu)",
                            w->path, thread, (unsigned long long)events[0].time,
                            (unsigned long long)w->ix.threads[thread].last_time);
    } else if (!(r = tail_of(w, thread)) || trc_index_skip(&w->ix, thread, n, events[n - 1].time)) {
        rc = trc_writer_fail(w, "%s: out of memory", w->path);
    } else {
        int e = trc_write_all(w->fd, rec, sizeof rec);
        if (e)
            rc = trc_writer_fail(w, "%s: write failed: %s", w->spool_path, strerror(e));
        w->off += sizeof rec;
        size_t k = n < w->tail ? n : w->tail, at = (size_t)((r->n + n - k) % w->tail);
        size_t first = k < w->tail - at ? k : w->tail - at; /* up to the ring's end */
        memcpy(r->ev + at, events + n - k, first * sizeof *events);
        memcpy(r->ev, events + n - k + first, (k - first) * sizeof *events);
        r->n += n;
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* Finishing with events after tail_append: the tails go to the spool as
 * chunks, in a fresh index for the merge (the skip records are not read). */
int trc_writer_tail_chunks(weft_trace_writer *w, trc_spool_index *tix)
{
    uint8_t *buf = malloc(CHUNK_HDR_SIZE + (size_t)BLOCK_EVENTS * REC_MAX);
    weft_event *ev = malloc((size_t)w->tail * sizeof *ev);
    int rc = buf && ev ? 0 : -1;
    for (uint32_t t = 0; t < w->ntails && rc == 0; t++) {
        const struct writer_tail *r = &w->tails[t];
        uint64_t k = r->n < w->tail ? r->n : w->tail;
        for (uint64_t i = 0; i < k; i++)
            ev[i] = r->ev[(r->n - k + i) % w->tail];
        for (uint64_t i = 0; i < k && rc == 0; i += BLOCK_EVENTS) {
            size_t cnt = k - i < BLOCK_EVENTS ? (size_t)(k - i) : BLOCK_EVENTS;
            size_t len = trc_chunk_build(buf, t, ev + i, cnt);
            trc_chunk c = {.off = w->off,
                           .count = (uint32_t)cnt,
                           .len = (uint32_t)(len - CHUNK_HDR_SIZE),
                           .base_time = ev[i].time};
            if (trc_write_all(w->fd, buf, len) || trc_index_add(tix, t, &c) < 0)
                rc = -1;
            w->off += len;
        }
    }
    free(buf);
    free(ev);
    return rc;
}
