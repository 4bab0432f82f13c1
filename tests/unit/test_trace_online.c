/* Segments written as the threads append (tracer/trace_spool_segments.c):
 * the trace is the same bytes as from a spool of raw chunks, the spool
 * holds segments while the writer runs, a run killed meanwhile salvages to
 * the same trace as with raw chunks (the pending chunks come from the
 * buffer file), and damage to a segment is found. Part of the test_trace
 * executable. */
#include "test_trace_common.h"

#include <signal.h>
#include <sys/wait.h>

#define THREADS 3
#define ROUNDS 80
#define BUFFERED 777 /* thread 0's events published in its buffer, never appended */

/* Thread t's i-th event of round r: a few bytes each in a chunk, so that a
 * thread closes a segment every few dozen appends. */
static weft_event workload_event(uint32_t t, uint64_t r, uint64_t i)
{
    uint64_t x = (r * 4096 + i) * 0x9e3779b97f4a7c15ull + t;
    return tt_ev(r * 1000000 + t * 10 + 2 * i, (x >> 60) & 1 ? WEFT_EV_WRITE : WEFT_EV_READ,
                 0x10000 + 8 * ((x >> 20) & 0x3ff), 0x400000 + 4 * ((x >> 40) & 7), 8);
}

/* The workload into a new writer at path; with die, thread 0 also leaves
 * BUFFERED events in its buffer and the process is killed. Returns the
 * writer (for finish), or NULL in a child that failed. */
static weft_trace_writer *write_workload(const char *path, int die)
{
    char err[512];
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    weft_event *b = malloc(4096 * sizeof *b);
    if (!w || !b)
        return NULL;
    for (uint64_t r = 0; r < ROUNDS; r++)
        for (uint32_t t = 0; t < THREADS; t++) {
            for (uint64_t i = 0; i < 4096; i++)
                b[i] = workload_event(t, r, i);
            if (weft_trace_writer_append(w, t, b, 4096) != 0)
                return NULL;
        }
    free(b);
    if (die) {
        weft_trace_buf *lb = weft_trace_writer_buf(w, 0);
        if (!lb)
            return NULL;
        lb->thread = 0;
        lb->base = (uint64_t)ROUNDS * 4096;
        for (uint64_t i = 0; i < BUFFERED; i++)
            lb->ev[i] = workload_event(0, ROUNDS, i);
        lb->n = BUFFERED;
        kill(getpid(), SIGKILL);
    }
    return w;
}

static void assert_same_bytes(const char *a, const char *b)
{
    size_t n[2];
    uint8_t *bytes[2] = {tt_slurp(a, &n[0]), tt_slurp(b, &n[1])};
    assert_int_equal(n[0], n[1]);
    assert_memory_equal(bytes[0], bytes[1], n[0]);
    free(bytes[0]);
    free(bytes[1]);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void test_online_same_bytes(void **state)
{
    (void)state;
    char err[512], spool[2][700];
    const char *path[2] = {tt_path("raw.wtr"), tt_path("online.wtr")};
    uint64_t spooled[2];
    for (int online = 0; online < 2; online++) {
        if (!online)
            setenv("WEFT_TRACE_ONLINE", "0", 1);
        weft_trace_writer *w = write_workload(path[online], 0);
        unsetenv("WEFT_TRACE_ONLINE");
        assert_non_null(w);
        snprintf(spool[online], sizeof spool[online], "%s.spool", path[online]);
        spooled[online] = file_size(spool[online]);
        if (weft_trace_writer_finish(w, NULL, err, sizeof err) != 0)
            fail_msg("%s", err);
    }
    /* Segments reached the spool while the threads appended, smaller
     * than their raw chunks. */
    assert_true(spooled[1] > 4096 && spooled[1] < spooled[0]);
    assert_same_bytes(path[0], path[1]);
    weft_trace *t = weft_trace_open(path[1], err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_event_count(t), (uint64_t)THREADS * ROUNDS * 4096);
    weft_trace_close(t);
}

static int run_killed(const char *path, int online)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!online)
            setenv("WEFT_TRACE_ONLINE", "0", 1);
        write_workload(path, 1);
        _exit(2);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) ? WTERMSIG(status) : -WEXITSTATUS(status);
}

