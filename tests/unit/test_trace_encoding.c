/* The trace writer's bytes against a plain encoding of the format, and its
 * CRC-32 against zlib's. Part of the test_trace executable. */
#include "test_trace_common.h"

#include <zlib.h>

#include "trace_internal.h" /* trc_crc32, SEG_*, FRAME_* */

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- the merge's bytes against a plain encoding of the format ----
 * docs/trace-format.md's blocks written the obvious way (sort, cut every
 * BLOCK_EVENTS, encode with per-block delta state, zlib's CRC-32), so the
 * writer's merge can be as clever as it likes but must produce exactly
 * these bytes. */

#define REF_BLOCK 4096

static uint64_t xs(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static uint8_t *ref_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint8_t *ref_zigzag(uint8_t *p, uint64_t d)
{
    return ref_varint(p, (d << 1) ^ (uint64_t)((int64_t)d >> 63));
}

static void ref_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Blocks of the sorted events ev[0..n), with seq = index in the thread. */
static uint8_t *ref_blocks(const weft_event *ev, size_t n, uint32_t nthreads, size_t *len)
{
    uint8_t *out = malloc(n * 40 + (n / REF_BLOCK + 1) * 24), *o = out;
    uint64_t *addr = calloc(nthreads, sizeof *addr), *pc = calloc(nthreads, sizeof *pc);
    assert_non_null(out);
    assert_non_null(addr);
    assert_non_null(pc);
    for (size_t b = 0; b < n; b += REF_BLOCK) {
        size_t cnt = n - b < REF_BLOCK ? n - b : REF_BLOCK;
        uint8_t *h = o, *p = h + 24;
        uint64_t time = ev[b].time;
        uint32_t thread = 0;
        memset(addr, 0, nthreads * sizeof *addr);
        memset(pc, 0, nthreads * sizeof *pc);
        for (size_t i = b; i < b + cnt; i++) {
            const weft_event *e = &ev[i];
            uint8_t *tag = p++;
            *tag = e->kind;
            if (e->thread != thread) {
                *tag |= 0x10;
                p = ref_varint(p, e->thread);
            }
            p = ref_varint(p, e->time - time);
            if (e->size) {
                *tag |= 0x40;
                *p++ = e->size;
            }
            if (e->flags) {
                *tag |= 0x20;
                p = ref_varint(p, e->flags);
            }
            p = ref_zigzag(p, e->addr - addr[e->thread]);
            p = ref_zigzag(p, e->pc - pc[e->thread]);
            time = e->time;
            thread = e->thread;
            addr[e->thread] = e->addr;
            pc[e->thread] = e->pc;
        }
        memcpy(h, "WBLK", 4);
        ref_u32(h + 4, (uint32_t)cnt);
        ref_u32(h + 8, (uint32_t)(p - (h + 24)));
        ref_u32(h + 12, (uint32_t)ev[b].time);
        ref_u32(h + 16, (uint32_t)(ev[b].time >> 32));
        uLong crc = crc32(crc32(0, h, 20), h + 24, (uInt)(p - (h + 24)));
        ref_u32(h + 20, (uint32_t)crc);
        o = p;
    }
    free(addr);
    free(pc);
    *len = (size_t)(o - out);
    return out;
}

/* Write the streams s[t][0..count[t]) to path in random batches. */
static void append_randomly(const char *path, weft_event **s, const size_t *count,
                            uint32_t nthreads, size_t total, uint64_t *x)
{
    char err[512];
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    size_t *pos = calloc(nthreads, sizeof *pos), left = total;
    while (left) {
        uint32_t t = (uint32_t)(xs(x) % nthreads);
        size_t n = xs(x) % 3 ? 1 + xs(x) % 300 : 1 + xs(x) % 9000;
        if (n > count[t] - pos[t])
            n = count[t] - pos[t];
        if (!n)
            continue;
        assert_int_equal(weft_trace_writer_append(w, t, s[t] + pos[t], n), 0);
        pos[t] += n;
        left -= n;
    }
    if (weft_trace_writer_finish(w, NULL, err, sizeof err) != 0)
        fail_msg("finish: %s", err);
    free(pos);
}

/* The trace at path holds exactly want[0..n), in that order. */
static void check_events_equal(const char *path, const weft_event *want, size_t n)
{
    char err[512];
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    assert_int_equal(weft_trace_get_meta(t)->version, WEFT_TRACE_VERSION);
    weft_event ev;
    for (size_t i = 0; i < n; i++) {
        if (weft_trace_next(t, &ev) != 1)
            fail_msg("event %zu of %zu: %s", i, n, weft_trace_error(t));
        if (memcmp(&ev, &want[i], sizeof ev) != 0)
            fail_msg("event %zu differs: time %llu thread %u kind %u addr %llx pc %llx", i,
                     (unsigned long long)ev.time, ev.thread, ev.kind, (unsigned long long)ev.addr,
                     (unsigned long long)ev.pc);
    }
    assert_int_equal(weft_trace_next(t, &ev), 0);
    weft_trace_close(t);
}

/* A version 3 footer counts each thread's events per kind, as appended;
 * version 1 has no such table. */
static void check_kinds(const char *path, weft_event *const *s, const size_t *count,
                        uint32_t nthreads, bool present)
{
    char err[512];
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    const weft_trace_summary *sum = weft_trace_get_summary(t);
    assert_int_equal(sum->has_kinds, present);
    for (uint32_t th = 0; th < nthreads; th++) {
        uint64_t want[WEFT_EV_KIND_COUNT] = {0};
        for (size_t i = 0; present && i < count[th]; i++)
            want[s[th][i].kind]++;
        for (int k = 0; k < WEFT_EV_KIND_COUNT; k++) /* trailing threads without events: none */
            assert_int_equal(th < sum->nthreads ? sum->threads[th].kinds[k] : 0, want[k]);
    }
    weft_trace_close(t);
}

/* nthreads ids, every `gap`-th without events (0: none), per_thread events
 * each on average, appended in random batches in a random thread order. */
static void check_against_reference(uint32_t nthreads, uint32_t gap, size_t per_thread,
                                    uint64_t seed)
{
    uint64_t x = seed;
    size_t *count = calloc(nthreads, sizeof *count), total = 0;
    weft_event **s = calloc(nthreads, sizeof *s);
    for (uint32_t t = 0; t < nthreads; t++) {
        count[t] = gap && t % gap == gap - 1 ? 0 : per_thread / 2 + xs(&x) % (per_thread + 1);
        s[t] = calloc(count[t] ? count[t] : 1, sizeof *s[t]);
        uint64_t time = xs(&x) % 1000, addr = 0x420000, pc = 0x400000;
        for (size_t i = 0; i < count[t]; i++) {
            uint64_t r = xs(&x);
            time += r % 4; /* ties within and across threads */
            /* small steps mostly, sometimes far or backwards jumps */
            addr += r >> 60 ? (r >> 8) % 64 * 8 : (r >> 8) * 0x9e3779b97f4a7c15ull;
            pc += r >> 61 ? 4 : (r >> 20) % 4096 - 2048;
            weft_event *e = &s[t][i];
            *e = tt_ev(time, (uint8_t)((r >> 4) % WEFT_EV_KIND_COUNT), addr, pc,
                       (uint8_t)((r >> 12) % 3 ? 1 + (r >> 14) % 64 : 0));
            e->flags = (uint16_t)((r >> 24) % 5 ? 0 : (r >> 32) & 0xffff);
        }
        total += count[t];
    }

    /* Version 1 (level 0) against the reference bytes; version 2 (the
     * default) must give back exactly the same events. */
    const char *path = tt_path("reference.wtr"), *path2 = tt_path("reference2.wtr");
    uint64_t x2 = x;
    setenv("WEFT_TRACE_ZSTD_LEVEL", "0", 1);
    append_randomly(path, s, count, nthreads, total, &x);
    unsetenv("WEFT_TRACE_ZSTD_LEVEL");
    append_randomly(path2, s, count, nthreads, total, &x2);

    weft_event *all = calloc(total ? total : 1, sizeof *all), *a = all;
    for (uint32_t t = 0; t < nthreads; t++)
        for (size_t i = 0; i < count[t]; i++, a++) {
            *a = s[t][i];
            a->thread = t;
            a->seq = i;
        }
    qsort(all, total, sizeof *all, tt_ev_order);
    check_events_equal(path2, all, total);
    check_kinds(path2, s, count, nthreads, true);
    check_kinds(path, s, count, nthreads, false);
    size_t want_len, len;
    uint8_t *want = ref_blocks(all, total, nthreads, &want_len);
    uint8_t *got = tt_slurp(path, &len);
    assert_true(len > 16 + 4);
    uint32_t header_len = (uint32_t)got[12] | (uint32_t)got[13] << 8 | (uint32_t)got[14] << 16 |
                          (uint32_t)got[15] << 24;
    uint64_t footer_off = 0;
    for (int i = 7; i >= 0; i--)
        footer_off = footer_off << 8 | got[len - 16 + (size_t)i];
    assert_int_equal(footer_off - header_len, want_len);
    if (memcmp(got + header_len, want, want_len) != 0) {
        size_t i = 0;
        while (got[header_len + i] == want[i])
            i++;
        fail_msg("%u threads, seed %llu: event bytes differ at offset %zu of %zu", nthreads,
                 (unsigned long long)seed, i, want_len);
    }
    free(got);
    free(want);
    free(all);
    for (uint32_t t = 0; t < nthreads; t++)
        free(s[t]);
    free(s);
    free(count);
}

static void test_reference_encoding(void **state)
{
    (void)state;
    check_against_reference(1, 0, 30000, 1);  /* one stream, several blocks */
    check_against_reference(3, 0, 20000, 2);  /* a few, many ties */
    check_against_reference(41, 7, 3000, 3);  /* ids without events in between */
    check_against_reference(300, 0, 40, 4);   /* many threads, short streams */
    check_against_reference(9, 3, 1, 5);      /* a handful of events */
    check_against_reference(2, 0, 150000, 6); /* long enough to wrap any buffering */
}

/* A chunk's three streams decode back to its events, and a fields length
 * that does not fit the payload is refused even with a good checksum. */
static void test_chunk_streams(void **state)
{
    (void)state;
    enum { N = 3000 };
    weft_event *ev = calloc(N, sizeof *ev);
    uint8_t *buf = malloc(CHUNK_HDR_SIZE + (size_t)N * REC_MAX);
    assert_non_null(ev);
    assert_non_null(buf);
    uint64_t x = 99, time = 1000;
    for (size_t i = 0; i < N; i++) {
        time += xs(&x) % 4;
        /* a loop's strided accesses, then the odd one out */
        uint64_t addr = i % 7 ? 0x4a0000 + i * 8 : xs(&x) & 0xffffffffff;
        ev[i] = tt_ev(time, (uint8_t)(xs(&x) % 3), addr, 0x400000 + (i % 5) * 4, 8);
    }
    size_t len = trc_chunk_build(buf, 2, ev, N);
    trc_chunk c;
    uint64_t last = 0;
    assert_int_equal(trc_chunk_check(buf, len, 2, 0, &c, &last), len);
    assert_int_equal(last, time);
    trc_chunk_state *st = aligned_alloc(_Alignof(trc_chunk_state), sizeof *st);
    trc_rec *rec = malloc(N * sizeof *rec);
    const char *why = NULL;
    assert_int_equal(trc_chunk_open(st, buf, 2, &why), 0);
    assert_int_equal(trc_chunk_decode(st, rec, 1000, &why), 0);
    assert_false(trc_chunk_consumed(st));
    assert_int_equal(trc_chunk_decode(st, rec + 1000, N - 1000, &why), 0);
    assert_true(trc_chunk_consumed(st));
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(rec[i].time, ev[i].time);
        assert_int_equal(rec[i].addr, ev[i].addr);
        assert_int_equal(rec[i].pc, ev[i].pc);
        assert_int_equal(rec[i].kind, ev[i].kind);
        assert_int_equal(rec[i].size, ev[i].size);
        assert_int_equal(rec[i].thread, 2);
    }
    /* The fields' length one past the payload, checksum made good. */
    uint8_t *p = buf + CHUNK_HDR_SIZE;
    uint32_t plen = (uint32_t)(len - CHUNK_HDR_SIZE);
    uint32_t f = (uint32_t)(plen - 4 - N + 1);
    memcpy(p, &f, 4);
    uint32_t crc = trc_crc32(trc_crc32(0, buf, 24), p, plen);
    memcpy(buf + 24, &crc, 4);
    assert_int_equal(trc_chunk_check(buf, len, 2, 0, &c, &last), 0);
    assert_int_equal(trc_chunk_open(st, buf, 2, &why), -1);
    assert_string_equal(why, "chunk streams past the chunk");
    free(st);
    free(rec);
    free(buf);
    free(ev);
}

