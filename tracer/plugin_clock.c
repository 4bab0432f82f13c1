/* Replays: the guest's clocks are virtual. A sleep takes no host time and
 * the schedule fires timeouts (plugin_sleep.c), so the host's clock would
 * contradict both: a program that measures its sleep finds it took nothing,
 * and one that checks the clock after a timeout (libstdc++'s wait_for and
 * wait_until do) finds the deadline not reached and waits again. And it
 * made runs of one seed differ: a deadline computed from the host's clock
 * takes a branch or not (tv_nsec carried into tv_sec) as the host's time
 * falls. Under a policy, clock_gettime and gettimeofday return one virtual
 * clock instead: the largest of the calling thread's virtual time, the end
 * of every sleep and fired timeout so far, and the last value returned (so
 * it never goes back, across threads). The realtime clocks start at
 * 2026-01-01 00:00:00 UTC, the monotonic ones at 1000 s; CPU-time clocks
 * stay the host's. realsleep=1 (--real-sleeps) keeps the host's time:
 * sleeps, timeouts and clocks together. */
#include <pthread.h>
#include <string.h>

#include "plugin_replay.h"

#define NS_PER_S 1000000000ull
#define REALTIME_BASE_S 1767225600ull /* 2026-01-01 00:00:00 UTC */
#define MONOTONIC_BASE_S 1000ull

static pthread_mutex_t g_clock_lock = PTHREAD_MUTEX_INITIALIZER;
/* Virtual ns since the clocks' bases: the last value returned, and the
 * latest end of a sleep or a fired timeout. */
static uint64_t g_last, g_floor;

static int clock_virtual(void)
{
    return g_plugin.sched.policy && !g_plugin.sched.real_sleeps;
}

/* The base of a clock id in seconds, or 0 for one that stays the host's. */
static uint64_t base_of(int64_t clockid)
{
    switch (clockid) {
    case 0:  /* CLOCK_REALTIME */
    case 5:  /* CLOCK_REALTIME_COARSE */
    case 8:  /* CLOCK_REALTIME_ALARM */
    case 11: /* CLOCK_TAI */
        return REALTIME_BASE_S;
    case 1: /* CLOCK_MONOTONIC */
    case 4: /* CLOCK_MONOTONIC_RAW */
    case 6: /* CLOCK_MONOTONIC_COARSE */
    case 7: /* CLOCK_BOOTTIME */
    case 9: /* CLOCK_BOOTTIME_ALARM */
        return MONOTONIC_BASE_S;
    default: /* process and thread CPU time, dynamic clocks */
        return 0;
    }
}

static uint64_t now_locked(const vcpu_state *v)
{
    uint64_t t = cycles_to_ns(vcpu_cycles_at(v, v->insns));
    if (t < g_floor)
        t = g_floor;
    if (t < g_last)
        t = g_last;
    return t;
}

static uint64_t ts_ns(const unsigned char ts[16])
{
    int64_t s, ns;
    memcpy(&s, ts, sizeof s);
    memcpy(&ns, ts + 8, sizeof ns);
    if (s < 0 || ns < 0)
        return 0;
    return (uint64_t)s * NS_PER_S + (uint64_t)ns;
}

uint64_t plugin_clock_deadline(vcpu_state *v, const unsigned char ts[16], int64_t clockid)
{
    pthread_mutex_lock(&g_clock_lock);
    uint64_t now = now_locked(v), t = ts_ns(ts), at;
    pthread_mutex_unlock(&g_clock_lock);
    if (clockid < 0)
        at = now + t; /* relative */
    else {
        uint64_t base = base_of(clockid) * NS_PER_S;
        at = t > base ? t - base : 0;
    }
    return at;
}

void plugin_clock_passed(uint64_t until)
{
    if (!clock_virtual())
        return;
    pthread_mutex_lock(&g_clock_lock);
    if (until > g_floor)
        g_floor = until;
    pthread_mutex_unlock(&g_clock_lock);
}

void plugin_clock_read(vcpu_state *v, int gettimeofday, int64_t ret)
{
    if (!clock_virtual() || ret != 0)
        return;
    uint64_t at = gettimeofday ? v->sys_args[0] : v->sys_args[1];
    uint64_t base = gettimeofday ? REALTIME_BASE_S : base_of((int64_t)v->sys_args[0]);
    if (!at || !base)
        return;
    pthread_mutex_lock(&g_clock_lock);
    uint64_t t = now_locked(v);
    g_last = t;
    pthread_mutex_unlock(&g_clock_lock);
    int64_t out[2] = {(int64_t)(base + t / NS_PER_S), (int64_t)(t % NS_PER_S)};
    if (gettimeofday)
        out[1] /= 1000; /* struct timeval: microseconds */
    (void)plugin_guest_write(at, out, sizeof out);
}
