/* weft trace: run a program on the ideal platform and record its trace. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "weft/trace.h"

static void trace_usage(FILE *out)
{
    fprintf(out,
            "usage: weft trace [options] -o TRACE -- PROGRAM [ARGS...]\n\n"
            "Runs PROGRAM (AArch64 Linux) on the ideal platform: one PE per thread,\n"
            "1 instruction = cpi cycles, zero-time memory and syscalls, and records every\n"
            "thread's memory events with virtual timestamps.\n\n"
            "  -o, --output TRACE     trace file to write (default: weft.wtr)\n"
            "  -m, --mode MODE        free: threads run in parallel, synchronization in\n"
            "                         virtual-time order (default); exact: every shared\n"
            "                         access in virtual-time order\n"
            "      --cpi N            cycles per instruction (default 1)\n"
            "      --ps-per-cycle N   picoseconds per cycle (default 1000: 1 cycle = 1 ns)\n"
            "      --quantum N        exact mode: cycles a PE may run between gates (default 0)\n"
            "      --no-speculate     exact mode: gate every shared access in one run instead\n"
            "                         of gating what a checked run shows needs it (the trace\n"
            "                         is the same; speculation may run the program up to 4\n"
            "                         times and shows its output once)\n"
            "  -f, --filter F         nonstack (default): drop each thread's own stack;\n"
            "                         all; range:LO-HI (hex, repeatable); var:NAME (a global)\n"
            "      --sysroot DIR      AArch64 root filesystem for a dynamically linked PROGRAM\n"
            "  -t, --timeout S        kill the guest after S seconds of wall time (default 600)\n"
            "      --max-threads N    PE pool size (default 512)\n"
            "      --max-events N     stop recording after about N events (the guest runs\n"
            "                         on; the trace is marked truncated; default: no limit)\n"
            "      --max-trace-size S stop the run when its events take S bytes on disk\n"
            "                         (K, M, G suffixes; default 4G; 0: no limit); the run\n"
            "                         also stops when the disk is nearly full; the trace is\n"
            "                         kept, marked truncated\n"
            "      --record WHAT      all (default); sync: atomics, syscalls and threads\n"
            "                         only; sync+writes: and plain writes (enough for\n"
            "                         weft optimize, not for read-write races)\n"
            "  -q, --quiet            print only errors\n"
            "  -h, --help             this help\n\n"
            "Exit status: the guest's exit code, 128+N if it died of signal N, 124 if it\n"
            "timed out or was stopped at a trace limit, 125 on deadlock, 130 if interrupted;\n"
            "1 or 2 for weft's own errors.\n");
}

typedef struct trace_opts {
    const char *out, *sysroot;
    char plugin_args[4096];
    size_t len;
    unsigned timeout;
    int quiet;
    int exact, quantum, no_speculate;
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

/* "4G", "500M", "64k", "1000": bytes, binary suffixes; -1 if malformed. */
static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-')
        return -1;
    unsigned shift = 0;
    if (*end && !end[1]) {
        const char *u = strchr("kKmMgGtT", *end);
        if (!u)
            return -1;
        shift = 10 * (unsigned)(1 + (u - "kKmMgGtT") / 2);
        end++;
    }
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* Refuse an output path the trace could never be renamed to before running
 * the guest (the tracer would fail only after the whole run). */
