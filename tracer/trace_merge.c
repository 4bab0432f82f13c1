/* From spool to canonical trace: a k-way merge over the per-thread chunk
 * lists, and salvage of a spool whose writer never finished.
 *
 * Memory is O(threads x chunk): each thread's cursor holds one encoded
 * chunk and decodes it one event at a time; the output holds one block. */
#include "trace_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Records decoded ahead per thread: enough to amortize a refill, few enough
 * that every thread's batch stays in cache while the merge walks them. */
#define MERGE_BATCH 256
/* Output buffer: fewer, larger writes; it must hold a whole block. */
#define OUT_BUF_SIZE (1u << 20)

/* Per-thread facts gathered while merging, used to complete the table. */
typedef struct thread_stats {
    uint64_t events, first, last;
    uint32_t parent; /* from THREAD_START (the creator's index, UINT32_MAX: none) */
    int32_t exit_code;
    bool exited, started;
} thread_stats;

/* One thread's position in its chunk list. */
typedef struct cursor {
    size_t chunk; /* chunks loaded so far; the last one is in buf */
    uint8_t *buf; /* its header and payload */
    size_t cap;
    const uint8_t *p, *end;
    uint32_t left; /* records of the loaded chunk not yet decoded */
    trc_chunk_state d;
    trc_rec *rec;       /* decoded batch; rec[i..n) not merged yet */
    uint32_t i, n, max; /* max: capacity of rec */
} cursor;

typedef struct merge {
    int spool_fd;
    const char *spool_path;
    const trc_spool_index *ix;
    char *err;
    size_t errlen;
    cursor *cur;
    thread_stats *st;
} merge;

static int cursor_load(merge *m, uint32_t t, cursor *c)
{
    const trc_chunk *k = &m->ix->threads[t].v[c->chunk];
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
    if ((size_t)r != need || get_u32(c->buf) != CHUNK_MAGIC || get_u32(c->buf + 4) != t ||
        get_u32(c->buf + 8) != k->count || get_u32(c->buf + 12) != k->len ||
        trc_crc32(crc, c->buf + CHUNK_HDR_SIZE, k->len) != get_u32(c->buf + 24)) {
        trc_seterr(m->err, m->errlen, "%s: chunk at offset %llu changed on disk", m->spool_path,
                   (unsigned long long)k->off);
        return -1;
    }
    c->chunk++;
    c->p = c->buf + CHUNK_HDR_SIZE;
    c->end = c->p + k->len;
    c->left = k->count;
    c->d = (trc_chunk_state){.time = k->base_time, .thread = t};
    return 0;
}

/* Decode thread t's next batch of records and account for them in its
 * stats: 1 = got some, 0 = the thread is done, -1 = error. */
static int cursor_fill(merge *m, uint32_t t)
{
    cursor *c = &m->cur[t];
    const trc_thread_chunks *tc = &m->ix->threads[t];
    while (c->left == 0) {
        if (c->chunk >= tc->n)
            return 0;
        if (cursor_load(m, t, c) < 0)
            return -1;
    }
    uint32_t n = c->left < c->max ? c->left : c->max;
    const char *why = NULL;
    if (trc_chunk_decode(&c->d, &c->p, c->end, c->rec, n, &why) < 0) {
        trc_seterr(m->err, m->errlen, "%s: undecodable event of thread %u: %s", m->spool_path, t,
                   why);
        return -1;
    }
    c->left -= n;
    c->i = 0;
    c->n = n;
    /* Times never decrease within a chunk (deltas are unsigned), so only
     * the step from the previous batch needs checking. */
    thread_stats *x = &m->st[t];
    if (x->events && c->rec[0].time < x->last) {
        trc_seterr(m->err, m->errlen, "%s: thread %u goes back in time", m->spool_path, t);
        return -1;
    }
    if (!x->events)
        x->first = c->rec[0].time;
    x->events += n;
    x->last = c->rec[n - 1].time;
    for (uint32_t i = 0; i < n; i++) {
        const trc_rec *r = &c->rec[i];
        if (r->kind == WEFT_EV_THREAD_START && !x->started) {
            x->parent = r->addr > UINT32_MAX ? UINT32_MAX : (uint32_t)r->addr;
            x->started = true;
        } else if (r->kind == WEFT_EV_THREAD_EXIT) {
            x->exited = true;
            x->exit_code = (int32_t)r->addr;
        }
    }
    return 1;
}

