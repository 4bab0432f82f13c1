/* Trace writer and reader: round trip of every field, canonical order,
 * byte-identical output whatever the interleaving of appends, bounded
 * memory on a large stream, writer errors. Corruption and salvage tests are
 * in test_trace_corrupt.c. */
#include "test_trace_common.h"

#include <pthread.h>
#include <sys/resource.h>
#include <zlib.h>

#include "trace_internal.h" /* trc_crc32 */

/* Defined in test_trace_corrupt.c. */
extern const struct CMUnitTest corrupt_tests[];
extern const size_t corrupt_ntests;

/* ---- round trip ---- */

static int ev_order(const void *a, const void *b)
{
    const weft_event *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq; /* seq = index in stream here */
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *path = tt_path("roundtrip.wtr");
    weft_event t0[] = {
        tt_ev(0, WEFT_EV_THREAD_START, 1000, 0, 0),
        tt_ev(5, WEFT_EV_WRITE, 0x1000, 0x400100, 8),
        tt_ev(7, WEFT_EV_RMW, 0xffffffffffff0000ull, 0x400104, 16),
        tt_ev(9, WEFT_EV_SYSCALL, 220, 0x400108, 0),
        tt_ev(20, WEFT_EV_FUTEX_WAIT, 0x2000, 0x40010c, 0),
        tt_ev(21, WEFT_EV_DELAY, 500, 0, 0),
        tt_ev(30, WEFT_EV_THREAD_EXIT, 0, 0x400110, 0),
    };
    t0[2].flags = WEFT_EVF_ATOMIC | WEFT_EVF_EXCLUSIVE;
    weft_event t1[] = {
        tt_ev(9, WEFT_EV_THREAD_START, 1001, 0, 0),
        tt_ev(9, WEFT_EV_READ, 0x1000, 0x400200, 4),
        tt_ev(12, WEFT_EV_WRITE, 0, 0, 1),
        tt_ev(20, WEFT_EV_FUTEX_WAKE, 0x2000, 0x400204, 0),
        tt_ev(25, WEFT_EV_READ, 0x7ffff000, 0xffffffffffffff00ull, 64),
        tt_ev(40, WEFT_EV_THREAD_EXIT, (uint64_t)-3, 0x400208, 0),
    };
    t1[4].flags = WEFT_EVF_STACK;
    weft_trace_thread th[2] = {
        {.id = 0,
         .parent = UINT32_MAX,
         .tid = 1000,
         .start_time = 0,
         .end_time = 30,
         .events = 999,
         .insns = 30,
         .exited = 1,
         .exit_code = 0},
        {.id = 1,
         .parent = 0,
         .tid = 1001,
         .start_time = 9,
         .end_time = 40,
         .events = 0,
         .insns = 31,
         .exited = 1,
         .exit_code = -3},
    };
    weft_trace_summary sum = {.flags = WEFT_TRACE_CRASHED,
                              .exit_status = -11,
                              .stall_escapes = 3,
                              .makespan = 40,
                              .nthreads = 2,
                              .threads = th};
    weft_event *streams[] = {t0, t1};
    size_t counts[] = {7, 6};
    tt_write(path, 2, streams, counts, &sum);

    char err[512] = "";
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    const weft_trace_meta *m = weft_trace_get_meta(t);
    weft_trace_meta want = tt_meta();
    assert_int_equal(m->settings.mode, want.settings.mode);
    assert_int_equal(m->settings.cpi, want.settings.cpi);
    assert_int_equal(m->settings.ps_per_cycle, want.settings.ps_per_cycle);
    assert_int_equal(m->settings.quantum, want.settings.quantum);
    assert_int_equal(m->settings.filter, want.settings.filter);
    assert_int_equal(m->settings.nranges, 2);
    for (int i = 0; i < 2; i++) {
        assert_true(m->settings.range_lo[i] == want.settings.range_lo[i]);
        assert_true(m->settings.range_hi[i] == want.settings.range_hi[i]);
    }
    assert_string_equal(m->settings.policy, "pct");
    assert_true(m->settings.seed == want.settings.seed);
    assert_string_equal(m->binary_path, want.binary_path);
    assert_int_equal(m->build_id_len, 20);
    assert_memory_equal(m->build_id, want.build_id, 20);
    assert_int_equal(m->argc, 3);
    for (int i = 0; i < 3; i++)
        assert_string_equal(m->argv[i], want.argv[i]);

    const weft_trace_summary *s = weft_trace_get_summary(t);
    assert_int_equal(s->flags, WEFT_TRACE_CRASHED | WEFT_TRACE_COMPLETE);
    assert_int_equal(s->exit_status, -11);
    assert_int_equal(s->stall_escapes, 3);
    assert_int_equal(s->makespan, 40);
    assert_int_equal(s->nthreads, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(s->threads[i].id, i);
        assert_int_equal(s->threads[i].parent, th[i].parent);
        assert_int_equal(s->threads[i].tid, th[i].tid);
        assert_int_equal(s->threads[i].start_time, th[i].start_time);
        assert_int_equal(s->threads[i].end_time, th[i].end_time);
        assert_int_equal(s->threads[i].insns, th[i].insns);
        assert_int_equal(s->threads[i].exited, 1);
        assert_int_equal(s->threads[i].exit_code, th[i].exit_code);
        assert_int_equal(s->threads[i].events, counts[i]); /* counted, not trusted */
    }
    assert_int_equal(weft_trace_event_count(t), 13);

    /* Expected canonical order: sort by (time, thread, index in stream). */
    weft_event want_ev[13];
    size_t k = 0;
    for (uint32_t th_i = 0; th_i < 2; th_i++)
        for (size_t i = 0; i < counts[th_i]; i++) {
            want_ev[k] = streams[th_i][i];
            want_ev[k].thread = th_i;
            want_ev[k++].seq = i;
        }
    qsort(want_ev, 13, sizeof *want_ev, ev_order);
    for (int pass = 0; pass < 2; pass++) { /* second pass after rewind */
        weft_event ev;
        for (size_t i = 0; i < 13; i++) {
            assert_int_equal(weft_trace_next(t, &ev), 1);
            assert_true(ev.time == want_ev[i].time);
            assert_int_equal(ev.thread, want_ev[i].thread);
            assert_true(ev.seq == want_ev[i].seq);
            assert_int_equal(ev.kind, want_ev[i].kind);
            assert_true(ev.addr == want_ev[i].addr);
            assert_true(ev.pc == want_ev[i].pc);
            assert_int_equal(ev.size, want_ev[i].size);
            assert_int_equal(ev.flags, want_ev[i].flags);
        }
        assert_int_equal(weft_trace_next(t, &ev), 0);
        assert_int_equal(weft_trace_next(t, &ev), 0);
        weft_trace_rewind(t);
    }
    assert_string_equal(weft_trace_path(t), path);
    weft_trace_close(t);
    /* The spool is gone and no temporary is left behind. */
    assert_int_not_equal(access(tt_path("roundtrip.wtr.spool"), F_OK), 0);
}

