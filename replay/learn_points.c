/* Learning a campaign's schedule points from profiling schedules.
 * --points visible / shared: the pcs of the accesses to shared addresses.
 * An address is shared when, in one schedule, two or more threads access
 * its 8-byte granule and one of them writes (but the main thread before its
 * first thread: granule_event); the set is the union over the
 * schedules, because which addresses a thread touches depends on the
 * interleaving (a work queue's split), and one schedule can miss the very
 * slot a race is on.
 * --points races: CHESS drives its schedule points from its race detector;
 * here the plain accesses that are points are those at the pcs weft races
 * reports in any of the schedules, instead of every access to a shared
 * address. The visible points' synchronization calls, atomics and exits
 * stay points either way. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "learn_points.h"
#include "weft/replay.h"
#include "weft/trace.h"

/* Open-addressing hash table from a 64-bit key to a small value. */
typedef struct u64_table {
    uint64_t *keys;
    uint32_t *vals;
    uint8_t *used;
    size_t cap, count;
} u64_table;

static size_t slot_of(const u64_table *t, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 17) & (t->cap - 1);
    while (t->used[i] && t->keys[i] != key)
        i = (i + 1) & (t->cap - 1);
    return i;
}

static int table_grow(u64_table *t)
{
    u64_table n = {0};
    n.cap = t->cap ? t->cap * 2 : 1024;
    n.keys = malloc(n.cap * sizeof *n.keys);
    n.vals = malloc(n.cap * sizeof *n.vals);
    n.used = calloc(n.cap, 1);
    if (!n.keys || !n.vals || !n.used) {
        free(n.keys);
        free(n.vals);
        free(n.used);
        return -1;
    }
    for (size_t i = 0; i < t->cap; i++)
        if (t->used[i]) {
            size_t j = slot_of(&n, t->keys[i]);
            n.used[j] = 1;
            n.keys[j] = t->keys[i];
            n.vals[j] = t->vals[i];
            n.count++;
        }
    free(t->keys);
    free(t->vals);
    free(t->used);
    *t = n;
    return 0;
}

/* Pointer to key's value, inserted with `init` if missing; NULL if OOM. */
static uint32_t *table_get(u64_table *t, uint64_t key, uint32_t init)
{
    if ((t->count + 1) * 2 > t->cap && table_grow(t))
        return NULL;
    size_t i = slot_of(t, key);
    if (!t->used[i]) {
        t->used[i] = 1;
        t->keys[i] = key;
        t->vals[i] = init;
        t->count++;
    }
    return &t->vals[i];
}

static const uint32_t *table_find(const u64_table *t, uint64_t key)
{
    if (!t->cap)
        return NULL;
    size_t i = slot_of(t, key);
    return t->used[i] ? &t->vals[i] : NULL;
}

static void table_free(u64_table *t)
{
    free(t->keys);
    free(t->vals);
    free(t->used);
}

/* Value of an 8-byte granule: first thread + 1 in the low 24 bits, then
 * flags. */
#define G_THREAD_MASK 0xFFFFFFu
#define G_MULTI 0x1000000u
#define G_WRITTEN 0x2000000u

struct learn_points {
    int races;
    const char *binary;
    u64_table shared; /* granules shared in some schedule (shared points) */
    u64_table pcs;    /* the points' pcs */
    uint64_t nraces;  /* race reports, summed over the schedules */
};

static int shared_access(const weft_event *ev)
{
    return weft_event_is_access(ev->kind) && !(ev->flags & WEFT_EVF_STACK) && ev->size;
}

/* Every event of a profiling run, in the order the analysis may take: the
 * trace's, or, for a learning run stopped at its limit (which weft does
 * not salvage, guest_run.leave_stopped_spool), its spool's, thread by
 * thread. 0, or -1 after one line. */
static int each_event(const char *path, weft_spool_fn fn, void *ctx)
{
    char err[512] = "", spool[PATH_MAX + 8];
    snprintf(spool, sizeof spool, "%s.spool", path);
    if (access(path, F_OK) != 0 && access(spool, F_OK) == 0) {
        int rc = weft_spool_read(path, fn, ctx, err, sizeof err);
        if (rc < 0 && err[0]) /* else fn stopped it, and said why */
            weft_error("%s", err);
        return rc < 0 ? -1 : 0;
    }
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t) {
        weft_error("%s", err);
        return -1;
    }
    weft_event ev;
    int rc, stop = 0;
    while (!stop && (rc = weft_trace_next(t, &ev)) == 1)
        stop = fn(ctx, &ev);
    if (rc < 0)
        weft_error("%s: %s", path, weft_trace_error(t));
    weft_trace_close(t);
    return rc < 0 || stop < 0 ? -1 : 0;
}

