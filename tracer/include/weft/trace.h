/* weft trace files: the record of one run on the ideal platform.
 *
 * Written by the QEMU plugin, read by every other component. The on-disk
 * layout is described in docs/trace-format.md; this header is the only way
 * other components touch it. Events come back from the reader in canonical
 * order (time, thread, seq), so two runs with the same virtual behaviour give
 * byte-identical files whatever order the host threads flushed them in. */
#ifndef WEFT_TRACE_H
#define WEFT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version 5: each thread's spool chunks in zstd-compressed segments,
 * merged by the reader, a chunk's payload in three streams (4: the same
 * with interleaved records; 3: frames of merged events, kinds counted in
 * the footer; 2: the recorded event classes in the header, FAULT events).
 * Readers accept versions 1 to 5 (docs/trace-format.md). */
#define WEFT_TRACE_VERSION 5

typedef enum weft_event_kind {
    WEFT_EV_READ = 0,
    WEFT_EV_WRITE = 1,
    WEFT_EV_RMW = 2,          /* atomic read-modify-write, exclusive pair, CAS */
    WEFT_EV_THREAD_START = 3, /* addr = creator's thread index (UINT32_MAX for main); at creation */
    WEFT_EV_THREAD_EXIT = 4,  /* addr = exit code */
    WEFT_EV_FUTEX_WAIT =
        5, /* addr = futex word; logged at entry, the next event shows the resume */
    WEFT_EV_FUTEX_WAKE = 6, /* addr = futex word; size field unused */
    WEFT_EV_SYSCALL = 7,    /* addr = syscall number */
    WEFT_EV_DELAY = 8,      /* addr = injected delay in virtual ns */
    /* A memory access that faulted and killed the guest (it did not happen):
     * addr = the faulting address, flags WEFT_EVF_FAULT_WRITE if a store.
     * Recovered from a crashed run; the thread's last event. */
    WEFT_EV_FAULT = 9,
    WEFT_EV_KIND_COUNT
} weft_event_kind;

/* Event flags. */
#define WEFT_EVF_EXCLUSIVE 0x1u   /* load/store-exclusive */
#define WEFT_EVF_ATOMIC 0x2u      /* LSE atomic or CAS */
#define WEFT_EVF_STACK 0x4u       /* access to the thread's own stack (only kept with filter=all) */
#define WEFT_EVF_FAULT_WRITE 0x8u /* FAULT: the faulting access was a store */
/* FAULT: accesses without a callback (plain loads under --record without
 * reads, stack accesses) lay between the last observed access and the
 * fault: pc is the first that could make it, a later one of its block may
 * be the access that faulted. */
#define WEFT_EVF_FAULT_NEAR 0x10u
/* An access to the thread's own stack through a pointer by the program's own
 * code (kept: the local may be shared with other threads). */
#define WEFT_EVF_LOCAL 0x20u

typedef struct weft_event {
    uint64_t time;   /* virtual ns at which the event happened */
    uint64_t seq;    /* per-thread sequence number among recorded events, from 0 */
    uint64_t addr;   /* see weft_event_kind */
    uint64_t pc;     /* guest pc of the instruction (0 if none) */
    uint32_t thread; /* thread index in creation order, 0 = main thread */
    uint8_t kind;    /* weft_event_kind */
    uint8_t size;    /* bytes accessed (1..64), 0 when not a memory access */
    uint16_t flags;  /* WEFT_EVF_* */
} weft_event;

/* How a replay's run died, where a run killed by its signal still leaves
 * it: qemu re-raises the guest's fatal signal, so such a run writes no
 * record. The tracer puts it in the record's status file, after the
 * policy's counts (pct_status), and weft replay names the place in the
 * run's verdict. Each part is whole once its magic is WEFT_RUN_END_MAGIC. */
