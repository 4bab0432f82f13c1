/* search/: configuration defaults, RND/SHC/SA on an abstract problem,
 * determinism, the move/undo protocol, SA's scaled temperature, and the
 * statistics helpers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include <weft/search.h>

static void test_defaults_follow_paper(void **state)
{
    (void)state;
    search_config c = search_config_default(10000000);
    assert_int_equal(c.budget, 1000000);
    assert_int_equal(c.nsteps, 4);
    assert_int_equal(c.steps[0], 10000);
    assert_int_equal(c.steps[1], 1000);
    assert_int_equal(c.steps[2], 500);
    assert_int_equal(c.steps[3], 50);
    assert_int_equal(c.tries_per_step, 20);
    assert_int_equal(c.restart, 150);
    assert_true(c.sa_tmax == 1e-4);
    assert_true(c.sa_r == 0.95);
    assert_int_equal(c.sa_cool_every, 80);

    c = search_config_default(1000000);
    assert_int_equal(c.restart, 150);
    assert_true(c.sa_tmax == 1e-2);
    assert_int_equal(c.steps[0], 1000);
    assert_int_equal(c.steps[3], 5);

    c = search_config_default(1000);
    assert_int_equal(c.restart, 50);
    assert_true(c.sa_tmax == 1e-2);
    for (size_t i = 0; i < c.nsteps; i++)
        assert_int_equal(c.steps[i], 1); /* scaled steps never drop to 0 */

    search_algorithm a;
    assert_int_equal(search_algorithm_parse("shc", &a), 0);
    assert_int_equal(a, SEARCH_SHC);
    assert_string_equal(search_algorithm_name(SEARCH_SA), "sa");
    assert_int_equal(search_algorithm_parse("ga", &a), -1);
}

/* Three "threads", one event each at base + x_i; Eq. 4-like terms over the
 * closest later event; the target is a term of exactly 0. Stateful, with an
 * incremental move that checks the search keeps it in sync. */
typedef struct toy {
    uint64_t base[3];
    uint64_t cur[3];
    uint64_t full_calls, move_calls, desync;
} toy;

static double toy_eval(const toy *t, int *aligned)
{
    double f = 0;
    *aligned = 0;
    for (int i = 0; i < 3; i++) {
        uint64_t pi = t->base[i] + t->cur[i], best = UINT64_MAX;
        for (int j = 0; j < 3; j++) {
            uint64_t pj = t->base[j] + t->cur[j];
            if (j != i && pj >= pi && pj - pi < best)
                best = pj - pi;
        }
        if (best == UINT64_MAX)
            continue;
        f += 1.0 - 1.0 / (1.0 + (double)best);
        *aligned |= best == 0;
    }
    return f;
}

static double toy_fitness(void *ctx, const uint64_t *x)
{
    toy *t = ctx;
    memcpy(t->cur, x, sizeof t->cur);
    t->full_calls++;
    int a;
    return toy_eval(t, &a);
}

static double toy_move(void *ctx, size_t i, uint64_t from, uint64_t to)
{
    toy *t = ctx;
    if (t->cur[i] != from)
        t->desync++;
    t->cur[i] = to;
    t->move_calls++;
    int a;
    return toy_eval(t, &a);
}

static int toy_target(void *ctx, const uint64_t *x, double f)
{
    toy *t = ctx;
    if (memcmp(t->cur, x, sizeof t->cur) != 0)
        t->desync++;
    (void)f;
    int a;
    toy_eval(t, &a);
    return a;
}

static search_problem toy_problem(toy *t, int with_move)
{
    *t = (toy){.base = {100, 2600, 7100}};
    search_problem p = {.dim = 3,
                        .ctx = t,
                        .fitness = toy_fitness,
                        .move = with_move ? toy_move : NULL,
                        .target = toy_target};
    return p;
}

