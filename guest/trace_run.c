/* A traced run from the user's side: start it, make sure it leaves a
 * readable trace whatever happens to the guest, and say how it ended. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "weft/guest.h"
#include "weft/trace.h"

int guest_exit_status(const guest_result *r, uint32_t flags)
{
    if (flags & WEFT_TRACE_DEADLOCK)
        return GUEST_EXIT_DEADLOCK;
    if (flags & WEFT_TRACE_STOPPED)
        return GUEST_EXIT_TIMED_OUT; /* a limit of weft's, like the time limit */
    switch (r->end) {
    case GUEST_EXITED:
        return r->status;
    case GUEST_SIGNALED:
        return 128 + r->status;
    case GUEST_TIMED_OUT:
        return GUEST_EXIT_TIMED_OUT;
    default: /* the shell's convention: 128 + the signal that stopped weft */
        return r->status > 0 && r->status < 64 ? 128 + r->status : GUEST_EXIT_INTERRUPTED;
    }
}

/* After the guest ended: a readable trace whatever happened to it. */
static int settle(const char *trace_path, int leave_stopped, guest_result *r, uint32_t *final_flags)
{
    char spool[4096], err[512];
    snprintf(spool, sizeof spool, "%s.spool", trace_path);
    /* qemu killed while its tracer was writing the trace leaves the tracer's
     * temporary file (named by qemu's pid) behind; the spool still has
     * everything, and the trace is rebuilt from it below. */
    char tmp[4096 + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", trace_path, r->pid);
    unlink(tmp);
    uint32_t flags = 0;
    int32_t status = r->end == GUEST_EXITED ? r->status : -r->status;
    if (r->end == GUEST_SIGNALED)
        flags |= WEFT_TRACE_CRASHED;
    if (r->end == GUEST_TIMED_OUT)
        flags |= WEFT_TRACE_TIMED_OUT;
    fflush(stdout);
    int stopped = leave_stopped ? weft_spool_stopped(trace_path) : 0;
    if (stopped) {
        *final_flags = flags | WEFT_TRACE_TRUNCATED | WEFT_TRACE_STOPPED;
        return 0;
    }
    if (access(spool, F_OK) == 0) {
        /* qemu died before the plugin could finish the trace. */
        if (weft_trace_salvage(trace_path, flags, status, err, sizeof err) != 0) {
            /* A guest that exited by itself let the tracer try to finish the
             * trace, and it has already said on stderr why it could not (a
             * full disk, typically, which the salvage then meets again): one
             * line per failure, not two. */
            if (r->end != GUEST_EXITED)
                weft_error("%s", err);
            return -1;
        }
    } else if (access(trace_path, F_OK) != 0) {
        weft_error("%s: the tracer wrote no trace (qemu %s %d)", trace_path,
                   r->end == GUEST_SIGNALED ? "died of signal" : "exited with", r->status);
        return -1;
    } else if (weft_trace_set_outcome(trace_path, flags, status, err, sizeof err) != 0) {
        weft_error("%s", err);
        return -1;
    }
    weft_trace *t = weft_trace_open_footer(trace_path, err, sizeof err);
    if (!t) {
        weft_error("%s", err);
        return -1;
    }
    *final_flags = weft_trace_get_summary(t)->flags;
    weft_trace_close(t);
    return 0;
}

static int run_and_finish(const guest_run *run, const char *trace_path, guest_result *r,
                          uint32_t *final_flags)
{
    char spool[4096];
    snprintf(spool, sizeof spool, "%s.spool", trace_path);
    unlink(spool); /* a stale spool from an earlier crash would be salvaged as ours */
    guest_run watched = *run;
    watched.watch_trace = trace_path;
    if (guest_run_qemu(&watched, r))
        return -1;
    return settle(trace_path, run->leave_stopped_spool, r, final_flags);
}

static volatile sig_atomic_t finish_signal;

static void on_finish_signal(int sig)
{
    finish_signal = sig;
    guest_note_interrupt(sig);
}

/* run_and_finish (run != NULL) or settle, with SIGINT/SIGTERM held. */
static int hold_signals(const guest_run *run, const char *trace_path, guest_result *r,
                        uint32_t *final_flags)
{
    /* SIGINT/SIGTERM after qemu has ended would otherwise kill weft in the
     * middle of the salvage and lose the trace: they are held until the trace
     * is whole, then reported as an interruption. (guest_run_qemu has its own
     * handler for the run itself and puts this one back.) */
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_finish_signal;
    sigemptyset(&sa.sa_mask);
    finish_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int rc = run ? run_and_finish(run, trace_path, r, final_flags)
                 : settle(trace_path, 0, r, final_flags);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    r->finish = 0;
    r->attempts = 1;
    r->gates_learnt = 0;
    r->unspeculated = 0;
    r->fully_gated = 0;
    r->unordered = 0;
    if (rc == 0 && r->end != GUEST_INTERRUPTED && finish_signal) {
        r->finish = (int)finish_signal;
        r->end = GUEST_INTERRUPTED;
        r->status = r->finish;
    }
    return rc;
}

int guest_trace_run_once(const guest_run *run, const char *trace_path, guest_result *r,
                         uint32_t *final_flags)
{
    return hold_signals(run, trace_path, r, final_flags);
}

int guest_trace_settle(const char *trace_path, guest_result *r, uint32_t *final_flags)
{
    return hold_signals(NULL, trace_path, r, final_flags);
}
