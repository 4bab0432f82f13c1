/* nanosleep under the priority policies: a first sleep leaves the sleeper
 * above the threads a change point delayed, so sleep-as-synchronization
 * bugs are depth 2 as they are on a real machine (the other thread delayed
 * for longer than the sleep); a sleep that waits (again, with no progress
 * since) is a yield, so polling loops cannot starve anyone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pct_sim.h"

static pct_policy *make(pct_kind kind, uint32_t n, uint64_t k, uint32_t d, uint64_t seed)
{
    pct_config c;
    pct_config_init(&c, kind);
    c.n = n;
    c.k = k;
    c.d = d;
    c.r = kind == PCT_KIND_RPRO ? k : 1;
    c.seed = seed;
    c.starvation = 0.0;
    pct_policy *p = pct_policy_create(&c, NULL, 0);
    assert_non_null(p);
    return p;
}

static int64_t prio_of(const pct_policy *p, pct_tid tid)
{
    pct_thread_info in;
    assert_int_equal(pct_policy_thread_info(p, tid, &in), 0);
    return in.priority;
}

static pct_tid next_of(pct_policy *p)
{
    pct_tid out[4];
    assert_int_equal(pct_policy_next(p, out, 4), 1);
    return out[0];
}

/* The allowed threads, as many as the policy allows, first one returned. */
static size_t allowed(pct_policy *p, pct_tid *out)
{
    size_t n = pct_policy_next(p, out, 4);
    assert_true(n >= 1 && n <= 4);
    return n;
}

/* By hand: the higher thread sleeps and the other runs; once a change
 * point delays the other, the sleeper runs first; its sleep again (nothing
 * changed) sends it below the delayed one. */
static void test_a_delay_outlasts_a_sleep(void **state)
{
    (void)state;
    const pct_kind kinds[] = {PCT_KIND_PCT, PCT_KIND_RPRO};
    for (size_t ki = 0; ki < 2; ki++) {
        for (uint64_t seed = 1; seed <= 100; seed++) {
            pct_policy *p = make(kinds[ki], 2, 20, 2, seed);
            pct_thread_created(p, 1, PCT_NO_PARENT);
            pct_thread_created(p, 2, 1);
            pct_tid a = next_of(p), b = a == 1 ? 2 : 1;
            assert_true(prio_of(p, a) > prio_of(p, b));
            assert_int_equal(pct_thread_slept(p, a, false), 0);
            assert_int_equal(prio_of(p, a), 1); /* d - 1, above a change point's d - 1 */
            bool delayed = false;
            for (int s = 0; s < 20 && !delayed; s++) {
                assert_int_equal(next_of(p), b);
                pct_step(p, b);
                delayed = prio_of(p, b) < 2;
            }
            assert_true(delayed); /* k_1 <= 20, and each of b's steps was a choice */
            assert_int_equal(next_of(p), a);
            pct_step(p, a);
            assert_int_equal(pct_thread_slept(p, a, true), 0);
            assert_true(prio_of(p, a) <= 0);
            assert_int_equal(next_of(p), b);
            assert_true(pct_policy_overrides(p) >= 2);
            pct_policy_destroy(p);
        }
    }
}

/* A sleeper never rises: delayed or demoted before, it is demoted as a yield
 * demotes; and sleepers take turns, the latest below the earlier ones. */
static void test_sleepers_never_rise_and_take_turns(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        pct_policy *p = make(PCT_KIND_PCT, 3, 1, 2, seed);
        for (pct_tid t = 1; t <= 3; t++)
            pct_thread_created(p, t, t == 1 ? PCT_NO_PARENT : 1);
        pct_tid top = next_of(p);
        pct_step(p, top); /* k = 1: the only change point, at its first choice */
        assert_int_equal(prio_of(p, top), 1);
        pct_thread_slept(p, top, false);
        assert_true(prio_of(p, top) <= 0);
        pct_tid x = next_of(p);
        pct_thread_slept(p, x, false);
        pct_tid y = next_of(p);
        assert_true(y != x && y != top);
        pct_thread_slept(p, y, false);
        assert_int_equal(prio_of(p, x), 1);
        assert_int_equal(prio_of(p, y), 1);
        assert_int_equal(next_of(p), x); /* the earlier sleeper first */
        pct_thread_slept(p, x, false);
        assert_int_equal(next_of(p), y);
        pct_policy_destroy(p);
    }
}

/* The other policies have no band between undelayed and delayed threads:
 * a sleep is a yield, decision for decision. */
