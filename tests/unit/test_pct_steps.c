/* What counts as a step (issue 17: only choices), and that the policies of
 * before it decide exactly as they did when every step counts and when
 * they are told about accesses they do not use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pct_sim.h"

static pct_policy *make(pct_kind kind, uint32_t n, uint64_t k, uint32_t d, bool all_steps)
{
    pct_config c;
    pct_config_init(&c, kind);
    c.n = n;
    c.k = k;
    c.d = d;
    c.starvation = 0.0;
    c.count_all_steps = all_steps;
    pct_policy *p = pct_policy_create(&c, NULL, 0);
    assert_non_null(p);
    return p;
}

/* A step counts when another live thread is enabled as it is reported,
 * whether or not the stepping thread itself still is. */
static void test_choice_counting_by_hand(void **state)
{
    (void)state;
    for (int all = 0; all <= 1; all++) {
        pct_policy *p = make(PCT_KIND_RANDOM, 2, 0, 1, all);
        pct_thread_created(p, 1, PCT_NO_PARENT);
        pct_step(p, 1); /* alone */
        assert_int_equal(pct_policy_steps(p), all ? 1 : 0);
        pct_thread_created(p, 2, 1);
        pct_step(p, 1); /* 2 is enabled */
        assert_int_equal(pct_policy_steps(p), all ? 2 : 1);
        pct_thread_blocked(p, 2);
        pct_step(p, 1); /* 2 blocked: alone again */
        assert_int_equal(pct_policy_steps(p), all ? 3 : 1);
        pct_thread_enabled(p, 2);
        pct_thread_blocked(p, 1);
        pct_step(p, 1); /* its step blocked it, and 2 can run next */
        assert_int_equal(pct_policy_steps(p), all ? 4 : 2);
        pct_thread_exited(p, 2);
        pct_step(p, 1); /* 2 exited */
        assert_int_equal(pct_policy_steps(p), all ? 5 : 2);
        pct_thread_info in;
        assert_int_equal(pct_policy_thread_info(p, 1, &in), 0);
        assert_int_equal(in.steps, 5); /* per thread: every step */
        pct_policy_destroy(p);
    }
}

/* The step right after a yield (a spin, sched_yield) counts as a step and
 * as a yield step, which profiling leaves out of k; the step after a sleep
 * does not count as one; nor does a step when nobody else is enabled. */
static void test_yield_steps(void **state)
{
    (void)state;
    pct_kind kinds[] = {PCT_KIND_RANDOM, PCT_KIND_PCT};
    for (size_t i = 0; i < 2; i++) {
        pct_policy *p = make(kinds[i], 2, 10, 3, false);
        pct_thread_created(p, 1, PCT_NO_PARENT);
        pct_thread_created(p, 2, 1);
        pct_step(p, 1);
        assert_int_equal(pct_policy_yield_steps(p), 0);
        pct_thread_yielded(p, 1);
        pct_step(p, 1);
        assert_int_equal(pct_policy_yield_steps(p), 1);
        pct_step(p, 1); /* the yield was before the previous step */
        assert_int_equal(pct_policy_yield_steps(p), 1);
        pct_thread_slept(p, 2, false);
        pct_step(p, 2);
        pct_thread_slept(p, 2, true); /* again: demoted like a yield, still a sleep */
        pct_step(p, 2);
        assert_int_equal(pct_policy_yield_steps(p), 1);
        pct_thread_yielded(p, 2);
        pct_thread_exited(p, 1);
        pct_step(p, 2); /* alone: no choice, no step */
        assert_int_equal(pct_policy_yield_steps(p), 1);
        assert_int_equal(pct_policy_steps(p), 5);
        pct_status st = {0};
        pct_policy_mirror(p, &st);
        assert_true(st.yield_steps == 1);
        pct_policy_destroy(p);
    }
}

/* A first yield's nap (pct_thread_yield_napped): under pct the yielder
 * stays above a thread a change point delayed, as a first sleep does, and
 * under every policy its next step is a yield step, which k leaves out. */
