/* The trace writer used by the QEMU plugin.
 *
 * Events never accumulate in memory: every append is encoded into chunks
 * (one thread, delta-encoded, checksummed), which join the thread's
 * segment in the making and reach `path`.spool inside it, compressed
 * (trace_spool_segments.c), or, from a writer of raw chunks (learning runs,
 * replays), are written there one by one under a mutex, in arrival order.
 * Only a small index stays in memory. finish() puts the per-thread lists
 * in canonical order (trace_merge.c), so the file depends on each thread's
 * stream and not on how the host threads interleaved their appends.
 * A writer keeping tails only (a campaign's run whose trace nobody reads)
 * keeps each thread's last events in memory and spools skip records. */
#include "trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* How often the free space is looked at while the spool grows. */
#define FREE_CHECK_STEP (64u << 20)

static char *path_with_suffix(const char *path, const char *suffix)
{
    size_t n = strlen(path) + strlen(suffix) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s", path, suffix);
    return s;
}

static void writer_free(weft_trace_writer *w)
{
    if (w->fd >= 0)
        close(w->fd);
    trc_live_close(&w->live, false);
    trc_online_free(&w->online);
    for (uint32_t t = 0; t < w->ntails; t++)
        free(w->tails[t].ev);
    free(w->tails);
    trc_meta_free(&w->meta);
    trc_index_free(&w->ix);
    pthread_mutex_destroy(&w->lock);
    free(w->path);
    free(w->spool_path);
    free(w);
}

weft_trace_writer *weft_trace_writer_open(const char *path, const weft_trace_meta *meta, char *err,
                                          size_t errlen)
{
    if (!path || !*path || !meta) {
        trc_seterr(err, errlen, "weft_trace_writer_open: no path or meta");
        return NULL;
    }
    if (weft_output_in_place(path)) {
        trc_seterr(err, errlen, "%s: " WEFT_TRACE_NOT_A_FILE, path);
        return NULL;
    }
    weft_trace_writer *w = calloc(1, sizeof *w);
    if (!w) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    w->fd = -1;
    w->live.fd = -1;
    pthread_mutex_init(&w->lock, NULL);
    trc_online_init(&w->online, trc_zstd_level(), &w->live);
    w->path = strdup(path);
    w->spool_path = path_with_suffix(path, ".spool");
    if (!w->path || !w->spool_path || trc_meta_copy(&w->meta, meta) < 0) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        writer_free(w);
        return NULL;
    }
    w->fd = open(w->spool_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        trc_seterr(err, errlen, "%s: cannot create: %s", w->spool_path, strerror(errno));
        writer_free(w);
        return NULL;
    }
    /* The spool starts with the meta so that salvage needs nothing else. */
    uint8_t *hdr;
    size_t hlen = trc_header_encode(&w->meta, SPOOL_MAGIC, WEFT_TRACE_VERSION, 0, 0, &hdr);
    if (hlen) {
        free(hdr);
        hlen = trc_header_encode(&w->meta, SPOOL_MAGIC, WEFT_TRACE_VERSION, 0,
                                 hlen + SPOOL_OBJECTS_ROOM, &hdr);
    }
    if (!hlen) {
        trc_seterr(err, errlen, "%s: trace header too large", path);
        unlink(w->spool_path);
        writer_free(w);
        return NULL;
    }
    int e = trc_write_all(w->fd, hdr, hlen);
    free(hdr);
    if (e) {
        trc_seterr(err, errlen, "%s: write failed: %s", w->spool_path, strerror(e));
        unlink(w->spool_path);
        writer_free(w);
        return NULL;
    }
    w->off = hlen;
    w->spool_hdr_len = hlen;
    w->ix.counted = true;
    trc_live_open(&w->live, path, w->fd);
    return w;
}

weft_trace_buf *weft_trace_writer_buf(weft_trace_writer *w, unsigned slot)
{
    return w ? trc_live_slot(&w->live, slot) : NULL;
}