static void check_hit(const search_problem *p, const search_result *r, uint64_t budget)
{
    assert_true(r->hit);
    assert_non_null(r->hit_x);
    assert_true(r->evals_to_hit >= 1 && r->evals_to_hit <= budget);
    assert_int_equal(r->evaluations, r->evals_to_hit); /* stopped at the hit */
    toy *t = p->ctx;
    memcpy(t->cur, r->hit_x, sizeof t->cur);
    int aligned;
    toy_eval(t, &aligned);
    assert_true(aligned);
    assert_true(r->best_fitness <= r->hit_fitness);
    assert_true(r->seconds >= 0);
}

static void test_algorithms_hit_target(void **state)
{
    (void)state;
    for (int alg = SEARCH_RND; alg <= SEARCH_SA; alg++) {
        for (int with_move = 0; with_move <= 1; with_move++) {
            toy t;
            search_problem p = toy_problem(&t, with_move);
            search_config c = search_config_default(10000);
            c.algorithm = (search_algorithm)alg;
            c.seed = 7;
            search_result r;
            char err[128];
            assert_int_equal(search_run(&p, &c, &r, err, sizeof err), 0);
            check_hit(&p, &r, c.budget);
            assert_int_equal(t.desync, 0);
            if (alg != SEARCH_RND && with_move)
                assert_true(t.move_calls > 0);
            print_message("%-3s move=%d: first alignment after %llu evaluations\n",
                          search_algorithm_name(c.algorithm), with_move,
                          (unsigned long long)r.evals_to_hit);
            search_result_free(&r);
        }
    }
}

static void test_same_seed_same_run(void **state)
{
    (void)state;
    for (int alg = SEARCH_RND; alg <= SEARCH_SA; alg++) {
        search_result r[3];
        for (int k = 0; k < 3; k++) {
            toy t;
            search_problem p = toy_problem(&t, 1);
            search_config c = search_config_default(10000);
            c.algorithm = (search_algorithm)alg;
            c.seed = k < 2 ? 42 : 43;
            assert_int_equal(search_run(&p, &c, &r[k], NULL, 0), 0);
        }
        assert_int_equal(r[0].evals_to_hit, r[1].evals_to_hit);
        assert_int_equal(r[0].evaluations, r[1].evaluations);
        assert_int_equal(r[0].restarts, r[1].restarts);
        assert_true(r[0].best_fitness == r[1].best_fitness);
        assert_memory_equal(r[0].best_x, r[1].best_x, 3 * sizeof(uint64_t));
        assert_memory_equal(r[0].hit_x, r[1].hit_x, 3 * sizeof(uint64_t));
        /* A different seed is a different run (with overwhelming probability). */
        assert_true(r[2].evals_to_hit != r[0].evals_to_hit ||
                    memcmp(r[2].hit_x, r[0].hit_x, 3 * sizeof(uint64_t)) != 0);
        for (int k = 0; k < 3; k++)
            search_result_free(&r[k]);
    }
}

static void test_budget_without_target(void **state)
{
    (void)state;
    for (int alg = SEARCH_RND; alg <= SEARCH_SA; alg++) {
        toy t;
        search_problem p = toy_problem(&t, 1);
        p.target = NULL;
        search_config c = search_config_default(10000);
        c.budget = 200000;
        c.algorithm = (search_algorithm)alg;
        search_result r;
        assert_int_equal(search_run(&p, &c, &r, NULL, 0), 0);
        assert_false(r.hit);
        assert_null(r.hit_x);
        assert_int_equal(r.evals_to_hit, 0);
        assert_int_equal(r.evaluations, 200000);
        /* Full evaluations: every RND point, else the start and each restart;
         * every other counted evaluation is a move (undos are extra moves). */
        if (alg == SEARCH_RND) {
            assert_int_equal(t.full_calls, 200000);
        } else {
            assert_true(r.restarts > 0);
            assert_int_equal(t.full_calls, 1 + r.restarts);
            assert_true(t.move_calls >= 200000 - t.full_calls);
        }
        search_result_free(&r);
    }
}

/* Records every point RND evaluates. */
typedef struct recorder {
    uint64_t x[4][64];
    size_t n;
} recorder;

