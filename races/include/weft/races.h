/* weft races: a happens-before data-race detector over a weft trace.
 *
 * Vector clocks with FastTrack's epochs (Flanagan and Freund, PLDI 2009):
 * each thread has a vector clock C_t; a location keeps the epoch (clock @
 * thread) of its last write and either the epoch of its last read or, once
 * two reads are concurrent, a vector of per-thread read clocks. Two accesses
 * race when they overlap in bytes, at least one writes, not both are atomic,
 * and neither happens before the other. docs/races.md lists the
 * happens-before edges (thread creation, exit/join, futex wake -> wait,
 * acquire/release atomics), the granularity and the limits.
 *
 * Events must come in the trace's canonical order (time, thread, seq), as
 * weft_trace_next returns them. A race is reported once per unordered pair
 * of pcs, with the first instance's two accesses and how many dynamic
 * instances the checks found. */
#ifndef WEFT_RACES_H
#define WEFT_RACES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <weft/trace.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What an instruction does for synchronization, from its encoding. */
#define WEFT_INSN_KNOWN 0x1u   /* the word was read: the other bits are meaningful */
#define WEFT_INSN_ATOMIC 0x2u  /* exclusive, ordered (LDAR/STLR), LSE atomic or CAS */
#define WEFT_INSN_ACQUIRE 0x4u /* acquire (or RCpc acquire) semantics */
#define WEFT_INSN_RELEASE 0x8u /* release semantics */
#define WEFT_INSN_RMW 0x10u    /* one indivisible read-modify-write (LSE, CAS, SWP) */

/* Classify one AArch64 instruction word (little-endian value). Plain loads
 * and stores, and anything that is not a memory instruction, give
 * WEFT_INSN_KNOWN alone. */
unsigned weft_races_insn_class(uint32_t word);

/* A classifier of the instruction at pc: WEFT_INSN_* bits, 0 if unknown. */
typedef unsigned (*weft_races_classify_fn)(void *ctx, uint64_t pc);

typedef struct weft_races_config {
    /* Plain accesses to bytes that some atomic instruction of the trace
     * touches are relaxed atomics (they neither race nor synchronize): C11
     * objects are atomic or not, and relaxed atomics compile to plain LDR/STR
     * on AArch64. Takes effect for bytes seen by weft_races_prescan (or
     * analyze's first pass); 0 checks them as plain accesses. */
    int atomic_locations;
    /* Instructions: an AArch64 ELF to read the word at each atomic access's
     * pc from (acquire/release bits), or a classifier; NULL for both: every
     * atomic or exclusive access is acquire and release (acq_rel). */
    const char *binary;
    /* The run's weft_trace_meta.start_code: where a position-independent
     * binary's code was (0: at its link-time addresses). */
    uint64_t start_code;
    /* And its shared objects (weft_trace_meta's), whose GOTs are left out. */
    const weft_trace_object *objects;
    uint32_t nobjects;
    weft_races_classify_fn classify;
    void *classify_ctx;
    /* Is a plain access at pc the C library's own relaxed atomic (its
     * threads', locks' and allocator's code: weft_symbols_in_libc_sync)?
     * Then it neither races with other atomics nor synchronizes; a plain
     * access of the program to the same bytes still races with it. NULL:
     * none is. */
    int (*library_relaxed)(void *ctx, uint64_t pc);
    void *library_ctx;
    /* glibc's join: an acquire access within this many bytes of where a
     * thread's creator last wrote before the clone (the new thread's
     * descriptor) observes that thread's exit, once it has exited. */
    uint64_t join_window;
} weft_races_config;

/* atomic_locations 1, no binary, no classifier, join_window 4096. */
weft_races_config weft_races_config_default(void);
/* library_relaxed from the run's symbols (weft_symbols_in_libc_sync); syms
 * must outlive the analysis. NULL: none. */
void weft_races_config_library(weft_races_config *c, weft_symbols *syms);
/* For a run's trace (meta): its binary if readable, where the program and
 * its objects were, and the library rule from the symbols it opens, which
 * it returns (NULL without them) for weft_symbols_close after the
 * analysis. */
weft_symbols *weft_races_config_run(weft_races_config *c, const char *binary,
                                    const weft_trace_meta *m);

