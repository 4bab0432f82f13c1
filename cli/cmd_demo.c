/* weft demo: the pipeline end to end on a bundled program (or the user's).
 * It runs the stages that exist: trace on the ideal platform, the info
 * summary, and a timeline export; later stages join as they land. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "weft/trace.h"

#ifndef WEFT_BUILD_FIXTURES
#define WEFT_BUILD_FIXTURES ""
#endif

#define DEMO_DEFAULT_FIXTURE "lost_update"

static const char *fixture_path(const char *name)
{
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "../fixtures/%s", name);
    const char *found = cli_installed_path(path);
    if (found)
        return found;
    snprintf(path, sizeof path, "%s/%s", WEFT_BUILD_FIXTURES, name);
    return path;
}

int cmd_demo(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *dir = "weft-demo";
    int c;
    while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            dir = optarg;
            break;
        case 'h':
            printf("usage: weft demo [-o DIR] [-- PROGRAM [ARGS...]]\n\n"
                   "Runs the pipeline on PROGRAM (default: the bundled %s fixture):\n"
                   "trace on the ideal platform, info summary, timeline export.\n"
                   "Outputs go to DIR (default weft-demo).\n",
                   DEMO_DEFAULT_FIXTURE);
            return WEFT_EXIT_OK;
        default:
            return WEFT_EXIT_USAGE;
        }
    }
    char *default_argv[] = {(char *)fixture_path(DEMO_DEFAULT_FIXTURE), NULL};
    char **gargv = optind < argc ? argv + optind : default_argv;
    int gargc = optind < argc ? argc - optind : 1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        cli_error("%s: cannot create output folder: %s", dir, strerror(errno));
        return WEFT_EXIT_FAIL;
    }
    if (guest_check_binary(gargv[0], NULL))
        return WEFT_EXIT_FAIL;
    char trace[PATH_MAX], timeline[PATH_MAX];
    snprintf(trace, sizeof trace, "%s/run.wtr", dir);
    snprintf(timeline, sizeof timeline, "%s/timeline.json", dir);

    printf("== 1. trace %s on the ideal platform (exact mode)\n", gargv[0]);
    char args[PATH_MAX + 32];
    snprintf(args, sizeof args, "mode=exact,out=%s", trace);
    guest_run run = {
        .binary = gargv[0], .argv = gargv, .argc = gargc, .plugin_args = args, .timeout_s = 600};
    int st = trace_run_and_report(&run, trace, 0);
    if (st == WEFT_EXIT_FAIL && access(trace, R_OK) != 0)
        return WEFT_EXIT_FAIL;

    printf("\n== 2. weft info %s\n", trace);
    fflush(stdout);
    char *info_argv[] = {"info", trace, NULL};
    if (cmd_info(2, info_argv) != WEFT_EXIT_OK)
        return WEFT_EXIT_FAIL;

    printf("\n== 3. weft export --format chrome -o %s %s\n", timeline, trace);
    fflush(stdout);
    char *exp_argv[] = {"export", "--format", "chrome", "-o", timeline, trace, NULL};
    extern int optind;
    optind = 0;
    if (cmd_export(6, exp_argv) != WEFT_EXIT_OK)
        return WEFT_EXIT_FAIL;
    printf("timeline written: open %s in https://ui.perfetto.dev or chrome://tracing\n", timeline);

    printf("\n== summary\n"
           "traced and summarized %s; not yet in this build: the optimizer (weft optimize,\n"
           "weft inject) and the PCT/PPCT/RPro replays (weft replay).\n"
           "reproduce: weft trace --mode exact -o %s -- %s\n",
           gargv[0], trace, gargv[0]);
    return WEFT_EXIT_OK;
}
