/* From spool to canonical trace: a k-way merge over the per-thread chunk
 * lists, and salvage of a spool whose writer never finished.
 *
 * Memory is O(threads x chunk): each thread's cursor holds one encoded
 * chunk and decodes it one event at a time; the output holds one block. */
#include "trace_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int trc_index_add(trc_spool_index *ix, uint32_t thread, const trc_chunk *c)
{
    if (thread >= ix->nthreads) {
        trc_thread_chunks *t = realloc(ix->threads, ((size_t)thread + 1) * sizeof *t);
        if (!t)
            return -1;
        memset(t + ix->nthreads, 0, (thread + 1 - ix->nthreads) * sizeof *t);
        ix->threads = t;
        ix->nthreads = thread + 1;
    }
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

void trc_index_free(trc_spool_index *ix)
{
    for (uint32_t i = 0; i < ix->nthreads; i++)
        free(ix->threads[i].v);
    free(ix->threads);
    ix->threads = NULL;
    ix->nthreads = 0;
}

/* One thread's position in its chunk list. */
typedef struct cursor {
    uint32_t thread;
    size_t chunk; /* index of the loaded chunk */
    uint8_t *buf; /* its header and payload */
    size_t cap;
    const uint8_t *p, *end;
    uint32_t left; /* events not yet decoded in the loaded chunk */
    trc_delta d;
    weft_event head; /* next event of this thread */
} cursor;

typedef struct merge {
    int spool_fd;
    const char *spool_path;
    const trc_spool_index *ix;
    char *err;
    size_t errlen;
} merge;

static int cursor_load(merge *m, cursor *c)
{
    const trc_chunk *k = &m->ix->threads[c->thread].v[c->chunk];
    size_t need = CHUNK_HDR_SIZE + (size_t)k->len;
    if (need > c->cap) {
        uint8_t *b = realloc(c->buf, need);
        if (!b) {
            trc_seterr(m->err, m->errlen, "%s: out of memory", m->spool_path);
            return -1;
        }
        c->buf = b;
        c->cap = need;
    }
    ssize_t r = trc_pread_all(m->spool_fd, c->buf, need, k->off);
    if (r < 0) {
        trc_seterr(m->err, m->errlen, "%s: read failed: %s", m->spool_path, strerror(errno));
        return -1;
    }
    uint32_t crc = trc_crc32(0, c->buf, 24);
    if ((size_t)r != need || get_u32(c->buf) != CHUNK_MAGIC || get_u32(c->buf + 4) != c->thread ||
        get_u32(c->buf + 8) != k->count || get_u32(c->buf + 12) != k->len ||
        trc_crc32(crc, c->buf + CHUNK_HDR_SIZE, k->len) != get_u32(c->buf + 24)) {
        trc_seterr(m->err, m->errlen, "%s: chunk at offset %llu changed on disk", m->spool_path,
                   (unsigned long long)k->off);
        return -1;
    }
    c->p = c->buf + CHUNK_HDR_SIZE;
    c->end = c->p + k->len;
    c->left = k->count;
    trc_delta_reset(&c->d, k->base_time, c->thread);
    return 0;
}

/* Decode the thread's next event into head: 1 = got one, 0 = done, -1 = error. */
static int cursor_next(merge *m, cursor *c)
{
    const trc_thread_chunks *tc = &m->ix->threads[c->thread];
    while (c->left == 0) {
        if (c->chunk + 1 >= tc->n)
            return 0;
        c->chunk++;
        if (cursor_load(m, c) < 0)
            return -1;
    }
    const char *why = NULL;
    size_t n = trc_rec_decode(&c->d, c->p, c->end, &c->head, &why);
    if (!n) {
        trc_seterr(m->err, m->errlen, "%s: undecodable event of thread %u: %s", m->spool_path,
                   c->thread, why);
        return -1;
    }
    c->p += n;
    c->left--;
    return 1;
}

static bool cursor_less(const cursor *a, const cursor *b)
{
    if (a->head.time != b->head.time)
        return a->head.time < b->head.time;
    return a->thread < b->thread;
}

static void heap_down(cursor **h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cursor_less(h[l], h[m]))
            m = l;
        if (r < n && cursor_less(h[r], h[m]))
            m = r;
        if (m == i)
            return;
        cursor *t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Per-thread facts gathered while merging, used to complete the table. */
typedef struct thread_stats {
    uint64_t events, first, last;
    uint32_t parent; /* from THREAD_START (the creator's index, UINT32_MAX: none) */
    int32_t exit_code;
    bool exited, started;
} thread_stats;

/* Output side: blocks of BLOCK_EVENTS records in canonical order. */
typedef struct block_out {
    trc_out *o;
    trc_delta d;
    uint8_t *payload;
    size_t len;
    uint32_t count;
    uint64_t base, nblocks;
} block_out;

static void block_flush(block_out *b)
{
    if (!b->count)
        return;
    uint8_t h[BLOCK_HDR_SIZE];
    put_u32(h, BLOCK_MAGIC);
    put_u32(h + 4, b->count);
    put_u32(h + 8, (uint32_t)b->len);
    put_u64(h + 12, b->base);
    put_u32(h + 20, trc_crc32(trc_crc32(0, h, 20), b->payload, b->len));
    trc_out_write(b->o, h, sizeof h);
    trc_out_write(b->o, b->payload, b->len);
    b->nblocks++;
    b->count = 0;
    b->len = 0;
}

static void block_add(block_out *b, const weft_event *ev)
{
    if (b->count == 0) {
        b->base = ev->time;
        trc_delta_reset(&b->d, ev->time, 0);
    }
    b->len += trc_rec_encode(&b->d, b->payload + b->len, ev);
    if (++b->count == BLOCK_EVENTS)
        block_flush(b);
}

/* The summary written to the footer: the caller's, completed from the
 * events (event counts always come from the events themselves). */
static weft_trace_thread *build_threads(const weft_trace_summary *s, const thread_stats *st,
                                        uint32_t nst, uint32_t *nout, uint64_t *max_time)
{
    uint32_t n = s && s->nthreads > nst ? s->nthreads : nst;
    weft_trace_thread *t = calloc(n ? n : 1, sizeof *t);
    if (!t)
        return NULL;
    *max_time = 0;
    for (uint32_t i = 0; i < n; i++) {
        const thread_stats *x = i < nst ? &st[i] : NULL;
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

int trc_merge_to_trace(const char *path, int spool_fd, const char *spool_path,
                       const weft_trace_meta *meta, const trc_spool_index *ix,
                       const weft_trace_summary *summary, uint32_t add_flags, bool salvage,
                       int32_t exit_status, char *err, size_t errlen)
{
    merge m = {spool_fd, spool_path, ix, err, errlen};
    int rc = -1;
    size_t tlen = strlen(path) + 32;
    char *tmp = malloc(tlen);
    cursor *cur = calloc(ix->nthreads ? ix->nthreads : 1, sizeof *cur);
    cursor **heap = calloc(ix->nthreads ? ix->nthreads : 1, sizeof *heap);
    thread_stats *st = calloc(ix->nthreads ? ix->nthreads : 1, sizeof *st);
    trc_out *o = malloc(sizeof *o);
    block_out b = {.o = o};
    uint8_t *hdr = NULL, *foot = NULL;
    weft_trace_thread *threads = NULL;
    int fd = -1;
    b.payload = malloc((size_t)BLOCK_EVENTS * REC_MAX);
    if (!tmp || !cur || !heap || !st || !o || !b.payload ||
        trc_delta_init(&b.d, ix->nthreads, false) < 0) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        goto out;
    }
    snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        trc_seterr(err, errlen, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        goto out;
    }
    *o = (trc_out){.fd = fd};
    size_t hlen = trc_header_encode(meta, TRC_MAGIC, &hdr);
    if (!hlen) {
        trc_seterr(err, errlen, "%s: trace header too large", path);
        goto out;
    }
    trc_out_write(o, hdr, hlen);

    size_t nheap = 0;
    for (uint32_t t = 0; t < ix->nthreads; t++) {
        cur[t].thread = t;
        cur[t].chunk = 0;
        if (trc_delta_init(&cur[t].d, 1, true) < 0) {
            trc_seterr(err, errlen, "%s: out of memory", path);
            goto out;
        }
        if (ix->threads[t].n == 0)
            continue;
        if (cursor_load(&m, &cur[t]) < 0)
            goto out;
        int r = cursor_next(&m, &cur[t]);
        if (r < 0)
            goto out;
        if (r)
            heap[nheap++] = &cur[t];
    }
    for (size_t i = nheap; i-- > 0;)
        heap_down(heap, nheap, i);

    uint64_t nevents = 0;
    while (nheap) {
        cursor *c = heap[0];
        const weft_event *ev = &c->head;
        thread_stats *x = &st[c->thread];
        if (x->events && ev->time < x->last) {
            trc_seterr(err, errlen, "%s: thread %u goes back in time", spool_path, c->thread);
            goto out;
        }
        if (!x->events++)
            x->first = ev->time;
        x->last = ev->time;
        if (ev->kind == WEFT_EV_THREAD_START && !x->started) {
            x->parent = ev->addr > UINT32_MAX ? UINT32_MAX : (uint32_t)ev->addr;
            x->started = true;
        } else if (ev->kind == WEFT_EV_THREAD_EXIT) {
            x->exited = true;
            x->exit_code = (int32_t)ev->addr;
        }
        block_add(&b, ev);
        nevents++;
        int r = cursor_next(&m, c);
        if (r < 0)
            goto out;
        if (r == 0)
            heap[0] = heap[--nheap];
        heap_down(heap, nheap, 0);
    }
    block_flush(&b);

    weft_trace_summary s = {0};
    uint64_t max_time;
    threads = build_threads(summary, st, ix->nthreads, &s.nthreads, &max_time);
    if (!threads) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        goto out;
    }
    s.threads = threads;
    s.flags = (summary ? summary->flags : 0) | add_flags;
    s.exit_status = summary && !salvage ? summary->exit_status : exit_status;
    s.stall_escapes = summary ? summary->stall_escapes : 0;
    s.makespan = summary && summary->makespan > max_time ? summary->makespan : max_time;
    uint64_t foot_off = o->off;
    size_t flen = trc_footer_encode(&s, nevents, b.nblocks, &foot);
    if (!flen) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        goto out;
    }
    trc_out_write(o, foot, flen);
    uint8_t trailer[TRAILER_SIZE];
    put_u64(trailer, foot_off);
    memcpy(trailer + 8, TRAILER_MAGIC, 8);
    trc_out_write(o, trailer, sizeof trailer);
    trc_out_flush(o);
    if (!o->err && fsync(fd) < 0)
        o->err = errno;
    if (close(fd) < 0 && !o->err)
        o->err = errno;
    fd = -1;
    if (o->err) {
        trc_seterr(err, errlen, "%s: write failed: %s", tmp, strerror(o->err));
        goto out;
    }
    if (rename(tmp, path) < 0) {
        trc_seterr(err, errlen, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
        goto out;
    }
    fsync_dir_of(path);
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0 && tmp)
        unlink(tmp);
    for (uint32_t t = 0; cur && t < ix->nthreads; t++) {
        free(cur[t].buf);
        trc_delta_free(&cur[t].d);
    }
    trc_delta_free(&b.d);
    free(b.payload);
    free(threads);
    free(hdr);
    free(foot);
    free(o);
    free(st);
    free(heap);
    free(cur);
    free(tmp);
    return rc;
}

