// The replay arbiter: a policy from pct/ (PCT, PPCT, RPro, random) decides
// which PE holds the token. Only the holder executes guest code; the others
// wait at their next schedule point. Blocking and exit are "limbo" states:
// the holder keeps the token until the host thread is seen asleep in the
// kernel (or gone), so that whatever happens next follows the policy's
// decisions and not host timing, and the same seed replays the same run.
#include "platform_state.h"

#include <algorithm>
#include <climits>
#include <ctime>
#include <sched.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

using namespace weft;

namespace
{

void futex_wake_word(std::atomic<uint32_t> *w)
{
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(w), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
            nullptr, 0);
}

void futex_wait_word(std::atomic<uint32_t> *w, uint32_t val, long ns)
{
    timespec ts = {0, ns};
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(w), FUTEX_WAIT_PRIVATE, val, &ts, nullptr, 0);
}

} // namespace

// A thread in a limbo state (FUTEX_ENTERING, RELEASE_ENTERING, EXITING) leaves it once its
// host thread is seen asleep in the kernel or gone: only then may the policy
// count it blocked or exited without guessing from time.
void weft_platform::probe(int q)
{
    Slot &s = slots[q];
    uint64_t t = now_ns();
    if (t - s.last_probe_ns.load(std::memory_order_relaxed) < 20000)
        return;
    s.last_probe_ns.store(t, std::memory_order_relaxed);
    int st = s.state.load();
    if (st == FUTEX_ENTERING) {
        // Asleep in weft's own code is on one of its locks, not in the futex.
        // A wait with a zero timeout is left to return (read under the lock:
        // the plugin says so before it leaves its callback).
        if (!s.busy.load() && host_thread_state(s.host_tid) == 'S' && !s.busy.load()) {
            std::lock_guard<std::mutex> g(mu);
            if (s.state.load() == FUTEX_ENTERING && !s.instant_wait)
                policy_state_changed_locked(q, BLOCKED);
        }
    } else if (st == RELEASE_ENTERING) {
        // Asleep in the call itself, not on a lock of qemu's or weft's.
        if (!s.busy.load() && host_thread_asleep_outside_futex(s.host_tid) && !s.busy.load()) {
            std::lock_guard<std::mutex> g(mu);
            if (s.state.load() == RELEASE_ENTERING)
                policy_state_changed_locked(q, RELEASED);
        }
    } else if (st == EXITING) {
        char hs = host_thread_state(int(s.tid));
        if (hs == 0 || hs == 'Z' || hs == 'X') {
            std::lock_guard<std::mutex> g(mu);
            if (s.state.load() == EXITING)
                policy_state_changed_locked(q, EXITED);
        }
    }
}

// No thread left running (in guest code, a known syscall or a released
// one), some waiting in a futex: maybe a deadlock. The watchdog, woken here,
// looks at once instead of at its next period (a deadlocked run of a
// campaign used to spend 5 to 10 ms there, for each such run).
void weft_platform::note_maybe_idle_locked()
{
    uint32_t n = count.load();
    bool waits = false;
    for (uint32_t q = 0; q < n; q++) {
        int st = slots[q].state.load();
        if (st == RUNNING || st == RELEASED || st == RELEASE_ENTERING)
            return;
        waits |= st == FUTEX_ENTERING || st == BLOCKED;
    }
    if (waits) {
        idle_seq.fetch_add(1);
        futex_wake_word(&idle_seq);
    }
}

