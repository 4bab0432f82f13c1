/* Byte-level encoding shared by the spool and the trace file: CRC-32,
 * varints, the delta-encoded event record (version 1 blocks and spool
 * chunks) and checked I/O; the header and footer are in trace_header.c.
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

/* ---- spool chunks: one thread, so no thread field, and predictions ----
 * Tag bits 0-3 kind, 4 A (the address is as predicted: no field), 5 F, 6 S,
 * 7 P (time step, pc, size and flags as predicted: no fields). A hot loop's
 * record is then its tag alone, where the plain encoding took about 7
 * bytes: the spool is written while the guest runs and read back by
 * finish, and its volume was a quarter of a guest thread's time.
 *
 * The payload holds the tags, the other fields and the address deltas as
 * three streams one after the other (a u32 gives the fields' length):
 * zstd then finds the tags' and the addresses' repeats among their own
 * kind, and compressed a pigz trace 15% smaller in 5% less of the run's
 * CPU than the records interleaved (version 4's chunks, still read). */
#define CREC_A 0x10u
#define CREC_P 0x80u

static inline uint32_t chunk_slot(uint64_t pc)
{
    return (uint32_t)((pc >> 2) ^ (pc >> (2 + CHUNK_PRED_BITS))) & (CHUNK_PRED - 1);
}

/* Bytes a record's fields other than tag and address take at most: time
 * step, size, flags and pc. */
#define CHUNK_FIELDS_MAX 24

