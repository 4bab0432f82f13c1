/* Internal pieces of the trace library shared by the writer, the merge, the
 * reader and the views. Nothing here is part of the public contract; the
 * byte layout it implements is documented in docs/trace-format.md. */
#ifndef WEFT_TRACE_INTERNAL_H
#define WEFT_TRACE_INTERNAL_H

#include "trace_encoding.h"
#include "trace_ltree.h"
#include "weft/trace.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* printf into a caller's error buffer (NULL/0 allowed). */
void trc_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- threads as the views name them ----
 * By weft's own id, T<i>. "-" stands for no thread (the creator of the main
 * thread: UINT32_MAX in the parent field and in THREAD_START's addr) and for
 * a guest TID the trace does not know: the tracer records 0, since host TIDs
 * differ between runs and would make equal runs' traces differ. A sentinel
 * is never printed as a number. */
typedef struct trc_label {
    char s[24];
} trc_label;

static inline trc_label trc_thread_label(uint64_t id)
{
    trc_label l = {"-"};
    if (id < UINT32_MAX)
        snprintf(l.s, sizeof l.s, "T%u", (unsigned)id);
    return l;
}

static inline trc_label trc_tid_label(uint64_t tid)
{
    trc_label l = {"-"};
    if (tid)
        snprintf(l.s, sizeof l.s, "%llu", (unsigned long long)tid);
    return l;
}

/* ---- header (trace and spool share it, only the magic differs) ---- */
/* Encode meta into a malloc'd buffer as format `version` (the level is
 * recorded from 2 on, and from 2 on the header is zero-padded up to pad_to
 * bytes if shorter); returns its length or 0 on overflow. */
size_t trc_header_encode(const weft_trace_meta *m, const char magic[8], uint32_t version,
                         uint32_t zstd_level, size_t pad_to, uint8_t **out);
/* A spool's header has this much room beyond what it needs at open, for
 * the shared objects learnt as the run goes (weft_trace_writer_set_loaded). */
#define SPOOL_OBJECTS_ROOM 768
/* Parse a complete header buffer (length already checked against header_len).
 * Returns 0 or -1 with a reason (no path) in why. */
int trc_header_parse(const uint8_t *buf, size_t len, weft_trace_meta *m, char *why, size_t whylen);
int trc_meta_copy(weft_trace_meta *dst, const weft_trace_meta *src);
void trc_meta_free(weft_trace_meta *m);
/* m's objects become copies of o[0..n) (at most WEFT_TRACE_MAX_OBJECTS). */
int trc_meta_set_objects(weft_trace_meta *m, const weft_trace_object *o, uint32_t n);

/* ---- footer ---- */
size_t trc_footer_encode(const weft_trace_summary *s, uint64_t nevents, uint64_t nblocks,
                         uint8_t **out);

/* ---- output file with checked writes ---- */
typedef struct trc_out {
    int fd;
    uint64_t off;    /* bytes written so far, buffered ones included */
    uint64_t synced; /* bytes handed to writeback early (see trc_out_flush) */
    size_t n, cap;
    int err;     /* first errno, sticky */
    bool direct; /* fd is O_DIRECT: whole blocks only until trc_out_close */
    uint8_t *buf;
} trc_out;
#define OUT_DIRECT_ALIGN 4096u
/* Output to fd through a buffer of cap bytes (a multiple of
 * OUT_DIRECT_ALIGN if fd is O_DIRECT): 0, or -1 (err = ENOMEM). */
int trc_out_init(trc_out *o, int fd, size_t cap);
void trc_out_free(trc_out *o);
void trc_out_write(trc_out *o, const void *p, size_t n);
/* Room for n <= cap bytes at the end of the buffer, to be filled in place
 * and then committed with trc_out_commit (at most n bytes). */
uint8_t *trc_out_reserve(trc_out *o, size_t n);
void trc_out_commit(trc_out *o, size_t n);
void trc_out_flush(trc_out *o);
/* Everything written, direct output's last partial block included. */
void trc_out_close(trc_out *o);
/* Full write with EINTR/partial handling; returns 0 or errno. */
int trc_write_all(int fd, const void *p, size_t n);
/* Full positional read; returns bytes read (short only at EOF) or -1. */
ssize_t trc_pread_all(int fd, void *p, size_t n, uint64_t off);

/* ---- spool index and merge (trace_merge.c) ---- */
typedef struct trc_chunk {
    /* seg 0: the chunk's header is at off in the spool; seg s: it is at
     * off in the raw bytes of the thread's segment s - 1 (below) */
    uint64_t off;
    uint32_t count, len;
    uint64_t base_time;
    uint32_t seg;
} trc_chunk;

