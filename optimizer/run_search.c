/* weft optimize's search half (optimize_search.c): RND/SHC/SA runs, their
 * statistics, and the minimal plan of a hit. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "run_internal.h"

/* ---- search ----------------------------------------------------------------- */

/* The minimal plan for a hit: one aligned pair and the single delay that the
 * exact view gives for it (t_later - t_earlier before the earlier event). */
static int export_hit(optimize_ctx *c, const search_result *r)
{
    optimizer_model *m = c->m;
    optimizer_fitness(m, r->hit_x);
    size_t na = optimizer_alignments(m, NULL, 0);
    optimizer_pair *al = calloc(na ? na : 1, sizeof *al);
    if (!al) {
        weft_error("out of memory");
        return -1;
    }
    optimizer_alignments(m, al, na);
    size_t dim = optimizer_model_dim(m), nonzero = 0;
    for (size_t i = 0; i < dim; i++)
        nonzero += r->hit_x[i] != 0;
    size_t pick = 0;
    int found = 0;
    optimizer_pair p = {0};
    for (size_t i = 0; i < na && !found; i++) {
        optimizer_var a, b;
        optimizer_model_var(m, al[i].va, &a);
        optimizer_model_var(m, al[i].vb, &b);
        int swap = b.time < a.time;
        const optimizer_var *e = swap ? &b : &a, *l = swap ? &a : &b;
        if (!opt_ordered_by_creation(c->sum, e->thread, e->time, l->thread, l->time) ||
            i + 1 == na) {
            pick = i, found = 1;
            p = (optimizer_pair){.va = swap ? al[i].vb : al[i].va,
                                 .vb = swap ? al[i].va : al[i].vb,
                                 .thread_a = e->thread,
                                 .thread_b = l->thread,
                                 .seq_a = e->seq,
                                 .seq_b = l->seq,
                                 .addr = e->addr,
                                 .time_a = e->time,
                                 .time_b = l->time,
                                 .delay = l->time - e->time,
                                 .applied = l->time - e->time,
                                 .aligned_time = l->time};
            /* A write-read pair is exported put in order, as the exact
             * solver does with --reads (opt_order_nudge). */
            p.nudge = optimizer_pair_nudge(m, p.va, p.vb, opt_order_nudge(c));
            p.applied += p.nudge;
            if (opt_ordered_by_creation(c->sum, e->thread, e->time, l->thread, l->time))
                printf("weft: warning: every alignment at the hit pairs events that thread "
                       "creation orders; the replay will likely refute the plan\n");
        }
    }
    printf("weft: at the hit: %zu alignment%s, %zu of %zu delays nonzero; alignment %zu:\n", na,
           na == 1 ? "" : "s", nonzero, dim, pick + 1);
    if (na) {
        optimizer_var a, b;
        optimizer_model_var(m, al[pick].va, &a);
        optimizer_model_var(m, al[pick].vb, &b);
        opt_print_event(c, al[pick].va, "tau", a.tau);
        opt_print_event(c, al[pick].vb, "tau", b.tau);
        printf("weft: exported as a single delay (exact view of the same pair):\n");
        opt_print_pair(c, 1, &p, p.applied, p.aligned_time);
    }
    int rc = na ? opt_plan_add_pair(c, &p, p.applied) : -1;
    c->have_plan = rc == 0;
    free(al);
    return rc;
}

/* 1 if some alignment at the hit pairs events that thread creation leaves
 * unordered (the exported plan can then hold in a replay). */
static int hit_usable(optimize_ctx *c, const search_result *r)
{
    optimizer_fitness(c->m, r->hit_x);
    size_t na = optimizer_alignments(c->m, NULL, 0);
    optimizer_pair *al = calloc(na ? na : 1, sizeof *al);
    if (!al)
        return 0;
    optimizer_alignments(c->m, al, na);
    int usable = 0;
    for (size_t i = 0; i < na && !usable; i++) {
        optimizer_var a, b;
        optimizer_model_var(c->m, al[i].va, &a);
        optimizer_model_var(c->m, al[i].vb, &b);
        usable = b.time < a.time
                     ? !opt_ordered_by_creation(c->sum, b.thread, b.time, a.thread, a.time)
                     : !opt_ordered_by_creation(c->sum, a.thread, a.time, b.thread, b.time);
    }
    free(al);
    return usable;
}

