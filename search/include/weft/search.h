/* weft search: generic metaheuristics over bounded integer delay vectors.
 *
 * A problem is a vector of `dim` integers, each in [0, dmax], and a fitness to
 * minimize. The algorithms are the ones of Bhattacharya et al. §6.1–6.2: random search
 * (RND), stochastic hill climbing with a shrinking step ladder and restarts
 * (SHC), and simulated annealing over the same neighbourhood (SA). Nothing here
 * knows about traces; the optimizer supplies the problem.
 *
 * Randomness comes only from a GSL mt19937 generator seeded from the config, so
 * the same problem, config and seed give the same run, evaluation for
 * evaluation. mt19937 uses the low 32 bits of the seed, and seed 0 means
 * GSL's default seed 4357. */
#ifndef WEFT_SEARCH_H
#define WEFT_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct search_problem {
    size_t dim;
    void *ctx;
    /* Full evaluation of x (dim values). A stateful problem may remember x as
     * its current point: every later `move` is relative to the last vector
     * passed to `fitness` or produced by `move`. */
    double (*fitness)(void *ctx, const uint64_t *x);
    /* Optional: the current point's coordinate i changed from `from` to `to`;
     * return the fitness of the new point. The search undoes a rejected move
     * by calling move(i, to, from) and ignores that result; undo calls are
     * not counted as evaluations. NULL = use `fitness` on the whole vector. */
    double (*move)(void *ctx, size_t i, uint64_t from, uint64_t to);
    /* Optional: 1 if the point just evaluated (x, with fitness f) reaches the
     * target (for the optimizer: some pair of writes is aligned). NULL = the
     * target is never reached and the search spends its whole budget. */
    int (*target)(void *ctx, const uint64_t *x, double f);
} search_problem;

typedef enum search_algorithm { SEARCH_RND = 0, SEARCH_SHC = 1, SEARCH_SA = 2 } search_algorithm;

/* How SA sets its initial temperature T_max (results/optimizer-sa.md).
 * PAPER: sa_tmax as given (seed 004: 10^-4 or 10^-2).
 * SCALED: from the landscape, by an initial-acceptance-ratio rule. The first
 * sa_sample moves of a run are hill-climbing moves (T = 0: only strict
 * improvements are kept) and their strictly worse fitness differences
 * (g - f > 0) are collected; if none of them was worse, sampling goes on to
 * the first worse move. Then
 *     T_max = median(worse differences) / ln(1 / sa_p0)
 * so that a worse move of the median size is accepted with probability
 * sa_p0 at T_max; cooling and reheating then run as in PAPER. The sampled
 * moves are ordinary evaluations of the budget, and T_max is computed once
 * per run (a restart reheats to the same value). */
typedef enum search_sa_temperature {
    SEARCH_SA_PAPER = 0,
    SEARCH_SA_SCALED = 1
} search_sa_temperature;

/* One SHC or SA move, as given to search_config.observe. */
typedef struct search_move_info {
    uint64_t evaluation; /* 1-based index of the move's evaluation */
    double from, to;     /* fitness of the current point and of the neighbour */
    double temperature;  /* SA's T for this move; 0 for SHC and while SCALED samples */
    int accepted;        /* the neighbour became the current point */
} search_move_info;

#define SEARCH_MAX_STEPS 8

typedef struct search_config {
    search_algorithm algorithm;
    uint64_t seed;
    uint64_t dmax;      /* every coordinate lies in [0, dmax] */
    uint64_t budget;    /* maximum fitness evaluations (paper: 10^6) */
    int stop_on_target; /* stop at the first evaluation that reaches the target */
    /* SHC/SA neighbourhood: change one uniformly chosen coordinate by a
     * uniform non-zero step in [-s, s], clamped to [0, dmax]. */
    size_t nsteps;
    uint64_t steps[SEARCH_MAX_STEPS]; /* the ladder, largest first */
    unsigned tries_per_step;          /* moves at a rung before the next, smaller one */
    unsigned restart;                 /* non-improving moves in a row before a restart */
    /* SA only. */
    double sa_tmax;                       /* initial temperature */
    double sa_r;                          /* geometric cooling factor */
    unsigned sa_cool_every;               /* moves between two coolings */
    int sa_reheat;                        /* a restart starts again from sa_tmax */
    search_sa_temperature sa_temperature; /* PAPER: sa_tmax; SCALED: computed */
    unsigned sa_sample;                   /* SCALED: moves sampled before T_max is set */
    double sa_p0; /* SCALED: acceptance probability of a median worse move at T_max */
    /* Optional: called after every SHC/SA move (not for random points). For
     * measurements; it must not touch the problem. */
    void (*observe)(void *observe_ctx, const search_move_info *move);
    void *observe_ctx;
} search_config;

