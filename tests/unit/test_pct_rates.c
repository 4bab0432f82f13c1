/* Hit rates of PCT, PPCT and RPro on Nagarakatte et al.'s Fig. 3 bug shapes, against
 * the guarantees weft claims (pct_guarantee).
 *
 * Each case runs the shape under thousands of seeded policies, counts the
 * runs whose oracle fires, and computes the Clopper-Pearson 95% interval of
 * the hit rate. Where the shape leaves the algorithm slack the interval's
 * lower end must clear the bound; on the bare shapes, where the bound is
 * attained exactly, the interval must contain it. n is the program's thread
 * count. k counts choices (the default, issue 17): the largest step count
 * of 500 profiling runs under the random policy, and every measured run
 * must stay within it. The all-steps mode (count_all_steps) is measured
 * too, with k = every operation once. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pct_sim.h"
#include "weft/search.h"

enum { TRIALS = 4000 };

typedef struct measure {
    unsigned hits, trials;
    double rate, lo, hi, bound;
} measure;

/* 95% for "the rate clears the bound"; the tightness checks test several
 * cases two-sided and use 99.9% so that a fair sample fails rarely. */
#define ALPHA 0.05
#define ALPHA_TIGHT 0.001

static const char *adv_name(pct_sim_adversary adv)
{
    return adv == PCT_SIM_PICK_FIRST ? "first" : adv == PCT_SIM_PICK_LAST ? "last" : "random";
}

/* The choice count a profiling campaign would report: the most steps any
 * of 500 random runs counted. */
static uint64_t choice_k(const pct_sim_program *prog)
{
    uint64_t k = 0;
    for (uint64_t seed = 1; seed <= 500; seed++) {
        pct_config cfg;
        pct_config_init(&cfg, PCT_KIND_RANDOM);
        cfg.seed = seed;
        pct_policy *p = pct_policy_create(&cfg, NULL, 0);
        assert_non_null(p);
        pct_sim_run run;
        assert_int_equal(pct_sim_execute(prog, p, PCT_SIM_PICK_FIRST, seed,
                                         10 * pct_sim_op_count(prog), NULL, NULL, &run),
                         0);
        if (pct_policy_steps(p) > k)
            k = pct_policy_steps(p);
        pct_policy_destroy(p);
    }
    return k;
}

typedef struct trials {
    pct_kind kind;
    unsigned d;
    uint64_t r;
    pct_sim_adversary adv;
    unsigned runs;
    double q; /* starvation probability */
    uint64_t seed0;
    bool all_steps;
} trials;

/* Runs prog t.runs times with seeds seed0+1... The bound is the claim for
 * runs without an override times the chance that a run of k decisions has
 * none. */
static measure run_trials(const pct_sim_program *prog, trials t)
{
    uint64_t k = t.all_steps ? pct_sim_op_count(prog) : choice_k(prog);
    measure m = {.trials = t.runs};
    for (unsigned i = 0; i < t.runs; i++) {
        pct_config cfg;
        pct_config_init(&cfg, t.kind);
        cfg.n = (uint32_t)prog->nthreads;
        cfg.k = k;
        cfg.d = t.d;
        cfg.r = t.r;
        cfg.seed = t.seed0 + i + 1;
        cfg.starvation = t.q;
        cfg.count_all_steps = t.all_steps;
        char err[256];
        pct_policy *p = pct_policy_create(&cfg, err, sizeof err);
        assert_non_null(p);
        pct_sim_run run;
        assert_int_equal(pct_sim_execute(prog, p, t.adv, cfg.seed, 10 * pct_sim_op_count(prog),
                                         NULL, NULL, &run),
                         0);
        assert_true(run.completed || run.deadlocked);
        assert_true(run.policy_agrees);
        assert_true(pct_policy_steps(p) <= k); /* the bound's premise */
        m.hits += run.bug;
        pct_policy_destroy(p);
    }
    m.rate = (double)m.hits / t.runs;
    assert_int_equal(search_clopper_pearson(m.hits, t.runs, 1 - ALPHA, &m.lo, &m.hi), 0);
    m.bound = pct_guarantee(t.kind, prog->nthreads, k, t.d, t.r) * pow(1.0 - t.q, (double)k);
    print_message("%-10s %-4s %-6s %-7s n=%zu k=%3llu d=%u r=%llu: %4u/%u = %.4f  "
                  "CI [%.4f, %.4f]  bound %.5f\n",
                  prog->name, pct_kind_name(t.kind), adv_name(t.adv),
                  t.all_steps ? "all" : "choices", prog->nthreads, (unsigned long long)k, t.d,
                  (unsigned long long)t.r, m.hits, t.runs, m.rate, m.lo, m.hi, m.bound);
    return m;
}