static void test_yield_napped(void **state)
{
    (void)state;
    pct_kind kinds[] = {PCT_KIND_RANDOM, PCT_KIND_PCT, PCT_KIND_PPCT};
    for (size_t i = 0; i < 3; i++) {
        pct_policy *p = make(kinds[i], 2, 10, 3, false);
        pct_thread_created(p, 1, PCT_NO_PARENT);
        pct_thread_created(p, 2, 1);
        pct_step(p, 1);
        pct_thread_yield_napped(p, 1);
        pct_step(p, 1);
        assert_int_equal(pct_policy_yield_steps(p), 1);
        pct_policy_destroy(p);
    }
    /* pct: T2 demoted (it slept again without progress); T1's nap keeps T1
     * above T2, where a yield sends it below. */
    for (int nap = 0; nap < 2; nap++) {
        pct_policy *p = make(PCT_KIND_PCT, 2, 10, 3, false);
        pct_thread_created(p, 1, PCT_NO_PARENT);
        pct_thread_created(p, 2, 1);
        pct_thread_info a, b;
        pct_policy_thread_info(p, 2, &b);
        pct_thread_slept(p, 2, true); /* T2 at the bottom: as far below as any delay */
        if (nap)
            pct_thread_yield_napped(p, 1);
        else
            pct_thread_yielded(p, 1);
        pct_policy_thread_info(p, 1, &a);
        pct_policy_thread_info(p, 2, &b);
        assert_true(nap ? a.priority > b.priority : a.priority < b.priority);
        pct_policy_destroy(p);
    }
}

/* A change point is a choice step: a thread working alone passes through
 * no change point, whatever k_1 is. */
static void test_change_points_only_at_choices(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        pct_config c;
        pct_config_init(&c, PCT_KIND_PCT);
        c.n = 2;
        c.k = 5;
        c.d = 2;
        c.seed = seed;
        pct_policy *p = pct_policy_create(&c, NULL, 0);
        uint64_t k1;
        pct_policy_change_points(p, &k1, 1);
        pct_thread_created(p, 1, PCT_NO_PARENT);
        for (int i = 0; i < 20; i++)
            pct_step(p, 1);
        pct_thread_info in;
        pct_policy_thread_info(p, 1, &in);
        assert_true(in.priority >= 2); /* still in the initial band */
        pct_thread_created(p, 2, 1);
        for (uint64_t s = 1; s <= 5; s++) {
            pct_step(p, 1);
            pct_policy_thread_info(p, 1, &in);
            assert_true((in.priority == 1) == (s >= k1));
        }
        pct_policy_destroy(p);
    }
}

static void test_bad_access_calls(void **state)
{
    (void)state;
    pct_policy *p = make(PCT_KIND_POS, 1, 0, 1, false);
    pct_thread_created(p, 1, PCT_NO_PARENT);
    assert_int_equal(pct_thread_pending(p, 2, 0x10, PCT_ACCESS_READ), -1);
    assert_int_equal(pct_thread_pending(p, 1, 0x10, (pct_access)9), -1);
    assert_int_equal(pct_step_access(p, 1, 0x10, (pct_access)-1), -1);
    assert_int_equal(pct_step_access(p, 3, 0x10, PCT_ACCESS_WRITE), -1);
    assert_int_equal(pct_thread_pending(p, 1, 0x10, PCT_ACCESS_SYNC), 0);
    assert_int_equal(pct_step_access(p, 1, 0x10, PCT_ACCESS_SYNC), 0);
    pct_policy_destroy(p);
}

static uint64_t fnv;

static void mix(uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        fnv ^= (v >> (8 * i)) & 0xff;
        fnv *= UINT64_C(1099511628211);
    }
}

/* Everything a decision shows: the allowed set, the pick, the counters and
 * every thread's priority and L membership. */
static void hash_decision(void *ctx, const pct_policy *p, const pct_tid *allowed, size_t n,
                          pct_tid chosen)
{
    (void)ctx;
    mix(n);
    for (size_t i = 0; i < n; i++)
        mix((uint64_t)allowed[i]);
    mix((uint64_t)chosen);
    mix(pct_policy_steps(p));
    mix(pct_policy_overrides(p));
    for (size_t i = 0; i < pct_policy_thread_count(p); i++) {
        pct_thread_info in;
        pct_policy_thread_at(p, i, &in);
        mix((uint64_t)in.priority);
        mix(in.in_low_set);
    }
}

