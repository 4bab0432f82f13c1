// What the host says about the threads it runs: a monotonic clock, and a
// host thread's scheduler state and the system call it sleeps in, from
// /proc. The arbiters decide from these whether a guest thread is asleep in
// the kernel, in qemu, or gone.
#include "platform_state.h"

#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
// Each thread's stat file stays open once opened, at a descriptor near the
// top of the table, out of the guest's way: opening and closing it at each
// probe was half of what probing cost (a random schedule probes at most of
// its switches), and the descriptor it held for the moment could be the
// number a guest's open wanted then. pread at offset 0 makes /proc write
// the file again. A kept descriptor must still be that thread's: its stat
// begins with the tid (a guest may close a descriptor it never opened and
// reuse the number), and a forked child starts with none.
namespace
{
struct TaskStat {
    int tid = 0, fd = -1;
};
std::mutex task_mu;
TaskStat task_stat[256];
pid_t task_pid;

int open_task_stat(int tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    // Within the table weft's launcher grew before qemu had threads (its
    // stderr copy sits at the top, guest.c): past it, a multithreaded
    // process's table grows only after an RCU grace period, milliseconds.
    rlimit rl;
    long top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 1024 ? long(rl.rlim_cur) : 1024;
    int high = top >= 256 ? fcntl(fd, F_DUPFD_CLOEXEC, int(top - 64)) : -1;
    if (high >= 0 && high < top - 4) {
        close(fd);
        fd = high;
    } else if (high >= 0) {
        close(high);
    }
    return fd;
}

// The stat of tid into buf (NUL-terminated); its length, or -1.
ssize_t read_task_stat(int tid, char *buf, size_t len)
{
    std::lock_guard<std::mutex> g(task_mu);
    if (task_pid != getpid()) {
        for (TaskStat &t : task_stat)
            t = TaskStat(); // the parent's descriptors: left to it
        task_pid = getpid();
    }
    TaskStat &t = task_stat[unsigned(tid) % 256];
    char want[24];
    int wl = snprintf(want, sizeof want, "%d (", tid);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (t.tid != tid || t.fd < 0 || attempt) {
            if (t.fd >= 0 && t.tid)
                close(t.fd);
            t.tid = tid;
            t.fd = open_task_stat(tid);
            if (t.fd < 0)
                return -1;
        }
        ssize_t n = pread(t.fd, buf, len - 1, 0);
        if (n > wl && !memcmp(buf, want, size_t(wl))) {
            buf[n] = 0;
            return n;
        }
    }
    close(t.fd);
    t = TaskStat();
    return -1;
}
} // namespace

char host_thread_state(int tid)
{
    char buf[512];
    if (read_task_stat(tid, buf, sizeof buf) <= 0)
        return 0;
    char *paren = strrchr(buf, ')');
    if (!paren || paren[1] != ' ')
        return 0;
    return paren[2];
}

// The system call the host thread sleeps in: its number, -1 when it is not
// asleep, -2 when it is asleep and /proc cannot say in what; *op gets the
// call's second argument (a futex's operation), *first its first.
static long asleep_in(int tid, unsigned long *op, unsigned long *first = nullptr)
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
    if (end == buf)
        return -1;
    unsigned long a1 = strtoul(end, &end, 16); // the first argument (a futex's word)
    if (first)
        *first = a1;
    *op = strtoul(end, nullptr, 16);
    return nr;
}

// The futex operation the host thread sleeps in: its op, -1 when it is not
// asleep in a futex, -2 when it is asleep and /proc cannot say in what.
static long asleep_in_futex(int tid)
{
    unsigned long op = 0;
    long nr = asleep_in(tid, &op);
    if (nr == -2)
        return -2;
    return nr == SYS_futex ? long(op & 0x7fffffffu) : -1;
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

// What descriptor fd of this process is: its /proc link ("pipe:[12]").
static bool fd_link(long fd, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%ld", fd);
    ssize_t n = readlink(path, buf, len - 1);
    if (n <= 0)
        return false;
    buf[n] = 0;
    return true;
}

// Does this process hold the write end of the pipe fd reads (another
// descriptor on the same pipe, open for writing)?
static bool holds_write_end(long fd, const char *link)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    bool found = false;
    while (d && !found && (e = readdir(d))) {
        char *end;
        long other = strtol(e->d_name, &end, 10);
        char l[64], path[64], info[256];
        if (*end || end == e->d_name || other == fd || !fd_link(other, l, sizeof l) ||
            strcmp(l, link))
            continue;
        snprintf(path, sizeof path, "/proc/self/fdinfo/%ld", other);
        int f = open(path, O_RDONLY | O_CLOEXEC);
        if (f < 0)
            continue;
        ssize_t n = read(f, info, sizeof info - 1);
        close(f);
        const char *flags = n > 0 ? (info[n] = 0, strstr(info, "flags:")) : nullptr;
        found = flags && (strtoul(flags + 6, nullptr, 8) & O_ACCMODE) != O_RDONLY;
    }
    if (d)
        closedir(d);
    return found;
}

bool host_thread_waits_inside(int tid)
{
    unsigned long op = 0, fd = 0;
    long nr = asleep_in(tid, &op, &fd);
    if (nr != SYS_read && nr != SYS_readv && nr != SYS_recvfrom && nr != SYS_recvmsg)
        return false;
    char link[64];
    if (!fd_link(long(fd), link, sizeof link))
        return false;
    if (!strcmp(link, "anon_inode:[eventfd]"))
        return true;
    return !strncmp(link, "pipe:[", 6) && holds_write_end(long(fd), link);
}

bool host_thread_asleep_outside_futex(int tid)
{
    unsigned long op = 0;
    long nr = asleep_in(tid, &op);
    return nr == -2 || (nr >= 0 && nr != SYS_futex);
}

} // namespace weft
