/* The trace reader: validates the file's frame at open (header, trailer,
 * footer, block chain) and then streams events one block at a time, so
 * memory does not grow with the trace. Block checksums are verified as the
 * blocks are read. */
#include "trace_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define HEADER_MAX (1u << 24)

static void trace_free(weft_trace *t)
{
    if (t->fd >= 0)
        close(t->fd);
    trc_meta_free(&t->meta);
    trc_delta_free(&t->d);
    trc_frame_free(&t->fr);
    trc_read_segments_free(t);
    ZSTD_freeDCtx(t->zd);
    free(t->raw);
    free(t->fev);
    free(t->run_pos);
    free(t->run_end);
    free(t->heap);
    free(t->run_time);
    free(t->summary.threads);
    free(t->ev);
    free(t->blk);
    free(t->seq);
    free(t->path);
    free(t);
}

static weft_trace *open_fail(weft_trace *t, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static weft_trace *open_fail(weft_trace *t, char *err, size_t errlen, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    trc_seterr(err, errlen, "%s: %s", t->path, msg);
    trace_free(t);
    return NULL;
}

static int read_at(weft_trace *t, void *buf, size_t n, uint64_t off)
{
    return trc_pread_all(t->fd, buf, n, off) == (ssize_t)n ? 0 : -1;
}

/* Thread i's counts per kind from the version 3 table at k; they must add
 * up to its events. */
static int kinds_of(weft_trace_thread *th, const uint8_t *k, uint32_t i, uint32_t nkinds)
{
    uint64_t sum = 0;
    for (uint32_t j = 0; j < nkinds; j++) {
        th->kinds[j] = get_u64(k + ((size_t)i * nkinds + j) * 8);
        sum += th->kinds[j];
    }
    return sum == th->events ? 0 : -1;
}

static int parse_footer(weft_trace *t, const uint8_t *f, size_t len, char *why, size_t wl)
{
    if (memcmp(f, FOOTER_MAGIC, 8) != 0) {
        trc_seterr(why, wl, "corrupt footer (bad magic)");
        return -1;
    }
    if (trc_crc32(0, f, len - 4) != get_u32(f + len - 4)) {
        trc_seterr(why, wl, "corrupt footer (checksum mismatch)");
        return -1;
    }
    weft_trace_summary *s = &t->summary;
    s->flags = get_u32(f + 8);
    s->exit_status = (int32_t)get_u32(f + 12);
    /* An exit status (0..255) or a signal's number, negated: anything else
     * is no run's end (and negating INT32_MIN would overflow). */
    if (s->exit_status < -255 || s->exit_status > 255) {
        trc_seterr(why, wl, "corrupt footer (exit status %d)", s->exit_status);
        return -1;
    }
    s->stall_escapes = get_u64(f + 16);
    s->makespan = get_u64(f + 24);
    t->nevents = get_u64(f + 32);
    t->nblocks = get_u64(f + 40);
    s->nthreads = get_u32(f + 48);
    size_t table = (size_t)s->nthreads * FOOTER_THREAD;
    uint32_t nkinds = 0;
    s->has_kinds = t->meta.version >= 3;
    if (s->has_kinds && s->nthreads <= WEFT_TRACE_MAX_THREADS) {
        if (len < FOOTER_FIXED + table + 4) {
            trc_seterr(why, wl, "corrupt footer (no event kinds table)");
            return -1;
        }
        nkinds = get_u32(f + 52 + table);
        if (nkinds == 0 || nkinds > WEFT_EV_KIND_COUNT) {
            trc_seterr(why, wl, "corrupt footer (%u event kinds)", nkinds);
            return -1;
        }
        table += 4 + (size_t)s->nthreads * nkinds * 8;
    }
    if (s->nthreads > WEFT_TRACE_MAX_THREADS || len != FOOTER_FIXED + table) {
        trc_seterr(why, wl, "corrupt footer (thread count %u does not match its length)",
                   s->nthreads);
        return -1;
    }
    s->threads = calloc(s->nthreads ? s->nthreads : 1, sizeof *s->threads);
    t->seq = calloc(s->nthreads ? s->nthreads : 1, sizeof *t->seq);
    if (!s->threads || !t->seq) {
        trc_seterr(why, wl, "out of memory");
        return -1;
    }
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->nthreads; i++) {
        const uint8_t *p = f + 52 + (size_t)i * FOOTER_THREAD;
        weft_trace_thread *th = &s->threads[i];
        th->id = get_u32(p);
        th->parent = get_u32(p + 4);
        th->tid = get_u64(p + 8);
        th->start_time = get_u64(p + 16);
        th->end_time = get_u64(p + 24);
        th->events = get_u64(p + 32);
        th->insns = get_u64(p + 40);
        th->exited = get_u32(p + 48);
        th->exit_code = (int32_t)get_u32(p + 52);
        if (th->id != i) {
            trc_seterr(why, wl, "corrupt footer (thread %u has id %u)", i, th->id);
            return -1;
        }
        if (nkinds && kinds_of(th, f + 52 + (size_t)s->nthreads * FOOTER_THREAD + 4, i, nkinds)) {
            trc_seterr(why, wl, "corrupt footer (thread %u: its kinds do not add up to its events)",
                       i);
            return -1;
        }
        sum += th->events;
    }
    if (sum != t->nevents) {
        trc_seterr(why, wl, "corrupt footer (threads hold %llu events, total says %llu)",
                   (unsigned long long)sum, (unsigned long long)t->nevents);
        return -1;
    }
    return 0;
}

