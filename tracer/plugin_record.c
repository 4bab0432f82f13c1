/* What a replay's run leaves for `weft replay`, which reports, explains and
 * reproduces from it: the policy's switches as they happen (a ring for the
 * record, and a file a guest's death cannot lose), the policy's counts in a
 * status page as they change, and at the end the record of the policy's
 * run (steps, change points, switches). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "plugin_replay.h"

/* Each PE's vCPU as last found, [max_pes]: read and written under the
 * platform's lock, allocated before any thread runs. */
static const vcpu_state **pe_vcpu;

/* The thread's vCPU while it lives (indices are reused after an exit): the
 * one found last time if it is still bound to pe, else a scan. */
static const vcpu_state *vcpu_of_pe(int pe)
{
    const vcpu_state **cache = pe_vcpu;
    uint32_t max = g_plugin.cfg.max_pes;
    if (cache && (uint32_t)pe < max && cache[pe] && cache[pe]->pe == pe)
        return cache[pe];
    for (unsigned i = 0; i < PLUGIN_MAX_VCPUS; i++) {
        const vcpu_state *v = g_plugin.vcpus[i];
        if (v && v->pe == pe) {
            if (cache && (uint32_t)pe < max)
                cache[pe] = v;
            return v;
        }
    }
    return NULL;
}

/* A fork server's child catching up: where the prefix's decision being
 * replayed was made (pe -1: none). */
static struct {
    int pe;
    uint64_t pc, seq;
} where_then = {-1, 0, 0};

void record_where(int pe, uint64_t *pc, uint64_t *seq)
{
    if (pe >= 0 && pe == where_then.pe) {
        *pc = where_then.pc;
        *seq = where_then.seq;
        return;
    }
    const vcpu_state *v = pe >= 0 ? vcpu_of_pe(pe) : NULL;
    *pc = v ? v->point_pc : 0;
    *seq = pe >= 0 && (uint32_t)pe < g_plugin.cfg.max_pes ? g_plugin.threads[pe].events : 0;
    if (v)
        *seq += v->nbuf;
}

/* The switch log is appended through a shared mapping of its file, grown
 * a window at a time: a write per switch was a tenth of a random
 * schedule's cost, and a buffer in memory would die with a guest killed by
 * a signal, and with it the switches that led there. Blocks are allocated
 * before they are mapped, so a full disk stops the log (the record still
 * has its last switches) where a store would have raised SIGBUS. The file
 * keeps the window's zeros after its last line (a thread may still log a
 * switch while the plugin writes its record, so it is never cut here):
 * readers stop at them, and weft trims a log it keeps. */
#define SWITCHLOG_WINDOW ((size_t)1 << 18)
static struct {
    char *map;
    size_t len, used;
} slog;

static void switchlog_stop(void)
{
    sched_state *s = &g_plugin.sched;
    if (slog.map)
        munmap(slog.map, slog.len);
    if (s->switchlog_fd >= 0)
        close(s->switchlog_fd);
    memset(&slog, 0, sizeof slog);
    s->switchlog_fd = -1;
}

static void switchlog_put(const char *line, size_t n)
{
    int fd = g_plugin.sched.switchlog_fd;
    if (fd < 0)
        return;
    if (slog.used + n > slog.len) {
        size_t len = slog.len + SWITCHLOG_WINDOW;
        void *m = MAP_FAILED;
        if (posix_fallocate(fd, 0, (off_t)len) == 0)
            m = slog.map ? mremap(slog.map, slog.len, len, MREMAP_MAYMOVE)
                         : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            switchlog_stop();
            return;
        }
        slog.map = m;
        slog.len = len;
    }
    memcpy(slog.map + slog.used, line, n);
    slog.used += n;
}

/* The switch as one JSON line of the switch-log file, the record's keys.
 * Formatted by hand into a buffer on the stack: this runs under the
 * platform's lock, where nothing may allocate. */
