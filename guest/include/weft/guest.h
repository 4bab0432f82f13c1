/* weft guest: running a program under qemu-aarch64, plain or with weft's
 * tracer plugin, for trace, inject and replay alike.
 *
 *   guest.c       input checks, the guest's environment, starting qemu in its
 *                 own process group, time limits, SIGINT/SIGTERM, capture
 *   trace_run.c   a traced run that leaves a readable trace whatever happens
 *                 to the guest (salvage, outcome flags)
 *   speculate.c   exact mode by speculation: gate only what a checked run
 *                 shows needs it, run again if the check blames anything
 *
 * Errors are one line on stderr, "weft: ...", as weft_error (weft/trace.h)
 * prints them: the callers are commands that add nothing to them. */
#ifndef WEFT_GUEST_H
#define WEFT_GUEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "weft/trace.h"

/* Where weft's own files are, relative to the folder of the weft binary:
 * in the build tree build/cli/weft has build/tracer and build/fixtures
 * beside it; installed, PREFIX/bin/weft has them in PREFIX/lib/weft (the
 * CMake install rules use the same WEFT_PKGLIBDIR). Nothing is looked up
 * by a path compiled in, so an installed copy never loads a plugin from a
 * build tree it happens to find, and a moved prefix keeps working. */
#ifndef WEFT_PKGLIBDIR
#define WEFT_PKGLIBDIR "lib/weft"
#endif

/* The folder of the running executable (symlinks resolved), or NULL. */
const char *guest_self_dir(void);
/* A file at `relative` to the folder of the running executable, or NULL. */
const char *guest_installed_path(const char *relative);

typedef struct guest_run {
    const char *binary;
    char **argv; /* guest argv, argv[0] == binary */
    int argc;
    const char *sysroot;     /* qemu -L, or NULL */
    const char *plugin_args; /* comma-separated key=value for the tracer, or NULL for plain qemu */
    unsigned timeout_s;
    /* guest_trace_run: an exact-mode run (no quantum, policy or injection)
     * that may be speculated (see speculate.c). */
    int speculate;
    /* Files for the guest's stdout and stderr instead of weft's, or NULL. */
    const char *capture_out, *capture_err;
    /* Lines on stderr: one per speculative run that must be redone, and
     * while a run that writes watch_trace lasts (after 10 s, then at
     * doubling gaps up to a minute) how long and how much it wrote. */
    int progress;
    const char *watch_trace; /* set by guest_trace_run: the trace being written */
    /* Speculation: gate the pcs of this points file from the first run (if
     * it exists), and write there the ones that ended up gated, for the
     * next trace of the program. NULL: none. */
    const char *gates_file;
    /* A run stopped at its trace's size limit leaves its spool as it is
     * (flags WEFT_TRACE_STOPPED, no trace): for weft_spool_read. */
    int leave_stopped_spool;
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
    int finish;          /* guest_trace_run: SIGINT/SIGTERM that came after the guest ended, or 0 */
} guest_result;

/* Check that the binary exists and is an AArch64 ELF executable that qemu
 * can run (static, or dynamic with a sysroot holding its loader). A dynamic
 * one without *sysroot gets the first root that holds its loader of
 * $QEMU_LD_PREFIX and /usr/aarch64-linux-gnu (Debian's cross-compilation
 * root, which aarch64-linux-gnu-gcc links against), said on stderr. Prints
 * one line and returns -1 if not. */
int guest_check_binary(const char *binary, const char **sysroot);
/* The environment the guest gets (PATH, HOME, LC_*, OMP_*, WEFT_GUEST_ENV's
 * names...: guest.c), "NAME=value" sorted by name, NULL-terminated; the
 * strings are environ's. Free the array alone. NULL: out of memory. */
char **guest_environment(void);
/* Run qemu-aarch64 on the guest in its own process group, killing the group
 * with SIGKILL at the time limit or when weft gets SIGINT/SIGTERM. */
