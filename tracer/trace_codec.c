/* Byte-level encoding shared by the spool and the trace file: CRC-32,
 * varints, the delta-encoded event record, the header and the footer.
 * Layout reference: docs/trace-format.md. */
#include <libdeflate.h>

#include "trace_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- CRC-32 (IEEE 802.3) ----
 * Every spool chunk and block is checksummed and the spool's chunks are
 * checked again by the merge, so a trace costs three CRCs of its size.
 * libdeflate's CRC-32 folds with carry-less multiplies where the CPU has
 * them, about four times zlib's speed on this machine; same values. */
uint32_t trc_crc32(uint32_t crc, const void *data, size_t n)
{
    return libdeflate_crc32(crc, data, n);
}

void trc_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- delta state ---- */

int trc_delta_init(trc_delta *d, uint32_t nslots, bool single)
{
    memset(d, 0, sizeof *d);
    d->single = single;
    d->nslots = single ? 1 : nslots;
    size_t n = d->nslots ? d->nslots : 1;
    d->slot_gen = calloc(n, sizeof *d->slot_gen);
    d->prev_addr = calloc(n, sizeof *d->prev_addr);
    d->prev_pc = calloc(n, sizeof *d->prev_pc);
    if (!d->slot_gen || !d->prev_addr || !d->prev_pc) {
        trc_delta_free(d);
        return -1;
    }
    return 0;
}

void trc_delta_free(trc_delta *d)
{
    free(d->slot_gen);
    free(d->prev_addr);
    free(d->prev_pc);
    d->slot_gen = NULL;
    d->prev_addr = d->prev_pc = NULL;
}

void trc_delta_reset(trc_delta *d, uint64_t base_time, uint32_t thread)
{
    d->time = base_time;
    d->thread = thread;
    if (++d->gen == 0) { /* wrapped: stamps could collide, clear them */
        memset(d->slot_gen, 0, (d->nslots ? d->nslots : 1) * sizeof *d->slot_gen);
        d->gen = 1;
    }
}

/* Record layout: a kind byte (bits 0-3 kind, 4 thread follows, 5 flags
 * follow, 6 size follows, 7 reserved), then the optional thread varint, the
 * time delta varint, the optional size byte and flags varint, and the
 * zigzag deltas of addr and pc against the same thread's previous record. */

size_t trc_rec_encode(trc_delta *d, uint8_t *out, const weft_event *ev)
{
    uint32_t s = trc_delta_slot(d, ev->thread);
    uint8_t *p =
        trc_rec_put(out, ev->kind, ev->thread != d->thread, ev->thread, ev->time - d->time,
                    ev->size, ev->flags, ev->addr - d->prev_addr[s], ev->pc - d->prev_pc[s]);
    d->time = ev->time;
    d->thread = ev->thread;
    d->prev_addr[s] = ev->addr;
    d->prev_pc[s] = ev->pc;
    return (size_t)(p - out);
}

size_t trc_rec_decode(trc_delta *d, const uint8_t *p0, const uint8_t *end, weft_event *ev,
                      const char **why)
{
    const uint8_t *p = p0;
    uint64_t v;
    if (p >= end) {
        *why = "record runs past the block";
        return 0;
    }
    uint8_t k = *p++;
    if (k & 0x80) {
        *why = "reserved record bit set";
        return 0;
    }
    if ((k & 0x0f) >= WEFT_EV_KIND_COUNT) {
        *why = "unknown event kind";
        return 0;
    }
    memset(ev, 0, sizeof *ev);
    ev->kind = k & 0x0f;
    ev->thread = d->thread;
    if (k & REC_T) {
        if (!(p = trc_get_varint(p, end, &v)) || v > UINT32_MAX) {
            *why = "bad thread field";
            return 0;
        }
        ev->thread = (uint32_t)v;
        if (d->single || ev->thread >= d->nslots) {
            *why = "thread id out of range";
            return 0;
        }
    }
    if (!(p = trc_get_varint(p, end, &v)) || d->time + v < d->time) {
        *why = "bad time field";
        return 0;
    }
    ev->time = d->time + v;
    if (k & REC_S) {
        if (p >= end || *p == 0 || *p > 64) {
            *why = "bad size field";
            return 0;
        }
        ev->size = *p++;
    }
    if (k & REC_F) {
        if (!(p = trc_get_varint(p, end, &v)) || v == 0 || v > UINT16_MAX) {
            *why = "bad flags field";
            return 0;
        }
        ev->flags = (uint16_t)v;
    }
    uint32_t s = trc_delta_slot(d, ev->thread);
    if (!(p = trc_get_varint(p, end, &v))) {
        *why = "bad address field";
        return 0;
    }
    ev->addr = d->prev_addr[s] + trc_unzigzag(v);
    if (!(p = trc_get_varint(p, end, &v))) {
        *why = "bad pc field";
        return 0;
    }
    ev->pc = d->prev_pc[s] + trc_unzigzag(v);
    d->time = ev->time;
    d->thread = ev->thread;
    d->prev_addr[s] = ev->addr;
    d->prev_pc[s] = ev->pc;
    return (size_t)(p - p0);
}

