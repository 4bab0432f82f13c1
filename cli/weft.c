/* weft: run multithreaded AArch64 programs on an ideal platform, find where
 * their writes can collide, and replay them under PCT, PPCT and RPro. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.0.0"
#endif

static const struct subcommand {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} subcommands[] = {
    {"trace", cmd_trace, "run a program on the ideal platform and record its trace"},
    {"info", cmd_info, "summarize a trace: threads, events, shared variables"},
    {"export", cmd_export, "convert a trace to Chrome/Perfetto JSON, VCD or CSV"},
    {"races", cmd_races, "find data races: accesses no happens-before edge orders"},
    {"optimize", cmd_optimize, "search delays that align writes; write an injection plan"},
    {"inject", cmd_inject, "re-run a program with a plan's delays and check the collision"},
    {"replay", cmd_replay, "replay a program under PCT, PPCT or RPro and report verdicts"},
    {"merge", cmd_merge, "combine the runs of campaign shards into one campaign"},
    {"report", cmd_report, "write one self-contained HTML page from a demo or campaign"},
    {"demo", cmd_demo, "run the whole pipeline on a bundled program, with a report"},
};

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("weft: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    if (!s || !*s || s[0] == '-') {
        cli_error("%s: expected a number from %llu to %llu, got '%s'", opt, (unsigned long long)lo,
                  (unsigned long long)hi, s ? s : "");
        return -1;
    }
    unsigned long long x = strtoull(s, &end, 10);
    if (*end || x < lo || x > hi) {
        cli_error("%s: expected a number from %llu to %llu, got '%s'", opt, (unsigned long long)lo,
                  (unsigned long long)hi, s);
        return -1;
    }
    *out = x;
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: weft [--help] [--version] COMMAND [ARGS]\n\n"
                 "Runs unmodified multithreaded AArch64 programs on an ideal zero-latency\n"
                 "multi-core platform, finds delays that make their writes collide, and\n"
                 "replays them under priority schedulers to expose concurrency bugs.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++)
        fprintf(out, "  %-9s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\n'weft COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0}};
    int c;
    opterr = 0; /* one line of our own instead of getopt's */
    /* '+' stops at the subcommand, whose options are its own. */
    while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            usage(stdout);
            return WEFT_EXIT_OK;
        case 'V':
            printf("weft %s\n", WEFT_VERSION);
            return WEFT_EXIT_OK;
        default:
            cli_error("unknown option '%s' (see weft --help)", argv[optind - 1]);
            return WEFT_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return WEFT_EXIT_USAGE;
    }
    const char *name = argv[optind];
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++) {
        if (strcmp(name, subcommands[i].name) == 0) {
            int first = optind;
            optind = 0; /* glibc: re-initialize getopt for the subcommand's own argv */
            opterr = 1; /* subcommands let getopt name a bad option: one line */
            return subcommands[i].run(argc - first, argv + first);
        }
    }
    cli_error("unknown command '%s' (see weft --help)", name);
    return WEFT_EXIT_USAGE;
}