/* What the runs add up to. */
typedef struct search_stats {
    uint64_t hits;
    uint64_t first_hit, first_usable; /* run index, UINT64_MAX if none */
    double *ev;                       /* evaluations to the hit, of each run that hit */
    double lo, hi;                    /* 95% interval of the hit rate */
    double q[3];                      /* quartiles of ev */
    double wall;
} search_stats;

static int write_stats(optimize_ctx *c, const search_config *cfg, const search_result *res,
                       const search_stats *st)
{
    optimize_opts *o = c->o;
    uint64_t runs = o->runs;
    json_t *evals = json_array(), *secs = json_array(), *best = json_array();
    json_t *tmax = json_array(), *worse = json_array(), *taken = json_array();
    for (uint64_t i = 0; i < runs; i++) {
        json_array_append_new(evals, json_integer((json_int_t)res[i].evals_to_hit));
        json_array_append_new(secs, json_real(res[i].seconds));
        json_array_append_new(best, json_real(res[i].best_fitness));
        json_array_append_new(tmax, json_real(res[i].sa_tmax));
        json_array_append_new(worse, json_integer((json_int_t)res[i].moves_worse));
        json_array_append_new(taken, json_integer((json_int_t)res[i].moves_worse_accepted));
    }
    char err[512];
    optimizer_candidate *cand = NULL;
    size_t ncand = 0;
    double t0 = weft_now_s();
    int have_cand = optimizer_exact_pairs(c->m, &cand, &ncand, err, sizeof err) == 0;
    double t_exact = weft_now_s() - t0;
    size_t within = 0;
    for (size_t i = 0; have_cand && i < ncand; i++)
        within += cand[i].delay <= cfg->dmax;
    free(cand);
    json_t *j = json_pack(
        "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:[f,f], s:o, s:o, s:o, s:f}", "trace",
        o->trace, "algorithm", search_algorithm_name(cfg->algorithm), "dmax", (json_int_t)cfg->dmax,
        "budget", (json_int_t)cfg->budget, "seed0", (json_int_t)o->seed, "runs", (json_int_t)runs,
        "hits", (json_int_t)st->hits, "dim", (json_int_t)optimizer_model_dim(c->m), "wall_seconds",
        st->wall, "ci95", st->lo, st->hi, "evals_to_hit", evals, "seconds", secs, "best_fitness",
        best, "exact_seconds", t_exact);
    if (!j) {
        weft_error("%s: cannot build the statistics", o->stats);
        return -1;
    }
    if (cfg->algorithm == SEARCH_SA) {
        json_t *sa =
            json_pack("{s:s, s:f, s:I, s:f, s:o}", "temperature",
                      search_sa_temperature_name(cfg->sa_temperature), "r", cfg->sa_r, "cool_every",
                      (json_int_t)cfg->sa_cool_every, "tmax_config", cfg->sa_tmax, "tmax", tmax);
        if (sa && cfg->sa_temperature == SEARCH_SA_SCALED) {
            json_object_set_new(sa, "p0", json_real(cfg->sa_p0));
            json_object_set_new(sa, "sample", json_integer((json_int_t)cfg->sa_sample));
        }
        json_object_set_new(j, "sa", sa ? sa : json_null());
    } else {
        json_decref(tmax);
    }
    json_object_set_new(j, "moves_worse", worse);
    json_object_set_new(j, "moves_worse_accepted", taken);
    json_object_set_new(j, "exact_candidates",
                        have_cand ? json_integer((json_int_t)ncand) : json_null());
    json_object_set_new(j, "exact_candidates_within_dmax",
                        have_cand ? json_integer((json_int_t)within) : json_null());
    if (st->hits)
        json_object_set_new(j, "quartiles", json_pack("[f,f,f]", st->q[0], st->q[1], st->q[2]));
    else
        json_object_set_new(j, "quartiles", json_null());
    char *text = json_dumps(j, JSON_INDENT(1));
    int rc = text ? weft_write_atomic(o->stats, text, strlen(text), err, sizeof err) : -1;
    if (rc)
        weft_error("%s", text ? err : "out of memory");
    free(text);
    json_decref(j);
    return rc;
}

