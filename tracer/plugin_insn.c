/* What translation learns about a block and its memory instructions: just
 * enough AArch64 decoding to classify them, kept for the block's lifetime
 * (qemu-user never frees translations while it runs, and neither do we). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_state.h"

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;

/* Zeroed memory that lives as long as the process, from 64 KiB chunks. */
void *plugin_arena_alloc(size_t n)
{
    static uint8_t *chunk;
    static size_t left;
    enum { CHUNK = 64 << 10 };
    n = (n + 15) & ~(size_t)15;
    if (n > CHUNK)
        return NULL;
    pthread_mutex_lock(&arena_lock);
    if (left < n) {
        chunk = calloc(1, CHUNK);
        left = chunk ? CHUNK : 0;
    }
    void *p = NULL;
    if (left >= n) {
        p = chunk + (CHUNK - left);
        left -= n;
    }
    pthread_mutex_unlock(&arena_lock);
    return p;
}

int insn_is_load_store(uint32_t w)
{
    return (w & 0x0a000000u) == 0x08000000u;
}

static int is_exclusive_or_ordered(uint32_t w)
{
    return (w & 0x3f000000u) == 0x08000000u; /* LDXR/STXR/LDAR/STLR/CAS family */
}

static int is_lse_atomic(uint32_t w)
{
    return (w & 0x3f200c00u) == 0x38200000u; /* LDADD, SWP, LDCLR, ... */
}

/* CAS and its acquire/release forms: o2 (bit 23) and o1 (bit 21) both set.
 * (o1 alone is an exclusive pair, LDXP/STXP, or CASP.) */
static int is_cas(uint32_t w)
{
    return is_exclusive_or_ordered(w) && (w & 0x00200000u) && (w & 0x00800000u);
}

int insn_branch_target(uint32_t w, uint64_t pc, uint64_t *target)
{
    if ((w & 0x7c000000u) != 0x14000000u)
        return 0;
    int64_t off = (int64_t)(int32_t)((w & 0x03ffffffu) << 6) >> 4; /* sign-extended imm26 * 4 */
    *target = pc + (uint64_t)off;
    return 1;
}

int insn_jump_target(uint32_t w, uint64_t pc, uint64_t *target)
{
    int64_t off;                          /* the sign-extended word offset, in bytes */
    if ((w & 0xfc000000u) == 0x14000000u) /* B */
        off = (int64_t)(int32_t)((w & 0x03ffffffu) << 6) >> 4;
    else if ((w & 0xff000010u) == 0x54000000u || (w & 0x7e000000u) == 0x34000000u) /* B.cond, CBZ */
        off = (int64_t)(int32_t)(((w >> 5) & 0x7ffffu) << 13) >> 11;
    else if ((w & 0x7e000000u) == 0x36000000u) /* TBZ, TBNZ */
        off = (int64_t)(int32_t)(((w >> 5) & 0x3fffu) << 18) >> 16;
    else
        return 0;
    *target = pc + (uint64_t)off;
    return 1;
}

/* Does the instruction write memory? Only used to describe a faulting
 * access: L is bit 22 in the exclusive, pair and SIMD structure classes;
 * single registers store only with opc 00 (or 10 for a SIMD q register). */
static int is_store(uint32_t w)
{
    if (is_lse_atomic(w) || is_cas(w))
        return 1;
    int l = (w >> 22) & 1;
    if ((w & 0x38000000u) == 0x38000000u) { /* load/store register */
        unsigned opc = (w >> 22) & 3;
        return opc == 0 || ((w >> 26) & 1 && opc == 2);
    }
    if ((w & 0x38000000u) == 0x18000000u) /* literal: loads only */
        return 0;
    return !l;
}

uint32_t insn_classify(uint32_t w)
{
    uint32_t f = 0;
    if (is_exclusive_or_ordered(w) || is_lse_atomic(w))
        f |= INSN_ATOMIC;
    if (is_lse_atomic(w) || is_cas(w))
        f |= INSN_RMW;
    if (((w >> 5) & 31u) == 31u)
        f |= INSN_SP_BASE;
    if (is_store(w))
        f |= INSN_STORE;
    return f;
}

/* Does the block close a loop that may wait: end in a branch back over at
 * most cfg.wait_loop_bytes, with no store but to its stack? A store in the loop
 * is progress (the spin watch starts over at every one), so only such a
 * block's loads can show a spinner; its loop's earlier blocks need not. */
int insn_tb_closes_wait_loop(struct qemu_plugin_tb *tb, size_t n)
{
    if (n == 0)
        return 0;
    struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
    uint32_t w;
    uint64_t pc = qemu_plugin_insn_vaddr(last), target;
    if (qemu_plugin_insn_size(last) != 4)
        return 0;
    memcpy(&w, qemu_plugin_insn_data(last), 4);
    if (!insn_jump_target(w, pc, &target) || target > pc ||
        target + g_plugin.cfg.wait_loop_bytes < pc || !g_plugin.cfg.wait_loop_bytes)
        return 0;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        if (qemu_plugin_insn_size(insn) != 4)
            continue;
        memcpy(&w, qemu_plugin_insn_data(insn), 4);
        if (insn_is_load_store(w) && (insn_classify(w) & (INSN_STORE | INSN_SP_BASE)) == INSN_STORE)
            return 0;
    }
    return 1;
}