#define WEFT_RUN_END_MAGIC 0x444e454e55525457ull /* "WTRUNEND" */
#define WEFT_RUN_END_PCS 32
typedef struct weft_run_end {
    uint64_t start_code; /* where qemu loaded the program (weft_symbols_relocate) */
    uint64_t fault_magic;
    weft_event fault; /* WEFT_EV_FAULT, as the trace has it */
    /* A thread that sent itself a signal (abort: an assertion, the C
     * library's checks), or SIGSEGV or SIGBUS for a fault the tracer could
     * not place (in a library's block counted inline: no callback says
     * which instruction ran); and the starts of the last blocks of the
     * program's own code it ran, newest first (0: none): the newest may be
     * a template of the C++ library's headers, instantiated in the program. */
    uint64_t raised_magic;
    uint32_t raised_thread, raised_signal;
    uint64_t raised_own_pcs[WEFT_RUN_END_PCS];
} weft_run_end;

typedef enum weft_trace_mode { WEFT_MODE_FREE = 0, WEFT_MODE_EXACT = 1 } weft_trace_mode;
typedef enum weft_trace_filter {
    WEFT_FILTER_NONSTACK = 0, /* default: drop accesses to the accessing thread's own stack */
    WEFT_FILTER_ALL = 1,
    WEFT_FILTER_RANGES = 2, /* only the address ranges in weft_trace_settings.ranges */
    /* nonstack, and plain accesses only on pages more than one thread touched */
    WEFT_FILTER_SHARED = 3
} weft_trace_filter;

#define WEFT_TRACE_MAX_RANGES 16

/* Event classes a trace records (weft trace --record). Dropped at the
 * source: a trace without plain reads cannot show read-write races, one
 * without plain writes has nothing for the optimizer to align. */
#define WEFT_RECORD_READS 0x1u  /* plain loads */
#define WEFT_RECORD_WRITES 0x2u /* plain stores */
#define WEFT_RECORD_SYNC 0x4u   /* atomics, exclusives, acquire/release, syscalls, threads */
#define WEFT_RECORD_ALL 0x7u
/* A lazy replay run (libaccess=loops) or a counting one (libaccess=skip): of
 * the plain loads outside the program's own code, only those of blocks
 * closing a wait loop; and none of the plain stores there. */
#define WEFT_RECORD_FEW_LIB_READS 0x8u
#define WEFT_RECORD_NO_LIB_WRITES 0x10u
#define WEFT_RECORD_FLAGS (WEFT_RECORD_ALL | WEFT_RECORD_FEW_LIB_READS | WEFT_RECORD_NO_LIB_WRITES)

typedef struct weft_trace_settings {
    uint32_t mode;         /* weft_trace_mode */
    uint32_t cpi;          /* cycles per instruction */
    uint64_t ps_per_cycle; /* picoseconds per cycle: 1000 = 1 GHz, 1 cycle = 1 ns */
    uint64_t quantum;      /* exact mode: virtual ns a PE may run ahead, 0 = none */
    uint32_t filter;       /* weft_trace_filter */
    uint32_t nranges;
    uint64_t range_lo[WEFT_TRACE_MAX_RANGES], range_hi[WEFT_TRACE_MAX_RANGES]; /* [lo, hi) */
    char policy[32]; /* scheduling policy name, "ideal" when tracing */
    uint64_t seed;   /* policy seed (0 for ideal) */
    uint32_t record; /* WEFT_RECORD_*: what was recorded (version 1 traces: all) */
} weft_trace_settings;

/* A shared object's executable mapping in the guest. */
typedef struct weft_trace_object {
    uint64_t lo, hi; /* guest addresses [lo, hi) */
    uint64_t offset; /* the file offset mapped at lo */
    char *path;      /* the host's file (the sysroot's) */
} weft_trace_object;
#define WEFT_TRACE_MAX_OBJECTS 64

typedef struct weft_trace_meta {
    weft_trace_settings settings;
    char *binary_path;    /* as given on the command line */
    uint8_t build_id[64]; /* GNU build-id note of the binary, may be empty */
    uint32_t build_id_len;
    uint32_t argc;
    char **argv;         /* argv[0..argc) of the guest */
    uint32_t version;    /* set by the reader: the file's format version */
    uint32_t zstd_level; /* set by the reader: compression level (0: none, version 1) */
    /* qemu's start_code for the run: the lowest address of the program's
     * code as loaded, which places a position-independent program
     * (weft_symbols_relocate). 0: unknown (a trace written before weft
     * recorded it, or a run that ended before its first block). */
    uint64_t start_code;
    /* The shared objects (the C library, the loader, ...) mapped executable
     * in the guest when the tracer last looked (at the first thread
     * creation and at the end): where their pcs come from. */
    uint32_t nobjects;
    weft_trace_object *objects;
} weft_trace_meta;

