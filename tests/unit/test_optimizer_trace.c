/* optimizer_model_from_trace: a model read from a trace file equals the model
 * built from the same events in memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <weft/optimizer.h>

static void test_model_from_trace(void **state)
{
    (void)state;
    /* Thread 0 writes x at 10, 30 and y at 50; thread 1 writes x at 20, reads
     * it at 25 and writes it at 40; thread 2 writes y at 35 and exits. */
    weft_event t0[3] = {{.time = 10, .addr = 0x4000, .kind = WEFT_EV_WRITE, .size = 8},
                        {.time = 30, .addr = 0x4000, .kind = WEFT_EV_WRITE, .size = 8},
                        {.time = 50, .addr = 0x5000, .kind = WEFT_EV_WRITE, .size = 8}};
    weft_event t1[3] = {{.time = 20, .addr = 0x4000, .kind = WEFT_EV_RMW, .size = 8},
                        {.time = 25, .addr = 0x4000, .kind = WEFT_EV_READ, .size = 8},
                        {.time = 40, .addr = 0x4000, .kind = WEFT_EV_WRITE, .size = 8}};
    weft_event t2[2] = {{.time = 35, .addr = 0x5000, .kind = WEFT_EV_WRITE, .size = 8},
                        {.time = 36, .kind = WEFT_EV_THREAD_EXIT}};
    weft_event all[8];
    size_t n = 0;
    for (uint32_t i = 0; i < 3; i++) {
        t0[i].thread = 0, t0[i].seq = i, all[n++] = t0[i];
        t1[i].thread = 1, t1[i].seq = i, all[n++] = t1[i];
    }
    for (uint32_t i = 0; i < 2; i++)
        t2[i].thread = 2, t2[i].seq = i, all[n++] = t2[i];

    char path[] = "/tmp/weft-opt-trace-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char *argv[] = {"prog"};
    weft_trace_meta meta = {.binary_path = "prog", .argc = 1, .argv = argv};
    meta.settings.cpi = 1;
    meta.settings.ps_per_cycle = 1000;
    char err[256];
    weft_trace_writer *w = weft_trace_writer_open(path, &meta, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(weft_trace_writer_append(w, 0, t0, 3), 0);
    assert_int_equal(weft_trace_writer_append(w, 1, t1, 3), 0);
    assert_int_equal(weft_trace_writer_append(w, 2, t2, 2), 0);
    weft_trace_thread th[3] = {{.id = 0, .parent = UINT32_MAX, .events = 3},
                               {.id = 1, .parent = 0, .events = 3},
                               {.id = 2, .parent = 0, .events = 2}};
    weft_trace_summary sum = {.flags = WEFT_TRACE_COMPLETE, .nthreads = 3, .threads = th};
    assert_int_equal(weft_trace_writer_finish(w, &sum, err, sizeof err), 0);
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t)
        print_error("%s\n", err);
    assert_non_null(t);

    for (int reads = 0; reads <= 1; reads++) {
        optimizer_options o = optimizer_options_default();
        o.include_reads = reads;
        optimizer_model *a = optimizer_model_from_trace(t, &o, err, sizeof err);
        optimizer_model *b = optimizer_model_from_events(all, n, &o, err, sizeof err);
        assert_non_null(a);
        assert_non_null(b);
        size_t dim = optimizer_model_dim(b);
        assert_int_equal(optimizer_model_dim(a), dim);
        assert_int_equal(optimizer_model_threads(a), 3);
        assert_int_equal(optimizer_model_addresses(a), optimizer_model_addresses(b));
        for (size_t v = 0; v < dim; v++) {
            optimizer_var x, y;
            optimizer_model_var(a, v, &x);
            optimizer_model_var(b, v, &y);
            assert_int_equal(x.thread, y.thread);
            assert_int_equal(x.seq, y.seq);
            assert_int_equal(x.pc, y.pc);
            assert_int_equal(x.addr, y.addr);
            assert_int_equal(x.time, y.time);
            assert_int_equal(x.is_write, y.is_write);
        }
        uint64_t d[8] = {3, 0, 7, 1, 0, 2, 5, 4};
        assert_true(optimizer_fitness(a, d) == optimizer_fitness(b, d));
        optimizer_model_free(a);
        optimizer_model_free(b);
    }
    weft_trace_close(t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_model_from_trace)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