static void append_switch(const sched_switch *w)
{
    if (g_plugin.sched.switchlog_fd < 0)
        return;
    char line[768];
    int n = snprintf(line, sizeof line,
                     "{\"step\":%" PRIu64 ",\"from\":%d,\"to\":%d,\"why\":\"%s\",\"preempt\":%s,"
                     "\"stay\":%s,\"change_point\":%u,\"from_pc\":%" PRIu64 ",\"to_pc\":%" PRIu64
                     ",\"from_seq\":%" PRIu64 ",\"to_seq\":%" PRIu64
                     ",\"enabled_count\":%u,\"enabled\":[",
                     w->step, w->from, w->to, pct_why_name((pct_why)w->why),
                     w->preempt ? "true" : "false", w->stay ? "true" : "false", w->change_point,
                     w->from_pc, w->to_pc, w->from_seq, w->to_seq, w->nenabled);
    for (uint32_t i = 0; i < w->nenabled && i < SCHED_LOG_ENABLED && n < (int)sizeof line - 16; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "%s%d", i ? "," : "", w->enabled[i]);
    n += snprintf(line + n, sizeof line - (size_t)n, "]%s%s}\n",
                  w->timeout ? ",\"timeout\":true" : "",
                  w->timed_wait ? ",\"timed_wait\":true" : "");
    if (n > 0 && n < (int)sizeof line)
        switchlog_put(line, (size_t)n);
}

/* The switch-log file's first line: what the record would say of the run
 * before it starts. */