void weft_platform::policy_state_changed_locked(int pe, int st)
{
    int old = slots[pe].state.exchange(st);
    progress++;
    if (old != st && st != RUNNING && st != RELEASED)
        note_maybe_idle_locked();
    if (!policy || old == st)
        return;
    if (has_token(pe)) // it may be handing the token over: see last_step_cycles
        last_step_cycles = std::max(last_step_cycles, slots[pe].bound.load());
    switch (st) {
    case BLOCKED:
        // A timeout the schedule decides: the waiter stays enabled, as a
        // sleeper (a delay outlasts it), and being chosen fires it.
        if (slots[pe].sched_timeout)
            pol_slept(pe, pause_again_locked(pe));
        else
            pol_state(pe, OP_BLOCKED);
        break;
    case RELEASED:
        pol_state(pe, OP_BLOCKED);
        break;
    case EXITED:
        pol_state(pe, OP_EXITED);
        break;
    case RUNNING:
        if (old == BLOCKED || old == RELEASED)
            pol_state(pe, OP_ENABLED);
        break;
    default: // FUTEX_ENTERING, RELEASE_ENTERING, EXITING: limbo, the thread keeps the token
        break;
    }
    if (host_parallel) {
        if (st == BLOCKED || st == RELEASED || st == EXITED)
            slots[pe].token.store(0);
        reschedule_parallel_locked();
        return;
    }
    if ((st == BLOCKED || st == RELEASED || st == EXITED) && holder.load() == pe)
        holder.store(-1);
    if (holder.load() < 0)
        reschedule_locked();
}

void weft_platform::grant_locked(int pe, uint64_t at)
{
    Slot &s = slots[pe];
    s.grant_at = at;
    s.granted.store(1);
    futex_wake_word(&s.granted);
}

// The policy chose a thread asleep in a timed wait: its timeout fires now.
// The kernel has no way to time out one waiter, so the word is woken (every
// waiter on it returns, as from a spurious wake-up, and the model counts
// them all woken here, so that what follows does not depend on when their
// host threads notice) and the chosen one's next wait, glibc's retry, gets
// a zero timeout from the plugin (weft_platform_timeout_fired).
void weft_platform::fire_timeout_locked(int c)
{
    Slot &f = slots[c];
    uint64_t ua = f.futex;
    f.fired = true;
    uint32_t cnt = count.load();
    for (uint32_t q = 0; q < cnt; q++) {
        Slot &s = slots[q];
        if (s.state.load() != BLOCKED || s.futex != ua || s.woken)
            continue;
        s.woken = true;
        s.woken_at = s.wait_at;
        s.waker = -1;
        s.bound.store(s.wait_at);
        s.state.store(RUNNING);
        progress++;
        pol_state(int(q), OP_ENABLED);
    }
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(uintptr_t(f.timeout_host)),
            FUTEX_WAKE | (f.timeout_private ? FUTEX_PRIVATE_FLAG : 0), INT_MAX, nullptr, nullptr,
            0);
}

// Host-parallel PPCT: every allowed thread holds a token and runs; one that
// is no longer allowed stops at its next schedule point. A thread in limbo
// keeps its token until it has settled, as the single holder does.
void weft_platform::reschedule_parallel_locked()
{
    // Sized for every PE at creation: no allocation here, and no limit on
    // how many threads PPCT's high set may allow at once.
    pct_tid *allowed = allowed_buf.get();
    size_t n = pol_next(allowed, cfg.max_pes);
    uint32_t cnt = count.load();
    for (uint32_t q = 0; q < cnt; q++) {
        // No allocation here: this runs at every step, under the mutex.
        bool allow = std::find(allowed, allowed + n, pct_tid(q)) != allowed + n;
        Slot &s = slots[q];
        int st = s.state.load();
        if (s.token.load() && !allow && !limbo(st)) {
            s.token.store(0);
        } else if (!s.token.load() && allow) {
            if (st == BLOCKED)
                fire_timeout_locked(int(q));
            pct_thread_info info;
            bool low = pct_policy_thread_info(policy, q, &info) == 0 && info.in_low_set;
            handoffs++;
            progress_seen.store(true); // the spin watch asks whether anyone wrote since
            s.token.store(1);
            grant_locked(int(q), low ? std::max(s.bound.load(), last_step_cycles) : s.bound.load());
        }
    }
}