/* Thread table entry, one per guest thread in creation order. */
typedef struct weft_trace_thread {
    uint32_t id;         /* == index */
    uint32_t parent;     /* creator's id; UINT32_MAX for the main thread */
    uint64_t tid;        /* 0: host TIDs vary between runs, so traces leave them out */
    uint64_t start_time; /* virtual ns of creation (parent's time at clone) */
    uint64_t end_time;   /* virtual ns at exit, or at the end of the run */
    uint64_t events;     /* recorded events of this thread */
    uint64_t insns;      /* retired instructions */
    uint32_t exited;     /* 1 if the thread called exit */
    int32_t exit_code;
    /* Its events per kind (weft_event_kind), from the footer of a version 3
     * trace: a summary without reading the events. All 0 in older traces
     * (weft_trace_summary.has_kinds says which). */
    uint64_t kinds[WEFT_EV_KIND_COUNT];
} weft_trace_thread;

/* How the run ended. */
#define WEFT_TRACE_COMPLETE 0x1u  /* the writer was finished normally */
#define WEFT_TRACE_TRUNCATED 0x2u /* events end early: salvaged from a spool, or --max-events */
#define WEFT_TRACE_CRASHED 0x4u   /* the guest was killed by a signal */
#define WEFT_TRACE_TIMED_OUT 0x8u /* weft killed the guest at its time limit */
#define WEFT_TRACE_DEADLOCK 0x10u /* no thread could advance while some were blocked */
#define WEFT_TRACE_STOPPED 0x20u  /* weft stopped the run: trace size limit or disk nearly full */
#define WEFT_TRACE_LIVELOCK 0x40u /* replay: every runnable thread spun without progress */
/* The host's timing decided part of the order: a gate passed behind virtual
 * time (a stall escape), a thread that rejoined after a wait outside the
 * guest (a read that blocked) at the others' time, or a wait its timeout
 * ended. The same command may not give the same trace byte for byte. */
#define WEFT_TRACE_UNORDERED 0x80u
/* The events were not kept, only the header and the footer (whose thread
 * table, makespan and flags are the run's; its counts are zero): a
 * campaign's run whose trace nobody reads (weft_trace_writer_finish_summary). */
#define WEFT_TRACE_SUMMARY_ONLY 0x100u

typedef struct weft_trace_summary {
    uint32_t flags;         /* WEFT_TRACE_* */
    int32_t exit_status;    /* guest exit code, or -signal */
    uint64_t stall_escapes; /* times the plugin gave up waiting to avoid a qemu hang */
    uint64_t makespan;      /* virtual ns: max end_time */
    uint32_t nthreads;
    weft_trace_thread *threads;
    bool has_kinds; /* the threads' kinds[] were read from the footer */
} weft_trace_summary;

/* ---- weft's conventions (trace_conventions.c) ------------------------------------ */

/* Exit statuses of weft itself (the guest's own status is reported, not
 * returned, except by `weft trace`, see docs/errors.md). */
#define WEFT_EXIT_OK 0
#define WEFT_EXIT_FAIL 1  /* bad input or a failure while working */
#define WEFT_EXIT_USAGE 2 /* bad command line */

/* The footer's exit_status of a trace salvaged after the fact (weft
 * salvage), when nobody saw how the run ended: no signal has number 255. */
#define WEFT_EXIT_STATUS_UNKNOWN (-255)

/* One-line error on stderr, prefixed "weft: " (control characters in the
 * message, such as a newline in a quoted path, become spaces). */
void weft_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Replace control characters in s by spaces: a message that quotes its
 * input stays one line. */
void weft_one_line(char *s);
/* Monotonic wall clock, in seconds. */
double weft_now_s(void);
/* mkdir -p; 0 or -1 (prints the error). */
int weft_mkdirs(const char *path);
/* Write all n bytes to fd, across short writes and EINTR. 0, or -1 with
 * errno set (ENOSPC if the file takes no more). */
