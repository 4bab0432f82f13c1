/* weft optimize: find delays that make two threads' writes collide (seed 004
 * §4.2), print the aligned pairs, and write an injection plan for weft
 * inject (docs/plan-format.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "optimize.h"

static void optimize_usage(FILE *out)
{
    fprintf(out, "usage: weft optimize TRACE [options] [-o PLAN]\n\n"
                 "Builds the interference model of a trace (seed 004 Eq. 2 and 4: the writes\n"
                 "of different threads to one address, with their virtual times) and looks for\n"
                 "delays that make two of them happen at the same virtual time. Prints the\n"
                 "aligned pairs and writes an injection plan for 'weft inject'.\n\n"
                 "  -a, --algo A        exact (default): every pair one delay can align, ranked\n"
                 "                      by delay, and a greedy set that holds at once;\n"
                 "                      sa, shc, rnd: the search of seed 004 §6, stopping at the\n"
                 "                      first alignment\n"
                 "  -d, --dmax N        largest delay per variable, ns (search default 10^7;\n"
                 "                      exact: largest delay in the plan, default unbounded)\n"
                 "  -b, --budget N      fitness evaluations per search run (default 10^6)\n"
                 "  -s, --seed S        generator seed of the first run (default 1)\n"
                 "  -r, --runs R        repeat the search with seeds S..S+R-1 and print the\n"
                 "                      statistics of evaluations to the first alignment; the\n"
                 "                      plan comes from the first run whose hit has a pair that\n"
                 "                      thread creation does not order\n"
                 "      --stats-json F  write every run's result and the statistics to F\n"
                 "      --reads         also pair writes with other threads' reads (order\n"
                 "                      violations): such a pair is put in the order opposite\n"
                 "                      to the trace's, the delayed event one cycle after the\n"
                 "                      other, since at one virtual time thread order decides\n"
                 "      --atomics       keep atomic and exclusive accesses (left out by default:\n"
                 "                      they are synchronization and cannot lose an update)\n"
                 "      --var NAME      only accesses to this global (repeatable)\n"
                 "      --pairs N       exact: at most N pairs in the plan (default: all chosen)\n"
                 "      --keep-ordered  exact: keep pairs that thread creation already orders\n"
                 "                      (dropped by default: delaying the earlier write delays\n"
                 "                      the clone, so the later one moves too)\n"
                 "  -o, --output PLAN   plan to write (JSON); without it nothing is written\n"
                 "  -q, --quiet         print only the summary lines\n"
                 "  -h, --help          this help\n\n"
                 "A search plan is minimal: of the alignments at the hit point it keeps one\n"
                 "pair (the first that thread creation does not order) and the single delay\n"
                 "the exact view gives for it, t_b - t_a before the earlier event; the other\n"
                 "delays of the hit vector are not needed for that pair and are left out.\n\n"
                 "Exit status: 0 when an alignment was found (and the plan written), 1 when\n"
                 "none was found or on error, 2 on a bad command line. With --stats-json the\n"
                 "statistics are the result: 0 even if no run found an alignment.\n");
}

double opt_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void opt_print_event(optimize_ctx *c, size_t v, const char *what, uint64_t time)
{
    optimizer_var x;
    if (optimizer_model_var(c->m, v, &x) != 0)
        return;
    char where[512];
    opt_describe_pc(c->syms, x.pc, where, sizeof where);
    printf("    T%" PRIu32 " seq %-6" PRIu64 " %-5s %s at %" PRIu64 " ns, %s\n", x.thread, x.seq,
           x.is_write ? "write" : "read", what, time, where);
}

/* An order violation is exposed only if the two accesses run in the order
 * opposite to the trace's. Aligned at one virtual time, the platform runs
 * them in thread order (ties by PE), which for the usual pattern (main
 * initialises, a thread it created uses) is the traced order again. So the
 * delayed event goes one cycle past the other: the smallest delay that
 * settles the order. Rounded up to whole ns, the plan's unit, so that it is
 * never less than one cycle. */
uint64_t opt_order_nudge(const optimize_ctx *c)
{
    if (!c->o->reads)
        return 0;
    uint64_t ps = c->meta->settings.ps_per_cycle ? c->meta->settings.ps_per_cycle : 1000;
    return (ps + 999) / 1000;
}

/* One pair: va is delayed by `delay` so that it meets vb at `at` (or, for a
 * write-read pair with a nudge, lands just after it). */