/* The checksums are zlib's CRC-32, whatever way the library computes them. */
static void test_crc32_matches_zlib(void **state)
{
    (void)state;
    enum { N = 4096 };
    uint8_t *b = malloc(N + 64);
    assert_non_null(b);
    uint64_t x = 12345;
    for (size_t i = 0; i < N + 64; i++)
        b[i] = (uint8_t)xs(&x);
    for (size_t len = 0; len <= N; len += len < 300 ? 1 : 1 + len / 7) {
        for (size_t off = 0; off < 16; off += len < 300 ? 5 : 1) {
            uint32_t init = (uint32_t)xs(&x);
            assert_int_equal(trc_crc32(0, b + off, len), (uint32_t)crc32(0, b + off, (uInt)len));
            assert_int_equal(trc_crc32(init, b + off, len),
                             (uint32_t)crc32(init, b + off, (uInt)len));
        }
    }
    free(b);
}

/* ---- large stream with bounded memory ---- */

static void print_size_and_memory(const char *path, uint64_t n);

/* Version 4 (frames_wanted false) or 3. */
static void large_stream(bool frames_wanted)
{
    const uint32_t nthreads = 4;
    const size_t per = 1000000, batch = 4096;
    const char *path = tt_path("large.wtr");
    char err[512];
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    weft_event *buf = calloc(batch, sizeof *buf);
    uint64_t time[4] = {0, 1, 2, 3};
    for (size_t done = 0; done < per; done += batch) {
        size_t n = per - done < batch ? per - done : batch;
        for (uint32_t t = 0; t < nthreads; t++) {
            for (size_t i = 0; i < n; i++) {
                time[t] += 1 + (i & 1);
                buf[i] = tt_ev(time[t], (uint8_t)(i % 3), 0x420000 + (i % 32) * 8,
                               0x400000 + (i % 16) * 4, 8);
            }
            assert_int_equal(weft_trace_writer_append(w, t, buf, n), 0);
        }
    }
    free(buf);
    if (frames_wanted)
        setenv("WEFT_TRACE_FRAMES", "1", 1);
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), 0);
    unsetenv("WEFT_TRACE_FRAMES");

    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_event_count(t), nthreads * per);
    assert_int_equal(weft_trace_get_meta(t)->version, frames_wanted ? 3 : WEFT_TRACE_VERSION);
    weft_event ev;
    uint64_t n = 0, last = 0;
    while (weft_trace_next(t, &ev) == 1) {
        assert_true(ev.time >= last);
        last = ev.time;
        n++;
    }
    assert_int_equal(n, nthreads * per);
    assert_int_equal(weft_trace_get_summary(t)->threads[3].events, per);
    weft_trace_close(t);

    size_t flen;
    uint8_t *file = tt_slurp(path, &flen);
    uint64_t foot = tt_get(file + flen - 16, 8), off = tt_get(file + 12, 4);
    if (!frames_wanted) {
        /* Segments: canonical order, each thread's whole, within the size
         * the writer aims at (its chunks hold the 4096 events of an append). */
        uint64_t segs = 0, prev = 0, events[4] = {0};
        while (off < foot) {
            const uint8_t *h = file + off;
            uint32_t th = (uint32_t)tt_get(h + 4, 4), raw = (uint32_t)tt_get(h + 16, 4);
            uint64_t first = tt_get(h + 24, 8);
            assert_int_equal(tt_get(h, 4), SEG_MAGIC);
            assert_true(th < nthreads);
            assert_true(raw <= SEG_RAW_TARGET);
            assert_true(first >= prev);
            prev = first;
            events[th] += tt_get(h + 12, 4);
            off += SEG_HDR_SIZE + tt_get(h + 20, 4);
            segs++;
        }
        free(file);
        assert_int_equal(off, foot);
        for (uint32_t th = 0; th < nthreads; th++)
            assert_int_equal(events[th], per);
        assert_true(segs >= nthreads * 2);
        print_size_and_memory(path, n);
        return;
    }

    /* Every frame but the last holds exactly FRAME_EVENTS records: with the
     * reader's check that no record comes before one of an earlier frame,
     * each frame is exactly the next FRAME_EVENTS in canonical order, ties
     * in time across threads (the streams above start one apart and step
     * by 1 or 2) split at frame ends as (time, thread) order has it. */
    uint64_t frames = 0, last_count = 0;
    while (off < foot) {
        uint32_t count = 0, comp = 0;
        for (int i = 0; i < 4; i++) {
            count |= (uint32_t)file[off + 4 + i] << (8 * i);
            comp |= (uint32_t)file[off + 12 + i] << (8 * i);
        }
        if (frames)
            assert_int_equal(last_count, FRAME_EVENTS);
        last_count = count;
        frames++;
        off += FRAME_HDR_SIZE + comp;
    }
    free(file);
    assert_int_equal(off, foot);
    assert_int_equal(frames, (nthreads * per + FRAME_EVENTS - 1) / FRAME_EVENTS);
    print_size_and_memory(path, n);
}

