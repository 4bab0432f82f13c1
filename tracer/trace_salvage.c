/* Salvage: a trace from the spool of a run whose writer never finished
 * (the guest crashed, was killed, or the writer stopped at a limit). What
 * verifies of the spool is kept, the rest cut, and the merge of
 * trace_merge.c writes the trace as a finished run's would be. Or, for an
 * analysis that needs no order across threads, the spool's events thread
 * by thread without a trace (weft_spool_read). */
#include "trace_finish.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* A segment record at off (its header in h): its chunks verified as raw
 * ones are and indexed as in it. 1 if it is whole, 0 if not (the scan
 * stops), -1 if out of memory. */
static int scan_segment(int fd, uint64_t off, const uint8_t *h, trc_spool_index *ix, uint8_t **z,
                        uint8_t **raw, void **zd, trc_chunk **chunks)
{
    uint32_t thread;
    trc_seg sg;
    if (trc_seg_parse(h, &thread, &sg) < 0)
        return 0;
    sg.off = off;
    size_t zcap = SEG_HDR_SIZE + ZSTD_compressBound(SEG_RAW_MAX);
    if ((!*z && !(*z = malloc(zcap))) || (!*raw && !(*raw = malloc(SEG_RAW_MAX))) ||
        (!*zd && !(*zd = ZSTD_createDCtx())) ||
        (!*chunks && !(*chunks = malloc(SEG_RAW_MAX / CHUNK_HDR_SIZE * sizeof **chunks))))
        return -1;
    if (trc_seg_read(fd, &sg, thread, *z, zcap) < 0 || trc_seg_unpack(*zd, *z, &sg, *raw) < 0)
        return 0;
    uint64_t prev = trc_index_seen(ix, thread) ? ix->threads[thread].last_time : 0, events = 0;
    size_t at = 0;
    for (uint32_t i = 0; i < sg.nchunks; i++) {
        trc_chunk *c = &(*chunks)[i];
        size_t len = trc_chunk_check(*raw + at, sg.raw_len - at, thread, prev, c, &prev);
        if (!len || (i == 0 && c->base_time != sg.first_time))
            return 0;
        c->off = at;
        events += c->count;
        at += len;
    }
    if (at != sg.raw_len || events != sg.events)
        return 0;
    sg.chunk0 = thread < ix->nthreads ? ix->threads[thread].n : 0;
    if (trc_index_add_seg(ix, thread, &sg) < 0)
        return -1;
    for (uint32_t i = 0; i < sg.nchunks; i++) {
        (*chunks)[i].seg = (uint32_t)ix->threads[thread].nsegs;
        if (trc_index_add(ix, thread, &(*chunks)[i]) < 0)
            return -1;
    }
    ix->threads[thread].last_time = prev;
    return 1;
}

/* Scan the spool's records, stopping at the first one that is torn or does
 * not verify: a crash can only damage the tail, and nothing after a bad
 * record can be trusted to be in order. A stop record says the writer
 * stopped at a limit; only a finish's last segments may follow it. */
static int scan_spool(int fd, uint64_t off, trc_spool_index *ix, uint64_t *end, int *stopped)
{
    uint8_t h[SEG_HDR_SIZE];
    uint8_t *buf = NULL, *z = NULL, *raw = NULL;
    trc_chunk *chunks = NULL;
    void *zd = NULL;
    size_t cap = 0;
    int rc = 0;
    for (;;) {
        ssize_t got = trc_pread_all(fd, h, sizeof h, off);
        if (got >= STOP_SIZE && get_u32(h) == STOP_MAGIC && trc_crc32(0, h, 8) == get_u32(h + 8)) {
            *stopped = (int)get_u32(h + 4);
            off += STOP_SIZE;
            continue;
        }
        if (got == (ssize_t)sizeof h && get_u32(h) == SEG_MAGIC) {
            int r = scan_segment(fd, off, h, ix, &z, &raw, &zd, &chunks);
            if (r <= 0) {
                rc = r;
                break;
            }
            off += SEG_HDR_SIZE + (uint64_t)get_u32(h + 20);
            continue;
        }
        if (got < CHUNK_HDR_SIZE)
            break;
        uint32_t thread = get_u32(h + 4), count = get_u32(h + 8), len = get_u32(h + 12);
        uint64_t prev = trc_index_seen(ix, thread) ? ix->threads[thread].last_time : 0;
        if (get_u32(h) == SKIP_MAGIC) { /* events a tail-keeping writer did not keep */
            uint64_t last = get_u64(h + 16);
            if (thread >= WEFT_TRACE_MAX_THREADS || count == 0 || len != 0 || last < prev ||
                trc_crc32(0, h, 24) != get_u32(h + 24) ||
                trc_index_skip(ix, thread, count, last) < 0)
                break;
            off += CHUNK_HDR_SIZE;
            continue;
        }
        if (!trc_chunk_magic_ok(get_u32(h)) || thread >= WEFT_TRACE_MAX_THREADS ||
            len > PAYLOAD_MAX)
            break;
        size_t need = CHUNK_HDR_SIZE + (size_t)len;
        if (need > cap) {
            uint8_t *nb = realloc(buf, need);
            if (!nb)
                break;
            buf = nb;
            cap = need;
        }
        trc_chunk c;
        uint64_t last;
        if (trc_pread_all(fd, buf, need, off) != (ssize_t)need ||
            !trc_chunk_check(buf, need, thread, prev, &c, &last))
            break;
        c.off = off;
        if (trc_index_add(ix, thread, &c) < 0)
            break;
        ix->threads[thread].last_time = last;
        off += need;
    }
    free(buf);
    free(z);
    free(raw);
    free(chunks);
    ZSTD_freeDCtx(zd);
    *end = off;
    return rc;
}

