/* From spool to canonical trace (salvage of a spool whose writer never
 * finished is in trace_salvage.c, and ends here too): per-thread cursors
 * over the chunk lists, then frames cut from them (trace_select.c) or, for
 * version 1 blocks, a k-way merge of every record.
 *
 * Memory is O(threads x chunk) for the cursors, plus one frame's records
 * per slot of the frame output; the merge holds one block. */
#include "trace_finish.h"
#include "quiet_thread.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* Records decoded ahead per thread: enough to amortize a refill, few enough
 * that every thread's batch stays in cache while the merge walks them. */
#define MERGE_BATCH 256
/* Output buffer: fewer, larger writes; it must hold a whole block. Direct
 * output waits for the device at each write: larger still. */
#define OUT_BUF_SIZE (1u << 20)
#define OUT_DIRECT_BUF_SIZE (8u << 20)

void trc_cursor_free(trc_cursor *c)
{
    free(c->buf);
    free(c->d);
    free(c->seg_z);
    free(c->seg_raw);
    ZSTD_freeDCtx(c->zd);
    c->buf = NULL;
    c->d = NULL;
    c->seg_z = c->seg_raw = NULL;
    c->zd = NULL;
    c->seg = 0;
}

/* Segment seg (1-based) of thread t decompressed into c->seg_raw. */
static int cursor_segment(trc_merge *m, uint32_t t, trc_cursor *c, uint32_t seg)
{
    const trc_thread_chunks *tc = &m->ix->threads[t];
    if (c->seg == seg)
        return 0;
    c->seg = 0;
    size_t zcap = SEG_HDR_SIZE + ZSTD_compressBound(SEG_RAW_MAX);
    if ((!c->seg_z && !(c->seg_z = malloc(zcap))) ||
        (!c->seg_raw && !(c->seg_raw = malloc(SEG_RAW_MAX))) ||
        (!c->zd && !(c->zd = ZSTD_createDCtx()))) {
        trc_seterr(m->err, m->errlen, "%s: out of memory", m->spool_path);
        return -1;
    }
    const trc_seg *sg = &tc->segs[seg - 1];
    if (seg > tc->nsegs || trc_seg_read(m->spool_fd, sg, t, c->seg_z, zcap) < 0 ||
        trc_seg_unpack(c->zd, c->seg_z, sg, c->seg_raw) < 0) {
        trc_seterr(m->err, m->errlen, "%s: segment at offset %llu changed on disk", m->spool_path,
                   seg > tc->nsegs ? 0ull : (unsigned long long)sg->off);
        return -1;
    }
    c->seg = seg;
    return 0;
}

static int cursor_load(trc_merge *m, uint32_t t, trc_cursor *c)
{
    const trc_chunk *k = &m->ix->threads[t].v[c->chunk];
    size_t need = CHUNK_HDR_SIZE + (size_t)k->len;
    const uint8_t *b;
    ssize_t r;
    if (k->seg) { /* in a segment written as the thread appended */
        if (cursor_segment(m, t, c, k->seg) < 0)
            return -1;
        uint32_t raw = m->ix->threads[t].segs[k->seg - 1].raw_len;
        b = c->seg_raw + k->off;
        r = k->off <= raw && need <= raw - k->off ? (ssize_t)need : 0;
    } else {
        if (need > c->cap) {
            uint8_t *nb = realloc(c->buf, need);
            if (!nb) {
                trc_seterr(m->err, m->errlen, "%s: out of memory", m->spool_path);
                return -1;
            }
            c->buf = nb;
            c->cap = need;
        }
        r = trc_pread_all(m->spool_fd, c->buf, need, k->off);
        if (r < 0) {
            trc_seterr(m->err, m->errlen, "%s: read failed: %s", m->spool_path, strerror(errno));
            return -1;
        }
        b = c->buf;
    }
    if ((size_t)r != need || !trc_chunk_matches(b, t, k)) {
        trc_seterr(m->err, m->errlen, "%s: chunk at offset %llu%s changed on disk", m->spool_path,
                   (unsigned long long)k->off, k->seg ? " of a segment" : "");
        return -1;
    }
    c->chunk++;
    c->left = k->count;
    if (!c->d && !(c->d = aligned_alloc(_Alignof(trc_chunk_state), sizeof *c->d))) {
        trc_seterr(m->err, m->errlen, "%s: out of memory", m->spool_path);
        return -1;
    }
    const char *why = NULL;
    if (trc_chunk_open(c->d, b, t, &why) < 0) {
        trc_seterr(m->err, m->errlen, "%s: undecodable chunk of thread %u: %s", m->spool_path, t,
                   why);
        return -1;
    }
    return 0;
}

