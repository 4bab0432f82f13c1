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

#include "cli.h"
#include "weft/optimizer.h"

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

int cmd_optimize(int argc, char **argv)
{
    optimize_opts o = {.exact = 1, .budget = 1000000, .seed = 1, .runs = 1};
    int prc = parse_opts(argc, argv, &o);
    if (prc)
        return prc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    return optimizer_run(&o);
}