/* The spool's header, checked as far as salvage needs: its chunks follow at
 * *hlen, and its meta becomes the trace's. *hdr is malloc'd (the caller
 * frees it, also on failure). */
static int read_spool_header(int fd, const char *spool, uint8_t **hdr, weft_trace_meta *meta,
                             uint32_t *hlen, char *err, size_t errlen)
{
    uint8_t fixed[16];
    ssize_t r = trc_pread_all(fd, fixed, sizeof fixed, 0);
    if (r < 0) {
        trc_seterr(err, errlen, "%s: read failed: %s", spool, strerror(errno));
        return -1;
    }
    if (r < (ssize_t)sizeof fixed || memcmp(fixed, SPOOL_MAGIC, 8) != 0) {
        trc_seterr(err, errlen, "%s: %s", spool,
                   r < 16 && (r < 8 || !memcmp(fixed, SPOOL_MAGIC, 8))
                       ? "spool too short to hold its header"
                       : "not a weft spool");
        return -1;
    }
    uint32_t version = get_u32(fixed + 8);
    *hlen = get_u32(fixed + 12);
    /* Chunks are the same in both versions; only the header grew. */
    if (version == 0 || version > WEFT_TRACE_VERSION) {
        trc_seterr(err, errlen, "%s: spool format version %u, this weft reads 1 to %d", spool,
                   version, WEFT_TRACE_VERSION);
        return -1;
    }
    if (*hlen < 20 || *hlen > (1u << 24) || !(*hdr = malloc(*hlen)) ||
        trc_pread_all(fd, *hdr, *hlen, 0) != (ssize_t)*hlen) {
        trc_seterr(err, errlen, "%s: spool header is truncated or invalid", spool);
        return -1;
    }
    char why[200];
    if (trc_header_parse(*hdr, *hlen, meta, why, sizeof why) < 0) {
        trc_seterr(err, errlen, "%s: %s", spool, why);
        return -1;
    }
    return 0;
}

/* PATH.spool, malloc'd; NULL with err set. */
static char *spool_of(const char *path, char *err, size_t errlen)
{
    if (!path || !*path) {
        trc_seterr(err, errlen, "no trace path");
        return NULL;
    }
    size_t sl = strlen(path) + 7;
    char *spool = malloc(sl);
    if (spool)
        snprintf(spool, sl, "%s.spool", path);
    else
        trc_seterr(err, errlen, "%s: out of memory", path);
    return spool;
}

/* The spool of path, opened read-write, its chunks indexed and the events
 * left in the threads' buffers appended (with the faulting access if the
 * run died of SIGSEGV or SIGBUS, exit_status -11 or -7): what salvage
 * merges. fd, or -1 with err set. */
