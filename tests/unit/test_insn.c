/* The plugin's AArch64 decoding: the registers an instruction writes, and
 * which loop-closing blocks may wait (a spin re-reads one word) and which
 * scan (their loads' address registers change). The words were assembled
 * with GNU as; each block ends with its branch back to the first word. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "insn_decode.h"

#define X(n) (1u << (n))
#define N(a) (sizeof(a) / sizeof *(a))

/* A block at 0x1000: does it close a wait loop within 64 bytes? */
static int waits(const uint32_t *w, size_t n)
{
    return insn_closes_wait_loop(w, n, 0x1000 + 4 * (n - 1), 64);
}

static void test_writes(void **state)
{
    (void)state;
    assert_int_equal(insn_writes(0xb9400001), X(1));               /* ldr w1, [x0] */
    assert_int_equal(insn_writes(0x38401401), X(1) | X(0));        /* ldrb w1, [x0], #1 */
    assert_int_equal(insn_writes(0xf8408c61), X(1) | X(3));        /* ldr x1, [x3, #8]! */
    assert_int_equal(insn_writes(0xa8c10861), X(1) | X(2) | X(3)); /* ldp x1, x2, [x3], #16 */
    assert_int_equal(insn_writes(0x4cdf7000), X(0));               /* ld1 {v0.16b}, [x0], #16 */
    assert_int_equal(insn_writes(0xb9000041), 0);                  /* str w1, [x2] */
    assert_int_equal(insn_writes(0x8b040102), X(2));               /* add x2, x8, x4 */
    assert_int_equal(insn_writes(0x6b0a00bf), 0);     /* cmp w5, w10: the zero register */
    assert_int_equal(insn_writes(0x97ffffe8), X(30)); /* bl: the link */
    assert_int_equal(insn_writes(0x35ffffe1), 0);     /* cbnz w1 */
    assert_int_equal(insn_writes(0x54ffff61), 0);     /* b.ne */
    assert_int_equal(insn_writes(0x88dffc01), X(1));  /* ldar w1, [x0] */
    assert_int_equal(insn_address_regs(0x3867c845), X(2) | X(7)); /* ldrb w5, [x2, w7, sxtw] */
    assert_int_equal(insn_address_regs(0x18000000), 0);           /* ldr w0, <literal> */
}

static void test_waits(void **state)
{
    (void)state;
    /* glibc's pthread_spin_lock: ldr w1, [x0]; cbnz w1, back */
    static const uint32_t spin[] = {0xb9400001, 0x35ffffe1};
    assert_true(waits(spin, N(spin)));
    /* a pointer read first: ldr x1, [x19]; ldr w0, [x1]; cbz w0, back */
    static const uint32_t two[] = {0xf9400261, 0xb9400020, 0x34ffffc0};
    assert_true(waits(two, N(two)));
    /* a call in the loop: bl f; ldr w0, [x19]; cbz w0, back */
    static const uint32_t call[] = {0x97ffffe8, 0xb9400260, 0x34ffffc0};
    assert_true(waits(call, N(call)));
    /* a literal: ldr w0, <itself>; cbz w0, back */
    static const uint32_t lit[] = {0x18000000, 0x34ffffe0};
    assert_true(waits(lit, N(lit)));
    /* ldar w1, [x0]; tbnz w1, #0, back */
    static const uint32_t ldar[] = {0x88dffc01, 0x3707ffe1};
    assert_true(waits(ldar, N(ldar)));
    /* a spill to its stack is no progress: str w1, [sp, #8]; ldr w2, [x0]; cbnz w2, back */
    static const uint32_t spill[] = {0xb9000be1, 0xb9400002, 0x35ffffc2};
    assert_true(waits(spill, N(spill)));
}

