/* `info` and `export` on hand-made traces: the per-variable pattern lines,
 * pair counts, and each export format's header (the Chrome JSON must parse). */
#include "test_trace_common.h"

#include <jansson.h>

#define SUM 0x4000
#define LOOP 0x5000
#define MIXED 0x7000
#define PRIVATE 0x6000

typedef struct built {
    char path[640];
    uint64_t loop_addr, pc;
} built;

/* Three threads: all touch `sum` (T1 and T2 write it at the same time),
 * T1 and T2 each do 50 x read-write on the loop variable, T0 has a long
 * irregular pattern on MIXED and a private address. */
static void build(built *b, const char *name, uint64_t loop_addr, uint64_t pc)
{
    snprintf(b->path, sizeof b->path, "%s", tt_path(name));
    b->loop_addr = loop_addr;
    b->pc = pc;
    weft_event t0[64], t1[128], t2[128];
    size_t n0 = 0, n1 = 0, n2 = 0;
    t0[n0++] = tt_ev(0, WEFT_EV_THREAD_START, UINT32_MAX, 0, 0); /* no creator */
    t0[n0++] = tt_ev(1, WEFT_EV_WRITE, SUM, pc, 8);
    t0[n0++] = tt_ev(2, WEFT_EV_READ, MIXED, pc, 8);
    for (int i = 0; i < 20; i++) {
        t0[n0++] = tt_ev(3 + 2 * (uint64_t)i, WEFT_EV_READ, MIXED, pc, 8);
        t0[n0++] = tt_ev(4 + 2 * (uint64_t)i, WEFT_EV_WRITE, MIXED, pc, 8);
    }
    for (int i = 0; i < 4; i++)
        t0[n0++] = tt_ev(50 + (uint64_t)i, WEFT_EV_WRITE, MIXED, pc, 8);
    t0[n0++] = tt_ev(60, WEFT_EV_WRITE, PRIVATE, pc, 8);
    t0[n0++] = tt_ev(500, WEFT_EV_THREAD_EXIT, 0, 0, 0);

    t1[n1++] = tt_ev(5, WEFT_EV_THREAD_START, 0, 0, 0); /* created by T0 */
    t1[n1++] = tt_ev(6, WEFT_EV_READ, MIXED, pc, 8);
    t1[n1++] = tt_ev(10, WEFT_EV_READ, SUM, pc, 8);
    t1[n1++] = tt_ev(11, WEFT_EV_WRITE, SUM, pc, 8);
    t2[n2++] = tt_ev(6, WEFT_EV_THREAD_START, 0, 0, 0);
    t2[n2++] = tt_ev(10, WEFT_EV_READ, SUM, pc, 8);
    t2[n2++] = tt_ev(11, WEFT_EV_WRITE, SUM, pc, 8);
    for (int i = 0; i < 50; i++) {
        uint64_t base = 100 + 4 * (uint64_t)i;
        t1[n1++] = tt_ev(base, WEFT_EV_READ, loop_addr, pc, 8);
        t1[n1++] = tt_ev(base + 1, WEFT_EV_WRITE, loop_addr, pc + 4, 8);
        t2[n2++] = tt_ev(base + 2, WEFT_EV_READ, loop_addr, pc, 8);
        t2[n2++] = tt_ev(base + 3, WEFT_EV_WRITE, loop_addr, pc + 4, 8);
    }
    t1[n1++] = tt_ev(400, WEFT_EV_READ, loop_addr + 4, pc, 4);
    t2[n2++] = tt_ev(401, WEFT_EV_READ, loop_addr + 4, pc, 4);
    t1[n1++] = tt_ev(450, WEFT_EV_THREAD_EXIT, 0, 0, 0);
    t2[n2++] = tt_ev(460, WEFT_EV_THREAD_EXIT, 0, 0, 0);
    weft_trace_thread th[3] = {
        {.parent = UINT32_MAX, .tid = 100, .start_time = 0, .end_time = 500, .insns = 500},
        {.parent = 0, .tid = 101, .start_time = 5, .end_time = 450, .insns = 445},
        {.parent = 0, .tid = 0, .start_time = 6, .end_time = 460, .insns = 454}, /* tid unknown */
    };
    weft_trace_summary sum = {.makespan = 500, .nthreads = 3, .threads = th};
    weft_event *s[] = {t0, t1, t2};
    size_t c[] = {n0, n1, n2};
    tt_write(b->path, 3, s, c, &sum);
}

static char *info_text(const char *path, weft_symbols *syms)
{
    char err[512];
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(weft_trace_print_info(t, syms, -1, f), 0);
    fclose(f);
    weft_trace_close(t);
    return text;
}

static void expect_line(const char *text, const char *line)
{
    if (!strstr(text, line))
        fail_msg("info output lacks\n%s\n---- got ----\n%s", line, text);
}