/* The common case: TRIALS runs, choices counted. */
static trials on(pct_kind kind, unsigned d, uint64_t r, pct_sim_adversary adv, double q,
                 uint64_t seed0)
{
    return (trials){
        .kind = kind, .d = d, .r = r, .adv = adv, .runs = TRIALS, .q = q, .seed0 = seed0};
}

static void assert_clears(measure m)
{
    assert_true(m.bound > 0.0);
    assert_true(m.lo >= m.bound);
}

static void assert_contains(measure m)
{
    assert_int_equal(search_clopper_pearson(m.hits, m.trials, 1 - ALPHA_TIGHT, &m.lo, &m.hi), 0);
    print_message("%53s99.9%% CI [%.4f, %.4f]\n", "", m.lo, m.hi);
    assert_true(m.lo <= m.bound && m.bound <= m.hi);
}

static const pct_sim_adversary advs[] = {PCT_SIM_PICK_FIRST, PCT_SIM_PICK_LAST,
                                         PCT_SIM_PICK_RANDOM};

/* Fig. 3(a) with two consumers: PCT hits unless thread 0 has the top
 * priority (2/3); PPCT hits for sure when an adversary runs the newest
 * thread first. */
static void test_order(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_order(&prog, 2, 3);
    assert_clears(run_trials(
        &prog, on(PCT_KIND_PCT, 1, 1, PCT_SIM_PICK_FIRST, PCT_DEFAULT_STARVATION, 1000000)));
    assert_clears(run_trials(
        &prog, on(PCT_KIND_PPCT, 1, 1, PCT_SIM_PICK_LAST, PCT_DEFAULT_STARVATION, 2000000)));
    assert_clears(run_trials(
        &prog, on(PCT_KIND_PPCT, 1, 1, PCT_SIM_PICK_RANDOM, PCT_DEFAULT_STARVATION, 3000000)));
}

/* Fig. 3(b) with two steps between check and use: any of three change
 * points works, three times the bound. */
static void test_atomicity(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_atomicity(&prog, 3, 2);
    assert_clears(run_trials(
        &prog, on(PCT_KIND_PCT, 2, 1, PCT_SIM_PICK_FIRST, PCT_DEFAULT_STARVATION, 4000000)));
    for (size_t a = 0; a < 3; a++)
        assert_clears(run_trials(
            &prog, on(PCT_KIND_PPCT, 2, 1, advs[a], PCT_DEFAULT_STARVATION, 5000000 + a * 100000)));
}

/* Fig. 3(c): either thread may be the one preempted between its locks. */
static void test_deadlock(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_deadlock(&prog, 2, 1);
    assert_clears(run_trials(
        &prog, on(PCT_KIND_PCT, 2, 1, PCT_SIM_PICK_FIRST, PCT_DEFAULT_STARVATION, 6000000)));
    for (size_t a = 0; a < 3; a++)
        assert_clears(run_trials(
            &prog, on(PCT_KIND_PPCT, 2, 1, advs[a], PCT_DEFAULT_STARVATION, 7000000 + a * 100000)));
}

/* A deadlock among three threads, where PPCT has real choices to make. The
 * adversary that always runs the first-created H thread leaves exactly one
 * way in (thread 1 in L, change point at step 1): the bound, attained. */
