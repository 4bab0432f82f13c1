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

static int write_stats(optimize_ctx *c, const search_config *cfg, const search_result *res,
                       uint64_t runs, uint64_t hits, double lo, double hi, const double q[3],
                       double wall)
{
    optimize_opts *o = c->o;
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
        "hits", (json_int_t)hits, "dim", (json_int_t)optimizer_model_dim(c->m), "wall_seconds",
        wall, "ci95", lo, hi, "evals_to_hit", evals, "seconds", secs, "best_fitness", best,
        "exact_seconds", t_exact);
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
    if (hits)
        json_object_set_new(j, "quartiles", json_pack("[f,f,f]", q[0], q[1], q[2]));
    else
        json_object_set_new(j, "quartiles", json_null());
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", o->stats, (int)getpid());
    int rc = json_dump_file(j, tmp, JSON_INDENT(1)) == 0 && rename(tmp, o->stats) == 0 ? 0 : -1;
    if (rc) {
        weft_error("%s: cannot write: %s", o->stats, strerror(errno));
        unlink(tmp);
    }
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

int opt_run_search(optimize_ctx *c)
{
    optimize_opts *o = c->o;
    search_config cfg = search_config_for(o);
    search_problem prob = optimizer_search_problem(c->m);
    search_result *res = calloc(o->runs, sizeof *res);
    double *ev = calloc(o->runs, sizeof *ev);
    if (!res || !ev) {
        weft_error("out of memory");
        free(res), free(ev);
        return WEFT_EXIT_FAIL;
    }
    print_search_header(o, &cfg);
    int tty = isatty(2);
    double t0 = weft_now_s(), last = t0;
    uint64_t hits = 0, first_hit = UINT64_MAX, first_usable = UINT64_MAX;
    char err[512];
    for (uint64_t i = 0; i < o->runs; i++) {
        cfg.seed = o->seed + i;
        if (search_run(&prob, &cfg, &res[i], err, sizeof err) != 0) {
            weft_error("%s: %s", o->trace, err);
            for (uint64_t k = 0; k < i; k++)
                search_result_free(&res[k]);
            free(res), free(ev);
            return WEFT_EXIT_FAIL;
        }
        if (res[i].hit) {
            ev[hits++] = (double)res[i].evals_to_hit;
            if (first_hit == UINT64_MAX)
                first_hit = i;
            if (first_usable == UINT64_MAX && hit_usable(c, &res[i]))
                first_usable = i;
        }
        double now = weft_now_s();
        if (o->runs > 1 && now - last > (tty ? 0.5 : 10.0)) {
            fprintf(stderr, "%sweft: run %" PRIu64 "/%" PRIu64 ", %" PRIu64 " hits, %.1f s%s",
                    tty ? "\r" : "", i + 1, o->runs, hits, now - t0, tty ? "" : "\n");
            last = now;
        }
        if (o->runs == 1 && !o->quiet) {
            printf("weft: seed %" PRIu64 ": %s after %" PRIu64 " evaluations (%.3f s, %" PRIu64
                   " restarts, best fitness %.6g",
                   cfg.seed, res[i].hit ? "first alignment" : "no alignment",
                   res[i].hit ? res[i].evals_to_hit : res[i].evaluations, res[i].seconds,
                   res[i].restarts, res[i].best_fitness);
            if (o->algo == SEARCH_SA)
                printf("; T_max %.3g, %" PRIu64 " of %" PRIu64 " worse moves accepted",
                       res[i].sa_tmax, res[i].moves_worse_accepted, res[i].moves_worse);
            printf(")\n");
        }
    }
    if (tty && o->runs > 1 && weft_now_s() - t0 > 0.5)
        fprintf(stderr, "\n");
    double wall = weft_now_s() - t0, lo = 0, hi = 1, q[3] = {0, 0, 0};
    search_clopper_pearson(hits, o->runs, 0.95, &lo, &hi);
    if (hits)
        search_quartiles(ev, hits, &q[0], &q[1], &q[2]);
    if (o->runs > 1)
        printf("weft: %" PRIu64 "/%" PRIu64 " runs found an alignment (95%% CI %.1f%%..%.1f%%)",
               hits, o->runs, 100 * lo, 100 * hi);
    if (hits && o->runs > 1) {
        double mn = ev[0], mx = ev[0];
        for (uint64_t k = 1; k < hits; k++)
            mn = ev[k] < mn ? ev[k] : mn, mx = ev[k] > mx ? ev[k] : mx;
        printf("; evaluations to the first alignment: median %.0f, quartiles %.0f..%.0f, "
               "min %.0f, max %.0f",
               q[1], q[0], q[2], mn, mx);
    }
    if (o->runs > 1)
        printf("; %.3f s wall\n", wall);
    int rc = WEFT_EXIT_OK;
    if (o->stats && write_stats(c, &cfg, res, o->runs, hits, lo, hi, q, wall) != 0)
        rc = WEFT_EXIT_FAIL;
    if (first_usable != UINT64_MAX)
        first_hit = first_usable;
    if (first_hit != UINT64_MAX) {
        const search_result *r = &res[first_hit];
        optimizer_plan_set_search(&c->plan, search_algorithm_name(o->algo), o->seed + first_hit,
                                  o->dmax, r->evals_to_hit);
        if (o->runs > 1)
            printf("weft: plan from the first run whose hit has an alignment that thread "
                   "creation does not order: seed %" PRIu64 "\n",
                   o->seed + first_hit);
        if (export_hit(c, r) != 0)
            rc = WEFT_EXIT_FAIL;
    } else if (!o->stats) {
        rc = WEFT_EXIT_FAIL;
    }
    for (uint64_t i = 0; i < o->runs; i++)
        search_result_free(&res[i]);
    free(res), free(ev);
    return rc;
}