int weft_write_all(int fd, const void *buf, size_t n);
/* Does an output path name something that exists and is not a regular file
 * (a symlink such as /dev/stdout, a device, a FIFO)? A temporary beside it
 * renamed over it would replace the link or the device itself: such a path
 * is written through, in place (weft_write_atomic), or refused (a trace). */
int weft_output_in_place(const char *path);
/* An fd to write such an output: a dup of weft's stdout or stderr when the
 * path is that file (/dev/stdout, or the file stdout goes to: one offset for
 * both, nothing truncated under what weft printed), else the path opened for
 * writing. -1 with errno. */
int weft_output_open_in_place(const char *path);
/* Why a trace cannot go to such a path (the writer's and weft trace's line). */
#define WEFT_TRACE_NOT_A_FILE                                                                      \
    "not a regular file (a link, a device or a FIFO): a trace is written beside its path "         \
    "and renamed over it, so name a file"
/* Write buf to path atomically (temporary file, fsync, rename, the folder
 * fsynced), or in place where weft_output_in_place says so. 0, or -1 with a
 * one-line message in err. */
int weft_write_atomic(const char *path, const char *buf, size_t len, char *err, size_t errlen);
/* Before long work whose result goes to path: 0 if a file can be written
 * there, else -1 after one line (a folder; a folder that is missing or not
 * writable). */
int weft_check_output(const char *path);

/* ---- points files: one hex pc per line (trace_pcs.c) ------------------------ */

/* The pcs of a points file, sorted (malloc'd; other lines skipped). 0, or -1
 * with none and a one-line message in err (unreadable, out of memory). */
int weft_pcs_load(const char *path, uint64_t **pcs, size_t *n, char *err, size_t errlen);
/* Whether pc is in a sorted pcs array. */
int weft_pcs_contain(const uint64_t *pcs, size_t n, uint64_t pc);
/* Sort pcs[0..*n), drop repeats (*n shrinks) and write them to path
 * atomically. 0, or -1 with a one-line message in err. */
int weft_pcs_write(const char *path, uint64_t *pcs, size_t *n, char *err, size_t errlen);

/* ---- writing (the plugin) ------------------------------------------------ */

typedef struct weft_trace_writer weft_trace_writer;

/* Thread ids passed to append must be below this (bounds the merge tables). */
#define WEFT_TRACE_MAX_THREADS (1u << 20)

/* Start a trace at `path`. Events go to a spool file `path`.spool while the
 * guest runs; nothing appears at `path` until finish or salvage.
 * Returns NULL and fills err on failure. */
weft_trace_writer *weft_trace_writer_open(const char *path, const weft_trace_meta *meta, char *err,
                                          size_t errlen);

/* Append n events of one thread, in that thread's order. Thread-safe:
 * different threads may append concurrently (one caller per guest thread at
 * a time). seq and thread fields of the events are ignored (the reader numbers
 * events per thread). A thread's times must not decrease. Returns 0; 1 if
 * the writer has stopped at a limit (weft_trace_writer_set_limits: nothing
 * written); or -1 on I/O error or invalid events, the first error being
 * kept and reported by finish. No append may run concurrently with finish
 * or abort. */
int weft_trace_writer_append(weft_trace_writer *w, uint32_t thread, const weft_event *events,
                             size_t n);

/* Merge the spool into canonical order, write the summary, rename to `path`
 * atomically, remove the spool and free the writer. Returns 0 or -1 (err).
 * summary may be NULL; its per-thread event counts are recomputed, threads
 * missing from it are rebuilt from the events, and WEFT_TRACE_COMPLETE is
 * added to its flags. On failure the spool is kept for salvage. */
int weft_trace_writer_finish(weft_trace_writer *w, const weft_trace_summary *summary, char *err,
                             size_t errlen);

/* ---- crash-proof event buffers ----
 * A recording thread gathers events in a buffer before appending them. The
 * writer keeps these buffers in a shared file mapping (`path`.live) so that
 * when the process dies without running any exit code (qemu kills itself
 * on a guest's fatal signal, or is killed at a time limit) the events not
 * yet appended are still in the file for weft_trace_salvage. */
