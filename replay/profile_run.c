/* One profiling run (profile.c runs them in rounds): the guest under the
 * random policy or strict priorities with the campaign's points, what it
 * counted (from the plugin's record, the counts its policy kept, or its
 * trace), and the signal state profiling keeps from its start to its end. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "profile_internal.h"
#include "run_record.h"
#include "weft/replay.h"
#include "weft/trace.h"

/* In a child of a parallel round: its parent says it was interrupted. */
static int in_round_child;
static uint64_t round_child_seed;
/* The SIGINT or SIGTERM that interrupted profiling, or 0. */
int profile_interrupted;
/* Noted by profiling's own handler, in place from its start to its end:
 * between runs (reading a learning run's trace takes seconds) the default
 * action would kill weft without a word. A run's own handlers put it back. */
volatile sig_atomic_t profile_signal;

void profile_on_signal(int sig)
{
    profile_signal = sig;
    guest_note_interrupt(sig);
}

void profile_in_round_child(uint64_t seed)
{
    in_round_child = 1;
    round_child_seed = seed;
}

/* Was profiling interrupted? Says so once. */
int profile_stopped(void)
{
    if (!profile_signal && !profile_interrupted)
        return 0;
    if (!profile_interrupted) {
        profile_interrupted = profile_signal;
        weft_error("interrupted while profiling");
    }
    return 1;
}

/* Run the guest under the tracer with these plugin args, stdout and stderr
 * into files STEM.stdout and STEM.stderr (as in replays). */
/* The dynamic loader's complaint in the run's stderr (exit status 127): the
 * program never ran, and every seed would fail the same way, which is no
 * bug to report. 1 (said in one line), or 0. */
static int loader_failed(const replay_config *c, const guest_result *r, const char *errf)
{
    /* Every run of a round fails alike: the first says it. */
    return guest_loader_failed(&c->run, r, errf, in_round_child && round_child_seed != 0);
}

/* Did the run's stdout have the oracle's BUG line? */
static int printed_bug(const char *out)
{
    FILE *f = fopen(out, "r");
    char line[256];
    int bug = 0;
    while (f && !bug && fgets(line, sizeof line, f))
        bug = !strncmp(line, "BUG:", 4);
    if (f)
        fclose(f);
    return bug;
}

static int profile_run(const replay_config *c, const char *args, const char *trace,
                       const char *stem, int leave_spool, guest_result *r, uint32_t *flags,
                       int *bug)
{
    char out[PATH_MAX + 64], errf[PATH_MAX + 64];
    snprintf(out, sizeof out, "%s.stdout", stem);
    snprintf(errf, sizeof errf, "%s.stderr", stem);
    guest_run run = c->run;
    run.plugin_args = args;
    run.timeout_s = c->timeout;
    run.speculate = 0; /* a policy's run is gated at every point already */
    run.leave_stopped_spool = leave_spool;
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    FILE *fo = fopen(out, "w"), *fe = fopen(errf, "w");
    if (so < 0 || se < 0 || !fo || !fe) {
        weft_error("%s: %s", stem, strerror(errno));
        return -1;
    }
    dup2(fileno(fo), 1);
    dup2(fileno(fe), 2);
    fclose(fo);
    fclose(fe);
    int rc = guest_trace_run(&run, trace, r, flags);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    /* Interrupted first: a signal that came while qemu was starting found
     * no spool and no trace yet, which is no failure of the run. */
    if (rc != 0 || r->end == GUEST_INTERRUPTED) {
        if (rc != 0 && r->end != GUEST_INTERRUPTED)
            weft_error("profiling run failed (its stderr is in %s)", errf);
        else if (!in_round_child) {
            profile_interrupted = r->status;
            weft_error("interrupted while profiling");
        }
        return -1;
    }
    /* A run killed at the time limit still has its trace: what it did
     * until then is what the profile learns (the caller says so). */
    if (r->end == GUEST_TIMED_OUT && access(trace, R_OK) != 0) {
        weft_error("profiling run timed out after %u s and left no trace: give --steps and "
                   "--threads, or a longer --timeout",
                   c->timeout);
        return -1;
    }
    *bug = printed_bug(out);
    if (loader_failed(c, r, errf) ||
        guest_too_many_threads(&c->run, errf, in_round_child && round_child_seed != 0)) {
        /* said in full: nothing to look at */
        unlink(out);
        unlink(errf);
        return -1;
    }
    unlink(out);
    unlink(errf);
    return 0;
}

