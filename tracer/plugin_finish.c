/* The trace's writer, opened (at start-up, or in a fork server's child) and
 * finished: the summary and thread table, written once by whichever comes
 * first (exit_group under a policy, qemu's exit, the deadlock watchdog). */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "plugin_replay.h"
#include "quiet_thread.h"

/* One vCPU's part at the end: its buffered events go to the writer, and a
 * thread still running at exit_group ends where the process did. */
static void take_vcpu(vcpu_state *v)
{
    if (!v || v->pe < 0)
        return;
    if (v->nbuf) {
        g_plugin.threads[v->pe].events += v->nbuf;
        if (weft_trace_writer_append_buf(g_plugin.writer, v->lb) < 0)
            atomic_fetch_add(&g_plugin.write_errors, 1);
        v->nbuf = 0;
    }
    if (!g_plugin.threads[v->pe].exited) {
        /* What it ran after exit_group is past the program's end: its
         * instructions are counted up to that time only. */
        uint64_t end = vcpu_cycles_at(v, v->insns);
        uint64_t cut = atomic_load(&g_plugin.exit_cycles);
        uint64_t insns = v->insns;
        if (end > cut) {
            end = cut > v->offset ? cut : v->offset;
            insns = (end - v->offset) / g_plugin.cfg.settings.cpi;
        }
        g_plugin.threads[v->pe].insns = insns;
        g_plugin.threads[v->pe].end_cycles = end;
    }
}

/* The name of an AArch64 system call that may wait outside the guest. */
static const char *syscall_name(uint32_t num)
{
    static const struct {
        uint32_t num;
        const char *name;
    } names[] = {{22, "epoll_pwait"},      {63, "read"},           {65, "readv"},
                 {67, "pread64"},          {72, "pselect6"},       {73, "ppoll"},
                 {95, "waitid"},           {98, "futex"},          {101, "nanosleep"},
                 {115, "clock_nanosleep"}, {133, "rt_sigsuspend"}, {137, "rt_sigtimedwait"},
                 {202, "accept"},          {203, "connect"},       {207, "recvfrom"},
                 {212, "recvmsg"},         {242, "accept4"},       {260, "wait4"}};
    static _Thread_local char other[32];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].num == num)
            return names[i].name;
    snprintf(other, sizeof other, "system call %u", num);
    return other;
}

/* How the run ended, as the summary's flags and status say it. */
static void summary_outcome(weft_trace_summary *sum, uint32_t extra_flags,
                            const weft_platform_stats *st)
{
    sum->flags = WEFT_TRACE_COMPLETE | extra_flags;
    if (atomic_load(&g_plugin.capped))
        sum->flags |= WEFT_TRACE_TRUNCATED;
    sum->exit_status = atomic_load(&g_plugin.exit_code);
    if (!atomic_load(&g_plugin.exit_group_seen) && !(extra_flags & WEFT_TRACE_DEADLOCK))
        sum->flags |= WEFT_TRACE_CRASHED; /* qemu exits without exit_group only on a fatal signal */
    sum->stall_escapes = st->escapes;
    if (st->escapes) {
        /* The escaped thread ran on before one that was behind it. */
        sum->flags |= WEFT_TRACE_UNORDERED;
        fprintf(stderr,
                "weft: %" PRIu64 " gate%s gave up waiting after --stall ms for a thread held up "
                "outside weft: the trace is flagged unordered and may not repeat byte for byte\n",
                st->escapes, st->escapes == 1 ? "" : "s");
    }
    if (st->late_gates) {
        /* Said as well as flagged: whoever compares this run's trace with
         * another's learns why they may differ without reading flags. */
        sum->flags |= WEFT_TRACE_UNORDERED;
        /* Which of the two it was: "stall escapes 0" on the next line of
         * weft's summary read as a contradiction. */
        fprintf(stderr,
                "weft: %" PRIu64 " synchronization point%s passed behind virtual time (%s): the "
                "trace is flagged unordered and may not repeat byte for byte\n",
                st->late_gates, st->late_gates == 1 ? " was" : "s were",
                st->escapes ? "after a stall escape, or at a gate opened for qemu's exclusive "
                              "section"
                            : "at a gate opened for qemu's exclusive section, another thread "
                              "waiting in qemu for this one: no stall escape");
    }
    if (st->rejoins) {
        sum->flags |= WEFT_TRACE_UNORDERED;
        uint64_t last = atomic_load(&g_plugin.last_rejoin);
        char which[96] = "";
        if (last)
            snprintf(which, sizeof which, "; the last: T%u after %s", (unsigned)(last >> 32) - 1,
                     syscall_name((uint32_t)last));
        fprintf(stderr,
                "weft: %" PRIu64 " time%s a thread came back from a wait outside the guest (a "
                "system call that blocked, such as a read of a pipe, or a wait its timeout "
                "ended) after the others had run on, and resumed at their time, which the "
                "host's timing decides%s: the trace is flagged unordered and may not repeat "
                "byte for byte\n",
                st->rejoins, st->rejoins == 1 ? "" : "s", which);
    }
    unsigned long timeouts = atomic_load(&g_plugin.host_timeouts);
    if (timeouts) {
        sum->flags |= WEFT_TRACE_UNORDERED;
        fprintf(stderr,
                "weft: %lu wait%s with a timeout ended by it (futex, sigtimedwait, ppoll or "
                "pselect; the host's clock decides when): the trace is flagged unordered and may "
                "not repeat byte for byte\n",
                timeouts, timeouts == 1 ? "" : "s");
    }
    if (g_plugin.cfg.settings.filter == WEFT_FILTER_SHARED && plugin_shared_behind()) {
        sum->flags |= WEFT_TRACE_UNORDERED;
        fprintf(stderr, "weft: --filter shared: threads first touched a page in an order other "
                        "than virtual time's, so which accesses were left out is the host's "
                        "timing: the trace is flagged unordered and may not repeat byte for "
                        "byte\n");
    }
}