static void test_info_without_symbols(void **state)
{
    (void)state;
    built b;
    build(&b, "info.wtr", LOOP, 0x400000);
    char *text = info_text(b.path, NULL);
    expect_line(text, "\n  0x4000: T0 W, T1 RW, T2 RW; write-write pairs: 3 cross-thread, "
                      "1 aligned\n");
    expect_line(text, "\n  0x5000: T1 (RW)x50, T2 (RW)x50; write-write pairs: 2500 "
                      "cross-thread, 0 aligned\n");
    expect_line(text, "\n  0x7000: T0 R(RW)x20Wx4, T1 R; write-write pairs: 0 cross-thread, "
                      "0 aligned\n");
    assert_null(strstr(text, "0x6000")); /* private to T0 */
    expect_line(text, "flags          complete\n");
    expect_line(text, "makespan       500 ns\n");
    expect_line(text, "argv           prog 'arg with space' 'ümlaut,\"quoted\"'\n");
    expect_line(text, "exact, cpi 3");
    /* Thread table row: id, tid, parent, start, end, insns, events, reads, writes, rmw. */
    char *row = strstr(text, "\n  T1 ");
    assert_non_null(row);
    unsigned long long tid, start, end, insns, events, reads, writes, rmw;
    char parent[16];
    assert_int_equal(sscanf(row, " T1 %llu %15s %llu %llu %llu %llu %llu %llu %llu", &tid, parent,
                            &start, &end, &insns, &events, &reads, &writes, &rmw),
                     9);
    assert_int_equal(tid, 101);
    assert_string_equal(parent, "T0");
    assert_int_equal(end, 450);
    assert_int_equal(events, 106);
    assert_int_equal(reads, 53);
    assert_int_equal(writes, 51);
    assert_int_equal(rmw, 0);
    /* An unknown tid (0, as the tracer records) and the main thread's missing
     * creator are "-", never a number. */
    assert_non_null(strstr(text, "\n  T0      100      -       "));
    assert_non_null(strstr(text, "\n  T2      -        T0      "));
    assert_null(strstr(text, "4294967295"));
    free(text);
}

static void test_info_with_symbols(void **state)
{
    (void)state;
    char err[512];
    weft_symbols *syms = weft_symbols_open(WEFT_TEST_FIXTURE, err, sizeof err);
    if (!syms)
        fail_msg("%s", err);
    uint64_t counter, worker;
    assert_int_equal(weft_symbols_lookup(syms, "counter", &counter, NULL), 0);
    assert_int_equal(weft_symbols_function(syms, "worker", &worker, NULL), 0);
    built b;
    build(&b, "info-syms.wtr", counter, worker + 4);
    char *text = info_text(b.path, syms);
    expect_line(text, "\n  counter: T1 (RW)x50, T2 (RW)x50; write-write pairs: 2500 "
                      "cross-thread, 0 aligned\n");
    expect_line(text, "\n  counter+4: T1 R, T2 R; write-write pairs: 0 cross-thread");
    free(text);
    weft_symbols_close(syms);
}

static json_t *find_event(json_t *events, const char *key, const char *value)
{
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        const char *v = json_string_value(json_object_get(e, key));
        if (v && strncmp(v, value, strlen(value)) == 0)
            return e;
    }
    return NULL;
}

static void test_export_chrome(void **state)
{
    (void)state;
    built b;
    build(&b, "chrome.wtr", LOOP, 0x400000);
    char err[512];
    weft_trace *t = weft_trace_open(b.path, err, sizeof err);
    assert_non_null(t);
    const char *out = tt_path("trace.json");
    if (weft_trace_export(t, NULL, WEFT_EXPORT_CHROME, out, err, sizeof err) != 0)
        fail_msg("%s", err);
    weft_trace_close(t);

    size_t len;
    char *text = (char *)tt_slurp(out, &len);
    assert_int_equal(strncmp(text, "{\"traceEvents\":[\n", 17), 0);
    assert_null(strstr(text, "4294967295"));
    assert_null(strstr(text, "0xffffffff\""));
    free(text);
    json_error_t je;
    json_t *root = json_load_file(out, 0, &je);
    if (!root)
        fail_msg("%s:%d: %s", out, je.line, je.text);
    json_t *events = json_object_get(root, "traceEvents");
    assert_true(json_is_array(events));
    json_t *e = find_event(events, "name", "thread_name");
    assert_non_null(e);
    int found = 0;
    size_t i;
    json_array_foreach(events, i, e)
    {
        const char *n = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
        if (n && strcmp(n, "T1 (tid 101)") == 0)
            found++;
        if (n && strcmp(n, "T2") == 0) /* its tid is unknown */
            found++;
        if (n && strcmp(n, "conflicts") == 0)
            found++;
    }
    assert_int_equal(found, 3);
    /* Thread starts name their creator by weft's id; the main thread's is "-". */
    e = find_event(events, "name", "thread_start (by -)");
    assert_non_null(e);
    assert_int_equal(json_integer_value(json_object_get(e, "tid")), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(e, "args"), "creator")),
                        "-");
    assert_null(json_object_get(json_object_get(e, "args"), "addr"));
    e = find_event(events, "name", "thread_start (by T0)");
    assert_non_null(e);
    assert_int_equal(json_integer_value(json_object_get(e, "tid")), 1);
    json_array_foreach(events, i, e)
    {
        json_t *a = json_object_get(e, "args");
        if (strcmp(json_string_value(json_object_get(e, "ph")), "X") != 0)
            continue;
        json_int_t tid = json_integer_value(json_object_get(e, "tid"));
        assert_string_equal(json_string_value(json_object_get(a, "tid")), tid == 0   ? "100"
                                                                          : tid == 1 ? "101"
                                                                                     : "-");
        assert_string_equal(json_string_value(json_object_get(a, "parent")), tid ? "T0" : "-");
    }
    e = find_event(events, "name", "aligned W-W 0x4000");
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "cat")), "conflict");
    assert_true(json_number_value(json_object_get(e, "ts")) > 0.0105 &&
                json_number_value(json_object_get(e, "ts")) < 0.0115); /* 11 ns in us */
    assert_non_null(find_event(events, "ph", "s"));
    assert_non_null(find_event(events, "ph", "f"));
    e = find_event(events, "ph", "X");
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "cat")), "thread");
    e = find_event(events, "cat", "write");
    assert_non_null(e);
    assert_int_equal(strncmp(json_string_value(json_object_get(e, "name")), "W ", 2), 0);
    assert_non_null(find_event(events, "cat", "read"));
    json_decref(root);
}