#define WEFT_TRACE_BUF_EVENTS 4096
#define WEFT_TRACE_BUF_SLOTS 4096

typedef struct weft_trace_buf {
    uint32_t n;      /* events in ev[]: store it (release) after writing ev[n-1] */
    uint32_t thread; /* whose events; UINT32_MAX: none */
    uint64_t base;   /* the thread's events appended to the writer before ev[0] */
    /* A faulting access noted by a signal handler: salvage adds it as the
     * thread's last event if the run died of SIGSEGV or SIGBUS and the
     * thread recorded nothing after it (fault_events == base + n). */
    uint64_t fault_seq; /* 0: none; the latest note of all threads wins */
    uint64_t fault_events;
    weft_event fault;
    uint8_t reserved[56];
    weft_event ev[WEFT_TRACE_BUF_EVENTS];
} weft_trace_buf;

/* The buffer of `slot` (< WEFT_TRACE_BUF_SLOTS), the same each time, with
 * its disk space reserved; NULL if it cannot be had (disk full, no
 * mapping): use private memory then, which a crash loses. Thread-safe. */
weft_trace_buf *weft_trace_writer_buf(weft_trace_writer *w, unsigned slot);

/* Append b's events as thread b->thread's and empty it, in the order
 * salvage relies on. Returns as weft_trace_writer_append; after 1 (stopped
 * at a limit) the buffer is left as it is, for salvage. */
int weft_trace_writer_append_buf(weft_trace_writer *w, weft_trace_buf *b);

/* Why a writer stopped accepting events. */
#define WEFT_TRACE_STOP_SIZE 1    /* the spool reached its size limit */
#define WEFT_TRACE_STOP_DISK 2    /* the file system was nearly full */
#define WEFT_TRACE_STOP_THREADS 3 /* the program started more threads than --max-threads */

/* Stop accepting events once the spool would grow past max_bytes (0: no
 * limit), or once the file system holding it has less than min_free bytes
 * free (checked at the next append and about every 64 MiB written; 0:
 * never). From
 * then on every append returns 1 without writing anything, the spool is
 * left whole for salvage, which flags the trace WEFT_TRACE_STOPPED. */
void weft_trace_writer_set_limits(weft_trace_writer *w, uint64_t max_bytes, uint64_t min_free);
/* Stop now, for a reason of the caller's (WEFT_TRACE_STOP_*), as a limit
 * stops it: nothing more is written, the spool is left for salvage. */
void weft_trace_writer_stop(weft_trace_writer *w, int why);
/* 0, or WEFT_TRACE_STOP_* once the writer stopped; *free_bytes (if not
 * NULL) gets the free space last seen. */
int weft_trace_writer_stopped(weft_trace_writer *w, uint64_t *free_bytes);
/* durable (the default): finish fsyncs the trace and its folder before and
 * after the rename, so that a machine crash cannot leave a trace whose
 * blocks never reached the disk. 0 for a trace its reader takes or
 * removes at once on the same machine (a campaign's run: weft replay
 * fsyncs the traces it keeps). */
void weft_trace_writer_set_durable(weft_trace_writer *w, int durable);
/* What is known once qemu has loaded the program (after the writer
 * opened): m's start_code and address ranges (moved with a
 * position-independent program) into the meta, and into the spool's
 * header so that a salvaged trace has them too. */
void weft_trace_writer_set_loaded(weft_trace_writer *w, const weft_trace_meta *m);
/* The process ends soon after the writer is finished, and some of its
 * threads may still write their buffers (weft_trace_writer_buf) meanwhile:
 * finishing leaves harmless memory where the buffers were instead of
 * unmapping them (in the tracer a write to an unmapped buffer was a host
 * fault, which qemu reports as the guest's SIGSEGV). */
void weft_trace_writer_set_lingering(weft_trace_writer *w);

/* As finish, but the trace keeps no event: header and footer only, flagged
 * WEFT_TRACE_SUMMARY_ONLY. The footer's thread table, makespan and flags are
 * those finish would write (its per-thread and per-kind counts are zero).
 * For a run of which only the outcome is read: decoding and re-encoding
 * the spool was a seventh of a campaign's run on a small program. */
