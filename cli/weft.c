/* weft: run multithreaded AArch64 programs on an ideal platform, find where
 * their writes can collide, and replay them under priority schedulers. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.0.0"
#endif

/* `weft --help`'s order. The options fuzzer picks a command by its index
 * here (tests/unit/data/fuzz_options): a new command goes near the end. */
const cli_command *const cli_commands[] = {
    &cli_cmd_trace,  &cli_cmd_info,    &cli_cmd_export,     &cli_cmd_races, &cli_cmd_optimize,
    &cli_cmd_inject, &cli_cmd_replay,  &cli_cmd_explain,    &cli_cmd_merge, &cli_cmd_report,
    &cli_cmd_demo,   &cli_cmd_salvage, &cli_cmd_completion,
};
const size_t cli_ncommands = sizeof cli_commands / sizeof *cli_commands;

static void usage(FILE *out)
{
    fprintf(out, "usage: weft [--help] [--version] COMMAND [ARGS]\n\n"
                 "Runs unmodified multithreaded AArch64 programs on an ideal zero-latency\n"
                 "multi-core platform, finds delays that make their writes collide, and\n"
                 "replays them under priority schedulers to expose concurrency bugs.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < cli_ncommands; i++)
        fprintf(out, "  %-10s %s\n", cli_commands[i]->name, cli_commands[i]->summary);
    fprintf(out, "  %-10s %s\n", "help", "describe a command: weft help COMMAND");
    fprintf(out, "\n'weft help COMMAND' or 'weft COMMAND --help' describes a command.\n"
                 "Exit statuses: each command's help lists its own; 2 is always a bad\n"
                 "command line.\n");
}

/* weft help [COMMAND] */
static int help(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return WEFT_EXIT_OK;
    }
    const cli_command *cmd = cli_find_command(argv[1]);
    if (!cmd) {
        weft_error("help: unknown command '%s' (see weft --help)", argv[1]);
        return WEFT_EXIT_USAGE;
    }
    cli_help(cmd, stdout);
    return WEFT_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return WEFT_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
        usage(stdout);
        return WEFT_EXIT_OK;
    }
    if (!strcmp(name, "-V") || !strcmp(name, "--version")) {
        printf("weft %s\n", WEFT_VERSION);
        return WEFT_EXIT_OK;
    }
    if (!strcmp(name, "help"))
        return help(argc - 1, argv + 1);
    if (name[0] == '-') {
        weft_error("unknown option '%s' (see weft --help)", name);
        return WEFT_EXIT_USAGE;
    }
    const cli_command *cmd = cli_find_command(name);
    if (!cmd) {
        weft_error("unknown command '%s' (see weft --help)", name);
        return WEFT_EXIT_USAGE;
    }
    return cmd->run(argc - 1, argv + 1);
}