/* Is the chunk at b (its header and k->len payload bytes there) the one
 * index entry k of `thread` names, its CRC whole? (The merge's reads of a
 * spool that may have changed since it was indexed.) */
int trc_chunk_matches(const uint8_t *b, uint32_t thread, const trc_chunk *k);
/* The whole chunk of `thread` at b (avail bytes there), its first event not
 * before prev: its length, with *c (but off and seg) and its last event's
 * time in *last; 0 if it is torn or does not verify (salvage). */
size_t trc_chunk_check(const uint8_t *b, size_t avail, uint32_t thread, uint64_t prev, trc_chunk *c,
                       uint64_t *last);

/* A segment of a thread's chunks compressed while the guest ran (docs/
 * trace-format.md, "Segments written as the threads append"): its record
 * in the spool is the trace's segment as it will be copied there. */
typedef struct trc_seg {
    uint64_t off; /* of its header in the spool */
    uint32_t comp_len, raw_len, nchunks, events;
    uint64_t first_time;
    size_t chunk0; /* its first chunk in the thread's list */
} trc_seg;

/* What a thread's events say about it: counted by the writer as it
 * appends (the index's `counted`), or by the merge as it decodes. */
typedef struct trc_thread_stats {
    uint64_t events, first, last;
    uint64_t kinds[WEFT_EV_KIND_COUNT];
    uint32_t parent; /* from THREAD_START (the creator's index, UINT32_MAX: none) */
    int32_t exit_code;
    bool exited, started;
} trc_thread_stats;

/* What a thread's start or exit says (addr: the creator's index, or the
 * exit code). */
static inline void trc_stats_note_life(trc_thread_stats *x, uint8_t kind, uint64_t addr)
{
    if (kind == WEFT_EV_THREAD_START && !x->started) {
        x->parent = addr > UINT32_MAX ? UINT32_MAX : (uint32_t)addr;
        x->started = true;
    } else if (kind == WEFT_EV_THREAD_EXIT) {
        x->exited = true;
        x->exit_code = (int32_t)addr;
    }
}

/* One event's kind, and what a thread's start or exit says. */
static inline void trc_stats_note(trc_thread_stats *x, uint8_t kind, uint64_t addr)
{
    x->kinds[kind < WEFT_EV_KIND_COUNT ? kind : 0]++;
    trc_stats_note_life(x, kind, addr);
}

typedef struct trc_thread_chunks {
    trc_chunk *v;
    size_t n, cap;
    trc_seg *segs; /* in the thread's order; its chunks point into them */
    size_t nsegs, segs_cap;
    uint64_t last_time;  /* time of the thread's last appended event */
    uint64_t events;     /* in the chunks */
    uint64_t skipped;    /* appended but not kept (skip records) */
    trc_thread_stats st; /* when the index is counted */
} trc_thread_chunks;

typedef struct trc_spool_index {
    trc_thread_chunks *threads;
    uint32_t nthreads;
    /* Every chunk's events are in its thread's st (a writer's own index;
     * salvage rebuilds one from the spool without decoding, so its is not):
     * a version 4 trace's footer then needs no decoding pass. */
    bool counted;
} trc_spool_index;

int trc_index_add(trc_spool_index *ix, uint32_t thread, const trc_chunk *c);
/* The thread's next segment (its chunks are indexed with seg = nsegs). */
int trc_index_add_seg(trc_spool_index *ix, uint32_t thread, const trc_seg *sg);
/* Count n events of thread up to last_time as appended but not kept. */
int trc_index_skip(trc_spool_index *ix, uint32_t thread, uint64_t n, uint64_t last_time);
/* Has the thread appended anything, kept or not? Then last_time is its. */
static inline bool trc_index_seen(const trc_spool_index *ix, uint32_t thread)
{
    return thread < ix->nthreads && (ix->threads[thread].events || ix->threads[thread].skipped);
}
void trc_index_free(trc_spool_index *ix);

/* Merge the spool's chunks into the canonical trace at path (via a tmp file
 * and rename). summary may be NULL (thread table rebuilt from events);
 * add_flags are or-ed into the summary flags. Returns 0 or -1 (err). */
int trc_merge_to_trace(const char *path, int spool_fd, const char *spool_path,
                       const weft_trace_meta *meta, const trc_spool_index *ix,
                       const weft_trace_summary *summary, uint32_t add_flags, bool salvage,
                       int32_t exit_status, bool durable, char *err, size_t errlen);