void weft_platform::reschedule_locked()
{
    if (host_parallel) {
        reschedule_parallel_locked();
        return;
    }
    int h = holder.load();
    if (h >= 0) {
        int st = slots[h].state.load();
        if (limbo(st))
            return; // limbo: decide once the host thread has settled
    }
    pct_tid *allowed = allowed_buf.get();
    size_t n = pol_next(allowed, cfg.max_pes);
    if (n == 0) {
        holder.store(-1); // nothing enabled: deadlock or all in syscalls
        return;
    }
    int c = int(allowed[0]);
    if (parallel_set) {
        // PPCT's high set may all run: here one at a time, in virtual-time order.
        for (size_t i = 1; i < n; i++) {
            int q = int(allowed[i]);
            if (slots[q].bound.load() < slots[c].bound.load())
                c = q;
        }
    }
    if (slots[c].state.load() == BLOCKED)
        fire_timeout_locked(c); // only a timed waiter is enabled while asleep
    if (c == h)
        return;
    handoffs++;
    progress_seen.store(true); // the spin watch asks whether anyone wrote since
    // A thread the policy held back resumes no earlier than the moment it is
    // released, as on a machine where it really waited. PPCT's high set runs
    // in parallel, so its members keep their own time.
    uint64_t at = slots[c].bound.load();
    bool held_back = true;
    if (parallel_set) {
        pct_thread_info info;
        held_back = pct_policy_thread_info(policy, c, &info) == 0 && info.in_low_set;
    }
    if (held_back)
        at = std::max(at, last_step_cycles);
    // The grant is visible before the new holder: a PE that sees itself as
    // holder always finds its grant (and the time it carries) waiting.
    grant_locked(c, at);
    holder.store(c);
}

// The holder runs guest code ('R') or sits in a syscall we know of. Asleep
// in a condition wait outside a syscall means qemu parked it in
// start_exclusive (tb_flush after the first clone, an atomic qemu can only
// do alone, fork), which waits for every other vCPU to leave guest code,
// including this waiting one. Asleep on a lock is not that: whoever holds
// it (the allocator's, the mmap lock; preempted on a loaded machine) lets go
// by itself, and letting the waiter run on would leave the policy's order by
// host timing.
bool weft_platform::holder_stuck_in_qemu(int h)
{
    Slot &s = slots[h];
    auto outside_weft = [&s] {
        return s.state.load() == RUNNING && (!s.in_syscall.load() || s.forking.load()) &&
               !s.waiting.load() && !s.busy.load();
    };
    if (!outside_weft() || !host_thread_in_cond_wait(s.host_tid))
        return false;
    timespec ts = {0, 200000};
    nanosleep(&ts, nullptr);
    return outside_weft() && host_thread_in_cond_wait(s.host_tid);
}

namespace
{
// Marks a PE as sleeping in weft's own code for as long as it is in scope.
struct WaitingMark {
    std::atomic<int> &flag;
    explicit WaitingMark(std::atomic<int> &f) : flag(f)
    {
        flag.store(1);
    }
    ~WaitingMark()
    {
        flag.store(0);
    }
};
} // namespace

// Host-parallel: the token holder a waiting PE should look at — one in limbo
// (to settle it) or, failing that, the others in turn; -1 if none.
int weft_platform::stuck_token_holder(int pe)
{
    // No allocation: a waiter holding the allocator's lock could itself put
    // a holder to sleep and make it look parked in qemu.
    static std::atomic<unsigned> turn{0};
    uint32_t cnt = count.load();
    unsigned held = 0;
    for (uint32_t q = 0; q < cnt; q++) {
        if (int(q) == pe || !slots[q].token.load())
            continue;
        int st = slots[q].state.load();
        if (limbo(st))
            return int(q);
        held++;
    }
    if (!held)
        return -1;
    unsigned k = turn++ % held;
    for (uint32_t q = 0; q < cnt; q++)
        if (int(q) != pe && slots[q].token.load() && k-- == 0)
            return int(q);
    return -1;
}

