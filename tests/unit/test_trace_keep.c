/* Traces that must not be lost: the events still in a dead process's
 * crash-proof buffers and its faulting access join the salvaged trace, a
 * stale buffer file is ignored, and a writer stops cleanly at its size
 * limit or a nearly full disk. Part of the test_trace executable. */
#include "test_trace_common.h"

#include <signal.h>
#include <sys/wait.h>

#define TAIL 96 /* a tail-keeping writer's; 3000 is not a multiple: the ring wraps */

/* Thread 0 appends one full buffer and keeps 911 more events buffered;
 * thread 1 has 2 events in its buffer, a third written but not published,
 * and a faulting access noted after them; with `tail` (a writer keeping
 * TAIL events per thread) thread 2 appends 10 events at 20000 and buffers
 * none. Then the process dies like qemu does, without any exit code. */
static void child_buffers_and_dies(const char *path, int tail)
{
    char err[512];
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    weft_trace_buf *b0 = w ? weft_trace_writer_buf(w, 3) : NULL;
    weft_trace_buf *b1 = w ? weft_trace_writer_buf(w, 9) : NULL;
    if (!b0 || !b1 || weft_trace_writer_buf(w, 3) != b0)
        _exit(2);
    /* Learnt after the open: the spool's header must have it (salvage). */
    weft_trace_meta loaded = m;
    loaded.start_code = 0x5500000000ull;
    loaded.settings.range_lo[0] += 0x5500000000ull;
    loaded.settings.range_hi[0] += 0x5500000000ull;
    weft_trace_object objs[2] = {
        {0x5502822000ull, 0x5502864000ull, 0, "/lib/ld-linux-aarch64.so.1"},
        {0x5502880000ull, 0x5502a22000ull, 0, "/lib/libc.so.6"}};
    loaded.objects = objs;
    loaded.nobjects = 2;
    weft_trace_writer_set_loaded(w, &loaded);
    weft_event b2[10];
    for (uint64_t i = 0; i < 10; i++)
        b2[i] = tt_ev(20000 + i, WEFT_EV_READ, 0x6000, 0x400800, 4);
    if (tail)
        weft_trace_writer_keep_tail(w, TAIL);
    if (tail && weft_trace_writer_append(w, 2, b2, 10) != 0)
        _exit(5);
    b0->thread = 0;
    b1->thread = 1;
    for (uint32_t i = 0; i < 5007; i++) {
        uint32_t k = b0->n;
        b0->ev[k] = tt_ev(10 + i, WEFT_EV_WRITE, 0x5000, 0x400000, 8);
        b0->n = k + 1;
        if (b0->n == WEFT_TRACE_BUF_EVENTS && weft_trace_writer_append_buf(w, b0) != 0)
            _exit(3);
    }
    b1->ev[0] = tt_ev(20, WEFT_EV_THREAD_START, 0, 0, 0);
    b1->ev[1] = tt_ev(21, WEFT_EV_READ, 0x5000, 0x400100, 8);
    b1->n = 2;
    b1->ev[2] = tt_ev(22, WEFT_EV_READ, 0x5008, 0x400104, 8); /* not published */
    b1->fault = tt_ev(25, WEFT_EV_FAULT, 0x0, 0x400108, 0);
    b1->fault.flags = WEFT_EVF_FAULT_WRITE;
    b1->fault_events = b1->base + b1->n;
    b1->fault_seq = 1;
    kill(getpid(), SIGKILL);
    _exit(4);
}

/* body(path, arg) in a child, which must _exit: its signal, or -status. */
static int run_child(void (*body)(const char *, int), const char *path, int arg)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL); /* cmocka's handler would catch it */
        body(path, arg);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) ? WTERMSIG(status) : -WEXITSTATUS(status);
}

