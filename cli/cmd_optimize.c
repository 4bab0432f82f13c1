/* weft optimize: find delays that make two threads' writes collide
 * (Bhattacharya et al., Eq. 2 and 4), print the aligned pairs, and write an
 * injection plan for weft inject (docs/plan-format.md); the work is
 * optimizer_run's (optimizer/run.c). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "weft/optimizer.h"

#define O(field) offsetof(optimize_opts, field)

static int parse_algo(const cli_command *cmd, const char *arg, void *opts)
{
    optimize_opts *o = opts;
    if (!strcmp(arg, "exact")) {
        o->exact = 1;
    } else if (search_algorithm_parse(arg, &o->algo) == 0) {
        o->exact = 0;
    } else {
        cli_usage_error(cmd, "--algo: expected exact, sa, shc or rnd, got '%s'", arg);
        return -1;
    }
    return 0;
}

static int parse_var(const cli_command *cmd, const char *arg, void *opts)
{
    optimize_opts *o = opts;
    if (o->nvars >= OPT_MAX_VARS) {
        cli_usage_error(cmd, "--var: at most %d variables", OPT_MAX_VARS);
        return -1;
    }
    o->vars[o->nvars++] = arg;
    return 0;
}

static int parse_sa_temperature(const cli_command *cmd, const char *arg, void *opts)
{
    optimize_opts *o = opts;
    if (search_sa_temperature_parse(arg, &o->sa_temperature) != 0) {
        cli_usage_error(cmd, "--sa-temperature: expected paper or scaled, got '%s'", arg);
        return -1;
    }
    o->sa_set = 1;
    return 0;
}

/* A number in (0, hi): --sa-tmax (hi = inf) and --sa-p0 (hi = 1). */
static int parse_positive(const cli_command *cmd, const char *opt, const char *arg, double hi,
                          double *out)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !(v > 0 && v < hi)) {
        cli_usage_error(cmd, "--%s: expected a number %s, got '%s'", opt,
                        isinf(hi) ? "> 0" : "in (0, 1)", arg);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_sa_tmax(const cli_command *cmd, const char *arg, void *opts)
{
    optimize_opts *o = opts;
    o->sa_set = 1;
    return parse_positive(cmd, "sa-tmax", arg, INFINITY, &o->sa_tmax);
}

static int parse_sa_p0(const cli_command *cmd, const char *arg, void *opts)
{
    optimize_opts *o = opts;
    o->sa_set = 1;
    return parse_positive(cmd, "sa-p0", arg, 1, &o->sa_p0);
}

static int parse_sa_sample(const cli_command *cmd, const char *arg, void *opts)
{
    optimize_opts *o = opts;
    o->sa_set = 1;
    return cli_parse_u64(cmd, "--sa-sample", arg, 1, 1000000, &o->sa_sample);
}

static const cli_option optimize_options[] = {
    {"algo", 'a', "A",
     "exact (default): every pair one delay can align, ranked by delay,\n"
     "and a greedy set that holds at once; sa, shc, rnd: simulated\n"
     "annealing, stochastic hill climbing or random search, stopping at\n"
     "the first alignment",
     CLI_CUSTOM, 0, 0, 0, parse_algo, NULL},
    {"dmax", 0, "N",
     "largest delay per variable, ns (search default 10^7; exact:\n"
     "largest delay in the plan, default unbounded)",
     CLI_U64, O(dmax), 1, UINT64_C(1) << 62, NULL, NULL},
    {"budget", 'b', "N", "fitness evaluations per search run (default 10^6)", CLI_U64, O(budget), 1,
     UINT64_C(1) << 40, NULL, NULL},
    {"seed", 's', "S", "generator seed of the first run (default 1)", CLI_U64, O(seed), 0,
     INT64_MAX, NULL, NULL},
    {"runs", 'n', "N",
     "repeat the search with seeds S..S+N-1 and print the statistics of\n"
     "evaluations to the first alignment; the plan comes from the first\n"
     "run whose hit has a pair that thread creation does not order",
     CLI_U64, O(runs), 1, 1000000, NULL, NULL},
    {"sa-temperature", 0, "RULE",
     "sa: paper (default): T_max = 10^-4 for D_max >= 10^7, else 10^-2;\n"
     "scaled: T_max from the first moves, so that a worse move of their\n"
     "median size is accepted with probability p0 (results/optimizer-sa.md)",
     CLI_CUSTOM, 0, 0, 0, parse_sa_temperature, NULL},
    {"sa-tmax", 0, "T", "sa, paper schedule: this T_max instead", CLI_CUSTOM, 0, 0, 0,
     parse_sa_tmax, NULL},
    {"sa-p0", 0, "P", "sa, scaled: acceptance probability of a median worse move (0.5)", CLI_CUSTOM,
     0, 0, 0, parse_sa_p0, NULL},
    {"sa-sample", 0, "N", "sa, scaled: moves sampled before T_max is set (100)", CLI_CUSTOM, 0, 0,
     0, parse_sa_sample, NULL},
    {"stats-json", 0, "FILE", "write every run's result and the statistics to FILE", CLI_STRING,
     O(stats), 0, 0, NULL, NULL},
    {"reads", 0, NULL,
     "also pair writes with other threads' reads (order violations):\n"
     "such a pair is put in the order opposite to the trace's, the\n"
     "delayed event one cycle after the other, since at one virtual\n"
     "time thread order decides",
     CLI_FLAG, O(reads), 0, 0, NULL, NULL},
    {"atomics", 0, NULL,
     "keep atomic and exclusive accesses (left out by default: they are\n"
     "synchronization and cannot lose an update)",
     CLI_FLAG, O(filter.atomics), 0, 0, NULL, NULL},
    {"var", 0, "NAME", "only accesses to this global (repeatable)", CLI_CUSTOM, 0, 0, 0, parse_var,
     NULL},
    {"from-races", 0, NULL,
     "run weft races on the trace first: the model keeps only accesses\n"
     "at the pcs of its races (pairs a lock orders are left out), and\n"
     "the exact solver ranks first the pairs whose two pcs are one of\n"
     "the races; no race: nothing to align (exit 1)",
     CLI_FLAG, O(from_races), 0, 0, NULL, NULL},
    {"pairs", 0, "N", "exact: at most N pairs in the plan (default: all chosen)", CLI_U64, O(pairs),
     1, UINT32_MAX, NULL, NULL},
    {"keep-ordered", 0, NULL,
     "exact: keep pairs that thread creation already orders (dropped by\n"
     "default: delaying the earlier write delays the clone, so the later\n"
     "one moves too)",
     CLI_FLAG, O(keep_ordered), 0, 0, NULL, NULL},
    {"output", 'o', "PLAN", "plan to write (JSON); without it nothing is written", CLI_STRING,
     O(out), 0, 0, NULL, NULL},
    {"quiet", 'q', NULL, "print only the summary lines", CLI_FLAG, O(quiet), 0, 0, NULL, NULL},
    {NULL, 'd', "N", "", CLI_U64, O(dmax), 1, UINT64_C(1) << 62, NULL, "--dmax"},
    {NULL, 'r', "N", "", CLI_U64, O(runs), 1, 1000000, NULL, "--runs"},
};

static int run_optimize(int argc, char **argv)
{
    optimize_opts o = {.exact = 1, .budget = 1000000, .seed = 1, .runs = 1};
    int first;
    cli_seen seen;
    int rc = cli_parse(&cli_cmd_optimize, argc, argv, &o, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (first >= argc) {
        cli_usage_error(&cli_cmd_optimize, "no trace given (weft optimize TRACE -o PLAN)");
        return WEFT_EXIT_USAGE;
    }
    if (first + 1 < argc) {
        cli_usage_error(&cli_cmd_optimize, "unexpected argument '%s' (one trace at a time)",
                        argv[first + 1]);
        return WEFT_EXIT_USAGE;
    }
    o.trace = argv[first];
    o.dmax_set = cli_given(&cli_cmd_optimize, seen, "dmax");
    if (!o.dmax_set)
        o.dmax = 10000000;
    if (o.exact && (o.runs > 1 || o.stats)) {
        cli_usage_error(&cli_cmd_optimize,
                        "--runs and --stats-json are for the searches (sa, shc, rnd)");
        return WEFT_EXIT_USAGE;
    }
    return optimizer_run(&o);
}

const cli_command cli_cmd_optimize = {
    .name = "optimize",
    .summary = "search delays that make two threads' writes collide; write an injection plan",
    .usage = "TRACE [options] [-o PLAN]",
    .about = "Builds the interference model of a trace (the writes of different threads to\n"
             "one address, with their virtual times: Bhattacharya et al.'s model) and\n"
             "looks for delays that make two of them happen at the same virtual time.\n"
             "Prints the aligned pairs and writes an injection plan for 'weft inject'.\n",
    .footer = "A search plan is minimal: of the alignments at the hit point it keeps one\n"
              "pair (the first that thread creation does not order) and the single delay\n"
              "the exact view gives for it, t_b - t_a before the earlier event; the other\n"
              "delays of the hit vector are not needed for that pair and are left out.\n\n"
              "Exit status: 0 when an alignment was found (and the plan written), 1 when\n"
              "none was found or on error, 2 on a bad command line. With --stats-json the\n"
              "statistics are the result: 0 even if no run found an alignment.\n",
    .opts = optimize_options,
    .nopts = sizeof optimize_options / sizeof *optimize_options,
    .run = run_optimize,
};