typedef struct granule_ctx {
    u64_table *g;
    int main_cloned; /* the main thread made its first thread */
} granule_ctx;

/* A run's granules: thread + 1 of the first to touch it, G_MULTI, G_WRITTEN.
 * What the main thread writes before its first clone happens before every
 * other thread's accesses (it is the only thread): data it sets up and the
 * workers only read is not shared, and its reads were points that PCT's
 * change points fell among (k 415 against 19 with --points races, 3 hits
 * of 200 against 58, on a sum of an array main filled). */
static int granule_event(void *ctx, const weft_event *ev)
{
    granule_ctx *x = ctx;
    u64_table *g = x->g;
    if (ev->thread == 0 && ev->kind == WEFT_EV_SYSCALL && (ev->addr == 220 || ev->addr == 435))
        x->main_cloned = 1; /* clone or clone3 (AArch64 numbers) */
    if (!shared_access(ev))
        return 0;
    for (uint64_t a = ev->addr >> 3; a <= (ev->addr + ev->size - 1) >> 3; a++) {
        uint32_t *v = table_get(g, a, (ev->thread & G_THREAD_MASK) + 1);
        if (!v) {
            weft_error("profiling: out of memory");
            return -1;
        }
        if ((*v & G_THREAD_MASK) != (ev->thread & G_THREAD_MASK) + 1)
            *v |= G_MULTI;
        if (weft_event_writes(ev->kind) && (ev->thread != 0 || x->main_cloned))
            *v |= G_WRITTEN;
    }
    return 0;
}

/* Add to `shared` the granules one run shows shared. */
static int mark_shared(const char *path, u64_table *shared)
{
    u64_table g = {0};
    granule_ctx x = {&g, 0};
    int rc = each_event(path, granule_event, &x);
    for (size_t i = 0; rc == 0 && i < g.cap; i++)
        if (g.used[i] && (g.vals[i] & G_MULTI) && (g.vals[i] & G_WRITTEN) &&
            !table_get(shared, g.keys[i], 1)) {
            weft_error("profiling: out of memory");
            rc = -1;
        }
    table_free(&g);
    return rc;
}

typedef struct pcs_ctx {
    const u64_table *shared;
    u64_table *pcs;
} pcs_ctx;

static int pc_event(void *ctx, const weft_event *ev)
{
    pcs_ctx *x = ctx;
    if (!shared_access(ev))
        return 0;
    for (uint64_t a = ev->addr >> 3; a <= (ev->addr + ev->size - 1) >> 3; a++)
        if (table_find(x->shared, a)) {
            if (!table_get(x->pcs, ev->pc, 1)) {
                weft_error("profiling: out of memory");
                return -1;
            }
            break;
        }
    return 0;
}

/* Add to `pcs` the pcs of one run's accesses to a shared granule. */
static int collect_pcs(const char *path, const u64_table *shared, u64_table *pcs)
{
    pcs_ctx x = {shared, pcs};
    return each_event(path, pc_event, &x);
}

/* One run of a round, learnt from by a helper thread: the granules it
 * shows shared, or (given the round's shared granules) its pcs touching
 * them. */
typedef struct learn_job {
    const char *path;
    const u64_table *shared; /* NULL: the granules */
    u64_table out;
    int rc;
} learn_job;

typedef struct learn_pool {
    learn_job *jobs;
    size_t n;
    atomic_size_t next;
} learn_pool;

static void *learn_worker(void *arg)
{
    learn_pool *pool = arg;
    for (size_t i; (i = atomic_fetch_add(&pool->next, 1)) < pool->n;) {
        learn_job *j = &pool->jobs[i];
        j->rc =
            j->shared ? collect_pcs(j->path, j->shared, &j->out) : mark_shared(j->path, &j->out);
    }
    return NULL;
}

/* The jobs on as many threads as there are cores (reading the runs one
 * after another was most of a real program's learning round, the other
 * core idle), then each one's table into `into`, in the jobs' order. 0, or
 * -1 after one line. */
