/* Replays: the guest's randomness is one fixed stream. getrandom and reads
 * of /dev/urandom and /dev/random returned the host's random bytes, so a
 * program that seeds its own generator from them (a hash seed, a random
 * back-off, a shuffled work list) did something else in every run of one
 * seed, and a failing seed did not fail again. Under a policy the threads
 * take turns, so the calls come in the same order in every run of a seed:
 * what they return is overwritten, at their return, with the next bytes of a
 * stream that starts the same in every run (splitmix64 from a fixed seed), as
 * if the program read a fixed input. AT_RANDOM (stack canaries, pointer
 * guards) is qemu's -seed (guest/). realrandom=1 keeps the host's bytes. */
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "plugin_replay.h"

#define RANDOM_STREAM_SEED UINT64_C(0x77656674) /* "weft" */

/* 8-byte words of the stream given so far: one thread at a time under a
 * policy, but PPCT's --host-parallel lets several call at once. */
static _Atomic uint64_t drawn;

static uint64_t splitmix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* /dev/random or /dev/urandom (character device 1:8 or 1:9): qemu-user
 * passes guest descriptors through, so the host's fstat tells. */
static int random_device(int64_t fd)
{
    struct stat st;
    return fd >= 0 && fstat((int)fd, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
           (minor(st.st_rdev) == 8 || minor(st.st_rdev) == 9);
}

void plugin_random_return(vcpu_state *v, int getrandom, int64_t ret)
{
    if (!g_plugin.sched.policy || g_plugin.sched.real_random || ret <= 0)
        return;
    if (!getrandom && !random_device((int64_t)v->sys_args[0]))
        return;
    uint64_t addr = v->sys_args[getrandom ? 0 : 1];
    unsigned char chunk[256];
    for (int64_t done = 0; done < ret;) {
        size_t n = (size_t)(ret - done) < sizeof chunk ? (size_t)(ret - done) : sizeof chunk;
        for (size_t i = 0; i < n; i += 8) {
            uint64_t w = splitmix64(RANDOM_STREAM_SEED + atomic_fetch_add(&drawn, 1));
            for (size_t b = 0; b < 8 && i + b < n; b++)
                chunk[i + b] = (unsigned char)(w >> (8 * b));
        }
        if (plugin_guest_write(addr + (uint64_t)done, chunk, n))
            return; /* the buffer as the kernel filled it */
        done += (int64_t)n;
    }
    atomic_fetch_add_explicit(&g_plugin.random_fills, 1, memory_order_relaxed);
}
