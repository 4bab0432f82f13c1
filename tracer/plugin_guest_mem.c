/* Reading and writing the guest's memory from a syscall callback (qemu 7.2's
 * plugin API has neither): qemu-user maps guest address a at host address
 * guest_base + a, and /proc/self/mem reaches it even where the guest's page
 * is read-only (a const timespec). The file is bound to the process that
 * opened it: a fork server's child opens its own rather than write into the
 * server. */
#include <fcntl.h>
#include <unistd.h>

#include "plugin_state.h"

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

static int guest_io(uint64_t addr, void *buf, size_t len, int write)
{
    uintptr_t base;
    int fd;
    if (!addr || !plugin_guest_base(&base) || (fd = own_memory()) < 0)
        return -1;
    off_t at = (off_t)(base + addr);
    ssize_t n = write ? pwrite(fd, buf, len, at) : pread(fd, buf, len, at);
    return n == (ssize_t)len ? 0 : -1;
}

int plugin_guest_read(uint64_t addr, void *buf, size_t len)
{
    return guest_io(addr, buf, len, 0);
}

int plugin_guest_write(uint64_t addr, const void *buf, size_t len)
{
    return guest_io(addr, (void *)buf, len, 1);
}