static void test_salvage_buffers_and_fault(void **state)
{
    (void)state;
    const char *path = tt_path("died.wtr");
    char live[700], err[512];
    snprintf(live, sizeof live, "%s.live", path);
    assert_int_equal(run_child(child_buffers_and_dies, path, 0), SIGKILL);
    assert_int_equal(access(live, F_OK), 0);
    if (weft_trace_salvage(path, WEFT_TRACE_CRASHED, -SIGSEGV, err, sizeof err) != 0)
        fail_msg("salvage: %s", err);
    assert_int_not_equal(access(live, F_OK), 0);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    const weft_trace_summary *s = weft_trace_get_summary(t);
    const weft_trace_meta *m = weft_trace_get_meta(t);
    assert_true(m->start_code == 0x5500000000ull);
    assert_true(m->settings.range_lo[0] == tt_meta().settings.range_lo[0] + 0x5500000000ull);
    assert_true(m->settings.range_lo[1] == tt_meta().settings.range_lo[1]);
    assert_int_equal(m->nobjects, 2);
    assert_string_equal(m->objects[1].path, "/lib/libc.so.6");
    assert_true(m->objects[1].lo == 0x5502880000ull && m->objects[1].hi == 0x5502a22000ull);
    assert_int_equal(s->nthreads, 2);
    assert_int_equal(s->threads[0].events, 5007);
    assert_int_equal(s->threads[1].events, 3); /* two buffered and the fault */
    weft_event ev, last1 = {0};
    uint64_t n = 0, writes = 0;
    while (weft_trace_next(t, &ev) == 1) {
        n++;
        writes += ev.kind == WEFT_EV_WRITE;
        if (ev.thread == 1)
            last1 = ev;
    }
    assert_int_equal(n, 5010);
    assert_int_equal(writes, 5007);
    assert_int_equal(last1.kind, WEFT_EV_FAULT);
    assert_int_equal(last1.pc, 0x400108);
    assert_int_equal(last1.flags, WEFT_EVF_FAULT_WRITE);
    assert_int_equal(last1.seq, 2);
    weft_trace_close(t);

    /* Died of another signal: the note is not how the run ended. */
    assert_int_equal(run_child(child_buffers_and_dies, path, 0), SIGKILL);
    assert_int_equal(weft_trace_salvage(path, WEFT_TRACE_CRASHED, -SIGABRT, err, sizeof err), 0);
    t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_event_count(t), 5009);
    weft_trace_close(t);
}

/* Each thread's events in order, counted; stops where told. */
typedef struct spool_seen {
    uint64_t n[2], bad, stop_after;
} spool_seen;

static int see_event(void *ctx, const weft_event *ev)
{
    spool_seen *x = ctx;
    if (ev->thread > 1 || ev->seq != x->n[ev->thread] ||
        (ev->thread == 0 && ev->time != 10 + ev->seq))
        x->bad++;
    else
        x->n[ev->thread]++;
    return x->stop_after && x->n[0] + x->n[1] == x->stop_after ? 7 : 0;
}

/* The spool read in place: the appended and the buffered events, thread by
 * thread; it stays, and salvage then makes the same trace as before. */
static void test_spool_read(void **state)
{
    (void)state;
    const char *path = tt_path("inplace.wtr");
    char err[512];
    assert_int_equal(run_child(child_buffers_and_dies, path, 0), SIGKILL);
    assert_int_equal(weft_spool_stopped(path), 0); /* killed, not stopped */
    spool_seen x = {0};
    if (weft_spool_read(path, see_event, &x, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(x.bad, 0);
    assert_int_equal(x.n[0], 5007);
    assert_int_equal(x.n[1], 2);
    spool_seen y = {.stop_after = 100};
    assert_int_equal(weft_spool_read(path, see_event, &y, err, sizeof err), 7);
    assert_int_equal(y.n[0], 100);
    assert_int_equal(weft_trace_salvage(path, 0, -SIGKILL, err, sizeof err), 0);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_event_count(t), 5009);
    weft_trace_close(t);
    assert_int_equal(weft_spool_read(path, see_event, &x, err, sizeof err), -1); /* gone */
}

/* A buffer file of another run (another spool) adds nothing. */
static void test_stale_buffers_ignored(void **state)
{
    (void)state;
    const char *path = tt_path("stale.wtr");
    char spool[700], err[512];
    snprintf(spool, sizeof spool, "%s.spool", path);
    assert_int_equal(run_child(child_buffers_and_dies, path, 0), SIGKILL);
    /* The same spool bytes under a new inode: as if another run wrote it. */
    size_t len;
    uint8_t *bytes = tt_slurp(spool, &len);
    unlink(spool);
    tt_spit(spool, bytes, len);
    free(bytes);
    assert_int_equal(weft_trace_salvage(path, 0, -SIGSEGV, err, sizeof err), 0);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    /* The one appended: in the spool as a raw chunk, or waiting for its
     * segment in the stale buffer file. */
    assert_int_equal(weft_trace_event_count(t),
                     getenv("WEFT_TRACE_ONLINE") ? WEFT_TRACE_BUF_EVENTS : 0);
    weft_trace_close(t);
}

static void append_until_stopped(weft_trace_writer *w, size_t *appended)
{
    weft_event b[1000];
    int rc = 0;
    for (uint64_t round = 0; rc == 0 && round < 1000; round++) {
        for (int i = 0; i < 1000; i++)
            b[i] = tt_ev(round * 1000 + (uint64_t)i, WEFT_EV_READ, 0x6000 + 8 * (uint64_t)i,
                         0x400000, 8);
        rc = weft_trace_writer_append(w, 0, b, 1000);
        if (rc == 0)
            *appended += 1000;
    }
    assert_int_equal(rc, 1);
    assert_int_equal(weft_trace_writer_append(w, 0, b, 1), 1); /* stays stopped */
}

static void test_limits_stop_writer(void **state)
{
    (void)state;
    char err[512];
    weft_trace_meta m = tt_meta();
    const char *path = tt_path("limited.wtr");
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    weft_trace_writer_set_limits(w, 100000, 0);
    size_t appended = 0;
    append_until_stopped(w, &appended);
    assert_int_equal(weft_trace_writer_stopped(w, NULL), WEFT_TRACE_STOP_SIZE);
    assert_int_equal(weft_spool_stopped(path), WEFT_TRACE_STOP_SIZE);
    assert_true(appended > 0 && appended < 100000); /* a spool event is 1+ bytes */
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), 0);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_event_count(t), appended);
    assert_int_equal(weft_trace_get_summary(t)->flags,
                     WEFT_TRACE_COMPLETE | WEFT_TRACE_TRUNCATED | WEFT_TRACE_STOPPED);
    weft_trace_close(t);

    /* No disk has 2^62 bytes free: stopped at the first append; salvaged
     * (qemu exits at a limit, weft salvages) as a stopped run. */
    w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    weft_trace_writer_set_limits(w, 0, 1ull << 62);
    appended = 0;
    append_until_stopped(w, &appended);
    uint64_t free_bytes = 0;
    assert_int_equal(weft_trace_writer_stopped(w, &free_bytes), WEFT_TRACE_STOP_DISK);
    assert_true(free_bytes > 0 && appended == 0);
    assert_int_equal(weft_trace_salvage(path, 0, 124, err, sizeof err), 0);
    t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_get_summary(t)->flags, WEFT_TRACE_TRUNCATED | WEFT_TRACE_STOPPED);
    weft_trace_close(t);
    weft_trace_writer_abort(w);
}