static double recorder_fitness(void *ctx, const uint64_t *x)
{
    recorder *r = ctx;
    if (r->n < 64)
        memcpy(&r->x[0][0] + 4 * r->n, x, 4 * sizeof *x);
    r->n++;
    return 1.0;
}

/* RND draws its points with its own copy of gsl_rng_uniform_int's
 * arithmetic (scale computed once, 32-bit division): the points must be
 * exactly gsl_rng_uniform_int's, seed for seed. dmax + 1 = 3e9 leaves a
 * scale of 1 and rejects ~30% of draws; 10^7 + 1 and 2^32 - 2 hit the
 * other ends; 2^32 and 2^40 take uniform_below's 64-bit path. */
static void test_rnd_points_are_gsl_stream(void **state)
{
    (void)state;
    const uint64_t dmaxes[] = {0,           1,           1000,        10000000,
                               2999999999u, 4294967294u, 4294967295u, UINT64_C(1) << 40};
    for (size_t k = 0; k < sizeof dmaxes / sizeof *dmaxes; k++) {
        recorder rec = {.n = 0};
        search_problem p = {.dim = 4, .ctx = &rec, .fitness = recorder_fitness};
        search_config c = search_config_default(dmaxes[k]);
        c.algorithm = SEARCH_RND;
        c.seed = 1000 + k;
        c.budget = 64;
        search_result r;
        assert_int_equal(search_run(&p, &c, &r, NULL, 0), 0);
        search_result_free(&r);
        gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(g, (unsigned long)c.seed);
        size_t points = dmaxes[k] == 0 ? 1 : 64; /* no freedom: one point */
        assert_int_equal(rec.n, points);
        uint64_t top = 0;
        for (size_t i = 0; i < 4 * points; i++) {
            uint64_t want;
            if (dmaxes[k] == 0) {
                want = gsl_rng_uniform_int(g, 1);
            } else if (dmaxes[k] + 1 <= 0xffffffffu) {
                want = gsl_rng_uniform_int(g, (unsigned long)(dmaxes[k] + 1));
            } else {
                do
                    want = ((uint64_t)gsl_rng_get(g) << 32) | gsl_rng_get(g);
                while (want >= UINT64_MAX - UINT64_MAX % (dmaxes[k] + 1));
                want %= dmaxes[k] + 1;
            }
            assert_int_equal((&rec.x[0][0])[i], want);
            top = want > top ? want : top;
        }
        /* Not a stream of zeros: large ranges are reached. */
        if (dmaxes[k] >= 1000)
            assert_true(top > dmaxes[k] / 2);
        gsl_rng_free(g);
    }
}

static void test_bad_config(void **state)
{
    (void)state;
    toy t;
    search_problem p = toy_problem(&t, 1);
    search_config c = search_config_default(1000);
    search_result r;
    char err[128];
    c.budget = 0;
    assert_int_equal(search_run(&p, &c, &r, err, sizeof err), -1);
    assert_string_equal(err, "search: budget must be at least one evaluation");
    c = search_config_default(1000);
    c.algorithm = SEARCH_SHC;
    c.steps[2] = 0;
    assert_int_equal(search_run(&p, &c, &r, err, sizeof err), -1);
    assert_string_equal(err, "search: steps[2] must be at least 1");
    const double p0s[] = {0, 1, -0.5, NAN};
    for (size_t i = 0; i < 5; i++) {
        c = search_config_default(1000);
        c.sa_temperature = SEARCH_SA_SCALED;
        if (i < 4)
            c.sa_p0 = p0s[i];
        else
            c.sa_sample = 0;
        assert_int_equal(search_run(&p, &c, &r, err, sizeof err), -1);
        assert_string_equal(err, "search: scaled SA needs sa_sample >= 1 and 0 < sa_p0 < 1");
    }
}

/* ---- SA's scaled temperature ------------------------------------------------ */

