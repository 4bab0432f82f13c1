/* Internal pieces of the trace library shared by the writer, the merge, the
 * reader and the views. Nothing here is part of the public contract; the
 * byte layout it implements is documented in docs/trace-format.md. */
#ifndef WEFT_TRACE_INTERNAL_H
#define WEFT_TRACE_INTERNAL_H

#include "trace_ltree.h"
#include "weft/trace.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* Magics: 8-byte ones open a file or section, 4-byte ones open a block. */
#define TRC_MAGIC "WEFTTRC\0"
#define SPOOL_MAGIC "WEFTSPL\0"
#define FOOTER_MAGIC "WEFTSUM\0"
#define TRAILER_MAGIC "WEFTEND\0"
#define BLOCK_MAGIC 0x4b4c4257u /* "WBLK" little-endian */
#define FRAME_MAGIC 0x4d524657u /* "WFRM" little-endian */
/* "WCK5": a chunk whose payload is three streams (version 5); "WCK2": one
 * interleaved stream (version 4, still read); WCHK, before predictions, is
 * not read. */
#define CHUNK_MAGIC 0x354b4357u    /* "WCK5" little-endian */
#define CHUNK_MAGIC_V4 0x324b4357u /* "WCK2" little-endian */
#define SEG_MAGIC 0x34475357u      /* "WSG4" little-endian */

#define BLOCK_HDR_SIZE 24 /* magic, count, payload_len, base_time, crc */
#define CHUNK_HDR_SIZE 28 /* magic, thread, count, payload_len, base_time, crc */
#define FRAME_HDR_SIZE 28 /* magic, count, raw_len, comp_len, base_time, crc */
#define SEG_HDR_SIZE 36   /* magic, thread, chunks, events, raw_len, comp_len, first_time, crc */
#define TRAILER_SIZE 16   /* footer offset, magic */
#define FOOTER_FIXED 56   /* footer without the thread records */
#define FOOTER_THREAD 56  /* one thread record */
/* Version 3 adds, after the thread records, u32 nkinds and per thread
 * nkinds u64 event counts (one per weft_event_kind). */
static inline size_t trc_footer_kinds_len(uint32_t nthreads)
{
    return 4 + (size_t)nthreads * WEFT_EV_KIND_COUNT * 8;
}

/* The writer cuts blocks and spool chunks at this many events; readers accept
 * up to BLOCK_MAX_EVENTS so the bound on their buffers is explicit. */
#define BLOCK_EVENTS 4096
#define BLOCK_MAX_EVENTS 65536
/* Worst case bytes of one encoded record: kind byte, thread varint (5), time
 * varint (10), size (1), flags varint (3), two zigzag varints (10 each). */
#define REC_MAX 40
#define PAYLOAD_MAX ((size_t)BLOCK_MAX_EVENTS * REC_MAX)

/* Version 2 frames: the writer cuts a frame every FRAME_EVENTS events
 * (larger frames give zstd more to match: 2^18 compress 5% better than 2^16
 * on a real program's trace), readers accept up to FRAME_MAX_EVENTS. */
#define FRAME_EVENTS (1u << 18)
#define FRAME_MAX_EVENTS (1u << 20)
#define FRAME_STREAMS 7
#define FRAME_RAW_MAX(n) (FRAME_STREAMS * 4 + (size_t)(n)*REC_MAX)
/* Version 4 segments: one thread's consecutive spool chunks, compressed
 * together. The writer adds chunks while the segment stays within
 * SEG_RAW_TARGET (a lone chunk may exceed it); 256 KiB compress within 2%
 * of 1 MiB on a real program's spool, and a reader holds one segment per
 * thread. Readers accept raw lengths up to SEG_RAW_MAX. */
#define SEG_RAW_TARGET (256u << 10)
#define SEG_RAW_MAX (SEG_RAW_TARGET + CHUNK_HDR_SIZE + PAYLOAD_MAX)
/* zstd level of version 2 traces unless WEFT_TRACE_ZSTD_LEVEL says otherwise
 * (chosen by results/bench-trace.sh: see docs/trace-format.md). */