int weft_trace_writer_append_buf(weft_trace_writer *w, weft_trace_buf *b)
{
    uint32_t n = b->n;
    int rc = weft_trace_writer_append(w, b->thread, b->ev, n);
    if (rc == 1)
        return rc; /* stopped: the events stay for salvage, the caller ends */
    /* Empty first, then move the base: a death in between leaves n = 0,
     * never events counted twice (salvage skips what the spool holds).
     * After a failed append the base moves all the same: what the caller
     * records next must not pass for these events. */
    __atomic_store_n(&b->n, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&b->base, b->base + n, __ATOMIC_RELEASE);
    return rc;
}

void weft_trace_writer_set_limits(weft_trace_writer *w, uint64_t max_bytes, uint64_t min_free)
{
    pthread_mutex_lock(&w->lock);
    w->max_bytes = max_bytes;
    w->min_free = min_free;
    w->next_check = 0; /* at the next append */
    pthread_mutex_unlock(&w->lock);
}

void weft_trace_writer_set_segments(weft_trace_writer *w, int segments)
{
    pthread_mutex_lock(&w->lock);
    w->online_off = !segments;
    pthread_mutex_unlock(&w->lock);
}

void weft_trace_writer_set_lingering(weft_trace_writer *w)
{
    if (w)
        w->live.linger = true;
}

void weft_trace_writer_set_durable(weft_trace_writer *w, int durable)
{
    w->not_durable = !durable;
}

void weft_trace_writer_set_loaded(weft_trace_writer *w, const weft_trace_meta *m)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    weft_trace_settings *s = &w->meta.settings;
    w->meta.start_code = m->start_code;
    memcpy(s->range_lo, m->settings.range_lo, sizeof s->range_lo);
    memcpy(s->range_hi, m->settings.range_hi, sizeof s->range_hi);
    if (trc_meta_set_objects(&w->meta, m->objects, m->nobjects) < 0)
        trc_meta_set_objects(&w->meta, NULL, 0);
    /* In the room the header was given at open, objects dropped from the
     * end if need be; a failed rewrite costs a salvaged trace names only. */
    uint8_t *hdr = NULL;
    size_t hlen;
    uint32_t keep = w->meta.nobjects;
    for (;;) {
        weft_trace_meta fit = w->meta;
        fit.nobjects = keep;
        hlen = trc_header_encode(&fit, SPOOL_MAGIC, WEFT_TRACE_VERSION, 0, w->spool_hdr_len, &hdr);
        if (hlen <= w->spool_hdr_len || keep == 0)
            break;
        free(hdr);
        hdr = NULL;
        keep--;
    }
    if (hlen == w->spool_hdr_len && pwrite(w->fd, hdr, hlen, 0) != (ssize_t)hlen)
        fprintf(stderr, "weft: %s: cannot update the spool's header\n", w->spool_path);
    free(hdr);
    pthread_mutex_unlock(&w->lock);
}

int weft_trace_writer_stopped(weft_trace_writer *w, uint64_t *free_bytes)
{
    pthread_mutex_lock(&w->lock);
    int r = w->stopped;
    if (free_bytes)
        *free_bytes = w->free_seen;
    pthread_mutex_unlock(&w->lock);
    return r;
}

/* The spool's last record says why it stops (salvage reads it back). */
static void stop_locked(weft_trace_writer *w, int why)
{
    uint8_t rec[STOP_SIZE] = {0};
    put_u32(rec, STOP_MAGIC);
    put_u32(rec + 4, (uint32_t)why);
    put_u32(rec + 8, trc_crc32(0, rec, 8));
    if (trc_write_all(w->fd, rec, sizeof rec) == 0)
        w->off += sizeof rec;
    w->stopped = why;
}

int trc_writer_limits_allow(weft_trace_writer *w, size_t len)
{
    int why = 0;
    if (w->stopped)
        return w->stopped;
    if (w->max_bytes && w->off + len > w->max_bytes)
        why = WEFT_TRACE_STOP_SIZE;
    if (!why && w->min_free && w->off >= w->next_check) {
        struct statvfs sv;
        /* Room for the trace too: about half a spool of raw chunks, a
         * whole one of segments (finish copies them). */
        uint64_t need = w->min_free + (w->online_on ? w->off : w->off / 2);
        if (fstatvfs(w->fd, &sv) == 0) {
            w->free_seen = (uint64_t)sv.f_bavail * sv.f_frsize;
            if (w->free_seen < need)
                why = WEFT_TRACE_STOP_DISK;
        }
        w->next_check = w->off + FREE_CHECK_STEP;
    }
    if (why)
        stop_locked(w, why);
    return why;
}