static void test_export_vcd_csv(void **state)
{
    (void)state;
    char err[512];
    weft_symbols *syms = weft_symbols_open(WEFT_TEST_FIXTURE, err, sizeof err);
    assert_non_null(syms);
    uint64_t counter, worker;
    assert_int_equal(weft_symbols_lookup(syms, "counter", &counter, NULL), 0);
    assert_int_equal(weft_symbols_function(syms, "worker", &worker, NULL), 0);
    built b;
    build(&b, "export.wtr", counter, worker + 4);
    weft_trace *t = weft_trace_open(b.path, err, sizeof err);
    assert_non_null(t);

    const char *vcd = tt_path("trace.vcd");
    assert_int_equal(weft_trace_export(t, syms, WEFT_EXPORT_VCD, vcd, err, sizeof err), 0);
    size_t n;
    char *text = (char *)tt_slurp(vcd, &n);
    assert_int_equal(strncmp(text, "$comment weft trace of /guest/bin/prog $end\n", 44), 0);
    assert_non_null(strstr(text, "$timescale 1ns $end\n"));
    assert_non_null(strstr(text, "$scope module T2 $end\n"));
    assert_non_null(strstr(text, "$enddefinitions $end\n"));
    assert_non_null(strstr(text, "\n#11\n"));
    assert_null(strstr(text, "4294967295"));
    free(text);

    const char *csv = tt_path("trace.csv");
    assert_int_equal(weft_trace_export(t, syms, WEFT_EXPORT_CSV, csv, err, sizeof err), 0);
    text = (char *)tt_slurp(csv, &n);
    const char *hdr = "time,thread,seq,kind,addr,size,pc,symbol,function,file,line\n";
    assert_int_equal(strncmp(text, hdr, strlen(hdr)), 0);
    size_t lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += text[i] == '\n';
    assert_int_equal(lines, weft_trace_event_count(t) + 1);
    assert_non_null(strstr(text, ",counter,worker,"));
    assert_non_null(strstr(text, ",counter+4,worker,"));
    assert_non_null(strstr(text, "lost_update.c,"));
    /* thread_start's addr column is the creator: a thread number, "-" for none */
    assert_non_null(strstr(text, "\n0,0,0,thread_start,-,0,0x0,"));
    assert_non_null(strstr(text, "\n5,1,0,thread_start,0,0,0x0,"));
    assert_null(strstr(text, "0xffffffff,"));
    assert_null(strstr(text, "4294967295"));
    free(text);

    /* An unwritable destination: one line naming it, nothing left behind. */
    const char *bad = "/nonexistent-weft-dir/out.json";
    assert_int_equal(weft_trace_export(t, NULL, WEFT_EXPORT_CHROME, bad, err, sizeof err), -1);
    assert_int_equal(strncmp(err, bad, strlen(bad)), 0);
    assert_non_null(strstr(err, "cannot create"));
    assert_null(strchr(err, '\n'));

    /* Disk full while exporting. */
    const char *full = tt_path("full.csv");
    char link[700];
    snprintf(link, sizeof link, "%s.tmp.%ld", full, (long)getpid());
    assert_int_equal(symlink("/dev/full", link), 0);
    assert_int_equal(weft_trace_export(t, syms, WEFT_EXPORT_CSV, full, err, sizeof err), -1);
    assert_int_equal(strncmp(err, full, strlen(full)), 0);
    assert_non_null(strstr(err, "No space left on device"));
    assert_int_not_equal(access(full, F_OK), 0);
    weft_trace_close(t);
    weft_symbols_close(syms);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info_without_symbols),
        cmocka_unit_test(test_info_with_symbols),
        cmocka_unit_test(test_export_chrome),
        cmocka_unit_test(test_export_vcd_csv),
    };
    return cmocka_run_group_tests_name("trace_views", tests, NULL, NULL);
}
