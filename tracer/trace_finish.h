/* Finishing a trace, internal to the writer: per-thread cursors over the
 * spool (trace_merge.c), frames cut from them (trace_select.c) and their
 * output (trace_frameout.c), or version 1's blocks from a k-way merge
 * (trace_blockout.c). The entry point, trc_merge_to_trace, is in
 * trace_internal.h. */
#ifndef WEFT_TRACE_FINISH_H
#define WEFT_TRACE_FINISH_H

#include "trace_internal.h"

/* ---- from spool to trace (trace_merge.c, trace_select.c) ---- */
/* One thread's position in its chunk list. */
typedef struct trc_cursor {
    size_t chunk; /* chunks loaded so far; the last one is in buf */
    uint8_t *buf; /* its header and payload */
    size_t cap;
    uint32_t left; /* records of the loaded chunk not yet decoded */
    /* Made at the thread's first chunk: 16 KiB of predictions, and a
     * spool's thread ids need not be dense (a damaged one's are anything
     * up to 2^20). */
    trc_chunk_state *d;
    trc_rec *rec;       /* version 1's decoded batch; rec[i..n) not merged yet */
    uint32_t i, n, max; /* max: capacity of rec */
    /* chunks in a segment of the spool: that segment, decompressed */
    uint8_t *seg_z, *seg_raw;
    uint32_t seg; /* loaded (as trc_chunk.seg), or 0 */
    void *zd;     /* ZSTD_DCtx */
} trc_cursor;

/* What a cursor holds (not the cursor itself). */
void trc_cursor_free(trc_cursor *c);

typedef struct trc_merge {
    int spool_fd;
    const char *spool_path;
    const trc_spool_index *ix;
    char *err;
    size_t errlen;
    trc_cursor *cur;
    trc_thread_stats *st;
} trc_merge;

/* Decode up to max of thread t's next records into out and account for
 * them in its stats: the number decoded (0: the thread is done), or -1. */
int trc_merge_decode(trc_merge *m, uint32_t t, trc_rec *out, uint32_t max);

struct frame_out;
/* Versions 2 and 3: cut the merged records into frames (each the next
 * FRAME_EVENTS in canonical order, grouped by thread) without merging
 * them one by one, and hand them to fo. 0, or -1 with m's error set. */
int trc_select_frames(trc_merge *m, struct frame_out *fo, uint64_t *nevents);

/* ---- block output (trace_blockout.c): the merge's consumer ---- */
/* One block's records in canonical order, as the merge hands them over. */
typedef struct mblock {
    uint32_t n;
    trc_rec rec[BLOCK_EVENTS];
} mblock;

/* Blocks in flight. A side that finds the ring full (or empty) sleeps until
 * half of it is free (or filled), so the threads wake each other once per
 * half ring at most, not once per block. */
#define RING_SLOTS_BLOCKS 8

typedef struct block_out {
    /* the encoder's side */
    trc_out *o;
    trc_delta d;
    uint64_t nblocks; /* written */
    /* the ring: slot[i % nslots] for i in [tail, head) are merged and
     * not encoded yet */
    mblock *slot;
    uint32_t nslots;
    uint64_t head, tail;
    bool done; /* the merge has published its last block */
    bool merge_waits, encoder_waits;
    bool threaded;
    pthread_mutex_t lock;
    pthread_cond_t wake_merge, wake_encoder;
    pthread_t thread;
} block_out;

int block_out_start(block_out *b, trc_out *o, uint32_t nthreads);
/* A free ring slot for the merge to fill, or NULL if the encoder failed. */
mblock *block_out_next(block_out *b);
void block_out_publish(block_out *b, mblock *mb);
void block_out_stop(block_out *b);
void block_out_free(block_out *b);

/* ---- frame output (trace_frameout.c): versions 2 and 3 ----
 * Frames are independent (each starts with empty predictions), so helper
 * threads encode and compress them side by side while the selector cuts
 * the next; the caller writes them in order. */
#define FRAME_ENCODERS 2
#define FRAME_SLOTS (FRAME_ENCODERS + 1) /* one more for the selector to fill */
/* Segments are small (256 KiB, under a millisecond to compress): with
 * only a slot per encoder the helpers waited on the writer's hand-offs
 * and compressed at about one core's speed between them. */
#define SEGMENT_SLOTS 16
#define OUT_SLOTS_MAX SEGMENT_SLOTS

typedef struct frame_job {
    trc_rec *rec; /* FRAME_EVENTS records, grouped by thread */
    uint32_t n;   /* records, or a segment's events */
    uint64_t base_time;
    /* version 4: the segment's chunks as spooled, and its header fields */
    uint8_t *in;
    size_t in_len;
    uint32_t thread, nchunks;
    uint8_t *z; /* frame header and compressed payload */
    size_t zcap, zlen;
    int err;
    bool encoded;
    bool ready; /* z already holds its record (a segment from the spool) */
} frame_job;

typedef struct frame_encoder {
    struct frame_out *fo;
    trc_frame fr;
    uint8_t *raw;
    void *zc; /* ZSTD_CCtx */
    pthread_t thread;
} frame_encoder;

typedef struct frame_out {
    trc_out *o;
    uint64_t nframes; /* written */
    frame_job job[OUT_SLOTS_MAX];
    uint32_t nslots; /* FRAME_SLOTS, or SEGMENT_SLOTS */
    frame_encoder enc[FRAME_ENCODERS];
    uint32_t nenc;                      /* helper threads running (0: the caller encodes) */
    bool segments;                      /* version 4: jobs are segments, not frames */
    uint64_t published, taken, written; /* frame numbers */
    bool stop;
    pthread_mutex_t lock;
    pthread_cond_t wake_enc, wake_main;
} frame_out;

/* segments: the jobs are version 4 segments (frame_out_next_segment),
 * compressed and written in the same order. */
int frame_out_start(frame_out *f, trc_out *o, uint32_t nthreads, int level, bool segments);
/* Room for the next frame's records (FRAME_EVENTS), once a slot is free. */
trc_rec *frame_out_next(frame_out *f);
/* The records in frame_out_next's room are the next frame. */
void frame_out_publish(frame_out *f, uint32_t n, uint64_t base_time);
/* Room for the next segment's chunks (SEG_RAW_MAX bytes), once a slot is
 * free; then frame_out_publish_segment with what was put there. */
uint8_t *frame_out_next_segment(frame_out *f);
void frame_out_publish_segment(frame_out *f, size_t len, uint32_t thread, uint32_t nchunks,
                               uint32_t events, uint64_t first_time);

/* Room for a record written already (zcap bytes, in *cap), once a slot is
 * free; then frame_out_publish_ready with its length. It is written in its
 * turn as it is. */
uint8_t *frame_out_next_ready(frame_out *f, size_t *cap);
void frame_out_publish_ready(frame_out *f, size_t zlen);

/* Version 4: the index's chunks, undecoded, as segments to fo in
 * canonical order (trace_segments.c). 0, or -1 with m's error set. */
int trc_write_segments(trc_merge *m, frame_out *fo, uint64_t *nevents);
/* Write every published frame and stop the helpers. */
void frame_out_stop(frame_out *f);
void frame_out_free(frame_out *f);

#endif
