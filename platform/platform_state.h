// The platform's shared state: PE slots, the OS emulator's thread and futex
// tables, and the two arbiters (ideal virtual-time order in platform.cpp,
// policy-driven replay in replay.cpp). Private to platform/.
#pragma once

#include "model.h"
#include "weft/platform.h"
#include "weft/pct.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace weft
{

enum PeState : int {
    FREE,
    RUNNING,
    FUTEX_ENTERING, // in FUTEX_WAIT, not yet seen asleep in the kernel: still counted
    BLOCKED,        // asleep in FUTEX_WAIT: not counted until the model wakes it
    RELEASED,       // in a syscall that may block indefinitely: not counted
    // Replay: entering such a syscall, not yet seen asleep in it (it may
    // return at once, data at hand): the holder keeps the token, as in
    // FUTEX_ENTERING, so host timing does not decide who runs meanwhile.
    RELEASE_ENTERING,
    EXITING, // called exit; counted until its host thread is gone
    EXITED
};

// Own cache lines: each thread stores its bound at every block, and a
// neighbour's stores to the same line would bounce it between cores.
struct alignas(64) Slot {
    std::atomic<uint64_t> bound{0};
    std::atomic<int> state{FREE};
    // Guarded by the platform lock.
    uint64_t tid = 0, start = 0, clear_tid = 0;
    int parent = -1;
    int host_tid = 0;
    uint64_t futex = 0, wait_at = 0, woken_at = 0, block_seq = 0;
    bool woken = false;
    bool timed_wait = false; // the futex wait has a timeout: it ends by itself
    // Replay: the schedule ends the timed wait (its host timeout is out of
    // reach): the policy counts the waiter enabled, and choosing it fires
    // the timeout by waking `timeout_host` in the kernel. `fired`: it was.
    bool sched_timeout = false, timeout_private = false, fired = false;
    // The wait's timeout is zero (a fired timeout's retry): the kernel
    // returns at once, so a look that finds the thread asleep in it (its
    // expired timer not yet run) must not count it blocked.
    bool instant_wait = false;
    uint64_t timeout_host = 0;
    int waker = -1; // PE whose wake ended the last wait in the model, or -1
    std::atomic<uint64_t> last_probe_ns{0};
    // Replay: the arbiter lets this PE run, resuming at `grant_at` cycles.
    std::atomic<uint32_t> granted{0};
    std::atomic<int> token{0}; // host-parallel replay: may run now (holder otherwise)
    uint64_t grant_at = 0;
    std::atomic<int> in_syscall{0}; // between a syscall gate and its return
    std::atomic<int> waiting{0};    // sleeping in one of our gates, not in qemu
    // Inside the plugin's callbacks (nested count): asleep there means on one
    // of weft's own locks, never in a qemu exclusive section.
    std::atomic<int> busy{0};
    std::atomic<int> forking{0}; // in a fork syscall: qemu copies itself exclusively
    // Released in a call the holder waits to see asleep or back
    // (weft_platform_settle_released); not a PI futex's.
    std::atomic<bool> release_settles{false};
    // Spinning (replays): seen spinning this many times since progress_epoch
    // spin_epoch, last at spin_pc. Guarded by the platform lock.
    uint64_t spin_epoch = ~0ull, spin_count = 0, spin_pc = 0;
    uint64_t yields = 0; // in spin_epoch (spin_sighting)
    // Yields in a row alone since world_epoch lone_epoch (lone_yield_locked).
    uint64_t lone_epoch = ~0ull, lone_yields = 0;
    // It spun, yielded or slept since it last made progress itself (its own
    // write outside a stack or futex call: own_progress, its thread's alone).
    bool paused = false;
    std::atomic<bool> own_progress{false};
    // Set by the PE's own thread before its gate, read there (POS).
    uint64_t exec_obj = 0, pend_obj = 0;
    int exec_acc = PCT_ACCESS_UNKNOWN, pend_acc = PCT_ACCESS_UNKNOWN;
};

// One call made to the policy, kept while a fork server runs the program's
// prefix (policy_journal.cpp): replayed into each child's fresh policy.
struct PolicyCall {
    uint8_t op;   // PolicyOp
    int32_t pe;   // the thread; for NEXT the first thread allowed
    int64_t arg;  // CREATED: parent; STEP, PENDING: access; NEXT: threads allowed
    uint64_t obj; // STEP, PENDING: the object; NEXT: the first thread's pc
    uint64_t seq; // NEXT: the first thread's events so far
};

enum PolicyOp : uint8_t {
    OP_CREATED,
    OP_ENABLED,
    OP_BLOCKED,
    OP_EXITED,
    OP_YIELDED,
    OP_SLEPT, // arg: again (pct_thread_slept)
    OP_YIELD_NAPPED,
    OP_STEP,
    OP_PENDING,
    OP_NEXT
};

uint64_t now_ns();
// Scheduler state letter of a host thread from /proc: 'S' asleep, 'R'
// running, 'Z' zombie, 0 if the thread is gone.
char host_thread_state(int tid);
// Is the host thread asleep in a condition-variable wait (a futex
// FUTEX_WAIT_BITSET, as glibc's pthread_cond_wait makes it)? qemu parks a
// vCPU in one for its exclusive sections (start_exclusive, and
// cpu_exec_start while another vCPU holds one); a lock it sleeps on (the
// mmap lock, the allocator's, with the owner preempted) is a plain
// FUTEX_WAIT and ends by itself. Where /proc/PID/task/TID/syscall cannot be
// read, any sleep counts (the state alone, as before).
bool host_thread_in_cond_wait(int tid);
// Is the host thread asleep in a futex (any operation; where /proc cannot
// say, asleep at all)?
bool host_thread_in_futex(int tid);
// Is the host thread asleep in a system call other than a futex (a read of
// an empty pipe; not a lock of qemu's or weft's)? Where /proc cannot say
// which call, asleep at all.
bool host_thread_asleep_outside_futex(int tid);
// Is the host thread asleep in a read of a descriptor only this process
// can end: an eventfd, or a pipe whose write end it holds too? (A socket,
// a poll, a wait for a child may be ended from outside.)
bool host_thread_waits_inside(int tid);

} // namespace weft

