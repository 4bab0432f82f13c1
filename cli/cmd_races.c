/* weft races: the data races of a trace's schedule (docs/races.md). */
#include <errno.h>
#include <stddef.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "weft/races.h"
#include "weft/trace.h"

/* Races found: like grep's "selected", distinct from bad input (1) and a
 * bad command line (2); the same value weft replay uses for "some run
 * failed". */
#define RACES_EXIT_FOUND 10

typedef struct races_opts {
    int json, plain_atomics;
    const char *out, *binary, *trace;
} races_opts;

#define O(field) offsetof(races_opts, field)

static const cli_option races_options[] = {
    {"json", 0, NULL, "JSON (format weft-races) instead of text", CLI_FLAG, O(json), 0, 0, NULL,
     NULL},
    {"output", 'o', "FILE", "write the report to FILE (atomically) instead of stdout", CLI_STRING,
     O(out), 0, 0, NULL, NULL},
    {"binary", 0, "PATH",
     "the traced program, for symbols and instructions (default: the\n"
     "trace's binary_path)",
     CLI_STRING, O(binary), 0, 0, NULL, NULL},
    {"plain-atomics", 0, NULL,
     "check plain accesses to bytes that atomic instructions touch as\n"
     "plain accesses (default: they are relaxed atomics, which neither\n"
     "race nor synchronize)",
     CLI_FLAG, O(plain_atomics), 0, 0, NULL, NULL},
    {NULL, 'j', NULL, "", CLI_FLAG, O(json), 0, 0, NULL, "--json"},
    {NULL, 'b', "PATH", "", CLI_STRING, O(binary), 0, 0, NULL, "--binary"},
};

static int same_build_id(const weft_trace_meta *m, const char *path)
{
    uint8_t id[64];
    int n = weft_elf_build_id(path, id, sizeof id);
    if (n <= 0 || m->build_id_len == 0)
        return 1; /* nothing to compare */
    return (uint32_t)n == m->build_id_len && memcmp(id, m->build_id, (size_t)n) == 0;
}

/* The program for symbols and instructions: --binary must be the traced
 * one (else 1); the trace's own path is used only if it still is. */
static const char *pick_binary(const races_opts *o, const weft_trace_meta *m, int *bad)
{
    struct stat st;
    *bad = 0;
    if (o->binary) {
        if (stat(o->binary, &st) != 0 || !S_ISREG(st.st_mode)) {
            cli_error("%s: cannot read the program: %s", o->binary,
                      S_ISDIR(st.st_mode) ? "is a directory" : "No such file or directory");
            *bad = 1;
        } else if (!same_build_id(m, o->binary)) {
            cli_error("%s: not the traced program (its build-id differs from the trace's)",
                      o->binary);
            *bad = 1;
        }
        return *bad ? NULL : o->binary;
    }
    if (!m->binary_path || !*m->binary_path || stat(m->binary_path, &st) != 0 ||
        !S_ISREG(st.st_mode) || !same_build_id(m, m->binary_path))
        return NULL;
    return m->binary_path;
}

/* What the trace cannot show, said once on stderr: a race with an access
 * that was never recorded is not found, and "0 races" must not read as
 * more than it is. */
static void note_what_is_missing(const weft_trace_meta *m)
{
    if (!(m->settings.record & WEFT_RECORD_READS))
        fprintf(stderr, "weft races: note: the trace has no plain reads (weft trace --record): "
                        "read-write races are not seen\n");
    if (m->settings.filter == WEFT_FILTER_SHARED)
        fprintf(stderr, "weft races: note: traced with --filter shared: accesses to a page "
                        "before a second thread touched it are not in the trace, nor their "
                        "races\n");
}

static int run_races(int argc, char **argv)
{
    races_opts o = {0};
    int first;
    cli_seen seen;
    int prc = cli_parse(&cli_cmd_races, argc, argv, &o, &first, &seen);
    if (prc)
        return prc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (first + 1 != argc) {
        cli_usage_error(&cli_cmd_races,
                        "expected exactly one trace file (weft races [options] TRACE)");
        return WEFT_EXIT_USAGE;
    }
    o.trace = argv[first];
    if (o.out && weft_check_output(o.out))
        return WEFT_EXIT_FAIL;
    char err[512];
    weft_trace *t = weft_trace_open(o.trace, err, sizeof err);
    if (!t) {
        cli_error("%s", err);
        return WEFT_EXIT_FAIL;
    }
    const weft_trace_meta *m = weft_trace_get_meta(t);
    int bad, rc = WEFT_EXIT_FAIL;
    const char *binary = pick_binary(&o, m, &bad);
    weft_symbols *syms = NULL;
    weft_races *d = NULL;
    if (bad)
        goto out;
    if (!binary && m->binary_path && *m->binary_path)
        fprintf(stderr,
                "weft races: note: %s, the traced program, %s here: without its code and "
                "symbols races are judged coarsely (every atomic as acquire and release, the "
                "C library's own code not told from the program's): pass --binary PATH\n",
                m->binary_path, access(m->binary_path, R_OK) ? "is not readable" : "was rebuilt");
    weft_races_config cfg = weft_races_config_default();
    cfg.atomic_locations = !o.plain_atomics;
    cfg.binary = binary;
    cfg.start_code = m->start_code;
    cfg.objects = m->objects;
    cfg.nobjects = m->nobjects;
    if (binary)
        syms = weft_symbols_open_run(binary, m, err, sizeof err);
    weft_races_config_library(&cfg, syms);
    if (!(d = weft_races_create(&cfg, err, sizeof err))) {
        cli_error("%s", err);
        goto out;
    }
    if (weft_races_analyze(d, t, err, sizeof err) != 0 ||
        weft_races_find_callers(d, t, syms, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto out;
    }
    note_what_is_missing(m);
    weft_races_source src = {.trace = o.trace,
                             .meta = m,
                             .summary = weft_trace_get_summary(t),
                             .decoded = binary != NULL};
    if (weft_races_write(d, &src, syms, o.json ? WEFT_RACES_JSON : WEFT_RACES_TEXT, o.out, err,
                         sizeof err) != 0) {
        cli_error("%s", err);
        goto out;
    }
    rc = weft_races_count(d) ? RACES_EXIT_FOUND : WEFT_EXIT_OK;
out:
    weft_races_free(d);
    if (syms)
        weft_symbols_close(syms);
    weft_trace_close(t);
    return rc;
}

const cli_command cli_cmd_races = {
    .name = "races",
    .summary = "find data races: accesses of different threads that nothing orders",
    .usage = "[options] TRACE",
    .about = "Finds the data races of the traced schedule: two accesses of different threads\n"
             "to overlapping bytes, at least one a write, not both atomic, that no\n"
             "happens-before edge orders (thread creation, exit and join, futex wake -> wait,\n"
             "acquire/release atomics, hence the C library's locks). Vector clocks with\n"
             "FastTrack's epochs. Each race is reported once per pair of pcs, with the\n"
             "variable, both accesses (thread, kind, pc, function, file:line), the first\n"
             "instance's virtual times and how many instances were found.\n",
    .footer = "Without the program's code every atomic access counts as acquire and release.\n"
              "Only the traced schedule is checked, and only what was traced (not the\n"
              "thread's own stack, nor code run before tracing began).\n\n"
              "Exit status: 0 when no race was found, 10 when races were found, 1 on bad\n"
              "input (missing or corrupt trace, unreadable binary), 2 on a bad command line.\n",
    .opts = races_options,
    .nopts = sizeof races_options / sizeof *races_options,
    .run = run_races,
};
