// Every call the arbiters make to the policy goes through here, so that a
// fork server can hand its children a policy in the state a fresh run would
// have at the fork. The policies draw random numbers even at steps with one
// runnable thread (PCT's starvation coin, the random policy's pick, POS's
// fresh priorities) and count per-thread steps and yields, so a child cannot
// just create its policy at the fork: it replays the journal of the
// prefix's calls into a fresh policy of its own seed. With one thread every
// decision is that thread, whatever the seed; catch_up checks it.
#include "platform_state.h"

#include <cstdio>

using namespace weft;

void weft_platform::journal_add(PolicyOp op, int pe, int64_t arg, uint64_t obj)
{
    if (!journaling)
        return;
    if (journal.size() >= journal_cap) {
        journal_overflow = true;
        return;
    }
    PolicyCall c{uint8_t(op), int32_t(pe), arg, obj, 0};
    if (op == OP_NEXT && pe >= 0 && journal_where)
        journal_where(pe, &c.obj, &c.seq);
    journal.push_back(c);
}

void weft_platform::pol_created(int pe, int parent)
{
    pct_thread_created(policy, pe, parent < 0 ? PCT_NO_PARENT : pct_tid(parent));
    journal_add(OP_CREATED, pe, parent, 0);
}

void weft_platform::pol_state(int pe, PolicyOp op)
{
    if (op == OP_BLOCKED)
        pct_thread_blocked(policy, pe);
    else if (op == OP_EXITED)
        pct_thread_exited(policy, pe);
    else
        pct_thread_enabled(policy, pe);
    journal_add(op, pe, 0, 0);
}

void weft_platform::pol_yielded(int pe)
{
    pct_thread_yielded(policy, pe);
    journal_add(OP_YIELDED, pe, 0, 0);
}

void weft_platform::pol_slept(int pe, bool again)
{
    pct_thread_slept(policy, pe, again);
    journal_add(OP_SLEPT, pe, again ? 1 : 0, 0);
}

void weft_platform::pol_yield_napped(int pe)
{
    pct_thread_yield_napped(policy, pe);
    journal_add(OP_YIELD_NAPPED, pe, 0, 0);
}

void weft_platform::pol_step(int pe, uint64_t obj, int acc)
{
    pct_step_access(policy, pe, obj, pct_access(acc));
    journal_add(OP_STEP, pe, acc, obj);
}

void weft_platform::pol_pending(int pe, uint64_t obj, int acc)
{
    pct_thread_pending(policy, pe, obj, pct_access(acc));
    journal_add(OP_PENDING, pe, acc, obj);
}

size_t weft_platform::pol_next(pct_tid *out, size_t cap)
{
    size_t n = pct_policy_next(policy, out, cap);
    journal_add(OP_NEXT, n ? int(out[0]) : -1, int64_t(n), 0);
    return n;
}

extern "C" {

void weft_platform_journal_policy(weft_platform *p, size_t cap)
{
    std::lock_guard<std::mutex> g(p->mu);
    p->journaling = true;
    p->journal_cap = cap;
}

void weft_platform_journal_where(weft_platform *p, weft_platform_where_fn where)
{
    std::lock_guard<std::mutex> g(p->mu);
    p->journal_where = where;
}

int weft_platform_journal_overflowed(weft_platform *p)
{
    std::lock_guard<std::mutex> g(p->mu);
    return p->journal_overflow ? 1 : 0;
}

int weft_platform_policy_catch_up(weft_platform *p, pct_policy *fresh,
                                  void (*at)(int pe, uint64_t pc, uint64_t seq), char *err,
                                  size_t errlen)
{
    std::lock_guard<std::mutex> g(p->mu);
    if (p->journal_overflow) {
        snprintf(err, errlen, "platform: the policy journal overflowed");
        return -1;
    }
    size_t i = 0;
    for (const PolicyCall &c : p->journal) {
        switch (PolicyOp(c.op)) {
        case OP_CREATED:
            pct_thread_created(fresh, c.pe, c.arg < 0 ? PCT_NO_PARENT : pct_tid(c.arg));
            break;
        case OP_ENABLED:
            pct_thread_enabled(fresh, c.pe);
            break;
        case OP_BLOCKED:
            pct_thread_blocked(fresh, c.pe);
            break;
        case OP_EXITED:
            pct_thread_exited(fresh, c.pe);
            break;
        case OP_YIELDED:
            pct_thread_yielded(fresh, c.pe);
            break;
        case OP_SLEPT:
            pct_thread_slept(fresh, c.pe, c.arg != 0);
            break;
        case OP_YIELD_NAPPED:
            pct_thread_yield_napped(fresh, c.pe);
            break;
        case OP_STEP:
            pct_step_access(fresh, c.pe, c.obj, pct_access(c.arg));
            break;
        case OP_PENDING:
            pct_thread_pending(fresh, c.pe, c.obj, pct_access(c.arg));
            break;
        case OP_NEXT: {
            if (at)
                at(c.pe, c.obj, c.seq);
            pct_tid out[64];
            size_t n = pct_policy_next(fresh, out, 64);
            if (int64_t(n) != c.arg || (n && out[0] != c.pe)) {
                snprintf(err, errlen,
                         "platform: decision %zu of the prefix differs under this policy "
                         "(%zu threads, first %lld; the prefix had %lld, first %d)",
                         i, n, n ? (long long)out[0] : -1LL, (long long)c.arg, c.pe);
                return -1;
            }
            break;
        }
        }
        i++;
    }
    return 0;
}

int weft_platform_adopt_policy(weft_platform *p, pct_policy *policy, weft_set_mode mode,
                               uint64_t tid)
{
    std::lock_guard<std::mutex> g(p->mu);
    // Only the main thread may be taken over, from a policy that held one
    // token (host-parallel PPCT gives each thread its own).
    if (p->count.load() != 1 || !p->policy || p->host_parallel || mode == WEFT_SET_PARALLEL)
        return -1;
    p->policy = policy;
    p->parallel_set = mode == WEFT_SET_IN_ORDER;
    // The thread is the fork's child now: /proc and futex probes must look
    // at it, not at the server's thread. The server's tid still names it:
    // what the prefix wrote (a mutex's owner) holds that one, and no thread
    // of the child can get it while the server lives.
    weft::Slot &s = p->slots[0];
    s.tid = tid;
    s.host_tid = int(tid);
    p->by_tid[tid] = 0;
    p->journaling = false;
    std::vector<PolicyCall>().swap(p->journal);
    return 0;
}

} // extern "C"
