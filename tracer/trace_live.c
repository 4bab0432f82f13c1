/* Crash-proof event buffers: the recording threads' buffers live in a
 * shared mapping of `path`.live, so their contents outlive a process that
 * dies without running any exit code. qemu-user does exactly that on a
 * guest's fatal signal (dump_core_and_abort re-raises the signal with the
 * default action: no atexit, no plugin callback), and a time limit's
 * SIGKILL does too.
 *
 * The file: a 4 KiB header (magic, layout, and the spool's identity so
 * that a stale file is never taken for the current run's), then
 * WEFT_TRACE_BUF_SLOTS slots of weft_trace_buf, each rounded up to whole
 * pages. It is sparse: a slot takes disk space only once used, and that
 * space is reserved (posix_fallocate) before the slot is handed out, so a
 * full disk can never turn a store into the mapping into a SIGBUS. Host
 * byte order and layout: only the same build reads it, right after. */
#include "trace_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIVE_MAGIC "WEFTLIV\0"
#define LIVE_HDR 4096
#define LIVE_HDR_USED 56 /* magic, sizes, slots, spool identity */
#define LIVE_SLOT (((sizeof(weft_trace_buf) + 4095) / 4096) * 4096)
#define LIVE_AREA (((sizeof(trc_pend_area) + 4095) / 4096) * 4096)
/* Pending areas: one per thread with chunks pending, given back when the
 * thread exits (its last segment is then in the spool). A run with more
 * threads alive at once keeps the others' pending chunks in private memory. */
#define LIVE_AREAS 4096u
#define LIVE_AREAS_AT (LIVE_HDR + (size_t)WEFT_TRACE_BUF_SLOTS * LIVE_SLOT)
#define LIVE_SIZE (LIVE_AREAS_AT + (size_t)LIVE_AREAS * LIVE_AREA)

_Static_assert(sizeof(weft_event) == 40, "weft_event is stored as is");
_Static_assert(offsetof(weft_trace_buf, ev) % 64 == 0, "events start on a cache line");

/* Which spool a buffer file belongs to: its device, inode and birth time
 * (a spool removed and made again may get the same inode number back). */