/* A lingering writer's buffers stay writable after finish (a thread of the
 * ending process that binds its buffer late), and the trace is whole; a
 * write there without lingering is a fault (checked in a child). */
static void write_after_finish(const char *path, int linger)
{
    char err[512];
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    weft_trace_buf *b = w ? weft_trace_writer_buf(w, 2) : NULL;
    if (!b)
        _exit(2);
    if (linger)
        weft_trace_writer_set_lingering(w);
    b->thread = 0;
    b->ev[0] = tt_ev(10, WEFT_EV_THREAD_START, 0, 0, 0);
    b->n = 1;
    if (weft_trace_writer_append_buf(w, b) != 0 ||
        weft_trace_writer_finish(w, NULL, err, sizeof err) != 0)
        _exit(3);
    b->thread = 1; /* the late thread */
    b->ev[0] = tt_ev(20, WEFT_EV_READ, 0x5000, 0x400100, 8);
    b->n = 1;
    _exit(0);
}

static void test_lingering_buffers(void **state)
{
    (void)state;
    const char *path = tt_path("linger.wtr");
    char err[512];
    assert_int_equal(run_child(write_after_finish, path, 1), 0);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_event_count(t), 1);
    weft_trace_close(t);
    assert_int_equal(run_child(write_after_finish, tt_path("unmapped.wtr"), 0), SIGSEGV);
}

/* ---- a writer that keeps only the threads' tails ---- */

/* Thread 0: 3000 events at 10.. (pc 0x400000 + i % 1000), thread 1: 50
 * at 5..; tail mode; with `bad`, then an append going back in time. */
static weft_trace_writer *tail_writer(const char *path, int bad)
{
    char err[512];
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    weft_trace_writer_keep_tail(w, TAIL);
    weft_event b[1000];
    for (uint64_t round = 0; round < 3; round++) {
        for (uint64_t i = 0; i < 1000; i++)
            b[i] = tt_ev(10 + round * 1000 + i, WEFT_EV_WRITE, 0x5000, 0x400000 + i, 8);
        assert_int_equal(weft_trace_writer_append(w, 0, b, 1000), 0);
    }
    for (uint64_t i = 0; i < 50; i++)
        b[i] = tt_ev(5 + i, WEFT_EV_READ, 0x6000, 0x400800, 4);
    assert_int_equal(weft_trace_writer_append(w, 1, b, 50), 0);
    if (bad) { /* still checked */
        b[0] = tt_ev(4, WEFT_EV_READ, 0x6000, 0x400800, 4);
        assert_int_equal(weft_trace_writer_append(w, 1, b, 1), -1);
    }
    return w;
}