static int check_output(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        cli_error("%s: is a directory", path);
        return -1;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        slash[slash == dir] = 0; /* "/x.wtr" -> "/" */
    if (access(dir, W_OK) != 0) {
        cli_error("%s: cannot write there: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

void trace_print_summary(const char *path, double wall_s)
{
    char err[512];
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t) {
        cli_error("%s", err);
        return;
    }
    const weft_trace_summary *s = weft_trace_get_summary(t);
    uint64_t counts[WEFT_EV_KIND_COUNT] = {0};
    weft_event ev;
    int rc;
    while ((rc = weft_trace_next(t, &ev)) == 1)
        if (ev.kind < WEFT_EV_KIND_COUNT)
            counts[ev.kind]++;
    struct stat st;
    long long size = stat(path, &st) == 0 ? (long long)st.st_size : -1;
    printf("weft: traced %u thread%s, %" PRIu64 " events (%" PRIu64 " reads, %" PRIu64
           " writes, %" PRIu64 " atomics, %" PRIu64 " futex waits, %" PRIu64
           " syscalls); virtual makespan %" PRIu64 " ns; %.2f s wall; stall escapes %" PRIu64
           "%s%s; trace %s (%lld bytes)\n",
           s->nthreads, s->nthreads == 1 ? "" : "s", weft_trace_event_count(t),
           counts[WEFT_EV_READ], counts[WEFT_EV_WRITE], counts[WEFT_EV_RMW],
           counts[WEFT_EV_FUTEX_WAIT], counts[WEFT_EV_SYSCALL], s->makespan, wall_s,
           s->stall_escapes, (s->flags & WEFT_TRACE_TRUNCATED) ? "; TRUNCATED" : "",
           rc < 0 ? "; CORRUPT" : "", path, size);
    weft_trace_close(t);
}

int cmd_trace(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"mode", required_argument, 0, 'm'},
                                         {"cpi", required_argument, 0, 'c'},
                                         {"ps-per-cycle", required_argument, 0, 'p'},
                                         {"quantum", required_argument, 0, 'Q'},
                                         {"no-speculate", no_argument, 0, 'N'},
                                         {"filter", required_argument, 0, 'f'},
                                         {"sysroot", required_argument, 0, 'S'},
                                         {"timeout", required_argument, 0, 't'},
                                         {"max-threads", required_argument, 0, 'M'},
                                         {"max-events", required_argument, 0, 'E'},
                                         {"max-trace-size", required_argument, 0, 'Z'},
                                         {"record", required_argument, 0, 'R'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    trace_opts o = {.out = "weft.wtr", .timeout = 600};
    const char *vars[16];
    int nvars = 0;
    uint64_t x;
    int c;
    while ((c = getopt_long(argc, argv, "+o:m:f:t:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            o.out = optarg;
            break;
        case 'm':
            if (strcmp(optarg, "free") && strcmp(optarg, "exact")) {
                cli_error("--mode: expected free or exact, got '%s'", optarg);
                return WEFT_EXIT_USAGE;
            }
            if (add_arg(&o, "mode=%s", optarg))
                return WEFT_EXIT_USAGE;
            o.exact = !strcmp(optarg, "exact");
            break;
        case 'N':
            o.no_speculate = 1;
            break;
        case 'c':
            if (cli_parse_u64("--cpi", optarg, 1, 1000000, &x) || add_arg(&o, "cpi=%s", optarg))
                return WEFT_EXIT_USAGE;
            break;
        case 'p':
            if (cli_parse_u64("--ps-per-cycle", optarg, 1, 1000000000, &x) ||
                add_arg(&o, "ps=%s", optarg))
                return WEFT_EXIT_USAGE;
            break;
        case 'Q':
            if (cli_parse_u64("--quantum", optarg, 0, UINT32_MAX, &x) ||
                add_arg(&o, "quantum=%s", optarg))
                return WEFT_EXIT_USAGE;
            o.quantum = x > 0;
            break;
        case 'M':
            if (cli_parse_u64("--max-threads", optarg, 1, 65536, &x) ||
                add_arg(&o, "maxpes=%s", optarg))
                return WEFT_EXIT_USAGE;
            break;
        case 'E':
            if (cli_parse_u64("--max-events", optarg, 1, UINT64_MAX, &x) ||
                add_arg(&o, "maxev=%s", optarg))
                return WEFT_EXIT_USAGE;
            break;
        case 'Z':
            if (parse_size(optarg, &x) < 0) {
                cli_error("--max-trace-size: expected a size like 500M or 4G (0: no limit), got "
                          "'%s'",
                          optarg);
                return WEFT_EXIT_USAGE;
            }
            char num[32];
            snprintf(num, sizeof num, "%" PRIu64, x);
            if (add_arg(&o, "maxsize=%s", num))
                return WEFT_EXIT_USAGE;
            break;
        case 'R':
            if (strcmp(optarg, "all") && strcmp(optarg, "sync") && strcmp(optarg, "sync+writes")) {
                cli_error("--record: expected all, sync or sync+writes, got '%s'", optarg);
                return WEFT_EXIT_USAGE;
            }
            if (add_arg(&o, "record=%s", optarg))
                return WEFT_EXIT_USAGE;
            break;
        case 't':
            if (cli_parse_u64("--timeout", optarg, 1, 86400 * 7, &x))
                return WEFT_EXIT_USAGE;
            o.timeout = (unsigned)x;
            break;
        case 'f':
            if (!strcmp(optarg, "all") || !strcmp(optarg, "nonstack")) {
                if (add_arg(&o, "filter=%s", optarg))
                    return WEFT_EXIT_USAGE;
            } else if (!strncmp(optarg, "range:", 6)) {
                unsigned long long lo, hi;
                if (sscanf(optarg + 6, "%llx-%llx", &lo, &hi) != 2 || hi <= lo) {
                    cli_error("--filter %s: expected range:LO-HI in hex with LO < HI", optarg);
                    return WEFT_EXIT_USAGE;
                }
                if (add_arg(&o, "range=%s", optarg + 6))
                    return WEFT_EXIT_USAGE;
            } else if (!strncmp(optarg, "var:", 4) && optarg[4] && nvars < 16) {
                vars[nvars++] = optarg + 4;
            } else {
                cli_error("--filter: expected nonstack, all, range:LO-HI or var:NAME, got '%s'",
                          optarg);
                return WEFT_EXIT_USAGE;
            }
            break;
        case 'S':
            o.sysroot = optarg;
            break;
        case 'q':
            o.quiet = 1;
            break;
        case 'h':
            trace_usage(stdout);
            return WEFT_EXIT_OK;
        default:
            return WEFT_EXIT_USAGE; /* getopt printed the reason */
        }
    }
    if (optind >= argc) {
        cli_error("trace: no program given (weft trace -o TRACE -- PROGRAM [ARGS])");
        return WEFT_EXIT_USAGE;
    }
    guest_run run = {.binary = argv[optind],
                     .argv = argv + optind,
                     .argc = argc - optind,
                     .sysroot = o.sysroot,
                     .timeout_s = o.timeout,
                     .speculate = o.exact && !o.quantum && !o.no_speculate};
    if (guest_check_binary(run.binary, run.sysroot) || check_output(o.out))
        return WEFT_EXIT_FAIL;
    for (int i = 0; i < nvars; i++)
        if (add_var_filter(&o, run.binary, vars[i]))
            return WEFT_EXIT_FAIL;
    if (add_arg(&o, "out=%s", o.out))
        return WEFT_EXIT_USAGE;
    run.plugin_args = o.plugin_args;
    return trace_run_and_report(&run, o.out, o.quiet);
}
