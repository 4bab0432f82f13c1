/* optimizer exact solver: the candidate pairs against brute force, each pair
 * aligned by its single delay, the greedy selection's consistency, and its
 * cost on 10^5 writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <weft/optimizer.h>

static weft_event wr(uint32_t thread, uint64_t seq, uint64_t time, uint8_t kind, uint64_t addr)
{
    weft_event e = {
        .time = time, .seq = seq, .addr = addr, .pc = 0x1000 + seq, .thread = thread, .kind = kind};
    return e;
}

static uint64_t tau_of(optimizer_model *m, size_t v)
{
    optimizer_var x;
    assert_int_equal(optimizer_model_var(m, v, &x), 0);
    return x.tau;
}

static void test_hand_example(void **state)
{
    (void)state;
    /* T0: W@10 (v0), W@30 (v1); T1: W@20 (v2), W@40 (v3), one address.
     * Candidates (a, closest later b of the other thread, delay):
     *   v0 -> v2 (20 - 10 = 10), v1 -> v3 (10), v2 -> v1 (10); v3 has none.
     * Ranked by delay, then a: (v0,v2), (v1,v3), (v2,v1). */
    weft_event ev[4] = {wr(0, 0, 10, WEFT_EV_WRITE, 8), wr(0, 1, 30, WEFT_EV_WRITE, 8),
                        wr(1, 0, 20, WEFT_EV_WRITE, 8), wr(1, 1, 40, WEFT_EV_WRITE, 8)};
    optimizer_model *m = optimizer_model_from_events(ev, 4, NULL, NULL, 0);
    optimizer_candidate *p;
    size_t n;
    assert_int_equal(optimizer_exact_pairs(m, &p, &n, NULL, 0), 0);
    assert_int_equal(n, 3);
    const size_t want[3][2] = {{0, 2}, {1, 3}, {2, 1}};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(p[i].va, want[i][0]);
        assert_int_equal(p[i].vb, want[i][1]);
        assert_int_equal(p[i].delay, 10);
    }
    /* Greedy: (v0,v2) takes Δ=10 before v0, which also moves v1 to 40 =
     * v3's time, so (v1,v3) is taken with Δ=0; (v2,v1) would move v3, a
     * member of a taken pair, and is refused. */
    uint64_t delta[4];
    optimizer_pair *c;
    size_t nc;
    assert_int_equal(optimizer_exact_select(m, p, n, 0, delta, &c, &nc, NULL, 0), 0);
    assert_int_equal(nc, 2);
    assert_int_equal(c[0].applied, 10);
    assert_int_equal(c[0].aligned_time, 20);
    assert_int_equal(c[1].applied, 0);
    assert_int_equal(c[1].aligned_time, 40);
    assert_int_equal(c[1].thread_a, 0);
    assert_int_equal(c[1].seq_a, 1);
    assert_int_equal(c[1].thread_b, 1);
    assert_int_equal(c[1].seq_b, 1);
    assert_int_equal(c[1].time_b, 40);
    const uint64_t want_delta[4] = {10, 0, 0, 0};
    assert_memory_equal(delta, want_delta, sizeof delta);
    optimizer_injection inj;
    optimizer_injection_for_var(m, c[0].va, c[0].applied, &c[0], &inj);
    assert_int_equal(inj.thread, 0);
    assert_int_equal(inj.seq, 0);
    assert_int_equal(inj.pc, 0x1000);
    assert_int_equal(inj.delay_ns, 10);
    assert_null(inj.function);
    assert_true(inj.has_predicted);
    assert_int_equal(inj.predicted.thread_b, 1);
    assert_int_equal(inj.predicted.seq_b, 0);
    assert_int_equal(inj.predicted.address, 8);
    assert_int_equal(inj.predicted.time, 20);
    /* Under that one delay every term of Eq. 4 is 0. */
    assert_true(optimizer_fitness(m, delta) == 0);
    assert_int_equal(optimizer_aligned(m), 4);
    /* A bound on a single delay keeps the solver from taking it. */
    free(c);
    assert_int_equal(optimizer_exact_select(m, p, n, 9, delta, &c, &nc, NULL, 0), 0);
    assert_int_equal(nc, 0);
    free(c);
    free(p);
    optimizer_model_free(m);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(uint64_t n)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state % n;
}