/* Tournament (loser) tree over the threads' next records, keyed by (time,
 * thread): replacing the winner costs one comparison per level on a fixed
 * path, where a binary heap's sift-down costs two and branches on which
 * child to follow. Leaves are thread ids, padded to a power of two with
 * exhausted ones. */
#define LT_DONE UINT32_MAX /* rank of an exhausted leaf: after every thread */

typedef struct lt_key {
    uint64_t time;
    uint32_t rank; /* the thread id, or LT_DONE */
} lt_key;

typedef struct ltree {
    uint32_t k;     /* leaves */
    uint32_t *node; /* node[0]: overall winner; node[1..k): loser of that match */
    lt_key *key;    /* per leaf */
} ltree;

/* Bitwise, not short-circuit: the outcome is a coin toss when threads run
 * side by side, so a branch on it would mispredict half the time. */
static inline bool lt_less(lt_key a, lt_key b)
{
    return (a.time < b.time) | ((a.time == b.time) & (a.rank < b.rank));
}

static int lt_init(ltree *t, uint32_t nthreads)
{
    uint32_t k = 1;
    while (k < nthreads)
        k *= 2;
    t->k = k;
    t->node = calloc(k, sizeof *t->node);
    t->key = malloc(k * sizeof *t->key);
    if (!t->node || !t->key)
        return -1;
    for (uint32_t i = 0; i < k; i++)
        t->key[i] = (lt_key){UINT64_MAX, LT_DONE};
    return 0;
}

static void lt_free(ltree *t)
{
    free(t->node);
    free(t->key);
}

/* Play every match once the leaves' keys are set. */
static int lt_build(ltree *t)
{
    uint32_t k = t->k;
    uint32_t *win = malloc(2 * (size_t)k * sizeof *win);
    if (!win)
        return -1;
    for (uint32_t i = 0; i < k; i++)
        win[k + i] = i;
    for (uint32_t i = k - 1; i >= 1; i--) {
        uint32_t a = win[2 * i], b = win[2 * i + 1];
        bool b_wins = lt_less(t->key[b], t->key[a]);
        win[i] = b_wins ? b : a;
        t->node[i] = b_wins ? a : b;
    }
    t->node[0] = k > 1 ? win[1] : 0;
    free(win);
    return 0;
}

/* Leaf w's key changed (it was the winner): replay its path to the root,
 * carrying the candidate's key along and selecting without branches. */
