/* The ideal platform: one processing element (PE) per guest thread, a
 * zero-latency crossbar and memory, an OS emulator that gives syscalls zero
 * time and models blocking, and an arbiter that decides which PE may pass a
 * synchronization point. It owns virtual time.
 *
 * Implemented in C++17 on SystemC/TLM-2.0; this is its only interface.
 * Times are in cycles (instructions x cpi); the caller converts to ns.
 *
 * Threading: every function may be called from any host thread. The hot path
 * (weft_platform_block_start) is lock-free; everything else takes the platform
 * lock, and only the lock holder steps the SystemC kernel. */
#ifndef WEFT_PLATFORM_H
#define WEFT_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_platform weft_platform;

typedef struct weft_platform_config {
    uint32_t max_pes; /* PE pool size, elaborated up front (SystemC cannot add modules later) */
    uint64_t ps_per_cycle; /* picoseconds per cycle, for the SystemC clock */
    uint32_t stall_ms;     /* give up waiting at a gate after this long without progress */
} weft_platform_config;

void weft_platform_config_default(weft_platform_config *cfg);

/* Elaborates the SystemC model. One platform per process. NULL + err on failure. */
weft_platform *weft_platform_create(const weft_platform_config *cfg, char *err, size_t errlen);
void weft_platform_destroy(weft_platform *p);

/* ---- OS emulator: threads ---------------------------------------------- */

/* A thread was created by `parent` (-1 for the initial thread) at the
 * parent's time `cycles`; it gets the next free PE (FIFO) and starts at that
 * time. `clear_tid` is the CLONE_CHILD_CLEARTID word (0 if none): its futex
 * is woken when the thread exits, which is how join is modelled.
 * Returns the PE id (= thread index in creation order) or -1 if the pool is full. */
int weft_platform_thread_create(weft_platform *p, int parent, uint64_t tid, uint64_t cycles,
                                uint64_t clear_tid);
/* The thread's first instruction: when replaying, wait until the policy
 * lets it run. Returns the cycles at which it starts. */
uint64_t weft_platform_thread_begin(weft_platform *p, int pe);
/* sched_yield, nanosleep or a spin hint: the policy may demote the thread. */
void weft_platform_yield(weft_platform *p, int pe);
/* PE of a guest TID, or -1 if no such thread is known (yet). */
int weft_platform_thread_by_tid(weft_platform *p, uint64_t tid);
/* The thread called exit at `cycles`; wakes its clear_tid futex in the model. */
void weft_platform_thread_exit(weft_platform *p, int pe, uint64_t cycles);
uint32_t weft_platform_thread_count(weft_platform *p);
uint64_t weft_platform_thread_start(weft_platform *p, int pe);
uint64_t weft_platform_thread_tid(weft_platform *p, int pe);
/* The CLONE_CHILD_CLEARTID word the kernel clears at the thread's exit, or 0. */
uint64_t weft_platform_thread_clear_tid(weft_platform *p, int pe);
int weft_platform_thread_parent(weft_platform *p, int pe);

/* ---- OS emulator: futexes ---------------------------------------------- */

/* The thread entered FUTEX_WAIT on `uaddr` at `cycles`. It stays counted by
 * the arbiter until the host thread is confirmed asleep in the kernel (so
 * that wake order and EAGAIN outcomes follow virtual time, not host timing).
 * `timed`: the wait has a timeout, so it ends by itself: never a deadlock. */
void weft_platform_futex_wait_enter(weft_platform *p, int pe, uint64_t uaddr, uint64_t cycles,
                                    int host_tid, int timed);
/* The wait returned. Returns the cycles at which the thread resumes:
 * max(its own time, the waker's time) if the model woke it; else (its
 * timeout, or a wake the model did not see) the time a released syscall
 * returns at (weft_platform_syscall_return). */
uint64_t weft_platform_futex_wait_return(weft_platform *p, int pe, uint64_t cycles);
/* FUTEX_WAKE of up to n waiters on uaddr at `cycles`; returns how many the
 * model woke (FIFO, like the kernel's queue for equal priorities). */
