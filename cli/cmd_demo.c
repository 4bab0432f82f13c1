/* weft demo: the whole job on a bundled program (or the user's); the steps
 * are demo_run's (demo/pipeline.c). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "weft/demo.h"

#define O(field) offsetof(demo_opts, field)

static const cli_option demo_options[] = {
    {"output", 'o', "DIR", "outputs (default weft-demo)", CLI_STRING, O(dir), 0, 0, NULL, NULL},
    {"seed", 's', "S", "seed of every search and of the campaigns' first run (default 1)", CLI_U64,
     O(seed), 0, UINT64_MAX / 4, NULL, NULL},
    {"runs", 'n', "N", "replay runs per policy (default 100)", CLI_U64, O(runs), 1, 1000000, NULL,
     NULL},
    {"depth", 'd', "D", "bug depth the policies target (default 2)", CLI_U64, O(depth), 1, 64, NULL,
     NULL},
    {"search-runs", 0, "R", "search runs per algorithm for the box plots (default 20)", CLI_U64,
     O(search_runs), 0, 100000, NULL, NULL},
    {"budget", 'b', "B", "fitness evaluations per search run (default 10^6)", CLI_U64, O(budget), 1,
     UINT64_C(1) << 40, NULL, NULL},
    {"dmax", 0, "N", "largest delay the searches try, ns (default 10^7)", CLI_U64, O(dmax), 1,
     UINT64_C(1) << 40, NULL, NULL},
    {"jobs", 'j', "J", "replay runs at once (default: online CPUs)", CLI_U64, O(jobs), 1, 1024,
     NULL, NULL},
    {"timeout", 't', "SEC", "kill a guest run after SEC s (default 30)", CLI_U64, O(timeout), 1,
     86400, NULL, NULL},
    {"sysroot", 0, "DIR", "AArch64 root filesystem for a dynamically linked PROGRAM", CLI_STRING,
     O(sysroot), 0, 0, NULL, NULL},
};

static int run_demo(int argc, char **argv)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    demo_opts o = {.dir = "weft-demo",
                   .seed = 1,
                   .runs = 100,
                   .depth = 2,
                   .search_runs = 20,
                   .budget = 1000000,
                   .dmax = 10000000,
                   .jobs = ncpu > 0 ? (uint64_t)ncpu : 1,
                   .timeout = 30};
    int first;
    cli_seen seen;
    int rc = cli_parse(&cli_cmd_demo, argc, argv, &o, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    o.runs_given = cli_given(&cli_cmd_demo, seen, "runs");
    static char *default_argv[2];
    default_argv[0] = (char *)demo_fixture_path(DEMO_DEFAULT_FIXTURE);
    o.gargv = first < argc ? argv + first : default_argv;
    o.gargc = first < argc ? argc - first : 1;
    if (strchr(o.dir, ',')) {
        cli_usage_error(&cli_cmd_demo,
                        "%s: commas are not allowed in the paths weft hands to "
                        "the tracer",
                        o.dir);
        return WEFT_EXIT_USAGE;
    }
    return demo_run(&o);
}

const cli_command cli_cmd_demo = {
    .name = "demo",
    .summary = "run the whole pipeline on a bundled program (or yours), with a report",
    .usage = "[options] [-- PROGRAM [ARGS...]]",
    .about = "Runs the whole pipeline on PROGRAM (default: the bundled " DEMO_DEFAULT_FIXTURE
             " fixture)\n"
             "and writes every output, a summary and report.html into DIR:\n"
             "  1. weft trace (exact mode)      5. weft inject of each plan: the collision\n"
             "  2. weft info                       and the program's verdict with and without\n"
             "  3. weft export (Perfetto JSON)  6. weft replay campaigns: PCT, PPCT, RPro\n"
             "  4. weft optimize: exact solver, 7. weft report\n"
             "     SA, SHC, RND (+ convergence)\n"
             "A step with nothing to do says so; a guest that crashes, deadlocks or hangs\n"
             "is a finding, not a failure of the demo.\n",
    .footer = "Exit status: 0 when the pipeline ran (whatever it found), 1 if it could not\n"
              "(no trace, bad program), 2 on a bad command line, 130 (SIGINT) or 143\n(SIGTERM) if "
              "interrupted.\n",
    .opts = demo_options,
    .nopts = sizeof demo_options / sizeof *demo_options,
    .stop_at_operand = 1,
    .run = run_demo,
};
