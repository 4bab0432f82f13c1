/* The trace writer's state, shared by trace_write.c (appends, finish) and
 * trace_write_tail.c (the tail-keeping writer). Private to tracer/. */
#ifndef WEFT_TRACER_TRACE_WRITER_H
#define WEFT_TRACER_TRACE_WRITER_H

#include "trace_internal.h"

#include <pthread.h>

struct weft_trace_writer {
    char *path, *spool_path;
    int fd;
    uint64_t off; /* end of the spool */
    size_t spool_hdr_len;
    pthread_mutex_t lock;
    weft_trace_meta meta;
    trc_spool_index ix;
    trc_live live;
    uint64_t max_bytes, min_free, next_check, free_seen;
    bool not_durable;
    /* weft_trace_writer_keep_tail: each thread's last `tail` events, in a
     * ring per thread; the spool gets skip records only. */
    uint32_t tail;
    struct writer_tail {
        weft_event *ev; /* [tail] */
        uint64_t n;     /* appended so far: the newest is ev[(n - 1) % tail] */
    } * tails;
    uint32_t ntails;
    /* Segments compressed as the threads append (trace_spool_segments.c),
     * decided at the first append: not for tails, older versions or a
     * writer told not to (weft_trace_writer_set_segments). */
    trc_online online;
    bool online_on, mode_set, online_off;
    int stopped; /* WEFT_TRACE_STOP_*, sticky */
    bool failed; /* sticky: the first error is reported by finish */
    char errmsg[512];
};

/* Record the first failure; later appends fail fast and finish reports it.
 * Returns -1. */
int trc_writer_fail(weft_trace_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Under the lock, before len more bytes go to the spool: 0 to go on, or
 * stop for good, leaving a stop record that salvage turns into a flag. */
int trc_writer_limits_allow(weft_trace_writer *w, size_t len);
/* An append of a tail-keeping writer (weft_trace_writer_keep_tail). */
int trc_writer_tail_append(weft_trace_writer *w, uint32_t thread, const weft_event *events,
                           size_t n);
/* Finishing with events after tail appends: the tails go to the spool as
 * chunks, in a fresh index tix for the merge. */
int trc_writer_tail_chunks(weft_trace_writer *w, trc_spool_index *tix);

#endif