struct weft_platform {
    weft_platform_config cfg;
    std::mutex mu;
    std::unique_ptr<weft::Slot[]> slots;
    std::unique_ptr<pct_tid[]> allowed_buf; // a decision's allowed threads: max_pes of them
    std::atomic<uint32_t> count{0};
    std::atomic<int> exiting{0};
    std::atomic<int> dying_pe{-1}; // weft_platform_dying: the PE whose fault ends the run
    std::atomic<uint64_t> progress{0};
    std::unordered_map<uint64_t, int> by_tid;
    uint64_t block_seq = 0;
    std::unique_ptr<weft::Top> top;
    std::atomic<uint64_t> gates{0}, gate_waits{0}, escapes{0}, kernel_steps{0}, released{0};
    std::atomic<uint64_t> exclusive_yields{0};
    // A holder's fork: qemu copies itself in an exclusive section, which
    // waits for every vCPU in guest code. Waiters leave qemu's running set
    // instead of their block (weft_platform_set_cpu_hooks), parked_out of
    // them until the fork is done.
    int (*leave_cpu)(void) = nullptr;
    void (*enter_cpu)(void) = nullptr;
    std::atomic<int> parked_out{0}, fork_waits{0};
    std::atomic<uint64_t> late{0}; // gates passed behind the kernel's time (not replaying)
    uint64_t stepped = 0;          // the kernel's time in cycles (under mu)
    // Threads that rejoined the arbiter (rejoin_time_locked), and those of
    // them that came back later than they left. A gate reads rejoined
    // before it looks for blockers and again under the lock: one that
    // rejoined in between may be behind the gate's time.
    std::atomic<uint64_t> rejoined{0}, rejoins{0};
    uint64_t deadlock_seen = 0;
    // Bumped (and futex-woken) when no thread is left running but some wait
    // in a futex: a deadlock may have formed, and the watchdog looks now.
    std::atomic<uint32_t> idle_seq{0};
    std::atomic<uint64_t> progress_epoch{0};   // bumped by weft_platform_progress
    std::atomic<uint64_t> world_epoch{0};      // bumped by weft_platform_outside
    std::atomic<bool> guest_forked{false};     // the guest made a child process
    std::atomic<bool> signals_expected{false}; // weft_platform_signals_expected
    // Has anyone read progress_epoch since its last bump? If not, another
    // bump tells nobody anything: a write then costs a load, not a locked add.
    std::atomic<bool> progress_seen{true};