/* A run that left neither the plugin's record nor its policy's counts
 * (killed at the time limit): count its schedule points from the trace (syscalls, atomics, and the
 * plain accesses that are points), and its threads. */
static int estimate_steps(const replay_config *c, const char *trace, uint64_t *steps,
                          uint64_t *threads)
{
    char err[512];
    weft_trace *t = weft_trace_open(trace, err, sizeof err);
    if (!t) {
        weft_error("profiling run: %s", err);
        return -1;
    }
    uint64_t *pcs = NULL;
    size_t npcs = 0;
    /* An unreadable points file counts no plain-access point. */
    if (c->points != POINTS_ALL && c->points != POINTS_NONE && c->pcs_path[0])
        weft_pcs_load(c->pcs_path, &pcs, &npcs, err, sizeof err);
    weft_event ev;
    uint64_t n = 0;
    while (weft_trace_next(t, &ev) == 1) {
        if (ev.kind == WEFT_EV_SYSCALL || ev.kind == WEFT_EV_FUTEX_WAIT ||
            ev.kind == WEFT_EV_FUTEX_WAKE || ev.kind == WEFT_EV_RMW ||
            (weft_event_is_access(ev.kind) && (ev.flags & (WEFT_EVF_ATOMIC | WEFT_EVF_EXCLUSIVE))))
            n++;
        else if (weft_event_is_access(ev.kind) && !(ev.flags & WEFT_EVF_STACK) &&
                 (c->points == POINTS_ALL || weft_pcs_contain(pcs, npcs, ev.pc)))
            n++;
    }
    *steps = n;
    *threads = weft_trace_get_summary(t)->nthreads;
    weft_trace_close(t);
    free(pcs);
    return 0;
}

static const char *outcome(const guest_result *r, uint32_t flags, char *buf, size_t len)
{
    if (r->end == GUEST_TIMED_OUT)
        snprintf(buf, len, "was killed at --timeout, its trace so far used");
    else if (flags & WEFT_TRACE_LIVELOCK)
        snprintf(buf, len, "livelocked");
    else if (flags & WEFT_TRACE_DEADLOCK)
        snprintf(buf, len, "deadlocked");
    else if (r->end == GUEST_SIGNALED)
        snprintf(buf, len, "died of signal %d", r->status);
    else if (r->status != 0)
        snprintf(buf, len, "exited with status %d", r->status);
    else
        buf[0] = 0;
    return buf;
}

/* Does the campaign's policy draw change points from k? */
static int uses_k(const replay_config *c)
{
    return c->kind == PCT_KIND_PCT || c->kind == PCT_KIND_PPCT || c->kind == PCT_KIND_RPRO;
}

/* How round run s of runs goes: its second half under strict priorities
 * (each seed another order of the threads) when the campaign's policy
 * counts on k. A random schedule switches at nearly
 * every step, so lock holders are preempted and their waiters block, and
 * steps only count while another thread is enabled: a helper's C++
 * programs took 336 to 771 steps under pct where profiling's random runs
 * counted at most 113, and pct's change points never came near a bug at
 * step 40 of 51 with k 33. A run under priorities counts the steps pct's
 * own runs take. */
unsigned profile_run_how(const replay_config *c, unsigned how, uint64_t s, uint64_t runs)
{
    return runs > 1 && s >= runs / 2 && uses_k(c) ? how | ROUND_PRIORITY : how;
}

/* One profiling run under the random policy (or priorities: run_how) with seed `seed` and the
 * campaign's points (the points learnt so far; ROUND_FIRST: the visible
 * operations alone), its trace at `trace`, its other files at STEM.*: its
 * steps and threads (from the plugin's record, or from the counts its
 * policy kept when the guest died before the plugin could write one, or
 * else counted from its trace). */
