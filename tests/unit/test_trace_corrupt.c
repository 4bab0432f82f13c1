/* Damaged inputs: every failure is a one-line error naming the file, never a
 * crash; every single-bit flip and every truncation is detected; a spool
 * torn mid-chunk is salvaged into a readable trace. */
#include "test_trace_common.h"

#include <sys/wait.h>

#include "trace_internal.h" /* get_u32 */

/* Open must fail with a one-line message that starts with the path. */
static void expect_open_error(const char *path, const char *needle)
{
    char err[512] = "";
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (t)
        fail_msg("%s opened, expected an error containing \"%s\"", path, needle);
    assert_int_equal(strncmp(err, path, strlen(path)), 0);
    assert_null(strchr(err, '\n'));
    if (needle && !strstr(err, needle))
        fail_msg("error \"%s\" lacks \"%s\"", err, needle);
}

/* A small trace of two threads, in version 4 or (frames_wanted) 3. */
static void write_small(const char *path, bool frames_wanted)
{
    weft_event t0[20], t1[20];
    for (int i = 0; i < 20; i++) {
        t0[i] = tt_ev(2 * i, WEFT_EV_WRITE, 0x1000 + 8 * (i % 3), 0x400000 + 4 * i, 8);
        t1[i] = tt_ev(2 * i + 1, WEFT_EV_READ, 0x1000, 0x400100 + 4 * i, 8);
    }
    weft_event *s[] = {t0, t1};
    size_t c[] = {20, 20};
    if (frames_wanted)
        setenv("WEFT_TRACE_FRAMES", "1", 1);
    tt_write(path, 2, s, c, NULL);
    unsetenv("WEFT_TRACE_FRAMES");
}

static const char *small_trace(void)
{
    static char path[640];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s", tt_path("small.wtr"));
        write_small(path, false);
    }
    return path;
}

static const char *small_trace_v3(void)
{
    static char path[640];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s", tt_path("small3.wtr"));
        write_small(path, true);
    }
    return path;
}

/* More than one segment, and more than one version 2 frame (2^18 events). */
#define MULTI_EVENTS 300000

static const char *multi_block_trace(void)
{
    static char path[640];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s", tt_path("multi.wtr"));
        weft_event *t0 = calloc(MULTI_EVENTS, sizeof *t0);
        for (int i = 0; i < MULTI_EVENTS; i++)
            t0[i] = tt_ev((uint64_t)i, (uint8_t)(i % 2), 0x2000 + (i % 5) * 8, 0x400000, 4);
        weft_event *s[] = {t0};
        size_t c[] = {MULTI_EVENTS};
        tt_write(path, 1, s, c, NULL);
        free(t0);
    }
    return path;
}

/* Read everything; returns the result of the last next(). */
static int drain(weft_trace *t, uint64_t *n)
{
    weft_event ev;
    int r;
    *n = 0;
    while ((r = weft_trace_next(t, &ev)) == 1)
        (*n)++;
    return r;
}

static void test_missing_empty_garbage(void **state)
{
    (void)state;
    expect_open_error(tt_path("does-not-exist.wtr"), "cannot open: No such file or directory");
    tt_spit(tt_path("empty"), "", 0);
    expect_open_error(tt_path("empty"), "empty file");
    uint8_t rnd[4096];
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < sizeof rnd; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        rnd[i] = (uint8_t)x;
    }
    tt_spit(tt_path("random"), rnd, sizeof rnd);
    expect_open_error(tt_path("random"), "not a weft trace");
    tt_spit(tt_path("short"), "WEF", 3);
    expect_open_error(tt_path("short"), "truncated header");
    expect_open_error(tt_scratch(), "is a directory");
}

