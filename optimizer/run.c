/* weft optimize's work: from a trace to the model, the exact solver or the
 * searches, and the plan (the searches are in run_search.c). */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_internal.h"

/* ---- exact ------------------------------------------------------------------ */

static int run_exact(optimize_ctx *c)
{
    optimize_opts *o = c->o;
    char err[512];
    optimizer_candidate *cand = NULL;
    size_t n = 0;
    double t0 = weft_now_s();
    if (optimizer_exact_pairs(c->m, &cand, &n, err, sizeof err) != 0) {
        weft_error("%s: %s", o->trace, err);
        return WEFT_EXIT_FAIL;
    }
    double t_pairs = weft_now_s() - t0;
    size_t kept = 0, ordered = 0;
    for (size_t i = 0; i < n; i++) {
        optimizer_var a, b;
        optimizer_model_var(c->m, cand[i].va, &a);
        optimizer_model_var(c->m, cand[i].vb, &b);
        if (!o->keep_ordered &&
            opt_ordered_by_creation(c->sum, a.thread, a.time, b.thread, b.time)) {
            ordered++;
            continue;
        }
        cand[kept++] = cand[i];
    }
    size_t raced = o->from_races ? opt_races_first(c, cand, kept) : 0;
    size_t dim = optimizer_model_dim(c->m);
    uint64_t *delta = calloc(dim ? dim : 1, sizeof *delta);
    optimizer_pair *chosen = NULL;
    size_t nchosen = 0;
    t0 = weft_now_s();
    if (!delta || optimizer_exact_select_order(c->m, cand, kept, o->dmax_set ? o->dmax : 0,
                                               opt_order_nudge(c), delta, &chosen, &nchosen, err,
                                               sizeof err) != 0) {
        weft_error("%s: %s", o->trace, delta ? err : "out of memory");
        free(cand), free(delta);
        return WEFT_EXIT_FAIL;
    }
    double t_select = weft_now_s() - t0;
    printf("weft: exact solver: %zu candidate pairs in %.3f ms", n, t_pairs * 1e3);
    if (o->from_races)
        printf(", %zu of them a race of the trace (ranked first: --from-races)", raced);
    if (ordered)
        printf(", %zu of them ordered by thread creation (dropped; --keep-ordered keeps them)",
               ordered);
    printf("; greedy selection of %zu pair%s that hold at once in %.3f ms\n", nchosen,
           nchosen == 1 ? "" : "s", t_select * 1e3);
    size_t take = o->pairs && o->pairs < nchosen ? (size_t)o->pairs : nchosen;
    if (take < nchosen)
        printf("weft: keeping the first %zu (--pairs)\n", take);
    optimizer_plan_set_search(&c->plan, "exact", 0, o->dmax_set ? o->dmax : 0, 0);
    int rc = WEFT_EXIT_OK;
    for (size_t k = 0; k < take; k++) {
        if (!o->quiet || k < 10)
            opt_print_pair(c, k + 1, &chosen[k], chosen[k].applied, chosen[k].aligned_time);
        if (opt_plan_add_pair(c, &chosen[k], chosen[k].applied) != 0) {
            rc = WEFT_EXIT_FAIL;
            break;
        }
    }
    if (o->quiet && take > 10)
        printf("  ... %zu more\n", take - 10);
    if (!take) {
        printf("weft: no pair of accesses of different threads to one address can be aligned "
               "by a delay%s\n",
               o->dmax_set ? " within --dmax" : "");
        rc = WEFT_EXIT_FAIL;
    }
    c->have_plan = take > 0;
    free(cand), free(delta), free(chosen);
    return rc;
}

/* The --sa-* options against --algo and each other; one usage line, as the
 * option parser prints them. */
static int check_sa_options(const optimize_opts *o)
{
    const char *why = NULL;
    if (o->sa_set && (o->exact || o->algo != SEARCH_SA))
        why = "--sa-temperature, --sa-tmax, --sa-p0 and --sa-sample are for --algo sa";
    else if (o->sa_tmax > 0 && o->sa_temperature == SEARCH_SA_SCALED)
        why = "--sa-tmax sets the paper schedule's T_max; --sa-temperature scaled computes it";
    else if ((o->sa_p0 > 0 || o->sa_sample > 0) && o->sa_temperature != SEARCH_SA_SCALED)
        why = "--sa-p0 and --sa-sample are for --sa-temperature scaled";
    if (!why)
        return 0;
    fprintf(stderr, "weft optimize: %s (see weft optimize --help)\n", why);
    return -1;
}

