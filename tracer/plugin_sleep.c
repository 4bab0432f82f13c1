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

#include "plugin_state.h"

void plugin_sleep_skip(vcpu_state *v, uint64_t req, int restore)
{
    v->sleep_patched = 0;
    if (!g_plugin.sched.policy || g_plugin.sched.real_sleeps)
        return;
    static const unsigned char zero[sizeof v->sleep_saved];
    /* An address the guest may not read stays as it is: the call fails as
     * it would have. */
    if (plugin_guest_read(req, v->sleep_saved, sizeof v->sleep_saved) ||
        plugin_guest_write(req, zero, sizeof zero))
        return;
    v->sleep_at = req;
    v->sleep_patched = restore ? 1 : 2;
    atomic_fetch_add_explicit(&g_plugin.sleeps_skipped, 1, memory_order_relaxed);
}

void plugin_sleep_restore(vcpu_state *v)
{
    int patched = v->sleep_patched;
    v->sleep_patched = 0;
    if (patched != 1)
        return;
    (void)plugin_guest_write(v->sleep_at, v->sleep_saved, sizeof v->sleep_saved);
}