void weft_trace_writer_stop(weft_trace_writer *w, int why)
{
    pthread_mutex_lock(&w->lock);
    if (!w->stopped)
        stop_locked(w, why);
    pthread_mutex_unlock(&w->lock);
}

int trc_writer_fail(weft_trace_writer *w, const char *fmt, ...)
{
    if (!w->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->errmsg, sizeof w->errmsg, fmt, ap);
        va_end(ap);
        w->failed = true;
    }
    return -1;
}

/* Check one append's events on their own (no lock needed), and count
 * them into st (NULL: not wanted): a version 4 trace's footer then needs
 * no decoding. */
static int check_events(weft_trace_writer *w, uint32_t thread, const weft_event *ev, size_t n,
                        trc_thread_stats *st)
{
    /* Four sets of counts, summed at the end: one counter incremented at
     * every event (a run of reads) waited each time for its own last
     * store, and that was most of this pass. */
    uint64_t kinds[4][WEFT_EV_KIND_COUNT] = {{0}};
    for (size_t i = 0; i < n; i++) {
        uint8_t k = ev[i].kind;
        if (k >= WEFT_EV_KIND_COUNT || ev[i].size > 64) {
            pthread_mutex_lock(&w->lock);
            trc_writer_fail(w, "%s: thread %u: invalid event (kind %u, size %u)", w->path, thread,
                            k, ev[i].size);
            pthread_mutex_unlock(&w->lock);
            return -1;
        }
        kinds[i & 3][k]++;
        if (st && (k == WEFT_EV_THREAD_START || k == WEFT_EV_THREAD_EXIT))
            trc_stats_note_life(st, k, ev[i].addr);
        if (i && ev[i].time < ev[i - 1].time) {
            pthread_mutex_lock(&w->lock);
            trc_writer_fail(w, "%s: thread %u: event time %llu is before the previous event (%llu)",
                            w->path, thread, (unsigned long long)ev[i].time,
                            (unsigned long long)ev[i - 1].time);
            pthread_mutex_unlock(&w->lock);
            return -1;
        }
    }
    for (int k = 0; st && k < WEFT_EV_KIND_COUNT; k++)
        st->kinds[k] += kinds[0][k] + kinds[1][k] + kinds[2][k] + kinds[3][k];
    return 0;
}

/* An append's counts (st) into its thread's: events[0..n) follow what
 * the thread had appended so far. */
static void stats_merge(trc_thread_stats *x, const trc_thread_stats *st, const weft_event *events,
                        size_t n)
{
    if (!x->events)
        x->first = events[0].time;
    x->events += n;
    x->last = events[n - 1].time;
    for (int k = 0; k < WEFT_EV_KIND_COUNT; k++)
        x->kinds[k] += st->kinds[k];
    if (st->started && !x->started) {
        x->started = true;
        x->parent = st->parent;
    }
    if (st->exited) {
        x->exited = true;
        x->exit_code = st->exit_code;
    }
}

/* The sink of a thread's closed segment: the spool, under the lock. Limits
 * were looked at when its chunks were appended: a segment always goes. */