static void test_pairs_match_bruteforce(void **state)
{
    (void)state;
    weft_event ev[80];
    uint64_t delta[80];
    size_t total_pairs = 0, total_chosen = 0, total_nudged = 0;
    for (int trial = 0; trial < 300; trial++) {
        size_t n = 0;
        uint32_t threads = 2 + (uint32_t)rnd(4);
        uint64_t span = rnd(2) ? 20 : 400;
        for (uint32_t t = 0; t < threads; t++) {
            uint64_t time = rnd(span);
            for (uint64_t s = 0, k = rnd(15); s < k; s++) {
                time += rnd(span / 8 + 1);
                ev[n++] = wr(t, s, time, (uint8_t)rnd(3), 64 * rnd(3));
            }
        }
        optimizer_options o = optimizer_options_default();
        o.include_reads = (int)rnd(2);
        optimizer_model *m = optimizer_model_from_events(ev, n, &o, NULL, 0);
        size_t dim = optimizer_model_dim(m);
        optimizer_candidate *p, *q;
        optimizer_pair *c;
        size_t np, nq, nc;
        assert_int_equal(optimizer_exact_pairs(m, &p, &np, NULL, 0), 0);
        assert_int_equal(optimizer_exact_pairs_bruteforce(m, &q, &nq, NULL, 0), 0);
        assert_int_equal(np, nq);
        assert_memory_equal(p, q, np * sizeof *p);
        total_pairs += np;
        /* Each listed pair is aligned by its one delay before a. */
        for (size_t i = 0; i < np; i++) {
            memset(delta, 0, dim * sizeof *delta);
            delta[p[i].va] = p[i].delay;
            optimizer_fitness(m, delta);
            optimizer_var a, b;
            optimizer_model_var(m, p[i].va, &a);
            optimizer_model_var(m, p[i].vb, &b);
            assert_int_not_equal(a.thread, b.thread);
            assert_true(a.is_write || b.is_write);
            assert_int_equal(p[i].delay, b.time - a.time);
            assert_int_equal(tau_of(m, p[i].va), tau_of(m, p[i].vb));
            assert_true(optimizer_aligned(m) >= 1);
        }
        /* The selection's delays align every chosen pair at once, at the
         * predicted time. */
        assert_int_equal(optimizer_exact_select(m, p, np, 0, delta, &c, &nc, NULL, 0), 0);
        assert_true(nc <= np && (np == 0 || nc >= 1));
        optimizer_fitness(m, delta);
        for (size_t i = 0; i < nc; i++) {
            assert_int_equal(tau_of(m, c[i].va), c[i].aligned_time);
            assert_int_equal(tau_of(m, c[i].vb), c[i].aligned_time);
            assert_int_equal(delta[c[i].va], c[i].applied);
        }
        if (nc)
            assert_true(optimizer_aligned(m) >= 1);
        total_chosen += nc;
        free(c);
        /* With an order nudge, every write-read pair chosen holds at once
         * nudge apart (a after b), write-write pairs at one time. */
        uint64_t nudge = 1 + rnd(3);
        assert_int_equal(optimizer_exact_select_order(m, p, np, 0, nudge, delta, &c, &nc, NULL, 0),
                         0);
        optimizer_fitness(m, delta);
        for (size_t i = 0; i < nc; i++) {
            optimizer_var a, b;
            optimizer_model_var(m, c[i].va, &a);
            optimizer_model_var(m, c[i].vb, &b);
            assert_int_equal(c[i].nudge, a.is_write != b.is_write ? nudge : 0);
            assert_int_equal(b.tau, c[i].aligned_time);
            assert_int_equal(a.tau, c[i].aligned_time + c[i].nudge);
            assert_int_equal(delta[c[i].va], c[i].applied);
            total_nudged += c[i].nudge != 0;
        }
        free(p), free(q), free(c);
        optimizer_model_free(m);
    }
    assert_true(total_pairs > 1000);
    assert_true(total_chosen > 300);
    assert_true(total_nudged > 50);
}

/* --reads in weft optimize: a write-read pair is put in order, the delayed
 * event one nudge after the other, since at one virtual time the platform
 * orders the two by thread number. T0: W x@10 (v0), W y@60 (v1);
 * T1: R x@30 (v2), W y@90 (v3). */