#define TRC_ZSTD_LEVEL_DEFAULT 1
/* The level to write with: 0 = version 1 (uncompressed blocks), 1..19. */
int trc_zstd_level(void);
/* WEFT_TRACE_FRAMES=1: write version 3's frames rather than version 5's
 * segments (for comparisons: results/bench-trace.sh). */
bool trc_frames_wanted(void);

/* Make *b hold at least need bytes (its contents kept): 0, or -1. */
static inline int trc_grow(uint8_t **b, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    uint8_t *n = realloc(*b, need ? need : 1);
    if (!n)
        return -1;
    *b = n;
    *cap = need;
    return 0;
}

/* ---- little-endian fields ---- */
static inline void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static inline uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

uint32_t trc_crc32(uint32_t crc, const void *data, size_t n);

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

/* ---- record fields ----
 * The pieces of the record layout, inline because the spool encoder, the
 * merge and the reader run them once per event. */
#define REC_T 0x10u /* thread varint follows */
#define REC_F 0x20u /* flags varint follows */
#define REC_S 0x40u /* size byte follows */

static inline uint8_t *trc_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* trc_put_varint for a buffer with two bytes of room past the field (a
 * spool chunk's records, REC_MAX each, are at most 35 bytes): nearly every
 * field of a real trace is one to three bytes, written here at once with
 * the length chosen without a branch. The chunk encoder took 4% less time
 * than with the loop, whose exit mispredicts. */
static inline uint8_t *trc_put_varint_room(uint8_t *p, uint64_t v)
{
    if (v >= (1u << 21))
        return trc_put_varint(p, v);
    unsigned two = v >= 0x80, three = v >= (1u << 14);
    p[0] = (uint8_t)(v | two << 7);
    p[1] = (uint8_t)(v >> 7 | three << 7);
    p[2] = (uint8_t)(v >> 14);
    return p + 1 + two + three;
}

/* Returns the byte after the varint, or NULL if it runs past end or
 * overflows 64 bits (more than 10 bytes, or a 10th byte above 1). */
static inline const uint8_t *trc_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    if (p < end && *p < 0x80) { /* most fields are one byte */
        *v = *p;
        return p + 1;
    }
    uint64_t r = 0;
    for (unsigned i = 0; i < 10 && p + i < end; i++) {
        if (i == 9 && p[i] > 1)
            return NULL;
        r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = r;
            return p + i + 1;
        }
    }
    return NULL;
}

static inline uint64_t trc_zigzag(uint64_t delta)
{
    return (delta << 1) ^ (uint64_t)((int64_t)delta >> 63);
}

static inline uint64_t trc_unzigzag(uint64_t z)
{
    return (z >> 1) ^ (uint64_t)(-(int64_t)(z & 1));
}

/* Write one record whose deltas are already computed; thread is written
 * only if new_thread. Returns the byte after it (at most REC_MAX bytes). */
static inline uint8_t *trc_rec_put(uint8_t *p, uint8_t kind, bool new_thread, uint32_t thread,
                                   uint64_t dtime, uint8_t size, uint16_t flags, uint64_t daddr,
                                   uint64_t dpc)
{
    uint8_t *tag = p++;
    uint8_t k = kind & 0x0f;
    if (new_thread) {
        k |= REC_T;
        p = trc_put_varint(p, thread);
    }
    p = trc_put_varint(p, dtime);
    if (size) {
        k |= REC_S;
        *p++ = size;
    }
    if (flags) {
        k |= REC_F;
        p = trc_put_varint(p, flags);
    }
    p = trc_put_varint(p, trc_zigzag(daddr));
    p = trc_put_varint(p, trc_zigzag(dpc));
    *tag = k;
    return p;
}

/* ---- event records ----
 * Delta state of one block or chunk: the previous record's time and thread,
 * and per thread the previous address and pc. Slots are reset lazily with a
 * generation number so starting a block costs O(1) whatever the thread count. */
typedef struct trc_delta {
    uint64_t time;
    uint32_t thread;
    uint32_t gen;
    uint32_t nslots;
    bool single; /* spool chunk: one thread, slot 0 */
    uint32_t *slot_gen;
    uint64_t *prev_addr, *prev_pc;
} trc_delta;

