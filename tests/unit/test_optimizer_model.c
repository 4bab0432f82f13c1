/* optimizer model: Eq. 2/Eq. 4 on hand-computed traces, fast == naive on
 * random traces, incremental == full recomputation, alignments, and the
 * searches on a small 3-thread problem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/optimizer.h>

#define X 0x4000u
#define Y 0x5000u

static weft_event acc(uint32_t thread, uint64_t seq, uint64_t time, uint8_t kind, uint64_t addr)
{
    weft_event e = {.time = time,
                    .seq = seq,
                    .addr = addr,
                    .pc = 0x400000 + 4 * seq,
                    .thread = thread,
                    .kind = kind,
                    .size = 8};
    return e;
}

/* Thread 0: W x@10, W x@30, W y@50 (y is private to thread 0).
 * Thread 1: W x@20, R x@25, W x@40, and a syscall that is not an access.
 * Listed out of order on purpose: the model orders by (thread, seq). */
static size_t trace_a(weft_event *ev)
{
    size_t n = 0;
    ev[n++] = acc(1, 2, 40, WEFT_EV_WRITE, X);
    ev[n++] = acc(0, 0, 10, WEFT_EV_WRITE, X);
    ev[n++] = acc(1, 0, 20, WEFT_EV_RMW, X);
    ev[n++] = acc(0, 1, 30, WEFT_EV_WRITE, X);
    ev[n++] = acc(1, 1, 25, WEFT_EV_READ, X);
    ev[n++] = acc(0, 2, 50, WEFT_EV_WRITE, Y);
    ev[n++] = acc(1, 3, 60, WEFT_EV_SYSCALL, 93);
    return n;
}

static optimizer_model *model_a(int include_reads)
{
    weft_event ev[8];
    size_t n = trace_a(ev);
    optimizer_options o = optimizer_options_default();
    o.include_reads = include_reads;
    char err[128];
    optimizer_model *m = optimizer_model_from_events(ev, n, &o, err, sizeof err);
    assert_non_null(m);
    return m;
}

static uint64_t tau_of(optimizer_model *m, size_t v)
{
    optimizer_var x;
    assert_int_equal(optimizer_model_var(m, v, &x), 0);
    return x.tau;
}

static void test_eq2_eq4_writes(void **state)
{
    (void)state;
    optimizer_model *m = model_a(0);
    /* Kept: the four writes to x (the rmw counts as a write); y is private
     * and the read is ignored without include_reads.
     * v0 = T0 W@10, v1 = T0 W@30, v2 = T1 W@20 (rmw), v3 = T1 W@40. */
    assert_int_equal(optimizer_model_dim(m), 4);
    assert_int_equal(optimizer_model_threads(m), 2);
    assert_int_equal(optimizer_model_addresses(m), 1);
    optimizer_var v;
    assert_int_equal(optimizer_model_var(m, 2, &v), 0);
    assert_int_equal(v.thread, 1);
    assert_int_equal(v.seq, 0);
    assert_int_equal(v.time, 20);
    assert_true(v.is_write);
    assert_int_equal(optimizer_model_var(m, 4, &v), -1);

    /* Δ = 0. v0@10 -> closest later T1 write is @20: d 10, 1 - 1/11 = 10/11.
     * v1@30 -> T1@40: 10/11. v2@20 -> T0@30: 10/11. v3@40: no later T0
     * write, no term. Total 30/11. */
    uint64_t d0[4] = {0, 0, 0, 0};
    assert_float_equal(optimizer_fitness(m, d0), 30.0 / 11, 1e-12);
    assert_int_equal(optimizer_aligned(m), 0);

    /* Δ before v2 = 10 shifts v2 and v3 (Eq. 2): τ = 10, 30, 30, 50.
     * v0@10 -> T1@30: 20/21. v1@30 -> T1@30: 0. v2@30 -> T0@30: 0.
     * v3@50: none. Total 20/21 with two zero terms. */
    uint64_t d1[4] = {0, 0, 10, 0};
    assert_float_equal(optimizer_fitness(m, d1), 20.0 / 21, 1e-12);
    assert_int_equal(optimizer_aligned(m), 2);
    assert_int_equal(tau_of(m, 3), 50);

    /* Δ = (5, 0, 0, 7): τ = 15, 35 | 20, 47.
     * v0@15 -> 20: 5/6. v1@35 -> 47: 12/13. v2@20 -> 35: 15/16. v3: none. */
    uint64_t d2[4] = {5, 0, 0, 7};
    double want = 5.0 / 6 + 12.0 / 13 + 15.0 / 16;
    assert_float_equal(optimizer_fitness(m, d2), want, 1e-12);
    assert_int_equal(tau_of(m, 0), 15);
    assert_int_equal(tau_of(m, 1), 35);
    assert_int_equal(tau_of(m, 2), 20);
    assert_int_equal(tau_of(m, 3), 47);
    size_t z;
    assert_float_equal(optimizer_fitness_naive(m, d2, &z), want, 1e-12);
    assert_int_equal(z, 0);
    optimizer_model_free(m);
}