/* The paper's configuration for D_max with weft optimize's options on top. */
static search_config search_config_for(const optimize_opts *o)
{
    search_config cfg = search_config_default(o->dmax);
    cfg.algorithm = o->algo;
    cfg.budget = o->budget;
    cfg.stop_on_target = 1;
    cfg.sa_temperature = o->sa_temperature;
    if (o->sa_tmax > 0)
        cfg.sa_tmax = o->sa_tmax;
    if (o->sa_p0 > 0)
        cfg.sa_p0 = o->sa_p0;
    if (o->sa_sample > 0)
        cfg.sa_sample = (unsigned)o->sa_sample;
    return cfg;
}

static void print_search_header(const optimize_opts *o, const search_config *cfg)
{
    printf("weft: %s, D_max %" PRIu64 " ns, budget %" PRIu64 " evaluations, %" PRIu64
           " run%s with seed%s %" PRIu64,
           search_algorithm_name(o->algo), o->dmax, o->budget, o->runs, o->runs == 1 ? "" : "s",
           o->runs == 1 ? "" : "s", o->seed);
    if (o->runs > 1)
        printf("..%" PRIu64, o->seed + o->runs - 1);
    if (o->algo == SEARCH_SA && cfg->sa_temperature == SEARCH_SA_SCALED)
        printf("; T_max scaled: a median worse move of the first %u accepted with p0 = %g",
               cfg->sa_sample, cfg->sa_p0);
    else if (o->algo == SEARCH_SA)
        printf("; T_max %g, cooled by %g every %u moves", cfg->sa_tmax, cfg->sa_r,
               cfg->sa_cool_every);
    printf("\n");
    fflush(stdout);
}

/* The line of a single run (without --runs). */
static void print_run(const optimize_opts *o, uint64_t seed, const search_result *r)
{
    printf("weft: seed %" PRIu64 ": %s after %" PRIu64 " evaluations (%.3f s, %" PRIu64
           " restarts, best fitness %.6g",
           seed, r->hit ? "first alignment" : "no alignment",
           r->hit ? r->evals_to_hit : r->evaluations, r->seconds, r->restarts, r->best_fitness);
    if (o->algo == SEARCH_SA)
        printf("; T_max %.3g, %" PRIu64 " of %" PRIu64 " worse moves accepted", r->sa_tmax,
               r->moves_worse_accepted, r->moves_worse);
    printf(")\n");
}

/* Runs the search with seeds o->seed.. into res, counting the hits in st,
 * with a progress line on stderr for long --runs. */
static int run_searches(optimize_ctx *c, search_config *cfg, search_result *res, search_stats *st)
{
    optimize_opts *o = c->o;
    search_problem prob = optimizer_search_problem(c->m);
    int tty = isatty(2);
    double t0 = weft_now_s(), last = t0;
    char err[512];
    for (uint64_t i = 0; i < o->runs; i++) {
        cfg->seed = o->seed + i;
        if (search_run(&prob, cfg, &res[i], err, sizeof err) != 0) {
            weft_error("%s: %s", o->trace, err);
            for (uint64_t k = 0; k < i; k++)
                search_result_free(&res[k]);
            return -1;
        }
        if (res[i].hit) {
            st->ev[st->hits++] = (double)res[i].evals_to_hit;
            if (st->first_hit == UINT64_MAX)
                st->first_hit = i;
            if (st->first_usable == UINT64_MAX && hit_usable(c, &res[i]))
                st->first_usable = i;
        }
        double now = weft_now_s();
        if (o->runs > 1 && now - last > (tty ? 0.5 : 10.0)) {
            fprintf(stderr, "%sweft: run %" PRIu64 "/%" PRIu64 ", %" PRIu64 " hits, %.1f s%s",
                    tty ? "\r" : "", i + 1, o->runs, st->hits, now - t0, tty ? "" : "\n");
            last = now;
        }
        if (o->runs == 1 && !o->quiet)
            print_run(o, cfg->seed, &res[i]);
    }
    if (tty && o->runs > 1 && weft_now_s() - t0 > 0.5)
        fprintf(stderr, "\n");
    st->wall = weft_now_s() - t0;
    return 0;
}