static void test_large_stream(void **state)
{
    (void)state;
    large_stream(false);
}

static void test_large_stream_frames(void **state)
{
    (void)state;
    large_stream(true);
}

static void print_size_and_memory(const char *path, uint64_t n)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    printf("# %llu events in %lld bytes (%.2f bytes/event)\n", (unsigned long long)n,
           (long long)st.st_size, (double)st.st_size / (double)n);
    assert_true((double)st.st_size / (double)n < 12.0);
#if !defined(__SANITIZE_ADDRESS__)
    /* 4e6 decoded events are 160 MB; streaming must stay far below that
     * (the writer holds a few frames of 2^18 records: 8 MB each). */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("# peak RSS %ld kB\n", ru.ru_maxrss);
    assert_true(ru.ru_maxrss < 96 * 1024);
#endif
}

/* ---- the output buffer, direct and through the page cache ----
 * A trace that must reach the disk is written with O_DIRECT (whole blocks,
 * the last part block buffered at close): pieces of every size, written
 * and reserved in place, past the buffer's size too, must come out as the
 * same bytes either way. at: where the output starts in the file; past a
 * block's start, O_DIRECT's writes fail and the rest goes buffered. */
static void out_pieces(bool direct, off_t at)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/out-%s-%lld", tt_scratch(), direct ? "direct" : "buffered",
             (long long)at);
    int fd = direct ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644) : -1;
    if (direct && fd < 0) { /* this file system has no O_DIRECT: the fallback is the other case */
        printf("# %s: no O_DIRECT (%s)\n", path, strerror(errno));
        return;
    }
    if (fd < 0)
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(lseek(fd, at, SEEK_SET), at);
    enum { CAP = 1 << 16, TOTAL = 3 << 20 };
    uint8_t *want = malloc(TOTAL + (CAP << 2));
    assert_non_null(want);
    trc_out o;
    assert_int_equal(trc_out_init(&o, fd, CAP), 0);
    assert_int_equal(o.direct, direct);
    uint64_t x = 88172645463325252ull;
    size_t len = 0;
    for (int i = 0; len < TOTAL; i++) {
        /* mostly small, now and then one past the buffer's size */
        size_t n = i % 97 == 0 ? CAP + 1 + xs(&x) % (2 * CAP) : xs(&x) % 5000;
        for (size_t j = 0; j < n; j++)
            want[len + j] = (uint8_t)xs(&x);
        if (i % 3 == 0 && n <= CAP) {
            memcpy(trc_out_reserve(&o, n), want + len, n);
            trc_out_commit(&o, n);
        } else {
            trc_out_write(&o, want + len, n);
        }
        if (i % 11 == 0)
            trc_out_flush(&o);
        len += n;
    }
    trc_out_close(&o);
    assert_int_equal(o.err, 0);
    assert_int_equal(o.off, len);
    assert_false(o.direct); /* closed: the last part block went buffered */
    assert_int_equal(close(fd), 0);
    trc_out_free(&o);
    int rd = open(path, O_RDONLY);
    assert_true(rd >= 0);
    uint8_t *got = malloc(len + 1);
    assert_non_null(got);
    assert_int_equal(trc_pread_all(rd, got, len + 1, at), (ssize_t)len);
    close(rd);
    assert_memory_equal(got, want, len);
    free(got);
    free(want);
}

