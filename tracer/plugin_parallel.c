/* qemu's parallel code from the first block on.
 *
 * qemu-user translates for one thread until the guest's first clone; then
 * it sets CF_PARALLEL in the vCPU's tcg_cflags and flushes every translation
 * (do_fork, linux-user/syscall.c, 7.2), because code made for one thread may
 * use non-atomic sequences. In a fork server's child that flush came right
 * after the fork: each child threw away the prefix's code (the loader, libc's
 * start-up, the program up to its first thread) and translated again what it
 * ran of it, and the flush itself is an exclusive section every vCPU must
 * leave guest code for. With the flag set before the first block, every
 * block is parallel-safe from the start and the clone finds nothing to
 * flush: children run the server's translations, and plain runs keep theirs.
 *
 * The plugin API cannot set the flag. qemu exports curr_cflags(cpu), whose
 * body begins by loading cpu->tcg_cflags into its return register: the
 * field's offset is read from that instruction, and the write is checked by
 * calling curr_cflags again. Anything unexpected (another host, another qemu
 * whose code or plugin API differs) leaves qemu as it is: the flush then
 * happens as before, only slower. WEFT_QEMU_FLUSH_AT_CLONE=1 asks for that
 * (benchmarks compare the two). */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_state.h"

/* include/exec/exec-all.h, qemu 7.x (plugin API version 1). */
#define QEMU_CF_PARALLEL 0x00080000u

typedef uint32_t (*curr_cflags_fn)(void *cpu);
typedef void *(*qemu_get_cpu_fn)(int index);

static atomic_int tried;
static int api_version;

void plugin_parallel_note_api(int version)
{
    api_version = version;
}

int plugin_qemu_api_version(void)
{
    return api_version;
}

/* The displacement of the first `mov disp(%rdi),%eax` among the function's
 * leading plain loads from %rdi, or -1. */
static long cflags_offset(const uint8_t *p)
{
#if defined(__x86_64__)
    if (!memcmp(p, "\xf3\x0f\x1e\xfa", 4)) /* endbr64 */
        p += 4;
    for (int i = 0; i < 4; i++) {
        if (p[0] != 0x8b)
            return -1;
        uint8_t modrm = p[1], mod = modrm >> 6, reg = (modrm >> 3) & 7, rm = modrm & 7;
        if (rm != 7 || mod == 0 || mod == 3)
            return -1; /* not [rdi + displacement] */
        long disp;
        if (mod == 1) {
            disp = (int8_t)p[2];
            p += 3;
        } else {
            int32_t d;
            memcpy(&d, p + 2, 4);
            disp = d;
            p += 6;
        }
        if (reg == 0)
            return disp >= 0 ? disp : -1;
    }
#else
    (void)p;
#endif
    return -1;
}

/* Before the first translation only: a block made for one thread must never
 * run beside another. */
void plugin_parallel_from_start(void)
{
    if (atomic_exchange(&tried, 1))
        return;
    const char *off_env = getenv("WEFT_QEMU_FLUSH_AT_CLONE");
    if ((off_env && !strcmp(off_env, "1")) || api_version != 1)
        return;
    curr_cflags_fn cflags = (curr_cflags_fn)dlsym(RTLD_DEFAULT, "curr_cflags");
    qemu_get_cpu_fn get_cpu = (qemu_get_cpu_fn)dlsym(RTLD_DEFAULT, "qemu_get_cpu");
    if (!cflags || !get_cpu)
        return;
    long off = cflags_offset((const uint8_t *)(uintptr_t)cflags);
    void *cpu = get_cpu(0);
    if (off < 0 || !cpu || get_cpu(1))
        return;
    uint32_t *field = (uint32_t *)((char *)cpu + off);
    uint32_t old = *field;
    if (old & QEMU_CF_PARALLEL)
        return;
    *field = old | QEMU_CF_PARALLEL;
    if (!(cflags(cpu) & QEMU_CF_PARALLEL))
        *field = old; /* not the field curr_cflags reads: undo */
    else
        g_plugin.parallel_from_start = 1;
}