int weft_trace_writer_finish_summary(weft_trace_writer *w, const weft_trace_summary *summary,
                                     char *err, size_t errlen);

/* Keep of each thread only its last events_per_thread events, in memory,
 * from the first append on (call it before): for a run whose events are
 * read only if it deadlocks or livelocks (a campaign's without
 * --save-trace). Each append then writes to the spool a 28-byte record of
 * what it did not keep, so that salvage still knows each thread's event
 * count and last time; finish_summary writes what it would have, and
 * finish a trace of the threads' tails, flagged WEFT_TRACE_TRUNCATED. */
void weft_trace_writer_keep_tail(weft_trace_writer *w, uint32_t events_per_thread);
/* segments (the default): each thread's chunks are compressed into the
 * trace's segments as it appends, and the spool holds those (finish copies
 * them; its size limit then counts compressed bytes). 0: the spool holds
 * raw chunks, compressed at finish (a learning run's, whose spool is read
 * where it lies and whose limit counts raw bytes). Before the first
 * append; WEFT_TRACE_ONLINE=0 in the environment also says 0. Writers
 * keeping tails and traces of versions 1 to 3 never write segments. */
void weft_trace_writer_set_segments(weft_trace_writer *w, int segments);

/* Drop the writer and its spool without producing a trace. */
void weft_trace_writer_abort(weft_trace_writer *w);

/* Turn the spool left by a run that never finished into a readable trace at
 * `path`, flagged WEFT_TRACE_TRUNCATED plus `extra_flags` (plus
 * WEFT_TRACE_STOPPED if the writer had stopped), with the thread table
 * rebuilt from the events. The events still in the threads' buffers
 * (`path`.live) are added, and for a run that died of SIGSEGV or SIGBUS
 * (exit_status -11 or -7) the faulting access noted there. Returns 0 or -1
 * (err). */
int weft_trace_salvage(const char *path, uint32_t extra_flags, int32_t exit_status, char *err,
                       size_t errlen);

/* The events of that spool (and of the buffers, as salvage takes them)
 * without making a trace: each thread's in its order, seq numbered, the
 * threads one after another. For an analysis that needs no order across
 * threads (which addresses threads share): salvage's merge, compression
 * and the reader's decoding cost ten times more. fn returns 0 to go on,
 * anything else stops the reading and is returned; else 0, or -1 (err).
 * The spool stays (with the buffered events added), for salvage. */
typedef int (*weft_spool_fn)(void *ctx, const weft_event *ev);
int weft_spool_read(const char *path, weft_spool_fn fn, void *ctx, char *err, size_t errlen);
/* WEFT_TRACE_STOP_* if path's spool ends with a stopped writer's record
 * (the run ended at a limit and was not salvaged yet), else 0. */
int weft_spool_stopped(const char *path);

/* Record how the run ended after the fact (qemu cannot tell the plugin that
 * the guest died of a signal or was killed): ORs `flags` into the summary's
 * flags and sets its exit status, rewriting the footer in place.
 * Returns 0 or -1 (err). */
int weft_trace_set_outcome(const char *path, uint32_t flags, int32_t exit_status, char *err,
                           size_t errlen);

/* ---- reading -------------------------------------------------------------- */

typedef struct weft_trace weft_trace;

/* Open and validate a trace. On failure returns NULL with a one-line reason
 * in err ("run.wtr: truncated header", "run.wtr: trace format version 7 is
 * newer than this weft supports (1)", ...; see docs/trace-format.md). */
weft_trace *weft_trace_open(const char *path, char *err, size_t errlen);
/* Open a trace for its header and footer alone (meta, summary, event
 * count), checked, without the walk over every segment that
 * weft_trace_open makes (on a real program's trace, tens of thousands of
 * reads of a file that its writer kept out of the page cache);
 * weft_trace_next on it fails. */