static inline void lt_replay(ltree *t, uint32_t w)
{
    uint32_t cand = w;
    lt_key kc = t->key[w];
    for (uint32_t i = (w + t->k) >> 1; i; i >>= 1) {
        uint32_t o = t->node[i];
        lt_key ko = t->key[o];
        bool swap = lt_less(ko, kc);
        t->node[i] = swap ? cand : o;
        cand = swap ? o : cand;
        kc.time = swap ? ko.time : kc.time;
        kc.rank = swap ? ko.rank : kc.rank;
    }
    t->node[0] = cand;
}

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
    uint32_t nt = ix->nthreads;
    merge m = {spool_fd, spool_path, ix, err, errlen, NULL, NULL};
    int rc = -1;
    size_t tlen = strlen(path) + 32;
    char *tmp = malloc(tlen);
    m.cur = calloc(nt ? nt : 1, sizeof *m.cur);
    m.st = calloc(nt ? nt : 1, sizeof *m.st);
    /* One batch per thread, smaller for threads with fewer events, so a
     * run with many short threads does not pay MERGE_BATCH for each. */
    size_t nrec = 0;
    for (uint32_t t = 0; t < nt; t++)
        nrec += ix->threads[t].events < MERGE_BATCH ? ix->threads[t].events : MERGE_BATCH;
    trc_rec *recs = malloc((nrec ? nrec : 1) * sizeof *recs);
    trc_out o = {.fd = -1};
    block_out b = {0};
    ltree lt = {0};
    uint8_t *hdr = NULL, *foot = NULL;
    weft_trace_thread *threads = NULL;
    int fd = -1;
    if (!tmp || !m.cur || !m.st || !recs || lt_init(&lt, nt) < 0) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        goto out;
    }
    snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        trc_seterr(err, errlen, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        goto out;
    }
    if (trc_out_init(&o, fd, OUT_BUF_SIZE) < 0) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        goto out;
    }
    int level = trc_zstd_level();
    size_t hlen = trc_header_encode(meta, TRC_MAGIC, level ? 2 : 1, (uint32_t)level, &hdr);
    if (!hlen) {
        trc_seterr(err, errlen, "%s: trace header too large", path);
        goto out;
    }
    trc_out_write(&o, hdr, hlen);
    if (block_out_start(&b, &o, nt, level) < 0) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        goto out;
    }

    trc_rec *next = recs;
    for (uint32_t t = 0; t < nt; t++) {
        cursor *c = &m.cur[t];
        uint64_t ev = ix->threads[t].events;
        c->rec = next;
        c->max = ev < MERGE_BATCH ? (uint32_t)ev : MERGE_BATCH;
        next += c->max;
        if (ix->threads[t].n == 0)
            continue;
        int r = cursor_fill(&m, t);
        if (r < 0)
            goto out;
        if (r)
            lt.key[t] = (lt_key){c->rec[0].time, t};
    }
    if (lt_build(&lt) < 0) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        goto out;
    }

    uint64_t nevents = 0;
    mblock *mb = block_out_next(&b);
    for (;;) {
        uint32_t t = lt.node[0];
        if (lt.key[t].rank == LT_DONE)
            break;
        cursor *c = &m.cur[t];
        mb->rec[mb->n] = c->rec[c->i];
        if (++mb->n == BLOCK_EVENTS) {
            block_out_publish(&b, mb);
            mb = block_out_next(&b);
        }
        nevents++;
        if (++c->i == c->n) {
            int r = cursor_fill(&m, t);
            if (r < 0)
                goto out;
            if (r == 0)
                lt.key[t] = (lt_key){UINT64_MAX, LT_DONE};
        }
        if (lt.key[t].rank != LT_DONE)
            lt.key[t].time = c->rec[c->i].time;
        lt_replay(&lt, t);
    }
    if (mb->n)
        block_out_publish(&b, mb);
    block_out_stop(&b);

    weft_trace_summary s = {0};
    uint64_t max_time;
    threads = build_threads(summary, m.st, nt, &s.nthreads, &max_time);
    if (!threads) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        goto out;
    }
    s.threads = threads;
    s.flags = (summary ? summary->flags : 0) | add_flags;
    s.exit_status = summary && !salvage ? summary->exit_status : exit_status;
    s.stall_escapes = summary ? summary->stall_escapes : 0;
    s.makespan = summary && summary->makespan > max_time ? summary->makespan : max_time;
    uint64_t foot_off = o.off;
    size_t flen = trc_footer_encode(&s, nevents, b.nblocks, &foot);
    if (!flen) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        goto out;
    }
    trc_out_write(&o, foot, flen);
    uint8_t trailer[TRAILER_SIZE];
    put_u64(trailer, foot_off);
    memcpy(trailer + 8, TRAILER_MAGIC, 8);
    trc_out_write(&o, trailer, sizeof trailer);
    trc_out_flush(&o);
    if (!o.err && fsync(fd) < 0)
        o.err = errno;
    if (close(fd) < 0 && !o.err)
        o.err = errno;
    fd = -1;
    if (o.err) {
        trc_seterr(err, errlen, "%s: write failed: %s", tmp, strerror(o.err));
        goto out;
    }
    if (rename(tmp, path) < 0) {
        trc_seterr(err, errlen, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
        goto out;
    }
    fsync_dir_of(path);
    rc = 0;
out:
    block_out_stop(&b); /* before its file descriptor goes */
    if (fd >= 0)
        close(fd);
    if (rc < 0 && tmp)
        unlink(tmp);
    for (uint32_t t = 0; m.cur && t < nt; t++)
        free(m.cur[t].buf);
    block_out_free(&b);
    trc_out_free(&o);
    lt_free(&lt);
    free(threads);
    free(hdr);
    free(foot);
    free(recs);
    free(m.st);
    free(m.cur);
    free(tmp);
    return rc;
}