int trc_merge_decode(trc_merge *m, uint32_t t, trc_rec *out, uint32_t max)
{
    trc_cursor *c = &m->cur[t];
    const trc_thread_chunks *tc = &m->ix->threads[t];
    while (c->left == 0) {
        if (c->chunk >= tc->n) {
            if (c->seg_raw) { /* done with its segments: about 4 MB a thread */
                free(c->seg_z);
                free(c->seg_raw);
                c->seg_z = c->seg_raw = NULL;
                c->seg = 0;
            }
            return 0;
        }
        if (cursor_load(m, t, c) < 0)
            return -1;
    }
    uint32_t n = c->left < max ? c->left : max;
    const char *why = NULL;
    if (trc_chunk_decode(c->d, out, n, &why) < 0) {
        trc_seterr(m->err, m->errlen, "%s: undecodable event of thread %u: %s", m->spool_path, t,
                   why);
        return -1;
    }
    c->left -= n;
    /* Times never decrease within a chunk (deltas are unsigned), so only
     * the step from the previous batch needs checking. */
    trc_thread_stats *x = &m->st[t];
    if (x->events && out[0].time < x->last) {
        trc_seterr(m->err, m->errlen, "%s: thread %u goes back in time", m->spool_path, t);
        return -1;
    }
    if (!x->events)
        x->first = out[0].time;
    x->events += n;
    x->last = out[n - 1].time;
    for (uint32_t i = 0; i < n; i++)
        trc_stats_note(x, out[i].kind, out[i].addr);
    return (int)n;
}

/* Version 1: decode thread t's next batch into its cursor: 1 = got some,
 * 0 = the thread is done, -1 = error. */
static int cursor_fill(trc_merge *m, uint32_t t)
{
    trc_cursor *c = &m->cur[t];
    int n = trc_merge_decode(m, t, c->rec, c->max);
    if (n <= 0)
        return n;
    c->i = 0;
    c->n = (uint32_t)n;
    return 1;
}

static weft_trace_thread *build_threads(const weft_trace_summary *s, const trc_thread_stats *st,
                                        uint32_t nst, uint32_t *nout, uint64_t *max_time)
{
    uint32_t n = s && s->nthreads > nst ? s->nthreads : nst;
    weft_trace_thread *t = calloc(n ? n : 1, sizeof *t);
    if (!t)
        return NULL;
    *max_time = 0;
    for (uint32_t i = 0; i < n; i++) {
        const trc_thread_stats *x = i < nst ? &st[i] : NULL;
        if (s && i < s->nthreads) {
            t[i] = s->threads[i];
        } else {
            /* Host tids are not recorded (they differ from run to run). */
            t[i].parent = x && x->started ? x->parent : UINT32_MAX;
            if (x && x->events) {
                t[i].start_time = x->first;
                t[i].end_time = x->last;
                t[i].exited = x->exited;
                t[i].exit_code = x->exit_code;
            }
        }
        t[i].id = i;
        t[i].events = x ? x->events : 0;
        for (int k = 0; k < WEFT_EV_KIND_COUNT; k++)
            t[i].kinds[k] = x ? x->kinds[k] : 0;
        if (t[i].end_time > *max_time)
            *max_time = t[i].end_time;
        if (x && x->events && x->last > *max_time)
            *max_time = x->last;
    }
    *nout = n;
    return t;
}

static int fsync_dir_of(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return -1;
    char *slash = strrchr(dir, '/');
    const char *d = ".";
    if (slash) {
        slash[slash == dir ? 1 : 0] = 0;
        d = dir;
    }
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd); /* best effort: some file systems refuse fsync on dirs */
        close(fd);
    }
    free(dir);
    return 0;
}

/* The trace being written: a temporary file beside the destination, renamed
 * into place only when complete, so a reader never sees half a trace and a
 * failed merge leaves any earlier trace at path as it was. */
typedef struct merge_out {
    const char *path;
    char *tmp;
    int fd;
    trc_out o;
    block_out b;      /* version 1 */
    frame_out f;      /* versions 2 to 4 */
    bool started;     /* b or f */
    bool durable;     /* fsync the file and its folder (trace.h) */
    uint32_t version; /* 4 (segments), 3 (frames), or 1 (zstd level 0) */
} merge_out;