static void test_future_version(void **state)
{
    (void)state;
    size_t n;
    uint8_t *b = tt_slurp(small_trace(), &n);
    b[8] = 7; /* version field, little-endian u32 at offset 8 */
    const char *p = tt_path("future.wtr");
    tt_spit(p, b, n);
    char want[700];
    snprintf(want, sizeof want, "%s: trace format version 7 is newer than this weft supports (%d)",
             p, WEFT_TRACE_VERSION);
    char err[512];
    assert_null(weft_trace_open(p, err, sizeof err));
    assert_string_equal(err, want);
    free(b);
}

/* The small trace without its footer's kinds table, labelled `version`
 * (both CRCs recomputed); returns the new length. */
static size_t cut_kinds_table(uint8_t *b, size_t n, uint32_t version)
{
    assert_int_equal(get_u32(b + 8), 3);
    uint32_t hlen = get_u32(b + 12);
    put_u32(b + 8, version);
    put_u32(b + hlen - 4, trc_crc32(0, b, hlen - 4));
    uint64_t foot = get_u64(b + n - 16);
    uint32_t nthreads = get_u32(b + foot + 48);
    size_t flen = FOOTER_FIXED + (size_t)nthreads * FOOTER_THREAD;
    put_u32(b + foot + flen - 4, trc_crc32(0, b + foot, flen - 4));
    memcpy(b + foot + flen, b + n - 16, 16); /* the trailer, right after the shorter footer */
    return foot + flen + 16;
}

/* A version 2 trace is version 3 without the footer's kinds table: made
 * from the small trace, it must still be read, its summary counted by a
 * pass over the events. Labelled version 3, the same bytes are corrupt. */
static void test_version2_still_read(void **state)
{
    (void)state;
    size_t n;
    uint8_t *b = tt_slurp(small_trace_v3(), &n);
    const char *p = tt_path("v2.wtr");
    tt_spit(p, b, cut_kinds_table(b, n, 2));
    char err[512];
    weft_trace *t = weft_trace_open(p, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    assert_false(weft_trace_get_summary(t)->has_kinds);
    uint64_t got;
    assert_int_equal(drain(t, &got), 0);
    assert_int_equal(got, 40);
    weft_trace_close(t);
    FILE *out = tmpfile();
    assert_non_null(out);
    assert_int_equal(weft_trace_print_summary(p, 0, out, err, sizeof err), 0);
    char line[1024] = {0};
    rewind(out);
    assert_non_null(fgets(line, sizeof line, out));
    fclose(out);
    if (!strstr(line, "40 events (20 reads, 20 writes,"))
        fail_msg("summary of the version 2 trace: %s", line);
    free(b);

    b = tt_slurp(small_trace_v3(), &n);
    const char *p3 = tt_path("v3-no-kinds.wtr");
    tt_spit(p3, b, cut_kinds_table(b, n, 3));
    expect_open_error(p3, "corrupt footer (no event kinds table)");
    free(b);
}

static void check_truncation(const char *src, const char *dst, const uint8_t *b, size_t at)
{
    tt_spit(dst, b, at);
    char err[512] = "";
    weft_trace *t = weft_trace_open(dst, err, sizeof err);
    if (!t) {
        assert_int_equal(strncmp(err, dst, strlen(dst)), 0);
        assert_null(strchr(err, '\n'));
        return;
    }
    /* Accepting it is allowed only if what it reads is a consistent prefix. */
    uint64_t n;
    int r = drain(t, &n);
    assert_true(r == 0 || r == -1);
    assert_true(n <= weft_trace_event_count(t));
    weft_trace_close(t);
    (void)src;
}

static void test_truncations(void **state)
{
    (void)state;
    size_t n;
    uint8_t *b = tt_slurp(small_trace(), &n);
    for (size_t at = 0; at < n; at++)
        check_truncation(small_trace(), tt_path("cut.wtr"), b, at);
    free(b);

    b = tt_slurp(multi_block_trace(), &n);
    for (size_t at = 0; at < n; at += n / 97 + 1)
        check_truncation(multi_block_trace(), tt_path("cut2.wtr"), b, at);
    for (size_t at = n - 80; at < n; at++)
        check_truncation(multi_block_trace(), tt_path("cut2.wtr"), b, at);
    free(b);
    expect_open_error(tt_path("cut2.wtr"), "truncated");
}

/* Every single-bit flip anywhere in the file is detected, at open or while
 * reading, and never crashes. */
static void test_every_bit_flip_detected(void **state)
{
    (void)state;
    size_t n;
    uint8_t *b = tt_slurp(small_trace(), &n);
    const char *p = tt_path("flip.wtr");
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            b[i] ^= (uint8_t)(1u << bit);
            tt_spit(p, b, n);
            b[i] ^= (uint8_t)(1u << bit);
            char err[512] = "";
            weft_trace *t = weft_trace_open(p, err, sizeof err);
            if (!t) {
                assert_int_equal(strncmp(err, p, strlen(p)), 0);
                continue;
            }
            uint64_t k;
            if (drain(t, &k) != -1)
                fail_msg("flip of bit %d at byte %zu went unnoticed", bit, i);
            assert_int_equal(strncmp(weft_trace_error(t), p, strlen(p)), 0);
            weft_trace_close(t);
        }
    }
    free(b);
}

