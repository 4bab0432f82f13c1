/* One option convention for every weft subcommand: each command describes
 * its options in one static table, and the same table drives getopt, the
 * --help listing, `weft help CMD`, the error messages and the bash
 * completion, so a help text cannot forget an option and a letter means one
 * thing wherever it is used (docs/cli.md lists them). */
#ifndef WEFT_CLI_OPTIONS_H
#define WEFT_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cli_command;

typedef enum cli_opt_type {
    CLI_FLAG,   /* no argument: int at `off` = 1 */
    CLI_U64,    /* decimal in [lo, hi]: uint64_t at `off` */
    CLI_STRING, /* const char * at `off` = the argument */
    CLI_CUSTOM, /* parse(cmd, arg, opts) decides */
} cli_opt_type;

typedef struct cli_option {
    const char *name;    /* long name, without "--"; NULL for a letter-only alias */
    char letter;         /* short letter, or 0 */
    const char *metavar; /* shown in help: "N", "FILE"; NULL for flags */
    const char *help;    /* may hold '\n' for further lines */
    cli_opt_type type;
    size_t off; /* where the value goes in the command's options struct */
    uint64_t lo, hi;
    /* CLI_CUSTOM: 0, or -1 after one line (cli_usage_error). */
    int (*parse)(const struct cli_command *cmd, const char *arg, void *opts);
    /* An old spelling kept for one release: the spelling to use instead.
     * Works as before with a warning on stderr; not listed in --help. */
    const char *deprecated;
} cli_option;

#define CLI_MAX_OPTIONS 48

typedef struct cli_command {
    const char *name;    /* "replay" */
    const char *summary; /* one line for `weft --help` */
    const char *usage;   /* "[options] -- PROGRAM [ARGS...]" */
    const char *about;   /* paragraph(s) before the options */
    const char *footer;  /* after the options: notes and the exit statuses */
    const cli_option *opts;
    size_t nopts;
    /* Options stop at the first operand: the program and its own options
     * follow (weft trace, replay, demo). Otherwise options may come before
     * or after operands, and "--" ends them. */
    int stop_at_operand;
    int (*run)(int argc, char **argv);
} cli_command;

/* What cli_parse saw: bit i set when option i of the table was given. */
typedef uint64_t cli_seen;

/* Parse argv[1..] by the command's table into `opts` (the struct the
 * table's offsets point into). Returns 0 with *first the index of the first
 * operand, the operands in order from there to argc; 1 after printing the
 * help; -1 after printing one line. */
int cli_parse(const cli_command *cmd, int argc, char **argv, void *opts, int *first,
              cli_seen *seen);
/* 1 if the option called `name` was given. */
int cli_given(const cli_command *cmd, cli_seen seen, const char *name);

/* The whole help of a command. */
void cli_help(const cli_command *cmd, FILE *out);

/* A bad command line: "weft CMD: MESSAGE (see weft CMD --help)". */
void cli_usage_error(const cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A warning about the command line (an old spelling), for CLI_CUSTOM
 * parsers: "weft CMD: warning: MESSAGE", printed once cli_parse has
 * accepted the whole command line, dropped if it is bad. */
void cli_warning(const cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Decimal in [lo, hi]: 0, or -1 after cli_usage_error naming `opt`. */
int cli_parse_u64(const cli_command *cmd, const char *opt, const char *s, uint64_t lo, uint64_t hi,
                  uint64_t *out);
/* "4G", "500M", "64k", "1000": bytes, binary suffixes; 0, or -1 if malformed. */
int cli_parse_size(const char *s, uint64_t *out);

/* Every subcommand, in the order `weft --help` lists them. */
extern const cli_command *const cli_commands[];
extern const size_t cli_ncommands;
const cli_command *cli_find_command(const char *name);

#endif
