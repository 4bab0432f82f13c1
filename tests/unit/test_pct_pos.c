/* Partial order sampling: the race rule (known and unknown objects), the
 * decision, determinism, fairness, and hit rates that follow exactly from
 * the algorithm on a shape where the rule matters. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pct_sim.h"
#include "weft/search.h"

static pct_policy *make_pos(uint64_t seed)
{
    pct_config c;
    pct_config_init(&c, PCT_KIND_POS);
    c.n = 2;
    c.seed = seed;
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

typedef struct pending {
    uint64_t object;
    pct_access access;
    bool reset; /* expected: races with the executed event */
} pending;

enum { X = 0x10, Y = 0x20 };

/* Thread 1 executes (object, access) after describing its pending event as
 * (pobj, pacc); thread 2+i has pending event want[i]. Exactly the racing
 * ones, and thread 1, get a fresh priority. */
static void check_resets(uint64_t object, pct_access access, uint64_t pobj, pct_access pacc,
                         const pending *want, size_t n)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        pct_policy *p = make_pos(seed);
        int64_t before[16];
        pct_thread_created(p, 1, PCT_NO_PARENT);
        pct_thread_pending(p, 1, pobj, pacc);
        for (size_t i = 0; i < n; i++) {
            pct_thread_created(p, (pct_tid)(2 + i), 1);
            pct_thread_pending(p, (pct_tid)(2 + i), want[i].object, want[i].access);
            if (i % 2)
                pct_thread_blocked(p, (pct_tid)(2 + i)); /* blocked events are pending too */
        }
        for (size_t i = 0; i <= n; i++)
            before[i] = prio_of(p, (pct_tid)(1 + i));
        assert_int_equal(pct_step_access(p, 1, object, access), 0);
        assert_true(prio_of(p, 1) != before[0]);
        for (size_t i = 0; i < n; i++) {
            bool changed = prio_of(p, (pct_tid)(2 + i)) != before[1 + i];
            if (changed != want[i].reset)
                print_message("executed (%#llx, %d): pending %zu (%#llx, %d) %s\n",
                              (unsigned long long)object, access, i,
                              (unsigned long long)want[i].object, want[i].access,
                              changed ? "was reset" : "was kept");
            assert_true(changed == want[i].reset);
        }
        pct_policy_destroy(p);
    }
}

static void test_race_rule(void **state)
{
    (void)state;
    const pct_access R = PCT_ACCESS_READ, W = PCT_ACCESS_WRITE, S = PCT_ACCESS_SYNC,
                     N = PCT_ACCESS_NONE, U = PCT_ACCESS_UNKNOWN;
    /* Known objects: same object and not both reads. Object 0 is any
     * object; an unknown access is any access; NONE races with nothing. */
    const pending after_write_x[] = {
        {X, R, true}, {Y, R, false}, {X, W, true},  {Y, W, false}, {X, S, true},
        {0, R, true}, {0, W, true},  {Y, N, false}, {0, U, true},
    };
    check_resets(X, W, 0, U, after_write_x, 9);
    const pending after_read_x[] = {
        {X, R, false}, {0, R, false}, {X, W, true}, {Y, W, false},
        {0, W, true},  {X, S, true},  {0, U, true}, {X, N, false},
    };
    check_resets(X, R, 0, U, after_read_x, 8);
    const pending after_sync_0[] = {
        {X, R, true}, {Y, W, true}, {0, R, true}, {X, N, false}, {0, U, true},
    };
    check_resets(0, S, 0, U, after_sync_0, 5);
    const pending after_none[] = {
        {X, R, false},
        {0, W, false},
        {0, U, false},
    };
    check_resets(0, N, 0, U, after_none, 3);
    /* Executed event not told: its pending description stands for it. */
    check_resets(0, U, X, W, after_write_x, 9);
    /* Neither told: it races with everything that touches anything. */
    const pending after_unknown[] = {
        {X, R, true}, {Y, W, true}, {0, R, true}, {X, N, false}, {0, U, true},
    };
    check_resets(0, U, 0, U, after_unknown, 5);
}

