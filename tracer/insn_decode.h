/* Just enough AArch64 decoding for the plugin: which instructions touch
 * memory and how, where branches go, which registers an instruction may
 * write, and whether a block closes a loop that may wait. Functions of the
 * instruction words alone (no qemu), so that unit tests can hold them. */
#ifndef WEFT_INSN_DECODE_H
#define WEFT_INSN_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* insn_classify's flags (the plugin adds its own in the same word). */
#define INSN_ATOMIC 0x1u  /* exclusive, acquire/release, LSE or CAS: always a gate */
#define INSN_RMW 0x2u     /* LSE atomic or CAS: one read-modify-write event */
#define INSN_SP_BASE 0x4u /* addressed from SP: the thread's own stack */
#define INSN_STORE 0x10u  /* writes memory */

int insn_is_load_store(uint32_t w);
uint32_t insn_classify(uint32_t w); /* INSN_* above */
/* B or BL with a 26-bit word offset (a call, or a tail call at -O2): 1 and
 * its target, or 0. */
int insn_branch_target(uint32_t w, uint64_t pc, uint64_t *target);
/* A system call (SVC), whatever its immediate. */
int insn_is_svc(uint32_t w);
/* B, B.cond, CBZ/CBNZ or TBZ/TBNZ: 1 and its target, or 0. */
int insn_jump_target(uint32_t w, uint64_t pc, uint64_t *target);
/* The general registers the instruction may write, one bit each (bit 31,
 * the zero register or SP, never set). */
uint32_t insn_writes(uint32_t w);
/* The registers a load's or store's address comes from. */
uint32_t insn_address_regs(uint32_t w);
/* Do the n words of a block, the last at last_pc, close a loop that may
 * wait (see insn_decode.c)? loop_bytes: how far back its branch may go. */
int insn_closes_wait_loop(const uint32_t *w, size_t n, uint64_t last_pc, uint64_t loop_bytes);
/* May the loop whose body is w[0..n) (from a backward jump's target to the
 * jump) wait for another thread? 0 only when every load in it reads an
 * address the loop changes, and it calls nothing (see insn_decode.c). */
int insn_loop_may_wait(const uint32_t *w, size_t n);
/* Does the loop whose body is w[0..n) store nothing, call nothing, load
 * only from SP and read one stack word again and again (a load whose
 * address the loop leaves alone)? A thread waiting on its own local that
 * another thread writes through a pointer (`while (!done);`) does just
 * that. */
int insn_loop_rereads_stack(const uint32_t *w, size_t n);

#endif
