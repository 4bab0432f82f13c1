// What the host says about the threads it runs: a monotonic clock, and a
// host thread's scheduler state and the system call it sleeps in, from
// /proc. The arbiters decide from these whether a guest thread is asleep in
// the kernel, in qemu, or gone.
#include "platform_state.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace weft
{

uint64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Plain open/read rather than stdio: fopen allocates, and a prober holding
// the allocator's lock while preempted would put the probed thread to sleep
// on it ('S'), which must not look like a thread parked in qemu.
char host_thread_state(int tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *paren = strrchr(buf, ')');
    if (!paren || paren[1] != ' ')
        return 0;
    return paren[2];
}

// The futex operation the host thread sleeps in: its op, -1 when it is not
// asleep in a futex, -2 when it is asleep and /proc cannot say in what.
static long asleep_in_futex(int tid)
{
    if (host_thread_state(tid) != 'S')
        return -1;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -2;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -2;
    buf[n] = 0;
    // "NR ARG1 ARG2 ...", or "running" when it woke meanwhile.
    char *end;
    long nr = strtol(buf, &end, 10);
    if (end == buf || nr != SYS_futex)
        return -1;
    strtoull(end, &end, 16); // the futex word
    return long(strtoul(end, nullptr, 16) & 0x7fffffffu);
}

bool host_thread_in_cond_wait(int tid)
{
    long op = asleep_in_futex(tid);
    return op == -2 || (op >= 0 && (op & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET);
}

bool host_thread_in_futex(int tid)
{
    return asleep_in_futex(tid) != -1;
}

} // namespace weft