/* One decode batch per thread, carved from a single allocation; smaller for
 * threads with fewer events, so a run with many short threads does not pay
 * MERGE_BATCH for each. */
static trc_rec *alloc_batches(const trc_spool_index *ix)
{
    size_t nrec = 0;
    for (uint32_t t = 0; t < ix->nthreads; t++)
        nrec += ix->threads[t].events < MERGE_BATCH ? ix->threads[t].events : MERGE_BATCH;
    return malloc((nrec ? nrec : 1) * sizeof(trc_rec));
}

/* Create the temporary file and write the header; the block output starts
 * here too, as its encoder thread (if any) writes behind the header. */
static int out_open(merge_out *w, const weft_trace_meta *meta, const trc_spool_index *ix, char *err,
                    size_t errlen)
{
    uint32_t nt = ix->nthreads;
    const char *path = w->path;
    size_t tlen = strlen(path) + 32;
    if (!(w->tmp = malloc(tlen))) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        return -1;
    }
    snprintf(w->tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    /* A trace that must reach the disk before the rename goes around the
     * page cache: copying a real program's gigabyte or two into it cost
     * finish more than all its other work (kernel time; one core), and
     * the fsync then found nothing left to write. Where the file system
     * refuses O_DIRECT, the page cache as before. */
    int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
    w->fd = w->durable ? open(w->tmp, flags | O_DIRECT, 0644) : -1;
    if (w->fd < 0)
        w->fd = open(w->tmp, flags, 0644);
    if (w->fd < 0) {
        trc_seterr(err, errlen, "%s: cannot create %s: %s", path, w->tmp, strerror(errno));
        return -1;
    }
    if (trc_out_init(&w->o, w->fd, w->durable ? OUT_DIRECT_BUF_SIZE : OUT_BUF_SIZE) < 0) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int level = trc_zstd_level();
    w->version = !level ? 1 : trc_frames_wanted() ? 3 : WEFT_TRACE_VERSION;
    uint8_t *hdr = NULL;
    size_t hlen = trc_header_encode(meta, TRC_MAGIC, w->version, (uint32_t)level, 0, &hdr);
    if (!hlen) {
        free(hdr);
        trc_seterr(err, errlen, "%s: trace header too large", path);
        return -1;
    }
    trc_out_write(&w->o, hdr, hlen);
    free(hdr);
    w->started = true;
    if ((level ? frame_out_start(&w->f, &w->o, nt, level, w->version >= 4)
               : block_out_start(&w->b, &w->o, nt)) < 0) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        return -1;
    }
    return 0;
}

/* Give each cursor its batch and decode the first one, so every thread with
 * events has a key in the tree before the first match is played. */
static int merge_prime(trc_merge *m, ltree *lt, trc_rec *recs)
{
    trc_rec *next = recs;
    for (uint32_t t = 0; t < m->ix->nthreads; t++) {
        trc_cursor *c = &m->cur[t];
        uint64_t ev = m->ix->threads[t].events;
        c->rec = next;
        c->max = ev < MERGE_BATCH ? (uint32_t)ev : MERGE_BATCH;
        next += c->max;
        if (m->ix->threads[t].n == 0)
            continue;
        int r = cursor_fill(m, t);
        if (r < 0)
            return -1;
        if (r)
            lt->key[t] = (lt_key){c->rec[0].time, t};
    }
    return 0;
}

/* The k-way merge proper: hand the overall winner to the block output, step
 * its cursor, replay its path. Ties in time go to the lower thread id, which
 * is what makes the order (and so the trace's bytes) canonical. */
static int merge_events(trc_merge *m, ltree *lt, block_out *b, uint64_t *nevents)
{
    mblock *mb = block_out_next(b);
    for (;;) {
        uint32_t t = lt->node[0];
        if (lt->key[t].rank == LT_DONE)
            break;
        trc_cursor *c = &m->cur[t];
        mb->rec[mb->n] = c->rec[c->i];
        if (++mb->n == BLOCK_EVENTS) {
            block_out_publish(b, mb);
            mb = block_out_next(b);
        }
        (*nevents)++;
        if (++c->i == c->n) {
            int r = cursor_fill(m, t);
            if (r < 0)
                return -1;
            if (r == 0)
                lt->key[t] = (lt_key){UINT64_MAX, LT_DONE};
        }
        if (lt->key[t].rank != LT_DONE)
            lt->key[t].time = c->rec[c->i].time;
        lt_replay(lt, t);
    }
    if (mb->n)
        block_out_publish(b, mb);
    block_out_stop(b);
    return 0;
}