/* The enabled thread of highest priority runs; a new thread's priority is
 * fresh; a thread's next event is undescribed (unknown) after its step. */
static void test_pos_decision(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 100; seed++) {
        pct_policy *p = make_pos(seed);
        for (pct_tid t = 1; t <= 4; t++)
            pct_thread_created(p, t, PCT_NO_PARENT);
        pct_thread_blocked(p, 3);
        for (int round = 0; round < 20; round++) {
            pct_tid out[4], best = 0;
            for (pct_tid t = 1; t <= 4; t++) {
                if (t != 3 && (best == 0 || prio_of(p, t) > prio_of(p, best)))
                    best = t;
            }
            assert_int_equal(pct_policy_next(p, out, 4), 1);
            assert_true(out[0] == best);
            pct_step(p, out[0]);
        }
        pct_policy_destroy(p);
    }
    pct_policy *p = make_pos(1);
    pct_tid out[1];
    assert_int_equal(pct_policy_next(p, out, 1), 0);
    assert_int_equal(pct_policy_change_points(p, NULL, 0), 0);
    assert_int_equal(pct_policy_schedule_status(p), PCT_SCHEDULE_DONE);
    pct_policy_destroy(p);
}

/* Thread 0 works `m` steps alone in its own memory, then writes x; thread
 * 1 reads x once. Bug: the read comes last. Thread 0 must win m + 1
 * decisions in a row. Knowing that work touches nothing, POS never re-draws
 * the reader's priority u, and each of thread 0's events wins with
 * probability 1 - u: P = integral of (1 - u)^(m+1) du = 1 / (m + 2).
 * Knowing nothing, every step races with everything, every priority is
 * fresh at every decision, and POS is a random walk: P = 2^-(m+1). */
static bool late_read(const pct_sim_run *run)
{
    return run->reg[1][0] == 1;
}

static void shape_late_read(pct_sim_program *prog, size_t m)
{
    memset(prog, 0, sizeof *prog);
    prog->name = "late-read";
    prog->bug = late_read;
    prog->thread[0].at_start = prog->thread[1].at_start = true;
    pct_sim_pad(prog, 0, m);
    pct_sim_add(prog, 0, PCT_SIM_STORE, 0, 1);
    pct_sim_add(prog, 1, PCT_SIM_LOAD, 0, 0);
}

enum { TRIALS = 4000 };

static void expect_rate(const pct_sim_program *prog, pct_kind kind, pct_sim_report report,
                        double want, uint64_t seed0)
{
    unsigned hits = 0;
    for (unsigned i = 0; i < TRIALS; i++) {
        pct_config c;
        pct_config_init(&c, kind);
        c.n = 2;
        c.seed = seed0 + i;
        pct_policy *p = pct_policy_create(&c, NULL, 0);
        pct_sim_options o = {.adv_seed = c.seed, .max_steps = 100, .report = report};
        pct_sim_run run;
        assert_int_equal(pct_sim_run_with(prog, p, &o, &run), 0);
        assert_true(run.completed);
        hits += run.bug;
        pct_policy_destroy(p);
    }
    double lo, hi;
    assert_int_equal(search_clopper_pearson(hits, TRIALS, 0.999, &lo, &hi), 0);
    static const char *const names[] = {"nothing", "kinds", "exact"};
    print_message("%-6s told %-7s: %4u/%u = %.4f  99.9%% CI [%.4f, %.4f]  exact %.4f\n",
                  pct_kind_name(kind), names[report], hits, TRIALS, (double)hits / TRIALS, lo, hi,
                  want);
    assert_true(lo <= want && want <= hi);
}