static void test_tail_writer(void **state)
{
    (void)state;
    char err[512];
    const char *path = tt_path("tail.wtr");
    weft_trace_writer *w = tail_writer(path, 1);
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), -1);
    weft_trace_writer_abort(tail_writer(path, 0));

    /* Each thread's last TAIL events, in order. */
    w = tail_writer(path, 0);
    if (weft_trace_writer_finish(w, NULL, err, sizeof err) != 0)
        fail_msg("finish: %s", err);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    const weft_trace_summary *s = weft_trace_get_summary(t);
    assert_int_equal(s->flags, WEFT_TRACE_COMPLETE | WEFT_TRACE_TRUNCATED);
    assert_int_equal(s->makespan, 3009);
    assert_int_equal(s->threads[0].events, TAIL);
    assert_int_equal(s->threads[1].events, 50);
    weft_event ev;
    uint64_t next0 = 3010 - TAIL, n = 0;
    while (weft_trace_next(t, &ev) == 1) {
        n++;
        if (ev.thread == 0) {
            assert_int_equal(ev.time, next0);
            assert_int_equal(ev.pc, 0x400000 + (next0 - 10) % 1000);
            next0++;
        }
    }
    assert_int_equal(n, TAIL + 50);
    assert_int_equal(next0, 3010);
    weft_trace_close(t);

    /* Its footer alone: the makespan still counts what was not kept. */
    w = tail_writer(path, 0);
    assert_int_equal(weft_trace_writer_finish_summary(w, NULL, err, sizeof err), 0);
    t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_get_summary(t)->flags,
                     WEFT_TRACE_COMPLETE | WEFT_TRACE_SUMMARY_ONLY);
    assert_int_equal(weft_trace_get_summary(t)->makespan, 3009);
    assert_int_equal(weft_trace_event_count(t), 0);
    weft_trace_close(t);
}

/* Salvage after a tail-keeping writer died: the buffered events follow
 * the ones not kept, and every thread ends where it did. */
static void test_tail_salvage(void **state)
{
    (void)state;
    const char *path = tt_path("taildied.wtr");
    char err[512];
    assert_int_equal(run_child(child_buffers_and_dies, path, 1), SIGKILL);
    if (weft_trace_salvage(path, WEFT_TRACE_CRASHED, -SIGKILL, err, sizeof err) != 0)
        fail_msg("salvage: %s", err);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    const weft_trace_summary *s = weft_trace_get_summary(t);
    assert_int_equal(s->nthreads, 3);
    assert_int_equal(s->threads[0].events, 5007 - WEFT_TRACE_BUF_EVENTS);
    assert_int_equal(s->threads[0].end_time, 10 + 5006);
    assert_int_equal(s->threads[1].events, 2);
    assert_int_equal(s->threads[2].events, 0);
    assert_int_equal(s->threads[2].end_time, 20009);
    assert_int_equal(s->makespan, 20009);
    weft_event ev; /* thread 0's buffered events follow the skipped ones */
    while (weft_trace_next(t, &ev) == 1 && ev.thread != 0)
        ;
    assert_int_equal(ev.thread, 0);
    assert_int_equal(ev.time, 10 + WEFT_TRACE_BUF_EVENTS);
    weft_trace_close(t);
}

const struct CMUnitTest keep_tests[] = {
    cmocka_unit_test(test_tail_writer),
    cmocka_unit_test(test_spool_read),
    cmocka_unit_test(test_tail_salvage),
    cmocka_unit_test(test_lingering_buffers),
    cmocka_unit_test(test_salvage_buffers_and_fault),
    cmocka_unit_test(test_stale_buffers_ignored),
    /* The same with a spool of raw chunks (a learning run's). */
    cmocka_unit_test_setup_teardown(test_spool_read, tt_raw_spool, tt_default_spool),
    cmocka_unit_test_setup_teardown(test_salvage_buffers_and_fault, tt_raw_spool, tt_default_spool),
    cmocka_unit_test_setup_teardown(test_stale_buffers_ignored, tt_raw_spool, tt_default_spool),
    /* Its size limit is reached by raw chunks; test_trace_online.c's by segments. */
    cmocka_unit_test_setup_teardown(test_limits_stop_writer, tt_raw_spool, tt_default_spool),
};
const size_t keep_ntests = sizeof keep_tests / sizeof keep_tests[0];