static int spool_segment(void *ctx, uint32_t thread, const uint8_t *rec, size_t len,
                         const trc_seg *sg)
{
    weft_trace_writer *w = ctx;
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    trc_seg at = sg ? *sg : (trc_seg){0};
    at.off = w->off;
    if (w->failed) {
        rc = -1;
    } else if (!rec) {
        rc = trc_writer_fail(w, "%s: out of memory", w->path);
    } else {
        int e = trc_write_all(w->fd, rec, len);
        if (e)
            rc = trc_writer_fail(w, "%s: write failed: %s", w->spool_path, strerror(e));
        else if (trc_index_add_seg(&w->ix, thread, &at) < 0)
            rc = trc_writer_fail(w, "%s: out of memory", w->path);
        w->off += len;
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* An append's chunks (encoded in buf) into the thread's pending segment,
 * then into the index; the lock is not held. */
static int online_append(weft_trace_writer *w, uint32_t thread, const weft_event *events, size_t n,
                         const trc_thread_stats *st, const uint8_t *buf, trc_chunk *chunks,
                         size_t nchunks)
{
    trc_pending *p = trc_online_thread(&w->online, thread);
    if (!p) {
        pthread_mutex_lock(&w->lock);
        trc_writer_fail(w, "%s: out of memory", w->path);
        pthread_mutex_unlock(&w->lock);
        return -1;
    }
    if (trc_online_add(&w->online, p, thread, buf, chunks, nchunks,
                       events[n - 1].kind == WEFT_EV_THREAD_EXIT, spool_segment, w) < 0)
        return -1;
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    for (size_t c = 0; c < nchunks && rc == 0; c++)
        if (trc_index_add(&w->ix, thread, &chunks[c]) < 0)
            rc = trc_writer_fail(w, "%s: out of memory", w->path);
    if (rc == 0) {
        trc_thread_chunks *tc = &w->ix.threads[thread];
        tc->last_time = events[n - 1].time;
        stats_merge(&tc->st, st, events, n);
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

int weft_trace_writer_append(weft_trace_writer *w, uint32_t thread, const weft_event *events,
                             size_t n)
{
    if (!w)
        return -1;
    if (n == 0)
        return 0;
    if (thread >= WEFT_TRACE_MAX_THREADS) {
        pthread_mutex_lock(&w->lock);
        trc_writer_fail(w, "%s: thread id %u exceeds the limit (%u)", w->path, thread,
                        WEFT_TRACE_MAX_THREADS);
        pthread_mutex_unlock(&w->lock);
        return -1;
    }
    /* A tail-keeping writer's index is not counted (its trace, if any, is
     * made of the tails): no counting on a campaign run's every event. */
    trc_thread_stats st = {0};
    if (check_events(w, thread, events, n, w->tail ? NULL : &st) < 0)
        return -1;
    if (w->tail)
        return trc_writer_tail_append(w, thread, events, n);

    /* Encode outside the lock so appends of different threads overlap. */
    size_t nchunks = (n + BLOCK_EVENTS - 1) / BLOCK_EVENTS;
    uint8_t *buf = malloc(nchunks * CHUNK_HDR_SIZE + n * REC_MAX);
    trc_chunk *chunks = malloc(nchunks * sizeof *chunks);
    if (!buf || !chunks) {
        free(buf);
        free(chunks);
        pthread_mutex_lock(&w->lock);
        trc_writer_fail(w, "%s: out of memory", w->path);
        pthread_mutex_unlock(&w->lock);
        return -1;
    }
    size_t len = 0;
    for (size_t c = 0; c < nchunks; c++) {
        size_t first = c * BLOCK_EVENTS;
        size_t cnt = n - first < BLOCK_EVENTS ? n - first : BLOCK_EVENTS;
        size_t clen = trc_chunk_build(buf + len, thread, events + first, cnt);
        chunks[c] = (trc_chunk){.off = len,
                                .count = (uint32_t)cnt,
                                .len = (uint32_t)(clen - CHUNK_HDR_SIZE),
                                .base_time = events[first].time};
        len += clen;
    }

    int rc = 0;
    pthread_mutex_lock(&w->lock);
    if (!w->mode_set) {
        const char *e = getenv("WEFT_TRACE_ONLINE");
        w->online_on = !w->online_off && w->online.level > 0 && !trc_frames_wanted() &&
                       !(e && !strcmp(e, "0"));
        w->mode_set = true;
    }
    trc_thread_chunks *tc = thread < w->ix.nthreads ? &w->ix.threads[thread] : NULL;
    if (w->failed) {
        rc = -1;
    } else if (trc_writer_limits_allow(w, w->online_on ? 0 : len)) {
        rc = 1;
    } else if (trc_index_seen(&w->ix, thread) && events[0].time < tc->last_time) {
        rc = trc_writer_fail(
            w, "%s: thread %u: event time %llu is before the previous event (%llu)", w->path,
            thread, (unsigned long long)events[0].time, (unsigned long long)tc->last_time);
    } else if (w->online_on) {
        pthread_mutex_unlock(&w->lock);
        rc = online_append(w, thread, events, n, &st, buf, chunks, nchunks);
        free(buf);
        free(chunks);
        return rc;
    } else {
        int e = trc_write_all(w->fd, buf, len);
        if (e) {
            rc = trc_writer_fail(w, "%s: write failed: %s", w->spool_path, strerror(e));
        } else {
            for (size_t c = 0; c < nchunks && rc == 0; c++) {
                chunks[c].off += w->off;
                if (trc_index_add(&w->ix, thread, &chunks[c]) < 0)
                    rc = trc_writer_fail(w, "%s: out of memory", w->path);
            }
            w->off += len;
            tc = &w->ix.threads[thread];
            tc->last_time = events[n - 1].time;
            stats_merge(&tc->st, &st, events, n);
        }
    }
    pthread_mutex_unlock(&w->lock);
    free(buf);
    free(chunks);
    return rc;
}

/* finish, or with summary_only its footer alone: an empty index merges no
 * event, and the makespan still counts the last event of each thread, as
 * the full merge's would. */
static int writer_finish(weft_trace_writer *w, const weft_trace_summary *summary, bool summary_only,
                         char *err, size_t errlen)
{
    if (!w) {
        trc_seterr(err, errlen, "weft_trace_writer_finish: no writer");
        return -1;
    }
    int rc;
    if (w->failed) {
        /* The spool stays: what reached it can still be salvaged. */
        trc_seterr(err, errlen, "%s", w->errmsg);
        rc = -1;
    } else {
        uint32_t add = WEFT_TRACE_COMPLETE;
        if (w->stopped)
            add |= WEFT_TRACE_STOPPED | WEFT_TRACE_TRUNCATED;
        trc_spool_index none = {0}, tails = {0};
        const trc_spool_index *ix = summary_only ? &none : &w->ix;
        weft_trace_summary s = summary ? *summary : (weft_trace_summary){0};
        for (uint32_t t = 0; t < w->ix.nthreads; t++)
            if (trc_index_seen(&w->ix, t) && w->ix.threads[t].last_time > s.makespan)
                s.makespan = w->ix.threads[t].last_time;
        if (summary_only)
            add |= WEFT_TRACE_SUMMARY_ONLY;
        else if (w->tail) { /* the threads' last events only */
            add |= WEFT_TRACE_TRUNCATED;
            ix = &tails;
        }
        if (w->online_on && !summary_only && trc_online_flush(&w->online, spool_segment, w) < 0) {
            /* The spool and the pending areas stay for salvage. */
            trc_seterr(err, errlen, "%s", w->errmsg);
            writer_free(w);
            return -1;
        }
        if (ix == &tails && trc_writer_tail_chunks(w, &tails) < 0) {
            trc_seterr(err, errlen, "%s: cannot write the threads' last events: %s", w->spool_path,
                       strerror(errno ? errno : ENOMEM));
            rc = -1;
        } else {
            rc = trc_merge_to_trace(w->path, w->fd, w->spool_path, &w->meta, ix,
                                    summary || summary_only || w->tail ? &s : NULL, add, false, 0,
                                    !w->not_durable, err, errlen);
        }
        trc_index_free(&tails);
        if (rc == 0) {
            unlink(w->spool_path);
            trc_live_close(&w->live, true);
        }
    }
    writer_free(w);
    return rc;
}

int weft_trace_writer_finish(weft_trace_writer *w, const weft_trace_summary *summary, char *err,
                             size_t errlen)
{
    return writer_finish(w, summary, false, err, errlen);
}

int weft_trace_writer_finish_summary(weft_trace_writer *w, const weft_trace_summary *summary,
                                     char *err, size_t errlen)
{
    return writer_finish(w, summary, true, err, errlen);
}

void weft_trace_writer_abort(weft_trace_writer *w)
{
    if (!w)
        return;
    unlink(w->spool_path);
    trc_live_close(&w->live, true);
    writer_free(w);
}