void opt_print_pair(optimize_ctx *c, size_t k, const optimizer_pair *p, uint64_t delay, uint64_t at)
{
    char var[256];
    opt_describe_addr(c->syms, p->addr, var, sizeof var);
    printf("  pair %zu on %s (0x%" PRIx64 "):\n", k, var, p->addr);
    opt_print_event(c, p->va, "traced", p->time_a);
    opt_print_event(c, p->vb, "traced", p->time_b);
    uint64_t insns =
        optimizer_delay_insns(delay, c->meta->settings.cpi, c->meta->settings.ps_per_cycle);
    if (p->nudge)
        printf("    delay %" PRIu64 " ns (%" PRIu64 " insns) before T%" PRIu32 " seq %" PRIu64
               " -> T%" PRIu32 " seq %" PRIu64 " first at %" PRIu64 " ns, then T%" PRIu32
               " seq %" PRIu64 " at %" PRIu64 " ns (order reversed; %" PRIu64 " ns nudge)\n",
               delay, insns, p->thread_a, p->seq_a, p->thread_b, p->seq_b, at, p->thread_a,
               p->seq_a, at + p->nudge, p->nudge);
    else
        printf("    delay %" PRIu64 " ns (%" PRIu64 " insns) before T%" PRIu32 " seq %" PRIu64
               " -> both at %" PRIu64 " ns\n",
               delay, insns, p->thread_a, p->seq_a, at);
}

int opt_plan_add_pair(optimize_ctx *c, const optimizer_pair *p, uint64_t delay)
{
    optimizer_injection inj;
    optimizer_injection_for_var(c->m, p->va, delay, p, &inj);
    opt_symbolize_injection(c->syms, p->addr, &inj);
    if (optimizer_plan_add(&c->plan, &inj) != 0) {
        cli_error("out of memory");
        return -1;
    }
    return 0;
}

/* ---- exact ------------------------------------------------------------------ */

static int run_exact(optimize_ctx *c)
{
    optimize_opts *o = c->o;
    char err[512];
    optimizer_candidate *cand = NULL;
    size_t n = 0;
    double t0 = opt_now_s();
    if (optimizer_exact_pairs(c->m, &cand, &n, err, sizeof err) != 0) {
        cli_error("%s: %s", o->trace, err);
        return WEFT_EXIT_FAIL;
    }
    double t_pairs = opt_now_s() - t0;
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
    size_t dim = optimizer_model_dim(c->m);
    uint64_t *delta = calloc(dim ? dim : 1, sizeof *delta);
    optimizer_pair *chosen = NULL;
    size_t nchosen = 0;
    t0 = opt_now_s();
    if (!delta || optimizer_exact_select_order(c->m, cand, kept, o->dmax_set ? o->dmax : 0,
                                               opt_order_nudge(c), delta, &chosen, &nchosen, err,
                                               sizeof err) != 0) {
        cli_error("%s: %s", o->trace, delta ? err : "out of memory");
        free(cand), free(delta);
        return WEFT_EXIT_FAIL;
    }
    double t_select = opt_now_s() - t0;
    printf("weft: exact solver: %zu candidate pairs in %.3f ms", n, t_pairs * 1e3);
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

/* ---- command ---------------------------------------------------------------- */

static int parse_opts(int argc, char **argv, optimize_opts *o)
{
    static const struct option opts[] = {{"algo", required_argument, 0, 'a'},
                                         {"dmax", required_argument, 0, 'd'},
                                         {"budget", required_argument, 0, 'b'},
                                         {"seed", required_argument, 0, 's'},
                                         {"runs", required_argument, 0, 'r'},
                                         {"stats-json", required_argument, 0, 'J'},
                                         {"reads", no_argument, 0, 'R'},
                                         {"atomics", no_argument, 0, 'A'},
                                         {"var", required_argument, 0, 'V'},
                                         {"pairs", required_argument, 0, 'P'},
                                         {"keep-ordered", no_argument, 0, 'K'},
                                         {"output", required_argument, 0, 'o'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "a:d:b:s:r:o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            if (!strcmp(optarg, "exact")) {
                o->exact = 1;
            } else if (search_algorithm_parse(optarg, &o->algo) == 0) {
                o->exact = 0;
            } else {
                cli_error("--algo: expected exact, sa, shc or rnd, got '%s'", optarg);
                return -1;
            }
            break;
        case 'd':
            if (cli_parse_u64("--dmax", optarg, 1, UINT64_C(1) << 62, &o->dmax))
                return -1;
            o->dmax_set = 1;
            break;
        case 'b':
            if (cli_parse_u64("--budget", optarg, 1, UINT64_C(1) << 40, &o->budget))
                return -1;
            break;
        case 's':
            if (cli_parse_u64("--seed", optarg, 0, INT64_MAX, &o->seed))
                return -1;
            break;
        case 'r':
            if (cli_parse_u64("--runs", optarg, 1, 1000000, &o->runs))
                return -1;
            break;
        case 'P':
            if (cli_parse_u64("--pairs", optarg, 1, UINT32_MAX, &o->pairs))
                return -1;
            break;
        case 'J':
            o->stats = optarg;
            break;
        case 'R':
            o->reads = 1;
            break;
        case 'A':
            o->filter.atomics = 1;
            break;
        case 'K':
            o->keep_ordered = 1;
            break;
        case 'V':
            if (o->nvars >= OPT_MAX_VARS) {
                cli_error("--var: at most %d variables", OPT_MAX_VARS);
                return -1;
            }
            o->vars[o->nvars++] = optarg;
            break;
        case 'o':
            o->out = optarg;
            break;
        case 'q':
            o->quiet = 1;
            break;
        case 'h':
            optimize_usage(stdout);
            return 1;
        default:
            return -1;
        }
    }
    if (optind >= argc) {
        cli_error("optimize: no trace given (weft optimize TRACE [options] -o PLAN)");
        return -1;
    }
    o->trace = argv[optind++];
    if (optind < argc) {
        cli_error("optimize: unexpected argument '%s' (one trace at a time)", argv[optind]);
        return -1;
    }
    if (!o->dmax_set)
        o->dmax = 10000000;
    if (o->exact && (o->runs > 1 || o->stats)) {
        cli_error("optimize: --runs and --stats-json are for the searches (sa, shc, rnd)");
        return -1;
    }
    return 0;
}