/* ---- spool chunks: one thread, so no thread field and a single slot ---- */

size_t trc_chunk_encode(uint8_t *out, const weft_event *ev, size_t n)
{
    uint8_t *p = out;
    uint64_t time = ev[0].time, addr = 0, pc = 0;
    for (size_t i = 0; i < n; i++) {
        const weft_event *e = &ev[i];
        p = trc_rec_put(p, e->kind, false, 0, e->time - time, e->size, e->flags, e->addr - addr,
                        e->pc - pc);
        time = e->time;
        addr = e->addr;
        pc = e->pc;
    }
    return (size_t)(p - out);
}

size_t trc_chunk_build(uint8_t *out, uint32_t thread, const weft_event *ev, size_t n)
{
    /* The thread is the caller's, whatever the events say: chunk records
     * do not store it. */
    uint32_t plen = (uint32_t)trc_chunk_encode(out + CHUNK_HDR_SIZE, ev, n);
    put_u32(out, CHUNK_MAGIC);
    put_u32(out + 4, thread);
    put_u32(out + 8, (uint32_t)n);
    put_u32(out + 12, plen);
    put_u64(out + 16, ev[0].time);
    put_u32(out + 24, trc_crc32(trc_crc32(0, out, 24), out + CHUNK_HDR_SIZE, plen));
    return CHUNK_HDR_SIZE + plen;
}

int trc_chunk_decode(trc_chunk_state *s, const uint8_t **pp, const uint8_t *end, trc_rec *out,
                     uint32_t n, const char **why)
{
    const uint8_t *p = *pp;
    uint64_t time = s->time, addr = s->addr, pc = s->pc, v;
    int rc = -1;
    for (uint32_t i = 0; i < n; i++) {
        trc_rec *r = &out[i];
        if (p >= end) {
            *why = "record runs past the block";
            goto out;
        }
        uint8_t k = *p++;
        if (k & 0x80) {
            *why = "reserved record bit set";
            goto out;
        }
        if ((k & 0x0f) >= WEFT_EV_KIND_COUNT) {
            *why = "unknown event kind";
            goto out;
        }
        if (k & REC_T) { /* a chunk's records all belong to its thread */
            *why = trc_get_varint(p, end, &v) && v <= UINT32_MAX ? "thread id out of range"
                                                                 : "bad thread field";
            goto out;
        }
        if (!(p = trc_get_varint(p, end, &v)) || time + v < time) {
            *why = "bad time field";
            goto out;
        }
        time += v;
        r->time = time;
        r->thread = s->thread;
        r->kind = k & 0x0f;
        r->size = 0;
        r->flags = 0;
        if (k & REC_S) {
            if (p >= end || *p == 0 || *p > 64) {
                *why = "bad size field";
                goto out;
            }
            r->size = *p++;
        }
        if (k & REC_F) {
            if (!(p = trc_get_varint(p, end, &v)) || v == 0 || v > UINT16_MAX) {
                *why = "bad flags field";
                goto out;
            }
            r->flags = (uint16_t)v;
        }
        if (!(p = trc_get_varint(p, end, &v))) {
            *why = "bad address field";
            goto out;
        }
        addr += trc_unzigzag(v);
        r->addr = addr;
        if (!(p = trc_get_varint(p, end, &v))) {
            *why = "bad pc field";
            goto out;
        }
        pc += trc_unzigzag(v);
        r->pc = pc;
    }
    rc = 0;
out:
    s->time = time;
    s->addr = addr;
    s->pc = pc;
    *pp = p;
    return rc;
}