/* Decoding for counts, shared by the caller and a helper: each takes the
 * next thread in turn (cursors and counts are per thread), with its own
 * copy of the merge so that an error message is its own. */
typedef struct count_job {
    trc_merge m;
    _Atomic uint32_t *next;
    char err[512];
    int rc;
} count_job;

static void *count_main(void *arg)
{
    count_job *j = arg;
    trc_rec *batch = malloc(BLOCK_EVENTS * sizeof *batch);
    if (!batch) {
        trc_seterr(j->m.err, j->m.errlen, "%s: out of memory", j->m.spool_path);
        j->rc = -1;
        return NULL;
    }
    for (uint32_t t; j->rc == 0 && (t = atomic_fetch_add(j->next, 1)) < j->m.ix->nthreads;) {
        int n;
        while ((n = trc_merge_decode(&j->m, t, batch, BLOCK_EVENTS)) > 0)
            ;
        j->rc = n;
    }
    free(batch);
    return NULL;
}

/* Below this many events a helper thread costs more than it saves. */
#define COUNT_HELPER_EVENTS (1u << 20)

/* Version 4's per-thread counts: the writer's own, gathered as it
 * appended; an index rebuilt from a spool (salvage) or of a run's tails
 * has none, and its chunks are decoded once for them (checked as the merge
 * checks them), threads side by side on two cores. */
static int count_threads(trc_merge *m)
{
    const trc_spool_index *ix = m->ix;
    if (ix->counted) {
        for (uint32_t t = 0; t < ix->nthreads; t++)
            m->st[t] = ix->threads[t].st;
        return 0;
    }
    uint64_t events = 0;
    for (uint32_t t = 0; t < ix->nthreads; t++)
        events += ix->threads[t].events;
    _Atomic uint32_t next = 0;
    count_job a = {.m = *m, .next = &next}, b = {.m = *m, .next = &next};
    b.m.err = b.err;
    b.m.errlen = sizeof b.err;
    pthread_t helper;
    bool helped = false;
    if (ix->nthreads > 1 && events >= COUNT_HELPER_EVENTS) {
        helped = quiet_thread_create(&helper, count_main, &b) == 0;
    }
    count_main(&a);
    if (helped) {
        pthread_join(helper, NULL);
        if (a.rc == 0 && b.rc != 0) {
            trc_seterr(m->err, m->errlen, "%s", b.err);
            return -1;
        }
    }
    return a.rc;
}

/* The footer's summary: the writer's when it finished (salvage has none and
 * rebuilds it from what the merge saw), with the merge's event counts. The
 * thread table is malloc'd into s->threads. */
static int merged_summary(const weft_trace_summary *summary, const trc_thread_stats *st,
                          const trc_spool_index *ix, uint32_t add_flags, bool salvage,
                          int32_t exit_status, weft_trace_summary *s)
{
    uint64_t max_time;
    s->threads = build_threads(summary, st, ix->nthreads, &s->nthreads, &max_time);
    if (!s->threads)
        return -1;
    /* Events a tail-keeping writer did not keep (salvage saw their skip
     * records) still ended their threads where they did. */
    for (uint32_t t = 0; t < ix->nthreads && !summary; t++) {
        uint64_t last = ix->threads[t].last_time;
        if (ix->threads[t].skipped && last > s->threads[t].end_time) {
            s->threads[t].end_time = last;
            if (last > max_time)
                max_time = last;
        }
    }
    s->flags = (summary ? summary->flags : 0) | add_flags;
    s->exit_status = summary && !salvage ? summary->exit_status : exit_status;
    s->stall_escapes = summary ? summary->stall_escapes : 0;
    s->makespan = summary && summary->makespan > max_time ? summary->makespan : max_time;
    return 0;
}

/* Footer, then the trailer that points at it: the trailer goes last, so a
 * reader that finds it knows the file was written to the end. */