int weft_platform_futex_wake(weft_platform *p, int pe, uint64_t uaddr, int n, uint64_t cycles);

/* After futex_wait_return: the PE whose FUTEX_WAKE ended the wait in the
 * model, with the waker's cycles at that wake, or -1 if the model did not
 * wake it. That waker had passed its syscall gate, so everything before
 * (cycles, waker) in the arbiter's order had executed before the wait ended. */
int weft_platform_woken_by(weft_platform *p, int pe, uint64_t *cycles);

/* ---- arbiter ------------------------------------------------------------- */

typedef enum weft_gate_result {
    WEFT_GATE_OK = 0,      /* the PE is first in virtual-time order: go */
    WEFT_GATE_ESCAPED = 1, /* gave up after stall_ms without progress (counted) */
    WEFT_GATE_EXITING = 2  /* the process is exiting: gating is off */
} weft_gate_result;

typedef enum weft_sync_kind {
    WEFT_SYNC_ACCESS = 0, /* plain shared access (exact mode): ordered, not modelled in TLM */
    WEFT_SYNC_ATOMIC = 1, /* atomic / exclusive / acquire-release access: a TLM transaction */
    WEFT_SYNC_SYSCALL = 2 /* system call: a TLM transaction to the OS emulator */
} weft_sync_kind;

/* OR'ed into a gate's kind when replaying: the gate orders and models the
 * event but is not a schedule point (no step, no decision). The token
 * holder passes it at once; another thread waits for the token there as at
 * any gate. */
#define WEFT_SYNC_NOT_A_POINT 0x100

/* Block until the PE's event at `cycles` is first among all PEs that can
 * still produce an event (ideal policy: smallest (time, PE id)) or, when
 * replaying, until the policy gives the PE the token; then
 * advance the SystemC kernel to that time and, for atomics and syscalls,
 * issue the event as a transaction through the crossbar. `resume` gets the
 * cycles at which the PE continues: `cycles`, or later if it was held back. */
weft_gate_result weft_platform_gate(weft_platform *p, int pe, uint64_t cycles, uint64_t addr,
                                    int kind, uint64_t *resume);

/* A syscall that may block indefinitely (read, wait4, ...): the PE stops
 * being counted until syscall_return. Counted in stats as a released
 * syscall. Outside a policy the others run on meanwhile, so syscall_return
 * resumes the PE no earlier than every gate passed: no point it passes next
 * is behind one already passed. A resume later than `cycles` is counted
 * (stats' rejoins): how far it moved is the host's timing. */
/* settle: under a replay policy the thread keeps the token until seen
 * asleep in the call (not for a futex the model does not know, a PI one,
 * whose sleep looks like a lock's). */
void weft_platform_syscall_release(weft_platform *p, int pe, uint64_t cycles, int settle);
uint64_t weft_platform_syscall_return(weft_platform *p, int pe, uint64_t cycles);
/* Replays: the holder, back from a system call, waits until every thread
 * in a released call is back from it or asleep in it (the call may have
 * woken one), so the policy's next decision does not depend on when a
 * woken thread's host thread gets back. */
void weft_platform_settle_released(weft_platform *p, int pe);

/* ---- replay ---------------------------------------------------------------- */

struct pct_policy;
/* How the threads a policy allows at once (PPCT's high set) run. */
typedef enum weft_set_mode {
    WEFT_SET_SINGLE = 0,   /* the policy allows one thread (pct, rpro, random) */
    WEFT_SET_IN_ORDER = 1, /* one at a time, in virtual-time order: reproducible */
    WEFT_SET_PARALLEL = 2, /* all at once on the host: faster, not reproducible */
} weft_set_mode;
/* Let a policy from pct/ decide who runs (before any thread exists).
 * Returns 0, or -1 if threads exist already. */
int weft_platform_set_policy(weft_platform *p, struct pct_policy *policy, weft_set_mode mode);
uint64_t weft_platform_handoffs(weft_platform *p);
/* Moves (replays) at the first write, or futex call, after a handoff or a
 * spin sighting: unchanged across turns, nobody wrote in between. */
