// Spinning and livelock in replays: a thread that waits by spinning,
// yielding or sleeping is demoted by the policy, and a run in which every
// thread that can run only spins, since anyone last made progress, ends as
// a livelock (docs/replay.md, "Spinning"). Progress is a write outside a
// stack or a futex call; the spin watch and the sleep rule ask about it.
#include "platform_state.h"

#include <algorithm>
#include <cstdio>

using namespace weft;

// Has pe paused (spun, yielded, slept, waited for a timeout) since it last
// made progress itself? Then it is waiting for someone, not for time. (Since
// anyone's progress, a poller's every sleep after a step of the thread a
// change point delayed was a first one, above that thread again: md5deep's
// main thread polls with sleeps, and such a run took 1.1 million steps,
// each of the worker's needing a starvation override, 27 s for 0.2.)
bool weft_platform::pause_again_locked(int pe)
{
    // Before the epoch is read: a write that then finds it unseen came before.
    progress_seen.store(true);
    Slot &s = slots[pe];
    if (s.spin_epoch != progress_epoch.load(std::memory_order_relaxed)) {
        s.spin_epoch = progress_epoch.load(std::memory_order_relaxed);
        s.spin_count = 0;
        s.yields = 0;
    }
    if (s.own_progress.load(std::memory_order_relaxed)) {
        s.own_progress.store(false, std::memory_order_relaxed);
        s.paused = false;
    }
    bool again = s.paused;
    s.paused = true;
    return again;
}

