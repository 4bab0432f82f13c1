/* The weft command: subcommands and what they share. */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H

#include <stddef.h>
#include <stdint.h>

/* Exit statuses of weft itself (the guest's own status is reported, not
 * returned, except by `weft trace`, see docs/errors.md). */
#define WEFT_EXIT_OK 0
#define WEFT_EXIT_FAIL 1  /* bad input or a failure while working */
#define WEFT_EXIT_USAGE 2 /* bad command line */

int cmd_trace(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_optimize(int argc, char **argv);
int cmd_inject(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_races(int argc, char **argv);

/* One-line error on stderr, prefixed "weft: ". */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A file at `relative` to the folder of the weft binary, or NULL. */
const char *cli_installed_path(const char *relative);

/* Parse a decimal option value in [lo, hi]; prints the error itself. */
int cli_parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* ---- running a guest (guest.c) ------------------------------------------ */

typedef struct guest_run {
    const char *binary;
    char **argv; /* guest argv, argv[0] == binary */
    int argc;
    const char *sysroot;     /* qemu -L, or NULL */
    const char *plugin_args; /* comma-separated key=value for the tracer, or NULL for plain qemu */
    unsigned timeout_s;
    /* trace_run_guest: an exact-mode run (no quantum, policy or injection)
     * that may be speculated (see run_spec.c). */
    int speculate;
    /* Files for the guest's stdout and stderr instead of weft's, or NULL. */
    const char *capture_out, *capture_err;
} guest_run;

typedef enum guest_end {
    GUEST_EXITED,
    GUEST_SIGNALED,
    GUEST_TIMED_OUT,
    GUEST_INTERRUPTED
} guest_end;

typedef struct guest_result {
    guest_end end;
    int status;          /* exit code, or signal number */
    double wall_s;       /* all attempts together */
    int attempts;        /* runs of the guest (exact-mode speculation) */
    size_t gates_learnt; /* pcs the speculation found needed gates */
    int unspeculated;    /* speculation ruled out: 1 by the streams, 2 by TMPDIR (said) */
    int fully_gated;     /* the speculation gave up: the last run gated every access */
    uint64_t unordered;  /* gated accesses the check found out of order (holes of both modes) */
    int pid;             /* qemu's process id (the tracer names its temporary files by it) */
    int finish;          /* trace_run_guest: SIGINT/SIGTERM that came after the guest ended, or 0 */
} guest_result;

/* Check that the binary exists and is an AArch64 ELF executable that qemu
 * can run (static, or dynamic with a sysroot holding its loader). Prints one
 * line and returns -1 if not. */
int guest_check_binary(const char *binary, const char *sysroot);
/* Run qemu-aarch64 on the guest in its own process group, killing the group
 * with SIGKILL at the time limit or when weft gets SIGINT/SIGTERM. */
int guest_run_qemu(const guest_run *run, guest_result *res);
/* Path of the tracer plugin (WEFT_PLUGIN, next to the weft binary, or the
 * build tree). */
const char *guest_plugin_path(void);
const char *guest_qemu_path(void);

/* Run the guest under the tracer writing `trace_path`, make sure a readable
 * trace exists afterwards whatever happened to the guest (salvaging the
 * spool if needed, recording signals and timeouts in it), print the guest's
 * status and a summary. Returns weft trace's exit status. */
int trace_run_and_report(const guest_run *run, const char *trace_path, int quiet);
/* The same run without printing: fills r and the final trace flags.
 * Returns 0, or -1 after printing one line (no readable trace). */
int trace_run_guest(const guest_run *run, const char *trace_path, guest_result *r,
                    uint32_t *final_flags);
/* One run of qemu for trace_run_guest (no speculation). */
int trace_run_once(const guest_run *run, const char *trace_path, guest_result *r,
                   uint32_t *final_flags);
/* trace_run_guest's exact mode by speculation: run with few gates, let the
 * tracer check the order, run again gating what it blamed (run_spec.c). */
int trace_run_speculative(const guest_run *run, const char *trace_path, guest_result *r,
                          uint32_t *final_flags);
/* One paragraph about a trace: threads, events, makespan, size. */
void trace_print_summary(const char *path, double wall_s);
/* weft trace's exit status for a run's outcome. */
int trace_exit_status(const guest_result *r, uint32_t trace_flags);

#endif
