/* weft export: a trace as Chrome/Perfetto JSON, VCD or CSV. */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "weft/trace.h"

/* weft_trace_export writes OUT.tmp.PID and renames it over OUT when
 * complete; SIGINT/SIGTERM/SIGHUP before that remove the temporary file,
 * so OUT keeps its old content (or stays absent) and nothing is left over. */
static char export_tmp[4096 + 32];

static void on_export_signal(int sig)
{
    unlink(export_tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

typedef struct export_opts {
    const char *format, *out;
} export_opts;

static const cli_option export_options[] = {
    {"format", 'F', "FMT",
     "chrome: trace-event JSON for Perfetto / chrome://tracing (default);\n"
     "vcd: value change dump for GTKWave; csv: one event per line",
     CLI_STRING, offsetof(export_opts, format), 0, 0, NULL, NULL},
    {"output", 'o', "OUT", "file to write (atomically)", CLI_STRING, offsetof(export_opts, out), 0,
     0, NULL, NULL},
};

static int run_export(int argc, char **argv)
{
    export_opts o = {.format = "chrome"};
    int first;
    cli_seen seen;
    int prc = cli_parse(&cli_cmd_export, argc, argv, &o, &first, &seen);
    if (prc)
        return prc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    weft_export_format f;
    if (!strcmp(o.format, "chrome"))
        f = WEFT_EXPORT_CHROME;
    else if (!strcmp(o.format, "vcd"))
        f = WEFT_EXPORT_VCD;
    else if (!strcmp(o.format, "csv"))
        f = WEFT_EXPORT_CSV;
    else {
        cli_usage_error(&cli_cmd_export, "--format: expected chrome, vcd or csv, got '%s'",
                        o.format);
        return WEFT_EXIT_USAGE;
    }
    if (first + 1 != argc || !o.out) {
        cli_usage_error(&cli_cmd_export, "expected -o OUT and one trace file");
        return WEFT_EXIT_USAGE;
    }
    if (weft_check_output(o.out)) /* before the work, as the other commands do */
        return WEFT_EXIT_FAIL;
    char err[512];
    weft_symbols *s;
    weft_trace *t = cli_open_trace(argv[first], &s);
    if (!t)
        return WEFT_EXIT_FAIL;
    snprintf(export_tmp, sizeof export_tmp, "%s.tmp.%ld", o.out, (long)getpid());
    struct sigaction sa = {0};
    sa.sa_handler = on_export_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int rc = weft_trace_export(t, s, f, o.out, err, sizeof err);
    if (rc)
        cli_error("%s", err);
    cli_close_trace(t, s);
    return rc ? WEFT_EXIT_FAIL : WEFT_EXIT_OK;
}

const cli_command cli_cmd_export = {
    .name = "export",
    .summary = "convert a trace to Chrome/Perfetto JSON, VCD or CSV",
    .usage = "[--format chrome|vcd|csv] -o OUT TRACE",
    .about = "Writes the trace's events in a format other tools open.\n",
    .footer = "Exit status: 0 written, 1 the trace cannot be read or OUT written, 2 bad\n"
              "command line.\n",
    .opts = export_options,
    .nopts = sizeof export_options / sizeof *export_options,
    .run = run_export,
};