uint64_t weft_platform_progress_epoch(weft_platform *p);
/* A block starts at `cycles`. If `may_wait`, a replayed PE that does not
 * hold the token waits for it here (it may have been let out of a gate so
 * qemu could run an exclusive section), marked busy meanwhile (see
 * weft_platform_busy). Then, lock-free, it publishes the time it continues
 * at (it has retired everything before it, so none of its future events can
 * be earlier), which it returns. One call: it runs for every block, and
 * nearly always the PE runs on. */
uint64_t weft_platform_block_start(weft_platform *p, int pe, uint64_t cycles, int may_wait);
/* The same, inline, for the blocks after which the PE runs on (nearly all):
 * a block costs a few cycles, and a PCT run of pigz spent 8% of its time
 * in this call. The platform fills it for a PE once (its
 * slot and the platform's fields do not move; the policy is set before any
 * thread exists), the PE's thread reads it; weft_block_runs_on then either
 * publishes `cycles` as weft_platform_block_start would and returns 1, or
 * returns 0: call weft_platform_block_start. The fields are the platform's
 * atomics, as C11 sees them. */
typedef struct weft_block_fast {
    void *bound;                   /* the PE's published time (uint64_t) */
    const void *holder, *token;    /* who runs (int): one PE, or one token per PE */
    const void *granted, *exiting; /* (uint32_t, int) */
    int pe, policy, host_parallel;
} weft_block_fast;
void weft_platform_block_fast(weft_platform *p, int pe, weft_block_fast *f);
/* The syscall the PE's last syscall gate let through has returned. */
void weft_platform_syscall_done(weft_platform *p, int pe);
/* Is the PE's host thread parked inside qemu outside guest code and outside
 * any syscall (an exclusive section waiting for the other vCPUs)? */
int weft_platform_stuck_in_qemu(weft_platform *p, int pe);
/* The PE's host thread enters (+1) or leaves (-1) weft's own code, where it
 * may sleep on weft's locks: not to be taken for a qemu exclusive section. */
void weft_platform_busy(weft_platform *p, int pe, int delta);
/* Replays: the PE was seen spinning (re-reading a few addresses with no
 * write and no other thread running in between) at pc: the policy demotes
 * it as if it had yielded (CHESS's fair scheduler, NeedlePoint). Returns 1
 * when every live thread that can run has been seen spinning since the last
 * progress (a livelock: nothing any thread does can end it). */
int weft_platform_spin(weft_platform *p, int pe, uint64_t pc);
/* Replays: the PE yielded (sched_yield, YIELD, WFE) at pc: demoted as for a
 * spin; every 100th yield since the last progress is a livelock sighting
 * (a bounded retry loop polls a few times and gives up). */
int weft_platform_yielded(weft_platform *p, int pe, uint64_t pc);
/* Replays: the PE called nanosleep at pc. The policy demotes it as for a
 * yield, except the first pause since the last progress, which leaves it
 * above the threads a change point delayed (pct_thread_slept). No sighting
 * for the livelock rule: time may end the wait. */
void weft_platform_sleep(weft_platform *p, int pe, uint64_t pc);
/* Replays: the futex wait just entered has a timeout that only the schedule
 * ends (the plugin moved the host's far away): while it sleeps the policy
 * counts it enabled, as a sleeper, and choosing it wakes `host_addr` (the
 * word in qemu's memory; FUTEX_PRIVATE_FLAG if private_futex) so that its
 * timeout fires. */
void weft_platform_timeout_by_schedule(weft_platform *p, int pe, uint64_t host_addr,
                                       int private_futex);
/* The futex wait just entered has a zero timeout (a fired timeout's
 * retry): it returns at once, and is never counted blocked, even if a look
 * finds its thread asleep in the kernel for the moment its expired timer
 * takes. */
void weft_platform_futex_wait_instant(weft_platform *p, int pe);
/* Is the PE asleep in a futex wait (the model's view, read without the
 * lock: for a decision being made, where only a timed waiter can be
 * chosen while asleep)? */