/* Killed with segments in the spool, chunks pending in the buffer file
 * and events in a buffer: salvage finds them all, and makes the trace a
 * spool of raw chunks makes. */
static void test_online_salvage(void **state)
{
    (void)state;
    char err[512];
    const char *path[2] = {tt_path("killed-raw.wtr"), tt_path("killed-online.wtr")};
    for (int online = 0; online < 2; online++) {
        assert_int_equal(run_killed(path[online], online), SIGKILL);
        if (weft_trace_salvage(path[online], WEFT_TRACE_CRASHED, -SIGKILL, err, sizeof err) != 0)
            fail_msg("salvage: %s", err);
        weft_trace *t = weft_trace_open(path[online], err, sizeof err);
        assert_non_null(t);
        assert_int_equal(weft_trace_event_count(t), (uint64_t)THREADS * ROUNDS * 4096 + BUFFERED);
        weft_trace_close(t);
    }
    assert_same_bytes(path[0], path[1]);
}

/* The spool's last segment torn: salvage keeps what precedes it, and
 * nothing of that thread after it (its pending chunks and buffered events
 * would follow a gap). */
static void test_online_torn_segment(void **state)
{
    (void)state;
    char err[512], spool[700];
    const char *path = tt_path("torn-online.wtr");
    snprintf(spool, sizeof spool, "%s.spool", path);
    assert_int_equal(run_killed(path, 1), SIGKILL);
    assert_int_equal(truncate(spool, (off_t)file_size(spool) - 7), 0);
    if (weft_trace_salvage(path, WEFT_TRACE_CRASHED, -SIGKILL, err, sizeof err) != 0)
        fail_msg("salvage: %s", err);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    const weft_trace_summary *s = weft_trace_get_summary(t);
    uint64_t whole = (uint64_t)ROUNDS * 4096, lost = 0;
    assert_int_equal(s->nthreads, THREADS);
    for (uint32_t k = 0; k < THREADS; k++) {
        assert_true(s->threads[k].events > 0);
        assert_true(s->threads[k].events <= whole + (k == 0 ? BUFFERED : 0));
        lost += whole + (k == 0 ? BUFFERED : 0) - s->threads[k].events;
    }
    assert_true(lost > 0);
    assert_true(s->flags & WEFT_TRACE_TRUNCATED);
    uint64_t seen = 0;
    weft_event ev;
    int r;
    while ((r = weft_trace_next(t, &ev)) == 1)
        seen++;
    assert_int_equal(r, 0);
    assert_int_equal(seen, weft_trace_event_count(t));
    weft_trace_close(t);
}

/* A segment changed in the spool before finish: the finish says so, and
 * leaves the spool for salvage and no trace. */
static void test_online_changed_before_finish(void **state)
{
    (void)state;
    char err[512], spool[700];
    const char *path = tt_path("changed-online.wtr");
    snprintf(spool, sizeof spool, "%s.spool", path);
    weft_trace_writer *w = write_workload(path, 0);
    assert_non_null(w);
    size_t n;
    uint8_t *bytes = tt_slurp(spool, &n);
    assert_true(n > 8192);
    bytes[n / 2] ^= 0x10;
    tt_spit(spool, bytes, n);
    free(bytes);
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "changed on disk"));
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(access(spool, F_OK), 0);
}

/* The size limit counts the segments in the spool: the writer stops once
 * they pass it, and the trace holds every event appended before (those
 * still pending included). */