static void test_eq4_with_reads(void **state)
{
    (void)state;
    optimizer_model *m = model_a(1);
    /* v0 = T0 W@10, v1 = T0 W@30, v2 = T1 W@20, v3 = T1 R@25, v4 = T1 W@40. */
    assert_int_equal(optimizer_model_dim(m), 5);
    /* Δ = 0: writes look for any later access of the other thread, reads
     * for later writes. v0 -> T1 W@20: 10/11. v1@30 -> T1 W@40 (R@25 is
     * earlier): 10/11. v2@20 -> T0 W@30: 10/11. v3 R@25 -> T0 W@30: 5/6.
     * v4: none. */
    uint64_t d0[5] = {0};
    assert_float_equal(optimizer_fitness(m, d0), 30.0 / 11 + 5.0 / 6, 1e-12);
    /* A delay of 5 before the read: R@30 and W@45. v1 W@30 -> T1 R@30: 0.
     * v3 R@30 -> T0 W@30: 0. v0 -> T1 W@20: 10/11. v2@20 -> T0 W@30: 10/11. */
    uint64_t d1[5] = {0, 0, 0, 5, 0};
    assert_float_equal(optimizer_fitness(m, d1), 20.0 / 11, 1e-12);
    assert_int_equal(optimizer_aligned(m), 2);
    optimizer_pair p[4];
    assert_int_equal(optimizer_alignments(m, p, 4), 2);
    for (int i = 0; i < 2; i++) {
        assert_int_not_equal(p[i].thread_a, p[i].thread_b);
        assert_int_equal(p[i].aligned_time, 30);
        assert_int_equal(tau_of(m, p[i].va), tau_of(m, p[i].vb));
    }
    optimizer_model_free(m);
}

static void test_granule_and_bad_options(void **state)
{
    (void)state;
    weft_event ev[2] = {acc(0, 0, 10, WEFT_EV_WRITE, 0x1000), acc(1, 0, 10, WEFT_EV_WRITE, 0x1004)};
    optimizer_options o = optimizer_options_default();
    optimizer_model *m = optimizer_model_from_events(ev, 2, &o, NULL, 0);
    assert_int_equal(optimizer_model_dim(m), 0); /* different addresses */
    assert_true(optimizer_fitness(m, NULL) == 0);
    optimizer_model_free(m);
    o.granule = 8;
    m = optimizer_model_from_events(ev, 2, &o, NULL, 0);
    assert_int_equal(optimizer_model_dim(m), 2);
    uint64_t d[2] = {0, 0};
    assert_true(optimizer_fitness(m, d) == 0);
    assert_int_equal(optimizer_aligned(m), 2); /* both see each other at d = 0 */
    optimizer_model_free(m);
    o.granule = 0;
    char err[128];
    assert_null(optimizer_model_from_events(ev, 2, &o, err, sizeof err));
    assert_string_equal(err, "optimizer: granule must be at least 1 byte");
}

/* ---- random traces ------------------------------------------------------------ */

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(uint64_t n) /* xorshift64: the test needs no GSL */
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state % n;
}

static size_t random_trace(weft_event *ev, size_t cap, int *include_reads)
{
    uint32_t threads = 2 + (uint32_t)rnd(4);
    uint64_t naddr = 1 + rnd(4);
    uint64_t span = rnd(2) ? 30 : 500; /* small spans force ties */
    size_t n = 0;
    for (uint32_t t = 0; t < threads; t++) {
        size_t k = rnd(12);
        uint64_t time = rnd(span);
        for (size_t s = 0; s < k && n < cap; s++) {
            time += rnd(span / 10 + 1); /* per-thread times never decrease */
            uint8_t kind = (uint8_t)rnd(3);
            ev[n++] = acc(t, s, time, kind, 0x1000 + 8 * rnd(naddr));
        }
    }
    *include_reads = (int)rnd(2);
    return n;
}

static void random_delays(uint64_t *d, size_t n, uint64_t dmax)
{
    for (size_t i = 0; i < n; i++)
        d[i] = rnd(4) ? rnd(dmax + 1) : 0;
}