static void test_lock_cycle(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_lock_cycle(&prog, 3, 3);
    assert_clears(run_trials(
        &prog, on(PCT_KIND_PCT, 2, 1, PCT_SIM_PICK_FIRST, PCT_DEFAULT_STARVATION, 8000000)));
    assert_contains(run_trials(&prog, on(PCT_KIND_PPCT, 2, 1, PCT_SIM_PICK_FIRST, 0.0, 9000000)));
    assert_clears(run_trials(
        &prog, on(PCT_KIND_PPCT, 2, 1, PCT_SIM_PICK_LAST, PCT_DEFAULT_STARVATION, 9100000)));
    assert_clears(run_trials(
        &prog, on(PCT_KIND_PPCT, 2, 1, PCT_SIM_PICK_RANDOM, PCT_DEFAULT_STARVATION, 9200000)));
}

/* Depth 3, two change points. */
static void test_torn(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_torn(&prog, 2, 1, 2);
    assert_clears(run_trials(
        &prog, on(PCT_KIND_PCT, 3, 1, PCT_SIM_PICK_FIRST, PCT_DEFAULT_STARVATION, 10000000)));
    for (size_t a = 0; a < 3; a++)
        assert_clears(run_trials(&prog, on(PCT_KIND_PPCT, 3, 1, advs[a], PCT_DEFAULT_STARVATION,
                                           11000000 + a * 100000)));
}

/* On the bare shapes exactly one schedule choice exposes the bug and the
 * bound is attained: the measured interval must contain it (a rate clearly
 * below would break the guarantee, one clearly above would mean the shape
 * is not the worst case we think). Starvation off: the pure algorithm. */
static void test_bound_is_tight_on_bare_shapes(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_order(&prog, 1, 3);
    assert_contains(run_trials(&prog, on(PCT_KIND_PCT, 1, 1, PCT_SIM_PICK_FIRST, 0.0, 12000000)));
    /* The first-listed adversary always runs thread 0 when it is in H. */
    pct_sim_shape_order(&prog, 2, 3);
    assert_contains(run_trials(&prog, on(PCT_KIND_PPCT, 1, 1, PCT_SIM_PICK_FIRST, 0.0, 13000000)));
    pct_sim_shape_atomicity(&prog, 3, 0);
    assert_contains(run_trials(&prog, on(PCT_KIND_PCT, 2, 1, PCT_SIM_PICK_FIRST, 0.0, 14000000)));
    pct_sim_shape_torn(&prog, 2, 0, 2);
    assert_contains(run_trials(&prog, (trials){.kind = PCT_KIND_PCT,
                                               .d = 3,
                                               .r = 1,
                                               .adv = PCT_SIM_PICK_FIRST,
                                               .runs = 3 * TRIALS,
                                               .q = 0.0,
                                               .seed0 = 15000000}));
}

/* RPro on bugs whose change points lie within its radius: the depth-3 torn
 * read with a long tail (radius 3) and the Fig. 3(c) deadlock (depth 2,
 * where RPro is PCT). PCT's rate on the same torn shape is printed beside
 * it: the point of RPro is that it is much larger. */
static void test_rpro_within_radius(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_torn(&prog, 0, 1, 40);
    measure rp = run_trials(
        &prog, on(PCT_KIND_RPRO, 3, 3, PCT_SIM_PICK_FIRST, PCT_DEFAULT_STARVATION, 16000000));
    assert_clears(rp);
    measure pc = run_trials(
        &prog, on(PCT_KIND_PCT, 3, 3, PCT_SIM_PICK_FIRST, PCT_DEFAULT_STARVATION, 17000000));
    assert_true(rp.rate > pc.rate);
    pct_sim_shape_deadlock(&prog, 10, 1);
    assert_clears(run_trials(
        &prog, on(PCT_KIND_RPRO, 2, 2, PCT_SIM_PICK_FIRST, PCT_DEFAULT_STARVATION, 18000000)));
}

/* Fig. 3(b) inside a thread that first works alone for `solo` steps, then
 * starts the checker, and joins it and works alone again: the solo steps
 * are no choices. */
