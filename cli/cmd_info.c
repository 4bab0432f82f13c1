/* weft info: a trace's settings, outcome, threads and shared variables. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "weft/trace.h"

/* Open a trace and, when the traced binary is still where it was, its
 * symbols. Prints the error and returns NULL if the trace cannot be read. */
weft_trace *cli_open_trace(const char *path, weft_symbols **syms)
{
    char err[512];
    *syms = NULL;
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t) {
        cli_error("%s", err);
        return NULL;
    }
    const weft_trace_meta *m = weft_trace_get_meta(t);
    if (m->binary_path && *m->binary_path)
        *syms = weft_symbols_open_run(m->binary_path, m, err, sizeof err);
    return t;
}

void cli_close_trace(weft_trace *t, weft_symbols *syms)
{
    if (syms)
        weft_symbols_close(syms);
    weft_trace_close(t);
}

typedef struct info_opts {
    int vars, no_vars;
} info_opts;

#define O(field) offsetof(info_opts, field)

static const cli_option info_options[] = {
    {"vars", 0, NULL,
     "compute the shared variables whatever the trace's size (two passes\n"
     "over its events: minutes on a billion)",
     CLI_FLAG, O(vars), 0, 0, NULL, NULL},
    {"no-vars", 0, NULL, "settings, outcome and thread table only (no pass over the events)",
     CLI_FLAG, O(no_vars), 0, 0, NULL, NULL},
};

static int run_info(int argc, char **argv)
{
    int first;
    cli_seen seen;
    info_opts o = {0};
    int rc = cli_parse(&cli_cmd_info, argc, argv, &o, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (first + 1 != argc) {
        cli_usage_error(&cli_cmd_info, "expected exactly one trace file (weft info TRACE)");
        return WEFT_EXIT_USAGE;
    }
    if (o.vars && o.no_vars) {
        cli_usage_error(&cli_cmd_info, "--vars and --no-vars exclude each other");
        return WEFT_EXIT_USAGE;
    }
    weft_symbols *s;
    weft_trace *t = cli_open_trace(argv[first], &s);
    if (!t)
        return WEFT_EXIT_FAIL;
    rc = weft_trace_print_info(t, s, o.vars ? 1 : o.no_vars ? 0 : -1, stdout);
    /* Output to a full disk or closed pipe fails at the flush, if not before. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("%s: cannot write the summary: %s", argv[first], strerror(errno));
        rc = -1;
    } else if (rc != 0) {
        /* The reader's errors already name the trace. */
        const char *e = weft_trace_error(t);
        if (e && *e)
            cli_error("%s", e);
        else
            cli_error("%s: out of memory", argv[first]);
    }
    cli_close_trace(t, s);
    return rc ? WEFT_EXIT_FAIL : WEFT_EXIT_OK;
}

const cli_command cli_cmd_info = {
    .name = "info",
    .summary = "summarize a trace: threads, events, shared variables",
    .usage = "TRACE",
    .about = "Prints the run's settings and outcome, a thread table, and per shared\n"
             "variable the per-thread read/write pattern and the number of cross-thread\n"
             "write-write pairs. The variables need two passes over the events; by\n"
             "default they are computed for traces of up to 20 million events (the\n"
             "rest prints at once from the trace's footer).\n",
    .footer = "Exit status: 0 printed, 1 the trace cannot be read, 2 bad command line.\n",
    .opts = info_options,
    .nopts = sizeof info_options / sizeof *info_options,
    .run = run_info,
};