static void test_other_kinds_sleep_as_they_yield(void **state)
{
    (void)state;
    const pct_kind kinds[] = {PCT_KIND_RANDOM, PCT_KIND_PPCT, PCT_KIND_POS,
                              PCT_KIND_PB,     PCT_KIND_DB,   PCT_KIND_IDEAL};
    for (size_t ki = 0; ki < sizeof kinds / sizeof *kinds; ki++) {
        for (uint64_t seed = 1; seed <= 20; seed++) {
            pct_policy *p[2];
            for (int v = 0; v < 2; v++) {
                p[v] = make(kinds[ki], 3, 30, 2, seed);
                for (pct_tid t = 1; t <= 3; t++)
                    pct_thread_created(p[v], t, t == 1 ? PCT_NO_PARENT : 1);
            }
            for (int s = 0; s < 30; s++) {
                pct_tid a[4], b[4];
                size_t n = allowed(p[0], a);
                assert_int_equal(allowed(p[1], b), n);
                assert_memory_equal(a, b, n * sizeof *a);
                pct_tid t = a[0];
                pct_step(p[0], t);
                pct_step(p[1], t);
                if (s % 3 == 0) {
                    pct_thread_yielded(p[0], t);
                    pct_thread_slept(p[1], t, s % 2 == 0);
                }
                for (pct_tid u = 1; u <= 3; u++)
                    assert_true(prio_of(p[0], u) == prio_of(p[1], u));
            }
            pct_policy_destroy(p[0]);
            pct_policy_destroy(p[1]);
        }
    }
}

static bool read_before_init(const pct_sim_run *run)
{
    return run->reg[0][0] == 0;
}

/* Sleep as synchronization: thread 0 starts thread 1, sleeps, then reads
 * what thread 1 initializes after some work. PCT at depth 2 finds it (one
 * change point among thread 1's steps before its store, with thread 0
 * above it); with the sleep a plain yield it would need depth 3. */
static void test_sleep_as_synchronization_is_depth_2(void **state)
{
    (void)state;
    static pct_sim_program prog;
    memset(&prog, 0, sizeof prog);
    prog.thread[0].at_start = true;
    pct_sim_add(&prog, 0, PCT_SIM_SPAWN, 1, 0);
    pct_sim_add(&prog, 0, PCT_SIM_SLEEP, 0, 0);
    pct_sim_add(&prog, 0, PCT_SIM_LOAD, 0, 0);
    pct_sim_pad(&prog, 1, 4);
    pct_sim_add(&prog, 1, PCT_SIM_STORE, 0, 1);
    prog.bug = read_before_init;
    const uint64_t k = pct_sim_op_count(&prog), runs = 400;
    uint64_t hits = 0;
    for (uint64_t seed = 1; seed <= runs; seed++) {
        pct_policy *p = make(PCT_KIND_PCT, 2, k, 2, seed);
        pct_sim_run run;
        assert_int_equal(pct_sim_execute(&prog, p, PCT_SIM_PICK_FIRST, seed, 100, NULL, NULL, &run),
                         0);
        assert_true(run.completed);
        hits += run.bug;
        pct_policy_destroy(p);
    }
    print_message("sleep as synchronization, pct d = 2, k = %llu: %llu of %llu runs\n",
                  (unsigned long long)k, (unsigned long long)hits, (unsigned long long)runs);
    /* k_1 on one of thread 1's four steps before its store, in either
     * order of the two (with thread 0 above, after its sleep): about half
     * the runs; none if a sleep were a yield. */
    assert_true(hits >= runs / 4);
}

/* Threads 0 and 1 poll a flag with nanosleep; thread 2 sets it after some
 * work. Whatever the policy, the priorities and the picks, the pollers
 * cannot keep thread 2 from setting it. (PPCT allows its whole high set at
 * once: a picker that always takes a poller starves the others whatever a
 * sleep does; weft picks in the set by virtual time. It gets random picks.) */
static void test_polling_sleepers_cannot_starve_others(void **state)
{
    (void)state;
    static pct_sim_program prog;
    memset(&prog, 0, sizeof prog);
    for (size_t t = 0; t < 3; t++)
        prog.thread[t].at_start = true;
    pct_sim_add(&prog, 0, PCT_SIM_SPIN_SLEEP, 0, 1);
    pct_sim_add(&prog, 1, PCT_SIM_SPIN_SLEEP, 0, 1);
    pct_sim_pad(&prog, 2, 10);
    pct_sim_add(&prog, 2, PCT_SIM_STORE, 0, 1);
    for (int kind = PCT_KIND_IDEAL; kind <= PCT_KIND_DB; kind++) {
        int first = kind == PCT_KIND_PPCT ? PCT_SIM_PICK_RANDOM : PCT_SIM_PICK_FIRST;
        for (int adv = first; adv <= PCT_SIM_PICK_RANDOM; adv++) {
            for (uint64_t seed = 1; seed <= 100; seed++) {
                pct_policy *p = make((pct_kind)kind, 3, 15, 3, seed);
                pct_sim_run run;
                pct_sim_execute(&prog, p, (pct_sim_adversary)adv, seed, 2000, NULL, NULL, &run);
                if (!run.completed)
                    print_message("%s, picker %d, seed %llu: %llu steps\n",
                                  pct_kind_name((pct_kind)kind), adv, (unsigned long long)seed,
                                  (unsigned long long)run.steps);
                assert_true(run.completed);
                pct_policy_destroy(p);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_delay_outlasts_a_sleep),
        cmocka_unit_test(test_sleepers_never_rise_and_take_turns),
        cmocka_unit_test(test_other_kinds_sleep_as_they_yield),
        cmocka_unit_test(test_sleep_as_synchronization_is_depth_2),
        cmocka_unit_test(test_polling_sleepers_cannot_starve_others),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
