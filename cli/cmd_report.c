/* weft report: one self-contained HTML page from the outputs of weft demo or
 * of replay campaigns (the page is report_generate's, report/page.c). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>

#include "cli.h"
#include "weft/report.h"

int cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL;
    int quiet = 0, c;
    while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            printf("usage: weft report [-o FILE] [-q] DIR\n\n"
                   "Writes one self-contained HTML page (inline CSS and SVG, no network) from\n"
                   "the outputs of 'weft demo' or of 'weft replay' campaigns in DIR (a campaign\n"
                   "folder, a merged one, or a folder of campaign folders): a Table-1-style\n"
                   "summary, the threads' timeline with the aligned writes marked, the\n"
                   "optimizer's convergence and box plots, the policies' hit rates with 95%%\n"
                   "intervals against their guaranteed bounds, and every failing schedule's\n"
                   "seed with the command that reproduces it. Plots are drawn by gnuplot.\n\n"
                   "  -o, --output FILE  page to write (default DIR/report.html), atomically\n"
                   "  -q, --quiet        print nothing on success\n"
                   "  -h, --help         this help\n\n"
                   "Exit status: 0 written, 1 on errors, 2 on a bad command line.\n");
            return WEFT_EXIT_OK;
        default:
            return WEFT_EXIT_USAGE;
        }
    }
    if (optind + 1 != argc) {
        cli_error("report: expected one folder (weft report [-o FILE] DIR)");
        return WEFT_EXIT_USAGE;
    }
    const char *dir = argv[optind];
    char def[PATH_MAX + 32];
    if (!out) {
        snprintf(def, sizeof def, "%s/report.html", dir);
        out = def;
    }
    return report_generate(dir, out, quiet) ? WEFT_EXIT_FAIL : WEFT_EXIT_OK;
}