/* ---- canonical order and byte identity ---- */

#define NT 3
#define PER_THREAD 20000

static weft_event *gen_stream(uint32_t thread, size_t n)
{
    weft_event *v = calloc(n, sizeof *v);
    uint64_t x = 0x9e3779b97f4a7c15ull * (thread + 1), time = thread;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        time += x % 3; /* many ties within and across threads */
        uint8_t kind = (uint8_t)(x >> 8) % 3;
        v[i] = tt_ev(time, kind, 0x410000 + ((x >> 16) % 16) * 8, 0x400000 + (x >> 24) % 64 * 4, 8);
    }
    return v;
}

static const char *write_variant(const char *name, weft_event **s, int variant)
{
    const char *path = tt_path(name);
    char err[512];
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    if (variant == 0) { /* thread after thread */
        for (uint32_t t = 0; t < NT; t++)
            for (size_t i = 0; i < PER_THREAD; i += 1000)
                assert_int_equal(weft_trace_writer_append(w, t, s[t] + i, 1000), 0);
    } else { /* round robin, uneven batches, last thread first */
        static const size_t sizes[] = {1, 7, 333, 4096, 5000};
        size_t pos[NT] = {0}, k = 0;
        for (int left = NT; left;) {
            left = 0;
            for (int t = NT - 1; t >= 0; t--) {
                size_t n = sizes[k++ % 5];
                if (pos[t] + n > PER_THREAD)
                    n = PER_THREAD - pos[t];
                if (n)
                    assert_int_equal(weft_trace_writer_append(w, (uint32_t)t, s[t] + pos[t], n), 0);
                pos[t] += n;
                left += pos[t] < PER_THREAD;
            }
        }
    }
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), 0);
    return path;
}

