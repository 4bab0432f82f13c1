/* weft salvage: a trace from the spool a run left behind, when nobody
 * salvaged it at the time (weft itself does after every run it starts, but
 * that salvage can fail, on a full disk say, and the spool then stays). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "weft/trace.h"

typedef struct salvage_opts {
    int quiet;
} salvage_opts;

#define O(field) offsetof(salvage_opts, field)

static const cli_option salvage_options[] = {
    {"quiet", 'q', NULL, "no line about what was salvaged", CLI_FLAG, O(quiet), 0, 0, NULL, NULL},
};

static int run_salvage(int argc, char **argv)
{
    salvage_opts o = {0};
    int first;
    cli_seen seen;
    int rc = cli_parse(&cli_cmd_salvage, argc, argv, &o, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (first + 1 != argc) {
        cli_usage_error(&cli_cmd_salvage, "expected exactly one trace (weft salvage TRACE)");
        return WEFT_EXIT_USAGE;
    }
    /* TRACE or TRACE.spool: the trace's path is the spool's without it. */
    char path[4096];
    size_t n = strlen(argv[first]);
    if (n >= sizeof path) {
        cli_error("%s: path too long", argv[first]);
        return WEFT_EXIT_FAIL;
    }
    memcpy(path, argv[first], n + 1);
    if (n > 6 && !strcmp(path + n - 6, ".spool"))
        path[n - 6] = 0;
    char spool[4096 + 8];
    snprintf(spool, sizeof spool, "%s.spool", path);
    if (access(spool, F_OK) != 0) {
        cli_error("%s: %s", spool, strerror(errno));
        return WEFT_EXIT_FAIL;
    }
    /* A trace already there is a finished run's, or another's: not replaced. */
    if (access(path, F_OK) == 0) {
        cli_error("%s: a trace is already there; move it away to salvage %s", path, spool);
        return WEFT_EXIT_FAIL;
    }
    char err[512];
    if (weft_trace_salvage(path, 0, WEFT_EXIT_STATUS_UNKNOWN, err, sizeof err) != 0) {
        cli_error("%s", err);
        return WEFT_EXIT_FAIL;
    }
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t) {
        cli_error("%s", err);
        return WEFT_EXIT_FAIL;
    }
    const weft_trace_summary *s = weft_trace_get_summary(t);
    if (!o.quiet)
        fprintf(stderr, "weft: %s: %llu events of %u thread%s salvaged%s (flagged truncated)\n",
                path, (unsigned long long)weft_trace_event_count(t), s->nthreads,
                s->nthreads == 1 ? "" : "s",
                s->flags & WEFT_TRACE_STOPPED ? ", the run was stopped at a trace limit" : "");
    weft_trace_close(t);
    return WEFT_EXIT_OK;
}

const cli_command cli_cmd_salvage = {
    .name = "salvage",
    .summary = "make a trace from the spool an unfinished run left",
    .usage = "[-q] TRACE",
    .about = "A traced run writes TRACE.spool (and TRACE.live, its threads' buffers) and\n"
             "turns them into TRACE when it ends; when weft could not (the run's qemu\n"
             "was killed with weft, or the disk was full), they stay. This makes TRACE\n"
             "from them as weft would have: every event the spool and the buffers hold,\n"
             "flagged truncated (and stopped if the run was stopped at a trace limit),\n"
             "the exit status unknown. TRACE may be given as TRACE.spool.\n",
    .footer = "The spool and the buffers are removed once TRACE is written; an existing\n"
              "TRACE is not replaced. Exit status: 0 salvaged, 1 no spool or it could\n"
              "not be salvaged (one line says why; the spool stays), 2 bad command line.\n",
    .opts = salvage_options,
    .nopts = sizeof salvage_options / sizeof salvage_options[0],
    .run = run_salvage,
};