weft_gate_result weft_platform::wait_for_grant(int pe, uint64_t *resume)
{
    WaitingMark mark(slots[pe].waiting);
    unsigned rounds = 0, spins = 0;
    Slot &s = slots[pe];
    uint64_t seen_bound = ~0ull, seen_progress = ~0ull, since = now_ns();
    // For a holder's fork: 1 out of qemu's running set (the hooks), 2 not
    // in guest code anyway (a syscall's gate); either way no escape is
    // needed, until the fork is done or this PE goes on.
    int out = 0;
    auto back_in = [&] {
        if (out == 1) {
            enter_cpu();
            parked_out.fetch_sub(1);
        }
        out = 0;
    };
    for (;;) {
        if (s.granted.exchange(0)) {
            back_in();
            std::lock_guard<std::mutex> g(mu);
            *resume = s.grant_at;
            return WEFT_GATE_OK;
        }
        bool dying = dying_other(pe);
        if (exiting.load() && !dying) {
            back_in();
            return WEFT_GATE_EXITING;
        }
        int h = host_parallel ? stuck_token_holder(pe) : holder.load();
        bool forking = (h >= 0 && h != pe && slots[h].forking.load()) || dying;
        if (forking && !out && !host_parallel && leave_cpu && enter_cpu) {
            parked_out.fetch_add(1); // before: the holder must not go on without it
            out = leave_cpu() ? 1 : 2;
            if (out == 1)
                fork_waits++;
            else
                parked_out.fetch_sub(1);
        } else if (out && !forking) {
            back_in();
            since = now_ns(); // the fork's time was no stall of this PE's
        }
        if (h >= 0) {
            int st = slots[h].state.load();
            if (limbo(st))
                probe(h);
            else if (!out && ++rounds % 4 == 0 && h != pe && holder_stuck_in_qemu(h)) {
                // Leave guest code so qemu can finish; this PE waits again at
                // its next block, having run at most the rest of this one.
                exclusive_yields++;
                *resume = s.bound.load();
                return WEFT_GATE_ESCAPED;
            }
        }
        // A holder stuck outside guest code (qemu's exclusive sections wait
        // for every vCPU, including this one) shows no progress: escape.
        uint64_t b = h >= 0 ? slots[h].bound.load() : 0, pr = progress.load(), t = now_ns();
        if (b != seen_bound || pr != seen_progress) {
            seen_bound = b;
            seen_progress = pr;
            since = t;
        } else if (!out && t - since > uint64_t(cfg.stall_ms) * 1000000ull) {
            escapes++;
            *resume = s.bound.load();
            return WEFT_GATE_ESCAPED;
        }
        // A handoff is a few microseconds of work; sleeping in the kernel at
        // once adds the wake-up latency to every one. Yield a little first.
        if (spins++ < 64) {
            sched_yield();
            continue;
        }
        futex_wait_word(&s.granted, 0, 200000);
    }
}

weft_gate_result weft_platform::policy_gate(int pe, uint64_t cycles, bool point, uint64_t *resume)
{
    {
        std::lock_guard<std::mutex> g(mu);
        slots[pe].bound.store(cycles);
        progress++; // a step is progress: waiters must not take it for a stall
        if (has_token(pe) && !point) {
            // Not a schedule point: the holder goes on without a decision.
            last_step_cycles = std::max(last_step_cycles, cycles);
            if (!slots[pe].granted.load()) {
                *resume = cycles;
                return WEFT_GATE_OK;
            }
        } else if (has_token(pe)) {
            Slot &s = slots[pe];
            pol_step(pe, s.exec_obj, s.exec_acc);
            pol_pending(pe, s.pend_obj, s.pend_acc);
            last_step_cycles = std::max(last_step_cycles, cycles);
            reschedule_locked();
        } else if (holder.load() < 0 || host_parallel) {
            reschedule_locked();
        }
        if (has_token(pe) && !slots[pe].granted.load()) {
            *resume = cycles;
            return WEFT_GATE_OK;
        }
        gate_waits++;
    }
    uint64_t at = cycles;
    weft_gate_result r = wait_for_grant(pe, &at);
    *resume = std::max(cycles, at);
    return r;
}

uint64_t weft_platform::take_turn(int pe, uint64_t cycles)
{
    if (!policy || (exiting.load() && !dying_other(pe)))
        return cycles;
    if (has_token(pe) && !slots[pe].granted.load())
        return cycles; // running with the token already
    uint64_t at = cycles;
    if (wait_for_grant(pe, &at) != WEFT_GATE_OK)
        return cycles;
    return std::max(cycles, at);
}