typedef struct conc_arg {
    weft_trace_writer *w;
    uint32_t thread;
    weft_event *s;
} conc_arg;

static void *conc_append(void *p)
{
    conc_arg *a = p;
    for (size_t i = 0; i < PER_THREAD; i += 97) {
        size_t n = PER_THREAD - i < 97 ? PER_THREAD - i : 97;
        if (weft_trace_writer_append(a->w, a->thread, a->s + i, n) != 0)
            return (void *)1;
    }
    return NULL;
}

static void test_byte_identical_interleavings(void **state)
{
    (void)state;
    weft_event *s[NT];
    for (uint32_t t = 0; t < NT; t++)
        s[t] = gen_stream(t, PER_THREAD);
    const char *a = write_variant("order-a.wtr", s, 0);
    const char *b = write_variant("order-b.wtr", s, 1);

    /* Concurrent appends from real threads. */
    const char *c = tt_path("order-c.wtr");
    char err[512];
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(c, &m, err, sizeof err);
    assert_non_null(w);
    pthread_t th[NT];
    conc_arg args[NT];
    for (uint32_t t = 0; t < NT; t++) {
        args[t] = (conc_arg){w, t, s[t]};
        assert_int_equal(pthread_create(&th[t], NULL, conc_append, &args[t]), 0);
    }
    for (uint32_t t = 0; t < NT; t++) {
        void *r;
        pthread_join(th[t], &r);
        assert_null(r);
    }
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), 0);

    size_t la, lb, lc;
    uint8_t *ba = tt_slurp(a, &la), *bb = tt_slurp(b, &lb), *bc = tt_slurp(c, &lc);
    assert_int_equal(la, lb);
    assert_int_equal(la, lc);
    assert_memory_equal(ba, bb, la);
    assert_memory_equal(ba, bc, la);
    free(ba);
    free(bb);
    free(bc);

    /* The order is canonical and seq numbers each thread's stream. */
    weft_trace *t = weft_trace_open(a, err, sizeof err);
    assert_non_null(t);
    weft_event ev, prev = {0};
    uint64_t n = 0, seq[NT] = {0};
    while (weft_trace_next(t, &ev) == 1) {
        if (n) {
            assert_true(ev.time > prev.time || (ev.time == prev.time && ev.thread >= prev.thread));
        }
        assert_true(ev.seq == seq[ev.thread]);
        const weft_event *src = &s[ev.thread][seq[ev.thread]++];
        assert_true(ev.time == src->time && ev.addr == src->addr && ev.pc == src->pc);
        prev = ev;
        n++;
    }
    assert_int_equal(n, NT * PER_THREAD);
    weft_trace_close(t);
    for (uint32_t i = 0; i < NT; i++)
        free(s[i]);
}

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

    const char *path = tt_path("reference.wtr");
    char err[512];
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    size_t *pos = calloc(nthreads, sizeof *pos), left = total;
    while (left) {
        uint32_t t = (uint32_t)(xs(&x) % nthreads);
        size_t n = xs(&x) % 3 ? 1 + xs(&x) % 300 : 1 + xs(&x) % 9000;
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

    weft_event *all = calloc(total ? total : 1, sizeof *all), *a = all;
    for (uint32_t t = 0; t < nthreads; t++)
        for (size_t i = 0; i < count[t]; i++, a++) {
            *a = s[t][i];
            a->thread = t;
            a->seq = i;
        }
    qsort(all, total, sizeof *all, ev_order);
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
    free(pos);
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

static void test_large_stream(void **state)
{
    (void)state;
    const uint32_t nthreads = 4;
    const size_t per = 500000, batch = 4096;
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
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), 0);

    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_event_count(t), nthreads * per);
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

    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    printf("# %llu events in %lld bytes (%.2f bytes/event)\n", (unsigned long long)n,
           (long long)st.st_size, (double)st.st_size / (double)n);
    assert_true((double)st.st_size / (double)n < 12.0);
#if !defined(__SANITIZE_ADDRESS__)
    /* 2e6 decoded events are 80 MB; streaming must stay far below that. */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("# peak RSS %ld kB\n", ru.ru_maxrss);
    assert_true(ru.ru_maxrss < 48 * 1024);
#endif
}

/* ---- writer: rebuilt tables and errors ---- */