/* ---- live buffers (trace_live.c) ---- */
struct trc_pend_area;
typedef struct trc_live {
    int fd;
    uint8_t *map;
    size_t size;
    char *path;
    uint8_t *ready;                    /* per slot: disk space reserved */
    uint32_t areas;                    /* pending areas made (trc_live_area) */
    struct trc_pend_area **free_areas; /* given back, for the next thread */
    uint32_t nfree;
    pthread_mutex_t lock;
    bool inited; /* lock initialized */
    bool linger; /* closing leaves anonymous memory where the slots were */
} trc_live;

/* A thread's chunks waiting for their segment (trace_spool_segments.c):
 * raw[0, len) are whole chunks, and the thread had segs_before segments in
 * the spool when the first of them came. */
#define PEND_MAGIC 0x444e5057u /* "WPND" little-endian */
typedef struct trc_pend_area {
    uint32_t magic, thread;
    uint32_t segs_before, len; /* len: stored after the bytes it covers */
    uint8_t reserved[48];
    uint8_t raw[SEG_RAW_TARGET];
} trc_pend_area;

/* Create `path`.live beside the spool (identified by spool_fd); on failure
 * the writer goes on without (l->map NULL). */
void trc_live_open(trc_live *l, const char *path, int spool_fd);
weft_trace_buf *trc_live_slot(trc_live *l, unsigned slot);
/* A pending area of its own for thread (which has segs_before segments in
 * the spool), its disk space reserved; NULL if none is left or the disk is
 * full (the thread's chunks then wait in private memory). Thread-safe. */
trc_pend_area *trc_live_area(trc_live *l, uint32_t thread, uint32_t segs_before);
/* An empty area back, for another thread. */
void trc_live_area_give(trc_live *l, trc_pend_area *a);
void trc_live_close(trc_live *l, bool remove);
/* Salvage: append the events still in `path`.live's buffers to the spool
 * as chunks from *end on (advancing it), and index them; the fault note
 * too if exit_status says the run died of it. Returns 0 or -1 (I/O). */
int trc_live_salvage(const char *path, int spool_fd, trc_spool_index *ix, uint64_t *end,
                     int32_t exit_status);
void trc_live_unlink(const char *path);

/* ---- segments written as the threads append (trace_spool_segments.c) ---- */
/* Compress raw (a thread's whole chunks) with zc into the segment record at
 * z (zcap bytes): its length, or 0 if it does not fit. */
size_t trc_seg_pack(void *zc, uint8_t *z, size_t zcap, const uint8_t *raw, size_t raw_len,
                    uint32_t thread, uint32_t nchunks, uint32_t events, uint64_t first_time);
/* A zstd compression context for trc_seg_pack (NULL: out of memory). */
void *trc_seg_zctx(int level);
void trc_seg_zctx_free(void *zc);
/* A segment header's fields into *thread and sg (all but off and chunk0):
 * 0 if they are possible, -1 if not. */
int trc_seg_parse(const uint8_t *h, uint32_t *thread, trc_seg *sg);
/* Segment sg of thread from the spool into z (zcap bytes), its header
 * matching sg and its checksum right: 0, or -1. */
int trc_seg_read(int fd, const trc_seg *sg, uint32_t thread, uint8_t *z, size_t zcap);
/* The record z decompressed into raw (sg->raw_len bytes) with zd (a
 * ZSTD_DCtx): 0, or -1. */
int trc_seg_unpack(void *zd, const uint8_t *z, const trc_seg *sg, uint8_t *raw);

/* Where a closed segment goes (the writer's spool): rec is its record, sg
 * its index entry but for off; rec NULL: it could not be compressed (out
 * of memory). 0, or -1 (the sink has failed the writer). */
typedef int (*trc_seg_sink)(void *ctx, uint32_t thread, const uint8_t *rec, size_t len,
                            const trc_seg *sg);
typedef struct trc_pending trc_pending;
typedef struct trc_seg_zctx_buf {
    void *zc;
    uint8_t *z;
} trc_seg_zctx_buf;
#define TRC_ONLINE_ZCTX 8 /* idle contexts kept (about 1 MB each) */
typedef struct trc_online {
    pthread_mutex_t lock; /* th's growth, the idle contexts */
    trc_pending **th;     /* per thread, made at its first append */
    uint32_t nth;
    trc_seg_zctx_buf zc[TRC_ONLINE_ZCTX];
    uint32_t nzc;
    int level;
    trc_live *live; /* where the threads' pending areas are */
} trc_online;