/* ---- header ---- */

typedef struct growbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} growbuf;

static uint8_t *gb_room(growbuf *b, size_t n)
{
    if (b->oom)
        return NULL;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return NULL;
        }
        b->p = q;
        b->cap = cap;
    }
    uint8_t *r = b->p + b->n;
    b->n += n;
    return r;
}

static void gb_u32(growbuf *b, uint32_t v)
{
    uint8_t *p = gb_room(b, 4);
    if (p)
        put_u32(p, v);
}

static void gb_u64(growbuf *b, uint64_t v)
{
    uint8_t *p = gb_room(b, 8);
    if (p)
        put_u64(p, v);
}

static void gb_bytes(growbuf *b, const void *s, size_t n)
{
    uint8_t *p = gb_room(b, n);
    if (p && n)
        memcpy(p, s, n);
}

static void gb_str(growbuf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    gb_u32(b, (uint32_t)n);
    gb_bytes(b, s, n);
}

int trc_zstd_level(void)
{
    const char *e = getenv("WEFT_TRACE_ZSTD_LEVEL");
    char *end;
    long l = e && *e ? strtol(e, &end, 10) : -1;
    return l >= 0 && l <= 19 && *end == 0 ? (int)l : TRC_ZSTD_LEVEL_DEFAULT;
}

size_t trc_header_encode(const weft_trace_meta *m, const char magic[8], uint32_t version,
                         uint32_t zstd_level, uint8_t **out)
{
    growbuf b = {0};
    const weft_trace_settings *s = &m->settings;
    gb_bytes(&b, magic, 8);
    gb_u32(&b, version);
    gb_u32(&b, 0); /* header_len, patched below */
    gb_u32(&b, s->mode);
    gb_u32(&b, s->cpi);
    gb_u64(&b, s->ps_per_cycle);
    gb_u64(&b, s->quantum);
    gb_u32(&b, s->filter);
    uint32_t nr = s->nranges > WEFT_TRACE_MAX_RANGES ? WEFT_TRACE_MAX_RANGES : s->nranges;
    gb_u32(&b, nr);
    for (uint32_t i = 0; i < nr; i++) {
        gb_u64(&b, s->range_lo[i]);
        gb_u64(&b, s->range_hi[i]);
    }
    /* Zero-pad the policy after its NUL so equal names give equal bytes. */
    char policy[32] = {0};
    memcpy(policy, s->policy, strnlen(s->policy, sizeof policy - 1));
    gb_bytes(&b, policy, sizeof policy);
    gb_u64(&b, s->seed);
    gb_str(&b, m->binary_path);
    uint32_t bl = m->build_id_len > sizeof m->build_id ? sizeof m->build_id : m->build_id_len;
    gb_u32(&b, bl);
    gb_bytes(&b, m->build_id, bl);
    gb_u32(&b, m->argc);
    for (uint32_t i = 0; i < m->argc; i++)
        gb_str(&b, m->argv ? m->argv[i] : NULL);
    if (version >= 2) {
        gb_u32(&b, s->record ? s->record & WEFT_RECORD_ALL : WEFT_RECORD_ALL);
        gb_u32(&b, zstd_level);
    }
    uint8_t *crcp = gb_room(&b, 4);
    if (b.oom || b.n > UINT32_MAX || !crcp) {
        free(b.p);
        return 0;
    }
    put_u32(b.p + 12, (uint32_t)b.n);
    put_u32(b.p + b.n - 4, trc_crc32(0, b.p, b.n - 4));
    *out = b.p;
    return b.n;
}

typedef struct cursor {
    const uint8_t *p, *end;
    bool bad;
} cursor;

static const uint8_t *cur_take(cursor *c, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = true;
        return NULL;
    }
    const uint8_t *r = c->p;
    c->p += n;
    return r;
}

static uint32_t cur_u32(cursor *c)
{
    const uint8_t *p = cur_take(c, 4);
    return p ? get_u32(p) : 0;
}

static uint64_t cur_u64(cursor *c)
{
    const uint8_t *p = cur_take(c, 8);
    return p ? get_u64(p) : 0;
}

static char *cur_str(cursor *c)
{
    uint32_t n = cur_u32(c);
    const uint8_t *p = cur_take(c, n);
    if (!p)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) {
        c->bad = true;
        return NULL;
    }
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