static void test_empty_and_rebuilt_table(void **state)
{
    (void)state;
    char err[512];
    const char *empty = tt_path("empty.wtr");
    tt_write(empty, 0, NULL, NULL, NULL);
    weft_trace *t = weft_trace_open(empty, err, sizeof err);
    assert_non_null(t);
    weft_event ev;
    assert_int_equal(weft_trace_event_count(t), 0);
    assert_int_equal(weft_trace_get_summary(t)->nthreads, 0);
    assert_int_equal(weft_trace_get_summary(t)->flags, WEFT_TRACE_COMPLETE);
    assert_int_equal(weft_trace_next(t, &ev), 0);
    weft_trace_close(t);

    /* A summary that knows fewer threads than the events: the table is
     * extended from the events. */
    weft_event t0[] = {tt_ev(0, WEFT_EV_THREAD_START, 500, 0, 0),
                       tt_ev(3, WEFT_EV_WRITE, 0x10, 0x4, 4)};
    weft_event t1[] = {tt_ev(10, WEFT_EV_THREAD_START, 0, 0, 0), /* created by T0 */
                       tt_ev(15, WEFT_EV_READ, 0x10, 0x8, 4),
                       tt_ev(20, WEFT_EV_THREAD_EXIT, 7, 0, 0)};
    weft_event *streams[] = {t0, t1};
    size_t counts[] = {2, 3};
    weft_trace_thread main_th = {.parent = UINT32_MAX, .tid = 500, .end_time = 25, .insns = 9};
    weft_trace_summary sum = {.exit_status = 0, .makespan = 25, .nthreads = 1, .threads = &main_th};
    const char *p = tt_path("extended.wtr");
    tt_write(p, 2, streams, counts, &sum);
    t = weft_trace_open(p, err, sizeof err);
    assert_non_null(t);
    const weft_trace_summary *s = weft_trace_get_summary(t);
    assert_int_equal(s->nthreads, 2);
    assert_int_equal(s->threads[0].insns, 9);
    assert_int_equal(s->threads[0].events, 2);
    assert_int_equal(s->threads[1].parent, 0); /* from its THREAD_START */
    assert_int_equal(s->threads[1].tid, 0);
    assert_int_equal(s->threads[1].start_time, 10);
    assert_int_equal(s->threads[1].end_time, 20);
    assert_int_equal(s->threads[1].exited, 1);
    assert_int_equal(s->threads[1].exit_code, 7);
    assert_int_equal(s->threads[1].events, 3);
    assert_int_equal(s->makespan, 25);
    weft_trace_close(t);
}

static void test_writer_errors(void **state)
{
    (void)state;
    char err[512] = "";
    weft_trace_meta m = tt_meta();
    assert_null(weft_trace_writer_open("/nonexistent-weft-dir/run.wtr", &m, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent-weft-dir/run.wtr.spool"));
    assert_non_null(strstr(err, "No such file or directory"));
    assert_null(strchr(err, '\n'));

    /* A thread whose time goes backwards poisons the writer. */
    const char *path = tt_path("backwards.wtr");
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    weft_event a = tt_ev(10, WEFT_EV_READ, 0x10, 0, 4), b = tt_ev(5, WEFT_EV_READ, 0x10, 0, 4);
    assert_int_equal(weft_trace_writer_append(w, 0, &a, 1), 0);
    assert_int_equal(weft_trace_writer_append(w, 0, &b, 1), -1);
    assert_int_equal(weft_trace_writer_append(w, 1, &a, 1), -1); /* sticky */
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "thread 0: event time 5 is before the previous event (10)"));
    assert_int_not_equal(access(path, F_OK), 0);

    w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(weft_trace_writer_append(w, WEFT_TRACE_MAX_THREADS, &a, 1), -1);
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "exceeds the limit"));

    w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    weft_event bad = tt_ev(1, WEFT_EV_KIND_COUNT, 0, 0, 0);
    assert_int_equal(weft_trace_writer_append(w, 0, &bad, 1), -1);
    weft_trace_writer_abort(w);
    assert_int_not_equal(access(tt_path("backwards.wtr.spool"), F_OK), 0);

    /* Disk full, on the spool and on the final file (/dev/full behind a
     * symlink at the path the writer will use). */
    char full[700], link[760];
    snprintf(full, sizeof full, "%s", tt_path("full.wtr"));
    snprintf(link, sizeof link, "%s.spool", full);
    assert_int_equal(symlink("/dev/full", link), 0);
    assert_null(weft_trace_writer_open(full, &m, err, sizeof err));
    assert_non_null(strstr(err, link));
    assert_non_null(strstr(err, "No space left on device"));
    w = weft_trace_writer_open(full, &m, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(weft_trace_writer_append(w, 0, &a, 1), 0);
    snprintf(link, sizeof link, "%s.tmp.%ld", full, (long)getpid());
    assert_int_equal(symlink("/dev/full", link), 0);
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, full));
    assert_non_null(strstr(err, "No space left on device"));
    assert_null(strchr(err, '\n'));
    assert_int_not_equal(access(full, F_OK), 0);
    /* The spool survives a failed finish, so the run can still be salvaged. */
    assert_int_equal(weft_trace_salvage(full, 0, 0, err, sizeof err), 0);

    /* Finishing into a directory that became read-only reports the path. */
    char sub[600];
    snprintf(sub, sizeof sub, "%s", tt_path("gone"));
    assert_int_equal(mkdir(sub, 0755), 0);
    char tpath[700];
    snprintf(tpath, sizeof tpath, "%s/run.wtr", sub);
    w = weft_trace_writer_open(tpath, &m, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(weft_trace_writer_append(w, 0, &a, 1), 0);
    char spool[720];
    snprintf(spool, sizeof spool, "%s.spool", tpath);
    assert_int_equal(chmod(sub, 0555), 0);
    if (access(sub, W_OK) != 0) { /* not root: the directory is really read-only */
        assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), -1);
        assert_non_null(strstr(err, tpath));
        assert_non_null(strstr(err, "Permission denied"));
    } else {
        weft_trace_writer_abort(w);
    }
    chmod(sub, 0755);
}

