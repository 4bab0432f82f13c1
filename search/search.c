/* RND, SHC and SA of Bhattacharya et al. §6.1–6.2 over bounded integer vectors.
 *
 * Readings of the paper that the text leaves open, fixed here:
 * - A "move" changes one coordinate by a non-zero step drawn uniformly in
 *   [-s, s]; a step that clamping would turn into no change is flipped, so
 *   every evaluation looks at a new point.
 * - The ladder is a cycle: after the last rung's tries the search goes back to
 *   the largest step, so a restart threshold (150) longer than one pass over
 *   the ladder (4 x 20 = 80) still samples far neighbours before giving up.
 * - "Improvement" means strictly lower fitness than the current point, for
 *   SHC and SA alike. It resets both the ladder and the restart counter. A
 *   worse move that SA accepts counts as non-improving.
 * - SA cools T <- r T every sa_cool_every moves (default: one ladder cycle)
 *   and reheats at each restart; without reheating T reaches 10^-20 T_max
 *   after ~70,000 moves and SA would be SHC for most of a 10^6 budget.
 * - SCALED temperature (weft/search.h): the sampled moves are SHC moves, so
 *   sampling adds no evaluation and a run that hits the target while
 *   sampling is simply a short SHC run. */
#include "weft/search.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_rng.h>

/* Keeps dmax + 1 and clamping arithmetic far from overflow. */
#define SEARCH_DMAX_LIMIT (UINT64_C(1) << 62)

search_config search_config_default(uint64_t dmax)
{
    search_config c;
    memset(&c, 0, sizeof c);
    c.algorithm = SEARCH_SA;
    c.seed = 1;
    c.dmax = dmax;
    c.budget = 1000000;
    c.stop_on_target = 1;
    c.nsteps = 4;
    const uint64_t div[4] = {1000, 10000, 20000, 200000};
    for (size_t i = 0; i < 4; i++) {
        uint64_t s = dmax / div[i];
        c.steps[i] = s ? s : 1;
    }
    c.tries_per_step = 20;
    c.restart = dmax >= 1000000 ? 150 : 50;
    c.sa_tmax = dmax >= 10000000 ? 1e-4 : 1e-2;
    c.sa_r = 0.95;
    c.sa_cool_every = (unsigned)(c.nsteps * c.tries_per_step);
    c.sa_reheat = 1;
    c.sa_temperature = SEARCH_SA_PAPER;
    c.sa_sample = 100;
    c.sa_p0 = 0.5;
    return c;
}

static const char *const algorithm_names[] = {"rnd", "shc", "sa"};
static const char *const temperature_names[] = {"paper", "scaled"};