static void spool_identity(int spool_fd, uint8_t id[32])
{
    memset(id, 0, 32);
    struct statx sx;
    if (statx(spool_fd, "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &sx) != 0)
        return;
    put_u64(id, ((uint64_t)sx.stx_dev_major << 32) | sx.stx_dev_minor);
    put_u64(id + 8, sx.stx_ino);
    if (sx.stx_mask & STATX_BTIME) {
        put_u64(id + 16, (uint64_t)sx.stx_btime.tv_sec);
        put_u32(id + 24, sx.stx_btime.tv_nsec);
    }
}

static char *live_path(const char *path)
{
    size_t n = strlen(path) + 6;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s.live", path);
    return s;
}

void trc_live_unlink(const char *path)
{
    char *p = live_path(path);
    if (p)
        unlink(p);
    free(p);
}

void trc_live_open(trc_live *l, const char *path, int spool_fd)
{
    memset(l, 0, sizeof *l);
    l->fd = -1;
    pthread_mutex_init(&l->lock, NULL);
    l->inited = true;
    l->path = live_path(path);
    l->ready = calloc(WEFT_TRACE_BUF_SLOTS, 1);
    if (!l->path || !l->ready)
        return;
    l->fd = open(l->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (l->fd < 0 || ftruncate(l->fd, (off_t)LIVE_SIZE) < 0) {
        trc_live_close(l, true);
        return;
    }
    void *m = mmap(NULL, LIVE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, l->fd, 0);
    if (m == MAP_FAILED) {
        trc_live_close(l, true);
        return;
    }
    l->map = m;
    l->size = LIVE_SIZE;
    uint8_t h[LIVE_HDR_USED] = {0};
    memcpy(h, LIVE_MAGIC, 8);
    put_u32(h + 8, (uint32_t)sizeof(weft_trace_buf));
    put_u32(h + 12, (uint32_t)LIVE_SLOT);
    put_u32(h + 16, WEFT_TRACE_BUF_SLOTS);
    put_u32(h + 20, (uint32_t)LIVE_AREA);
    spool_identity(spool_fd, h + 24);
    /* Through write, not the mapping: a full disk fails here, not as SIGBUS. */
    if (trc_write_all(l->fd, h, sizeof h) != 0)
        trc_live_close(l, true);
}

/* The disk blocks of a slot, so that a full disk fails here (cleanly, taking
 * no space) and not as a SIGBUS in the guest's thread. Then written as
 * zeros: the first touch of a fallocated (unwritten) page through the
 * mapping takes the file system's read path with its readahead, which
 * cost a campaign of a small program a tenth of its time; written pages
 * are in the page cache already, and the file is removed long before they
 * would be written back. */
static int slot_allocate(int fd, off_t at, size_t size)
{
    static const uint8_t zeros[64 << 10];
    if (posix_fallocate(fd, at, (off_t)size) != 0)
        return -1;
    for (size_t done = 0; done < size;) {
        size_t n = size - done < sizeof zeros ? size - done : sizeof zeros;
        ssize_t w = pwrite(fd, zeros, n, at + (off_t)done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        done += (size_t)w;
    }
    return 0;
}

weft_trace_buf *trc_live_slot(trc_live *l, unsigned slot)
{
    if (!l->map || slot >= WEFT_TRACE_BUF_SLOTS)
        return NULL;
    weft_trace_buf *b = (weft_trace_buf *)(l->map + LIVE_HDR + (size_t)slot * LIVE_SLOT);
    pthread_mutex_lock(&l->lock);
    if (!l->ready[slot]) {
        if (slot_allocate(l->fd, (off_t)(LIVE_HDR + (size_t)slot * LIVE_SLOT), LIVE_SLOT) == 0) {
            b->thread = UINT32_MAX;
            l->ready[slot] = 1;
        } else {
            b = NULL;
        }
    }
    pthread_mutex_unlock(&l->lock);
    return b;
}

trc_pend_area *trc_live_area(trc_live *l, uint32_t thread, uint32_t segs_before)
{
    trc_pend_area *a = NULL;
    if (!l->map)
        return NULL;
    pthread_mutex_lock(&l->lock);
    if (l->nfree) {
        a = l->free_areas[--l->nfree];
    } else if (l->areas < LIVE_AREAS) {
        size_t at = LIVE_AREAS_AT + (size_t)l->areas * LIVE_AREA;
        if (slot_allocate(l->fd, (off_t)at, LIVE_AREA) == 0) {
            a = (trc_pend_area *)(l->map + at);
            l->areas++;
        }
    }
    if (a) {
        /* Empty (len 0) before it names another thread: a death in
         * between leaves an area with nothing to salvage. */
        __atomic_store_n(&a->len, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&a->thread, thread, __ATOMIC_RELEASE);
        __atomic_store_n(&a->segs_before, segs_before, __ATOMIC_RELEASE);
        __atomic_store_n(&a->magic, PEND_MAGIC, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&l->lock);
    return a;
}

void trc_live_area_give(trc_live *l, trc_pend_area *a)
{
    pthread_mutex_lock(&l->lock);
    /* Never more than were handed out: the list has room for them all. */
    if (!l->free_areas)
        l->free_areas = malloc(LIVE_AREAS * sizeof *l->free_areas);
    if (l->free_areas)
        l->free_areas[l->nfree++] = a;
    pthread_mutex_unlock(&l->lock);
}

void trc_live_close(trc_live *l, bool remove)
{
    /* Lingering: a thread of the dying process that still writes its
     * buffer writes into memory nobody reads instead of faulting. */
    if (l->map && !(l->linger && mmap(l->map, l->size, PROT_READ | PROT_WRITE,
                                      MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                                      0) != MAP_FAILED))
        munmap(l->map, l->size);
    if (l->fd >= 0)
        close(l->fd);
    if (remove && l->path)
        unlink(l->path);
    free(l->path);
    free(l->ready);
    free(l->free_areas);
    if (l->inited)
        pthread_mutex_destroy(&l->lock);
    memset(l, 0, sizeof *l);
    l->fd = -1;
}

/* ---- salvage ---- */

/* Append ev[0..n) of thread t to the spool at *end as chunks, indexed. */
static int append_chunks(int fd, trc_spool_index *ix, uint64_t *end, uint32_t t,
                         const weft_event *ev, size_t n)
{
    uint8_t *buf = malloc(CHUNK_HDR_SIZE + (size_t)BLOCK_EVENTS * REC_MAX);
    if (!buf)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i += BLOCK_EVENTS) {
        size_t cnt = n - i < BLOCK_EVENTS ? n - i : BLOCK_EVENTS;
        size_t len = trc_chunk_build(buf, t, ev + i, cnt);
        trc_chunk c = {.off = *end,
                       .count = (uint32_t)cnt,
                       .len = (uint32_t)(len - CHUNK_HDR_SIZE),
                       .base_time = ev[i].time};
        if (pwrite(fd, buf, len, (off_t)*end) != (ssize_t)len || trc_index_add(ix, t, &c) < 0) {
            rc = -1;
            break;
        }
        ix->threads[t].last_time = ev[i + cnt - 1].time;
        *end += len;
    }
    free(buf);
    return rc;
}

/* The chunks of the pending area at `at` that are not in the spool: after
 * the thread's segments there (segs_before says how many came before
 * them: more, and they are in the spool; fewer, and one is lost), and
 * after the chunks an earlier salvage appended. Appended as raw chunks. */
static int area_salvage(int fd, uint64_t at, int spool_fd, trc_spool_index *ix, uint64_t *end,
                        uint8_t *raw)
{
    uint8_t h[16];
    if (trc_pread_all(fd, h, sizeof h, at) != (ssize_t)sizeof h || get_u32(h) != PEND_MAGIC)
        return 0;
    uint32_t t = get_u32(h + 4), segs = get_u32(h + 8), len = get_u32(h + 12);
    const trc_thread_chunks *tc = t < ix->nthreads ? &ix->threads[t] : NULL;
    if (t >= WEFT_TRACE_MAX_THREADS || len > SEG_RAW_TARGET || segs != (tc ? tc->nsegs : 0) ||
        trc_pread_all(fd, raw, len, at + offsetof(trc_pend_area, raw)) != (ssize_t)len)
        return 0;
    uint64_t skip = tc ? tc->events : 0;
    for (size_t i = 0; tc && i < tc->nsegs; i++)
        skip -= tc->segs[i].events;
    for (size_t p = 0; p < len;) {
        trc_chunk c;
        uint64_t last, prev = trc_index_seen(ix, t) ? ix->threads[t].last_time : 0;
        size_t n = trc_chunk_check(raw + p, len - p, t, skip ? 0 : prev, &c, &last);
        if (!n)
            break;
        if (skip >= c.count) { /* appended already */
            skip -= c.count;
        } else if (skip) {
            break; /* not on a chunk's boundary: not the same chunks */
        } else {
            c.off = *end;
            if (pwrite(spool_fd, raw + p, n, (off_t)*end) != (ssize_t)n ||
                trc_index_add(ix, t, &c) < 0)
                return -1;
            ix->threads[t].last_time = last;
            *end += n;
        }
        p += n;
    }
    return 0;
}

/* The buffered events of one slot not already in the spool, checked like
 * an append's; returns how many of b->ev from *first on to keep. */
static size_t slot_events(const weft_trace_buf *b, const trc_spool_index *ix, size_t *first)
{
    uint32_t t = b->thread, n = b->n;
    if (t >= WEFT_TRACE_MAX_THREADS || n > WEFT_TRACE_BUF_EVENTS)
        return 0;
    uint64_t have = t < ix->nthreads ? ix->threads[t].events + ix->threads[t].skipped : 0;
    /* Fewer in the spool than the buffer follows: the spool lost a chunk
     * (torn), and events after a gap would be misnumbered. */
    if (have < b->base || have - b->base >= n)
        return 0;
    *first = (size_t)(have - b->base);
    uint64_t prev = have ? ix->threads[t].last_time : 0;
    size_t k = *first;
    for (; k < n; k++) {
        const weft_event *e = &b->ev[k];
        if (e->kind >= WEFT_EV_KIND_COUNT || e->size > 64 || e->time < prev)
            break;
        prev = e->time;
    }
    return k - *first;
}

int trc_live_salvage(const char *path, int spool_fd, trc_spool_index *ix, uint64_t *end,
                     int32_t exit_status)
{
    char *lp = live_path(path);
    int fd = lp ? open(lp, O_RDONLY | O_CLOEXEC) : -1;
    free(lp);
    if (fd < 0)
        return 0; /* none: the run never had one */
    uint8_t h[LIVE_HDR_USED], id[32];
    int rc = 0;
    weft_trace_buf *b = malloc(sizeof *b);
    spool_identity(spool_fd, id);
    if (!b || trc_pread_all(fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
        memcmp(h, LIVE_MAGIC, 8) != 0 || get_u32(h + 8) != sizeof *b ||
        get_u32(h + 12) != LIVE_SLOT || get_u32(h + 20) != LIVE_AREA ||
        memcmp(h + 24, id, sizeof id) != 0)
        goto out; /* not this run's */
    /* The pending segments' chunks first: the buffers' events follow them. */
    uint8_t *raw = malloc(SEG_RAW_TARGET);
    for (unsigned a = 0; raw && a < LIVE_AREAS && rc == 0; a++)
        rc = area_salvage(fd, LIVE_AREAS_AT + (uint64_t)a * LIVE_AREA, spool_fd, ix, end, raw);
    free(raw);
    if (rc)
        goto out;
    weft_event fault = {0};
    uint64_t fault_seq = 0;
    uint32_t fault_thread = 0;
    bool faulted = exit_status == -SIGSEGV || exit_status == -SIGBUS;
    for (unsigned s = 0; s < WEFT_TRACE_BUF_SLOTS; s++) {
        uint64_t off = LIVE_HDR + (uint64_t)s * LIVE_SLOT;
        if (trc_pread_all(fd, b, offsetof(weft_trace_buf, ev), off) !=
                (ssize_t)offsetof(weft_trace_buf, ev) ||
            b->thread == UINT32_MAX || b->thread >= WEFT_TRACE_MAX_THREADS)
            continue; /* a hole reads as zeros: thread 0, n 0, harmless */
        size_t n = b->n <= WEFT_TRACE_BUF_EVENTS ? b->n : 0, first = 0;
        if (n && trc_pread_all(fd, b->ev, n * sizeof *b->ev, off + offsetof(weft_trace_buf, ev)) !=
                     (ssize_t)(n * sizeof *b->ev))
            continue;
        size_t keep = n ? slot_events(b, ix, &first) : 0;
        if (keep && append_chunks(spool_fd, ix, end, b->thread, b->ev + first, keep) < 0) {
            rc = -1;
            goto out;
        }
        if (faulted && b->fault_seq && (!fault_seq || b->fault_seq < fault_seq) &&
            b->fault_events == b->base + n && first + keep == n) {
            fault = b->fault;
            fault_seq = b->fault_seq;
            fault_thread = b->thread;
        }
    }
    if (fault_seq && fault.kind == WEFT_EV_FAULT) {
        trc_thread_chunks *tc = fault_thread < ix->nthreads ? &ix->threads[fault_thread] : NULL;
        if (tc && trc_index_seen(ix, fault_thread) && fault.time < tc->last_time)
            fault.time = tc->last_time;
        rc = append_chunks(spool_fd, ix, end, fault_thread, &fault, 1);
    }
out:
    free(b);
    close(fd);
    return rc;
}