int trc_header_parse(const uint8_t *buf, size_t len, weft_trace_meta *m, char *why, size_t whylen)
{
    memset(m, 0, sizeof *m);
    if (len < 20 || trc_crc32(0, buf, len - 4) != get_u32(buf + len - 4)) {
        trc_seterr(why, whylen, "corrupt header (checksum mismatch)");
        return -1;
    }
    cursor c = {buf + 16, buf + len - 4, false};
    weft_trace_settings *s = &m->settings;
    s->mode = cur_u32(&c);
    s->cpi = cur_u32(&c);
    s->ps_per_cycle = cur_u64(&c);
    s->quantum = cur_u64(&c);
    s->filter = cur_u32(&c);
    s->nranges = cur_u32(&c);
    if (s->nranges > WEFT_TRACE_MAX_RANGES) {
        trc_seterr(why, whylen, "corrupt header (%u address ranges, at most %d)", s->nranges,
                   WEFT_TRACE_MAX_RANGES);
        return -1;
    }
    for (uint32_t i = 0; i < s->nranges; i++) {
        s->range_lo[i] = cur_u64(&c);
        s->range_hi[i] = cur_u64(&c);
    }
    const uint8_t *pol = cur_take(&c, sizeof s->policy);
    if (pol) {
        memcpy(s->policy, pol, sizeof s->policy);
        s->policy[sizeof s->policy - 1] = 0;
    }
    s->seed = cur_u64(&c);
    m->binary_path = cur_str(&c);
    m->build_id_len = cur_u32(&c);
    if (m->build_id_len > sizeof m->build_id) {
        trc_seterr(why, whylen, "corrupt header (build-id of %u bytes)", m->build_id_len);
        trc_meta_free(m);
        return -1;
    }
    const uint8_t *bid = cur_take(&c, m->build_id_len);
    if (bid)
        memcpy(m->build_id, bid, m->build_id_len);
    uint32_t argc = cur_u32(&c);
    /* Each argument takes at least its 4-byte length, so this bounds argc by
     * the header size before anything is allocated. */
    if (!c.bad && argc > (size_t)(c.end - c.p) / 4)
        c.bad = true;
    if (!c.bad) {
        m->argv = calloc((size_t)argc + 1, sizeof *m->argv);
        if (!m->argv)
            c.bad = true;
    }
    for (uint32_t i = 0; i < argc && !c.bad; i++) {
        m->argv[i] = cur_str(&c);
        m->argc = i + 1;
    }
    m->version = get_u32(buf + 8);
    s->record = WEFT_RECORD_ALL;
    if (m->version >= 2) {
        s->record = cur_u32(&c);
        m->zstd_level = cur_u32(&c);
        if (!c.bad && (s->record == 0 || s->record & ~WEFT_RECORD_ALL)) {
            trc_seterr(why, whylen, "corrupt header (recorded events 0x%x)", s->record);
            trc_meta_free(m);
            return -1;
        }
    }
    if (c.bad || c.p != c.end) {
        trc_seterr(why, whylen, "corrupt header (fields do not match its length)");
        trc_meta_free(m);
        return -1;
    }
    return 0;
}

static char *dupstr(const char *s)
{
    return strdup(s ? s : "");
}

int trc_meta_copy(weft_trace_meta *dst, const weft_trace_meta *src)
{
    *dst = *src;
    dst->binary_path = dupstr(src->binary_path);
    dst->argv = calloc((size_t)src->argc + 1, sizeof *dst->argv);
    if (!dst->binary_path || !dst->argv) {
        dst->argc = 0;
        trc_meta_free(dst);
        return -1;
    }
    for (uint32_t i = 0; i < src->argc; i++) {
        if (!(dst->argv[i] = dupstr(src->argv ? src->argv[i] : NULL))) {
            dst->argc = i;
            trc_meta_free(dst);
            return -1;
        }
    }
    if (dst->build_id_len > sizeof dst->build_id)
        dst->build_id_len = sizeof dst->build_id;
    if (dst->settings.nranges > WEFT_TRACE_MAX_RANGES)
        dst->settings.nranges = WEFT_TRACE_MAX_RANGES;
    dst->settings.policy[sizeof dst->settings.policy - 1] = 0;
    return 0;
}

