/* Helpers shared by the race detector's unit tests: instruction words,
 * a classifier over a few made-up pcs, and a builder of event sequences in
 * canonical order. */
#ifndef WEFT_TEST_RACES_COMMON_H
#define WEFT_TEST_RACES_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weft/races.h>

/* Instruction words (assembled with aarch64-linux-gnu-as -march=armv8.4-a). */
enum {
    I_LDAR = 0xc8dffc20,
    I_STLR = 0xc89ffc20,
    I_LDXR = 0xc85f7c20,
    I_LDAXR = 0xc85ffc20,
    I_STXR = 0xc8027c20,
    I_STLXR = 0xc802fc20,
    I_CAS = 0x88a07c41,
    I_CASA = 0x88e07c41,
    I_CASL = 0x88a0fc41,
    I_CASAL = 0xc8e0fc41,
    I_LDADD = 0xf8200041,
    I_LDADDA = 0xf8a00041,
    I_LDADDL = 0xf8600041,
    I_LDADDAL = 0xb8e00041,
    I_SWPAL = 0xb8e08041,
    I_SWPL = 0xb8608041,
    I_LDAPR = 0xf8bfc020,
    I_LDR = 0xf9400020,
    I_STR = 0xf9000020,
    I_LDP = 0xa9400440,
    I_CASP = 0x48207c82,
    I_CASPAL = 0x4860fc82,
    I_LDAXP = 0xc87f8440,
    I_STLURB = 0x19000020,
    I_LDAPUR = 0xd9400020,
    I_ADD = 0x8b020020,
    I_STADD = 0xf820005f,
};

/* ---- building event sequences ------------------------------------------------ */

/* pcs of the instructions the classifier knows; every other pc is a plain
 * access that is never looked up. */
#define PC_INSN 0x10000u
#define PC(word_index) (PC_INSN + 4u * (word_index))
static const uint32_t insn_words[] = {I_LDAR, I_STLR, I_LDXR,  I_STXR,
                                      I_CASA, I_SWPL, I_LDADD, I_LDADDAL};
enum { P_LDAR, P_STLR, P_LDXR, P_STXR, P_CASA, P_SWPL, P_LDADD, P_LDADDAL };

static inline unsigned classify(void *ctx, uint64_t pc)
{
    (void)ctx;
    if (pc < PC_INSN || (pc - PC_INSN) / 4 >= sizeof insn_words / sizeof *insn_words)
        return 0;
    return weft_races_insn_class(insn_words[(pc - PC_INSN) / 4]);
}

typedef struct seqb {
    weft_event ev[256];
    size_t n;
    uint64_t time;
    uint64_t seq[8];
} seqb;

/* Events get increasing times, so list order is canonical order. */
static inline void add(seqb *b, uint32_t t, uint8_t kind, uint64_t addr, uint8_t size, uint64_t pc,
                       uint16_t flags)
{
    assert_true(b->n < 256);
    b->time += 10;
    b->ev[b->n++] = (weft_event){.time = b->time,
                                 .seq = b->seq[t]++,
                                 .addr = addr,
                                 .pc = pc,
                                 .thread = t,
                                 .kind = kind,
                                 .size = size,
                                 .flags = flags};
}
static inline void rd(seqb *b, uint32_t t, uint64_t addr, uint8_t size, uint64_t pc)
{
    add(b, t, WEFT_EV_READ, addr, size, pc, 0);
}
static inline void wr(seqb *b, uint32_t t, uint64_t addr, uint8_t size, uint64_t pc)
{
    add(b, t, WEFT_EV_WRITE, addr, size, pc, 0);
}
/* An atomic access the way the tracer records it: exclusive and ordered
 * loads and stores (and CAS) as reads or writes flagged exclusive, LSE
 * atomics as rmw flagged atomic. */
static inline void atom(seqb *b, uint32_t t, uint64_t addr, int which)
{
    switch (which) {
    case P_LDAR:
    case P_LDXR:
        add(b, t, WEFT_EV_READ, addr, 8, PC(which), WEFT_EVF_EXCLUSIVE);
        break;
    case P_STLR:
    case P_STXR:
    case P_CASA:
        add(b, t, WEFT_EV_WRITE, addr, 4, PC(which), WEFT_EVF_EXCLUSIVE);
        break;
    default:
        add(b, t, WEFT_EV_RMW, addr, 8, PC(which), WEFT_EVF_ATOMIC);
    }
}
static inline void spawn(seqb *b, uint32_t parent, uint32_t child)
{
    add(b, parent, WEFT_EV_SYSCALL, 220, 0, 0, 0);
    add(b, child, WEFT_EV_THREAD_START, parent, 0, 0, 0);
}
static inline void start_main(seqb *b)
{
    add(b, 0, WEFT_EV_THREAD_START, UINT32_MAX, 0, 0, 0);
}

static inline weft_races *run_cfg(const seqb *b, const weft_races_config *cfg)
{
    char err[256];
    weft_races *d = weft_races_create(cfg, err, sizeof err);
    assert_non_null(d);
    for (size_t i = 0; i < b->n; i++)
        assert_int_equal(weft_races_prescan(d, &b->ev[i]), 0);
    for (size_t i = 0; i < b->n; i++)
        assert_int_equal(weft_races_feed(d, &b->ev[i]), 0);
    return d;
}

static inline weft_races *run(const seqb *b)
{
    weft_races_config cfg = weft_races_config_default();
    cfg.classify = classify;
    return run_cfg(b, &cfg);
}

static inline size_t count_races(const seqb *b)
{
    weft_races *d = run(b);
    size_t n = weft_races_count(d);
    weft_races_free(d);
    return n;
}

/* Does some race pair pcs a and b? */
static inline int has_pair(weft_races *d, uint64_t a, uint64_t b)
{
    for (size_t i = 0; i < weft_races_count(d); i++) {
        const weft_race *r = weft_races_get(d, i);
        if ((r->first.pc == a && r->second.pc == b) || (r->first.pc == b && r->second.pc == a))
            return 1;
    }
    return 0;
}

#define X 0x500000u /* a shared variable */
#define Y 0x500100u
#define PD 0x7f0000u /* where the creator sets up a thread's descriptor */

#endif
