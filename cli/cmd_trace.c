/* weft trace: run a program on the ideal platform and record its trace. */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "weft/trace.h"

typedef struct trace_opts {
    const char *out, *sysroot, *gates;
    char plugin_args[4096];
    size_t len;
    uint64_t timeout;
    int quiet;
    int exact, quantum, no_speculate;
    const char *vars[16];
    int nvars;
    int shared; /* the last --filter was shared */
} trace_opts;

static int add_arg(trace_opts *o, const char *fmt, const char *val)
{
    if (strchr(val, ',')) {
        cli_error("'%s': commas are not allowed in weft option values", val);
        return -1;
    }
    int n =
        snprintf(o->plugin_args + o->len, sizeof o->plugin_args - o->len, "%s", o->len ? "," : "");
    o->len += (size_t)n;
    n = snprintf(o->plugin_args + o->len, sizeof o->plugin_args - o->len, fmt, val);
    o->len += (size_t)n;
    if (o->len >= sizeof o->plugin_args) {
        cli_error("too many options");
        return -1;
    }
    return 0;
}

static int add_var_filter(trace_opts *o, const char *binary, const char *name)
{
    char err[512];
    weft_symbols *s = weft_symbols_open(binary, err, sizeof err);
    if (!s) {
        cli_error("%s", err);
        return -1;
    }
    uint64_t addr = 0, size = 0;
    int rc = weft_symbols_lookup(s, name, &addr, &size);
    weft_symbols_close(s);
    if (rc != 0) {
        cli_error("--filter var:%s: no global variable of that name in %s", name, binary);
        return -1;
    }
    char range[64];
    snprintf(range, sizeof range, "%" PRIx64 "-%" PRIx64, addr, addr + (size ? size : 1));
    return add_arg(o, "range=%s", range);
}

/* weft's own lines go to stderr: the guest's output is on stdout. */
static void describe_end(const guest_result *r, uint32_t flags)
{
    if (flags & WEFT_TRACE_DEADLOCK)
        fprintf(stderr, "weft: guest deadlocked: every live thread waits on a futex (see trace)\n");
    else if (flags & WEFT_TRACE_STOPPED)
        fprintf(stderr, "weft: guest stopped by weft at a trace limit (the reason is above)\n");
    else if (r->end == GUEST_EXITED)
        fprintf(stderr, "weft: guest exited with status %d\n", r->status);
    else if (r->end == GUEST_SIGNALED)
        fprintf(stderr, "weft: guest killed by signal %d (%s)\n", r->status, strsignal(r->status));
    else if (r->end == GUEST_TIMED_OUT)
        fprintf(stderr, "weft: guest timed out and was killed (--timeout); if it ends outside "
                        "weft: threads that back off and retry in step (std::lock, a try-lock "
                        "loop) can livelock on the ideal platform, where real hardware's timing "
                        "tells them apart; weft replay --sched random runs other interleavings\n");
    else if (r->finish)
        fprintf(stderr,
                "weft: interrupted by signal %d after the guest ended; the trace is complete\n",
                r->status);
    else
        fprintf(stderr, "weft: interrupted by signal %d; guest killed\n", r->status);
}