/* ---- salvage ---- */

/* Scan the spool's chunks, stopping at the first one that is torn or does
 * not verify: a crash can only damage the tail, and nothing after a bad
 * chunk can be trusted to be in order. */
static int scan_spool(int fd, uint64_t off, trc_spool_index *ix)
{
    uint8_t h[CHUNK_HDR_SIZE];
    uint8_t *buf = NULL;
    size_t cap = 0;
    trc_delta d;
    if (trc_delta_init(&d, 1, true) < 0)
        return -1;
    for (;;) {
        if (trc_pread_all(fd, h, sizeof h, off) != (ssize_t)sizeof h)
            break;
        uint32_t thread = get_u32(h + 4), count = get_u32(h + 8), len = get_u32(h + 12);
        if (get_u32(h) != CHUNK_MAGIC || thread >= WEFT_TRACE_MAX_THREADS || count == 0 ||
            count > BLOCK_MAX_EVENTS || len > PAYLOAD_MAX)
            break;
        if (len > cap || !buf) { /* never NULL, even for an empty payload */
            uint8_t *nb = realloc(buf, len ? len : 1);
            if (!nb)
                break;
            buf = nb;
            cap = len;
        }
        if (trc_pread_all(fd, buf, len, off + sizeof h) != (ssize_t)len ||
            trc_crc32(trc_crc32(0, h, 24), buf, len) != get_u32(h + 24))
            break;
        /* Decode to be sure the merge will not fail on it, and keep each
         * thread's stream monotonic as the writer guaranteed. */
        trc_chunk c = {.off = off, .count = count, .len = len, .base_time = get_u64(h + 16)};
        uint64_t prev =
            thread < ix->nthreads && ix->threads[thread].events ? ix->threads[thread].last_time : 0;
        trc_delta_reset(&d, c.base_time, thread);
        const uint8_t *p = buf, *end = buf + len;
        weft_event ev;
        const char *why;
        bool ok = true;
        for (uint32_t i = 0; i < count && ok; i++) {
            size_t n = trc_rec_decode(&d, p, end, &ev, &why);
            ok = n && ev.time >= prev;
            p += n;
            prev = ev.time;
        }
        if (!ok || p != end || trc_index_add(ix, thread, &c) < 0)
            break;
        ix->threads[thread].last_time = prev;
        off += sizeof h + len;
    }
    trc_delta_free(&d);
    free(buf);
    return 0;
}