static int open_spool(const char *path, const char *spool, int32_t exit_status, trc_spool_index *ix,
                      int *stopped, weft_trace_meta *meta, char *err, size_t errlen)
{
    uint8_t *hdr = NULL;
    uint32_t hlen = 0;
    uint64_t end;
    /* Read-write: the events left in the threads' buffers join the spool. */
    int fd = open(spool, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        trc_seterr(err, errlen, "%s: cannot open: %s", spool, strerror(errno));
    else if (read_spool_header(fd, spool, &hdr, meta, &hlen, err, errlen) < 0)
        ;
    else if (scan_spool(fd, hlen, ix, &end, stopped) < 0)
        trc_seterr(err, errlen, "%s: out of memory", spool);
    /* Past the last good chunk: a torn one, or the stop record, goes. */
    else if (ftruncate(fd, (off_t)end) < 0 || trc_live_salvage(path, fd, ix, &end, exit_status) < 0)
        trc_seterr(err, errlen, "%s: cannot add the buffered events: %s", spool, strerror(errno));
    else {
        free(hdr);
        return fd;
    }
    free(hdr);
    if (fd >= 0)
        close(fd);
    return -1;
}

int weft_spool_read(const char *path, weft_spool_fn fn, void *ctx, char *err, size_t errlen)
{
    char *spool = spool_of(path, err, errlen);
    if (!spool)
        return -1;
    trc_spool_index ix = {0};
    weft_trace_meta meta = {0};
    int stopped = 0, rc = -1;
    int fd = open_spool(path, spool, 0, &ix, &stopped, &meta, err, errlen);
    trc_merge m = {fd, spool, &ix, err, errlen, NULL, NULL};
    trc_rec *recs = malloc(BLOCK_EVENTS * sizeof *recs);
    if (fd >= 0 && (!recs || !(m.cur = calloc(ix.nthreads + 1, sizeof *m.cur)) ||
                    !(m.st = calloc(ix.nthreads + 1, sizeof *m.st))))
        trc_seterr(err, errlen, "%s: out of memory", spool);
    else if (fd >= 0)
        rc = 0;
    for (uint32_t t = 0; rc == 0 && t < ix.nthreads; t++) {
        uint64_t seq = 0;
        int k;
        while (rc == 0 && (k = trc_merge_decode(&m, t, recs, BLOCK_EVENTS)) != 0) {
            if (k < 0) {
                rc = -1;
                break;
            }
            for (int i = 0; i < k && rc == 0; i++) {
                const trc_rec *r = &recs[i];
                weft_event ev = {.time = r->time,
                                 .seq = seq++,
                                 .addr = r->addr,
                                 .pc = r->pc,
                                 .thread = t,
                                 .kind = r->kind,
                                 .size = r->size,
                                 .flags = r->flags};
                rc = fn(ctx, &ev);
            }
        }
    }
    for (uint32_t t = 0; m.cur && t < ix.nthreads; t++)
        trc_cursor_free(&m.cur[t]);
    free(m.cur);
    free(m.st);
    free(recs);
    if (fd >= 0)
        close(fd);
    trc_index_free(&ix);
    trc_meta_free(&meta);
    free(spool);
    return rc;
}

int weft_spool_stopped(const char *path)
{
    char err[16], *spool = spool_of(path, err, sizeof err);
    int fd = spool ? open(spool, O_RDONLY | O_CLOEXEC) : -1;
    free(spool);
    if (fd < 0)
        return 0;
    uint8_t h[STOP_SIZE];
    off_t size = lseek(fd, 0, SEEK_END);
    int why = 0;
    /* The writer writes nothing after its stop record. */
    if (size >= (off_t)STOP_SIZE &&
        trc_pread_all(fd, h, sizeof h, (uint64_t)size - STOP_SIZE) == (ssize_t)sizeof h &&
        get_u32(h) == STOP_MAGIC && trc_crc32(0, h, 8) == get_u32(h + 8))
        why = (int)get_u32(h + 4);
    close(fd);
    return why;
}

int weft_trace_salvage(const char *path, uint32_t extra_flags, int32_t exit_status, char *err,
                       size_t errlen)
{
    char *spool = spool_of(path, err, errlen);
    if (!spool)
        return -1;
    weft_trace_meta meta = {0};
    trc_spool_index ix = {0};
    int stopped = 0, rc = -1;
    int fd = open_spool(path, spool, exit_status, &ix, &stopped, &meta, err, errlen);
    if (fd >= 0) {
        uint32_t flags = WEFT_TRACE_TRUNCATED | (extra_flags & ~WEFT_TRACE_COMPLETE);
        if (stopped)
            flags |= WEFT_TRACE_STOPPED;
        rc = trc_merge_to_trace(path, fd, spool, &meta, &ix, NULL, flags, true, exit_status, true,
                                err, errlen);
        if (rc == 0) {
            unlink(spool);
            trc_live_unlink(path);
        }
        close(fd);
    }
    trc_index_free(&ix);
    trc_meta_free(&meta);
    free(spool);
    return rc;
}
