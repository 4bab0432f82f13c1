/* Replays: a sleep costs no time. Under a policy a nanosleep takes no virtual
 * time and its thread holds the only token while the host sleeps, so every
 * other thread waits too: a campaign of a program that sleeps paid for every
 * sleep of every schedule, one after another. The request is zeroed in guest
 * memory for the call (the kernel returns at once, 0 as for a sleep that
 * ended) and, for nanosleep and clock_nanosleep, whose request the kernel
 * leaves as it is, restored when it returns; pselect6 and ppoll write back
 * the time not slept, which is 0 after a sleep that ended (a loop that sleeps
 * "the rest" until nothing is left must see it). realsleep=1 keeps real
 * sleeps, for a program that measures them. */
#include <stdatomic.h>
#include <string.h>

#include "plugin_replay.h"

/* Replaces the timespec at guest address req for the call: 0 if done. An
 * address the guest may not read stays as it is: the call fails as it
 * would have. */
static int patch_timespec(vcpu_state *v, uint64_t req, const unsigned char *with, int restore)
{
    v->sleep_patched = 0;
    if (plugin_guest_read(req, v->sleep_saved, sizeof v->sleep_saved) ||
        plugin_guest_write(req, with, sizeof v->sleep_saved))
        return -1;
    v->sleep_at = req;
    v->sleep_patched = restore ? 1 : 2;
    return 0;
}

void plugin_sleep_skip(vcpu_state *v, uint64_t req, int restore, int64_t clockid)
{
    v->sleep_patched = 0;
    if (!g_plugin.sched.policy || g_plugin.sched.real_sleeps)
        return;
    static const unsigned char zero[sizeof v->sleep_saved];
    if (patch_timespec(v, req, zero, restore) != 0)
        return;
    atomic_fetch_add_explicit(&g_plugin.sleeps_skipped, 1, memory_order_relaxed);
    /* It ends, on the virtual clock, when it asked to. */
    plugin_clock_passed(plugin_clock_deadline(v, v->sleep_saved, clockid));
}

/* A timed wait is a sleep that a wake may end early. Left to the host's
 * clock, whether it times out depends on how fast the host ran the others,
 * and each timeout costs its real time while the token waits. Instead the
 * schedule decides: the waiter counts as enabled, as a sleeper, and the
 * policy choosing it fires the timeout (weft_platform_timeout_by_schedule).
 * The host's timeout is moved 2^40 s away (relative or absolute, either
 * clock: out of reach); glibc's waits retry after the wake that fires it,
 * and that retry gets a zero timeout, which the kernel ends at once. */
void plugin_timed_wait(vcpu_state *v, uint64_t uaddr, uint64_t ts, int private_futex,
                       int64_t clockid)
{
    int armed = v->timeout_armed;
    v->timeout_armed = 0;
    v->sleep_patched = 0;
    uintptr_t base;
    if (!g_plugin.sched.policy || g_plugin.sched.real_sleeps || !plugin_guest_base(&base))
        return;
    unsigned char with[sizeof v->sleep_saved] = {0};
    if (!armed) {
        int64_t far = (int64_t)1 << 40;
        memcpy(with, &far, sizeof far); /* tv_sec; tv_nsec 0 */
    }
    if (patch_timespec(v, ts, with, 1) != 0)
        return;
    if (armed) {
        weft_platform_futex_wait_instant(g_plugin.platform, v->pe);
        return;
    }
    v->timeout_at = plugin_clock_deadline(v, v->sleep_saved, clockid);
    weft_platform_timeout_by_schedule(g_plugin.platform, v->pe, base + uaddr, private_futex);
}

void plugin_sleep_restore(vcpu_state *v)
{
    int patched = v->sleep_patched;
    v->sleep_patched = 0;
    if (patched != 1)
        return;
    (void)plugin_guest_write(v->sleep_at, v->sleep_saved, sizeof v->sleep_saved);
}