static int learn_jobs(learn_job *jobs, size_t n, u64_table *into)
{
    enum { MAX_HELPERS = 63 };
    learn_pool pool = {jobs, n, 0};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t helpers = cpus > 1 ? (size_t)cpus - 1 : 0;
    if (helpers > n - 1)
        helpers = n - 1;
    if (helpers > MAX_HELPERS)
        helpers = MAX_HELPERS;
    pthread_t th[MAX_HELPERS];
    size_t started = 0;
    while (started < helpers && pthread_create(&th[started], NULL, learn_worker, &pool) == 0)
        started++;
    learn_worker(&pool);
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        rc |= jobs[i].rc;
        for (size_t s = 0; rc == 0 && s < jobs[i].out.cap; s++)
            if (jobs[i].out.used[s] && !table_get(into, jobs[i].out.keys[s], 1)) {
                weft_error("profiling: out of memory");
                rc = -1;
            }
        table_free(&jobs[i].out);
    }
    return rc ? -1 : 0;
}

/* Add to `pcs` the racy pcs of one trace. */
static int collect_race_pcs(learn_points *p, const char *path)
{
    char err[512];
    weft_races_config cfg = weft_races_config_default();
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    /* The C library's own relaxed atomics are no race here either, as in
     * weft races: a correct program's condition variables made racy points
     * (3 of a bounded buffer's 5). */
    weft_symbols *syms = t ? weft_races_config_run(&cfg, p->binary, weft_trace_get_meta(t)) : NULL;
    weft_races *d = t ? weft_races_create(&cfg, err, sizeof err) : NULL;
    if (!d || weft_races_analyze(d, t, err, sizeof err)) {
        weft_error("profiling: races: %s", err);
        if (t)
            weft_trace_close(t);
        weft_races_free(d);
        weft_symbols_close(syms);
        return -1;
    }
    weft_trace_close(t);
    const uint64_t *found;
    size_t m = weft_races_pcs(d, &found);
    int oom = 0;
    for (size_t i = 0; !oom && i < m; i++)
        oom = !table_get(&p->pcs, found[i], 1);
    p->nraces += weft_races_count(d);
    weft_races_free(d);
    weft_symbols_close(syms);
    if (oom)
        weft_error("profiling: out of memory");
    return oom ? -1 : 0;
}

learn_points *learn_points_new(int races, const char *binary)
{
    learn_points *p = calloc(1, sizeof *p);
    if (!p) {
        weft_error("profiling: out of memory");
        return NULL;
    }
    p->races = races;
    p->binary = binary;
    return p;
}

int learn_points_add(learn_points *p, const char *const *traces, size_t n, size_t *added)
{
    size_t before = p->pcs.count;
    for (size_t i = 0; p->races && i < n; i++)
        if (collect_race_pcs(p, traces[i]))
            return -1;
    learn_job *jobs = p->races || !n ? NULL : calloc(n, sizeof *jobs);
    if (!p->races && n && !jobs) {
        weft_error("profiling: out of memory");
        return -1;
    }
    /* Every granule first, so that a pc of one schedule touching a granule
     * only another schedule shows shared is kept. */
    for (size_t i = 0; jobs && i < n; i++)
        jobs[i] = (learn_job){.path = traces[i]};
    int rc = jobs ? learn_jobs(jobs, n, &p->shared) : 0;
    for (size_t i = 0; jobs && rc == 0 && i < n; i++)
        jobs[i] = (learn_job){.path = traces[i], .shared = &p->shared};
    if (jobs && rc == 0)
        rc = learn_jobs(jobs, n, &p->pcs);
    free(jobs);
    *added = p->pcs.count - before;
    return rc;
}

uint64_t learn_points_pcs(const learn_points *p)
{
    return p->pcs.count;
}

uint64_t learn_points_found(const learn_points *p)
{
    return p->races ? p->nraces : p->shared.count;
}

int learn_points_write(const learn_points *p, const char *path)
{
    uint64_t *list = malloc((p->pcs.count ? p->pcs.count : 1) * sizeof *list);
    if (!list) {
        weft_error("profiling: out of memory");
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < p->pcs.cap; i++)
        if (p->pcs.used[i])
            list[n++] = p->pcs.keys[i];
    char err[512];
    int rc = weft_pcs_write(path, list, &n, err, sizeof err);
    if (rc)
        weft_error("%s", err);
    free(list);
    return rc;
}

void learn_points_free(learn_points *p)
{
    if (!p)
        return;
    table_free(&p->shared);
    table_free(&p->pcs);
    free(p);
}