/* The hash of 240 runs of one kind: six programs (the Fig. 3 shapes and a
 * yielding spinner), 40 seeds each, starvation overrides on. */
static uint64_t hash_kind(pct_kind kind, bool all_steps, pct_sim_report report)
{
    static pct_sim_program progs[6];
    pct_sim_shape_order(&progs[0], 2, 3);
    pct_sim_shape_atomicity(&progs[1], 3, 2);
    pct_sim_shape_deadlock(&progs[2], 2, 1);
    pct_sim_shape_torn(&progs[3], 2, 1, 2);
    pct_sim_shape_lock_cycle(&progs[4], 3, 3);
    pct_sim_program *y = &progs[5];
    memset(y, 0, sizeof *y);
    for (size_t t = 0; t < 3; t++)
        y->thread[t].at_start = true;
    pct_sim_add(y, 0, PCT_SIM_SPIN_YIELD, 7, 1);
    pct_sim_pad(y, 0, 3);
    pct_sim_pad(y, 1, 20);
    pct_sim_add(y, 1, PCT_SIM_STORE, 7, 1);
    pct_sim_pad(y, 2, 20);
    fnv = UINT64_C(14695981039346656037);
    for (int pi = 0; pi < 6; pi++) {
        for (uint64_t seed = 1; seed <= 40; seed++) {
            pct_config c;
            pct_config_init(&c, kind);
            c.n = (uint32_t)progs[pi].nthreads;
            c.k = pct_sim_op_count(&progs[pi]);
            c.d = 3;
            c.r = 2;
            c.seed = seed;
            c.starvation = 0.02;
            c.count_all_steps = all_steps;
            pct_policy *p = pct_policy_create(&c, NULL, 0);
            assert_non_null(p);
            pct_sim_options o = {.adv = PCT_SIM_PICK_RANDOM,
                                 .adv_seed = seed,
                                 .max_steps = 400,
                                 .hook = hash_decision,
                                 .report = report};
            pct_sim_run run;
            pct_sim_run_with(&progs[pi], p, &o, &run);
            mix(run.steps);
            mix(run.bug);
            mix(run.deadlocked);
            pct_policy_destroy(p);
        }
    }
    return fnv;
}

/* Recorded with weft's pct/ of commit 382c229 (before pos, pb, db and
 * choice-only counting) by the same hash over the same runs. */
static const uint64_t before_issue_17[] = {
    UINT64_C(0xdcb84b7ae6c89e05), /* ideal */
    UINT64_C(0xc648893033b40e18), /* random */
    UINT64_C(0xb0f9eb8e2f01bbfb), /* pct */
    UINT64_C(0xfed678f305b1f3f0), /* ppct */
    UINT64_C(0x2ea91ce86b23b68d), /* rpro */
};

static void test_old_policies_unchanged(void **state)
{
    (void)state;
    for (int kind = PCT_KIND_IDEAL; kind <= PCT_KIND_RPRO; kind++) {
        uint64_t plain = hash_kind((pct_kind)kind, true, PCT_SIM_REPORT_NOTHING);
        uint64_t told = hash_kind((pct_kind)kind, true, PCT_SIM_REPORT_EXACT);
        print_message("%-6s 0x%016llx (told accesses: 0x%016llx)\n", pct_kind_name((pct_kind)kind),
                      (unsigned long long)plain, (unsigned long long)told);
        assert_true(plain == before_issue_17[kind]);
        assert_true(told == plain);
    }
    /* Counting only choices changes PCT's runs (k and change points). */
    assert_true(hash_kind(PCT_KIND_PCT, false, PCT_SIM_REPORT_NOTHING) != before_issue_17[2]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_choice_counting_by_hand),
        cmocka_unit_test(test_change_points_only_at_choices),
        cmocka_unit_test(test_yield_steps),
        cmocka_unit_test(test_yield_napped),
        cmocka_unit_test(test_bad_access_calls),
        cmocka_unit_test(test_old_policies_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
