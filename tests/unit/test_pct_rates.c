/* Hit rates of PCT, PPCT and RPro on Nagarakatte et al.'s Fig. 3 bug shapes, against
 * the guarantees weft claims (pct_guarantee).
 *
 * Each case runs the shape under thousands of seeded policies, counts the
 * runs whose oracle fires, and computes the Clopper-Pearson 95% interval of
 * the hit rate. Where the shape leaves the algorithm slack the interval's
 * lower end must clear the bound; on the bare shapes, where the bound is
 * attained exactly, the interval must contain it. n is the program's thread
 * count and k its step count (every operation once), as a profiling run
 * would report. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>

#include "pct_sim.h"

enum { TRIALS = 4000 };

typedef struct measure {
    unsigned hits, trials;
    double rate, lo, hi, bound;
} measure;

/* 95% for "the rate clears the bound"; the tightness checks test four
 * cases two-sided and use 99.9% so that a fair sample fails rarely. */
#define ALPHA 0.05
#define ALPHA_TIGHT 0.001

/* The p-quantile of Beta(a, b). gsl_cdf_beta_Pinv returns NaN for some
 * large parameters; bisection on the CDF is slow but always answers. */
static double beta_quantile(double p, double a, double b)
{
    double x = gsl_cdf_beta_Pinv(p, a, b);
    if (isfinite(x))
        return x;
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 100; i++) {
        double mid = 0.5 * (lo + hi);
        if (gsl_cdf_beta_P(mid, a, b) < p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* Exact binomial interval of confidence 1 - alpha. GSL's inverse beta hangs
 * at x = 0 and x = n, where the interval's end is 0 or 1 by definition. */
static void clopper_pearson(unsigned x, unsigned n, double alpha, double *lo, double *hi)
{
    *lo = x == 0 ? 0.0 : beta_quantile(alpha / 2, x, n - x + 1);
    *hi = x == n ? 1.0 : beta_quantile(1 - alpha / 2, x + 1, n - x);
}

static const char *adv_name(pct_sim_adversary adv)
{
    return adv == PCT_SIM_PICK_FIRST ? "first" : adv == PCT_SIM_PICK_LAST ? "last" : "random";
}

/* Runs prog `trials` times under kind with seeds seed0+1.., starvation q. The
 * bound is the claim for runs without an override times the chance that a
 * run of k decisions has none. */
static measure run_trials(const pct_sim_program *prog, pct_kind kind, unsigned d, uint64_t r,
                          pct_sim_adversary adv, unsigned trials, double q, uint64_t seed0)
{
    uint64_t k = pct_sim_op_count(prog);
    measure m = {.trials = trials};
    for (unsigned t = 0; t < trials; t++) {
        pct_config cfg;
        pct_config_init(&cfg, kind);
        cfg.n = (uint32_t)prog->nthreads;
        cfg.k = k;
        cfg.d = d;
        cfg.r = r;
        cfg.seed = seed0 + t + 1;
        cfg.starvation = q;
        char err[256];
        pct_policy *p = pct_policy_create(&cfg, err, sizeof err);
        assert_non_null(p);
        pct_sim_run run;
        assert_int_equal(pct_sim_execute(prog, p, adv, cfg.seed, 10 * k, NULL, NULL, &run), 0);
        assert_true(run.completed || run.deadlocked);
        assert_true(run.policy_agrees);
        m.hits += run.bug;
        pct_policy_destroy(p);
    }
    m.rate = (double)m.hits / trials;
    clopper_pearson(m.hits, trials, ALPHA, &m.lo, &m.hi);
    m.bound = pct_guarantee(kind, prog->nthreads, k, d, r) * pow(1.0 - q, (double)k);
    print_message("%-10s %-4s %-6s n=%zu k=%3llu d=%u r=%llu: %4u/%u = %.4f  CI [%.4f, %.4f]  "
                  "bound %.5f\n",
                  prog->name, pct_kind_name(kind), adv_name(adv), prog->nthreads,
                  (unsigned long long)k, d, (unsigned long long)r, m.hits, trials, m.rate, m.lo,
                  m.hi, m.bound);
    return m;
}

static void assert_clears(measure m)
{
    assert_true(m.bound > 0.0);
    assert_true(m.lo >= m.bound);
}

static void assert_contains(measure m)
{
    clopper_pearson(m.hits, m.trials, ALPHA_TIGHT, &m.lo, &m.hi);
    print_message("%45s99.9%% CI [%.4f, %.4f]\n", "", m.lo, m.hi);
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
    assert_clears(run_trials(&prog, PCT_KIND_PCT, 1, 1, PCT_SIM_PICK_FIRST, TRIALS,
                             PCT_DEFAULT_STARVATION, 1000000));
    assert_clears(run_trials(&prog, PCT_KIND_PPCT, 1, 1, PCT_SIM_PICK_LAST, TRIALS,
                             PCT_DEFAULT_STARVATION, 2000000));
    assert_clears(run_trials(&prog, PCT_KIND_PPCT, 1, 1, PCT_SIM_PICK_RANDOM, TRIALS,
                             PCT_DEFAULT_STARVATION, 3000000));
}

/* Fig. 3(b) with two steps between check and use: any of three change
 * points works, three times the bound. */
static void test_atomicity(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_atomicity(&prog, 3, 2);
    assert_clears(run_trials(&prog, PCT_KIND_PCT, 2, 1, PCT_SIM_PICK_FIRST, TRIALS,
                             PCT_DEFAULT_STARVATION, 4000000));
    for (size_t a = 0; a < 3; a++)
        assert_clears(run_trials(&prog, PCT_KIND_PPCT, 2, 1, advs[a], TRIALS,
                                 PCT_DEFAULT_STARVATION, 5000000 + a * 100000));
}

/* Fig. 3(c): either thread may be the one preempted between its locks. */
static void test_deadlock(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_deadlock(&prog, 2, 1);
    assert_clears(run_trials(&prog, PCT_KIND_PCT, 2, 1, PCT_SIM_PICK_FIRST, TRIALS,
                             PCT_DEFAULT_STARVATION, 6000000));
    for (size_t a = 0; a < 3; a++)
        assert_clears(run_trials(&prog, PCT_KIND_PPCT, 2, 1, advs[a], TRIALS,
                                 PCT_DEFAULT_STARVATION, 7000000 + a * 100000));
}

/* A deadlock among three threads, where PPCT has real choices to make. The
 * adversary that always runs the first-created H thread leaves exactly one
 * way in (thread 1 in L, change point at step 1): the bound, attained. */
static void test_lock_cycle(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_lock_cycle(&prog, 3, 3);
    assert_clears(run_trials(&prog, PCT_KIND_PCT, 2, 1, PCT_SIM_PICK_FIRST, TRIALS,
                             PCT_DEFAULT_STARVATION, 8000000));
    assert_contains(
        run_trials(&prog, PCT_KIND_PPCT, 2, 1, PCT_SIM_PICK_FIRST, TRIALS, 0.0, 9000000));
    assert_clears(run_trials(&prog, PCT_KIND_PPCT, 2, 1, PCT_SIM_PICK_LAST, TRIALS,
                             PCT_DEFAULT_STARVATION, 9100000));
    assert_clears(run_trials(&prog, PCT_KIND_PPCT, 2, 1, PCT_SIM_PICK_RANDOM, TRIALS,
                             PCT_DEFAULT_STARVATION, 9200000));
}

/* Depth 3, two change points. */
static void test_torn(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_torn(&prog, 2, 1, 2);
    assert_clears(run_trials(&prog, PCT_KIND_PCT, 3, 1, PCT_SIM_PICK_FIRST, TRIALS,
                             PCT_DEFAULT_STARVATION, 10000000));
    for (size_t a = 0; a < 3; a++)
        assert_clears(run_trials(&prog, PCT_KIND_PPCT, 3, 1, advs[a], TRIALS,
                                 PCT_DEFAULT_STARVATION, 11000000 + a * 100000));
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
    assert_contains(
        run_trials(&prog, PCT_KIND_PCT, 1, 1, PCT_SIM_PICK_FIRST, TRIALS, 0.0, 12000000));
    /* The first-listed adversary always runs thread 0 when it is in H. */
    pct_sim_shape_order(&prog, 2, 3);
    assert_contains(
        run_trials(&prog, PCT_KIND_PPCT, 1, 1, PCT_SIM_PICK_FIRST, TRIALS, 0.0, 13000000));
    pct_sim_shape_atomicity(&prog, 3, 0);
    assert_contains(
        run_trials(&prog, PCT_KIND_PCT, 2, 1, PCT_SIM_PICK_FIRST, TRIALS, 0.0, 14000000));
    pct_sim_shape_torn(&prog, 2, 0, 2);
    assert_contains(
        run_trials(&prog, PCT_KIND_PCT, 3, 1, PCT_SIM_PICK_FIRST, 3 * TRIALS, 0.0, 15000000));
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
    measure rp = run_trials(&prog, PCT_KIND_RPRO, 3, 3, PCT_SIM_PICK_FIRST, TRIALS,
                            PCT_DEFAULT_STARVATION, 16000000);
    assert_clears(rp);
    measure pc = run_trials(&prog, PCT_KIND_PCT, 3, 3, PCT_SIM_PICK_FIRST, TRIALS,
                            PCT_DEFAULT_STARVATION, 17000000);
    assert_true(rp.rate > pc.rate);
    pct_sim_shape_deadlock(&prog, 10, 1);
    assert_clears(run_trials(&prog, PCT_KIND_RPRO, 2, 2, PCT_SIM_PICK_FIRST, TRIALS,
                             PCT_DEFAULT_STARVATION, 18000000));
}

int main(void)
{
    gsl_set_error_handler_off();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_atomicity),
        cmocka_unit_test(test_deadlock),
        cmocka_unit_test(test_lock_cycle),
        cmocka_unit_test(test_torn),
        cmocka_unit_test(test_bound_is_tight_on_bare_shapes),
        cmocka_unit_test(test_rpro_within_radius),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