/* live: the buffer file whose pending areas the threads' segments use. */
int trc_online_init(trc_online *o, int level, trc_live *live);
void trc_online_free(trc_online *o);
/* Thread's pending segment, made at its first call (NULL: out of memory). */
trc_pending *trc_online_thread(trc_online *o, uint32_t thread);
/* Add an append's chunks (chunks[i] at buf + chunks[i].off) to p, closing
 * the segment into sink first whenever the next chunk would not fit; each
 * chunk's off and seg then say where the index finds it. exited: the
 * thread's last events (THREAD_EXIT): its segment is closed and its area
 * given back. Appends of one thread must not overlap. 0, or sink's -1. */
int trc_online_add(trc_online *o, trc_pending *p, uint32_t thread, const uint8_t *buf,
                   trc_chunk *chunks, size_t nchunks, int exited, trc_seg_sink sink, void *ctx);
/* Close every thread's segment, at the end. */
int trc_online_flush(trc_online *o, trc_seg_sink sink, void *ctx);

/* ---- the reader (trace_read.c, trace_read_frames.c) ---- */
struct weft_trace {
    char *path;
    int fd;
    uint64_t size;
    uint32_t header_len;
    uint64_t footer_off;
    weft_trace_meta meta;
    weft_trace_summary summary;
    uint64_t nevents, nblocks;
    /* iteration */
    uint64_t off;   /* next block */
    weft_event *ev; /* the decoded current block */
    uint32_t nev, pos, ev_cap;
    uint8_t *blk;
    size_t blk_cap;
    trc_delta d;
    uint64_t *seq; /* per thread */
    /* version 2: the current frame, decoded, as one run per thread that
     * a heap merges back into canonical order */
    trc_frame fr;
    uint8_t *raw;
    size_t raw_cap;
    weft_event *fev;
    uint32_t fev_cap;
    uint32_t *run_pos, *run_end, *heap; /* per run; heap of run indices */
    uint64_t *run_time;                 /* per run: its next event's time */
    uint32_t nruns, runs_cap;
    uint32_t fleft;         /* events of the frame not yet delivered */
    uint64_t foff;          /* its offset, for messages */
    struct ZSTD_DCtx_s *zd; /* zstd.h's ZSTD_DCtx */
    /* version 4: per thread its segments and where its reading is; the
     * tree merging them (trace_read_segments.c) */
    struct trc_seg_cursor *sc;
    ltree lt;
    bool primed; /* every thread's first batch is decoded */
    uint64_t last_time;
    uint32_t last_thread;
    bool any, failed;
    bool footer_only; /* weft_trace_open_footer: no events, ever */
    char err[512];
};

/* A damaged block or frame at off: sets the error, returns -1. */
int trc_read_fail(weft_trace *t, uint64_t off, const char *what);
/* A frame's or segment's compressed payload after its header h (whose last
 * 4 bytes are the CRC of the rest and of the payload): read into t->blk,
 * checked, decompressed into *raw (grown to raw_len). 0, or -1 via
 * trc_read_fail. */
int trc_read_zstd_payload(weft_trace *t, uint64_t off, const uint8_t *h, size_t hdr_size,
                          uint32_t len, uint8_t **raw, size_t *raw_cap, uint32_t raw_len);
/* Version 2: frames' headers at open; the next frame; its next event. */
int trc_read_check_frames(weft_trace *t, char *why, size_t wl);
int trc_read_load_frame(weft_trace *t);
int trc_read_frame_next(weft_trace *t, weft_event *ev);
/* Version 4: segments' headers at open; the next event (1, 0 at the end,
 * or -1); what they hold. */
int trc_read_check_segments(weft_trace *t, char *why, size_t wl);
int trc_read_segment_next(weft_trace *t, weft_event *ev);
void trc_read_segments_free(weft_trace *t);

/* ---- address-keyed hash map (trace_addrmap.c) ---- */
typedef struct trc_addrmap {
    uint64_t *keys;
    uint64_t *vals;
    uint8_t *used;
    size_t cap, n;
} trc_addrmap;
/* Returns a pointer to the value slot for key, inserting 0 if absent
 * (*inserted set accordingly); NULL on allocation failure. The pointer is
 * valid until the next insertion. */
uint64_t *trc_addrmap_get(trc_addrmap *m, uint64_t key, bool *inserted);
uint64_t *trc_addrmap_find(const trc_addrmap *m, uint64_t key);
void trc_addrmap_free(trc_addrmap *m);

#endif
