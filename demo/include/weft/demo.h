/* weft demo: the whole pipeline on one program, each step the weft binary
 * run as a child command.
 *
 *   pipeline.c  the steps in order, the printed summary, the report
 *   steps.c     one step: spawn `weft ...`, log, progress, demo.json
 *
 * Each step runs the weft binary itself with the exact arguments it prints,
 * so every printed command reproduces its step. */
#ifndef WEFT_DEMO_H
#define WEFT_DEMO_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "weft/guest.h"

#define DEMO_MAX_ARGS 64

typedef struct demo_ctx {
    const char *dir; /* output folder, as given */
    char self[4096]; /* the weft binary */
    json_t *steps;   /* demo.json "steps" */
    json_t *doc;     /* demo.json */
    int nstep, tty;
    int interrupted; /* the signal that stopped the demo, or 0 */
} demo_ctx;

/* A step being built: its argv (argv[0] = "weft"). */
typedef struct demo_cmd {
    char *argv[DEMO_MAX_ARGS];
    char *own[DEMO_MAX_ARGS]; /* strings to free */
    int argc, nown;
} demo_cmd;

void demo_cmd_add(demo_cmd *c, const char *arg);
void demo_cmd_addf(demo_cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void demo_cmd_free(demo_cmd *c);
/* The command as one shell line ("weft trace ... -- PROG ARGS"). */
void demo_cmd_shell(const demo_cmd *c, char *buf, size_t len);
/* Append one word to buf, quoted for the shell if needed. */
size_t demo_shell_word(char *buf, size_t len, const char *w);

/* What to show while a step runs longer than a moment. */
typedef enum demo_progress { DEMO_PROGRESS_TIME, DEMO_PROGRESS_RUNS } demo_progress;

/* Run `weft ARGS` with stdout and stderr in DIR/logs/NN-name.log, showing
 * progress (for DEMO_PROGRESS_RUNS: lines of runs_path out of total), and
 * record the step in demo.json. Returns the child's exit status, 128+signal,
 * or -1 if it could not start. Sets ctx->interrupted to the signal on SIGINT/SIGTERM. */
int demo_step(demo_ctx *ctx, const char *name, const demo_cmd *cmd, demo_progress kind,
              const char *runs_path, uint64_t total, char *log_path, size_t log_len);

/* Print lines of a log indented, at most max of them (then a note). Lines
 * starting with any of the `skip` prefixes (NULL-terminated) are left out. */
void demo_print_log(const char *path, size_t max, const char *const *skip);
/* The last line of a log that starts with prefix (into buf), 0 if found. */
int demo_log_find(const char *path, const char *prefix, char *buf, size_t len);

/* Write demo.json atomically. */
int demo_save(demo_ctx *ctx);

/* ---- the pipeline (pipeline.c) ------------------------------------------ */

#define DEMO_DEFAULT_FIXTURE "lost_update"

typedef struct demo_opts {
    const char *dir, *sysroot;
    uint64_t seed, runs, depth, search_runs, budget, dmax, jobs, timeout;
    int runs_given;
    char campaign_why[3][256]; /* why a policy has no campaign */
    char **gargv;
    int gargc;
} demo_opts;

/* A bundled fixture's path: build/fixtures beside build/cli/weft, or
 * PREFIX/lib/weft/fixtures beside PREFIX/bin/weft (weft/guest.h); when
 * neither exists, the installed path, for the error to name. */
const char *demo_fixture_path(const char *name);
/* Run every step, print the summary and write the report. Returns weft's
 * exit status (128 + the signal if interrupted). */
int demo_run(demo_opts *o);

#endif