static void test_online_size_limit(void **state)
{
    (void)state;
    char err[512];
    weft_trace_meta m = tt_meta();
    const char *path = tt_path("limited-online.wtr");
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    weft_trace_writer_set_limits(w, 200000, 0);
    weft_event *b = malloc(4096 * sizeof *b);
    assert_non_null(b);
    uint64_t appended = 0;
    int rc = 0;
    for (uint64_t r = 0; rc == 0 && r < ROUNDS; r++)
        for (uint32_t t = 0; rc == 0 && t < THREADS; t++) {
            for (uint64_t i = 0; i < 4096; i++)
                b[i] = workload_event(t, r, i);
            rc = weft_trace_writer_append(w, t, b, 4096);
            appended += rc == 0 ? 4096 : 0;
        }
    free(b);
    assert_int_equal(rc, 1);
    assert_int_equal(weft_trace_writer_stopped(w, NULL), WEFT_TRACE_STOP_SIZE);
    assert_true(appended < (uint64_t)THREADS * ROUNDS * 4096);
    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), 0);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_event_count(t), appended);
    assert_int_equal(weft_trace_get_summary(t)->flags,
                     WEFT_TRACE_COMPLETE | WEFT_TRACE_TRUNCATED | WEFT_TRACE_STOPPED);
    weft_trace_close(t);
}

/* Thread t of a program of many short threads: start, three writes, exit. */
static void short_thread(weft_trace_writer *w, uint32_t t)
{
    uint64_t at = 100 * (uint64_t)t;
    weft_event e[5] = {tt_ev(at, WEFT_EV_THREAD_START, t ? 0 : UINT32_MAX, 0, 0),
                       tt_ev(at + 1, WEFT_EV_WRITE, 0x5000 + 8 * (t % 7), 0x400000, 8),
                       tt_ev(at + 2, WEFT_EV_WRITE, 0x5008, 0x400004, 8),
                       tt_ev(at + 3, WEFT_EV_WRITE, 0x5010, 0x400008, 8),
                       tt_ev(at + 4, WEFT_EV_THREAD_EXIT, 0, 0, 0)};
    assert_int_equal(weft_trace_writer_append(w, t, e, 5), 0);
}

/* More threads than pending areas, one after another: each exit closes
 * its thread's segment and gives its area back, so the buffer file holds
 * one area, not one per thread; the trace is the raw chunks' one. */
static void test_online_many_threads(void **state)
{
    (void)state;
    enum { N = 5000 };
    char err[512], live[700];
    const char *path[2] = {tt_path("many-raw.wtr"), tt_path("many-online.wtr")};
    for (int online = 0; online < 2; online++) {
        if (!online)
            setenv("WEFT_TRACE_ONLINE", "0", 1);
        weft_trace_meta m = tt_meta();
        weft_trace_writer *w = weft_trace_writer_open(path[online], &m, err, sizeof err);
        unsetenv("WEFT_TRACE_ONLINE");
        assert_non_null(w);
        for (uint32_t t = 0; t < N; t++)
            short_thread(w, t);
        snprintf(live, sizeof live, "%s.live", path[online]);
        struct stat st;
        assert_int_equal(stat(live, &st), 0);
        /* 4096 areas of 260 KiB would be 1 GiB on disk. */
        assert_true((uint64_t)st.st_blocks * 512 < (8u << 20));
        if (weft_trace_writer_finish(w, NULL, err, sizeof err) != 0)
            fail_msg("%s", err);
    }
    assert_same_bytes(path[0], path[1]);
    weft_trace *t = weft_trace_open(path[1], err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_event_count(t), 5 * N);
    assert_int_equal(weft_trace_get_summary(t)->nthreads, N);
    weft_trace_close(t);
}

const struct CMUnitTest online_tests[] = {
    cmocka_unit_test(test_online_same_bytes),   cmocka_unit_test(test_online_salvage),
    cmocka_unit_test(test_online_torn_segment), cmocka_unit_test(test_online_changed_before_finish),
    cmocka_unit_test(test_online_size_limit),   cmocka_unit_test(test_online_many_threads),
};
const size_t online_ntests = sizeof online_tests / sizeof online_tests[0];