static void test_fast_equals_naive(void **state)
{
    (void)state;
    weft_event ev[64];
    uint64_t d[64];
    size_t traces = 0, with_alignment = 0;
    for (int trial = 0; trial < 400; trial++) {
        int reads;
        size_t n = random_trace(ev, 64, &reads);
        optimizer_options o = optimizer_options_default();
        o.include_reads = reads;
        optimizer_model *m = optimizer_model_from_events(ev, n, &o, NULL, 0);
        assert_non_null(m);
        size_t dim = optimizer_model_dim(m);
        traces += dim >= 2;
        for (int k = 0; k < 5; k++) {
            random_delays(d, dim, k == 0 ? 0 : 60);
            size_t zn;
            double fast = optimizer_fitness(m, d);
            double naive = optimizer_fitness_naive(m, d, &zn);
            assert_float_equal(fast, naive, 1e-9);
            assert_int_equal(optimizer_aligned(m), zn);
            with_alignment += zn > 0;
        }
        optimizer_model_free(m);
    }
    assert_true(traces >= 200);        /* traces with at least one cross-thread pair */
    assert_true(with_alignment > 100); /* the zero-term path is exercised */
}

/* Addresses with many events: the full evaluation sorts those by merging
 * per-thread runs (model_sort.c) rather than by insertion (up to 32). Half
 * the traces let a thread's times go backwards, which breaks the runs the
 * merge expects to find; the sort must still be right. Each point is also
 * evaluated again after an unrelated one: the result depends only on the
 * point, bit for bit, whatever order the previous evaluation left. */
static void test_fast_equals_naive_long_addresses(void **state)
{
    (void)state;
    enum { CAP = 400 };
    static weft_event ev[CAP];
    static uint64_t d[CAP], other[CAP];
    size_t long_addresses = 0, with_alignment = 0;
    for (int trial = 0; trial < 60; trial++) {
        uint32_t threads = 2 + (uint32_t)rnd(7);
        uint64_t naddr = 1 + rnd(3);
        int monotone = trial % 2 == 0;
        size_t n = 0, per_addr[3] = {0};
        for (uint32_t t = 0; t < threads; t++) {
            size_t k = 5 + rnd(CAP / threads - 5);
            uint64_t time = rnd(100);
            for (size_t s = 0; s < k && n < CAP; s++) {
                if (monotone || rnd(3))
                    time += rnd(20);
                else
                    time -= time > 40 ? rnd(40) : 0;
                uint64_t a = rnd(naddr);
                per_addr[a]++;
                ev[n++] = acc(t, s, time, (uint8_t)rnd(3), 0x1000 + 8 * a);
            }
        }
        for (uint64_t a = 0; a < naddr; a++)
            long_addresses += per_addr[a] > 32;
        optimizer_options o = optimizer_options_default();
        o.include_reads = (int)rnd(2);
        optimizer_model *m = optimizer_model_from_events(ev, n, &o, NULL, 0);
        assert_non_null(m);
        size_t dim = optimizer_model_dim(m);
        for (int k = 0; k < 4; k++) {
            random_delays(d, dim, k == 0 ? 0 : k == 1 ? 5 : 400);
            random_delays(other, dim, 400);
            size_t zn;
            double fast = optimizer_fitness(m, d);
            double naive = optimizer_fitness_naive(m, d, &zn);
            assert_float_equal(fast, naive, 1e-9);
            assert_int_equal(optimizer_aligned(m), zn);
            with_alignment += zn > 0;
            optimizer_fitness(m, other);
            assert_true(optimizer_fitness(m, d) == fast);
            assert_int_equal(optimizer_aligned(m), zn);
        }
        optimizer_model_free(m);
    }
    assert_true(long_addresses >= 60); /* the merge path is what is tested */
    assert_true(with_alignment > 40);
}

static void test_incremental_equals_full(void **state)
{
    (void)state;
    weft_event ev[64];
    uint64_t d[64];
    for (int trial = 0; trial < 300; trial++) {
        int reads;
        size_t n = random_trace(ev, 64, &reads);
        optimizer_options o = optimizer_options_default();
        o.include_reads = reads;
        optimizer_model *m = optimizer_model_from_events(ev, n, &o, NULL, 0);
        optimizer_model *ref = optimizer_model_from_events(ev, n, &o, NULL, 0);
        size_t dim = optimizer_model_dim(m);
        if (dim == 0) {
            optimizer_model_free(m);
            optimizer_model_free(ref);
            continue;
        }
        random_delays(d, dim, 60);
        double f = optimizer_fitness(m, d);
        for (int k = 0; k < 60; k++) {
            size_t v = rnd(dim);
            uint64_t old = d[v];
            d[v] = rnd(4) ? rnd(61) : 0;
            f = optimizer_fitness_move(m, v, d[v]);
            /* Bit-exact against a full evaluation of the same point. */
            assert_true(f == optimizer_fitness(ref, d));
            assert_int_equal(optimizer_aligned(m), optimizer_aligned(ref));
            for (size_t i = 0; i < dim; i++)
                assert_int_equal(tau_of(m, i), tau_of(ref, i));
            if (k % 3 == 0) { /* an undo restores the previous value exactly */
                double before = optimizer_fitness(ref, d);
                uint64_t now = d[v];
                d[v] = old;
                double back = optimizer_fitness_move(m, v, old);
                assert_true(back == optimizer_fitness(ref, d));
                assert_int_equal(optimizer_aligned(m), optimizer_aligned(ref));
                for (size_t i = 0; i < dim; i++)
                    assert_int_equal(tau_of(m, i), tau_of(ref, i));
                d[v] = now;
                assert_true(optimizer_fitness_move(m, v, now) == before);
            }
        }
        optimizer_model_free(m);
        optimizer_model_free(ref);
    }
}

