/* Version 4: the spool's chunks into the trace as they are.
 *
 * Versions 2 and 3 decode every spooled record and encode it again into
 * frames in canonical order; on a real program that was most of the time
 * `weft trace` spent after the guest exited (pigz -p4, 4 MB: 4.6 of 7.9 s,
 * both cores busy). A chunk already holds one thread's consecutive events,
 * delta-encoded and checksummed, so a version 4 trace keeps them: each
 * thread's chunks, in its order, are grouped into segments of about
 * SEG_RAW_TARGET bytes, which are compressed side by side (frame_out) and
 * written in canonical order, by (first time, thread, position in the
 * thread). Readers merge the threads (trace_read_segments.c).
 *
 * The bytes depend only on each thread's events and on where its appends
 * cut them into chunks, never on how the host threads interleaved their
 * appends in the spool. Nothing is decoded to write them; the footer's
 * counts come from the writer's index (trc_spool_index.counted), or from
 * one decoding pass when salvage rebuilt the index (trace_merge.c). */
#include "trace_finish.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct seg_plan {
    uint64_t first_time;
    uint32_t thread;
    uint32_t chunk0, nchunks; /* in the thread's chunk list */
    uint32_t events;
    uint32_t len;   /* chunk headers and payloads */
    int64_t stored; /* its segment in the spool (the thread's segs[stored]), or -1 */
} seg_plan;

static int plan_cmp(const void *a, const void *b)
{
    const seg_plan *x = a, *y = b;
    if (x->first_time != y->first_time)
        return x->first_time < y->first_time ? -1 : 1;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->chunk0 < y->chunk0 ? -1 : x->chunk0 > y->chunk0;
}

/* Every segment, in canonical order: *n of them in *out (malloc'd), 0; or
 * -1 with m's error set. */
static int make_plan(trc_merge *m, seg_plan **out, size_t *n)
{
    const trc_spool_index *ix = m->ix;
    size_t cap = 0, k = 0;
    seg_plan *p = NULL;
    for (uint32_t t = 0; t < ix->nthreads; t++) {
        const trc_thread_chunks *tc = &ix->threads[t];
        for (size_t c = 0; c < tc->n;) {
            if (k == cap) {
                cap = cap ? 2 * cap : 64;
                seg_plan *v = realloc(p, cap * sizeof *v);
                if (!v) {
                    free(p);
                    trc_seterr(m->err, m->errlen, "%s: out of memory", m->spool_path);
                    return -1;
                }
                p = v;
            }
            seg_plan *s = &p[k++];
            *s = (seg_plan){
                .first_time = tc->v[c].base_time, .thread = t, .chunk0 = (uint32_t)c, .stored = -1};
            if (tc->v[c].seg) { /* compressed as the thread appended: copied as it is */
                const trc_seg *sg = &tc->segs[tc->v[c].seg - 1];
                if (tc->v[c].seg > tc->nsegs || sg->chunk0 != c || c + sg->nchunks > tc->n) {
                    free(p);
                    trc_seterr(m->err, m->errlen,
                               "%s: thread %u: segment %u does not match its chunks", m->spool_path,
                               t, tc->v[c].seg);
                    return -1;
                }
                *s = (seg_plan){.first_time = sg->first_time,
                                .thread = t,
                                .chunk0 = (uint32_t)c,
                                .nchunks = sg->nchunks,
                                .events = sg->events,
                                .len = sg->raw_len,
                                .stored = tc->v[c].seg - 1};
                c += sg->nchunks;
                continue;
            }
            while (c < tc->n) {
                size_t len = CHUNK_HDR_SIZE + (size_t)tc->v[c].len;
                if (tc->v[c].seg || len > SEG_RAW_MAX ||
                    (s->nchunks && s->len + len > SEG_RAW_TARGET))
                    break;
                s->len += (uint32_t)len;
                s->events += tc->v[c].count;
                s->nchunks++;
                c++;
            }
            if (!s->nchunks) { /* cannot happen: the writer's chunks are smaller */
                free(p);
                trc_seterr(m->err, m->errlen, "%s: chunk of %u bytes too large for a segment",
                           m->spool_path, tc->v[c].len);
                return -1;
            }
        }
    }
    if (k)
        qsort(p, k, sizeof *p, plan_cmp);
    *out = p;
    *n = k;
    return 0;
}

/* The segment's chunks from the spool into buf, checked against the index
 * as the merge checks them (the spool may have been damaged meanwhile). */
static int read_chunks(trc_merge *m, const seg_plan *s, uint8_t *buf)
{
    const trc_chunk *v = m->ix->threads[s->thread].v;
    uint8_t *p = buf;
    for (uint32_t i = 0; i < s->nchunks; i++) {
        const trc_chunk *k = &v[s->chunk0 + i];
        size_t need = CHUNK_HDR_SIZE + (size_t)k->len;
        ssize_t r = trc_pread_all(m->spool_fd, p, need, k->off);
        if (r < 0) {
            trc_seterr(m->err, m->errlen, "%s: read failed: %s", m->spool_path, strerror(errno));
            return -1;
        }
        if ((size_t)r != need || !trc_chunk_matches(p, s->thread, k)) {
            trc_seterr(m->err, m->errlen, "%s: chunk at offset %llu changed on disk", m->spool_path,
                       (unsigned long long)k->off);
            return -1;
        }
        p += need;
    }
    return 0;
}

int trc_write_segments(trc_merge *m, frame_out *fo, uint64_t *nevents)
{
    size_t n = 0;
    seg_plan *plan = NULL;
    if (make_plan(m, &plan, &n) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const seg_plan *s = &plan[i];
        if (s->stored >= 0) {
            const trc_seg *sg = &m->ix->threads[s->thread].segs[s->stored];
            size_t cap;
            uint8_t *z = frame_out_next_ready(fo, &cap);
            if (trc_seg_read(m->spool_fd, sg, s->thread, z, cap) < 0) {
                trc_seterr(m->err, m->errlen, "%s: segment at offset %llu changed on disk",
                           m->spool_path, (unsigned long long)sg->off);
                rc = -1;
                break;
            }
            frame_out_publish_ready(fo, SEG_HDR_SIZE + (size_t)sg->comp_len);
            *nevents += s->events;
            continue;
        }
        uint8_t *buf = frame_out_next_segment(fo);
        if (read_chunks(m, s, buf) < 0) {
            rc = -1;
            break;
        }
        frame_out_publish_segment(fo, s->len, s->thread, s->nchunks, s->events, s->first_time);
        *nevents += s->events;
    }
    free(plan);
    return rc;
}