static bool solo_bug(const pct_sim_run *run)
{
    return run->reg[1][0] != 0 && run->reg[1][1] == 0;
}

static void shape_atomicity_solo(pct_sim_program *prog, size_t solo, size_t pad)
{
    memset(prog, 0, sizeof *prog);
    prog->name = "solo-atom";
    prog->depth = 2;
    prog->bug = solo_bug;
    prog->init[0] = 1;
    prog->thread[0].at_start = true;
    pct_sim_pad(prog, 0, solo);
    pct_sim_add(prog, 0, PCT_SIM_SPAWN, 1, 0);
    pct_sim_pad(prog, 0, pad);
    pct_sim_add(prog, 0, PCT_SIM_STORE, 0, 0);
    pct_sim_add(prog, 0, PCT_SIM_JOIN, 1, 0);
    pct_sim_pad(prog, 0, solo);
    pct_sim_pad(prog, 1, pad);
    pct_sim_add(prog, 1, PCT_SIM_LOAD, 0, 0);
    pct_sim_add(prog, 1, PCT_SIM_LOAD, 0, 1);
    pct_sim_pad(prog, 1, pad);
}

/* Issue 17: only choices count. One change point value exposes the bug
 * (the checker's first load, with the checker on top), so PCT hits with
 * probability exactly 1/(2k) for whichever k it is given: counting only
 * choices, k is the few steps where both threads run, and the bound holds
 * with that k and is attained; counting every step, k also holds the 80
 * solo steps and the rate drops to match. */
static void test_choices_only_on_solo_work(void **state)
{
    (void)state;
    static pct_sim_program prog;
    shape_atomicity_solo(&prog, 40, 3);
    measure choices = run_trials(&prog, on(PCT_KIND_PCT, 2, 1, PCT_SIM_PICK_FIRST, 0.0, 19000000));
    assert_contains(choices);
    trials all = on(PCT_KIND_PCT, 2, 1, PCT_SIM_PICK_FIRST, 0.0, 20000000);
    all.all_steps = true;
    measure every = run_trials(&prog, all);
    assert_contains(every);
    assert_true(choices.lo > every.hi);
    /* PPCT (whatever the adversary picks) and RPro (which is PCT at d = 2)
     * attain it too. */
    assert_contains(run_trials(&prog, on(PCT_KIND_PPCT, 2, 1, PCT_SIM_PICK_RANDOM, 0.0, 21000000)));
    assert_contains(run_trials(&prog, on(PCT_KIND_RPRO, 2, 2, PCT_SIM_PICK_FIRST, 0.0, 22000000)));
}

/* The all-steps mode (count_all_steps) keeps its guarantee on the Fig. 3
 * shapes, k = every operation once. */
static void test_all_steps_mode(void **state)
{
    (void)state;
    static pct_sim_program prog;
    const pct_kind kinds[] = {PCT_KIND_PCT, PCT_KIND_PPCT};
    for (size_t i = 0; i < 2; i++) {
        trials t =
            on(kinds[i], 2, 1, PCT_SIM_PICK_RANDOM, PCT_DEFAULT_STARVATION, 23000000 + i * 1000000);
        t.all_steps = true;
        pct_sim_shape_atomicity(&prog, 3, 2);
        assert_clears(run_trials(&prog, t));
        t.seed0 += 100000;
        pct_sim_shape_deadlock(&prog, 2, 1);
        assert_clears(run_trials(&prog, t));
        t.seed0 += 100000;
        t.d = 3;
        pct_sim_shape_torn(&prog, 2, 1, 2);
        assert_clears(run_trials(&prog, t));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_atomicity),
        cmocka_unit_test(test_deadlock),
        cmocka_unit_test(test_lock_cycle),
        cmocka_unit_test(test_torn),
        cmocka_unit_test(test_bound_is_tight_on_bare_shapes),
        cmocka_unit_test(test_rpro_within_radius),
        cmocka_unit_test(test_choices_only_on_solo_work),
        cmocka_unit_test(test_all_steps_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