/* ---- the searches on a small 3-thread problem ------------------------------------ */

/* Bhattacharya et al. Table 1 "Average of Numbers" shape: W | RW | RW on one variable,
 * plus a second variable written by threads 1 and 2, with times far apart so
 * that no alignment exists without delays. */
static optimizer_model *three_threads(size_t writes_per_thread)
{
    weft_event ev[256];
    size_t n = 0;
    for (uint32_t t = 0; t < 3; t++) {
        uint64_t time = 1000 + 777 * t;
        for (size_t s = 0; s < writes_per_thread; s++) {
            ev[n++] = acc(t, 2 * s, time, WEFT_EV_READ, X);
            time += 13 + 5 * t;
            ev[n++] = acc(t, 2 * s + 1, time, WEFT_EV_WRITE, (s + t) % 2 ? X : Y);
            time += 101 + 37 * t;
        }
    }
    optimizer_model *m = optimizer_model_from_events(ev, n, NULL, NULL, 0);
    assert_non_null(m);
    return m;
}

static void test_searches_find_alignment(void **state)
{
    (void)state;
    optimizer_model *m = three_threads(2);
    uint64_t zero[16] = {0};
    optimizer_fitness(m, zero);
    assert_int_equal(optimizer_aligned(m), 0);
    search_problem p = optimizer_search_problem(m);
    for (int alg = SEARCH_RND; alg <= SEARCH_SA; alg++) {
        search_result r[2];
        for (int k = 0; k < 2; k++) {
            search_config c = search_config_default(1000);
            c.algorithm = (search_algorithm)alg;
            c.seed = 2024;
            assert_int_equal(search_run(&p, &c, &r[k], NULL, 0), 0);
            assert_true(r[k].hit);
            /* The hit vector really aligns two writes of different threads. */
            optimizer_fitness(m, r[k].hit_x);
            optimizer_pair pair;
            assert_true(optimizer_alignments(m, &pair, 1) >= 1);
            assert_int_not_equal(pair.thread_a, pair.thread_b);
            assert_int_equal(tau_of(m, pair.va), tau_of(m, pair.vb));
        }
        print_message("%-3s: alignment after %llu evaluations (dim %zu)\n",
                      search_algorithm_name((search_algorithm)alg),
                      (unsigned long long)r[0].evals_to_hit, p.dim);
        assert_int_equal(r[0].evals_to_hit, r[1].evals_to_hit);
        assert_true(r[0].best_fitness == r[1].best_fitness);
        assert_memory_equal(r[0].hit_x, r[1].hit_x, p.dim * sizeof(uint64_t));
        assert_memory_equal(r[0].best_x, r[1].best_x, p.dim * sizeof(uint64_t));
        search_result_free(&r[0]);
        search_result_free(&r[1]);
    }
    optimizer_model_free(m);
}

/* Not a timed assertion: prints the cost of 10^6 SA evaluations on a
 * ~20-write, 3-thread problem for the record. */
static void test_sa_million_evaluations(void **state)
{
    (void)state;
    optimizer_model *m = three_threads(7);
    search_problem p = optimizer_search_problem(m);
    search_config c = search_config_default(10000000);
    c.stop_on_target = 0;
    search_result r;
    assert_int_equal(search_run(&p, &c, &r, NULL, 0), 0);
    assert_int_equal(r.evaluations, 1000000);
    print_message("SA: %llu evaluations on %zu writes, 3 threads: %.3f s (%.0f ns/evaluation)\n",
                  (unsigned long long)r.evaluations, p.dim, r.seconds,
                  r.seconds * 1e9 / (double)r.evaluations);
    search_result_free(&r);
    optimizer_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eq2_eq4_writes),
        cmocka_unit_test(test_eq4_with_reads),
        cmocka_unit_test(test_granule_and_bad_options),
        cmocka_unit_test(test_fast_equals_naive),
        cmocka_unit_test(test_fast_equals_naive_long_addresses),
        cmocka_unit_test(test_incremental_equals_full),
        cmocka_unit_test(test_searches_find_alignment),
        cmocka_unit_test(test_sa_million_evaluations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
