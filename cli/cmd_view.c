/* weft info / weft export: looking at a trace. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "weft/trace.h"

/* Open a trace and, when the traced binary is still where it was, its
 * symbols. Prints the error and returns NULL if the trace cannot be read. */
static weft_trace *open_with_symbols(const char *path, weft_symbols **syms)
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
        *syms = weft_symbols_open(m->binary_path, err, sizeof err);
    return t;
}

static void close_with_symbols(weft_trace *t, weft_symbols *syms)
{
    if (syms)
        weft_symbols_close(syms);
    weft_trace_close(t);
}

int cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: weft info TRACE\n\nPrints the run's settings and outcome, a thread "
                   "table, and per shared variable\nthe per-thread read/write pattern and the "
                   "number of cross-thread write-write pairs.\n");
            return WEFT_EXIT_OK;
        }
        return WEFT_EXIT_USAGE;
    }
    if (optind + 1 != argc) {
        cli_error("info: expected exactly one trace file (weft info TRACE)");
        return WEFT_EXIT_USAGE;
    }
    weft_symbols *s;
    weft_trace *t = open_with_symbols(argv[optind], &s);
    if (!t)
        return WEFT_EXIT_FAIL;
    int rc = weft_trace_print_info(t, s, stdout);
    /* Output to a full disk or closed pipe fails at the flush, if not before. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("%s: cannot write the summary: %s", argv[optind], strerror(errno));
        rc = -1;
    } else if (rc != 0) {
        /* The reader's errors already name the trace. */
        const char *e = weft_trace_error(t);
        if (e && *e)
            cli_error("%s", e);
        else
            cli_error("%s: out of memory", argv[optind]);
    }
    close_with_symbols(t, s);
    return rc ? WEFT_EXIT_FAIL : WEFT_EXIT_OK;
}

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

int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {{"format", required_argument, 0, 'F'},
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *fmt = "chrome", *out = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "F:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'F':
            fmt = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'h':
            printf("usage: weft export [--format chrome|vcd|csv] -o OUT TRACE\n\n"
                   "  chrome  trace-event JSON for Perfetto / chrome://tracing (default)\n"
                   "  vcd     value change dump for GTKWave\n"
                   "  csv     one event per line\n");
            return WEFT_EXIT_OK;
        default:
            return WEFT_EXIT_USAGE;
        }
    }
    weft_export_format f;
    if (!strcmp(fmt, "chrome"))
        f = WEFT_EXPORT_CHROME;
    else if (!strcmp(fmt, "vcd"))
        f = WEFT_EXPORT_VCD;
    else if (!strcmp(fmt, "csv"))
        f = WEFT_EXPORT_CSV;
    else {
        cli_error("--format: expected chrome, vcd or csv, got '%s'", fmt);
        return WEFT_EXIT_USAGE;
    }
    if (optind + 1 != argc || !out) {
        cli_error("export: expected -o OUT and one trace file");
        return WEFT_EXIT_USAGE;
    }
    char err[512];
    weft_symbols *s;
    weft_trace *t = open_with_symbols(argv[optind], &s);
    if (!t)
        return WEFT_EXIT_FAIL;
    snprintf(export_tmp, sizeof export_tmp, "%s.tmp.%ld", out, (long)getpid());
    struct sigaction sa = {0};
    sa.sa_handler = on_export_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int rc = weft_trace_export(t, s, f, out, err, sizeof err);
    if (rc)
        cli_error("%s", err);
    close_with_symbols(t, s);
    return rc ? WEFT_EXIT_FAIL : WEFT_EXIT_OK;
}