/* One side of a race: an access as traced. */
typedef struct weft_race_access {
    uint32_t thread;
    uint8_t kind;   /* WEFT_EV_READ, _WRITE or _RMW (an atomic write that reads is _RMW) */
    uint8_t atomic; /* 1 if atomic or exclusive */
    uint8_t size;   /* bytes accessed */
    uint64_t pc, time, seq;
    /* An access in code without a source line (the C library's free, its
     * memcpy): the thread's last recorded access with one before it, where
     * the program last was (weft_races_find_callers; usually the line
     * before the call, which itself records nothing); 0 if none. */
    uint64_t from_pc;
} weft_race_access;

/* One race: an unordered pair of pcs; `first` is the earlier access of the
 * first instance, `second` the later one, whose check found the race. */
typedef struct weft_race {
    weft_race_access first, second;
    uint64_t addr;  /* first byte both accesses of the first instance touch */
    uint64_t count; /* dynamic instances found (see docs/races.md) */
    /* The thread on whose stack addr lies (a local it shares, seen from its
     * own WEFT_EVF_LOCAL accesses), or UINT32_MAX. */
    uint32_t stack_of;
} weft_race;

typedef struct weft_races_stats {
    uint64_t events;   /* events fed */
    uint64_t accesses; /* memory accesses checked (stack accesses left out) */
    uint64_t atomics;  /* of them atomic (by instruction or by location) */
    uint64_t syncs;    /* happens-before edges that added to a thread's clock */
    uint64_t granules; /* 8-byte granules with shadow state */
    uint32_t threads;
} weft_races_stats;

typedef struct weft_races weft_races;

/* NULL cfg = defaults. Returns NULL with a one-line reason in err (binary
 * unreadable or not AArch64, out of memory). */
weft_races *weft_races_create(const weft_races_config *cfg, char *err, size_t errlen);
void weft_races_free(weft_races *d);

/* First pass, optional: marks the bytes atomic instructions touch (see
 * atomic_locations). Any order. Returns 0, or -1 when out of memory. */
int weft_races_prescan(weft_races *d, const weft_event *ev);
/* Second pass: one event in canonical order. Returns 0, or -1 with a reason
 * in weft_races_error (thread index too large, out of memory). */
int weft_races_feed(weft_races *d, const weft_event *ev);
/* Before feeding: the trace's thread table, whose creation times say which
 * of its creator's clones made each thread (a creator may clone twice
 * before its first child starts). Without it, a child takes its creator's
 * latest clone not yet taken. 0, or -1 (out of memory). */
int weft_races_threads(weft_races *d, const weft_trace_thread *th, uint32_t n);
const char *weft_races_error(const weft_races *d);

/* Both passes over a whole trace (rewound first, left at its end). Returns
 * 0, or -1 with a one-line reason in err (corrupt trace, out of memory). */
int weft_races_analyze(weft_races *d, weft_trace *t, char *err, size_t errlen);

/* After the analysis: for each race's access in code without a source
 * line, the thread's last pc with one before it (from_pc), in one more
 * pass over t when some access needs it. 0, or -1 with a reason in err. */
int weft_races_find_callers(weft_races *d, weft_trace *t, weft_symbols *syms, char *err,
                            size_t errlen);

/* Races in the order they were found. */
size_t weft_races_count(const weft_races *d);
const weft_race *weft_races_get(const weft_races *d, size_t i);
/* Distinct pcs of all races, ascending (owned by d, valid until the next
 * feed): schedule points for a replay, delay sites for the optimizer. */
size_t weft_races_pcs(weft_races *d, const uint64_t **pcs);
void weft_races_get_stats(const weft_races *d, weft_races_stats *out);

/* ---- output (docs/races.md) ------------------------------------------------ */

/* Where the report came from, for its header; fields may be NULL/0. */
typedef struct weft_races_source {
    const char *trace;
    const weft_trace_meta *meta;
    const weft_trace_summary *summary;
    int decoded; /* 1 if instructions were read from the binary */
} weft_races_source;

/* Text: a header, one paragraph per race, a summary line; symbolized when
 * syms is given. Returns 0, or -1 when writing failed. */
int weft_races_print(weft_races *d, const weft_races_source *src, weft_symbols *syms, FILE *out);

typedef enum weft_races_format { WEFT_RACES_TEXT = 0, WEFT_RACES_JSON = 1 } weft_races_format;
/* The report (text as weft_races_print, or JSON: format "weft-races",
 * version 1) to path, through a temporary file renamed over it, or to
 * stdout when path is NULL. Returns 0, or -1 with a one-line reason. */
int weft_races_write(weft_races *d, const weft_races_source *src, weft_symbols *syms,
                     weft_races_format fmt, const char *path, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