/* Walk the block headers once so that a damaged or cut block chain is
 * reported at open, not halfway through an analysis. */
static int check_blocks(weft_trace *t, char *why, size_t wl)
{
    if (t->meta.version >= 4)
        return trc_read_check_segments(t, why, wl);
    if (t->meta.version >= 2)
        return trc_read_check_frames(t, why, wl);
    uint64_t off = t->header_len, events = 0, blocks = 0;
    while (off < t->footer_off) {
        uint8_t h[BLOCK_HDR_SIZE];
        if (off + BLOCK_HDR_SIZE > t->footer_off || read_at(t, h, sizeof h, off) < 0) {
            trc_seterr(why, wl, "corrupt block at offset %llu (cut short)",
                       (unsigned long long)off);
            return -1;
        }
        uint32_t count = get_u32(h + 4), len = get_u32(h + 8);
        if (get_u32(h) != BLOCK_MAGIC) {
            trc_seterr(why, wl, "corrupt block at offset %llu (bad magic)",
                       (unsigned long long)off);
            return -1;
        }
        if (count == 0 || count > BLOCK_MAX_EVENTS || len > PAYLOAD_MAX ||
            off + BLOCK_HDR_SIZE + len > t->footer_off) {
            trc_seterr(why, wl, "corrupt block at offset %llu (bad length)",
                       (unsigned long long)off);
            return -1;
        }
        off += BLOCK_HDR_SIZE + (uint64_t)len;
        events += count;
        blocks++;
    }
    if (events != t->nevents || blocks != t->nblocks) {
        trc_seterr(why, wl, "corrupt (blocks hold %llu events, footer says %llu)",
                   (unsigned long long)events, (unsigned long long)t->nevents);
        return -1;
    }
    return 0;
}