/* The thread table from the platform's view of the threads (who created
 * whom, when each started) and the plugin's (events, instructions, end). */
static void summary_threads(weft_trace_summary *sum)
{
    weft_trace_thread *tt = sum->threads;
    for (uint32_t i = 0; i < sum->nthreads; i++) {
        int parent = weft_platform_thread_parent(g_plugin.platform, (int)i);
        tt[i].id = i;
        tt[i].parent = parent < 0 ? UINT32_MAX : (uint32_t)parent;
        tt[i].tid = 0; /* host TIDs are not reproducible: see THREAD_START */
        tt[i].start_time = cycles_to_ns(weft_platform_thread_start(g_plugin.platform, (int)i));
        tt[i].end_time = cycles_to_ns(g_plugin.threads[i].end_cycles);
        tt[i].events = g_plugin.threads[i].events;
        tt[i].insns = g_plugin.threads[i].insns;
        tt[i].exited = (uint32_t)g_plugin.threads[i].exited;
        tt[i].exit_code = g_plugin.threads[i].exit_code;
        if (tt[i].end_time > sum->makespan)
            sum->makespan = tt[i].end_time;
    }
}

/* Finish the writer (the spool's merge into the trace), timed: with
 * WEFT_PLUGIN_STATS the user sees how long it held up qemu's exit. */
