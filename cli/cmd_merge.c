/* weft merge: combine the runs of campaign shards into one campaign folder
 * (the work is replay_merge's, replay/merge.c). */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "weft/replay.h"

static void merge_usage(FILE *out)
{
    fprintf(out, "usage: weft merge -o OUT [--allow-gaps] [-q] DIR...\n\n"
                 "Combines the runs.jsonl of campaign folders (weft replay --shard I/N, or\n"
                 "campaigns of one configuration over other seeds) into OUT: runs.jsonl sorted\n"
                 "by seed (a seed once), summary.json computed from the union exactly as for\n"
                 "one campaign, timing.json, campaign.json, points.pcs and the failing runs'\n"
                 "saved traces. Every DIR's campaign.json must have the same settings (policy,\n"
                 "depth, radius, k, n, points, starvation, program, timeout, ...).\n\n"
                 "  -o, --out OUT      folder to write (created; not one of the DIRs)\n"
                 "      --allow-gaps   merge even if seeds of the campaign's range are missing\n"
                 "  -q, --quiet        no summary\n"
                 "  -h, --help         this help\n\n"
                 "A seed found more than once is kept once (the first DIR's line) and\n"
                 "reported; lines of one seed that differ other than in wall time are\n"
                 "reported as a warning (the replay was not deterministic). Seeds of the\n"
                 "campaign's range that no DIR ran are an error unless --allow-gaps.\n"
                 "Exit status: 0 merged, 1 refused or failed, 2 bad command line.\n");
}

int cmd_merge(int argc, char **argv)
{
    static const struct option opts[] = {{"out", required_argument, 0, 'o'},
                                         {"allow-gaps", no_argument, 0, 'g'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL;
    int allow_gaps = 0, quiet = 0, c;
    while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'g':
            allow_gaps = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            merge_usage(stdout);
            return WEFT_EXIT_OK;
        default:
            return WEFT_EXIT_USAGE;
        }
    }
    if (!out) {
        weft_error("merge: no output folder (weft merge -o OUT DIR...)");
        return WEFT_EXIT_USAGE;
    }
    if (optind >= argc) {
        weft_error("merge: no campaign folders given (weft merge -o OUT DIR...)");
        return WEFT_EXIT_USAGE;
    }
    return replay_merge((const char *const *)argv + optind, (size_t)(argc - optind), out,
                        allow_gaps, quiet);
}
