/* Replays: a sleep costs no time. Under a policy a nanosleep takes no virtual
 * time and its thread holds the only token while the host sleeps, so every
 * other thread waits too: a campaign of a program that sleeps paid for every
 * sleep of every schedule, one after another. The request is zeroed in guest
 * memory for the call (the kernel returns at once, 0 as for a sleep that
 * ended) and restored when it returns. realsleep=1 keeps real sleeps, for a
 * program that measures them. */
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "plugin_state.h"

/* /proc/self/mem writes even a read-only page (a const timespec), and is
 * bound to the process that opened it: a fork server's child opens its own
 * rather than write into the server. */
static int mem_fd = -1;
static pid_t mem_pid;

static int own_memory(void)
{
    pid_t me = getpid();
    if (mem_fd >= 0 && mem_pid == me)
        return mem_fd;
    if (mem_fd >= 0)
        close(mem_fd);
    mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
    mem_pid = me;
    return mem_fd;
}

void plugin_sleep_skip(vcpu_state *v, uint64_t req)
{
    v->sleep_patched = 0;
    if (!g_plugin.sched.policy || g_plugin.sched.real_sleeps)
        return;
    uintptr_t base;
    int fd;
    if (!req || !plugin_guest_base(&base) || (fd = own_memory()) < 0)
        return;
    off_t at = (off_t)(base + req);
    static const unsigned char zero[sizeof v->sleep_saved];
    /* An address the guest may not read stays as it is: the call fails as
     * it would have. */
    if (pread(fd, v->sleep_saved, sizeof v->sleep_saved, at) != (ssize_t)sizeof v->sleep_saved ||
        pwrite(fd, zero, sizeof zero, at) != (ssize_t)sizeof zero)
        return;
    v->sleep_at = (uint64_t)at;
    v->sleep_patched = 1;
    atomic_fetch_add_explicit(&g_plugin.sleeps_skipped, 1, memory_order_relaxed);
}

void plugin_sleep_restore(vcpu_state *v)
{
    if (!v->sleep_patched)
        return;
    v->sleep_patched = 0;
    int fd = own_memory();
    if (fd >= 0)
        (void)!pwrite(fd, v->sleep_saved, sizeof v->sleep_saved, (off_t)v->sleep_at);
}