static int out_footer(merge_out *w, const weft_trace_summary *s, uint64_t nevents, char *err,
                      size_t errlen)
{
    uint64_t foot_off = w->o.off;
    uint8_t *foot = NULL;
    size_t flen =
        trc_footer_encode(s, nevents, w->version > 1 ? w->f.nframes : w->b.nblocks, &foot);
    if (!flen) {
        free(foot);
        trc_seterr(err, errlen, "%s: out of memory", w->path);
        return -1;
    }
    trc_out_write(&w->o, foot, flen);
    free(foot);
    uint8_t trailer[TRAILER_SIZE];
    put_u64(trailer, foot_off);
    memcpy(trailer + 8, TRAILER_MAGIC, 8);
    trc_out_write(&w->o, trailer, sizeof trailer);
    return 0;
}

/* Make the file durable before it replaces anything at path: a crash after
 * the rename must not leave a trace whose blocks never reached the disk. */
static int out_commit(merge_out *w, char *err, size_t errlen)
{
    trc_out *o = &w->o;
    trc_out_close(o);
    if (!o->err && w->durable && fsync(w->fd) < 0)
        o->err = errno;
    if (close(w->fd) < 0 && !o->err)
        o->err = errno;
    w->fd = -1;
    if (o->err) {
        trc_seterr(err, errlen, "%s: cannot write the trace: %s", w->path, strerror(o->err));
        return -1;
    }
    if (rename(w->tmp, w->path) < 0) {
        trc_seterr(err, errlen, "%s: cannot rename %s into place: %s", w->path, w->tmp,
                   strerror(errno));
        return -1;
    }
    if (w->durable)
        fsync_dir_of(w->path);
    return 0;
}

/* Whatever was reached: the encoder thread is joined before its file
 * descriptor goes, and a failed merge leaves no temporary file behind. */
static void out_close(merge_out *w, bool failed)
{
    if (w->started && w->version > 1)
        frame_out_free(&w->f);
    else if (w->started)
        block_out_free(&w->b);
    if (w->fd >= 0)
        close(w->fd);
    if (failed && w->tmp)
        unlink(w->tmp);
    trc_out_free(&w->o);
    free(w->tmp);
}

int trc_merge_to_trace(const char *path, int spool_fd, const char *spool_path,
                       const weft_trace_meta *meta, const trc_spool_index *ix,
                       const weft_trace_summary *summary, uint32_t add_flags, bool salvage,
                       int32_t exit_status, bool durable, char *err, size_t errlen)
{
    uint32_t nt = ix->nthreads;
    trc_merge m = {spool_fd, spool_path, ix, err, errlen, NULL, NULL};
    merge_out w = {.path = path, .fd = -1, .o = {.fd = -1}, .durable = durable};
    weft_trace_summary s = {0};
    ltree lt = {0};
    uint64_t nevents = 0;
    int rc = -1;
    m.cur = calloc(nt ? nt : 1, sizeof *m.cur);
    m.st = calloc(nt ? nt : 1, sizeof *m.st);
    trc_rec *recs = NULL;
    if (!m.cur || !m.st) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        goto out;
    }
    if (out_open(&w, meta, ix, err, errlen) < 0)
        goto out;
    if (w.version >= 4) {
        if (count_threads(&m) < 0 || trc_write_segments(&m, &w.f, &nevents) < 0)
            goto out;
        frame_out_stop(&w.f);
    } else if (w.version > 1) {
        if (trc_select_frames(&m, &w.f, &nevents) < 0)
            goto out;
        frame_out_stop(&w.f);
    } else {
        if (!(recs = alloc_batches(ix)) || lt_init(&lt, nt) < 0) {
            trc_seterr(err, errlen, "%s: out of memory", path);
            goto out;
        }
        if (merge_prime(&m, &lt, recs) < 0)
            goto out;
        if (lt_build(&lt) < 0) {
            trc_seterr(err, errlen, "%s: out of memory", path);
            goto out;
        }
        if (merge_events(&m, &lt, &w.b, &nevents) < 0)
            goto out;
    }
    if (merged_summary(summary, m.st, ix, add_flags, salvage, exit_status, &s) < 0) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        goto out;
    }
    s.has_kinds = w.version >= 3;
    if (out_footer(&w, &s, nevents, err, errlen) < 0 || out_commit(&w, err, errlen) < 0)
        goto out;
    rc = 0;
out:
    out_close(&w, rc < 0);
    for (uint32_t t = 0; m.cur && t < nt; t++)
        trc_cursor_free(&m.cur[t]);
    lt_free(&lt);
    free(s.threads);
    free(recs);
    free(m.st);
    free(m.cur);
    return rc;
}