/* ---- salvage ---- */

/* Scan the spool's chunks, stopping at the first one that is torn or does
 * not verify: a crash can only damage the tail, and nothing after a bad
 * chunk can be trusted to be in order. */
static int scan_spool(int fd, uint64_t off, trc_spool_index *ix, uint64_t *end, int *stopped)
{
    uint8_t h[CHUNK_HDR_SIZE];
    uint8_t *buf = NULL;
    size_t cap = 0;
    trc_rec recs[MERGE_BATCH];
    for (;;) {
        ssize_t got = trc_pread_all(fd, h, sizeof h, off);
        /* A writer that stopped at a limit said so, and wrote nothing after. */
        if (got >= STOP_SIZE && get_u32(h) == STOP_MAGIC && trc_crc32(0, h, 8) == get_u32(h + 8)) {
            *stopped = (int)get_u32(h + 4);
            break;
        }
        if (got != (ssize_t)sizeof h)
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
         * thread's stream monotonic as the writer guaranteed (within a chunk
         * it is by construction). */
        trc_chunk c = {.off = off, .count = count, .len = len, .base_time = get_u64(h + 16)};
        uint64_t prev =
            thread < ix->nthreads && ix->threads[thread].events ? ix->threads[thread].last_time : 0;
        trc_chunk_state st = {.time = c.base_time, .thread = thread};
        const uint8_t *p = buf;
        const char *why;
        bool ok = true;
        for (uint32_t i = 0; i < count && ok; i += MERGE_BATCH) {
            uint32_t n = count - i < MERGE_BATCH ? count - i : MERGE_BATCH;
            ok = trc_chunk_decode(&st, &p, buf + len, recs, n, &why) == 0 &&
                 (i > 0 || recs[0].time >= prev);
        }
        if (!ok || p != buf + len || trc_index_add(ix, thread, &c) < 0)
            break;
        ix->threads[thread].last_time = st.time;
        off += sizeof h + len;
    }
    free(buf);
    *end = off;
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
    /* Read-write: the events left in the threads' buffers join the spool. */
    int fd = open(spool, O_RDWR | O_CLOEXEC);
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
    /* Chunks are the same in both versions; only the header grew. */
    if (version == 0 || version > WEFT_TRACE_VERSION) {
        trc_seterr(err, errlen, "%s: spool format version %u, this weft reads 1 to %d", spool,
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
    uint64_t end;
    int stopped = 0;
    if (scan_spool(fd, hlen, &ix, &end, &stopped) < 0) {
        trc_seterr(err, errlen, "%s: out of memory", spool);
        goto out;
    }
    /* Past the last good chunk: a torn one, or the stop record, goes. */
    if (ftruncate(fd, (off_t)end) < 0 || trc_live_salvage(path, fd, &ix, &end, exit_status) < 0) {
        trc_seterr(err, errlen, "%s: cannot add the buffered events: %s", spool, strerror(errno));
        goto out;
    }
    uint32_t flags = WEFT_TRACE_TRUNCATED | (extra_flags & ~WEFT_TRACE_COMPLETE);
    if (stopped)
        flags |= WEFT_TRACE_STOPPED;
    rc = trc_merge_to_trace(path, fd, spool, &meta, &ix, NULL, flags, true, exit_status, err,
                            errlen);
    if (rc == 0) {
        unlink(spool);
        trc_live_unlink(path);
    }
out:
    if (fd >= 0)
        close(fd);
    trc_index_free(&ix);
    trc_meta_free(&meta);
    free(hdr);
    free(spool);
    return rc;
}