static int trace_run_and_report(const guest_run *run, const char *trace_path, int quiet)
{
    guest_result r;
    uint32_t final_flags = 0;
    char err[512];
    if (guest_trace_run(run, trace_path, &r, &final_flags))
        return WEFT_EXIT_FAIL;
    if (!quiet) {
        describe_end(&r, final_flags);
        /* The loader's own words went to the terminal above: weft replay
         * names --sysroot, and weft trace said only the status. */
        if (r.end == GUEST_EXITED && r.status == 127 && run->sysroot)
            fprintf(stderr,
                    "weft: status 127: if the loader could not find a shared library above, "
                    "give --sysroot a root with the program's libraries (now %s)\n",
                    run->sysroot);
        if (run->speculate && r.unspeculated == 1)
            fprintf(stderr,
                    "weft: exact mode gated every access: stdin, stdout or stderr is a terminal, "
                    "pipe or socket (files or /dev/null let it speculate)\n");
        else if (run->speculate && r.attempts > 1 && r.fully_gated)
            fprintf(stderr, "weft: exact mode: %d runs, the last gating every access\n",
                    r.attempts);
        else if (run->speculate && r.attempts > 1)
            fprintf(stderr,
                    "weft: exact mode: %d runs; %zu instructions were found to need a gate\n",
                    r.attempts, r.gates_learnt);
        if (r.unordered)
            fprintf(stderr,
                    "weft: exact mode: %" PRIu64 " gated accesses ran out of virtual-time order (a "
                    "stall escape, or a gate opened for qemu's exclusive section); this trace may "
                    "not repeat byte for byte\n",
                    r.unordered);
        if (weft_trace_print_summary(trace_path, r.wall_s, stderr, err, sizeof err))
            cli_error("%s", err);
    }
    return guest_exit_status(&r, final_flags);
}

/* An option the tracer takes as key=value: checked here, passed on. */
static int plugin_u64(const cli_command *cmd, void *opts, const char *opt, const char *key,
                      const char *arg, uint64_t lo, uint64_t hi)
{
    uint64_t x;
    if (cli_parse_u64(cmd, opt, arg, lo, hi, &x))
        return -1;
    char fmt[64];
    snprintf(fmt, sizeof fmt, "%s=%%s", key);
    return add_arg(opts, fmt, arg);
}

static int parse_mode(const cli_command *cmd, const char *arg, void *opts)
{
    if (strcmp(arg, "free") && strcmp(arg, "exact")) {
        cli_usage_error(cmd, "--mode: expected free or exact, got '%s'", arg);
        return -1;
    }
    ((trace_opts *)opts)->exact = !strcmp(arg, "exact");
    return add_arg(opts, "mode=%s", arg);
}

static int parse_cpi(const cli_command *cmd, const char *arg, void *opts)
{
    return plugin_u64(cmd, opts, "--cpi", "cpi", arg, 1, 1000000);
}

static int parse_ps(const cli_command *cmd, const char *arg, void *opts)
{
    return plugin_u64(cmd, opts, "--ps-per-cycle", "ps", arg, 1, 1000000000);
}

static int parse_quantum(const cli_command *cmd, const char *arg, void *opts)
{
    ((trace_opts *)opts)->quantum = strspn(arg, "0") != strlen(arg);
    return plugin_u64(cmd, opts, "--quantum", "quantum", arg, 0, UINT32_MAX);
}

static int parse_max_threads(const cli_command *cmd, const char *arg, void *opts)
{
    return plugin_u64(cmd, opts, "--max-threads", "maxpes", arg, 1, 65536);
}

static int parse_max_events(const cli_command *cmd, const char *arg, void *opts)
{
    return plugin_u64(cmd, opts, "--max-events", "maxev", arg, 1, UINT64_MAX);
}

static int parse_filter(const cli_command *cmd, const char *arg, void *opts)
{
    trace_opts *o = opts;
    o->shared = !strcmp(arg, "shared");
    if (!strcmp(arg, "all") || !strcmp(arg, "nonstack") || o->shared)
        return add_arg(o, "filter=%s", arg);
    if (!strncmp(arg, "range:", 6)) {
        unsigned long long lo, hi;
        if (sscanf(arg + 6, "%llx-%llx", &lo, &hi) != 2 || hi <= lo) {
            cli_usage_error(cmd, "--filter %s: expected range:LO-HI in hex with LO < HI", arg);
            return -1;
        }
        return add_arg(o, "range=%s", arg + 6);
    }
    if (!strncmp(arg, "var:", 4) && arg[4] && o->nvars < 16) {
        o->vars[o->nvars++] = arg + 4;
        return 0;
    }
    cli_usage_error(
        cmd, "--filter: expected nonstack, all, shared, range:LO-HI or var:NAME, got '%s'", arg);
    return -1;
}