static void test_block_checksum(void **state)
{
    (void)state;
    size_t n;
    uint8_t *b = tt_slurp(multi_block_trace(), &n);
    /* Inside the second segment's compressed payload: after the header, the
     * first segment (header, compressed length at offset 20) and the second
     * one's header. */
    uint32_t hlen = get_u32(b + 12), first = get_u32(b + hlen + 20);
    size_t at = hlen + SEG_HDR_SIZE + first + SEG_HDR_SIZE + 3;
    assert_true(at < n);
    b[at] ^= 0x40;
    const char *p = tt_path("badcrc.wtr");
    tt_spit(p, b, n);
    free(b);
    char err[512];
    weft_trace *t = weft_trace_open(p, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    uint64_t k;
    assert_int_equal(drain(t, &k), -1);
    assert_true(k > 0 && k < MULTI_EVENTS); /* the frame before it was fine */
    const char *e = weft_trace_error(t);
    assert_int_equal(strncmp(e, p, strlen(p)), 0);
    assert_non_null(strstr(e, "corrupt block at offset"));
    assert_non_null(strstr(e, "checksum mismatch"));
    assert_int_equal(weft_trace_next(t, &(weft_event){0}), -1); /* stays failed */
    /* An export stops at the damage with the reader's message, leaving no file. */
    const char *csv = tt_path("badcrc.csv");
    assert_int_equal(weft_trace_export(t, NULL, WEFT_EXPORT_CSV, csv, err, sizeof err), -1);
    assert_non_null(strstr(err, "checksum mismatch"));
    assert_int_not_equal(access(csv, F_OK), 0);
    weft_trace_close(t);
}

/* weft_trace_open_footer: the same header and footer as weft_trace_open,
 * no events, and a segment header broken is not its business (the segments
 * are not read) while a broken footer or trailer still is. */
static void test_open_footer(void **state)
{
    (void)state;
    char err[512];
    const char *good = multi_block_trace();
    weft_trace *full = weft_trace_open(good, err, sizeof err);
    weft_trace *foot = weft_trace_open_footer(good, err, sizeof err);
    assert_non_null(full);
    assert_non_null(foot);
    assert_int_equal(weft_trace_event_count(foot), MULTI_EVENTS);
    assert_int_equal(weft_trace_event_count(foot), weft_trace_event_count(full));
    const weft_trace_summary *a = weft_trace_get_summary(full), *b = weft_trace_get_summary(foot);
    assert_int_equal(a->nthreads, b->nthreads);
    assert_int_equal(a->flags, b->flags);
    assert_int_equal(a->makespan, b->makespan);
    assert_memory_equal(a->threads, b->threads, a->nthreads * sizeof *a->threads);
    assert_string_equal(weft_trace_get_meta(full)->binary_path,
                        weft_trace_get_meta(foot)->binary_path);
    assert_int_equal(weft_trace_next(foot, &(weft_event){0}), -1);
    assert_non_null(strstr(weft_trace_error(foot), "footer only"));
    weft_trace_rewind(foot); /* still no events, and no crash */
    assert_int_equal(weft_trace_next(foot, &(weft_event){0}), -1);
    weft_trace_close(full);
    weft_trace_close(foot);

    size_t n;
    uint8_t *bytes = tt_slurp(good, &n);
    uint32_t hlen = get_u32(bytes + 12);
    bytes[hlen] ^= 0x01; /* the first segment's magic */
    const char *p = tt_path("badseg.wtr");
    tt_spit(p, bytes, n);
    assert_null(weft_trace_open(p, err, sizeof err));
    assert_non_null(strstr(err, "corrupt block"));
    foot = weft_trace_open_footer(p, err, sizeof err);
    assert_non_null(foot);
    weft_trace_close(foot);
    bytes[hlen] ^= 0x01;
    bytes[n - TRAILER_SIZE - 8] ^= 0x01; /* inside the footer: its CRC */
    tt_spit(p, bytes, n);
    assert_null(weft_trace_open_footer(p, err, sizeof err));
    assert_non_null(strstr(err, "footer"));
    assert_null(weft_trace_open_footer(tt_path("no-such.wtr"), err, sizeof err));
    tt_spit(p, bytes, n - 3); /* no trailer */
    assert_null(weft_trace_open_footer(p, err, sizeof err));
    assert_non_null(strstr(err, "truncated"));
    free(bytes);
}

/* ---- salvage ---- */

static void child_writes_and_dies(const char *path)
{
    char err[512];
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    if (!w)
        _exit(2);
    weft_event b[11];
    for (uint32_t round = 0; round < 2; round++) {
        for (uint32_t t = 0; t < 2; t++) {
            size_t n = 0;
            uint64_t base = 100 * round + 10 * t;
            if (round == 0)
                /* addr: the creator's index (T1 is T0's child) */
                b[n++] = tt_ev(base, WEFT_EV_THREAD_START, t ? 0 : UINT32_MAX, 0, 0);
            for (int i = 0; i < 10; i++)
                b[n++] = tt_ev(base + 1 + (uint64_t)i, WEFT_EV_WRITE, 0x3000, 0x400000, 8);
            if (weft_trace_writer_append(w, t, b, n) != 0)
                _exit(3);
        }
    }
    _exit(0); /* no finish: as if qemu died */
}

static void test_salvage_torn_spool(void **state)
{
    (void)state;
    const char *path = tt_path("crashed.wtr");
    char spool[700];
    snprintf(spool, sizeof spool, "%s.spool", path);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        child_writes_and_dies(path);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_not_equal(access(path, F_OK), 0);
    expect_open_error(spool, "spool of an unfinished run");

    /* Tear the last chunk (thread 1's second batch) in the middle. */
    struct stat st;
    assert_int_equal(stat(spool, &st), 0);
    assert_int_equal(truncate(spool, st.st_size - 7), 0);

    char err[512];
    if (weft_trace_salvage(path, WEFT_TRACE_CRASHED, -9, err, sizeof err) != 0)
        fail_msg("salvage: %s", err);
    assert_int_not_equal(access(spool, F_OK), 0);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    const weft_trace_summary *s = weft_trace_get_summary(t);
    assert_int_equal(s->flags, WEFT_TRACE_TRUNCATED | WEFT_TRACE_CRASHED);
    assert_int_equal(s->exit_status, -9);
    assert_int_equal(weft_trace_event_count(t), 11 + 11 + 10);
    assert_int_equal(s->nthreads, 2);
    assert_int_equal(s->threads[0].parent, UINT32_MAX);
    assert_int_equal(s->threads[0].start_time, 0);
    assert_int_equal(s->threads[0].end_time, 110);
    assert_int_equal(s->threads[0].events, 21);
    assert_int_equal(s->threads[1].parent, 0);
    assert_int_equal(s->threads[1].start_time, 10);
    assert_int_equal(s->threads[1].end_time, 20);
    assert_int_equal(s->threads[1].events, 11);
    assert_int_equal(s->makespan, 110);
    assert_string_equal(weft_trace_get_meta(t)->settings.policy, "pct");
    uint64_t n;
    assert_int_equal(drain(t, &n), 0);
    assert_int_equal(n, 32);
    weft_trace_close(t);

    /* Nothing to salvage, or a spool torn inside its own header. */
    assert_int_equal(weft_trace_salvage(path, 0, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, spool));
    assert_non_null(strstr(err, "No such file"));
    tt_spit(spool, "WEFTSPL\0\2\0\0\0\xff\0\0\0", 16);
    assert_int_equal(weft_trace_salvage(path, 0, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "header"));
}

/* A spool damaged before finish (by something else: the writer never
 * rewrites it) fails the merge partway, after blocks have been written:
 * no trace appears, no temporary is left, and the spool stays. */
static void test_spool_changed_before_finish(void **state)
{
    (void)state;
    const char *path = tt_path("changed.wtr");
    char spool[700], err[512];
    snprintf(spool, sizeof spool, "%s.spool", path);
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    weft_event *b = calloc(4096, sizeof *b);
    assert_non_null(b);
    for (uint64_t round = 0; round < 20; round++)
        for (uint32_t t = 0; t < 2; t++) {
            for (uint64_t i = 0; i < 4096; i++)
                b[i] = tt_ev(round * 8192 + 2 * i + t, WEFT_EV_WRITE, 0x1000 + 8 * (i % 7),
                             0x400000 + 4 * (i % 5), 8);
            assert_int_equal(weft_trace_writer_append(w, t, b, 4096), 0);
        }
    free(b);
    struct stat st;
    assert_int_equal(stat(spool, &st), 0);
    size_t n;
    uint8_t *bytes = tt_slurp(spool, &n);
    bytes[n - 100] ^= 0x01; /* in the last chunk's payload */
    tt_spit(spool, bytes, n);
    free(bytes);

    assert_int_equal(weft_trace_writer_finish(w, NULL, err, sizeof err), -1);
    assert_int_equal(strncmp(err, spool, strlen(spool)), 0);
    assert_non_null(strstr(err, "changed on disk"));
    assert_null(strchr(err, '\n'));
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(access(spool, F_OK), 0);
    char tmp[720];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    assert_int_not_equal(access(tmp, F_OK), 0);
    /* Salvage keeps what precedes the damaged chunk. */
    assert_int_equal(weft_trace_salvage(path, 0, 0, err, sizeof err), 0);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(weft_trace_event_count(t), 39 * 4096);
    weft_trace_close(t);
}

const struct CMUnitTest corrupt_tests[] = {
    cmocka_unit_test(test_missing_empty_garbage),
    cmocka_unit_test(test_future_version),
    cmocka_unit_test(test_version2_still_read),
    cmocka_unit_test(test_truncations),
    cmocka_unit_test(test_every_bit_flip_detected),
    cmocka_unit_test(test_block_checksum),
    cmocka_unit_test(test_open_footer),
    /* They cut and flip the spool's raw chunks. */
    cmocka_unit_test_setup_teardown(test_salvage_torn_spool, tt_raw_spool, tt_default_spool),
    cmocka_unit_test_setup_teardown(test_spool_changed_before_finish, tt_raw_spool,
                                    tt_default_spool),
};
const size_t corrupt_ntests = sizeof corrupt_tests / sizeof corrupt_tests[0];
