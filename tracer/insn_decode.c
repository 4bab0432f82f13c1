/* AArch64 decoding for the plugin (insn_decode.h). Encodings: the Arm
 * Architecture Reference Manual's "Loads and Stores" and "Branches"
 * instruction classes. */
#include "insn_decode.h"

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

static int is_pair(uint32_t w)
{
    return (w & 0x3a000000u) == 0x28000000u;
}

static int is_literal(uint32_t w)
{
    return (w & 0x3b000000u) == 0x18000000u;
}

int insn_branch_target(uint32_t w, uint64_t pc, uint64_t *target)
{
    if ((w & 0x7c000000u) != 0x14000000u)
        return 0;
    int64_t off = (int64_t)(int32_t)((w & 0x03ffffffu) << 6) >> 4; /* sign-extended imm26 * 4 */
    *target = pc + (uint64_t)off;
    return 1;
}

int insn_is_svc(uint32_t w)
{
    return (w & 0xffe0001fu) == 0xd4000001u; /* SVC #imm16 */
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

/* Does the instruction write memory? L is bit 22 in the exclusive, pair
 * and SIMD structure classes; single registers store only with opc 00 (or
 * 10 for a SIMD q register). */
static int is_store(uint32_t w)
{
    if (is_lse_atomic(w) || is_cas(w))
        return 1;
    int l = (w >> 22) & 1;
    if ((w & 0x38000000u) == 0x38000000u) { /* load/store register */
        unsigned opc = (w >> 22) & 3;
        return opc == 0 || ((w >> 26) & 1 && opc == 2);
    }
    if (is_literal(w))
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

/* For a load, its targets and a written-back base; for a store, a
 * written-back base and an exclusive's status; a branch writes only BL's
 * and BLR's link. Any other instruction may write its bits 0-4: a SIMD,
 * compare or system one does not always, and counting it anyway only makes
 * fewer loops look like waits. */
uint32_t insn_writes(uint32_t w)
{
    uint32_t m = 0, rt = w & 31u, rn = (w >> 5) & 31u;
    uint64_t target;
    if (insn_jump_target(w, 0, &target) || (w & 0x7c000000u) == 0x14000000u ||
        (w & 0xfe000000u) == 0xd6000000u) { /* B.cond, CBZ, TBZ; B, BL; BR, BLR, RET */
        if ((w & 0xfc000000u) == 0x94000000u || (w & 0xfffffc1fu) == 0xd63f0000u)
            m = 1u << 30;
    } else if (!insn_is_load_store(w)) {
        m = 1u << rt;
    } else {
        int store = is_store(w);
        if ((w & 0x3b200000u) == 0x38000000u && ((w >> 10) & 1))
            m |= 1u << rn; /* register, pre- or post-indexed */
        else if (is_pair(w) && ((w >> 23) & 1))
            m |= 1u << rn; /* pair, pre- or post-indexed */
        else if ((w & 0xbe800000u) == 0x0c800000u)
            m |= 1u << rn; /* SIMD structures, post-indexed */
        if (is_exclusive_or_ordered(w) && (store || is_cas(w)))
            m |= 1u << ((w >> 16) & 31u);                       /* STXR's status, CAS's old value */
        if ((!store || is_lse_atomic(w)) && !((w >> 26) & 1)) { /* into general registers */
            m |= 1u << rt;
            if (is_pair(w) || (is_exclusive_or_ordered(w) && (w & 0x00200000u)))
                m |= 1u << ((w >> 10) & 31u); /* a pair's second */
        }
    }
    return m & 0x7fffffffu;
}

uint32_t insn_address_regs(uint32_t w)
{
    if (is_literal(w))
        return 0; /* the pc's alone */
    uint32_t m = 1u << ((w >> 5) & 31u);
    if ((w & 0x3b200c00u) == 0x38200800u)
        m |= 1u << ((w >> 16) & 31u); /* register offset: the index too */
    return m & 0x7fffffffu;
}

/* A loop that may wait ends in a branch back over at most loop_bytes, stores
 * nothing but to its stack, and reads a word whose address the block leaves
 * alone: a waiter reads the same word again, while a loop that moves its
 * pointer or index (zlib's match search, a string scan) reads on. A store
 * is progress (the spin watch starts over at every one), so only such a
 * block's loads can show a spinner; its loop's earlier blocks need not. */
int insn_closes_wait_loop(const uint32_t *w, size_t n, uint64_t last_pc, uint64_t loop_bytes)
{
    uint64_t target;
    if (n == 0 || !loop_bytes || !insn_jump_target(w[n - 1], last_pc, &target) ||
        target > last_pc || target + loop_bytes < last_pc)
        return 0;
    uint32_t written = 0;
    for (size_t i = 0; i < n; i++) {
        written |= insn_writes(w[i]);
        if (insn_is_load_store(w[i]) &&
            (insn_classify(w[i]) & (INSN_STORE | INSN_SP_BASE)) == INSN_STORE)
            return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (insn_is_load_store(w[i]) && !(insn_classify(w[i]) & (INSN_STORE | INSN_SP_BASE)) &&
            !(insn_address_regs(w[i]) & written))
            return 1;
    return 0;
}

/* A loop's body as a whole, for a block that closes it with a jump back:
 * w[0..n) from the jump's target to the jump. It cannot wait if it only
 * reads addresses it moves (or nothing), makes no call and leaves by no
 * indirect branch; a store in it is progress, seen by its own block. A
 * loop too long to tell (over 128 instructions), or a call, may wait. */
int insn_loop_rereads_stack(const uint32_t *w, size_t n)
{
    if (n == 0 || n > 128)
        return 0;
    uint32_t written = 0;
    for (size_t i = 0; i < n; i++) {
        if ((w[i] & 0xfc000000u) == 0x94000000u || (w[i] & 0xfe000000u) == 0xd6000000u ||
            insn_is_svc(w[i]))
            return 0; /* a call or a syscall: points of their own */
        if (insn_is_load_store(w[i]) && (insn_classify(w[i]) & INSN_STORE))
            return 0; /* progress, or a counter kept on the stack */
        /* Another load is the spin watch's (the program's own code) or
         * moves (a scan bounded by a spilled length is no wait). */
        if (insn_is_load_store(w[i]) && !(insn_classify(w[i]) & INSN_SP_BASE))
            return 0;
        written |= insn_writes(w[i]);
    }
    for (size_t i = 0; i < n; i++)
        if (insn_is_load_store(w[i]) && !(insn_address_regs(w[i]) & written))
            return 1;
    return 0;
}

int insn_loop_may_wait(const uint32_t *w, size_t n)
{
    if (n == 0 || n > 128)
        return 1;
    uint32_t written = 0;
    for (size_t i = 0; i < n; i++) {
        if ((w[i] & 0xfc000000u) == 0x94000000u || (w[i] & 0xfe000000u) == 0xd6000000u)
            return 1; /* BL; BR, BLR, RET */
        if (insn_is_svc(w[i]))
            return 1;
        written |= insn_writes(w[i]);
    }
    for (size_t i = 0; i < n; i++)
        if (insn_is_load_store(w[i]) && !(insn_classify(w[i]) & (INSN_STORE | INSN_SP_BASE)) &&
            !(insn_address_regs(w[i]) & written))
            return 1;
    return 0;
}