    // Replay (a policy from pct/ decides who runs; see replay.cpp).
    pct_policy *policy = nullptr;
    bool parallel_set = false;   // ppct: run the allowed set in virtual-time order
    bool host_parallel = false;  // ppct: run the allowed set at once, token per slot
    std::atomic<int> holder{-1}; // PE allowed to run; -1 while deciding
    // The latest time a token holder reached at a gate or a change of state:
    // a thread the policy held back resumes no earlier (reschedule_locked),
    // or its events would be stamped before what the holder did first, and
    // a trace's order (time, thread, seq) would not be the order things ran
    // in (weft races then saw a lock taken while its holder still had it).
    uint64_t last_step_cycles = 0;
    std::atomic<uint64_t> handoffs{0}; // read at every access by the spin watch: no lock
    // A fork server's prefix: every policy call, up to journal_cap of them.
    std::vector<weft::PolicyCall> journal;
    bool journaling = false, journal_overflow = false;
    size_t journal_cap = 0;
    weft_platform_where_fn journal_where = nullptr;

    // The policy's calls, all made under the lock (policy_journal.cpp):
    // journaled while a fork server runs the prefix.
    void journal_add(weft::PolicyOp op, int pe, int64_t arg, uint64_t obj);
    void pol_created(int pe, int parent);
    void pol_state(int pe, weft::PolicyOp op);
    void pol_yielded(int pe);
    void pol_slept(int pe, bool again);
    void pol_yield_napped(int pe);
    void pol_step(int pe, uint64_t obj, int acc);
    void pol_pending(int pe, uint64_t obj, int acc);
    size_t pol_next(pct_tid *out, size_t cap);

    void step_kernel_to(uint64_t cycles);
    void probe(int q);
    void note_maybe_idle_locked();
    // The holder keeps the token until the host thread has settled.
    static bool limbo(int st)
    {
        return st == weft::FUTEX_ENTERING || st == weft::RELEASE_ENTERING || st == weft::EXITING;
    }
    static bool counted(int st)
    {
        return st == weft::RUNNING || st == weft::FUTEX_ENTERING || st == weft::EXITING ||
               st == weft::RELEASE_ENTERING;
    }
    int blocker(int pe, uint64_t t);
    int futex_wake_locked(int waker, uint64_t uaddr, int n, uint64_t cycles);
    uint64_t rejoin_time_locked(uint64_t cycles);

    // replay.cpp
    bool replaying() const
    {
        return policy != nullptr;
    }
    void policy_state_changed_locked(int pe, int new_state);
    void fire_timeout_locked(int pe);
    void reschedule_locked();
    void reschedule_parallel_locked();
    bool has_token(int pe) const
    {
        return host_parallel ? slots[pe].token.load() != 0 : holder.load() == pe;
    }
    int stuck_token_holder(int pe);
    weft_gate_result wait_for_grant(int pe, uint64_t *resume);
    bool holder_stuck_in_qemu(int h);
    // Another PE's fault is ending the run: this one must not run on.
    bool dying_other(int pe) const
    {
        int d = dying_pe.load();
        return d >= 0 && d != pe;
    }
    // Has pe paused since it last made progress itself (spinning.cpp)? Also
    // starts a new sighting count when anyone made progress. Locked.
    bool pause_again_locked(int pe);
    uint64_t take_turn(int pe, uint64_t cycles);
    weft_gate_result policy_gate(int pe, uint64_t cycles, bool point, uint64_t *resume);
    void grant_locked(int pe, uint64_t at);
    void release_all_waiters();
};