/* Something that could be a trace at all: a non-empty regular file. */
static int open_file(weft_trace *t, char *why, size_t wl)
{
    t->fd = open(t->path, O_RDONLY | O_CLOEXEC);
    if (t->fd < 0) {
        trc_seterr(why, wl, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(t->fd, &st) < 0) {
        trc_seterr(why, wl, "cannot stat: %s", strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        trc_seterr(why, wl, "is a directory, not a trace");
        return -1;
    }
    t->size = (uint64_t)st.st_size;
    if (t->size == 0) {
        trc_seterr(why, wl, "empty file, not a trace");
        return -1;
    }
    return 0;
}

/* The 16 bytes every version starts with: magic, version, header length.
 * A spool is told apart from a trace here, so the user learns to salvage it
 * rather than that the file is corrupt. */
static int read_fixed(weft_trace *t, char *why, size_t wl)
{
    uint8_t fixed[16] = {0};
    size_t got = t->size < sizeof fixed ? (size_t)t->size : sizeof fixed;
    if (read_at(t, fixed, got, 0) < 0) {
        trc_seterr(why, wl, "read failed: %s", strerror(errno));
        return -1;
    }
    if (got >= 8 && memcmp(fixed, SPOOL_MAGIC, 8) == 0) {
        trc_seterr(why, wl,
                   "is the spool of an unfinished run, not a trace (weft salvage makes one)");
        return -1;
    }
    if (memcmp(fixed, TRC_MAGIC, got < 8 ? got : 8) != 0) {
        trc_seterr(why, wl, "not a weft trace (bad magic)");
        return -1;
    }
    if (got < sizeof fixed) {
        trc_seterr(why, wl, "truncated header (file is %llu bytes)", (unsigned long long)t->size);
        return -1;
    }
    uint32_t version = get_u32(fixed + 8);
    if (version > WEFT_TRACE_VERSION) {
        trc_seterr(why, wl, "trace format version %u is newer than this weft supports (%d)",
                   version, WEFT_TRACE_VERSION);
        return -1;
    }
    if (version == 0) {
        trc_seterr(why, wl, "unsupported trace format version 0");
        return -1;
    }
    t->header_len = get_u32(fixed + 12);
    if (t->header_len < 20 || t->header_len > HEADER_MAX) {
        trc_seterr(why, wl, "corrupt header (length %u)", t->header_len);
        return -1;
    }
    if (t->header_len > t->size) {
        trc_seterr(why, wl, "truncated header (%u bytes, file is %llu)", t->header_len,
                   (unsigned long long)t->size);
        return -1;
    }
    return 0;
}

static int read_header(weft_trace *t, char *why, size_t wl)
{
    uint8_t *hdr = malloc(t->header_len);
    if (!hdr || read_at(t, hdr, t->header_len, 0) < 0) {
        free(hdr);
        trc_seterr(why, wl, "cannot read header: %s", hdr ? strerror(errno) : "out of memory");
        return -1;
    }
    int hr = trc_header_parse(hdr, t->header_len, &t->meta, why, wl);
    free(hdr);
    return hr;
}

/* The trailer is written last, so a missing one means the write was cut;
 * it points at the footer, the summary and thread table. */
static int read_footer(weft_trace *t, char *why, size_t wl)
{
    uint8_t tr[TRAILER_SIZE];
    if (t->size < (uint64_t)t->header_len + FOOTER_FIXED + TRAILER_SIZE ||
        read_at(t, tr, sizeof tr, t->size - TRAILER_SIZE) < 0 ||
        memcmp(tr + 8, TRAILER_MAGIC, 8) != 0) {
        trc_seterr(why, wl, "truncated (no trailer at the end of its %llu bytes)",
                   (unsigned long long)t->size);
        return -1;
    }
    t->footer_off = get_u64(tr);
    if (t->footer_off < t->header_len || t->footer_off > t->size - TRAILER_SIZE - FOOTER_FIXED) {
        trc_seterr(why, wl, "corrupt trailer (footer offset %llu)",
                   (unsigned long long)t->footer_off);
        return -1;
    }
    size_t flen = (size_t)(t->size - TRAILER_SIZE - t->footer_off);
    if (flen > FOOTER_FIXED + (size_t)WEFT_TRACE_MAX_THREADS * FOOTER_THREAD +
                   (t->meta.version >= 3
                        ? 4 + (size_t)WEFT_TRACE_MAX_THREADS * WEFT_EV_KIND_COUNT * 8
                        : 0)) {
        trc_seterr(why, wl, "corrupt trailer (footer of %zu bytes)", flen);
        return -1;
    }
    uint8_t *foot = malloc(flen);
    if (!foot || read_at(t, foot, flen, t->footer_off) < 0) {
        free(foot);
        trc_seterr(why, wl, "cannot read footer");
        return -1;
    }
    int fr = parse_footer(t, foot, flen, why, wl);
    free(foot);
    return fr;
}

/* footer_only: weft_trace_open_footer. */
static weft_trace *trace_open(const char *path, bool footer_only, char *err, size_t errlen)
{
    if (!path) {
        trc_seterr(err, errlen, "weft_trace_open: no path");
        return NULL;
    }
    weft_trace *t = calloc(1, sizeof *t);
    if (!t || !(t->path = strdup(path))) {
        free(t);
        trc_seterr(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    t->fd = -1;
    /* Each step's reason is short (numbers and strerror, never the path):
     * why holds any of them whole. */
    char why[300];
    if (open_file(t, why, sizeof why) < 0 || read_fixed(t, why, sizeof why) < 0 ||
        read_header(t, why, sizeof why) < 0 || read_footer(t, why, sizeof why) < 0 ||
        (!footer_only && check_blocks(t, why, sizeof why) < 0))
        return open_fail(t, err, errlen, "%s", why);
    if (footer_only) {
        t->footer_only = t->failed = true;
        snprintf(t->err, sizeof t->err, "%s: opened for its footer only", path);
        return t;
    }
    if (t->meta.version >= 4 ? !(t->zd = ZSTD_createDCtx())
        : t->meta.version >= 2
            ? trc_frame_init(&t->fr, t->summary.nthreads) < 0 || !(t->zd = ZSTD_createDCtx())
            : trc_delta_init(&t->d, t->summary.nthreads, false) < 0)
        return open_fail(t, err, errlen, "out of memory");
    weft_trace_rewind(t);
    return t;
}

weft_trace *weft_trace_open(const char *path, char *err, size_t errlen)
{
    return trace_open(path, false, err, errlen);
}

weft_trace *weft_trace_open_footer(const char *path, char *err, size_t errlen)
{
    return trace_open(path, true, err, errlen);
}

static int load_block(weft_trace *t)
{
    uint64_t off = t->off;
    uint8_t h[BLOCK_HDR_SIZE];
    if (read_at(t, h, sizeof h, off) < 0)
        return trc_read_fail(t, off, "cannot read header");
    uint32_t count = get_u32(h + 4), len = get_u32(h + 8);
    /* Re-check: the file may have changed since open. */
    if (get_u32(h) != BLOCK_MAGIC || count == 0 || count > BLOCK_MAX_EVENTS || len > PAYLOAD_MAX ||
        off + BLOCK_HDR_SIZE + len > t->footer_off)
        return trc_read_fail(t, off, "bad header");
    if (len > t->blk_cap) {
        uint8_t *b = realloc(t->blk, len);
        if (!b)
            return trc_read_fail(t, off, "out of memory");
        t->blk = b;
        t->blk_cap = len;
    }
    if (read_at(t, t->blk, len, off + BLOCK_HDR_SIZE) < 0)
        return trc_read_fail(t, off, "cut short");
    if (trc_crc32(trc_crc32(0, h, 20), t->blk, len) != get_u32(h + 20))
        return trc_read_fail(t, off, "checksum mismatch");
    if (count > t->ev_cap) {
        weft_event *v = realloc(t->ev, count * sizeof *v);
        if (!v)
            return trc_read_fail(t, off, "out of memory");
        t->ev = v;
        t->ev_cap = count;
    }
    trc_delta_reset(&t->d, get_u64(h + 12), 0);
    const uint8_t *p = t->blk, *end = t->blk + len;
    for (uint32_t i = 0; i < count; i++) {
        const char *why = NULL;
        weft_event *ev = &t->ev[i];
        size_t n = trc_rec_decode(&t->d, p, end, ev, &why);
        if (!n)
            return trc_read_fail(t, off, why);
        p += n;
        /* Canonical order is part of the format: (time, thread) never decreases. */
        if (t->any &&
            (ev->time < t->last_time || (ev->time == t->last_time && ev->thread < t->last_thread)))
            return trc_read_fail(t, off, "events out of order");
        t->any = true;
        t->last_time = ev->time;
        t->last_thread = ev->thread;
    }
    if (p != end)
        return trc_read_fail(t, off, "trailing bytes");
    t->nev = count;
    t->pos = 0;
    t->off = off + BLOCK_HDR_SIZE + len;
    return 0;
}

int weft_trace_next(weft_trace *t, weft_event *ev)
{
    if (t->failed)
        return -1;
    if (t->meta.version >= 4) {
        int r = trc_read_segment_next(t, ev);
        if (r == 1)
            ev->seq = t->seq[ev->thread]++;
        return r;
    }
    if (t->meta.version >= 2) {
        if (t->fleft == 0 && t->off < t->footer_off && trc_read_load_frame(t) < 0)
            return -1;
        if (t->fleft) {
            if (trc_read_frame_next(t, ev) < 0)
                return -1;
            ev->seq = t->seq[ev->thread]++;
            return 1;
        }
    }
    while (t->pos == t->nev) {
        if (t->off >= t->footer_off) {
            /* The footer's per-thread counts are what plans are checked
             * against: they must be the blocks' own. */
            for (uint32_t i = 0; i < t->summary.nthreads; i++)
                if (t->seq[i] != t->summary.threads[i].events) {
                    snprintf(t->err, sizeof t->err,
                             "%s: corrupt footer (thread %u has %llu events in the blocks, the "
                             "footer says %llu)",
                             t->path, i, (unsigned long long)t->seq[i],
                             (unsigned long long)t->summary.threads[i].events);
                    t->failed = true;
                    return -1;
                }
            return 0;
        }
        if (load_block(t) < 0)
            return -1;
    }
    *ev = t->ev[t->pos++];
    ev->seq = t->seq[ev->thread]++;
    return 1;
}

void weft_trace_rewind(weft_trace *t)
{
    if (t->footer_only)
        return; /* nothing to rewind: it stays failed */
    t->off = t->header_len;
    t->nev = t->pos = 0;
    t->fleft = 0;
    t->primed = false;
    t->any = false;
    t->failed = false;
    t->err[0] = 0;
    memset(t->seq, 0, (t->summary.nthreads ? t->summary.nthreads : 1) * sizeof *t->seq);
}

const weft_trace_meta *weft_trace_get_meta(const weft_trace *t)
{
    return &t->meta;
}

const weft_trace_summary *weft_trace_get_summary(const weft_trace *t)
{
    return &t->summary;
}

uint64_t weft_trace_event_count(const weft_trace *t)
{
    return t->nevents;
}

const char *weft_trace_error(const weft_trace *t)
{
    return t->err;
}

const char *weft_trace_path(const weft_trace *t)
{
    return t->path;
}

void weft_trace_close(weft_trace *t)
{
    if (t)
        trace_free(t);
}

int weft_trace_set_outcome(const char *path, uint32_t flags, int32_t exit_status, char *err,
                           size_t errlen)
{
    /* A damaged header or footer is reported, not patched; the segments
     * are not read (the caller has just written them, and on a real
     * program's trace the walk cost most of a second). */
    weft_trace *t = weft_trace_open_footer(path, err, errlen);
    if (!t)
        return -1;
    uint64_t off = t->footer_off;
    size_t len = (size_t)(t->size - TRAILER_SIZE - off);
    weft_trace_close(t);
    int rc = -1;
    uint8_t *foot = malloc(len);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (!foot || fd < 0) {
        trc_seterr(err, errlen, "%s: cannot open for update: %s", path,
                   foot ? strerror(errno) : "out of memory");
        goto out;
    }
    if (trc_pread_all(fd, foot, len, off) != (ssize_t)len) {
        trc_seterr(err, errlen, "%s: cannot read footer: %s", path, strerror(errno));
        goto out;
    }
    if ((get_u32(foot + 8) | flags) == get_u32(foot + 8) &&
        get_u32(foot + 12) == (uint32_t)exit_status) {
        rc = 0; /* the tracer wrote this outcome already: no write, no fsync */
        goto out;
    }
    put_u32(foot + 8, get_u32(foot + 8) | flags);
    put_u32(foot + 12, (uint32_t)exit_status);
    put_u32(foot + len - 4, trc_crc32(0, foot, len - 4));
    /* One write of the whole footer: it is small (56 bytes per thread), so
     * in practice it lands at once; the trace is never rewritten. */
    ssize_t w = pwrite(fd, foot, len, (off_t)off);
    if (w != (ssize_t)len || fsync(fd) < 0) {
        trc_seterr(err, errlen, "%s: cannot update footer: %s", path,
                   w < 0 || w == (ssize_t)len ? strerror(errno) : "short write");
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0 && close(fd) < 0 && rc == 0) {
        trc_seterr(err, errlen, "%s: cannot update footer: %s", path, strerror(errno));
        rc = -1;
    }
    free(foot);
    return rc;
}

static const char *const kind_names[WEFT_EV_KIND_COUNT] = {
    [WEFT_EV_READ] = "read",
    [WEFT_EV_WRITE] = "write",
    [WEFT_EV_RMW] = "rmw",
    [WEFT_EV_THREAD_START] = "thread_start",
    [WEFT_EV_THREAD_EXIT] = "thread_exit",
    [WEFT_EV_FUTEX_WAIT] = "futex_wait",
    [WEFT_EV_FUTEX_WAKE] = "futex_wake",
    [WEFT_EV_SYSCALL] = "syscall",
    [WEFT_EV_DELAY] = "delay",
    [WEFT_EV_FAULT] = "fault",
};

const char *weft_event_kind_name(uint8_t kind)
{
    return kind < WEFT_EV_KIND_COUNT && kind_names[kind] ? kind_names[kind] : "unknown";
}

int weft_event_is_access(uint8_t kind)
{
    return kind == WEFT_EV_READ || kind == WEFT_EV_WRITE || kind == WEFT_EV_RMW;
}

int weft_event_writes(uint8_t kind)
{
    return kind == WEFT_EV_WRITE || kind == WEFT_EV_RMW;
}