weft_trace *weft_trace_open_footer(const char *path, char *err, size_t errlen);
const weft_trace_meta *weft_trace_get_meta(const weft_trace *t);
const weft_trace_summary *weft_trace_get_summary(const weft_trace *t);
uint64_t weft_trace_event_count(const weft_trace *t);
/* Next event in canonical order: 1 = got one, 0 = end, -1 = corrupt (see weft_trace_error). */
int weft_trace_next(weft_trace *t, weft_event *ev);
void weft_trace_rewind(weft_trace *t);
const char *weft_trace_error(const weft_trace *t);
/* The path the trace was opened from. */
const char *weft_trace_path(const weft_trace *t);
void weft_trace_close(weft_trace *t);

const char *weft_event_kind_name(uint8_t kind); /* "read", "write", ... */
int weft_event_is_access(uint8_t kind);         /* read, write or rmw */
int weft_event_writes(uint8_t kind);            /* write or rmw */

/* ---- symbols (elfutils) ---------------------------------------------------- */

typedef struct weft_symbols weft_symbols;
weft_symbols *weft_symbols_open(const char *elf_path, char *err, size_t errlen);
/* A position-independent program runs where qemu put it: given qemu's
 * start_code for the run (weft_trace_meta.start_code, a replay record's
 * "start_code"), every lookup below takes and gives run-time addresses.
 * No effect on a fixed-address binary or with start_code 0 (unknown). */
void weft_symbols_relocate(weft_symbols *s, uint64_t start_code);
/* weft_symbols_relocate, and the run's shared objects (weft_trace_meta's
 * objects): a pc or an address outside the program is looked up in the
 * object that holds it (its function names, from its symbol table or its
 * dynamic one; its lines if it has debug info). */
void weft_symbols_place(weft_symbols *s, uint64_t start_code, const weft_trace_object *objects,
                        uint32_t n);
/* A source file of the toolchain's or the C library's (a path under
 * /usr/include, /usr/lib, /usr/aarch64-linux-gnu): a line in it says less
 * than the user's line that called or inlined it. */
int weft_source_is_system(const char *file);
/* The file name of the shared object whose code holds pc ("libc.so.6"),
 * NULL if none (weft_symbols_place): says where a pc without a symbol is. */
const char *weft_symbols_object_of(weft_symbols *s, uint64_t pc);
/* The link-time address of file offset `offset` in a loaded segment of an
 * ELF (a libelf Elf *, passed as void * to keep libelf out of this header):
 * qemu maps a shared object's offset at its run-time lo, so lo minus this
 * is the object's bias. 0, or -1 if no PT_LOAD holds it. */
int weft_elf_offset_vaddr(void *elf, uint64_t offset, uint64_t *vaddr);
/* binary's symbols placed where the run of meta had it and its objects. */
weft_symbols *weft_symbols_open_run(const char *binary, const weft_trace_meta *meta, char *err,
                                    size_t errlen);
/* Run-time address - link-time address after weft_symbols_relocate. */
int64_t weft_symbols_bias(const weft_symbols *s);
/* pc -> function and source position; strings owned by the symbols object.
 * Returns 0 if found, -1 if not (fields set to NULL/0). */
int weft_symbols_pc(weft_symbols *s, uint64_t pc, const char **function, const char **file,
                    int *line);
/* data address -> global object name and offset within it. */
int weft_symbols_data(weft_symbols *s, uint64_t addr, const char **name, uint64_t *offset);
/* data address -> how the program names it: "counter", a member or an
 * element of a global by its debug info ("C.ready", "slots[3].len"),
 * "name+8" without one, else the address in hex (then -1; 0 otherwise). */
int weft_symbols_data_name(weft_symbols *s, uint64_t addr, char *buf, size_t len);
/* The program's globals and static locals whose type is atomic (C11
 * _Atomic, std::atomic, atomic_flag), from its debug info: each(ctx,
 * run-time address, size); a non-zero return stops it and is returned. */
int weft_symbols_atomic_globals(weft_symbols *s,
                                int (*each)(void *ctx, uint64_t addr, uint64_t size), void *ctx);
