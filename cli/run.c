/* A traced run from the user's side: start it, make sure it leaves a
 * readable trace whatever happens to the guest, and say how it ended. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "weft/trace.h"

#define EXIT_TIMED_OUT 124
#define EXIT_DEADLOCK 125
#define EXIT_INTERRUPTED 130

int trace_exit_status(const guest_result *r, uint32_t flags)
{
    if (flags & WEFT_TRACE_DEADLOCK)
        return EXIT_DEADLOCK;
    switch (r->end) {
    case GUEST_EXITED:
        return r->status;
    case GUEST_SIGNALED:
        return 128 + r->status;
    case GUEST_TIMED_OUT:
        return EXIT_TIMED_OUT;
    default:
        return EXIT_INTERRUPTED;
    }
}

static void describe_end(const guest_result *r, uint32_t flags)
{
    if (flags & WEFT_TRACE_DEADLOCK)
        printf("weft: guest deadlocked: every live thread waits on a futex (see trace)\n");
    else if (r->end == GUEST_EXITED)
        printf("weft: guest exited with status %d\n", r->status);
    else if (r->end == GUEST_SIGNALED)
        printf("weft: guest killed by signal %d (%s)\n", r->status, strsignal(r->status));
    else if (r->end == GUEST_TIMED_OUT)
        printf("weft: guest timed out and was killed\n");
    else
        printf("weft: interrupted by signal %d; guest killed\n", r->status);
}

int trace_run_guest(const guest_run *run, const char *trace_path, guest_result *r,
                    uint32_t *final_flags)
{
    char spool[4096], err[512];
    snprintf(spool, sizeof spool, "%s.spool", trace_path);
    unlink(spool); /* a stale spool from an earlier crash would be salvaged as ours */
    if (guest_run_qemu(run, r))
        return -1;
    uint32_t flags = 0;
    int32_t status = r->end == GUEST_EXITED ? r->status : -r->status;
    if (r->end == GUEST_SIGNALED)
        flags |= WEFT_TRACE_CRASHED;
    if (r->end == GUEST_TIMED_OUT)
        flags |= WEFT_TRACE_TIMED_OUT;
    fflush(stdout);
    if (access(spool, F_OK) == 0) {
        /* qemu died before the plugin could finish the trace. */
        if (weft_trace_salvage(trace_path, flags, status, err, sizeof err) != 0) {
            cli_error("%s", err);
            return -1;
        }
    } else if (access(trace_path, F_OK) != 0) {
        cli_error("%s: the tracer wrote no trace (qemu %s %d)", trace_path,
                  r->end == GUEST_SIGNALED ? "died of signal" : "exited with", r->status);
        return -1;
    } else if (weft_trace_set_outcome(trace_path, flags, status, err, sizeof err) != 0) {
        cli_error("%s", err);
        return -1;
    }
    weft_trace *t = weft_trace_open(trace_path, err, sizeof err);
    if (!t) {
        cli_error("%s", err);
        return -1;
    }
    *final_flags = weft_trace_get_summary(t)->flags;
    weft_trace_close(t);
    return 0;
}

int trace_run_and_report(const guest_run *run, const char *trace_path, int quiet)
{
    guest_result r;
    uint32_t final_flags = 0;
    if (trace_run_guest(run, trace_path, &r, &final_flags))
        return WEFT_EXIT_FAIL;
    if (!quiet) {
        describe_end(&r, final_flags);
        trace_print_summary(trace_path, r.wall_s);
    }
    return trace_exit_status(&r, final_flags);
}