static void finish_writer(const weft_trace_summary *sum, const weft_platform_stats *st)
{
    char err[512];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* lazy=1 (a campaign that keeps no trace): weft reads the outcome from
     * the footer, and the events only to say who waits on what. */
    int events =
        !g_plugin.cfg.summary_only || (sum->flags & (WEFT_TRACE_DEADLOCK | WEFT_TRACE_LIVELOCK));
    if ((events ? weft_trace_writer_finish(g_plugin.writer, sum, err, sizeof err)
                : weft_trace_writer_finish_summary(g_plugin.writer, sum, err, sizeof err)) != 0)
        fprintf(stderr, "weft: %s\n", err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    g_plugin.writer = NULL;
    if (getenv("WEFT_PLUGIN_STATS"))
        fprintf(stderr,
                "weft-stats: gates=%" PRIu64 " waits=%" PRIu64 " escapes=%" PRIu64
                " kernel_steps=%" PRIu64 " transactions=%" PRIu64 " released=%" PRIu64
                " rejoins=%" PRIu64 " late=%" PRIu64 " exclusive_yields=%" PRIu64
                " inline_blocks=%" PRIu64 " translated=%" PRIu64
                " sleeps_skipped=%lu random_fills=%lu finish_s=%.3f\n",
                st->gates, st->gate_waits, st->escapes, st->kernel_steps, st->transactions,
                st->released_syscalls, st->rejoins, st->late_gates, st->exclusive_yields,
                g_plugin.inline_blocks, g_plugin.translated, atomic_load(&g_plugin.sleeps_skipped),
                atomic_load(&g_plugin.random_fills),
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
}

void plugin_finish(uint32_t extra_flags)
{
    /* A fork server has no trace of its own: its children have. */
    if (!plugin_tracing_here() || !g_plugin.writer || atomic_exchange(&g_plugin.finished, 1))
        return;
    /* The other threads stay where they wait (a replay's gates) until their
     * buffers are taken: released first, they ran on and a flush of theirs
     * could empty a buffer before it was read, losing its events. */
    for (unsigned i = 0; i < PLUGIN_MAX_VCPUS; i++)
        take_vcpu(g_plugin.vcpus[i]);
    /* qemu's own exit stops every vCPU in an exclusive section, which no
     * gate may hold up; a run the plugin ends itself (_exit right after)
     * keeps them waiting, so that none runs on while the trace is written. */
    if (!(extra_flags & PLUGIN_ENDS_RUN))
        weft_platform_exiting(g_plugin.platform);
    extra_flags &= ~PLUGIN_ENDS_RUN;
    /* The guest is done: its closed stderr may be weft's again. */
    if (g_plugin.stderr_copy >= 0 && fcntl(STDERR_FILENO, F_GETFD) < 0)
        dup2(g_plugin.stderr_copy, STDERR_FILENO);
    weft_platform_stats st;
    weft_platform_get_stats(g_plugin.platform, &st);
    uint32_t n = weft_platform_thread_count(g_plugin.platform);
    weft_trace_thread *tt = calloc(n ? n : 1, sizeof *tt);
    weft_trace_summary sum = {0};
    summary_outcome(&sum, extra_flags, &st);
    sum.nthreads = n;
    sum.threads = tt;
    if (tt)
        summary_threads(&sum);
    sched_write_record();
    inject_write_report(g_plugin.cfg.injected);
    spec_finish();
    if (!g_plugin.sched
             .policy) /* and what it dlopened since; a replay's run keeps the first look */
        plugin_note_objects();
    finish_writer(&sum, &st);
    free(tt);
}

int plugin_open_writer(char *err, size_t errlen)
{
    g_plugin.meta.settings = g_plugin.cfg.settings;
    if (plugin_lib_accesses_unseen(&g_plugin.cfg) && plugin_lib_rule())
        g_plugin.meta.settings.record |= WEFT_RECORD_FEW_LIB_READS | WEFT_RECORD_NO_LIB_WRITES;
    g_plugin.writer = weft_trace_writer_open(g_plugin.cfg.out, &g_plugin.meta, err, errlen);
    if (!g_plugin.writer)
        return -1;
    weft_trace_writer_set_limits(g_plugin.writer, g_plugin.cfg.max_bytes, g_plugin.cfg.min_free);
    weft_trace_writer_set_durable(g_plugin.writer, !g_plugin.cfg.not_durable);
    /* A replay's token holder would compress its thread's segments while
     * the other threads wait at their gates, one core's work where finish
     * compresses on two after the run: replays keep raw chunks, as do
     * learning runs (spool=raw). */
    if (g_plugin.cfg.raw_spool || g_plugin.sched.policy)
        weft_trace_writer_set_segments(g_plugin.writer, 0);
    /* lazy=1: the events are read only to tell a deadlock's waits, from
     * each thread's last ones (replay/run.c walks back 256 pcs at most). */
    if (g_plugin.cfg.summary_only)
        weft_trace_writer_keep_tail(g_plugin.writer, PLUGIN_TAIL_EVENTS);
    /* The run ends right after its trace (exit_group under a policy, a
     * deadlock, a livelock) while threads that have not begun may still
     * bind their buffers: see plugin_finish. */
    weft_trace_writer_set_lingering(g_plugin.writer);
    return 0;
}

void plugin_at_exit(qemu_plugin_id_t id, void *udata)
{
    (void)id;
    (void)udata;
    plugin_finish(0);
}

/* Watches for the one situation no guest thread can report: every live
 * thread asleep in a futex nobody will wake. A look costs a microsecond,
 * and a deadlocked run waits for two looks that agree (a wake may be in
 * flight at the first). It looks every 5 ms, and every 200 us for 5 ms
 * after the platform says no thread is left running (the last one entering
 * a futex wait), or after a first look found every thread blocked: a
 * deadlocked run of a campaign ends within a millisecond or so of its
 * deadlock, where the fixed period cost it 5 to 10 ms. */
#define WATCH_PERIOD_NS (5 * 1000000L)
#define WATCH_FAST_NS (200 * 1000L)
#define WATCH_FAST_LOOKS 25

static void *watchdog(void *arg)
{
    (void)arg;
    weft_platform *p = g_plugin.platform;
    uint32_t seen = weft_platform_idle_seq(p);
    int fast = 0;
    for (;;) {
        if (fast) {
            struct timespec nap = {0, WATCH_FAST_NS};
            nanosleep(&nap, NULL);
            fast--;
        } else {
            weft_platform_wait_idle(p, seen, WATCH_PERIOD_NS);
        }
        uint32_t now = weft_platform_idle_seq(p);
        if (now != seen) {
            seen = now;
            fast = WATCH_FAST_LOOKS;
        }
        if (!plugin_tracing_here() || atomic_load(&g_plugin.finished))
            return NULL;
        if (weft_platform_is_exiting(p))
            continue;
        int look = weft_platform_check_deadlock(p);
        if (look == 2 && fast < 2)
            fast = 2;
        if (look == 1) {
            char buf[4096];
            weft_platform_describe_blocked(g_plugin.platform, buf, sizeof buf);
            fprintf(stderr,
                    "weft: deadlock: every live thread waits on a futex or in a read only the "
                    "program could end\n%s",
                    buf);
            atomic_store(&g_plugin.exit_code, 0);
            plugin_finish(WEFT_TRACE_DEADLOCK);
            _exit(86);
        }
    }
}

void plugin_start_watchdog(void)
{
    pthread_t wd;
    if (quiet_thread_create(&wd, watchdog, NULL) == 0)
        pthread_detach(wd);
}