/* The hit rate with its interval and the evaluations to a hit (--runs). */
static void print_stats(const optimize_opts *o, search_stats *st)
{
    search_clopper_pearson(st->hits, o->runs, 0.95, &st->lo, &st->hi);
    if (st->hits)
        search_quartiles(st->ev, st->hits, &st->q[0], &st->q[1], &st->q[2]);
    if (o->runs > 1)
        printf("weft: %" PRIu64 "/%" PRIu64 " runs found an alignment (95%% CI %.1f%%..%.1f%%)",
               st->hits, o->runs, 100 * st->lo, 100 * st->hi);
    if (st->hits && o->runs > 1) {
        const double *ev = st->ev;
        double mn = ev[0], mx = ev[0];
        for (uint64_t k = 1; k < st->hits; k++)
            mn = ev[k] < mn ? ev[k] : mn, mx = ev[k] > mx ? ev[k] : mx;
        printf("; evaluations to the first alignment: median %.0f, quartiles %.0f..%.0f, "
               "min %.0f, max %.0f",
               st->q[1], st->q[0], st->q[2], mn, mx);
    }
    if (o->runs > 1)
        printf("; %.3f s wall\n", st->wall);
}

/* The plan from the first run whose hit thread creation does not order (or
 * else the first hit). Returns the exit status. */
static int plan_from_hit(optimize_ctx *c, const search_result *res, const search_stats *st)
{
    optimize_opts *o = c->o;
    uint64_t first = st->first_usable != UINT64_MAX ? st->first_usable : st->first_hit;
    if (first == UINT64_MAX)
        return o->stats ? WEFT_EXIT_OK : WEFT_EXIT_FAIL;
    const search_result *r = &res[first];
    optimizer_plan_set_search(&c->plan, search_algorithm_name(o->algo), o->seed + first, o->dmax,
                              r->evals_to_hit);
    if (o->runs > 1)
        printf("weft: plan from the first run whose hit has an alignment that thread "
               "creation does not order: seed %" PRIu64 "\n",
               o->seed + first);
    return export_hit(c, r) != 0 ? WEFT_EXIT_FAIL : WEFT_EXIT_OK;
}

int opt_run_search(optimize_ctx *c)
{
    optimize_opts *o = c->o;
    search_config cfg = search_config_for(o);
    search_result *res = calloc(o->runs, sizeof *res);
    search_stats st = {.first_hit = UINT64_MAX,
                       .first_usable = UINT64_MAX,
                       .ev = calloc(o->runs, sizeof *st.ev),
                       .hi = 1};
    if (!res || !st.ev) {
        weft_error("out of memory");
        free(res), free(st.ev);
        return WEFT_EXIT_FAIL;
    }
    print_search_header(o, &cfg);
    if (run_searches(c, &cfg, res, &st)) {
        free(res), free(st.ev);
        return WEFT_EXIT_FAIL;
    }
    print_stats(o, &st);
    int rc = WEFT_EXIT_OK;
    if (o->stats && write_stats(c, &cfg, res, &st) != 0)
        rc = WEFT_EXIT_FAIL;
    if (plan_from_hit(c, res, &st) != WEFT_EXIT_OK)
        rc = WEFT_EXIT_FAIL;
    for (uint64_t i = 0; i < o->runs; i++)
        search_result_free(&res[i]);
    free(res), free(st.ev);
    return rc;
}