int weft_platform_thread_asleep(weft_platform *p, int pe);
/* Was the PE's last futex wait ended by the schedule firing its timeout?
 * Its next timed wait (glibc's retry) must then time out at once. Clears. */
int weft_platform_timeout_fired(weft_platform *p, int pe);
/* Replays: the PE wrote shared memory or otherwise changed what others may
 * be waiting for: spinning so far proves nothing. */
void weft_platform_progress(weft_platform *p, int pe);
/* Replays: the PE made a system call other than a yield or a sleep (a
 * futex, or one that deals with the world outside): a thread yielding alone
 * since may yet see something change. */
void weft_platform_outside(weft_platform *p, int pe);
/* Replays: the program installed a signal handler or a timer, so a thread
 * yielding alone may be waiting for a signal: no lone-yield livelock. */
void weft_platform_signals_expected(weft_platform *p);
/* The spinning threads and their pcs, one line each, for a livelock report. */
size_t weft_platform_describe_spinners(weft_platform *p, char *buf, size_t len);
/* What the PE did since its last schedule point (exec) and what its next
 * one will touch (pending; a prediction): objects are addresses, 0 when
 * unknown; accesses are pct_access values. Read at the PE's next gate by a
 * policy that orders by races (POS); others ignore it. */
void weft_platform_describe_step(weft_platform *p, int pe, uint64_t exec_obj, int exec_acc,
                                 uint64_t pend_obj, int pend_acc);
/* The PE is in a fork (on = 1) until it returns (on = 0): asleep then, it
 * may be in qemu's exclusive section although it is in a syscall. */
void weft_platform_forking(weft_platform *p, int pe, int on);
/* The PE's fault or fatal signal is noted (on = 1), or it survived it (a
 * handler of the guest's ran on: on = 0). Until then the process is taken
 * to be dying of it: qemu's exit waits in an exclusive section for every
 * vCPU in guest code, and a waiter let go (as for any exclusive section)
 * ran the rest of its block, its output and even its exit racing the
 * signal, so that a seed's verdict depended on the host. A waiter leaves
 * qemu's running set as for a fork (weft_platform_set_cpu_hooks) and stays
 * at its gate until the process is gone, weft's exit included.
 * Async-signal-safe; a serial policy's run only. */
void weft_platform_dying(weft_platform *p, int pe, int on);
/* How a thread waiting at a gate leaves qemu's set of vCPUs running guest
 * code and comes back (qemu's cpu_exec_end and cpu_exec_start on its own
 * vCPU), so that a holder's fork, which waits for that set in an exclusive
 * section, goes on while the waiters keep their places; without them a
 * waiter escapes its gate for the fork, running the rest of its block out
 * of the policy's order. Called on the waiting thread; leave returns 0 when
 * the thread is not in guest code (a syscall's gate), and then left nothing. */
void weft_platform_set_cpu_hooks(weft_platform *p, int (*leave)(void), void (*enter)(void));
/* Waiters that left qemu's running set for a holder's fork (a count since
 * the run began), for the plugin's statistics and tests. */
uint64_t weft_platform_fork_waits(const weft_platform *p);

/* ---- a fork server's children (tracer/plugin_server.c) ------------------- */

/* From now on keep a journal of every call made to the policy (at most
 * `cap`; beyond that the journal is marked overflowed): the calls of a
 * fork server's prefix, run once for all its children. */
void weft_platform_journal_policy(weft_platform *p, size_t cap);
int weft_platform_journal_overflowed(weft_platform *p);
/* Where a thread is, as the caller's decision log sees it (a pc and a count
 * of its events): noted with each journaled decision, so that a child's log
 * of the prefix's decisions says where they were made, not where the fork
 * was. Called under the platform's lock. */
typedef void (*weft_platform_where_fn)(int pe, uint64_t *pc, uint64_t *seq);
void weft_platform_journal_where(weft_platform *p, weft_platform_where_fn where);
/* Feed the journal to `fresh`, a new policy that saw no thread yet: it ends
 * in the state it would have reached had it been the policy from the start.
 * Before each decision, `at` (if not NULL) gets where its thread was when
 * the prefix made it. 0, or -1 + err if one of its decisions differs from
 * the journal's (the prefix would then depend on the policy, and a child
 * could not share it). */