int weft_trace_salvage(const char *path, uint32_t extra_flags, int32_t exit_status, char *err,
                       size_t errlen)
{
    if (!path || !*path) {
        trc_seterr(err, errlen, "weft_trace_salvage: no path");
        return -1;
    }
    size_t sl = strlen(path) + 7;
    char *spool = malloc(sl);
    if (!spool) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        return -1;
    }
    snprintf(spool, sl, "%s.spool", path);
    int rc = -1;
    uint8_t *hdr = NULL;
    weft_trace_meta meta = {0};
    trc_spool_index ix = {0};
    int fd = open(spool, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        trc_seterr(err, errlen, "%s: cannot open: %s", spool, strerror(errno));
        goto out;
    }
    uint8_t fixed[16];
    ssize_t r = trc_pread_all(fd, fixed, sizeof fixed, 0);
    if (r < 0) {
        trc_seterr(err, errlen, "%s: read failed: %s", spool, strerror(errno));
        goto out;
    }
    if (r < (ssize_t)sizeof fixed || memcmp(fixed, SPOOL_MAGIC, 8) != 0) {
        trc_seterr(err, errlen, "%s: %s", spool,
                   r < 16 && (r < 8 || !memcmp(fixed, SPOOL_MAGIC, 8))
                       ? "spool too short to hold its header"
                       : "not a weft spool");
        goto out;
    }
    uint32_t version = get_u32(fixed + 8), hlen = get_u32(fixed + 12);
    if (version != WEFT_TRACE_VERSION) {
        trc_seterr(err, errlen, "%s: spool format version %u, this weft supports %d", spool,
                   version, WEFT_TRACE_VERSION);
        goto out;
    }
    if (hlen < 20 || hlen > (1u << 24) || !(hdr = malloc(hlen)) ||
        trc_pread_all(fd, hdr, hlen, 0) != (ssize_t)hlen) {
        trc_seterr(err, errlen, "%s: spool header is truncated or invalid", spool);
        goto out;
    }
    char why[200];
    if (trc_header_parse(hdr, hlen, &meta, why, sizeof why) < 0) {
        trc_seterr(err, errlen, "%s: %s", spool, why);
        goto out;
    }
    if (scan_spool(fd, hlen, &ix) < 0) {
        trc_seterr(err, errlen, "%s: out of memory", spool);
        goto out;
    }
    rc = trc_merge_to_trace(path, fd, spool, &meta, &ix, NULL,
                            WEFT_TRACE_TRUNCATED | (extra_flags & ~WEFT_TRACE_COMPLETE), true,
                            exit_status, err, errlen);
    if (rc == 0)
        unlink(spool);
out:
    if (fd >= 0)
        close(fd);
    trc_index_free(&ix);
    trc_meta_free(&meta);
    free(hdr);
    free(spool);
    return rc;
}