static void test_set_outcome(void **state)
{
    (void)state;
    weft_event t0[] = {tt_ev(0, WEFT_EV_THREAD_START, UINT32_MAX, 0, 0),
                       tt_ev(4, WEFT_EV_READ, 8, 4, 8)};
    weft_event *streams[] = {t0};
    size_t counts[] = {2};
    const char *p = tt_path("outcome.wtr");
    tt_write(p, 1, streams, counts, NULL);
    char err[512];
    assert_int_equal(weft_trace_set_outcome(p, WEFT_TRACE_CRASHED, -11, err, sizeof err), 0);
    weft_trace *t = weft_trace_open(p, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    const weft_trace_summary *s = weft_trace_get_summary(t);
    assert_int_equal(s->flags, WEFT_TRACE_COMPLETE | WEFT_TRACE_CRASHED);
    assert_int_equal(s->exit_status, -11);
    assert_int_equal(s->threads[0].parent, UINT32_MAX); /* main: no creator */
    weft_event ev;
    assert_int_equal(weft_trace_next(t, &ev), 1);
    assert_int_equal(weft_trace_next(t, &ev), 1);
    assert_int_equal(weft_trace_next(t, &ev), 0);
    weft_trace_close(t);
    const char *missing = tt_path("no-outcome.wtr");
    assert_int_equal(weft_trace_set_outcome(missing, 0, 0, err, sizeof err), -1);
    assert_int_equal(strncmp(err, missing, strlen(missing)), 0);
}

static void test_kind_helpers(void **state)
{
    (void)state;
    assert_string_equal(weft_event_kind_name(WEFT_EV_READ), "read");
    assert_string_equal(weft_event_kind_name(WEFT_EV_RMW), "rmw");
    assert_string_equal(weft_event_kind_name(WEFT_EV_DELAY), "delay");
    assert_string_equal(weft_event_kind_name(200), "unknown");
    for (uint8_t k = 0; k < WEFT_EV_KIND_COUNT; k++) {
        assert_int_equal(weft_event_is_access(k), k <= WEFT_EV_RMW);
        assert_int_equal(weft_event_writes(k), k == WEFT_EV_WRITE || k == WEFT_EV_RMW);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_byte_identical_interleavings),
        cmocka_unit_test(test_large_stream),
        cmocka_unit_test(test_empty_and_rebuilt_table),
        cmocka_unit_test(test_writer_errors),
        cmocka_unit_test(test_set_outcome),
        cmocka_unit_test(test_kind_helpers),
        cmocka_unit_test(test_reference_encoding),
        cmocka_unit_test(test_crc32_matches_zlib),
    };
    int failed = cmocka_run_group_tests_name("trace", tests, NULL, NULL);
    failed += _cmocka_run_group_tests("trace_corrupt", corrupt_tests, corrupt_ntests, NULL, NULL);
    return failed;
}