/* The trace, its metadata and the program's symbols (when readable). */
static int open_trace(optimize_ctx *c)
{
    char err[512];
    c->t = weft_trace_open(c->o->trace, err, sizeof err);
    if (!c->t) {
        weft_error("%s", err);
        return -1;
    }
    c->meta = weft_trace_get_meta(c->t);
    c->sum = weft_trace_get_summary(c->t);
    if (c->meta->binary_path && *c->meta->binary_path)
        c->syms = weft_symbols_open_run(c->meta->binary_path, c->meta, err, sizeof err);
    return 0;
}

/* The model of the accesses --var and --reads select, and an empty plan. */
static int build_model(optimize_ctx *c)
{
    optimize_opts *o = c->o;
    char err[512];
    for (size_t i = 0; i < o->nvars; i++)
        if (opt_filter_add_var(&o->filter, c->syms, c->meta->binary_path, o->vars[i]))
            return -1;
    optimizer_options mo = optimizer_options_default();
    mo.include_reads = o->reads;
    c->m = opt_model_load(c->t, &o->filter, &mo, err, sizeof err);
    if (!c->m) {
        weft_error("%s", err);
        return -1;
    }
    if (optimizer_plan_init(&c->plan, c->meta) != 0) {
        weft_error("out of memory");
        return -1;
    }
    return 0;
}

/* The model's size, and notes on a trace whose plan may not replay as is. */
static void print_model(const optimize_ctx *c)
{
    const optimize_opts *o = c->o;
    size_t dim = optimizer_model_dim(c->m), writes = 0;
    for (size_t v = 0; v < dim; v++) {
        optimizer_var x;
        optimizer_model_var(c->m, v, &x);
        writes += x.is_write;
    }
    printf("weft: %s: %s, %u threads; model: %zu writes%s%zu reads at %zu shared "
           "address%s (%s)\n",
           o->trace, c->meta->binary_path, c->sum->nthreads, writes, o->reads ? " and " : ", ",
           dim - writes, optimizer_model_addresses(c->m),
           optimizer_model_addresses(c->m) == 1 ? "" : "es",
           o->filter.atomics ? "atomic accesses kept" : "atomic accesses left out");
    if (o->from_races)
        printf("weft: --from-races: the model keeps only accesses at the %zu racy pcs\n",
               c->nrace_pcs);
    if (c->meta->settings.mode != WEFT_MODE_EXACT)
        printf("weft: note: traced in free mode; weft inject replays in exact mode, where "
               "times can differ (weft trace --mode exact)\n");
    if (c->meta->settings.filter != WEFT_FILTER_NONSTACK)
        printf("weft: note: traced with a non-default filter; weft inject numbers events "
               "with the default one, so the plan's event numbers may not match\n");
    if (!c->syms)
        printf("weft: note: no symbols (%s not readable here)\n", c->meta->binary_path);
}

static int write_plan(optimize_ctx *c)
{
    char err[512];
    if (optimizer_plan_write(&c->plan, c->o->out, err, sizeof err) != 0) {
        weft_error("%s", err);
        return -1;
    }
    printf("weft: wrote %s (%zu injection%s)\n", c->o->out, c->plan.ninjections,
           c->plan.ninjections == 1 ? "" : "s");
    return 0;
}

int optimizer_run(optimize_opts *o)
{
    if (check_sa_options(o))
        return WEFT_EXIT_USAGE;
    if (o->out && weft_check_output(o->out))
        return WEFT_EXIT_FAIL;
    if (o->stats && weft_check_output(o->stats))
        return WEFT_EXIT_FAIL;
    optimize_ctx c = {.o = o};
    if (open_trace(&c))
        return WEFT_EXIT_FAIL;
    int rc = WEFT_EXIT_FAIL;
    if (o->from_races && opt_races_load(&c))
        goto out;
    if (build_model(&c))
        goto out;
    if (!o->quiet)
        print_model(&c);
    if (!optimizer_model_dim(c.m)) {
        printf("weft: no address is written by one thread and accessed by another: nothing to "
               "align\n");
        if (o->stats) {
            weft_error("%s: the model is empty, no statistics", o->trace);
        }
        goto out;
    }
    rc = o->exact ? run_exact(&c) : opt_run_search(&c);
    if (c.have_plan && o->out && write_plan(&c))
        rc = WEFT_EXIT_FAIL;
out:
    if (c.m)
        optimizer_model_free(c.m);
    if (c.plan.program)
        optimizer_plan_free(&c.plan);
    if (c.syms)
        weft_symbols_close(c.syms);
    opt_races_free(&c);
    weft_trace_close(c.t);
    return rc;
}
