/* Trace writer and reader: round trip of every field, canonical order,
 * byte-identical output whatever the interleaving of appends, writer
 * errors. Corruption and salvage tests are in test_trace_corrupt.c, the
 * bytes against a plain encoding of the format and the layout and memory of
 * a large stream in test_trace_encoding.c. */
#include "test_trace_common.h"

#include "trace_internal.h" /* FRAME_EVENTS, FRAME_HDR_SIZE */

#include <pthread.h>

/* Defined in test_trace_corrupt.c, test_trace_encoding.c and test_trace_keep.c. */
extern const struct CMUnitTest corrupt_tests[], encoding_tests[], keep_tests[], online_tests[];
extern const size_t corrupt_ntests, encoding_ntests, keep_ntests, online_ntests;

/* ---- round trip ---- */

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
    assert_true(m->start_code == 0x5500000000ull);
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
    qsort(want_ev, 13, sizeof *want_ev, tt_ev_order);
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

/* The same appends (97 events each) thread after thread (variant 0) or
 * round robin, last thread first (1); or appends of uneven sizes (2). */
static char *write_variant(const char *name, weft_event **s, int variant)
{
    char *path = strdup(tt_path(name));
    assert_non_null(path);
    char err[512];
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    if (variant == 0) {
        for (uint32_t t = 0; t < NT; t++)
            for (size_t i = 0; i < PER_THREAD; i += 97)
                assert_int_equal(weft_trace_writer_append(
                                     w, t, s[t] + i, PER_THREAD - i < 97 ? PER_THREAD - i : 97),
                                 0);
    } else {
        static const size_t sizes[] = {1, 7, 333, 4096, 5000};
        size_t pos[NT] = {0}, k = 0;
        for (int left = NT; left;) {
            left = 0;
            for (int t = NT - 1; t >= 0; t--) {
                size_t n = variant == 1 ? 97 : sizes[k++ % 5];
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

/* Both traces hold the same events in the same order. */
static void assert_same_events(const char *a, const char *b)
{
    char err[512];
    weft_trace *x = weft_trace_open(a, err, sizeof err), *y = weft_trace_open(b, err, sizeof err);
    assert_non_null(x);
    assert_non_null(y);
    weft_event e, f;
    int r;
    while ((r = weft_trace_next(x, &e)) == 1) {
        assert_int_equal(weft_trace_next(y, &f), 1);
        assert_memory_equal(&e, &f, sizeof e);
    }
    assert_int_equal(r, 0);
    assert_int_equal(weft_trace_next(y, &f), 0);
    weft_trace_close(x);
    weft_trace_close(y);
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
    char *a = write_variant("order-a.wtr", s, 0);
    char *b = write_variant("order-b.wtr", s, 1);
    /* Chunks follow appends, so other append sizes give other bytes (the
     * plugin appends where a thread's own events say: a full buffer, a
     * syscall, its exit), the same events; and in version 3, whose frames
     * are cut from the merged events, the same bytes. */
    char *d = write_variant("order-d.wtr", s, 2);
    assert_same_events(a, d);
    setenv("WEFT_TRACE_FRAMES", "1", 1);
    char *a3 = write_variant("order-a3.wtr", s, 0);
    char *d3 = write_variant("order-d3.wtr", s, 2);
    unsetenv("WEFT_TRACE_FRAMES");
    size_t l3, m3;
    uint8_t *b3 = tt_slurp(a3, &l3), *e3 = tt_slurp(d3, &m3);
    assert_int_equal(l3, m3);
    assert_memory_equal(b3, e3, l3);
    assert_int_equal(b3[8], 3);
    free(b3);
    free(e3);
    assert_same_events(a, a3);
    free(d);
    free(a3);
    free(d3);

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
    free(a);
    free(b);
    for (uint32_t i = 0; i < NT; i++)
        free(s[i]);
}

/* ---- writer: rebuilt tables and errors ---- */

/* An exit status no run can end with (a fuzzer's find: weft info negated
 * INT32_MIN to print it as a signal) is a corrupt footer; the extremes of
 * what a run can end with read back. */
static void test_exit_status_range(void **state)
{
    (void)state;
    char err[512];
    static const int32_t bad[] = {INT32_MIN, -256, 256, INT32_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        weft_trace_summary sum = {.exit_status = bad[i]};
        const char *p = tt_path("exit.wtr");
        tt_write(p, 0, NULL, NULL, &sum);
        weft_trace *t = weft_trace_open(p, err, sizeof err);
        assert_null(t);
        assert_non_null(strstr(err, "corrupt footer (exit status"));
    }
    static const int32_t good[] = {-255, -9, 0, 255};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        weft_trace_summary sum = {.exit_status = good[i]};
        const char *p = tt_path("exit.wtr");
        tt_write(p, 0, NULL, NULL, &sum);
        weft_trace *t = weft_trace_open(p, err, sizeof err);
        assert_non_null(t);
        assert_int_equal(weft_trace_get_summary(t)->exit_status, good[i]);
        weft_trace_close(t);
    }
}

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

/* More shared objects than the spool's header has room for: the finished
 * trace has every one (its header is written at the end), in order. */
static void test_many_objects(void **state)
{
    (void)state;
    const char *path = tt_path("objects.wtr");
    char err[512] = "";
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    static char paths[WEFT_TRACE_MAX_OBJECTS][128];
    weft_trace_object objs[WEFT_TRACE_MAX_OBJECTS];
    for (int i = 0; i < WEFT_TRACE_MAX_OBJECTS; i++) {
        snprintf(paths[i], sizeof paths[i], "/a/sysroot/usr/lib/aarch64-linux-gnu/libobject%02d.so",
                 i);
        objs[i] = (weft_trace_object){0x5502000000ull + 0x100000ull * (uint64_t)i,
                                      0x5502080000ull + 0x100000ull * (uint64_t)i, 0, paths[i]};
    }
    m.start_code = 0x5500000000ull;
    m.objects = objs;
    m.nobjects = WEFT_TRACE_MAX_OBJECTS;
    weft_trace_writer_set_loaded(w, &m);
    weft_event e = tt_ev(1, WEFT_EV_READ, 0x10, 0x400000, 4);
    assert_int_equal(weft_trace_writer_append(w, 0, &e, 1), 0);
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), 0);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    const weft_trace_meta *got = weft_trace_get_meta(t);
    assert_int_equal(got->nobjects, WEFT_TRACE_MAX_OBJECTS);
    for (int i = 0; i < WEFT_TRACE_MAX_OBJECTS; i++) {
        assert_string_equal(got->objects[i].path, paths[i]);
        assert_true(got->objects[i].lo == objs[i].lo && got->objects[i].hi == objs[i].hi);
    }
    weft_trace_close(t);
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
        cmocka_unit_test(test_empty_and_rebuilt_table),
        cmocka_unit_test(test_writer_errors),
        cmocka_unit_test(test_set_outcome),
        cmocka_unit_test(test_kind_helpers),
        cmocka_unit_test(test_many_objects),
        cmocka_unit_test(test_exit_status_range),
    };
    /* Encoding first: its large streams check the process's peak memory,
     * which the other groups' files would only raise. */
    int failed =
        _cmocka_run_group_tests("trace_encoding", encoding_tests, encoding_ntests, NULL, NULL);
    failed += cmocka_run_group_tests_name("trace", tests, NULL, NULL);
    failed += _cmocka_run_group_tests("trace_corrupt", corrupt_tests, corrupt_ntests, NULL, NULL);
    failed += _cmocka_run_group_tests("trace_keep", keep_tests, keep_ntests, NULL, NULL);
    failed += _cmocka_run_group_tests("trace_online", online_tests, online_ntests, NULL, NULL);
    return failed;
}
