/* The weft command: subcommands and what they share. */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "weft/guest.h"

int cmd_trace(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_optimize(int argc, char **argv);
int cmd_inject(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* One-line error on stderr, prefixed "weft: ". */
#define cli_error weft_error

/* Parse a decimal option value in [lo, hi]; prints the error itself. */
int cli_parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

#endif