int guest_run_qemu(const guest_run *run, guest_result *res);
/* For a caller's SIGINT/SIGTERM handler (async-signal-safe): weft is
 * stopping, so a run that starts after this, or is under way, ends at once
 * as interrupted. A signal between the caller's check and the run's own
 * handler would otherwise let the run go on to its time limit. */
void guest_note_interrupt(int sig);
/* An fd the qemu process gets at number `to` (weft's `from`). */
typedef struct guest_fd {
    int from, to;
} guest_fd;
/* Start qemu on the guest in its own process group (killed with weft, by
 * PR_SET_PDEATHSIG) without waiting for it: a fork server (replay/server.c).
 * It keeps 0, 1, 2 (or the run's capture files) and `fds`, no other fd of
 * weft's. 0 with *pid, or -1 after one line. */
int guest_spawn_qemu(const guest_run *run, const guest_fd *fds, size_t nfds, pid_t *pid);
/* Did the dynamic loader fail to load the program (exit status 127 and its
 * complaint in the run's stderr file errf)? Then no run of it says anything
 * of the program: 1, and unless quiet the complaint in one line, with the
 * sysroot to fix; else 0. */
int guest_loader_failed(const guest_run *run, const guest_result *r, const char *errf, int quiet);
/* Did the run start more threads than the tracer has processing elements
 * (its "more than N threads" line in errf)? Then its verdict would be a
 * deadlock of weft's making: 1, and unless quiet one line saying what to
 * give; else 0. */
int guest_too_many_threads(const guest_run *run, const char *errf, int quiet);
/* weft's stdin, when it is a regular file, as a descriptor of its own at
 * the offset weft started with (every qemu not given another fd 0 gets
 * one: each run reads the same input); -1 otherwise. */
int guest_stdin_copy(void);
/* One past the highest fd qemu's helpers take (the soft RLIMIT_NOFILE, at
 * most 1024): weft's own fds for qemu sit just below it, so that the
 * guest's files get the numbers they get in a plain qemu. guest_spawn_qemu
 * puts the tracer's copy of stderr at top - 3; a fork server's pipes take
 * top - 2 and top - 1. */
int guest_fd_top(void);
/* Path of the tracer plugin: WEFT_PLUGIN, else ../tracer or ../WEFT_PKGLIBDIR
 * next to the weft binary; NULL (and one line printed) if none exists. */
const char *guest_plugin_path(void);
const char *guest_qemu_path(void);

/* Run the guest under the tracer writing `trace_path`, make sure a readable
 * trace exists afterwards whatever happened to the guest (salvaging the
 * spool if needed, recording signals and timeouts in it; but see
 * leave_stopped_spool): fills r and the final trace flags. Exact-mode runs with run->speculate are
 * speculated. Returns 0, or -1 after printing one line (no readable trace). */
int guest_trace_run(const guest_run *run, const char *trace_path, guest_result *r,
                    uint32_t *final_flags);
/* One run of qemu for guest_trace_run (no speculation). */
int guest_trace_run_once(const guest_run *run, const char *trace_path, guest_result *r,
                         uint32_t *final_flags);
/* The second half of guest_trace_run_once for a guest weft did not start
 * itself (a fork server's child, r->pid its pid): once it has ended as r
 * says, make sure a readable trace exists (salvage, outcome flags). */
int guest_trace_settle(const char *trace_path, guest_result *r, uint32_t *final_flags);
/* guest_trace_run's exact mode by speculation: run with few gates, let the
 * tracer check the order, run again gating what it blamed (speculate.c). */
int guest_trace_run_speculative(const guest_run *run, const char *trace_path, guest_result *r,
                                uint32_t *final_flags);

/* Exit statuses of a traced run as weft trace returns them. */
#define GUEST_EXIT_TIMED_OUT 124
#define GUEST_EXIT_DEADLOCK 125
#define GUEST_EXIT_INTERRUPTED 130 /* SIGINT; 128 + the signal in general */
/* weft trace's exit status for a run's outcome. */
int guest_exit_status(const guest_result *r, uint32_t trace_flags);

#endif