static int parse_max_size(const cli_command *cmd, const char *arg, void *opts)
{
    uint64_t x;
    if (cli_parse_size(arg, &x) < 0) {
        cli_usage_error(cmd,
                        "--max-trace-size: expected a size like 500M or 4G (0: no limit), got "
                        "'%s'",
                        arg);
        return -1;
    }
    char num[32];
    snprintf(num, sizeof num, "%" PRIu64, x);
    return add_arg(opts, "maxsize=%s", num);
}

static int parse_record(const cli_command *cmd, const char *arg, void *opts)
{
    if (strcmp(arg, "all") && strcmp(arg, "sync") && strcmp(arg, "sync+writes")) {
        cli_usage_error(cmd, "--record: expected all, sync or sync+writes, got '%s'", arg);
        return -1;
    }
    return add_arg(opts, "record=%s", arg);
}

#define O(field) offsetof(trace_opts, field)

static const cli_option trace_options[] = {
    {"output", 'o', "TRACE", "trace file to write (default: weft.wtr)", CLI_STRING, O(out), 0, 0,
     NULL, NULL},
    {"mode", 'm', "MODE",
     "free: threads run in parallel, synchronization in virtual-time\n"
     "order (default); exact: every shared access in virtual-time order",
     CLI_CUSTOM, 0, 0, 0, parse_mode, NULL},
    {"cpi", 0, "N", "cycles per instruction (default 1)", CLI_CUSTOM, 0, 0, 0, parse_cpi, NULL},
    {"ps-per-cycle", 0, "N", "picoseconds per cycle (default 1000: 1 cycle = 1 ns)", CLI_CUSTOM, 0,
     0, 0, parse_ps, NULL},
    {"quantum", 0, "N", "exact mode: cycles a PE may run between gates (default 0)", CLI_CUSTOM, 0,
     0, 0, parse_quantum, NULL},
    {"no-speculate", 0, NULL,
     "exact mode: gate every shared access in one run instead of gating\n"
     "what a checked run shows needs it (the trace is the same;\n"
     "speculation may run the program up to 8 times and shows its\n"
     "output once)",
     CLI_FLAG, O(no_speculate), 0, 0, NULL, NULL},
    {"gates", 0, "FILE",
     "exact mode: gate FILE's pcs from the first run (if it exists) and\n"
     "write there the pcs this trace gated, so that the next trace of the\n"
     "program needs one run (the trace is the same either way)",
     CLI_STRING, O(gates), 0, 0, NULL, NULL},
    {"filter", 'f', "F",
     "nonstack (default): drop each thread's own stack; all;\n"
     "shared: nonstack, and plain accesses to a page only once a second\n"
     "thread has touched it (much cheaper on programs whose threads work\n"
     "on their own buffers; see docs/trace-format.md); range:LO-HI (hex,\n"
     "repeatable); var:NAME (a global; a C++ one by its qualified\n"
     "name, acct::balance, or its mangled one)",
     CLI_CUSTOM, 0, 0, 0, parse_filter, NULL},
    {"sysroot", 0, "DIR", "AArch64 root filesystem for a dynamically linked PROGRAM", CLI_STRING,
     O(sysroot), 0, 0, NULL, NULL},
    {"timeout", 't', "S", "kill the guest after S seconds of wall time (default 600)", CLI_U64,
     O(timeout), 1, 86400 * 7, NULL, NULL},
    {"max-threads", 0, "N", "PE pool size (default 512)", CLI_CUSTOM, 0, 0, 0, parse_max_threads,
     NULL},
    {"max-events", 0, "N",
     "stop recording after about N events (the guest runs on; the trace\n"
     "is marked truncated; default: no limit)",
     CLI_CUSTOM, 0, 0, 0, parse_max_events, NULL},
    {"max-trace-size", 0, "S",
     "stop the run when its events take S bytes on disk (K, M, G\n"
     "suffixes; default 4G; 0: no limit); the run also stops when the\n"
     "disk is nearly full; the trace is kept, marked truncated",
     CLI_CUSTOM, 0, 0, 0, parse_max_size, NULL},
    {"record", 0, "WHAT",
     "all (default); sync: atomics, syscalls and threads only;\n"
     "sync+writes: and plain writes (enough for weft optimize, not for\n"
     "read-write races)",
     CLI_CUSTOM, 0, 0, 0, parse_record, NULL},
    {"quiet", 'q', NULL, "print only errors", CLI_FLAG, O(quiet), 0, 0, NULL, NULL},
};

