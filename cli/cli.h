/* The weft command: subcommands and what they share. */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "weft/guest.h"

#include "options.h"

/* The subcommands, one file each (cmd_NAME.c). */
extern const cli_command cli_cmd_trace, cli_cmd_info, cli_cmd_export, cli_cmd_optimize,
    cli_cmd_inject, cli_cmd_replay, cli_cmd_merge, cli_cmd_report, cli_cmd_demo, cli_cmd_completion,
    cli_cmd_races, cli_cmd_explain, cli_cmd_salvage;

/* One-line error on stderr, prefixed "weft: ". */
#define cli_error weft_error

/* Open a trace and, when the traced binary is still where it was, its
 * symbols (*syms NULL otherwise). Prints the error and returns NULL if the
 * trace cannot be read. */
weft_trace *cli_open_trace(const char *path, weft_symbols **syms);
void cli_close_trace(weft_trace *t, weft_symbols *syms);

#endif
