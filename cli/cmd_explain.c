/* weft explain: why a failing run of a replay failed, from the files the
 * replay kept (the work is replay_explanation_load's, replay/explain.c).
 * See docs/replay.md, "Explaining a failing run". */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "weft/replay.h"

typedef struct explain_opts {
    int unused;
} explain_opts;

static int run_explain(int argc, char **argv)
{
    explain_opts o = {0};
    int first;
    cli_seen seen;
    int rc = cli_parse(&cli_cmd_explain, argc, argv, &o, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (first + 2 != argc) {
        cli_usage_error(&cli_cmd_explain, "expected a replay folder and a seed (weft explain DIR "
                                          "SEED)");
        return WEFT_EXIT_USAGE;
    }
    uint64_t seed;
    if (cli_parse_u64(&cli_cmd_explain, "SEED", argv[first + 1], 0, UINT64_MAX / 2, &seed))
        return WEFT_EXIT_USAGE;
    replay_explanation x;
    char err[PATH_MAX + 512];
    if (replay_explanation_load(argv[first], seed, &x, err, sizeof err)) {
        weft_error("%s", err);
        return WEFT_EXIT_FAIL;
    }
    replay_explanation_print(&x, stdout, 1);
    replay_explanation_free(&x);
    if (fflush(stdout) != 0) {
        weft_error("stdout: write failed: %s", strerror(errno));
        return WEFT_EXIT_FAIL;
    }
    return WEFT_EXIT_OK;
}

const cli_command cli_cmd_explain = {
    .name = "explain",
    .summary = "why a replayed run failed: its thread switches, races and verdict",
    .usage = "DIR SEED",
    .about = "Explains run SEED of the replay folder DIR (a campaign, or a --seed run's\n"
             "folder) from the files the replay kept with --save-trace: the thread\n"
             "switches its policy made (step, from, to, whether the running thread could\n"
             "have gone on, why: a change point, a block, an exit, a yield, a starvation\n"
             "override, a thread of higher priority; where each thread was, who else was\n"
             "enabled), the data races of the run's trace with the last accesses to their\n"
             "variables, and the verdict. weft replay --seed S --explain does the same\n"
             "right after the run.\n",
    .footer = "Exit status: 0 explained, 1 if the run's files are missing or unreadable, 2\n"
              "on a bad command line.\n",
    .opts = NULL,
    .nopts = 0,
    .run = run_explain,
};