static void test_scaled_tmax_rule(void **state)
{
    (void)state;
    double odd[] = {4e-9, 1e-9, 3e-9, 2e-9, 5e-9};
    assert_float_equal(search_sa_scaled_tmax(odd, 5, 0.5), 3e-9 / log(2), 1e-21);
    assert_true(odd[0] == 1e-9 && odd[4] == 5e-9); /* sorted in place */
    double even[] = {10, 1, 3, 2};
    assert_float_equal(search_sa_scaled_tmax(even, 4, 0.2), 2.5 / log(5), 1e-12);
    double one[] = {0.25};
    assert_float_equal(search_sa_scaled_tmax(one, 1, exp(-1)), 0.25, 1e-12);
    /* The definition: a median-sized worse move is accepted with p0. */
    double w[] = {7e-6, 1e-3, 2e-7};
    double t = search_sa_scaled_tmax(w, 3, 0.3);
    assert_float_equal(exp(-7e-6 / t), 0.3, 1e-12);
    assert_true(isnan(search_sa_scaled_tmax(one, 0, 0.5)));
    assert_true(isnan(search_sa_scaled_tmax(one, 1, 0)));
    assert_true(isnan(search_sa_scaled_tmax(one, 1, 1)));
    double bad[] = {1, 0};
    assert_true(isnan(search_sa_scaled_tmax(bad, 2, 0.5)));
    search_sa_temperature tt;
    assert_int_equal(search_sa_temperature_parse("scaled", &tt), 0);
    assert_int_equal(tt, SEARCH_SA_SCALED);
    assert_string_equal(search_sa_temperature_name(SEARCH_SA_PAPER), "paper");
    assert_int_equal(search_sa_temperature_parse("hot", &tt), -1);
}

/* Every move the search reports, in order. */
typedef struct move_log {
    search_move_info m[4096];
    size_t n;
} move_log;

static void log_move(void *ctx, const search_move_info *m)
{
    move_log *l = ctx;
    if (l->n < sizeof l->m / sizeof *l->m)
        l->m[l->n] = *m;
    l->n++;
}

static search_config scaled_config(uint64_t seed, unsigned sample, double p0, move_log *ml)
{
    search_config c = search_config_default(10000);
    c.algorithm = SEARCH_SA;
    c.sa_temperature = SEARCH_SA_SCALED;
    c.sa_sample = sample;
    c.sa_p0 = p0;
    c.seed = seed;
    c.observe = log_move;
    c.observe_ctx = ml;
    return c;
}

/* T_max is the rule applied to the worse differences of exactly the first
 * sa_sample moves; those moves keep only improvements (T = 0); from the
 * next move on T starts at T_max and cools by r every sa_cool_every moves. */
static void test_scaled_tmax_from_first_moves(void **state)
{
    (void)state;
    static move_log ml;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        toy t;
        search_problem p = toy_problem(&t, 1);
        p.target = NULL;
        ml.n = 0;
        search_config c = scaled_config(seed, 100, 0.5, &ml);
        c.budget = 2000;
        search_result r;
        assert_int_equal(search_run(&p, &c, &r, NULL, 0), 0);
        assert_int_equal(ml.n, r.moves);
        assert_true(r.moves > 100 + 2 * c.sa_cool_every);
        double worse[100];
        size_t nw = 0, k = 0;
        for (; k < 100; k++) {
            const search_move_info *m = &ml.m[k];
            assert_true(m->temperature == 0);
            assert_int_equal(m->accepted, m->to < m->from);
            if (m->to > m->from)
                worse[nw++] = m->to - m->from;
        }
        assert_true(nw > 0); /* this toy always has worse moves in 100 */
        double want = search_sa_scaled_tmax(worse, nw, 0.5);
        assert_true(r.sa_tmax == want);
        /* The next moves anneal: T_max, then r T_max after sa_cool_every
         * moves (no restart can come first: restart = 50 < 80 needs 50
         * non-improving moves in a row, so only check while none happened). */
        assert_true(ml.m[100].temperature == want);
        int restarted = 0;
        for (k = 100; k < 100 + c.sa_cool_every + 1 && !restarted; k++) {
            double expect = k - 100 < c.sa_cool_every ? want : want * c.sa_r;
            restarted = ml.m[k].temperature != expect;
        }
        if (!restarted)
            assert_true(ml.m[100 + c.sa_cool_every].temperature == want * c.sa_r);
        search_result_free(&r);
    }
}

