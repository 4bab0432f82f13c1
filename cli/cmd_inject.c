/* weft inject: re-run a program with an injection plan's delays (the work is
 * replay_inject's, replay/inject_plan.c). */
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "weft/replay.h"

#define O(field) offsetof(replay_inject_opts, field)

static const cli_option inject_options[] = {
    {"refine", 0, "N", "refinement runs after the first injected run (default 3)", CLI_U64,
     O(refine), 0, 100, NULL, NULL},
    {"timeout", 't', "S", "kill a guest run after S seconds of wall time (default 60)", CLI_U64,
     O(timeout), 1, 86400 * 7, NULL, NULL},
    {"sysroot", 0, "DIR", "AArch64 root filesystem for a dynamically linked PROGRAM", CLI_STRING,
     O(sysroot), 0, 0, NULL, NULL},
    {"keep", 'k', "DIR", "keep the traces, guest outputs and injection reports there", CLI_STRING,
     O(keep), 0, 0, NULL, NULL},
    {"report-json", 0, "FILE", "write the whole report as JSON to FILE (atomically)", CLI_STRING,
     O(report), 0, 0, NULL, NULL},
    {"quiet", 'q', NULL, "print only the summary lines", CLI_FLAG, O(quiet), 0, 0, NULL, NULL},
    {NULL, 'r', "N", "", CLI_U64, O(refine), 0, 100, NULL, "--refine"},
    {NULL, 'j', "FILE", "", CLI_STRING, O(report), 0, 0, NULL, "--report-json"},
};

static int run_inject(int argc, char **argv)
{
    replay_inject_opts o = {.refine = 3, .timeout = 60};
    int first;
    cli_seen seen;
    int rc = cli_parse(&cli_cmd_inject, argc, argv, &o, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (first >= argc) {
        cli_usage_error(&cli_cmd_inject, "no plan given (weft inject PLAN [-- PROGRAM ARGS])");
        return WEFT_EXIT_USAGE;
    }
    o.plan_path = argv[first];
    if (first + 1 < argc) {
        o.argv = argv + first + 1;
        o.argc = argc - first - 1;
    }
    return replay_inject(&o);
}

const cli_command cli_cmd_inject = {
    .name = "inject",
    .summary = "re-run a program with a plan's delays and check that the planned writes collide",
    .usage = "PLAN [options] [-- PROGRAM [ARGS...]]",
    .about = "Runs PROGRAM (default: the plan's program and arguments) on the ideal\n"
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
             "attempt is reported.\n",
    .footer = "A plan made for another binary (GNU build-id differs) is refused.\n"
              "Exit status: 0 if every planned alignment was achieved in the last injected\n"
              "run, 1 if one was not (or on error), 2 on a bad command line. The program's\n"
              "own verdict is reported, not returned.\n",
    .opts = inject_options,
    .nopts = sizeof inject_options / sizeof *inject_options,
    .run = run_inject,
};