/* A global data object by name: its address and size. 0 if found, -1 if not. */
int weft_symbols_lookup(weft_symbols *s, const char *name, uint64_t *addr, uint64_t *size);
/* Human name of an ELF e_machine value ("x86-64", "32-bit ARM", ...). */
const char *weft_elf_machine_name(unsigned machine);
/* Read the GNU build-id of an ELF file: returns its length (0 if none), -1 on error. */
int weft_elf_build_id(const char *elf_path, uint8_t *out, size_t outlen);
/* A function by name: its entry address and size. 0 if found, -1 if not. */
int weft_symbols_function(weft_symbols *s, const char *name, uint64_t *addr, uint64_t *size);
/* Is pc in the C library's threads, locks, condition variables, semaphores
 * or allocator, or the OpenMP runtime (by its function's name: pthread_*,
 * sem_*, malloc's, gomp_*)? Their relaxed atomics compile to plain loads and
 * stores (symbols_code.c). A stripped shared libc's or libgomp's unnamed
 * internals count as such too. */
int weft_symbols_in_libc_sync(weft_symbols *s, uint64_t pc);
void weft_symbols_close(weft_symbols *s);

/* The program's own code and its calls into the C library's
 * synchronization (symbols_code.c), in link-time addresses: a replay counts
 * what the program itself does as schedule points, not what the library
 * does inside a call (docs/replay.md, "Schedule points"). */
typedef enum weft_code_how {
    WEFT_CODE_DWARF = 0,   /* static: the debug info's compile units */
    WEFT_CODE_DYNAMIC = 1, /* dynamic: the binary's executable segments */
    WEFT_CODE_ALL = 2      /* static without debug info: cannot tell, all of it */
} weft_code_how;
typedef struct weft_sync_entry {
    uint64_t addr;    /* the function's entry (static) or its PLT stub (dynamic) */
    const char *name; /* "pthread_mutex_lock", ... */
} weft_sync_entry;
typedef struct weft_code_map {
    weft_code_how how;
    uint64_t *own_lo, *own_hi; /* the program's own code: [lo, hi) ranges */
    size_t nown;
    weft_sync_entry *sync; /* sorted by addr */
    size_t nsync;
    uint64_t text_lo;        /* lowest executable address: with qemu's start_code, the load bias */
    uint64_t plt_lo, plt_hi; /* a dynamic binary's PLT: its stubs, not the program's code */
} weft_code_map;
int weft_code_map_build(weft_symbols *s, weft_code_map *m, char *err, size_t errlen);
int weft_code_map_own(const weft_code_map *m, uint64_t pc);
/* In the PLT (a call on its way into a library)? */
int weft_code_map_plt(const weft_code_map *m, uint64_t pc);
/* The synchronization function a call to `target` enters, or NULL. */
const char *weft_code_map_sync(const weft_code_map *m, uint64_t target);
void weft_code_map_free(weft_code_map *m);

/* ---- views (weft info / weft export) --------------------------------------- */

/* One line about a finished trace: threads, events by kind, makespan,
 * wall time, size (what weft trace ends with). 0, or -1 with err. */
int weft_trace_print_summary(const char *path, double wall_s, FILE *out, char *err, size_t errlen);
/* Summary in the style of Bhattacharya et al.'s Table 1: threads, events per thread, per-variable
 * per-thread R/W pattern, cross-thread write-write pair counts. The
 * variables take two passes over the events; vars_wanted 1 computes them,
 * 0 does not, -1 only up to WEFT_INFO_VARS_AUTO_MAX events (a version 3
 * trace's thread table needs no pass; older traces are always read). */
#define WEFT_INFO_VARS_AUTO_MAX 20000000u
int weft_trace_print_info(weft_trace *t, weft_symbols *syms, int vars_wanted, FILE *out);

typedef enum weft_export_format {
    WEFT_EXPORT_CHROME = 0, /* Chrome/Perfetto trace-event JSON */
    WEFT_EXPORT_VCD = 1,    /* value change dump for GTKWave */
    WEFT_EXPORT_CSV = 2
} weft_export_format;
/* Two writes to the same address by different threads whose virtual times
 * differ by at most this many ns are shown as a conflict in the exports
 * (0 = exactly aligned, Bhattacharya et al.'s definition of an interference). */
#define WEFT_CONFLICT_WINDOW_NS 10
/* Write the export atomically to out_path (the trace is rewound first and
 * left at its end). Returns 0 or -1 (err). */
int weft_trace_export(weft_trace *t, weft_symbols *syms, weft_export_format fmt,
                      const char *out_path, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