/* With sa_sample = 1 and an improving first move, sampling goes on to the
 * first worse move, and T_max comes from that one difference. */
static void test_scaled_sampling_waits_for_a_worse_move(void **state)
{
    (void)state;
    static move_log ml;
    int extended = 0;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        toy t;
        search_problem p = toy_problem(&t, 1);
        p.target = NULL;
        ml.n = 0;
        search_config c = scaled_config(seed, 1, 0.25, &ml);
        c.budget = 500;
        search_result r;
        assert_int_equal(search_run(&p, &c, &r, NULL, 0), 0);
        size_t k = 0;
        while (k < ml.n && !(ml.m[k].to > ml.m[k].from)) {
            assert_true(ml.m[k].temperature == 0);
            k++;
        }
        assert_true(k + 1 < ml.n);
        double d = ml.m[k].to - ml.m[k].from;
        assert_true(ml.m[k].temperature == 0);
        assert_float_equal(r.sa_tmax, d / log(4), 1e-15 + 1e-12 * d);
        assert_true(ml.m[k + 1].temperature == r.sa_tmax);
        extended += k > 0;
        search_result_free(&r);
    }
    assert_true(extended > 0);
}

static void test_scaled_same_seed_same_run(void **state)
{
    (void)state;
    search_result r[3];
    for (int k = 0; k < 3; k++) {
        toy t;
        search_problem p = toy_problem(&t, 1);
        search_config c = scaled_config(k < 2 ? 11 : 12, 100, 0.5, NULL);
        c.observe = NULL;
        assert_int_equal(search_run(&p, &c, &r[k], NULL, 0), 0);
        assert_true(r[k].hit);
    }
    assert_int_equal(r[0].evals_to_hit, r[1].evals_to_hit);
    assert_true(r[0].sa_tmax == r[1].sa_tmax);
    assert_int_equal(r[0].moves_worse, r[1].moves_worse);
    assert_int_equal(r[0].moves_worse_accepted, r[1].moves_worse_accepted);
    assert_memory_equal(r[0].hit_x, r[1].hit_x, 3 * sizeof(uint64_t));
    assert_true(r[2].sa_tmax != r[0].sa_tmax || r[2].evals_to_hit != r[0].evals_to_hit);
    for (int k = 0; k < 3; k++)
        search_result_free(&r[k]);
}

/* The sampled moves are budget evaluations: a budget inside the sample ends
 * the run there, T_max never set; a longer one is spent exactly. */
static void test_scaled_budget_respected(void **state)
{
    (void)state;
    const uint64_t budgets[] = {1, 2, 30, 101, 102, 5000};
    for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++) {
        toy t;
        search_problem p = toy_problem(&t, 1);
        p.target = NULL;
        search_config c = scaled_config(3, 100, 0.5, NULL);
        c.observe = NULL;
        c.budget = budgets[b];
        search_result r;
        assert_int_equal(search_run(&p, &c, &r, NULL, 0), 0);
        assert_int_equal(r.evaluations, budgets[b]);
        assert_int_equal(t.full_calls, 1 + r.restarts);
        if (budgets[b] <= 101) { /* the first random point and 100 moves */
            assert_true(r.sa_tmax == 0);
            assert_int_equal(r.moves_worse_accepted, 0);
        } else {
            assert_true(r.sa_tmax > 0);
        }
        search_result_free(&r);
    }
}