/* A reservation of the whole buffer behind a part block direct output
 * must keep: the rest goes through the page cache, the same bytes. */
static void out_reserve_all(void)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/out-reserve", tt_scratch());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (fd < 0)
        return; /* no O_DIRECT here: nothing to keep */
    enum { CAP = 1 << 16 };
    static uint8_t want[100 + CAP];
    for (size_t i = 0; i < sizeof want; i++)
        want[i] = (uint8_t)(i * 7 + 3);
    trc_out o;
    assert_int_equal(trc_out_init(&o, fd, CAP), 0);
    trc_out_write(&o, want, 100);
    trc_out_flush(&o); /* nothing whole to write: the 100 bytes stay */
    memcpy(trc_out_reserve(&o, CAP), want + 100, CAP);
    trc_out_commit(&o, CAP);
    trc_out_close(&o);
    assert_int_equal(o.err, 0);
    assert_int_equal(close(fd), 0);
    trc_out_free(&o);
    size_t len;
    uint8_t *got = tt_slurp(path, &len);
    assert_int_equal(len, sizeof want);
    assert_memory_equal(got, want, sizeof want);
    free(got);
}

static void test_out_direct(void **state)
{
    (void)state;
    out_pieces(true, 0);
    out_pieces(true, 1); /* the first write refused: the page cache from there on */
    out_reserve_all();
}

static void test_out_buffered(void **state)
{
    (void)state;
    out_pieces(false, 0);
}

const struct CMUnitTest encoding_tests[] = {
    cmocka_unit_test(test_large_stream),       cmocka_unit_test(test_large_stream_frames),
    cmocka_unit_test(test_reference_encoding), cmocka_unit_test(test_chunk_streams),
    cmocka_unit_test(test_crc32_matches_zlib), cmocka_unit_test(test_out_direct),
    cmocka_unit_test(test_out_buffered),
};
const size_t encoding_ntests = sizeof encoding_tests / sizeof encoding_tests[0];