static void test_pos_rates(void **state)
{
    (void)state;
    static pct_sim_program prog;
    const size_t m = 3;
    shape_late_read(&prog, m);
    double informed = 1.0 / (double)(m + 2), blind = pow(0.5, (double)(m + 1));
    expect_rate(&prog, PCT_KIND_POS, PCT_SIM_REPORT_EXACT, informed, 1000000);
    /* The kind of the next access suffices here: work is NONE. */
    expect_rate(&prog, PCT_KIND_POS, PCT_SIM_REPORT_KINDS, informed, 2000000);
    expect_rate(&prog, PCT_KIND_POS, PCT_SIM_REPORT_NOTHING, blind, 3000000);
    expect_rate(&prog, PCT_KIND_RANDOM, PCT_SIM_REPORT_EXACT, blind, 4000000);
}

/* Same seed, same decisions; another seed, other decisions. */
static void test_pos_determinism(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_lock_cycle(&prog, 3, 6);
    uint64_t first[3] = {0};
    for (int rep = 0; rep < 3; rep++) {
        uint64_t seed = rep < 2 ? 42 : 43;
        pct_policy *p = make_pos(seed);
        pct_sim_options o = {.adv_seed = 1, .max_steps = 200, .report = PCT_SIM_REPORT_EXACT};
        pct_sim_run run;
        assert_int_equal(pct_sim_run_with(&prog, p, &o, &run), 0);
        for (size_t t = 0; t < pct_policy_thread_count(p); t++) {
            pct_thread_info in;
            pct_policy_thread_at(p, t, &in);
            first[rep] = first[rep] * 31 + (uint64_t)in.priority + run.exit_step[t];
        }
        pct_policy_destroy(p);
    }
    assert_true(first[0] == first[1]);
    assert_true(first[0] != first[2]);
}

/* A thread spinning on a flag and the thread that sets it. Told nothing,
 * POS is a random walk, fair even to a silent spin. Told the accesses, the
 * setter's work does not race with the spin's reads, so only a yield
 * re-draws its priority: with yields the setter waits a couple of
 * decisions per step; a silent spin against a setter of priority u lasts
 * 1/u decisions on average, a tail of infinite mean (docs/policies.md). */
static uint64_t longest_spin(pct_sim_opcode spin, pct_sim_report report)
{
    static pct_sim_program prog;
    memset(&prog, 0, sizeof prog);
    prog.thread[0].at_start = prog.thread[1].at_start = true;
    pct_sim_add(&prog, 0, spin, 3, 1);
    pct_sim_pad(&prog, 1, 10);
    pct_sim_add(&prog, 1, PCT_SIM_STORE, 3, 1);
    uint64_t worst = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        pct_policy *p = make_pos(seed);
        pct_sim_options o = {.adv_seed = seed, .max_steps = 100000, .report = report};
        pct_sim_run run;
        pct_sim_run_with(&prog, p, &o, &run);
        assert_true(run.completed);
        if (run.steps > worst)
            worst = run.steps;
        pct_policy_destroy(p);
    }
    return worst;
}

static void test_pos_spin_completes(void **state)
{
    (void)state;
    uint64_t blind = longest_spin(PCT_SIM_SPIN, PCT_SIM_REPORT_NOTHING);
    uint64_t yielding = longest_spin(PCT_SIM_SPIN_YIELD, PCT_SIM_REPORT_EXACT);
    uint64_t silent = longest_spin(PCT_SIM_SPIN, PCT_SIM_REPORT_EXACT);
    print_message("longest of 200 runs: blind %llu, yielding %llu, silent %llu steps\n",
                  (unsigned long long)blind, (unsigned long long)yielding,
                  (unsigned long long)silent);
    assert_true(blind <= 100 && yielding <= 100);
    assert_true(silent > yielding);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_race_rule),          cmocka_unit_test(test_pos_decision),
        cmocka_unit_test(test_pos_rates),          cmocka_unit_test(test_pos_determinism),
        cmocka_unit_test(test_pos_spin_completes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