/* nslots = number of thread ids the records may carry; single = one thread. */
int trc_delta_init(trc_delta *d, uint32_t nslots, bool single);
void trc_delta_free(trc_delta *d);
void trc_delta_reset(trc_delta *d, uint64_t base_time, uint32_t thread);
/* Slot of a thread, reset to zeros if not yet used in this block. */
static inline uint32_t trc_delta_slot(trc_delta *d, uint32_t thread)
{
    uint32_t s = d->single ? 0 : thread;
    if (d->slot_gen[s] != d->gen) {
        d->slot_gen[s] = d->gen;
        d->prev_addr[s] = 0;
        d->prev_pc[s] = 0;
    }
    return s;
}
/* Encode one event (its thread must be < nslots); returns bytes written (<= REC_MAX). */
size_t trc_rec_encode(trc_delta *d, uint8_t *out, const weft_event *ev);
/* Decode one event; returns bytes consumed or 0 if malformed (reason in *why). */
size_t trc_rec_decode(trc_delta *d, const uint8_t *p, const uint8_t *end, weft_event *ev,
                      const char **why);

/* ---- spool chunks ----
 * A chunk holds records of one thread only, so the merge decodes them in
 * batches without the per-record thread and slot handling above. */

/* One decoded chunk record: the event without its seq, in 32 bytes. */
typedef struct trc_rec {
    uint64_t time, addr, pc;
    uint32_t thread;
    uint8_t kind, size;
    uint16_t flags;
} trc_rec;

/* A chunk's predictions (docs/trace-format.md, "The spool"): small
 * direct-mapped tables, cleared at each chunk so that chunks decode on
 * their own, and small enough to stay in the first-level cache. A slot
 * holds both tables' entries: the next-record prediction keyed by a
 * record's pc is looked up by the record after it, in the slot where that
 * record's address prediction was just updated, so the two share a cache
 * line (as two tables 8 KiB apart, the store to one and the load from the
 * other also aliased, and the encoder took 15% longer). */
#define CHUNK_PRED_BITS 8
#define CHUNK_PRED (1u << CHUNK_PRED_BITS)
/* A predicted record's kind, size and flags in one word, so that one
 * compare checks them; bit 32 marks the slot as set. */
#define CHUNK_META(kind, size, flags)                                                              \
    ((uint64_t)(kind) | (uint64_t)(size) << 8 | (uint64_t)(flags) << 16 | 1ull << 32)
typedef struct trc_chunk_slot {
    _Alignas(64) uint64_t key;           /* after the pc `key`: */
    uint64_t pc, dt, meta;               /* the next pc, time step and CHUNK_META (0: unset) */
    uint64_t akey, addr, stride, avalid; /* the pc `akey`'s last address and stride */
} trc_chunk_slot;
typedef struct trc_chunk_pred {
    trc_chunk_slot slot[CHUNK_PRED];
} trc_chunk_pred;

/* Delta state of a chunk: its thread, that thread's previous time, addr
 * and pc, the predictions so far, and where each of its streams is read
 * (an interleaved chunk's three are one). Set up by trc_chunk_open. */
typedef struct trc_chunk_state {
    uint64_t time, addr, pc;
    uint32_t thread;
    bool split;
    const uint8_t *tag, *tag_end, *field, *field_end, *addr_at, *end;
    trc_chunk_pred pred;
} trc_chunk_state;

/* Is m a chunk's magic weft reads? */
static inline bool trc_chunk_magic_ok(uint32_t m)
{
    return m == CHUNK_MAGIC || m == CHUNK_MAGIC_V4;
}

/* Encode n >= 1 events as a chunk payload (delta state starting at
 * (ev[0].time, 0, 0)); returns its length. out must have room for
 * n * REC_MAX bytes: the encoder stages the address stream there. */
size_t trc_chunk_encode(uint8_t *out, const weft_event *ev, size_t n);
/* Start decoding the chunk whose header is at b, of thread `thread`, its
 * header already checked (count, len within what is there). Returns 0, or
 * -1 with the reason in *why (its streams do not fit). */