/* Defaults of Bhattacharya et al. §6.1–6.2 scaled to dmax: ladder dmax/10^3, dmax/10^4,
 * dmax/(2·10^4), dmax/(2·10^5) (each at least 1; 10^4, 10^3, 500, 50 for
 * dmax = 10^7) with 20 tries per rung; restart after 150 non-improving moves
 * when dmax >= 10^6, else 50; SA r = 0.95, T_max = 10^-4 when dmax >= 10^7,
 * else 10^-2, cooled once per rung cycle (nsteps * tries_per_step = 80 moves),
 * reheated at each restart; budget 10^6; algorithm SA; seed 1. SA's
 * temperature is PAPER; for SCALED, sa_sample = 100 and sa_p0 = 0.5 are set
 * already. */
search_config search_config_default(uint64_t dmax);

/* "rnd", "shc", "sa" and back; parse returns -1 for an unknown name. */
const char *search_algorithm_name(search_algorithm a);
int search_algorithm_parse(const char *name, search_algorithm *out);
/* "paper", "scaled" and back; parse returns -1 for an unknown name. */
const char *search_sa_temperature_name(search_sa_temperature t);
int search_sa_temperature_parse(const char *name, search_sa_temperature *out);

/* The SCALED rule: median(worse[0..n)) / ln(1 / p0). Sorts worse. Returns
 * NaN when n = 0, a difference is not positive and finite, or p0 is not in
 * (0, 1). */
double search_sa_scaled_tmax(double *worse, size_t n, double p0);

typedef struct search_result {
    int hit;               /* 1 if some evaluation reached the target */
    uint64_t evals_to_hit; /* 1-based index of that evaluation, 0 if none */
    uint64_t *hit_x;       /* the point that reached it (dim values), NULL if none */
    double hit_fitness;
    double best_fitness;           /* lowest fitness seen */
    uint64_t *best_x;              /* a point with that fitness (dim values) */
    uint64_t evaluations;          /* evaluations spent (<= budget) */
    uint64_t restarts;             /* SHC/SA restarts from a new random point */
    uint64_t moves;                /* SHC/SA moves (evaluations other than random points) */
    uint64_t moves_worse;          /* moves to a strictly worse neighbour */
    uint64_t moves_worse_accepted; /* of those, accepted (SA only) */
    double sa_tmax; /* SA: T_max used (SCALED: computed; 0 if the run ended while sampling) */
    double seconds; /* wall time of the run (CLOCK_MONOTONIC) */
} search_result;

/* Run the configured algorithm. Returns 0, or -1 with a one-line reason in err
 * (bad config, out of memory). The result owns its vectors: free them with
 * search_result_free. */
int search_run(const search_problem *p, const search_config *cfg, search_result *res, char *err,
               size_t errlen);
void search_result_free(search_result *res);

/* ---- statistics over repeated runs ------------------------------------------ */

/* Clopper–Pearson (exact binomial) interval at the given confidence (0.95) for
 * k successes in n trials. k = 0 and k = n use their closed forms. Returns 0,
 * or -1 when k > n, n = 0 or confidence is not in (0, 1). */
int search_clopper_pearson(uint64_t k, uint64_t n, double confidence, double *lo, double *hi);

/* Quartiles of a sample (GSL's linear interpolation between order statistics,
 * same as R type 7). x is not modified. Returns 0, or -1 when n = 0. */
int search_quartiles(const double *x, size_t n, double *q1, double *median, double *q3);

#ifdef __cplusplus
}
#endif
#endif