/* The paper's schedule reports its configured T_max and starts there. */
static void test_paper_temperature_reported(void **state)
{
    (void)state;
    static move_log ml;
    toy t;
    search_problem p = toy_problem(&t, 1);
    search_config c = search_config_default(10000);
    c.observe = log_move;
    c.observe_ctx = &ml;
    ml.n = 0;
    search_result r;
    assert_int_equal(search_run(&p, &c, &r, NULL, 0), 0);
    assert_true(r.sa_tmax == 1e-2);
    assert_true(ml.n > 0 && ml.m[0].temperature == 1e-2);
    assert_int_equal(ml.n, r.moves);
    assert_true(r.moves_worse_accepted <= r.moves_worse && r.moves_worse <= r.moves);
    search_result_free(&r);
}

static void test_clopper_pearson(void **state)
{
    (void)state;
    double lo, hi;
    assert_int_equal(search_clopper_pearson(0, 10, 0.95, &lo, &hi), 0);
    assert_true(lo == 0);
    assert_float_equal(hi, 0.3084971, 1e-6);
    assert_int_equal(search_clopper_pearson(5, 10, 0.95, &lo, &hi), 0);
    assert_float_equal(lo, 0.1870860, 1e-6);
    assert_float_equal(hi, 0.8129140, 1e-6);
    assert_int_equal(search_clopper_pearson(10, 10, 0.95, &lo, &hi), 0);
    assert_float_equal(lo, 0.6915029, 1e-6);
    assert_true(hi == 1);
    /* R: binom.test(1, 100)$conf.int = 0.0002531460 0.0544593854 */
    assert_int_equal(search_clopper_pearson(1, 100, 0.95, &lo, &hi), 0);
    assert_float_equal(lo, 0.0002531460, 1e-9);
    assert_float_equal(hi, 0.0544593854, 1e-9);
    /* Large n must stay finite and bracket the estimate. */
    assert_int_equal(search_clopper_pearson(37, 1000000, 0.95, &lo, &hi), 0);
    assert_true(lo > 0 && lo < 37e-6 && hi > 37e-6 && hi < 1e-4);
    assert_int_equal(search_clopper_pearson(999999, 1000000, 0.95, &lo, &hi), 0);
    assert_true(lo > 0.99999 && lo < 0.999999 && hi < 1 && hi > 0.999999);
    assert_int_equal(search_clopper_pearson(3, 2, 0.95, &lo, &hi), -1);
    assert_int_equal(search_clopper_pearson(0, 0, 0.95, &lo, &hi), -1);
    assert_int_equal(search_clopper_pearson(1, 2, 1.0, &lo, &hi), -1);
}

static void test_quartiles(void **state)
{
    (void)state;
    double q1, med, q3;
    const double odd[] = {5, 1, 4, 2, 3};
    assert_int_equal(search_quartiles(odd, 5, &q1, &med, &q3), 0);
    assert_true(q1 == 2 && med == 3 && q3 == 4);
    assert_true(odd[0] == 5); /* input untouched */
    const double even[] = {4, 3, 2, 1};
    assert_int_equal(search_quartiles(even, 4, &q1, &med, &q3), 0);
    assert_float_equal(q1, 1.75, 1e-12);
    assert_float_equal(med, 2.5, 1e-12);
    assert_float_equal(q3, 3.25, 1e-12);
    assert_int_equal(search_quartiles(even, 0, &q1, &med, &q3), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_follow_paper),
        cmocka_unit_test(test_algorithms_hit_target),
        cmocka_unit_test(test_same_seed_same_run),
        cmocka_unit_test(test_budget_without_target),
        cmocka_unit_test(test_rnd_points_are_gsl_stream),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_scaled_tmax_rule),
        cmocka_unit_test(test_scaled_tmax_from_first_moves),
        cmocka_unit_test(test_scaled_sampling_waits_for_a_worse_move),
        cmocka_unit_test(test_scaled_same_seed_same_run),
        cmocka_unit_test(test_scaled_budget_respected),
        cmocka_unit_test(test_paper_temperature_reported),
        cmocka_unit_test(test_clopper_pearson),
        cmocka_unit_test(test_quartiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