void trc_meta_free(weft_trace_meta *m)
{
    free(m->binary_path);
    if (m->argv)
        for (uint32_t i = 0; i < m->argc; i++)
            free(m->argv[i]);
    free(m->argv);
    m->binary_path = NULL;
    m->argv = NULL;
    m->argc = 0;
}

/* ---- footer ---- */

size_t trc_footer_encode(const weft_trace_summary *s, uint64_t nevents, uint64_t nblocks,
                         uint8_t **out)
{
    size_t len = FOOTER_FIXED + (size_t)s->nthreads * FOOTER_THREAD;
    uint8_t *b = calloc(1, len);
    if (!b)
        return 0;
    memcpy(b, FOOTER_MAGIC, 8);
    put_u32(b + 8, s->flags);
    put_u32(b + 12, (uint32_t)s->exit_status);
    put_u64(b + 16, s->stall_escapes);
    put_u64(b + 24, s->makespan);
    put_u64(b + 32, nevents);
    put_u64(b + 40, nblocks);
    put_u32(b + 48, s->nthreads);
    for (uint32_t i = 0; i < s->nthreads; i++) {
        const weft_trace_thread *t = &s->threads[i];
        uint8_t *p = b + 52 + (size_t)i * FOOTER_THREAD;
        put_u32(p, t->id);
        put_u32(p + 4, t->parent);
        put_u64(p + 8, t->tid);
        put_u64(p + 16, t->start_time);
        put_u64(p + 24, t->end_time);
        put_u64(p + 32, t->events);
        put_u64(p + 40, t->insns);
        put_u32(p + 48, t->exited);
        put_u32(p + 52, (uint32_t)t->exit_code);
    }
    put_u32(b + len - 4, trc_crc32(0, b, len - 4));
    *out = b;
    return len;
}

/* ---- checked I/O ---- */

int trc_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *q = p;
    while (n) {
        ssize_t w = write(fd, q, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (w == 0)
            return ENOSPC;
        q += w;
        n -= (size_t)w;
    }
    return 0;
}

ssize_t trc_pread_all(int fd, void *p, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (uint8_t *)p + got, n - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int trc_out_init(trc_out *o, int fd, size_t cap)
{
    *o = (trc_out){.fd = fd, .cap = cap, .buf = malloc(cap)};
    if (!o->buf) {
        o->err = ENOMEM;
        return -1;
    }
    return 0;
}

void trc_out_free(trc_out *o)
{
    free(o->buf);
    o->buf = NULL;
}

/* Writeback is started on what has been written every this many bytes, so
 * that the final fsync finds most of the file already on its way to disk
 * instead of writing all of it while the caller waits. Only whole pages
 * (of up to 64 KiB) are handed over: the next write may still change the
 * last, partly written one, and must not have to wait for its writeback. */
#define OUT_WRITEBACK_STEP (8u << 20)
#define OUT_WRITEBACK_ALIGN (64u << 10)

void trc_out_flush(trc_out *o)
{
    if (o->n && !o->err)
        o->err = trc_write_all(o->fd, o->buf, o->n);
    o->n = 0;
    /* off counts exactly the bytes written now that the buffer is empty. */
    uint64_t end = o->off & ~(uint64_t)(OUT_WRITEBACK_ALIGN - 1);
    if (!o->err && end > o->synced && end - o->synced >= OUT_WRITEBACK_STEP) {
        /* Best effort: a file system without it is just synced at the end. */
        sync_file_range(o->fd, (off_t)o->synced, (off_t)(end - o->synced), SYNC_FILE_RANGE_WRITE);
        o->synced = end;
    }
}

uint8_t *trc_out_reserve(trc_out *o, size_t n)
{
    if (o->n + n > o->cap)
        trc_out_flush(o);
    return o->buf + o->n;
}

void trc_out_commit(trc_out *o, size_t n)
{
    o->n += n;
    o->off += n;
}

void trc_out_write(trc_out *o, const void *p, size_t n)
{
    if (o->n + n > o->cap) {
        trc_out_flush(o);
        if (n > o->cap) {
            if (!o->err)
                o->err = trc_write_all(o->fd, p, n);
            o->off += n;
            return;
        }
    }
    if (!o->err)
        memcpy(o->buf + o->n, p, n);
    trc_out_commit(o, n);
}