static void test_scans(void **state)
{
    (void)state;
    /* zlib's longest_match, its chain: mov w4, w1; sxtw x3, w7; add x2, x8, x4;
     * ldrb w5, [x2, w7, sxtw]; cmp w5, w10; b.ne back */
    static const uint32_t chain[] = {0x2a0103e4, 0x93407ce3, 0x8b040102,
                                     0x3867c845, 0x6b0a00bf, 0x54ffff61};
    assert_false(waits(chain, N(chain)));
    /* post-indexed: ldrb w1, [x0], #1; cbnz w1, back */
    static const uint32_t scan[] = {0x38401401, 0x35ffffe1};
    assert_false(waits(scan, N(scan)));
    /* an index: ldr w2, [x0, x1, lsl #2]; add x1, x1, #1; cmp w2, #0; b.eq back */
    static const uint32_t idx[] = {0xb8617802, 0x91000421, 0x7100005f, 0x54ffffa0};
    assert_false(waits(idx, N(idx)));
    /* pre-indexed, a pair: ldr x1, [x3, #8]!; ldp x1, x2, [x3], #16 */
    static const uint32_t pre[] = {0xf8408c61, 0xb5ffffe1};
    assert_false(waits(pre, N(pre)));
    static const uint32_t pair[] = {0xa8c10861, 0xb5ffffe1};
    assert_false(waits(pair, N(pair)));
    /* a list walked: ldr x0, [x0]; cbnz x0, back */
    static const uint32_t chase[] = {0xf9400000, 0xb5ffffe0};
    assert_false(waits(chase, N(chase)));
    /* a store is progress: ldr w1, [x0]; str w1, [x2]; cbnz w1, back */
    static const uint32_t st[] = {0xb9400001, 0xb9000041, 0x35ffffc1};
    assert_false(waits(st, N(st)));
    /* only its stack read: ldr w1, [sp, #8]; cbnz w1, back */
    static const uint32_t sp[] = {0xb9400be1, 0x35ffffe1};
    assert_false(waits(sp, N(sp)));
}

static void test_branch(void **state)
{
    (void)state;
    static const uint32_t spin[] = {0xb9400001, 0x35ffffe1};
    /* no further back than allowed, and 0 allows none */
    assert_false(insn_closes_wait_loop(spin, 2, 0x1004, 2));
    assert_false(insn_closes_wait_loop(spin, 2, 0x1004, 0));
    /* forward: ldr w1, [x0]; cbnz w1, +8 */
    static const uint32_t fwd[] = {0xb9400001, 0x35000041};
    assert_false(waits(fwd, N(fwd)));
    assert_false(insn_closes_wait_loop(spin, 0, 0x1000, 64));
}

/* A loop that waits on a stack word (`while (!done);` on a local another
 * thread writes through a pointer): its loads have no callback. */
static void test_stack_rereads(void **state)
{
    (void)state;
    /* ldr w0, [sp, #12]; cbz w0, -4 */
    static const uint32_t wait[] = {0xb9400fe0, 0x34ffffe0};
    assert_true(insn_loop_rereads_stack(wait, N(wait)));
    /* a stack array scanned: ldr w1, [sp, x0, lsl #2]; add x0, x0, #1; cbnz w1, -8 */
    static const uint32_t scan[] = {0xb86079e1, 0x91000400, 0x35ffffc1};
    assert_false(insn_loop_rereads_stack(scan, N(scan)));
    /* a counter kept on the stack: ldr w1, [sp, #8]; str w1, [sp, #8]; cbnz w1, -8 */
    static const uint32_t counter[] = {0xb9400be1, 0xb9000be1, 0x35ffffc1};
    assert_false(insn_loop_rereads_stack(counter, N(counter)));
    /* a scan bounded by a spilled length: ldr w2, [sp, #12]; ldr w1, [x3, x0, lsl #2];
     * add x0, x0, #1; cbnz w2, -12 */
    static const uint32_t bounded[] = {0xb9400fe2, 0xb8607861, 0x91000400, 0x35ffffa2};
    assert_false(insn_loop_rereads_stack(bounded, N(bounded)));
    /* a heap word is the spin watch's: ldr w1, [x0]; cbnz w1, -4 */
    static const uint32_t heap[] = {0xb9400001, 0x35ffffe1};
    assert_false(insn_loop_rereads_stack(heap, N(heap)));
    /* a call in the body: points of its own */
    static const uint32_t call[] = {0xb9400fe0, 0x97ffffe8, 0x34ffffc0};
    assert_false(insn_loop_rereads_stack(call, N(call)));
    assert_false(insn_loop_rereads_stack(wait, 0));
}