/* Index of name in names[0..n), or -1. */
static int name_index(const char *const *names, unsigned n, const char *name)
{
    for (unsigned i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return (int)i;
    return -1;
}

const char *search_algorithm_name(search_algorithm a)
{
    return (unsigned)a > SEARCH_SA ? "?" : algorithm_names[a];
}

int search_algorithm_parse(const char *name, search_algorithm *out)
{
    int i = name_index(algorithm_names, SEARCH_SA + 1, name);
    if (i >= 0)
        *out = (search_algorithm)i;
    return i >= 0 ? 0 : -1;
}

const char *search_sa_temperature_name(search_sa_temperature t)
{
    return (unsigned)t > SEARCH_SA_SCALED ? "?" : temperature_names[t];
}

int search_sa_temperature_parse(const char *name, search_sa_temperature *out)
{
    int i = name_index(temperature_names, SEARCH_SA_SCALED + 1, name);
    if (i >= 0)
        *out = (search_sa_temperature)i;
    return i >= 0 ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median, not the mean of Kirkpatrick's rule: on Eq. 4 the worse
 * differences of one run span several orders of magnitude (a move near an
 * alignment changes a term by up to 1/2, one far from it by 10^-10), and
 * the mean would follow the few large ones. */
double search_sa_scaled_tmax(double *worse, size_t n, double p0)
{
    if (n == 0 || !(p0 > 0 && p0 < 1))
        return NAN;
    for (size_t i = 0; i < n; i++)
        if (!(worse[i] > 0 && isfinite(worse[i])))
            return NAN;
    qsort(worse, n, sizeof *worse, cmp_double);
    double med = n % 2 ? worse[n / 2] : 0.5 * (worse[n / 2 - 1] + worse[n / 2]);
    return med / log(1 / p0);
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Uniform in [0, n), n >= 1. mt19937 yields 32 bits per call, which covers
 * every dmax of the paper; larger ranges combine two draws with rejection. */
static uint64_t uniform_below(gsl_rng *rng, uint64_t n)
{
    if (n <= UINT64_C(0xffffffff))
        return gsl_rng_uniform_int(rng, (unsigned long)n);
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    for (;;) {
        uint64_t v = ((uint64_t)gsl_rng_get(rng) << 32) | (uint64_t)gsl_rng_get(rng);
        if (v < limit)
            return v % n;
    }
}

/* gsl_rng_uniform_int(rng, n) for one fixed n, as RND draws dmax + 1 for
 * every coordinate of every point: GSL's own arithmetic (scale = range / n,
 * k = (draw - min) / scale, reject k >= n), so the stream of values is
 * GSL's, but the scale is computed once and the division is done in 32
 * bits, where both operands fit (mt19937's range). gsl_rng_uniform_int,
 * mostly its two 64-bit divisions, was ~15% of an RND evaluation on the
 * CFFT model (4 variables). */
typedef struct fixed_uniform {
    const gsl_rng_type *type;
    void *state;
    uint32_t scale, n; /* n = 0: n does not fit, use uniform_below */
} fixed_uniform;

static fixed_uniform fixed_uniform_make(const gsl_rng *rng, uint64_t n)
{
    fixed_uniform u = {.type = rng->type, .state = rng->state};
    unsigned long range = rng->type->max - rng->type->min;
    if (n >= 1 && n <= range && range <= UINT32_MAX) {
        u.scale = (uint32_t)(range / n);
        u.n = (uint32_t)n;
    }
    return u;
}

static inline uint64_t fixed_uniform_draw(const fixed_uniform *u)
{
    uint32_t k;
    do
        k = (uint32_t)(u->type->get(u->state) - u->type->min) / u->scale;
    while (k >= u->n);
    return k;
}

typedef struct run {
    const search_problem *p;
    const search_config *cfg;
    search_result *res;
    gsl_rng *rng;
    fixed_uniform delay; /* uniform in [0, dmax] */
    uint64_t *x;
    double *worse; /* SCALED SA: worse differences sampled (sa_sample of them) */
    int done;
} run;

/* Bookkeeping shared by every evaluation: budget, best point, first hit. The
 * problem's state matches x when this is called. */
static void record(run *r, double f)
{
    search_result *res = r->res;
    res->evaluations++;
    size_t bytes = r->p->dim * sizeof *r->x;
    if (res->evaluations == 1 || f < res->best_fitness) {
        res->best_fitness = f;
        memcpy(res->best_x, r->x, bytes);
    }
    if (!res->hit && r->p->target && r->p->target(r->p->ctx, r->x, f)) {
        res->hit = 1;
        res->evals_to_hit = res->evaluations;
        res->hit_fitness = f;
        memcpy(res->hit_x, r->x, bytes);
        if (r->cfg->stop_on_target)
            r->done = 1;
    }
    if (res->evaluations >= r->cfg->budget)
        r->done = 1;
}

static double random_point(run *r)
{
    if (r->delay.n)
        for (size_t i = 0; i < r->p->dim; i++)
            r->x[i] = fixed_uniform_draw(&r->delay);
    else
        for (size_t i = 0; i < r->p->dim; i++)
            r->x[i] = uniform_below(r->rng, r->cfg->dmax + 1);
    double f = r->p->fitness(r->p->ctx, r->x);
    record(r, f);
    return f;
}

static void run_rnd(run *r)
{
    while (!r->done)
        random_point(r);
}

static uint64_t neighbour(run *r, uint64_t old, uint64_t step)
{
    uint64_t dmax = r->cfg->dmax;
    uint64_t mag = 1 + uniform_below(r->rng, step);
    int up = gsl_rng_uniform_int(r->rng, 2) == 0;
    if (up ? old == dmax : old == 0)
        up = !up;
    if (up)
        return mag >= dmax - old ? dmax : old + mag;
    return mag >= old ? 0 : old - mag;
}

static double evaluate_move(run *r, size_t i, uint64_t from, uint64_t to)
{
    r->x[i] = to;
    if (r->p->move)
        return r->p->move(r->p->ctx, i, from, to);
    return r->p->fitness(r->p->ctx, r->x);
}

static void undo_move(run *r, size_t i, uint64_t from, uint64_t to)
{
    r->x[i] = from;
    if (r->p->move)
        r->p->move(r->p->ctx, i, to, from);
    else
        r->p->fitness(r->p->ctx, r->x);
}

/* SA's temperature: the current T, the T_max a restart reheats to, and the
 * SCALED rule's sampling state. */
typedef struct anneal_state {
    double temp, tmax;
    int sampling;   /* SCALED: T_max not set yet; T = 0 meanwhile */
    uint64_t moves; /* since the last cooling schedule start */
    size_t nworse;
} anneal_state;

static void anneal_start(run *r, anneal_state *a, int anneal)
{
    const search_config *c = r->cfg;
    *a = (anneal_state){0};
    if (!anneal)
        return;
    a->sampling = c->sa_temperature == SEARCH_SA_SCALED;
    a->tmax = a->sampling ? 0 : c->sa_tmax;
    a->temp = a->tmax;
    r->res->sa_tmax = a->tmax;
}

/* After a move from fitness f to g: sample (SCALED) or cool. */
static void anneal_after_move(run *r, anneal_state *a, double f, double g)
{
    const search_config *c = r->cfg;
    a->moves++;
    if (a->sampling) {
        if (g > f && isfinite(g - f) && a->nworse < c->sa_sample)
            r->worse[a->nworse++] = g - f;
        if (a->moves >= c->sa_sample && a->nworse > 0) {
            a->tmax = search_sa_scaled_tmax(r->worse, a->nworse, c->sa_p0);
            a->temp = a->tmax;
            a->sampling = 0;
            a->moves = 0;
            r->res->sa_tmax = a->tmax;
        }
        return;
    }
    if (c->sa_cool_every && a->moves % c->sa_cool_every == 0)
        a->temp *= c->sa_r;
}

/* SHC when anneal is 0, SA otherwise: the two share neighbourhood, ladder and
 * restarts and differ only in accepting worse moves. */
static void run_local(run *r, int anneal)
{
    const search_config *c = r->cfg;
    search_result *res = r->res;
    double f = random_point(r);
    size_t rung = 0;
    unsigned tries = 0, stale = 0;
    anneal_state a;
    anneal_start(r, &a, anneal);
    while (!r->done) {
        size_t i = uniform_below(r->rng, r->p->dim);
        uint64_t from = r->x[i];
        uint64_t to = neighbour(r, from, c->steps[rung]);
        double g = evaluate_move(r, i, from, to);
        record(r, g);
        res->moves++;
        int improved = g < f;
        int accept = improved;
        if (!improved && anneal) {
            /* Metropolis; the uniform is always drawn so that the random
             * stream does not depend on floating-point corner cases. */
            double u = gsl_rng_uniform(r->rng);
            accept = a.temp > 0 && u < exp(-(g - f) / a.temp);
        }
        if (g > f) {
            res->moves_worse++;
            res->moves_worse_accepted += accept;
        }
        if (c->observe) {
            search_move_info mi = {res->evaluations, f, g, a.temp, accept};
            c->observe(c->observe_ctx, &mi);
        }
        double before = f;
        if (accept)
            f = g;
        else
            undo_move(r, i, from, to);
        if (r->done)
            break;
        if (improved) {
            rung = 0;
            tries = 0;
            stale = 0;
        } else {
            stale++;
            if (++tries >= c->tries_per_step) {
                tries = 0;
                rung = (rung + 1) % c->nsteps;
            }
        }
        if (anneal)
            anneal_after_move(r, &a, before, g);
        if (stale >= c->restart) {
            res->restarts++;
            f = random_point(r);
            rung = 0;
            tries = 0;
            stale = 0;
            if (anneal && c->sa_reheat && !a.sampling) {
                a.temp = a.tmax;
                a.moves = 0;
            }
        }
    }
}

static int check_config(const search_problem *p, const search_config *c, char *err, size_t errlen)
{
    if (!p || !p->fitness)
        return fail(err, errlen, "search: problem has no fitness function");
    if ((unsigned)c->algorithm > SEARCH_SA)
        return fail(err, errlen, "search: unknown algorithm %d", (int)c->algorithm);
    if (c->dmax > SEARCH_DMAX_LIMIT)
        return fail(err, errlen, "search: dmax %llu is larger than 2^62",
                    (unsigned long long)c->dmax);
    if (c->budget == 0)
        return fail(err, errlen, "search: budget must be at least one evaluation");
    if (c->algorithm == SEARCH_RND)
        return 0;
    if (c->nsteps == 0 || c->nsteps > SEARCH_MAX_STEPS)
        return fail(err, errlen, "search: step ladder must have 1..%d rungs", SEARCH_MAX_STEPS);
    for (size_t i = 0; i < c->nsteps; i++)
        if (c->steps[i] == 0)
            return fail(err, errlen, "search: steps[%zu] must be at least 1", i);
    if (c->tries_per_step == 0 || c->restart == 0)
        return fail(err, errlen, "search: tries_per_step and restart must be at least 1");
    if (c->algorithm == SEARCH_SA &&
        !(c->sa_tmax >= 0 && isfinite(c->sa_tmax) && c->sa_r > 0 && c->sa_r <= 1))
        return fail(err, errlen, "search: SA needs sa_tmax >= 0 and 0 < sa_r <= 1");
    if (c->algorithm == SEARCH_SA && (unsigned)c->sa_temperature > SEARCH_SA_SCALED)
        return fail(err, errlen, "search: unknown SA temperature rule %d", (int)c->sa_temperature);
    if (c->algorithm == SEARCH_SA && c->sa_temperature == SEARCH_SA_SCALED &&
        !(c->sa_sample >= 1 && c->sa_p0 > 0 && c->sa_p0 < 1))
        return fail(err, errlen, "search: scaled SA needs sa_sample >= 1 and 0 < sa_p0 < 1");
    return 0;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int search_run(const search_problem *p, const search_config *cfg, search_result *res, char *err,
               size_t errlen)
{
    memset(res, 0, sizeof *res);
    if (check_config(p, cfg, err, errlen) < 0)
        return -1;
    double t0 = now_seconds();
    size_t n = p->dim ? p->dim : 1;
    run r = {.p = p, .cfg = cfg, .res = res};
    r.x = calloc(n, sizeof *r.x);
    res->best_x = calloc(n, sizeof *res->best_x);
    res->hit_x = calloc(n, sizeof *res->hit_x);
    r.rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (cfg->algorithm == SEARCH_SA && cfg->sa_temperature == SEARCH_SA_SCALED)
        r.worse = calloc(cfg->sa_sample, sizeof *r.worse);
    if (!r.x || !res->best_x || !res->hit_x || !r.rng ||
        (cfg->algorithm == SEARCH_SA && cfg->sa_temperature == SEARCH_SA_SCALED && !r.worse)) {
        free(r.x);
        free(r.worse);
        if (r.rng)
            gsl_rng_free(r.rng);
        search_result_free(res);
        return fail(err, errlen, "search: out of memory");
    }
    gsl_rng_set(r.rng, (unsigned long)cfg->seed);
    r.delay = fixed_uniform_make(r.rng, cfg->dmax + 1);
    /* With no freedom there is a single point: evaluate it once. */
    if (p->dim == 0 || cfg->dmax == 0 || cfg->algorithm == SEARCH_RND) {
        if (p->dim == 0 || cfg->dmax == 0)
            random_point(&r);
        else
            run_rnd(&r);
    } else {
        run_local(&r, cfg->algorithm == SEARCH_SA);
    }
    if (!res->hit) {
        free(res->hit_x);
        res->hit_x = NULL;
    }
    free(r.x);
    free(r.worse);
    gsl_rng_free(r.rng);
    res->seconds = now_seconds() - t0;
    return 0;
}

void search_result_free(search_result *res)
{
    free(res->best_x);
    free(res->hit_x);
    res->best_x = NULL;
    res->hit_x = NULL;
}
