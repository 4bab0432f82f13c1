/* How a trace's bytes are laid out: magics and sizes, little-endian fields,
 * the record encoding, spool chunks and frames. Shared by the writer, the
 * merge and the readers; the layout itself is documented in
 * docs/trace-format.md. */
#ifndef WEFT_TRACE_ENCODING_H
#define WEFT_TRACE_ENCODING_H

#include "weft/trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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

#endif
