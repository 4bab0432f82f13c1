/* weft inject: re-run a program with an injection plan's delays (the work is
 * replay_inject's, replay/inject_plan.c). */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "weft/replay.h"

static void inject_usage(FILE *out)
{
    fprintf(out,
            "usage: weft inject PLAN [options] [-- PROGRAM [ARGS...]]\n\n"
            "Runs PROGRAM (default: the plan's program and arguments) on the ideal\n"
            "platform in exact mode, once as is and once with the plan's delays, and\n"
            "reports per planned alignment the predicted and the achieved virtual times\n"
            "of both events, whether they collided (same virtual time; a write-read\n"
            "pair from weft optimize --reads: whether the delayed event landed its\n"
            "planned nudge after the other), and the program's verdict (exit status,\n"
            "oracle BUG line, signal) with and without the delays. A delay can change\n"
            "what other threads do (a thread that is still alive changes the path of a\n"
            "later pthread_create, a lock is taken later), so achieved times are\n"
            "measured, never assumed: with --refine N a missed alignment is retried\n"
            "up to N times, each delay corrected by the measured miss, and every\n"
            "attempt is reported.\n\n"
            "  -r, --refine N       refinement runs after the first injected run (default 3)\n"
            "  -t, --timeout S      kill a guest run after S seconds of wall time (default 60)\n"
            "      --sysroot DIR    AArch64 root filesystem for a dynamically linked PROGRAM\n"
            "  -k, --keep DIR       keep the traces, guest outputs and injection reports there\n"
            "  -j, --report-json F  write the whole report as JSON to F\n"
            "  -q, --quiet          print only the summary lines\n"
            "  -h, --help           this help\n\n"
            "A plan made for another binary (GNU build-id differs) is refused.\n"
            "Exit status: 0 if every planned alignment was achieved in the last injected\n"
            "run, 1 if one was not (or on error), 2 on a bad command line. The program's\n"
            "own verdict is reported, not returned.\n");
}

static int parse_opts(int argc, char **argv, replay_inject_opts *o, int *prog)
{
    static const struct option opts[] = {{"refine", required_argument, 0, 'r'},
                                         {"timeout", required_argument, 0, 't'},
                                         {"sysroot", required_argument, 0, 'S'},
                                         {"keep", required_argument, 0, 'k'},
                                         {"report-json", required_argument, 0, 'j'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    /* GNU getopt permutes: options may come before or after the plan; "--"
     * ends them, and the program with its arguments follows the plan. */
    while ((c = getopt_long(argc, argv, "r:t:k:j:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            if (cli_parse_u64("--refine", optarg, 0, 100, &o->refine))
                return -1;
            break;
        case 't':
            if (cli_parse_u64("--timeout", optarg, 1, 86400 * 7, &o->timeout))
                return -1;
            break;
        case 'S':
            o->sysroot = optarg;
            break;
        case 'k':
            o->keep = optarg;
            break;
        case 'j':
            o->report = optarg;
            break;
        case 'q':
            o->quiet = 1;
            break;
        case 'h':
            inject_usage(stdout);
            return 1;
        default:
            return -1;
        }
    }
    if (optind >= argc) {
        cli_error("inject: no plan given (weft inject PLAN [-- PROGRAM ARGS])");
        return -1;
    }
    o->plan_path = argv[optind++];
    *prog = optind;
    return 0;
}

int cmd_inject(int argc, char **argv)
{
    replay_inject_opts o = {.refine = 3, .timeout = 60};
    int prog = 0;
    int prc = parse_opts(argc, argv, &o, &prog);
    if (prc)
        return prc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (prog < argc) {
        o.argv = argv + prog;
        o.argc = argc - prog;
    }
    return replay_inject(&o);
}