static int open_switchlog(char *err, size_t errlen)
{
    sched_state *s = &g_plugin.sched;
    /* A fork server's child: the mapping and descriptor are the server's. */
    if (slog.map)
        munmap(slog.map, slog.len);
    memset(&slog, 0, sizeof slog);
    s->switchlog_fd = -1;
    if (!s->switchlog_path)
        return 0;
    s->switchlog_fd = open(s->switchlog_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (s->switchlog_fd < 0) {
        snprintf(err, errlen, "%s: %s", s->switchlog_path, strerror(errno));
        return -1;
    }
    uint64_t cps[16];
    size_t ncp = pct_policy_change_points(s->policy, cps, 16);
    char line[512];
    int n = snprintf(line, sizeof line,
                     "{\"policy\":\"%s\",\"seed\":%" PRIu64 ",\"n\":%u,\"k\":%" PRIu64
                     ",\"depth\":%u,\"change_points\":[",
                     pct_kind_name(s->cfg.kind), s->cfg.seed, s->cfg.n, s->cfg.k, s->cfg.d);
    for (size_t i = 0; i < ncp && i < 16; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "%s%" PRIu64, i ? "," : "", cps[i]);
    n += snprintf(line + n, sizeof line - (size_t)n, "]}\n");
    switchlog_put(line, (size_t)n);
    if (s->switchlog_fd < 0) {
        snprintf(err, errlen, "%s: cannot write (disk full?)", s->switchlog_path);
        return -1;
    }
    return 0;
}

/* The policy's counts in a file beside the record (RECORD.status), a shared
 * mapping the policy keeps up to date: a guest killed by a signal writes no
 * record (qemu re-raises it with the default action), and weft reads the
 * run's steps from here. Without the file, weft counts them from the trace
 * as before. */
static void status_path(char *out, size_t len)
{
    snprintf(out, len, "%s.status", g_plugin.sched.record_path);
}

/* The status file: the policy's counts, then the run's fault. */
#define STATUS_FILE_SIZE (sizeof(pct_status) + sizeof(weft_run_end))

static weft_run_end *run_end(void)
{
    sched_state *s = &g_plugin.sched;
    if (!s->status)
        return NULL;
    weft_run_end *e = (weft_run_end *)(void *)((char *)s->status + sizeof(pct_status));
    e->start_code = g_plugin.meta.start_code;
    return e;
}

/* Another thread's fatal fault or signal is noted already: the process is
 * dying of it. qemu's exit then lets the threads waiting at their gates run
 * on (its exclusive section waits for them), and one that faults too (the
 * same NULL it read) must not replace the fault the run dies of: which of
 * the two was noted last depended on the host (docs/replay.md: the same
 * seed, the same verdict). A fault qemu recovered from is forgotten
 * (plugin_record_fault_recovered), so what is noted here is fatal. */
static int fatal_signal(int sig)
{
    return sig == SIGABRT || sig == SIGSEGV || sig == SIGBUS;
}

/* The thread whose fault or fatal signal is noted, -1: its next schedule
 * point or system call shows it survived (plugin_record_ran_on); the
 * platform's dying flag follows this one (weft_platform_dying). */
static _Atomic int noted_thread = -1;

static int other_thread_noted(const weft_run_end *e, uint32_t thread)
{
    if (__atomic_load_n(&e->fault_magic, __ATOMIC_ACQUIRE) == WEFT_RUN_END_MAGIC)
        return e->fault.thread != thread;
    /* a raise() may be handled; abort() and a fault in a library are not */
    if (__atomic_load_n(&e->raised_magic, __ATOMIC_ACQUIRE) == WEFT_RUN_END_MAGIC &&
        fatal_signal((int)e->raised_signal))
        return e->raised_thread != thread;
    return 0;
}

/* The run's counts stop where the fatal fault or abort happened: what the
 * other threads do while qemu exits (they leave their gates for its
 * exclusive section; main may even start another thread) is no step of
 * the schedule, and counted it made a seed's `threads` and `steps` differ
 * from run to run. A fault qemu recovers from resumes the counting. */
static void freeze_counts(int freeze)
{
    sched_state *s = &g_plugin.sched;
    if (s->policy && s->status)
        pct_policy_mirror(s->policy, freeze ? NULL : (pct_status *)s->status);
}

void plugin_record_fault_recovered(uint32_t thread)
{
    weft_run_end *e = run_end();
    if (e && __atomic_load_n(&e->fault_magic, __ATOMIC_ACQUIRE) == WEFT_RUN_END_MAGIC &&
        e->fault.thread == thread) {
        __atomic_store_n(&e->fault_magic, 0, __ATOMIC_RELEASE);
        freeze_counts(0);
    }
    if (e && __atomic_load_n(&e->raised_magic, __ATOMIC_ACQUIRE) == WEFT_RUN_END_MAGIC &&
        e->raised_thread == thread && fatal_signal((int)e->raised_signal)) {
        __atomic_store_n(&e->raised_magic, 0, __ATOMIC_RELEASE);
        freeze_counts(0);
    }
    weft_platform_dying(g_plugin.platform, (int)thread, 0);
    int t = (int)thread;
    atomic_compare_exchange_strong(&noted_thread, &t, -1);
}

void plugin_record_ran_on(int pe)
{
    if (atomic_load_explicit(&noted_thread, memory_order_relaxed) == pe)
        plugin_record_fault_recovered((uint32_t)pe);
}

void plugin_record_fault(const weft_event *ev)
{
    weft_run_end *e = run_end();
    if (!e || other_thread_noted(e, ev->thread))
        return;
    /* The same thread's later fault replaces this one: the first was
     * handled (by qemu or by the guest) if the thread ran on. */
    e->raised_magic = 0;
    e->fault = *ev;
    __atomic_store_n(&e->fault_magic, WEFT_RUN_END_MAGIC, __ATOMIC_RELEASE);
    freeze_counts(1);
    atomic_store(&noted_thread, (int)ev->thread);
    weft_platform_dying(g_plugin.platform, (int)ev->thread, 1);
}

void plugin_record_raised(const vcpu_state *v, int sig)
{
    weft_run_end *e = run_end();
    if (!e || other_thread_noted(e, (uint32_t)v->pe))
        return;
    e->fault_magic = 0;
    e->raised_thread = (uint32_t)v->pe;
    e->raised_signal = (uint32_t)sig;
    for (uint32_t i = 0; i < WEFT_RUN_END_PCS; i++) /* newest first */
        e->raised_own_pcs[i] = v->own_pcs[(v->own_n - 1 - i) % WEFT_RUN_END_PCS];
    __atomic_store_n(&e->raised_magic, WEFT_RUN_END_MAGIC, __ATOMIC_RELEASE);
    if (fatal_signal(sig)) {
        freeze_counts(1);
        atomic_store(&noted_thread, v->pe);
        weft_platform_dying(g_plugin.platform, v->pe, 1);
    }
}

static void open_status(void)
{
    sched_state *s = &g_plugin.sched;
    if (s->status) /* a fork server's child: the server's mapping */
        munmap(s->status, STATUS_FILE_SIZE);
    s->status = NULL;
    if (!s->record_path || !s->policy)
        return;
    char path[4096];
    status_path(path, sizeof path);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return;
    if (ftruncate(fd, STATUS_FILE_SIZE) == 0) {
        void *m = mmap(NULL, STATUS_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED)
            s->status = m;
    }
    close(fd);
    if (s->status)
        pct_policy_mirror(s->policy, s->status);
    else
        unlink(path);
}

/* Called by the policy under the platform's lock, at every switch: the
 * other threads wait at their gates or in the kernel, so their places are
 * still. Keeps the last SCHED_LOG_MAX. */
static void log_decision(void *ctx, const pct_policy *p, const pct_decision *d)
{
    (void)ctx;
    sched_state *s = &g_plugin.sched;
    if (!s->log)
        return;
    sched_switch *w = &s->log[s->log_total++ % SCHED_LOG_MAX];
    s->log_preemptions += d->preempt && !d->stay;
    s->log_stays += d->stay;
    *w = (sched_switch){.step = d->step,
                        .from = (int32_t)d->from,
                        .to = (int32_t)d->to,
                        .change_point = d->change_point,
                        .why = (uint8_t)d->why,
                        .preempt = d->preempt,
                        .stay = d->stay,
                        .timeout =
                            (uint8_t)weft_platform_thread_asleep(g_plugin.platform, (int)d->to),
                        .timed_wait = d->why == PCT_WHY_YIELD &&
                                      weft_platform_thread_asleep(g_plugin.platform, (int)d->from)};
    record_where(w->from, &w->from_pc, &w->from_seq);
    record_where(w->to, &w->to_pc, &w->to_seq);
    size_t n = pct_policy_thread_count(p);
    for (size_t i = 0; i < n; i++) {
        pct_thread_info info;
        if (pct_policy_thread_at(p, i, &info) || info.state != PCT_THREAD_ENABLED)
            continue;
        if (w->nenabled < SCHED_LOG_ENABLED)
            w->enabled[w->nenabled] = (int32_t)info.tid;
        w->nenabled++;
    }
    append_switch(w);
}

void record_decided_at(int pe, uint64_t pc, uint64_t seq)
{
    where_then.pe = pe;
    where_then.pc = pc;
    where_then.seq = seq;
}

int record_open(char *err, size_t errlen)
{
    sched_state *s = &g_plugin.sched;
    open_status();
    if (s->record_path) {
        if (!s->log)
            s->log = calloc(SCHED_LOG_MAX, sizeof *s->log);
        if (!pe_vcpu)
            pe_vcpu = calloc(g_plugin.cfg.max_pes ? g_plugin.cfg.max_pes : 1, sizeof *pe_vcpu);
        pct_policy_on_decision(s->policy, log_decision, NULL);
    }
    return open_switchlog(err, errlen);
}

/* The switch log, oldest first, and what the script did. */
static void add_switches(json_t *rec)
{
    sched_state *s = &g_plugin.sched;
    uint64_t kept = s->log_total < SCHED_LOG_MAX ? s->log_total : SCHED_LOG_MAX;
    json_t *arr = json_array();
    for (uint64_t k = s->log_total - kept; arr && s->log && k < s->log_total; k++) {
        const sched_switch *w = &s->log[k % SCHED_LOG_MAX];
        json_t *en = json_array();
        for (uint32_t i = 0; en && i < w->nenabled && i < SCHED_LOG_ENABLED; i++)
            json_array_append_new(en, json_integer(w->enabled[i]));
        json_t *o =
            json_pack("{s:I, s:i, s:i, s:s, s:b, s:b, s:o, s:I, s:I, s:I, s:I, s:I}", "step",
                      (json_int_t)w->step, "from", w->from, "to", w->to, "why",
                      pct_why_name((pct_why)w->why), "preempt", w->preempt, "stay", w->stay,
                      "enabled", en ? en : json_array(), "enabled_count", (json_int_t)w->nenabled,
                      "from_pc", (json_int_t)w->from_pc, "to_pc", (json_int_t)w->to_pc, "from_seq",
                      (json_int_t)w->from_seq, "to_seq", (json_int_t)w->to_seq);
        if (o && w->why == PCT_WHY_CHANGE_POINT)
            json_object_set_new(o, "change_point", json_integer(w->change_point));
        if (o && w->timeout)
            json_object_set_new(o, "timeout", json_true());
        if (o && w->timed_wait)
            json_object_set_new(o, "timed_wait", json_true());
        if (o)
            json_array_append_new(arr, o);
    }
    json_object_set_new(rec, "switches", arr ? arr : json_array());
    json_object_set_new(rec, "switches_total",
                        json_integer((json_int_t)(s->log_total - s->log_stays)));
    json_object_set_new(rec, "stays", json_integer((json_int_t)s->log_stays));
    json_object_set_new(rec, "switches_dropped", json_integer((json_int_t)(s->log_total - kept)));
    json_object_set_new(rec, "preemptions", json_integer((json_int_t)s->log_preemptions));
    if (s->cfg.kind == PCT_KIND_SCRIPT) {
        uint64_t applied, missed;
        pct_policy_script_counts(s->policy, &applied, &missed);
        json_object_set_new(rec, "script_applied", json_integer((json_int_t)applied));
        json_object_set_new(rec, "script_missed", json_integer((json_int_t)missed));
    }
}

/* A thread whose tid word (its CLONE_CHILD_CLEARTID, which the kernel
 * clears at its exit and pthread_join waits on) is the futex; -1. */
static int joined_thread(uint64_t futex, uint64_t nthreads, uint64_t waiter)
{
    for (uint64_t q = 0; q < nthreads && q < PLUGIN_MAX_VCPUS; q++)
        if (q != waiter && weft_platform_thread_clear_tid(g_plugin.platform, (int)q) == futex)
            return (int)q;
    return -1;
}

/* Each thread asleep in a futex, and the thread whose tid the word's
 * mutex names as its owner (glibc's pthread_mutex_t keeps it 8 bytes in,
 * __owner; the reader uses it only for a wait in pthread_mutex_lock): who
 * holds the lock a deadlocked thread waits for, even one that exited; or
 * the thread a join waits for. */
static json_t *holders(uint64_t nthreads)
{
    json_t *a = json_array();
    for (uint64_t pe = 0; a && pe < nthreads && pe < PLUGIN_MAX_VCPUS; pe++) {
        uint64_t futex = weft_platform_blocked_on(g_plugin.platform, (int)pe);
        int joins = futex ? joined_thread(futex, nthreads, pe) : -1;
        if (joins >= 0) {
            json_array_append_new(a, json_pack("{s:I, s:I, s:i}", "thread", (json_int_t)pe, "futex",
                                               (json_int_t)futex, "joins", joins));
            continue;
        }
        int32_t owner = 0;
        if (!futex || plugin_guest_read(futex + 8, &owner, sizeof owner) != 0 || owner <= 0)
            continue;
        int by = weft_platform_thread_by_tid(g_plugin.platform, (uint64_t)owner);
        /* __kind, 16 bytes in: a robust mutex's flag (PTHREAD_MUTEX_ROBUST_NORMAL_NP) */
        int32_t kind = 0;
        int robust = plugin_guest_read(futex + 16, &kind, sizeof kind) == 0 && (kind & 16);
        if (by >= 0)
            json_array_append_new(a, json_pack("{s:I, s:I, s:i, s:b}", "thread", (json_int_t)pe,
                                               "futex", (json_int_t)futex, "owner", by, "robust",
                                               robust));
    }
    return a ? a : json_array();
}

void sched_write_record(void)
{
    sched_state *s = &g_plugin.sched;
    if (!s->policy || !s->record_path)
        return;
    uint64_t cps[PCT_MAX_DEPTH];
    size_t ncp = pct_policy_change_points(s->policy, cps, PCT_MAX_DEPTH);
    json_t *cp = json_array();
    for (size_t i = 0; i < ncp && i < PCT_MAX_DEPTH; i++)
        json_array_append_new(cp, json_integer((json_int_t)cps[i]));
    json_t *rec = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:o, s:I, s:I, s:I, s:I}", "policy",
        pct_kind_name(s->cfg.kind), "seed", (json_int_t)s->cfg.seed, "n", (json_int_t)s->cfg.n, "k",
        (json_int_t)s->cfg.k, "depth", (json_int_t)s->cfg.d, "radius", (json_int_t)s->cfg.r,
        "starvation", s->cfg.starvation, "steps", (json_int_t)pct_policy_steps(s->policy),
        "change_points", cp, "overrides", (json_int_t)pct_policy_overrides(s->policy), "handoffs",
        (json_int_t)weft_platform_handoffs(g_plugin.platform), "threads",
        (json_int_t)pct_policy_thread_count(s->policy), "low_set_ever",
        (json_int_t)pct_policy_low_set_ever(s->policy));
    /* Each thread's last synchronization call in the program's own code:
     * where a thread blocked in the C library was called from. */
    json_t *calls = json_array();
    for (unsigned i = 0; rec && calls && i < PLUGIN_MAX_VCPUS; i++) {
        vcpu_state *v = g_plugin.vcpus[i];
        if (v && v->pe >= 0 && v->last_call_pc)
            json_array_append_new(calls, json_pack("{s:i, s:I, s:s}", "thread", v->pe, "pc",
                                                   (json_int_t)v->last_call_pc, "call",
                                                   v->last_callee ? v->last_callee : "?"));
    }
    if (rec)
        json_object_set_new(rec, "calls", calls ? calls : json_array());
    if (rec)
        json_object_set_new(rec, "holders", holders(pct_policy_thread_count(s->policy)));
    if (rec)
        json_object_set_new(rec, "yield_steps",
                            json_integer((json_int_t)pct_policy_yield_steps(s->policy)));
    if (rec && g_plugin.meta.start_code) /* where the program's pcs are (weft_symbols_relocate) */
        json_object_set_new(rec, "start_code", json_integer((json_int_t)g_plugin.meta.start_code));
    if (rec && (s->cfg.kind == PCT_KIND_PB || s->cfg.kind == PCT_KIND_DB)) {
        static const char *const st[] = {"done", "pending", "duplicate"};
        json_object_set_new(rec, "schedule",
                            json_pack("{s:i, s:I, s:s}", "bound", (int)s->cfg.bound, "index",
                                      (json_int_t)s->cfg.schedule, "status",
                                      st[pct_policy_schedule_status(s->policy)]));
    }
    /* A gate that gave up waiting (a stall of the host, or a holder stuck
     * in qemu's exclusive section) let its thread run outside the policy's
     * order: such a run may not repeat by its seed. */
    weft_platform_stats st;
    weft_platform_get_stats(g_plugin.platform, &st);
    if (rec && st.escapes + st.exclusive_yields)
        json_object_set_new(rec, "departures",
                            json_integer((json_int_t)(st.escapes + st.exclusive_yields)));
    if (rec)
        add_switches(rec);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", s->record_path, (int)getpid());
    if (!rec || json_dump_file(rec, tmp, JSON_COMPACT) != 0 || rename(tmp, s->record_path) != 0) {
        fprintf(stderr, "weft: cannot write %s: %s\n", s->record_path, strerror(errno));
        unlink(tmp);
    } else if (s->status) { /* the record says it all */
        status_path(tmp, sizeof tmp);
        unlink(tmp);
    }
    json_decref(rec);
}