void profile_counts(const replay_config *c, uint64_t seed, const char *stem, const char *trace,
                    unsigned how, run_counts *out)
{
    char record[PATH_MAX + 64], args[PATH_MAX * 4];
    memset(out, 0, sizeof *out);
    out->rc = -1;
    snprintf(record, sizeof record, "%s.json", stem);
    unlink(record);
    replay_record_remove_status(record);
    replay_config p = *c;
    p.kind = PCT_KIND_RANDOM;
    p.k = 0;
    if (how & ROUND_PRIORITY) { /* priorities alone: no change point */
        p.kind = PCT_KIND_PCT;
        p.depth = 1;
        p.k = 1;
    }
    p.n = 0;
    p.starvation = -1;
    p.host_parallel = 0;
    if (how & ROUND_FIRST) {
        p.points = POINTS_VISIBLE;
        p.pcs_path[0] = 0;
    }
    if (replay_plugin_args(&p, seed, args, sizeof args))
        return;
    size_t al = strlen(args);
    /* The first ten million events or so are enough to see the shared
     * addresses: a learning run stops after 32 MB of spool, of raw chunks
     * (spool=raw: about 3 bytes an event on a real program, docs/
     * trace-format.md, not the compressed segments of a trace), so that a real
     * program's learning costs a fraction of one of its schedules and a
     * guest that spins for the whole time limit does not write gigabytes
     * here. It records the libraries' accesses but, as a campaign's runs,
     * watches their loads for spinning only in wait loops (libaccess=loops:
     * a loop re-reading its thread-local word, libgomp's ordered wait with
     * OMP_WAIT_POLICY=active, was never seen spinning, and each learning
     * run went to --timeout, 30 s a round). A run that counts steps goes on to the end, recording
     * no more after ten million events, and like a campaign's runs it neither watches nor records
     * the libraries' stores and their loads outside wait loops (libaccess, replay_run_args): its
     * trace is read only if it dies before its record, for the steps, which those never are. */
    al += how & ROUND_LEARN ? (size_t)snprintf(args + al, sizeof args - al,
                                               ",maxsize=%llu,spool=raw,libaccess=loops",
                                               (unsigned long long)c->learn_bytes)
                            : (size_t)snprintf(args + al, sizeof args - al,
                                               ",maxev=%llu,libaccess=skip", 10000000ull);
    snprintf(args + al, sizeof args - al, ",out=%s,record=%s", trace, record);
    guest_result r = {0};
    uint32_t flags = 0;
    /* A learning run stopped at its limit is read from its spool (unless
     * its trace is kept, or weft races reads it): salvaging it into a
     * trace, then reading that, was most of a real program's learning. */
    int leave = (how & ROUND_LEARN) && !c->save_trace && !c->race_points;
    int bug = 0;
    if (profile_run(c, args, trace, stem, leave, &r, &flags, &bug)) {
        unlink(record);
        replay_record_remove_status(record);
        return;
    }
    /* Stopped at the limit: its counts are not a whole run's, and its
     * status (124) is weft's, not the program's. */
    out->capped = (how & ROUND_LEARN) && (flags & WEFT_TRACE_STOPPED);
    json_t *rec = r.end == GUEST_TIMED_OUT ? NULL : replay_record_load(record);
    unlink(record);
    replay_record_remove_status(record);
    out->estimated = !rec && !out->capped;
    if (rec) {
        out->steps = (uint64_t)json_integer_value(json_object_get(rec, "steps"));
        /* A random schedule preempts lock holders at most of its steps, and
         * their spinners spin: far more than under a priority policy, whose
         * change points beyond its runs' ends would be wasted. */
        out->yield_steps = (uint64_t)json_integer_value(json_object_get(rec, "yield_steps"));
        if (out->yield_steps > out->steps)
            out->yield_steps = out->steps;
        out->steps -= out->yield_steps;
        out->threads = (uint64_t)json_integer_value(json_object_get(rec, "threads"));
        out->departures = (uint64_t)json_integer_value(json_object_get(rec, "departures"));
        json_decref(rec);
    } else if (out->capped) {
        /* A part of a run counts nothing: another round will. */
    } else if (estimate_steps(c, trace, &out->steps, &out->threads)) {
        return;
    }
    if (!out->capped)
        outcome(&r, flags, out->note, sizeof out->note);
    out->died = r.end == GUEST_SIGNALED;
    /* A BUG line says why the status is what it is. */
    out->status =
        r.end == GUEST_EXITED && !bug && !(flags & (WEFT_TRACE_DEADLOCK | WEFT_TRACE_LIVELOCK))
            ? r.status
            : -1;
    out->rc = 0;
}