/* A loop's whole body, from the jump's target to the jump (a replay counts
 * a library block closing one inline only if the body cannot wait). */
static void test_loop_bodies(void **state)
{
    (void)state;
    /* may wait: a word read again, over one block or two */
    static const uint32_t spin[] = {0xb9400001, 0x35ffffe1};
    assert_true(insn_loop_may_wait(spin, N(spin)));
    static const uint32_t two[] = {0xf9400261, 0xb9400020, 0x34ffffc0};
    assert_true(insn_loop_may_wait(two, N(two)));
    /* a store does not clear it (its own block is called back) */
    static const uint32_t st[] = {0xb9400001, 0xb9000041, 0x35ffffc1};
    assert_true(insn_loop_may_wait(st, N(st)));
    /* calls, returns, indirect branches and syscalls leave the body unknown */
    static const uint32_t call[] = {0x91000421, 0x97ffffe8, 0x35ffffc1};
    assert_true(insn_loop_may_wait(call, N(call)));
    static const uint32_t ret[] = {0x91000421, 0xd65f03c0, 0x35ffffc1};
    assert_true(insn_loop_may_wait(ret, N(ret)));
    static const uint32_t br[] = {0x91000421, 0xd61f0020, 0x35ffffc1};
    assert_true(insn_loop_may_wait(br, N(br)));
    static const uint32_t svc[] = {0x91000421, 0xd4000001, 0x35ffffc1};
    assert_true(insn_loop_may_wait(svc, N(svc)));
    /* SVC #0 and SVC #1; HVC is no syscall */
    assert_true(insn_is_svc(0xd4000001) && insn_is_svc(0xd4000021));
    assert_false(insn_is_svc(0xd4000002));
    /* too long to tell, or empty */
    uint32_t big[129];
    for (size_t i = 0; i < N(big); i++)
        big[i] = 0x91000421;
    assert_true(insn_loop_may_wait(big, N(big)));
    assert_false(insn_loop_may_wait(big, 128));
    assert_true(insn_loop_may_wait(big, 0));
    /* cannot wait: zlib's chain, scans, a list walk, registers only */
    static const uint32_t chain[] = {0x2a0103e4, 0x93407ce3, 0x8b040102,
                                     0x3867c845, 0x6b0a00bf, 0x54ffff61};
    assert_false(insn_loop_may_wait(chain, N(chain)));
    static const uint32_t scan[] = {0x38401401, 0x35ffffe1};
    assert_false(insn_loop_may_wait(scan, N(scan)));
    static const uint32_t idx[] = {0xb8617802, 0x91000421, 0x7100005f, 0x54ffffa0};
    assert_false(insn_loop_may_wait(idx, N(idx)));
    static const uint32_t chase[] = {0xf9400000, 0xb5ffffe0};
    assert_false(insn_loop_may_wait(chase, N(chase)));
    static const uint32_t regs[] = {0x91000421, 0xeb02003f, 0x54ffffc1};
    assert_false(insn_loop_may_wait(regs, N(regs)));
    /* its stack only: ldr w1, [sp, #8]; cbnz w1, back */
    static const uint32_t sp[] = {0xb9400be1, 0x35ffffe1};
    assert_false(insn_loop_may_wait(sp, N(sp)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writes),      cmocka_unit_test(test_scans),
        cmocka_unit_test(test_waits),       cmocka_unit_test(test_branch),
        cmocka_unit_test(test_loop_bodies), cmocka_unit_test(test_stack_rereads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