/* Fail early, before a long search, when the plan cannot be written. */
static int check_writable(const char *path)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    if (access(dir, W_OK) != 0) {
        cli_error("%s: cannot write there: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int cmd_optimize(int argc, char **argv)
{
    optimize_opts o = {.exact = 1, .budget = 1000000, .seed = 1, .runs = 1};
    int prc = parse_opts(argc, argv, &o);
    if (prc)
        return prc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (o.out && check_writable(o.out))
        return WEFT_EXIT_FAIL;
    if (o.stats && check_writable(o.stats))
        return WEFT_EXIT_FAIL;
    char err[512];
    optimize_ctx c = {.o = &o};
    c.t = weft_trace_open(o.trace, err, sizeof err);
    if (!c.t) {
        cli_error("%s", err);
        return WEFT_EXIT_FAIL;
    }
    c.meta = weft_trace_get_meta(c.t);
    c.sum = weft_trace_get_summary(c.t);
    if (c.meta->binary_path && *c.meta->binary_path)
        c.syms = weft_symbols_open(c.meta->binary_path, err, sizeof err);
    int rc = WEFT_EXIT_FAIL;
    for (size_t i = 0; i < o.nvars; i++)
        if (opt_filter_add_var(&o.filter, c.syms, c.meta->binary_path, o.vars[i]))
            goto out;
    optimizer_options mo = optimizer_options_default();
    mo.include_reads = o.reads;
    c.m = opt_model_load(c.t, &o.filter, &mo, err, sizeof err);
    if (!c.m) {
        cli_error("%s", err);
        goto out;
    }
    if (optimizer_plan_init(&c.plan, c.meta) != 0) {
        cli_error("out of memory");
        goto out;
    }
    size_t dim = optimizer_model_dim(c.m), writes = 0;
    for (size_t v = 0; v < dim; v++) {
        optimizer_var x;
        optimizer_model_var(c.m, v, &x);
        writes += x.is_write;
    }
    if (!o.quiet) {
        printf("weft: %s: %s, %u threads; model: %zu writes%s%zu reads at %zu shared "
               "address%s (%s)\n",
               o.trace, c.meta->binary_path, c.sum->nthreads, writes, o.reads ? " and " : ", ",
               dim - writes, optimizer_model_addresses(c.m),
               optimizer_model_addresses(c.m) == 1 ? "" : "es",
               o.filter.atomics ? "atomic accesses kept" : "atomic accesses left out");
        if (c.meta->settings.mode != WEFT_MODE_EXACT)
            printf("weft: note: traced in free mode; weft inject replays in exact mode, where "
                   "times can differ (weft trace --mode exact)\n");
        if (c.meta->settings.filter != WEFT_FILTER_NONSTACK)
            printf("weft: note: traced with a non-default filter; weft inject numbers events "
                   "with the default one, so the plan's event numbers may not match\n");
        if (!c.syms)
            printf("weft: note: no symbols (%s not readable here)\n", c.meta->binary_path);
    }
    if (!dim) {
        printf("weft: no address is written by one thread and accessed by another: nothing to "
               "align\n");
        if (o.stats) {
            cli_error("%s: the model is empty, no statistics", o.trace);
        }
        goto out;
    }
    rc = o.exact ? run_exact(&c) : opt_run_search(&c);
    if (c.have_plan && o.out) {
        if (optimizer_plan_write(&c.plan, o.out, err, sizeof err) != 0) {
            cli_error("%s", err);
            rc = WEFT_EXIT_FAIL;
        } else {
            printf("weft: wrote %s (%zu injection%s)\n", o.out, c.plan.ninjections,
                   c.plan.ninjections == 1 ? "" : "s");
        }
    }
out:
    if (c.m)
        optimizer_model_free(c.m);
    if (c.plan.program)
        optimizer_plan_free(&c.plan);
    if (c.syms)
        weft_symbols_close(c.syms);
    weft_trace_close(c.t);
    return rc;
}
