/* Byte-level encoding shared by the spool and the trace file: CRC-32,
 * varints, the delta-encoded event record, the header and the footer.
 * Layout reference: docs/trace-format.md. */
#include <zlib.h>

#include "trace_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- CRC-32 (IEEE 802.3): zlib's, which is several times faster than a
 * bytewise table and the checksum is on every block and spool chunk ---- */

uint32_t trc_crc32(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    while (n > 0) {
        uInt part = n > 0x40000000u ? 0x40000000u : (uInt)n;
        crc = (uint32_t)crc32(crc, p, part);
        p += part;
        n -= part;
    }
    return crc;
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

/* ---- varints: LEB128, signed values zigzag-mapped ---- */

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Returns bytes consumed, 0 if the varint runs past end or overflows 64 bits. */
static size_t get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (size_t i = 0; i < 10 && p + i < end; i++) {
        uint64_t b = p[i] & 0x7f;
        if (i == 9 && p[i] > 1)
            return 0;
        r |= b << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = r;
            return i + 1;
        }
    }
    return 0;
}

static uint64_t zigzag(uint64_t delta)
{
    return (delta << 1) ^ (uint64_t)((int64_t)delta >> 63);
}

static uint64_t unzigzag(uint64_t z)
{
    return (z >> 1) ^ (uint64_t)(-(int64_t)(z & 1));
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

/* Slot of a thread, reset to zeros if not yet used in this block. */
static uint32_t delta_slot(trc_delta *d, uint32_t thread)
{
    uint32_t s = d->single ? 0 : thread;
    if (d->slot_gen[s] != d->gen) {
        d->slot_gen[s] = d->gen;
        d->prev_addr[s] = 0;
        d->prev_pc[s] = 0;
    }
    return s;
}

/* Record layout: a kind byte (bits 0-3 kind, 4 thread follows, 5 flags
 * follow, 6 size follows, 7 reserved), then the optional thread varint, the
 * time delta varint, the optional size byte and flags varint, and the
 * zigzag deltas of addr and pc against the same thread's previous record. */
#define REC_T 0x10u
#define REC_F 0x20u
#define REC_S 0x40u

size_t trc_rec_encode(trc_delta *d, uint8_t *out, const weft_event *ev)
{
    uint8_t *p = out + 1;
    uint8_t k = ev->kind & 0x0f;
    if (ev->thread != d->thread) {
        k |= REC_T;
        p += put_varint(p, ev->thread);
    }
    p += put_varint(p, ev->time - d->time);
    if (ev->size) {
        k |= REC_S;
        *p++ = ev->size;
    }
    if (ev->flags) {
        k |= REC_F;
        p += put_varint(p, ev->flags);
    }
    uint32_t s = delta_slot(d, ev->thread);
    p += put_varint(p, zigzag(ev->addr - d->prev_addr[s]));
    p += put_varint(p, zigzag(ev->pc - d->prev_pc[s]));
    out[0] = k;
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
    size_t n;
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
        if (!(n = get_varint(p, end, &v)) || v > UINT32_MAX) {
            *why = "bad thread field";
            return 0;
        }
        p += n;
        ev->thread = (uint32_t)v;
        if (d->single || ev->thread >= d->nslots) {
            *why = "thread id out of range";
            return 0;
        }
    }
    if (!(n = get_varint(p, end, &v)) || d->time + v < d->time) {
        *why = "bad time field";
        return 0;
    }
    p += n;
    ev->time = d->time + v;
    if (k & REC_S) {
        if (p >= end || *p == 0 || *p > 64) {
            *why = "bad size field";
            return 0;
        }
        ev->size = *p++;
    }
    if (k & REC_F) {
        if (!(n = get_varint(p, end, &v)) || v == 0 || v > UINT16_MAX) {
            *why = "bad flags field";
            return 0;
        }
        p += n;
        ev->flags = (uint16_t)v;
    }
    uint32_t s = delta_slot(d, ev->thread);
    if (!(n = get_varint(p, end, &v))) {
        *why = "bad address field";
        return 0;
    }
    p += n;
    ev->addr = d->prev_addr[s] + unzigzag(v);
    if (!(n = get_varint(p, end, &v))) {
        *why = "bad pc field";
        return 0;
    }
    p += n;
    ev->pc = d->prev_pc[s] + unzigzag(v);
    d->time = ev->time;
    d->thread = ev->thread;
    d->prev_addr[s] = ev->addr;
    d->prev_pc[s] = ev->pc;
    return (size_t)(p - p0);
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

size_t trc_header_encode(const weft_trace_meta *m, const char magic[8], uint8_t **out)
{
    growbuf b = {0};
    const weft_trace_settings *s = &m->settings;
    gb_bytes(&b, magic, 8);
    gb_u32(&b, WEFT_TRACE_VERSION);
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

void trc_out_flush(trc_out *o)
{
    if (o->n && !o->err)
        o->err = trc_write_all(o->fd, o->buf, o->n);
    o->n = 0;
}

void trc_out_write(trc_out *o, const void *p, size_t n)
{
    o->off += n;
    if (o->err)
        return;
    if (o->n + n > sizeof o->buf) {
        trc_out_flush(o);
        if (n > sizeof o->buf) {
            if (!o->err)
                o->err = trc_write_all(o->fd, p, n);
            return;
        }
    }
    memcpy(o->buf + o->n, p, n);
    o->n += n;
}