void weft_platform::release_all_waiters()
{
    uint32_t n = count.load();
    for (uint32_t q = 0; q < n; q++)
        futex_wake_word(&slots[q].granted);
}

extern "C" {

int weft_platform_set_policy(weft_platform *p, pct_policy *policy, weft_set_mode mode)
{
    std::lock_guard<std::mutex> g(p->mu);
    if (p->count.load() != 0)
        return -1; // threads would have been created without the policy knowing
    p->policy = policy;
    p->parallel_set = mode == WEFT_SET_IN_ORDER;
    p->host_parallel = mode == WEFT_SET_PARALLEL;
    return 0;
}

uint64_t weft_platform_block_start(weft_platform *p, int pe, uint64_t cycles, int may_wait)
{
    Slot &s = p->slots[pe];
    if (may_wait && p->policy && !(p->has_token(pe) && !s.granted.load()) && !p->exiting.load()) {
        weft_platform_busy(p, pe, 1);
        cycles = p->take_turn(pe, cycles);
        weft_platform_busy(p, pe, -1);
    }
    s.bound.store(cycles, std::memory_order_release);
    return cycles;
}

void weft_platform_block_fast(weft_platform *p, int pe, weft_block_fast *f)
{
    static_assert(sizeof(std::atomic<uint64_t>) == 8 && sizeof(std::atomic<int>) == 4 &&
                      sizeof(std::atomic<uint32_t>) == 4,
                  "the platform's atomics are C11's");
    Slot &s = p->slots[pe];
    *f = weft_block_fast{&s.bound, &p->holder,           &s.token,        &s.granted, &p->exiting,
                         pe,       p->policy != nullptr, p->host_parallel};
}

void weft_platform_syscall_done(weft_platform *p, int pe)
{
    p->slots[pe].in_syscall.store(0);
}

void weft_platform_busy(weft_platform *p, int pe, int delta)
{
    // Only the PE's own thread writes it: no read-modify-write needed, and
    // none wanted on this path (once per gate and per trace flush).
    std::atomic<int> &b = p->slots[pe].busy;
    b.store(b.load(std::memory_order_relaxed) + delta, std::memory_order_release);
}

void weft_platform_forking(weft_platform *p, int pe, int on)
{
    p->slots[pe].forking.store(on);
    if (on) {
        p->guest_forked.store(true); // a child may write the pipes it holds
        return;
    }
    // Every waiter that left qemu's running set for the fork is back in it
    // before the holder goes on: another exclusive section (a translation
    // flush) must wait for them, as they are parked inside a block.
    p->release_all_waiters();
    for (unsigned i = 0; p->parked_out.load() > 0 && i < 1000000; i++)
        sched_yield();
}

void weft_platform_dying(weft_platform *p, int pe, int on)
{
    if (!p->policy || p->host_parallel)
        return;
    if (on)
        p->dying_pe.store(pe);
    else if (p->dying_pe.load() == pe)
        p->dying_pe.store(-1);
    p->progress++;
}

void weft_platform_set_cpu_hooks(weft_platform *p, int (*leave)(void), void (*enter)(void))
{
    p->leave_cpu = leave;
    p->enter_cpu = enter;
}

uint64_t weft_platform_fork_waits(const weft_platform *p)
{
    return uint64_t(p->fork_waits.load());
}

void weft_platform_describe_step(weft_platform *p, int pe, uint64_t exec_obj, int exec_acc,
                                 uint64_t pend_obj, int pend_acc)
{
    weft::Slot &s = p->slots[pe];
    s.exec_obj = exec_obj;
    s.exec_acc = exec_acc;
    s.pend_obj = pend_obj;
    s.pend_acc = pend_acc;
}

uint32_t weft_platform_idle_seq(weft_platform *p)
{
    return p->idle_seq.load();
}

void weft_platform_wait_idle(weft_platform *p, uint32_t seen, long timeout_ns)
{
    if (p->idle_seq.load() == seen)
        futex_wait_word(&p->idle_seq, seen, timeout_ns);
}

int weft_platform_stuck_in_qemu(weft_platform *p, int pe)
{
    return p->holder_stuck_in_qemu(pe) ? 1 : 0;
}

} // extern "C"