static int run_trace(int argc, char **argv)
{
    trace_opts o = {.out = "weft.wtr", .timeout = 600};
    int first;
    cli_seen seen;
    int rc = cli_parse(&cli_cmd_trace, argc, argv, &o, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (first >= argc) {
        cli_usage_error(&cli_cmd_trace, "no program given (weft trace -o TRACE -- PROGRAM)");
        return WEFT_EXIT_USAGE;
    }
    guest_run run = {.binary = argv[first],
                     .argv = argv + first,
                     .argc = argc - first,
                     .sysroot = o.sysroot,
                     .timeout_s = (unsigned)o.timeout,
                     .speculate = o.exact && !o.quantum && !o.no_speculate,
                     .progress = !o.quiet,
                     .gates_file = o.gates};
    if (o.shared && o.exact) {
        /* Which thread touches a page first is the host's order wherever
         * speculation leaves accesses ungated: exact traces would not repeat. */
        cli_usage_error(&cli_cmd_trace, "--filter shared: free mode only (which thread touches "
                                        "a page first is the host's timing; exact traces repeat "
                                        "byte for byte)");
        return WEFT_EXIT_USAGE;
    }
    if (o.gates && !run.speculate) {
        cli_usage_error(&cli_cmd_trace, "--gates: only for exact mode's speculation (--mode "
                                        "exact, without --quantum or --no-speculate)");
        return WEFT_EXIT_USAGE;
    }
    if (weft_output_in_place(o.out)) {
        cli_error("%s: " WEFT_TRACE_NOT_A_FILE, o.out);
        return WEFT_EXIT_FAIL;
    }
    if (guest_check_binary(run.binary, &run.sysroot) || weft_check_output(o.out) ||
        (o.gates && weft_check_output(o.gates)))
        return WEFT_EXIT_FAIL;
    for (int i = 0; i < o.nvars; i++)
        if (add_var_filter(&o, run.binary, o.vars[i]))
            return WEFT_EXIT_FAIL;
    if (add_arg(&o, "out=%s", o.out))
        return WEFT_EXIT_USAGE;
    run.plugin_args = o.plugin_args;
    return trace_run_and_report(&run, o.out, o.quiet);
}

const cli_command cli_cmd_trace = {
    .name = "trace",
    .summary = "run a program on the ideal platform and record its trace",
    .usage = "[options] [-o TRACE] -- PROGRAM [ARGS...]",
    .about = "Runs PROGRAM (AArch64 Linux) on the ideal platform: one PE per thread,\n"
             "1 instruction = cpi cycles, zero-time memory and syscalls, and records every\n"
             "thread's memory events with virtual timestamps. A run that lasts says so\n"
             "on stderr after 10 s, then at doubling gaps up to a minute: how long, and\n"
             "how much of the trace it has written (-q: not).\n",
    .footer = "Exit status: the guest's exit code, 128+N if it died of signal N, 124 if it\n"
              "timed out or was stopped at a trace limit, 125 on deadlock, 128+N if weft itself "
              "got signal N (130 SIGINT, 143\n"
              "SIGTERM); 1 or 2 for weft's own errors.\n",
    .opts = trace_options,
    .nopts = sizeof trace_options / sizeof *trace_options,
    .stop_at_operand = 1,
    .run = run_trace,
};
