// The platform's C API: PE pool, OS emulator state (threads, futexes) and the
// ideal arbiter. The SystemC model (model.h) carries the transactions and
// owns the kernel's notion of time; the arbiter decides who may pass a gate.
#include "platform_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <sched.h>
#include <string>
#include <unordered_map>
#include <vector>

// libsystemc insists on an sc_main symbol even though weft drives the kernel
// itself with sc_start() from whichever host thread holds the platform lock.
int sc_main(int, char **)
{
    return 0;
}

using namespace weft;

void weft_platform::step_kernel_to(uint64_t cycles)
{
    sc_core::sc_time target(double(cycles * cfg.ps_per_cycle), sc_core::SC_PS);
    sc_core::sc_time now = sc_core::sc_time_stamp();
    if (target > now) {
        sc_core::sc_start(target - now);
        kernel_steps++;
    }
    stepped = std::max(stepped, cycles);
}

// A thread back from a wait the model did not end (a released syscall, a
// futex wait its timeout ended): the others ran on meanwhile, and resuming
// at its own time would put what it does next behind what they did (the
// hole the late gates counted). It resumes past every gate passed, as if
// the outside world had kept it that long. (Past every counted thread's
// time as well, in exact mode, made pbzip2 and xz slower and blamed more:
// the rejoiner then waited for the slowest thread to reach the leader.)
// Not under a policy: the schedule orders the threads.
uint64_t weft_platform::rejoin_time_locked(uint64_t cycles)
{
    if (policy)
        return cycles;
    rejoined++;
    uint64_t r = std::max(cycles, stepped);
    if (r > cycles)
        rejoins++;
    return r;
}

// Look at a PE that is counted but may really be asleep or gone, and
// reclassify it. Rate-limited: reading /proc costs a few microseconds.
// Another counted PE that may still produce an event before (t, pe), or -1.
int weft_platform::blocker(int pe, uint64_t t)
{
    uint32_t n = count.load();
    for (uint32_t q = 0; q < n; q++) {
        if (int(q) == pe)
            continue;
        Slot &s = slots[q];
        int st = s.state.load();
        if (!counted(st))
            continue;
        uint64_t b = s.bound.load();
        if (b > t || (b == t && int(q) > pe))
            continue;
        if (st != RUNNING) {
            probe(int(q));
            if (!counted(s.state.load()))
                continue;
        }
        return int(q);
    }
    return -1;
}

int weft_platform::futex_wake_locked(int waker, uint64_t uaddr, int n, uint64_t cycles)
{
    std::vector<int> waiters;
    uint32_t cnt = count.load();
    for (uint32_t q = 0; q < cnt; q++) {
        Slot &s = slots[q];
        if (s.state.load() == BLOCKED && s.futex == uaddr && !s.woken)
            waiters.push_back(int(q));
    }
    std::sort(waiters.begin(), waiters.end(),
              [&](int a, int b) { return slots[a].block_seq < slots[b].block_seq; });
    int woke = 0;
    for (int q : waiters) {
        if (woke >= n)
            break;
        Slot &s = slots[q];
        s.woken = true;
        s.woken_at = cycles;
        s.waker = waker;
        s.bound.store(std::max(s.wait_at, cycles));
        policy_state_changed_locked(q, RUNNING);
        woke++;
    }
    return woke;
}

