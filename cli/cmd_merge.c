/* weft merge: combine the runs of campaign shards into one campaign folder
 * (the work is replay_merge's, replay/merge.c). */
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "weft/replay.h"

typedef struct merge_opts {
    const char *out;
    int allow_gaps, quiet;
} merge_opts;

#define O(field) offsetof(merge_opts, field)

static const cli_option merge_options[] = {
    {"output", 'o', "OUT", "folder to write (created; not one of the DIRs)", CLI_STRING, O(out), 0,
     0, NULL, NULL},
    {"allow-gaps", 0, NULL, "merge even if seeds of the campaign's range are missing", CLI_FLAG,
     O(allow_gaps), 0, 0, NULL, NULL},
    {"quiet", 'q', NULL, "no summary", CLI_FLAG, O(quiet), 0, 0, NULL, NULL},
    {"out", 0, "OUT", "", CLI_STRING, O(out), 0, 0, NULL, "--output"},
};

static int run_merge(int argc, char **argv)
{
    merge_opts o = {0};
    int first;
    cli_seen seen;
    int rc = cli_parse(&cli_cmd_merge, argc, argv, &o, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (!o.out) {
        cli_usage_error(&cli_cmd_merge, "no output folder (weft merge -o OUT DIR...)");
        return WEFT_EXIT_USAGE;
    }
    if (first >= argc) {
        cli_usage_error(&cli_cmd_merge, "no campaign folders given (weft merge -o OUT DIR...)");
        return WEFT_EXIT_USAGE;
    }
    return replay_merge((const char *const *)argv + first, (size_t)(argc - first), o.out,
                        o.allow_gaps, o.quiet);
}

const cli_command cli_cmd_merge = {
    .name = "merge",
    .summary = "combine the runs of campaign shards into one campaign",
    .usage = "-o OUT [--allow-gaps] [-q] DIR...",
    .about = "Combines the runs.jsonl of campaign folders (weft replay --shard I/N, or\n"
             "campaigns of one configuration over other seeds) into OUT: runs.jsonl sorted\n"
             "by seed (a seed once), summary.json computed from the union exactly as for\n"
             "one campaign, timing.json, campaign.json, points.pcs and the failing runs'\n"
             "saved traces. Every DIR's campaign.json must have the same settings (policy,\n"
             "depth, radius, k, n, points, starvation, program, timeout, ...).\n",
    .footer = "A seed found more than once is kept once (the first DIR's line) and\n"
              "reported; lines of one seed that differ other than in wall time are\n"
              "reported as a warning (the replay was not deterministic). Seeds of the\n"
              "campaign's range that no DIR ran are an error unless --allow-gaps.\n"
              "Exit status: 0 merged, 1 refused or failed, 2 bad command line.\n",
    .opts = merge_options,
    .nopts = sizeof merge_options / sizeof *merge_options,
    .run = run_merge,
};
