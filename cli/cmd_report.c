/* weft report: one self-contained HTML page from the outputs of weft demo or
 * of replay campaigns (the page is report_generate's, report/page.c). */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "weft/report.h"

typedef struct report_opts {
    const char *out;
    int quiet;
} report_opts;

static const cli_option report_options[] = {
    {"output", 'o', "FILE", "page to write (default DIR/report.html), atomically", CLI_STRING,
     offsetof(report_opts, out), 0, 0, NULL, NULL},
    {"quiet", 'q', NULL, "print nothing on success", CLI_FLAG, offsetof(report_opts, quiet), 0, 0,
     NULL, NULL},
};

static int run_report(int argc, char **argv)
{
    report_opts o = {0};
    int first;
    cli_seen seen;
    int rc = cli_parse(&cli_cmd_report, argc, argv, &o, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (first + 1 != argc) {
        cli_usage_error(&cli_cmd_report, "expected one folder (weft report [-o FILE] DIR)");
        return WEFT_EXIT_USAGE;
    }
    const char *dir = argv[first];
    char def[PATH_MAX + 32];
    if (!o.out) {
        snprintf(def, sizeof def, "%s/report.html", dir);
        o.out = def;
    }
    return report_generate(dir, o.out, o.quiet) ? WEFT_EXIT_FAIL : WEFT_EXIT_OK;
}

const cli_command cli_cmd_report = {
    .name = "report",
    .summary = "write one self-contained HTML page from a demo or campaign",
    .usage = "[-o FILE] [-q] DIR",
    .about = "Writes one self-contained HTML page (inline CSS and SVG, no network) from\n"
             "the outputs of 'weft demo' or of 'weft replay' campaigns in DIR (a campaign\n"
             "folder, a merged one, or a folder of campaign folders): a summary table,\n"
             "the threads' timeline with the aligned writes marked, the optimizer's\n"
             "convergence and box plots, the policies' hit rates with 95% intervals\n"
             "against their guaranteed bounds, and every failing schedule's seed with the\n"
             "command that reproduces it. Plots are drawn by gnuplot.\n",
    .footer = "Exit status: 0 written, 1 on errors, 2 on a bad command line.\n",
    .opts = report_options,
    .nopts = sizeof report_options / sizeof *report_options,
    .run = run_report,
};
