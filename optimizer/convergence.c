/* The optimizer's convergence for the demo's report: one RND, one SHC and
 * one SA search on the trace's interference model (the same model and
 * settings as `weft optimize --algo A --seed S`), with the best fitness so
 * far recorded against the number of evaluations.
 *
 * The search library reports only its result, but it calls the problem's
 * target once per evaluation with that evaluation's fitness, in order; a
 * wrapper around the target sees the whole trajectory without changing it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "weft/optimizer.h"

typedef struct recorder {
    const search_problem *inner;
    uint64_t evals;
    double best, last_logged_best;
    uint64_t next_mark; /* log-spaced evaluation counts get a point anyway */
    json_t *points;
} recorder;

/* The search passes the model as ctx, not us: one recording at a time. */
static recorder *active;

static void add_point(recorder *r)
{
    json_array_append_new(r->points, json_pack("[I,f]", (json_int_t)r->evals, r->best));
    r->last_logged_best = r->best;
}

static int recording_target(void *ctx, const uint64_t *x, double f)
{
    recorder *r = active;
    r->evals++;
    int improved = r->evals == 1 || f < r->best;
    if (improved)
        r->best = f;
    int hit = r->inner->target ? r->inner->target(ctx, x, f) : 0;
    /* An improvement is kept when it is visible on a plot (0.1% of the
     * fitness), so a million evaluations give a few hundred points. */
    if (r->evals == 1 || hit || r->evals >= r->next_mark ||
        (improved && r->last_logged_best - r->best > 1e-3 * fabs(r->last_logged_best)))
        add_point(r);
    while (r->next_mark <= r->evals)
        r->next_mark = r->next_mark < 10 ? r->next_mark + 1 : r->next_mark * 5 / 4;
    return hit;
}

int optimizer_convergence(const char *trace_path, uint64_t seed, uint64_t dmax, uint64_t budget,
                          const char *out_path, char *why, size_t whylen)
{
    char err[512];
    weft_trace *t = weft_trace_open(trace_path, err, sizeof err);
    if (!t) {
        weft_error("%s", err);
        return -1;
    }
    opt_filter filter = {0};
    optimizer_options mo = optimizer_options_default();
    optimizer_model *m = opt_model_load(t, &filter, &mo, err, sizeof err);
    weft_trace_close(t);
    if (!m) {
        snprintf(why, whylen, "%s", err);
        return 1;
    }
    if (optimizer_model_dim(m) == 0) {
        snprintf(why, whylen, "no two threads write one address (the model is empty)");
        optimizer_model_free(m);
        return 1;
    }
    json_t *runs = json_array();
    static const search_algorithm algos[] = {SEARCH_RND, SEARCH_SHC, SEARCH_SA};
    int rc = 0;
    for (size_t a = 0; a < 3 && rc == 0; a++) {
        search_config cfg = search_config_default(dmax);
        cfg.algorithm = algos[a];
        cfg.seed = seed;
        cfg.budget = budget;
        cfg.stop_on_target = 1;
        search_problem inner = optimizer_search_problem(m);
        search_problem wrapped = inner;
        wrapped.target = recording_target;
        recorder r = {.inner = &inner, .next_mark = 1, .points = json_array()};
        active = &r;
        search_result res;
        if (search_run(&wrapped, &cfg, &res, err, sizeof err) != 0) {
            weft_error("%s: %s", trace_path, err);
            json_decref(r.points);
            rc = -1;
            break;
        }
        if (r.evals && json_array_size(r.points) &&
            json_integer_value(json_array_get(
                json_array_get(r.points, json_array_size(r.points) - 1), 0)) != (json_int_t)r.evals)
            add_point(&r);
        json_array_append_new(runs, json_pack("{s:s, s:b, s:I, s:I, s:f, s:f, s:o}", "algorithm",
                                              search_algorithm_name(algos[a]), "hit", res.hit,
                                              "evals_to_hit", (json_int_t)res.evals_to_hit,
                                              "evaluations", (json_int_t)res.evaluations,
                                              "best_fitness", res.best_fitness, "seconds",
                                              res.seconds, "points", r.points));
        search_result_free(&res);
    }
    active = NULL;
    size_t dim = optimizer_model_dim(m);
    optimizer_model_free(m);
    if (rc) {
        json_decref(runs);
        return rc;
    }
    json_t *doc = json_pack("{s:s, s:I, s:I, s:I, s:I, s:o}", "trace", trace_path, "seed",
                            (json_int_t)seed, "dmax", (json_int_t)dmax, "budget",
                            (json_int_t)budget, "dim", (json_int_t)dim, "runs", runs);
    char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(doc);
    if (!text || weft_write_atomic(out_path, text, strlen(text), err, sizeof err)) {
        weft_error("%s", text ? err : "out of memory");
        free(text);
        return -1;
    }
    free(text);
    return 0;
}
