/* Regression tests for inputs that once broke weft's readers (found by the
 * fuzzers in fuzz/, kept in tests/unit/data/fuzz_{trace,spool,plan}/):
 * each named input gets the check of its bug, and every file in those
 * folders (including ones added later) gets the generic contract: no crash,
 * errors are one line naming the file, and what is accepted reads whole.
 * Run under scripts/test-sanitize too, where ASan/UBSan catch the memory
 * and undefined-behaviour bugs themselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/optimizer.h"
#include "weft/trace.h"

#ifndef WEFT_TEST_DATA
#error "WEFT_TEST_DATA must name tests/unit/data"
#endif

static char scratch[512];

static const char *data(const char *rel)
{
    static char bufs[4][1024];
    static int k;
    char *b = bufs[k++ & 3];
    snprintf(b, sizeof bufs[0], "%s/%s", WEFT_TEST_DATA, rel);
    return b;
}

static void assert_one_line(const char *err, const char *name)
{
    assert_true(err[0] != 0);
    if (strchr(err, '\n'))
        fail_msg("error is not one line: '%s'", err);
    if (name && !strstr(err, name))
        fail_msg("error '%s' does not name %s", err, name);
}

static void copy_file(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    assert_non_null(f);
    assert_non_null(g);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        assert_int_equal(fwrite(buf, 1, n, g), n);
    fclose(f);
    assert_int_equal(fclose(g), 0);
}

/* Open, read every event, print the info view. Returns 1 if the trace was
 * read whole, 0 if it was rejected (with a one-line error naming it). */
static int read_trace(const char *path)
{
    char err[512] = "";
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t) {
        assert_one_line(err, path);
        return 0;
    }
    weft_event ev;
    uint64_t n = 0;
    int rc;
    while ((rc = weft_trace_next(t, &ev)) == 1)
        n++;
    if (rc == 0)
        assert_int_equal(n, weft_trace_event_count(t));
    else
        assert_one_line(weft_trace_error(t), path);
    FILE *devnull = fopen("/dev/null", "w");
    assert_non_null(devnull);
    int info = weft_trace_print_info(t, NULL, devnull);
    fclose(devnull);
    assert_int_equal(info != 0, rc != 0);
    weft_trace_close(t);
    return rc == 0;
}

/* Salvage a spool copied into the scratch folder; 1 if it became a trace. */
static int salvage(const char *spool_src)
{
    char trace[600], spool[620], err[512] = "";
    snprintf(trace, sizeof trace, "%s/salvaged.wtr", scratch);
    snprintf(spool, sizeof spool, "%s.spool", trace);
    unlink(trace);
    copy_file(spool_src, spool);
    if (weft_trace_salvage(trace, WEFT_TRACE_CRASHED, -11, err, sizeof err) != 0) {
        assert_one_line(err, spool);
        unlink(spool);
        return 0;
    }
    assert_int_equal(read_trace(trace), 1);
    unlink(trace);
    return 1;
}

static int parse_plan(const char *path, char *err, size_t errlen)
{
    optimizer_plan p;
    if (optimizer_plan_read(path, NULL, &p, err, errlen) != 0) {
        assert_one_line(err, path);
        return -1;
    }
    optimizer_plan_free(&p);
    return 0;
}

/* ---- the bugs, one by one ----------------------------------------------- */

/* weft info on a trace without shared variables called qsort(NULL, 0, ...)
 * (UBSan: null pointer passed as argument 1, trace_info.c). */
static void test_info_without_shared_vars(void **state)
{
    (void)state;
    assert_int_equal(read_trace(data("fuzz_trace/info_no_shared_vars_qsort_null.wtr")), 1);
}

/* Footer per-thread event counts that disagree with the blocks (their sum
 * still right) were accepted; plans are range-checked against them. */
static void test_footer_thread_counts_checked(void **state)
{
    (void)state;
    const char *path = data("fuzz_trace/footer_thread_events_mismatch.wtr");
    char err[512];
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    weft_event ev;
    int rc;
    while ((rc = weft_trace_next(t, &ev)) == 1)
        ;
    assert_int_equal(rc, -1);
    assert_non_null(strstr(weft_trace_error(t), "corrupt footer (thread 0 has"));
    assert_one_line(weft_trace_error(t), path);
    weft_trace_close(t);
}

/* A spool chunk with an empty payload made salvage compute NULL + 0
 * (UBSan: applying zero offset to null pointer, trace_merge.c). */
static void test_spool_empty_chunk(void **state)
{
    (void)state;
    salvage(data("fuzz_spool/empty_chunk_payload.spool"));
}

/* jansson's "near '...'" quoted a newline from the plan into the message. */
static void test_plan_json_error_one_line(void **state)
{
    (void)state;
    char err[512];
    assert_int_equal(parse_plan(data("fuzz_plan/newline_in_json_error.json"), err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "invalid escape"));
}

/* An unknown key holding "\n" was quoted into the message as is. */
static void test_plan_key_one_line(void **state)
{
    (void)state;
    char err[512];
    assert_int_equal(parse_plan(data("fuzz_plan/newline_in_key.json"), err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown key"));
}

/* ---- every kept input: the generic contract ------------------------------- */

static void each_file(const char *sub, void (*fn)(const char *))
{
    DIR *d = opendir(data(sub));
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/%s", WEFT_TEST_DATA, sub, e->d_name);
        fn(path);
        n++;
    }
    closedir(d);
    assert_true(n > 0);
}

static void trace_file(const char *path)
{
    read_trace(path);
}
static void spool_file(const char *path)
{
    salvage(path);
}
static void plan_file(const char *path)
{
    char err[512];
    parse_plan(path, err, sizeof err);
}

static void test_all_kept_inputs(void **state)
{
    (void)state;
    each_file("fuzz_trace", trace_file);
    each_file("fuzz_spool", spool_file);
    each_file("fuzz_plan", plan_file);
}

static void cleanup(void)
{
    char p[600];
    snprintf(p, sizeof p, "%s/salvaged.wtr", scratch);
    unlink(p);
    strcat(p, ".spool");
    unlink(p);
    rmdir(scratch);
}

int main(void)
{
    const char *base = getenv("WEFT_TEST_TMP");
    if (!base || !*base)
        base = "/tmp";
    mkdir(base, 0755);
    snprintf(scratch, sizeof scratch, "%s/weft-regress-XXXXXX", base);
    if (!mkdtemp(scratch)) {
        perror(scratch);
        return 1;
    }
    atexit(cleanup);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info_without_shared_vars),
        cmocka_unit_test(test_footer_thread_counts_checked),
        cmocka_unit_test(test_spool_empty_chunk),
        cmocka_unit_test(test_plan_json_error_one_line),
        cmocka_unit_test(test_plan_key_one_line),
        cmocka_unit_test(test_all_kept_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
