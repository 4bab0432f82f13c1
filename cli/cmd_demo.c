/* weft demo: the whole job on a bundled program (or the user's); the steps
 * are demo_run's (demo/pipeline.c). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "weft/demo.h"

static void demo_usage(FILE *out)
{
    fprintf(out,
            "usage: weft demo [options] [-- PROGRAM [ARGS...]]\n\n"
            "Runs the whole pipeline on PROGRAM (default: the bundled %s fixture)\n"
            "and writes every output, a summary and report.html into DIR:\n"
            "  1. weft trace (exact mode)      5. weft inject of each plan: the collision\n"
            "  2. weft info                       and the program's verdict with and without\n"
            "  3. weft export (Perfetto JSON)  6. weft replay campaigns: PCT, PPCT, RPro\n"
            "  4. weft optimize: exact solver, 7. weft report\n"
            "     SA, SHC, RND (+ convergence)\n"
            "A step with nothing to do says so; a guest that crashes, deadlocks or hangs\n"
            "is a finding, not a failure of the demo.\n\n"
            "  -o, --output DIR      outputs (default weft-demo)\n"
            "  -s, --seed S          seed of every search and of the campaigns' first run\n"
            "                        (default 1)\n"
            "  -n, --runs N          replay runs per policy (default 100)\n"
            "  -d, --depth D         bug depth the policies target (default 2)\n"
            "      --search-runs R   search runs per algorithm for the box plots (default 20)\n"
            "      --budget B        fitness evaluations per search run (default 10^6)\n"
            "      --dmax N          largest delay the searches try, ns (default 10^7)\n"
            "  -j, --jobs J          replay runs at once (default: online CPUs)\n"
            "  -t, --timeout SEC     kill a guest run after SEC s (default 30)\n"
            "      --sysroot DIR     AArch64 root filesystem for a dynamic PROGRAM\n"
            "  -h, --help            this help\n\n"
            "Exit status: 0 when the pipeline ran (whatever it found), 1 if it could not\n"
            "(no trace, bad program), 2 on a bad command line, 130 if interrupted.\n",
            DEMO_DEFAULT_FIXTURE);
}

static int parse_opts(int argc, char **argv, demo_opts *o)
{
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"seed", required_argument, 0, 's'},
                                         {"runs", required_argument, 0, 'n'},
                                         {"depth", required_argument, 0, 'd'},
                                         {"search-runs", required_argument, 0, 'R'},
                                         {"budget", required_argument, 0, 'B'},
                                         {"dmax", required_argument, 0, 'D'},
                                         {"jobs", required_argument, 0, 'j'},
                                         {"timeout", required_argument, 0, 't'},
                                         {"sysroot", required_argument, 0, 'S'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (demo_opts){.dir = "weft-demo",
                     .seed = 1,
                     .runs = 100,
                     .depth = 2,
                     .search_runs = 20,
                     .budget = 1000000,
                     .dmax = 10000000,
                     .jobs = ncpu > 0 ? (uint64_t)ncpu : 1,
                     .timeout = 30};
    int c;
    while ((c = getopt_long(argc, argv, "+o:s:n:d:j:t:h", opts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'o':
            o->dir = optarg;
            break;
        case 's':
            bad = cli_parse_u64("--seed", optarg, 0, UINT64_MAX / 4, &o->seed);
            break;
        case 'n':
            bad = cli_parse_u64("--runs", optarg, 1, 1000000, &o->runs);
            o->runs_given = 1;
            break;
        case 'd':
            bad = cli_parse_u64("--depth", optarg, 1, 64, &o->depth);
            break;
        case 'R':
            bad = cli_parse_u64("--search-runs", optarg, 0, 100000, &o->search_runs);
            break;
        case 'B':
            bad = cli_parse_u64("--budget", optarg, 1, UINT64_C(1) << 40, &o->budget);
            break;
        case 'D':
            bad = cli_parse_u64("--dmax", optarg, 1, UINT64_C(1) << 40, &o->dmax);
            break;
        case 'j':
            bad = cli_parse_u64("--jobs", optarg, 1, 1024, &o->jobs);
            break;
        case 't':
            bad = cli_parse_u64("--timeout", optarg, 1, 86400, &o->timeout);
            break;
        case 'S':
            o->sysroot = optarg;
            break;
        case 'h':
            demo_usage(stdout);
            return 1;
        default:
            return -1;
        }
        if (bad)
            return -1;
    }
    static char *default_argv[2];
    default_argv[0] = (char *)demo_fixture_path(DEMO_DEFAULT_FIXTURE);
    o->gargv = optind < argc ? argv + optind : default_argv;
    o->gargc = optind < argc ? argc - optind : 1;
    if (strchr(o->dir, ',')) {
        cli_error("%s: commas are not allowed in the paths weft hands to the tracer", o->dir);
        return -1;
    }
    return 0;
}

int cmd_demo(int argc, char **argv)
{
    demo_opts o;
    int pr = parse_opts(argc, argv, &o);
    if (pr)
        return pr > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    return demo_run(&o);
}