int weft_platform_policy_catch_up(weft_platform *p, struct pct_policy *fresh,
                                  void (*at)(int pe, uint64_t pc, uint64_t seq), char *err,
                                  size_t errlen);
/* In a fork's child: `policy` (caught up) replaces the policy, with its set
 * mode, and the only thread, the main one, now runs as host thread `tid`.
 * Ends the journal. 0, or -1 if more than one thread exists, no policy was
 * set, or either side is host-parallel (a token per thread). */
int weft_platform_adopt_policy(weft_platform *p, struct pct_policy *policy, weft_set_mode mode,
                               uint64_t tid);

/* exit_group or fatal signal: stop gating forever so qemu's exclusive
 * sections can run. */
void weft_platform_exiting(weft_platform *p);
int weft_platform_is_exiting(weft_platform *p);

/* Watchdog step (called periodically from a host thread): confirms futex
 * sleepers, and reports a deadlock: returns 1 when every live thread is
 * blocked in a futex wait and none can be woken (two looks agree, nothing
 * happened between them, and every waiter's host thread sleeps in a futex),
 * 2 when every live thread is blocked at a first look (look again soon), 0
 * otherwise. */
int weft_platform_check_deadlock(weft_platform *p);
/* A count bumped whenever no thread is left running while some wait in a
 * futex; weft_platform_wait_idle sleeps until it differs from `seen`, or
 * timeout_ns: the watchdog's period, cut short when a deadlock may form. */
uint32_t weft_platform_idle_seq(weft_platform *p);
void weft_platform_wait_idle(weft_platform *p, uint32_t seen, long timeout_ns);
/* One line per blocked thread: "T<i> (tid N) waits on futex 0x... since <cycles>". */
size_t weft_platform_describe_blocked(weft_platform *p, char *buf, size_t len);
/* Futex word the thread is blocked on, or 0. */
uint64_t weft_platform_blocked_on(weft_platform *p, int pe);

typedef struct weft_platform_stats {
    uint64_t gates;        /* gate calls */
    uint64_t gate_waits;   /* gate calls that had to wait */
    uint64_t escapes;      /* stall escapes */
    uint64_t kernel_steps; /* sc_start calls */
    uint64_t transactions; /* TLM transactions through the crossbar */
    uint64_t released_syscalls;
    uint64_t exclusive_yields; /* waits left so qemu could run an exclusive section */
    uint64_t sc_time_ps;       /* SystemC time at the last step */
    /* Gates passed at a virtual time the platform had already passed: a
     * stall escape, or a gate opened for qemu's exclusive section. Its
     * events are not in virtual-time order with everyone else's, and the
     * trace may not repeat byte for byte. */
    uint64_t late_gates;
    /* Threads back from a wait the model did not end, resumed later than
     * they left because others ran on meanwhile (see syscall_return). */
    uint64_t rejoins;
} weft_platform_stats;
void weft_platform_get_stats(weft_platform *p, weft_platform_stats *out);

#ifdef __cplusplus
}
#else
#include <stdatomic.h>

/* weft_platform_block_start's test, in C (replay.cpp has it in C++): a
 * replayed PE waits at a block's start unless it holds the token and has
 * no grant to collect, or the run is ending. */
static inline int weft_block_runs_on(const weft_block_fast *f, uint64_t cycles, int may_wait)
{
    if (may_wait && f->policy && !atomic_load((const _Atomic int *)f->exiting)) {
        int token = f->host_parallel ? atomic_load((const _Atomic int *)f->token) != 0
                                     : atomic_load((const _Atomic int *)f->holder) == f->pe;
        if (!token || atomic_load((const _Atomic uint32_t *)f->granted))
            return 0;
    }
    atomic_store_explicit((_Atomic uint64_t *)f->bound, cycles, memory_order_release);
    return 1;
}
#endif
#endif