int trc_chunk_open(trc_chunk_state *s, const uint8_t *b, uint32_t thread, const char **why);
/* Decode the chunk's next n records into out; checks as trc_rec_decode's.
 * Returns 0, or -1 with the reason in *why. */
int trc_chunk_decode(trc_chunk_state *s, trc_rec *out, uint32_t n, const char **why);
/* Did the records decoded so far use every byte of the chunk's payload? */
static inline bool trc_chunk_consumed(const trc_chunk_state *s)
{
    return s->tag == s->tag_end && s->field == s->field_end && s->addr_at == s->end;
}

/* ---- version 2 frames (trace_frame.c) ----
 * A frame holds consecutive events in canonical order as seven byte streams
 * (tags, threads, times, sizes, flags, addresses, pcs) compressed together
 * as one zstd frame. A record is predicted from the same thread's previous
 * pc (straight-line code repeats the next pc, time step, kind, size and
 * flags) and its address from the same thread and pc's previous address
 * and stride, so what is left for zstd is mostly the addresses' real
 * entropy. The prediction tables are direct-mapped and restart with each
 * frame, so frames decode on their own. */
#define PRED_BITS 16

typedef struct trc_pred {
    uint64_t pc;   /* key: the thread's previous pc (next) or this pc (addr) */
    uint64_t a, b; /* next: pc, time step; addr: address, stride */
    uint32_t thread, gen;
    uint8_t kind, size;
    uint16_t flags;
} trc_pred;

typedef struct trc_frame {
    uint32_t nslots, gen;
    uint32_t *slot_gen;
    uint64_t *prev_pc, *prev_addr, *prev_time;
    uint64_t base_time;
    uint32_t thread; /* the previous record's */
    /* The two direct-mapped tables, each as chunks made on first use
     * (trace_frame.c): chunk pointers, then the chunks, in one mapping. */
    trc_pred **next, **addr;
    uint8_t *arena;
    size_t arena_used;
    /* streams: the encoder's buffers, or the decoder's cursors into one
     * decompressed frame */
    uint8_t *s[FRAME_STREAMS], *p[FRAME_STREAMS];
    const uint8_t *end[FRAME_STREAMS];
} trc_frame;

int trc_frame_init(trc_frame *f, uint32_t nslots);
void trc_frame_free(trc_frame *f);
void trc_frame_reset(trc_frame *f, uint64_t base_time);
/* Encoder: buffers for `events` records, then the records r[0..n). */
int trc_frame_alloc_streams(trc_frame *f, uint32_t events);
void trc_frame_put(trc_frame *f, const trc_rec *r, size_t n);
/* Lay the streams out as the frame's raw bytes in out (at most
 * FRAME_RAW_MAX(events)); returns the length and empties the streams. */
size_t trc_frame_finish(trc_frame *f, uint8_t *out);
/* Decoder: point the cursors into raw (raw_len bytes, decompressed); 0 or
 * -1 with *why. Then one call per record, and trc_frame_done at the end. */
int trc_frame_open(trc_frame *f, const uint8_t *raw, size_t raw_len, uint64_t base_time,
                   const char **why);
int trc_frame_get(trc_frame *f, weft_event *ev, const char **why);
int trc_frame_done(const trc_frame *f, const char **why);

/* A whole spool chunk (header and records) of n <= BLOCK_EVENTS events of
 * one thread into out (room for CHUNK_HDR_SIZE + n * REC_MAX); returns its
 * length. */
size_t trc_chunk_build(uint8_t *out, uint32_t thread, const weft_event *ev, size_t n);

/* A writer keeping only tails (weft_trace_writer_keep_tail) writes, for
 * each append, a record of what it did not keep, shaped like a chunk
 * header with no payload: magic, thread, count, 0, the time of the last of
 * those events, crc of bytes [0, 24). Salvage then still knows each
 * thread's event count and last time. */
#define SKIP_MAGIC 0x504b5357u /* "WSKP" little-endian */

/* The record a writer that stopped appends to its spool, for salvage. */
#define STOP_MAGIC 0x50545357u /* "WSTP" little-endian */
#define STOP_SIZE 16           /* magic, reason, crc of the first 8 bytes, 0 */

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