size_t trc_chunk_encode(uint8_t *out, const weft_event *ev, size_t n)
{
    /* Tags at out + 4, fields after them; the address deltas are staged
     * past the fields' worst case and moved down at the end (4 + 35 n fits
     * n * REC_MAX). */
    uint8_t *t = out + 4, *p = t + n, *a0 = p + n * CHUNK_FIELDS_MAX, *a = a0;
    uint64_t time = ev[0].time, addr = 0, pc = 0;
    trc_chunk_pred pr;
    memset(&pr, 0, sizeof pr);
    for (size_t i = 0; i < n; i++) {
        const weft_event *e = &ev[i];
        uint8_t k = e->kind & 0x0f;
        uint64_t dt = e->time - time, meta = CHUNK_META(k, e->size, e->flags);
        trc_chunk_slot *x = &pr.slot[chunk_slot(pc)];
        /* One branch for the whole prediction: which field missed does not
         * matter, and a chain of compares mispredicts at each. */
        if (!((x->key ^ pc) | (x->pc ^ e->pc) | (x->dt ^ dt) | (x->meta ^ meta))) {
            k |= CREC_P;
        } else {
            p = trc_put_varint_room(p, dt);
            if (e->size) {
                k |= REC_S;
                *p++ = e->size;
            }
            if (e->flags) {
                k |= REC_F;
                p = trc_put_varint_room(p, e->flags);
            }
            p = trc_put_varint_room(p, trc_zigzag(e->pc - pc));
            x->key = pc;
            x->pc = e->pc;
            x->dt = dt;
            x->meta = meta;
        }
        trc_chunk_slot *y = &pr.slot[chunk_slot(e->pc)];
        bool known = y->avalid && y->akey == e->pc;
        uint64_t base = known ? y->addr + y->stride : addr;
        if (e->addr == base)
            k |= CREC_A;
        else
            a = trc_put_varint_room(a, trc_zigzag(e->addr - base));
        y->stride = known ? e->addr - y->addr : 0;
        y->akey = e->pc;
        y->addr = e->addr;
        y->avalid = 1;
        t[i] = k;
        time = e->time;
        addr = e->addr;
        pc = e->pc;
    }
    put_u32(out, (uint32_t)(p - (t + n)));
    memmove(p, a0, (size_t)(a - a0));
    return (size_t)(p + (a - a0) - out);
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

int trc_chunk_open(trc_chunk_state *s, const uint8_t *b, uint32_t thread, const char **why)
{
    uint32_t count = get_u32(b + 8), len = get_u32(b + 12);
    const uint8_t *p = b + CHUNK_HDR_SIZE, *end = p + len;
    *s = (trc_chunk_state){.time = get_u64(b + 16), .thread = thread};
    s->split = get_u32(b) == CHUNK_MAGIC;
    s->end = end;
    if (!s->split) {
        s->tag = s->field = s->addr_at = p;
        s->tag_end = s->field_end = end;
        return 0;
    }
    if (len < 4 || count > len - 4 || get_u32(p) > len - 4 - count) {
        *why = "chunk streams past the chunk";
        return -1;
    }
    s->tag = p + 4;
    s->tag_end = s->field = s->tag + count;
    s->field_end = s->addr_at = s->field + get_u32(p);
    return 0;
}

/* One loop for both layouts: an interleaved chunk's streams are one, so
 * each stream starts where the previous one stopped (split is a constant
 * in each caller below, and the compiler drops what it does not use). */
static inline __attribute__((always_inline)) int
chunk_decode(trc_chunk_state *s, trc_rec *out, uint32_t n, const char **why, const bool split)
{
    const uint8_t *t = s->tag, *f = s->field, *a = s->addr_at;
    const uint8_t *tend = s->tag_end, *fend = s->field_end, *end = s->end;
    uint64_t time = s->time, addr = s->addr, pc = s->pc, v;
    trc_chunk_pred *pr = &s->pred;
    int rc = -1;
    for (uint32_t i = 0; i < n; i++) {
        trc_rec *r = &out[i];
        if (t >= tend) {
            *why = "record runs past the block";
            goto out;
        }
        uint8_t k = *t++;
        if (!split)
            f = t;
        uint8_t kind = k & 0x0f;
        if (kind >= WEFT_EV_KIND_COUNT) {
            *why = "unknown event kind";
            goto out;
        }
        r->thread = s->thread;
        r->kind = kind;
        trc_chunk_slot *x = &pr->slot[chunk_slot(pc)];
        if (k & CREC_P) {
            if (!x->meta || x->key != pc || (x->meta & 0xff) != kind || (k & (REC_S | REC_F))) {
                *why = "bad prediction";
                goto out;
            }
            if (time + x->dt < time) {
                *why = "bad time field";
                goto out;
            }
            time += x->dt;
            pc = x->pc;
            r->size = (uint8_t)(x->meta >> 8);
            r->flags = (uint16_t)(x->meta >> 16);
        } else {
            if (!(f = trc_get_varint(f, fend, &v)) || time + v < time) {
                *why = "bad time field";
                goto out;
            }
            uint64_t dt = v;
            time += v;
            r->size = 0;
            r->flags = 0;
            if (k & REC_S) {
                if (f >= fend || *f == 0 || *f > 64) {
                    *why = "bad size field";
                    goto out;
                }
                r->size = *f++;
            }
            if (k & REC_F) {
                if (!(f = trc_get_varint(f, fend, &v)) || v == 0 || v > UINT16_MAX) {
                    *why = "bad flags field";
                    goto out;
                }
                r->flags = (uint16_t)v;
            }
            if (!(f = trc_get_varint(f, fend, &v))) {
                *why = "bad pc field";
                goto out;
            }
            uint64_t prev = pc;
            pc += trc_unzigzag(v);
            x->key = prev;
            x->pc = pc;
            x->dt = dt;
            x->meta = CHUNK_META(kind, r->size, r->flags);
        }
        if (!split)
            a = f;
        r->time = time;
        r->pc = pc;
        trc_chunk_slot *y = &pr->slot[chunk_slot(pc)];
        bool known = y->avalid && y->akey == pc;
        uint64_t base = known ? y->addr + y->stride : addr;
        if (k & CREC_A) {
            addr = base;
        } else {
            if (!(a = trc_get_varint(a, end, &v))) {
                *why = "bad address field";
                goto out;
            }
            addr = base + trc_unzigzag(v);
        }
        if (!split)
            t = f = a;
        y->stride = known ? addr - y->addr : 0;
        y->akey = pc;
        y->addr = addr;
        y->avalid = 1;
        r->addr = addr;
    }
    rc = 0;
out:
    s->time = time;
    s->addr = addr;
    s->pc = pc;
    s->tag = t;
    s->field = f;
    s->addr_at = a;
    return rc;
}

int trc_chunk_decode(trc_chunk_state *s, trc_rec *out, uint32_t n, const char **why)
{
    return s->split ? chunk_decode(s, out, n, why, true) : chunk_decode(s, out, n, why, false);
}

/* The header's CRC field against the header's first 24 bytes and the
 * len payload bytes after it. */
static int chunk_crc_ok(const uint8_t *b, uint32_t len)
{
    return trc_crc32(trc_crc32(0, b, 24), b + CHUNK_HDR_SIZE, len) == get_u32(b + 24);
}

int trc_chunk_matches(const uint8_t *b, uint32_t thread, const trc_chunk *k)
{
    return trc_chunk_magic_ok(get_u32(b)) && get_u32(b + 4) == thread &&
           get_u32(b + 8) == k->count && get_u32(b + 12) == k->len &&
           get_u64(b + 16) == k->base_time && chunk_crc_ok(b, k->len);
}

size_t trc_chunk_check(const uint8_t *b, size_t avail, uint32_t thread, uint64_t prev, trc_chunk *c,
                       uint64_t *last)
{
    if (avail < CHUNK_HDR_SIZE)
        return 0;
    uint32_t count = get_u32(b + 8), len = get_u32(b + 12);
    if (!trc_chunk_magic_ok(get_u32(b)) || get_u32(b + 4) != thread || count == 0 ||
        count > BLOCK_MAX_EVENTS || len > PAYLOAD_MAX || len > avail - CHUNK_HDR_SIZE ||
        !chunk_crc_ok(b, len))
        return 0;
    *c = (trc_chunk){.count = count, .len = len, .base_time = get_u64(b + 16)};
    /* Decoded, so that the merge will not fail on it, and the thread's
     * stream monotonic as the writer guaranteed (within a chunk it is by
     * construction). */
    trc_chunk_state st;
    trc_rec recs[256];
    const char *why;
    if (trc_chunk_open(&st, b, thread, &why) < 0)
        return 0;
    for (uint32_t i = 0; i < count; i += 256) {
        uint32_t n = count - i < 256 ? count - i : 256;
        if (trc_chunk_decode(&st, recs, n, &why) < 0 || (i == 0 && recs[0].time < prev))
            return 0;
    }
    if (!trc_chunk_consumed(&st))
        return 0;
    *last = st.time;
    return CHUNK_HDR_SIZE + (size_t)len;
}

/* ---- checked I/O ---- */

int trc_write_all(int fd, const void *p, size_t n)
{
    return weft_write_all(fd, p, n) ? errno : 0;
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
    int fl = fcntl(fd, F_GETFL);
    bool direct = fl >= 0 && (fl & O_DIRECT);
    *o = (trc_out){.fd = fd, .cap = cap, .direct = direct};
    /* O_DIRECT wants the buffer, the length and the offset of each write
     * aligned to the device's blocks: whole pages always are. */
    void *buf;
    if (posix_memalign(&buf, OUT_DIRECT_ALIGN, cap) != 0) {
        o->err = ENOMEM;
        return -1;
    }
    o->buf = buf;
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

/* Leave O_DIRECT: for a last piece that is not whole blocks, or a file
 * system that accepted the flag at open and refuses the writes. */
static void out_buffered(trc_out *o)
{
    int fl = fcntl(o->fd, F_GETFL);
    if (fl >= 0)
        fcntl(o->fd, F_SETFL, fl & ~O_DIRECT);
    o->direct = false;
}

/* Direct output writes whole blocks only; the rest waits for more or for
 * trc_out_close. */
static void out_write_direct(trc_out *o)
{
    size_t whole = o->n & ~(size_t)(OUT_DIRECT_ALIGN - 1), done = 0;
    while (done < whole) {
        ssize_t r = write(o->fd, o->buf + done, whole - done);
        if (r > 0) {
            done += (size_t)r;
        } else if (r < 0 && errno == EINVAL) {
            /* The file system wants no O_DIRECT after all, or a short write
             * left the offset between blocks: the rest as it comes. */
            out_buffered(o);
            o->err = trc_write_all(o->fd, o->buf + done, o->n - done);
            o->n = 0;
            return;
        } else if (r == 0 || errno != EINTR) {
            o->err = r == 0 ? EIO : errno;
            return;
        }
    }
    memmove(o->buf, o->buf + whole, o->n - whole);
    o->n -= whole;
}

void trc_out_flush(trc_out *o)
{
    if (o->direct) {
        if (o->n && !o->err)
            out_write_direct(o);
        if (o->err)
            o->n = 0;
        if (o->direct)
            return;
    }
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

void trc_out_close(trc_out *o)
{
    trc_out_flush(o);
    if (o->n && !o->err) { /* direct output's last part block */
        out_buffered(o);
        trc_out_flush(o);
    }
}

uint8_t *trc_out_reserve(trc_out *o, size_t n)
{
    if (o->n + n > o->cap)
        trc_out_flush(o);
    if (o->n + n > o->cap) { /* direct output kept a part block: n is near cap */
        out_buffered(o);
        trc_out_flush(o);
    }
    return o->buf + o->n;
}

void trc_out_commit(trc_out *o, size_t n)
{
    o->n += n;
    o->off += n;
}

void trc_out_write(trc_out *o, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (o->direct && n > o->cap - o->n && !o->err) { /* whole blocks through the buffer */
        size_t part = o->cap - o->n;
        memcpy(o->buf + o->n, b, part);
        trc_out_commit(o, part);
        trc_out_flush(o);
        b += part;
        n -= part;
    }
    if (o->n + n > o->cap) {
        trc_out_flush(o);
        if (n > o->cap) {
            if (!o->err)
                o->err = trc_write_all(o->fd, b, n);
            o->off += n;
            return;
        }
    }
    if (!o->err)
        memcpy(o->buf + o->n, b, n);
    trc_out_commit(o, n);
}