static void test_order_nudge(void **state)
{
    (void)state;
    weft_event ev[4] = {wr(0, 0, 10, WEFT_EV_WRITE, 8), wr(0, 1, 60, WEFT_EV_WRITE, 16),
                        wr(1, 0, 30, WEFT_EV_READ, 8), wr(1, 1, 90, WEFT_EV_WRITE, 16)};
    optimizer_options o = optimizer_options_default();
    o.include_reads = 1;
    optimizer_model *m = optimizer_model_from_events(ev, 4, &o, NULL, 0);
    assert_int_equal(optimizer_model_dim(m), 4);
    assert_int_equal(optimizer_pair_nudge(m, 0, 2, 5), 5); /* write, read */
    assert_int_equal(optimizer_pair_nudge(m, 1, 3, 5), 0); /* two writes */
    optimizer_candidate *p;
    size_t n;
    assert_int_equal(optimizer_exact_pairs(m, &p, &n, NULL, 0), 0);
    assert_int_equal(n, 2); /* (v0, v2) delay 20, (v1, v3) delay 30 */
    uint64_t delta[4];
    optimizer_pair *c;
    size_t nc;
    /* Without a nudge: v0 meets the read at 30; v1 moves to 80 and then
     * meets v3 with 10 more. */
    assert_int_equal(optimizer_exact_select_order(m, p, n, 0, 0, delta, &c, &nc, NULL, 0), 0);
    assert_int_equal(nc, 2);
    assert_int_equal(c[0].applied, 20);
    assert_int_equal(c[0].nudge, 0);
    assert_int_equal(c[1].applied, 10);
    free(c);
    /* Nudge 1: the write lands at 31, after the read at 30; v1 moves to 81,
     * and the second pair (two writes, no nudge) needs 9 to meet v3 at 90. */
    assert_int_equal(optimizer_exact_select_order(m, p, n, 0, 1, delta, &c, &nc, NULL, 0), 0);
    assert_int_equal(nc, 2);
    assert_int_equal(c[0].va, 0);
    assert_int_equal(c[0].applied, 21);
    assert_int_equal(c[0].nudge, 1);
    assert_int_equal(c[0].aligned_time, 30);
    assert_int_equal(c[1].applied, 9);
    assert_int_equal(c[1].nudge, 0);
    assert_int_equal(c[1].aligned_time, 90);
    optimizer_fitness(m, delta);
    assert_int_equal(tau_of(m, 0), 31);
    assert_int_equal(tau_of(m, 2), 30);
    assert_int_equal(tau_of(m, 1), 90);
    assert_int_equal(optimizer_aligned(m), 2); /* y: a zero term each; x: 1 apart */
    /* The prediction carries the nudge into the plan. */
    optimizer_injection inj;
    optimizer_injection_for_var(m, c[0].va, c[0].applied, &c[0], &inj);
    assert_int_equal(inj.delay_ns, 21);
    assert_int_equal(inj.predicted.time, 30);
    assert_int_equal(inj.predicted.nudge, 1);
    free(c);
    /* The nudge counts against the bound on a delay: 20 + 1 > 20. */
    assert_int_equal(optimizer_exact_select_order(m, p, n, 20, 1, delta, &c, &nc, NULL, 0), 0);
    assert_int_equal(nc, 0);
    free(c);
    free(p);
    optimizer_model_free(m);
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Not a timed assertion: prints the solver's cost on 10^5 writes. */
static void test_hundred_thousand_writes(void **state)
{
    (void)state;
    const size_t n = 100000;
    weft_event *ev = malloc(n * sizeof *ev);
    uint64_t time[4] = {0, 0, 0, 0}, seq[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        uint32_t t = (uint32_t)rnd(4);
        time[t] += 1 + rnd(50);
        ev[i] = wr(t, seq[t]++, time[t], WEFT_EV_WRITE, 8 * rnd(1000));
    }
    double t0 = seconds();
    optimizer_model *m = optimizer_model_from_events(ev, n, NULL, NULL, 0);
    double t1 = seconds();
    optimizer_candidate *p;
    optimizer_pair *c;
    size_t np, nc;
    assert_int_equal(optimizer_exact_pairs(m, &p, &np, NULL, 0), 0);
    double t2 = seconds();
    uint64_t *delta = malloc(optimizer_model_dim(m) * sizeof *delta);
    assert_int_equal(optimizer_exact_select(m, p, np, 0, delta, &c, &nc, NULL, 0), 0);
    double t3 = seconds();
    assert_int_equal(optimizer_model_dim(m), n);
    assert_true(np > n && nc > 0);
    print_message("exact: %zu writes, model %.1f ms, %zu pairs %.1f ms, %zu chosen %.1f ms\n", n,
                  (t1 - t0) * 1e3, np, (t2 - t1) * 1e3, nc, (t3 - t2) * 1e3);
    /* The fitness paths at this size, for the record. */
    double f = optimizer_fitness(m, delta);
    double t4 = seconds();
    const int moves = 100;
    for (int i = 0; i < moves; i++)
        f = optimizer_fitness_move(m, rnd(n), rnd(1000));
    double t5 = seconds();
    assert_true(f >= 0);
    print_message("fitness: full %.1f ms, single-delay move %.1f us on average\n", (t4 - t3) * 1e3,
                  (t5 - t4) * 1e6 / moves);
    free(p), free(c), free(delta), free(ev);
    optimizer_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_example),
        cmocka_unit_test(test_pairs_match_bruteforce),
        cmocka_unit_test(test_order_nudge),
        cmocka_unit_test(test_hundred_thousand_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