extern "C" {

uint64_t weft_platform_handoffs(weft_platform *p)
{
    return p->handoffs.load(std::memory_order_relaxed);
}

uint64_t weft_platform_progress_epoch(weft_platform *p)
{
    return p->progress_epoch.load(std::memory_order_relaxed);
}

// Three sightings each, since the last progress: a thread demoted once may
// just have been unlucky with who ran next; three rounds in which every
// runnable thread only spun are no luck.
#define LIVELOCK_SIGHTINGS 3

// A thread spinning alone (the others blocked, waiting for it, or gone)
// needs this many: a loop that polls a flag some thousands of times and
// then goes on was a livelock in every run (20000 polls: 3000 loads make
// the three sightings), and nobody else can be starved by it. An endless
// one still ends in milliseconds of a replay.
#define LONE_SPINNER_SIGHTINGS 1000

// A thread that yields while every other one waits in a futex or is gone,
// with no other system call by anyone in between, is looping for ever
// after this many: its writes (a lock it takes and drops to look at a
// count) are no progress then, since no write wakes a futex waiter. A
// consumer polling a count a lost update left stale ran every such run
// to --timeout, a timeout rather than a hit. Not once the program has a
// signal handler or a timer: it may yield until a signal comes.
#define LONE_YIELDS 100000

// A yield is one of these many sightings: a loop that polls a few times
// with sched_yield and then gives up (a bounded retry) yields without
// writing, and three yields each made every such program a livelock; a
// loop that yields for ever reaches this in microseconds of a replay.
#define YIELDS_PER_SIGHTING 100

enum pause_kind { PAUSE_SPIN, PAUSE_YIELD, PAUSE_SLEEP };

// Is pe's yield its LONE_YIELDS-th in a row alone (see there)?
static bool lone_yield_locked(weft_platform *p, int pe, uint64_t pc)
{
    Slot &s = p->slots[pe];
    uint32_t n = p->count.load();
    for (uint32_t q = 0; q < n; q++) {
        int st = p->slots[q].state.load();
        if (int(q) != pe && st != BLOCKED && st != EXITED && st != FREE) {
            s.lone_yields = 0;
            return false;
        }
    }
    uint64_t world = p->world_epoch.load(std::memory_order_relaxed);
    if (s.lone_epoch != world) {
        s.lone_epoch = world;
        s.lone_yields = 0;
    }
    s.spin_pc = pc;
    return ++s.lone_yields >= LONE_YIELDS;
}

// A detected spin is a sighting for the livelock rule, every
// YIELDS_PER_SIGHTING-th yield is one; a sleep only tells the policy.
static int spin_sighting(weft_platform *p, int pe, uint64_t pc, pause_kind kind)
{
    std::lock_guard<std::mutex> g(p->mu);
    Slot &s = p->slots[pe];
    bool again = p->pause_again_locked(pe);
    // A first yield since its own progress is a sleep's nap too: demoted
    // below every thread, a main that yields once to let a worker start
    // always let it run first, under any change point, and the worker's
    // late sigaction (pthread_kill before the handler) was out of pct's
    // reach (0 of 200; random 104). Yields again without progress demote.
    if (p->policy && kind == PAUSE_SLEEP)
        p->pol_slept(pe, again);
    else if (p->policy && kind == PAUSE_YIELD && !again)
        p->pol_yield_napped(pe);
    else if (p->policy)
        p->pol_yielded(pe);
    // A program with a signal handler or a timer may yield until a signal
    // comes from outside, in wall time: its yields are no sightings.
    if (kind == PAUSE_YIELD && p->signals_expected.load(std::memory_order_relaxed))
        return 0;
    if (kind == PAUSE_YIELD && lone_yield_locked(p, pe, pc))
        return 1;
    // A sleep is no sign of a livelock: time may end the wait (a loop with
    // a deadline, or a bounded number of retries), and three sleeps in a
    // row with no write in between need not be a loop at all.
    if (kind == PAUSE_SLEEP || (kind == PAUSE_YIELD && ++s.yields % YIELDS_PER_SIGHTING != 0))
        return 0;
    s.spin_count++;
    s.spin_pc = pc;
    uint32_t n = p->count.load();
    unsigned live = 0;
    uint64_t least = UINT64_MAX;
    for (uint32_t q = 0; q < n; q++) {
        int st = p->slots[q].state.load();
        if (st == BLOCKED || st == EXITED || st == FREE)
            continue;
        // In a syscall that waits on the outside world, or on its way out:
        // it may yet change something.
        if (st != RUNNING ||
            p->slots[q].spin_epoch != p->progress_epoch.load(std::memory_order_relaxed) ||
            p->slots[q].spin_count < LIVELOCK_SIGHTINGS)
            return 0;
        live++;
        least = std::min<uint64_t>(least, p->slots[q].spin_count);
    }
    return live > 1 || (live == 1 && least >= LONE_SPINNER_SIGHTINGS);
}

int weft_platform_spin(weft_platform *p, int pe, uint64_t pc)
{
    return spin_sighting(p, pe, pc, PAUSE_SPIN);
}

int weft_platform_yielded(weft_platform *p, int pe, uint64_t pc)
{
    return spin_sighting(p, pe, pc, PAUSE_YIELD);
}

void weft_platform_sleep(weft_platform *p, int pe, uint64_t pc)
{
    (void)spin_sighting(p, pe, pc, PAUSE_SLEEP);
}

void weft_platform_signals_expected(weft_platform *p)
{
    p->signals_expected.store(true, std::memory_order_relaxed);
}

void weft_platform_outside(weft_platform *p, int pe)
{
    (void)pe;
    p->world_epoch.fetch_add(1, std::memory_order_relaxed);
}

void weft_platform_progress(weft_platform *p, int pe)
{
    // Every write outside a stack comes here: no lock, and under a policy
    // one thread runs at a time, so the line does not bounce. Only the
    // first write after a spinner looked bumps the epoch.
    std::atomic<bool> &own = p->slots[pe].own_progress;
    if (!own.load(std::memory_order_relaxed))
        own.store(true, std::memory_order_relaxed);
    if (p->progress_seen.load()) {
        p->progress_seen.store(false);
        p->progress_epoch.fetch_add(1);
    }
}

size_t weft_platform_describe_spinners(weft_platform *p, char *buf, size_t len)
{
    std::lock_guard<std::mutex> g(p->mu);
    size_t k = 0;
    if (len)
        buf[0] = 0;
    uint32_t n = p->count.load();
    for (uint32_t q = 0; q < n && k < len; q++) {
        Slot &s = p->slots[q];
        if (s.lone_yields >= LONE_YIELDS)
            k += size_t(snprintf(buf + k, len - k,
                                 "  T%u yields at pc 0x%llx alone %llu times (the others wait "
                                 "in futexes or are gone) with no other system call\n",
                                 q, (unsigned long long)s.spin_pc,
                                 (unsigned long long)s.lone_yields));
        else if (s.spin_epoch == p->progress_epoch.load(std::memory_order_relaxed) && s.spin_count)
            k += size_t(snprintf(buf + k, len - k, "  T%u spins at pc 0x%llx\n", q,
                                 (unsigned long long)s.spin_pc));
    }
    return k < len ? k : len;
}

} // extern "C"