extern "C" {

void weft_platform_config_default(weft_platform_config *cfg)
{
    cfg->max_pes = 512;
    cfg->ps_per_cycle = 1000;
    cfg->stall_ms = 2000;
}

weft_platform *weft_platform_create(const weft_platform_config *cfg, char *err, size_t errlen)
{
    static std::atomic<int> created{0};
    if (created.exchange(1)) {
        snprintf(err, errlen, "platform: only one platform per process");
        return nullptr;
    }
    if (cfg->max_pes == 0 || cfg->ps_per_cycle == 0) {
        snprintf(err, errlen, "platform: max_pes and ps_per_cycle must be positive");
        return nullptr;
    }
    auto *p = new weft_platform;
    p->cfg = *cfg;
    p->slots.reset(new Slot[cfg->max_pes]);
    p->allowed_buf.reset(new pct_tid[cfg->max_pes]);
    try {
        sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
        p->top.reset(new weft::Top("weft", cfg->max_pes));
        sc_core::sc_start(sc_core::SC_ZERO_TIME); // finish elaboration
    } catch (const std::exception &e) {
        snprintf(err, errlen, "platform: SystemC elaboration failed: %s", e.what());
        delete p;
        return nullptr;
    }
    return p;
}

void weft_platform_destroy(weft_platform *p)
{
    // SystemC objects cannot be torn down cleanly once simulation started;
    // the process is about to exit, so the model is left to it.
    (void)p;
}

int weft_platform_thread_create(weft_platform *p, int parent, uint64_t tid, uint64_t cycles,
                                uint64_t clear_tid)
{
    std::lock_guard<std::mutex> g(p->mu);
    uint32_t id = p->count.load();
    if (id >= p->cfg.max_pes)
        return -1;
    Slot &s = p->slots[id];
    s.tid = tid;
    s.start = cycles;
    s.parent = parent;
    s.clear_tid = clear_tid;
    s.host_tid = int(tid);
    s.bound.store(cycles);
    s.state.store(RUNNING);
    p->by_tid[tid] = int(id);
    p->count.store(id + 1); // publish the slot only once it is filled in
    p->progress++;
    if (p->policy) {
        p->pol_created(int(id), parent);
        if (parent < 0 && p->host_parallel)
            s.token.store(1);
        else if (parent < 0)
            p->holder.store(int(id)); // the initial thread starts with the token
        else if (p->host_parallel)
            p->reschedule_parallel_locked(); // a new high-set thread runs at once
    }
    return int(id);
}

int weft_platform_thread_by_tid(weft_platform *p, uint64_t tid)
{
    std::lock_guard<std::mutex> g(p->mu);
    auto it = p->by_tid.find(tid);
    return it == p->by_tid.end() ? -1 : it->second;
}

void weft_platform_thread_exit(weft_platform *p, int pe, uint64_t cycles)
{
    std::lock_guard<std::mutex> g(p->mu);
    Slot &s = p->slots[pe];
    s.bound.store(cycles);
    p->policy_state_changed_locked(pe, EXITING);
    if (s.clear_tid)
        p->futex_wake_locked(pe, s.clear_tid, INT_MAX, cycles);
}

uint64_t weft_platform_thread_begin(weft_platform *p, int pe)
{
    return p->take_turn(pe, p->slots[pe].start);
}

void weft_platform_yield(weft_platform *p, int pe)
{
    std::lock_guard<std::mutex> g(p->mu);
    if (p->policy)
        p->pol_yielded(pe);
}

uint32_t weft_platform_thread_count(weft_platform *p)
{
    return p->count.load();
}

uint64_t weft_platform_thread_start(weft_platform *p, int pe)
{
    return p->slots[pe].start;
}

uint64_t weft_platform_thread_tid(weft_platform *p, int pe)
{
    return p->slots[pe].tid;
}

uint64_t weft_platform_thread_clear_tid(weft_platform *p, int pe)
{
    return p->slots[pe].clear_tid;
}

int weft_platform_thread_parent(weft_platform *p, int pe)
{
    return p->slots[pe].parent;
}

void weft_platform_futex_wait_enter(weft_platform *p, int pe, uint64_t uaddr, uint64_t cycles,
                                    int host_tid, int timed)
{
    std::lock_guard<std::mutex> g(p->mu);
    Slot &s = p->slots[pe];
    s.futex = uaddr;
    s.timed_wait = timed != 0;
    s.sched_timeout = false;
    s.instant_wait = false;
    s.wait_at = cycles;
    s.woken = false;
    s.waker = -1;
    s.host_tid = host_tid;
    s.block_seq = ++p->block_seq;
    s.bound.store(cycles);
    p->policy_state_changed_locked(pe, FUTEX_ENTERING);
}

uint64_t weft_platform_futex_wait_return(weft_platform *p, int pe, uint64_t cycles)
{
    uint64_t resume;
    {
        std::lock_guard<std::mutex> g(p->mu);
        Slot &s = p->slots[pe];
        // Still FUTEX_ENTERING, it stayed counted (it never slept, or was
        // not yet seen asleep): nobody passed it.
        resume = s.woken                           ? std::max(cycles, s.woken_at)
                 : s.state.load() == weft::BLOCKED ? p->rejoin_time_locked(cycles)
                                                   : cycles;
        if (!s.woken)
            s.waker = -1;
        s.woken = false;
        s.futex = 0;
        s.bound.store(resume);
        // Still FUTEX_ENTERING: it never slept (EAGAIN) and kept the token.
        p->policy_state_changed_locked(pe, RUNNING);
    }
    return p->take_turn(pe, resume);
}

int weft_platform_futex_wake(weft_platform *p, int pe, uint64_t uaddr, int n, uint64_t cycles)
{
    std::lock_guard<std::mutex> g(p->mu);
    return p->futex_wake_locked(pe, uaddr, n, cycles);
}

void weft_platform_timeout_by_schedule(weft_platform *p, int pe, uint64_t host_addr,
                                       int private_futex)
{
    std::lock_guard<std::mutex> g(p->mu);
    Slot &s = p->slots[pe];
    s.sched_timeout = p->policy != nullptr;
    s.timeout_host = host_addr;
    s.timeout_private = private_futex != 0;
}

void weft_platform_futex_wait_instant(weft_platform *p, int pe)
{
    std::lock_guard<std::mutex> g(p->mu);
    p->slots[pe].instant_wait = true;
}

int weft_platform_thread_asleep(weft_platform *p, int pe)
{
    return pe >= 0 && uint32_t(pe) < p->count.load() && p->slots[pe].state.load() == BLOCKED;
}

int weft_platform_timeout_fired(weft_platform *p, int pe)
{
    std::lock_guard<std::mutex> g(p->mu);
    Slot &s = p->slots[pe];
    bool f = s.fired;
    s.fired = false;
    return f;
}

int weft_platform_woken_by(weft_platform *p, int pe, uint64_t *cycles)
{
    std::lock_guard<std::mutex> g(p->mu);
    Slot &s = p->slots[pe];
    *cycles = s.woken_at;
    return s.waker;
}

weft_gate_result weft_platform_gate(weft_platform *p, int pe, uint64_t cycles, uint64_t addr,
                                    int kind_flags, uint64_t *resume)
{
    weft_sync_kind kind = weft_sync_kind(kind_flags & 0xff);
    p->gates++;
    *resume = cycles;
    if (p->exiting.load() && !p->dying_other(pe))
        return WEFT_GATE_EXITING;
    if (p->replaying()) {
        weft_gate_result r =
            p->policy_gate(pe, cycles, !(kind_flags & WEFT_SYNC_NOT_A_POINT), resume);
        if (r != WEFT_GATE_OK)
            return r;
        cycles = *resume;
    }
    p->slots[pe].bound.store(cycles);
    unsigned spins = 0;
    uint64_t seen = p->progress.load(), since = 0;
    long nap = 1000;
    int q;
    p->slots[pe].waiting.store(1);
    struct Unmark {
        std::atomic<int> &f;
        ~Unmark()
        {
            f.store(0);
        }
    } unmark{p->slots[pe].waiting};
    uint64_t rejoined = p->rejoined.load();
look:
    while (!p->replaying() && (q = p->blocker(pe, cycles)) >= 0) {
        if (p->exiting.load())
            return WEFT_GATE_EXITING;
        if (spins++ == 0)
            p->gate_waits++;
        if (spins < 200) {
            sched_yield();
            continue;
        }
        if (spins % 16 == 0 && p->holder_stuck_in_qemu(q)) {
            // qemu parked the blocker in an exclusive section that waits for
            // this vCPU to leave guest code: let this access through.
            p->exclusive_yields++;
            return WEFT_GATE_ESCAPED;
        }
        // The blocker's own time moving is progress too: a long stretch of
        // ungated work on a crowded host once took more than stall_ms, and
        // the escape put the waiter's accesses behind it.
        uint64_t prog = p->progress.load() + p->slots[q].bound.load();
        uint64_t t = now_ns();
        if (prog != seen || since == 0) {
            seen = prog;
            since = t;
        } else if (t - since > uint64_t(p->cfg.stall_ms) * 1000000ull) {
            p->escapes++;
            return WEFT_GATE_ESCAPED;
        }
        timespec ts = {0, nap};
        nanosleep(&ts, nullptr);
        nap = std::min(nap * 2, 100000L);
    }
    {
        std::unique_lock<std::mutex> g(p->mu);
        if (!p->replaying() && p->rejoined.load() != rejoined) {
            // A thread rejoined after blocker() looked: it may be behind.
            rejoined = p->rejoined.load();
            g.unlock();
            goto look;
        }
        if (!p->replaying() && sc_core::sc_time(double(cycles * p->cfg.ps_per_cycle),
                                                sc_core::SC_PS) < sc_core::sc_time_stamp())
            p->late++;
        p->step_kernel_to(cycles);
        if (kind == WEFT_SYNC_SYSCALL)
            p->slots[pe].in_syscall.store(1);
        if (kind != WEFT_SYNC_ACCESS) {
            uint64_t a = kind == WEFT_SYNC_SYSCALL ? (weft::kOsWindow | addr) : addr;
            sc_core::sc_time at(double(cycles * p->cfg.ps_per_cycle), sc_core::SC_PS);
            if (at < sc_core::sc_time_stamp())
                at = sc_core::sc_time_stamp(); // an escaped PE is late; never go back
            p->top->pes[pe]->access(a, kind == WEFT_SYNC_ATOMIC, at);
        }
    }
    p->progress++;
    return WEFT_GATE_OK;
}

void weft_platform_syscall_release(weft_platform *p, int pe, uint64_t cycles, int settle)
{
    std::lock_guard<std::mutex> g(p->mu);
    p->slots[pe].bound.store(cycles);
    p->released++;
    // One holder at a time: it keeps the token until seen asleep in the call.
    bool limbo = settle && p->policy && !p->host_parallel;
    p->slots[pe].release_settles.store(limbo);
    p->policy_state_changed_locked(pe, limbo ? RELEASE_ENTERING : RELEASED);
}

// Only the holder runs guest code, so only its system calls (a write to a
// pipe, an eventfd's, a close, a signal) wake a thread asleep in a released
// call from inside the program. The woken thread rejoins when its host
// thread gets there, and a decision taken before would leave it out or not
// by host timing: a helper's server replayed one seed as 17, 22 and 20
// steps. So before the holder goes on, every released thread is back or
// still asleep in its call. One that neither sleeps nor returns within
// stall_ms (a long read from a disk) is left to host timing, counted as an
// escape: the run may not repeat by its seed.
void weft_platform_settle_released(weft_platform *p, int pe)
{
    if (!p->policy || p->host_parallel)
        return;
    uint32_t n = p->count.load();
    for (uint32_t q = 0; q < n; q++) {
        Slot &s = p->slots[q];
        if (int(q) == pe || s.state.load() != RELEASED || !s.release_settles.load())
            continue;
        uint64_t since = now_ns();
        for (unsigned spins = 0; s.state.load() == RELEASED; spins++) {
            if (!s.busy.load() && host_thread_asleep_outside_futex(s.host_tid) && !s.busy.load())
                break;
            if (now_ns() - since > uint64_t(p->cfg.stall_ms) * 1000000ull) {
                p->escapes++;
                break;
            }
            if (spins < 64) {
                sched_yield();
            } else {
                timespec ts = {0, 50000};
                nanosleep(&ts, nullptr);
            }
        }
    }
}

uint64_t weft_platform_syscall_return(weft_platform *p, int pe, uint64_t cycles)
{
    {
        std::lock_guard<std::mutex> g(p->mu);
        cycles = p->rejoin_time_locked(cycles);
        p->slots[pe].bound.store(cycles);
        p->policy_state_changed_locked(pe, RUNNING);
    }
    return p->take_turn(pe, cycles);
}

void weft_platform_exiting(weft_platform *p)
{
    p->exiting.store(1);
    p->progress++;
    p->release_all_waiters();
}

int weft_platform_is_exiting(weft_platform *p)
{
    return p->exiting.load();
}

int weft_platform_check_deadlock(weft_platform *p)
{
    uint32_t n = p->count.load();
    for (uint32_t q = 0; q < n; q++) {
        int st = p->slots[q].state.load();
        if (weft_platform::limbo(st))
            p->probe(int(q));
    }
    // A thread asleep in a read only this process can end (a pipe whose
    // write end it holds, an eventfd) waits as a futex waiter does: a
    // deadlock with one such reader ran to --timeout, a timeout and no hit.
    // Looked at before the lock: /proc costs microseconds.
    // Not once the guest made a child process: the child may hold a write
    // end too.
    std::vector<char> inside(n, 0);
    for (uint32_t q = 0; q < n && !p->guest_forked.load(); q++)
        if (p->slots[q].state.load() == RELEASED && p->policy)
            inside[q] = !p->slots[q].busy.load() && host_thread_waits_inside(p->slots[q].host_tid);
    std::lock_guard<std::mutex> g(p->mu);
    unsigned blocked = 0;
    for (uint32_t q = 0; q < n; q++) {
        int st = p->slots[q].state.load();
        if ((st == BLOCKED && !p->slots[q].timed_wait) || (st == RELEASED && inside[q]))
            blocked++;
        else if (st != EXITED && st != FREE) {
            p->deadlock_seen = 0;
            return 0;
        }
    }
    if (blocked == 0)
        return 0;
    // Only when nothing changed since the last look (a wake may be in
    // flight), and every waiter's host thread still sleeps in its futex (one
    // the kernel woke, by a wake the model did not see, is runnable).
    uint64_t prog = p->progress.load() + 1;
    bool same = p->deadlock_seen == prog;
    p->deadlock_seen = prog;
    if (!same)
        return 2;
    for (uint32_t q = 0; q < n; q++)
        if ((p->slots[q].state.load() == BLOCKED && !host_thread_in_futex(p->slots[q].host_tid)) ||
            (p->slots[q].state.load() == RELEASED &&
             (p->guest_forked.load() || !host_thread_waits_inside(p->slots[q].host_tid)))) {
            p->deadlock_seen = 0;
            return 0;
        }
    return 1;
}

uint64_t weft_platform_blocked_on(weft_platform *p, int pe)
{
    std::lock_guard<std::mutex> g(p->mu);
    Slot &s = p->slots[pe];
    return s.state.load() == BLOCKED || s.state.load() == FUTEX_ENTERING ? s.futex : 0;
}

size_t weft_platform_describe_blocked(weft_platform *p, char *buf, size_t len)
{
    std::lock_guard<std::mutex> g(p->mu);
    std::string out;
    uint32_t n = p->count.load();
    for (uint32_t q = 0; q < n; q++) {
        Slot &s = p->slots[q];
        if (s.state.load() == RELEASED) {
            char line[160];
            snprintf(line, sizeof line, "T%u (tid %llu) is asleep in a read\n", q,
                     (unsigned long long)s.tid);
            out += line;
        }
        if (s.state.load() != BLOCKED)
            continue;
        char line[160];
        snprintf(line, sizeof line, "T%u (tid %llu) waits on futex 0x%llx since cycle %llu\n", q,
                 (unsigned long long)s.tid, (unsigned long long)s.futex,
                 (unsigned long long)s.wait_at);
        out += line;
    }
    if (len) {
        size_t k = std::min(len - 1, out.size());
        memcpy(buf, out.data(), k);
        buf[k] = 0;
    }
    return out.size();
}

void weft_platform_get_stats(weft_platform *p, weft_platform_stats *out)
{
    std::lock_guard<std::mutex> g(p->mu);
    out->gates = p->gates.load();
    out->gate_waits = p->gate_waits.load();
    out->escapes = p->escapes.load();
    out->kernel_steps = p->kernel_steps.load();
    out->transactions = p->top->xbar.routed;
    out->released_syscalls = p->released.load();
    out->exclusive_yields = p->exclusive_yields.load();
    out->late_gates = p->late.load();
    out->rejoins = p->rejoins.load();
    out->sc_time_ps = uint64_t(sc_core::sc_time_stamp().to_seconds() * 1e12 + 0.5);
}

} // extern "C"
