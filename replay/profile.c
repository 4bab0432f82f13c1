/* Profiling runs before a replay (as Shuttle and Fray learn their bounds):
 *  - with --points shared, a trace of the program on the ideal platform
 *    (exact mode, no policy) gives the addresses accessed by two or more
 *    threads with at least one write; the pcs of the accesses to them
 *    become the schedule points;
 *  - a run under sched=random, seed 0, with the same points, gives the step
 *    budget k (its schedule points) and the thread count n. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

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

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int shared_access(const weft_event *ev)
{
    return weft_event_is_access(ev->kind) && !(ev->flags & WEFT_EVF_STACK) && ev->size;
}

/* The pcs of accesses to shared granules of the trace, into `path`. */
static int write_shared_pcs(const char *trace_path, const char *path, uint64_t *npcs,
                            uint64_t *naddrs)
{
    char err[512];
    weft_trace *t = weft_trace_open(trace_path, err, sizeof err);
    if (!t) {
        weft_error("%s", err);
        return -1;
    }
    u64_table g = {0}, pcs = {0};
    weft_event ev;
    int rc, oom = 0;
    while (!oom && (rc = weft_trace_next(t, &ev)) == 1) {
        if (!shared_access(&ev))
            continue;
        for (uint64_t a = ev.addr >> 3; a <= (ev.addr + ev.size - 1) >> 3; a++) {
            uint32_t *v = table_get(&g, a, (ev.thread & G_THREAD_MASK) + 1);
            if (!v) {
                oom = 1;
                break;
            }
            if ((*v & G_THREAD_MASK) != (ev.thread & G_THREAD_MASK) + 1)
                *v |= G_MULTI;
            if (weft_event_writes(ev.kind))
                *v |= G_WRITTEN;
        }
    }
    uint64_t shared = 0;
    for (size_t i = 0; i < g.cap; i++)
        if (g.used[i] && (g.vals[i] & G_MULTI) && (g.vals[i] & G_WRITTEN))
            shared++;
    weft_trace_rewind(t);
    while (!oom && (rc = weft_trace_next(t, &ev)) == 1) {
        if (!shared_access(&ev))
            continue;
        for (uint64_t a = ev.addr >> 3; a <= (ev.addr + ev.size - 1) >> 3; a++) {
            const uint32_t *v = table_find(&g, a);
            if (v && (*v & G_MULTI) && (*v & G_WRITTEN)) {
                if (!table_get(&pcs, ev.pc, 1))
                    oom = 1;
                break;
            }
        }
    }
    if (rc < 0)
        weft_error("%s", weft_trace_error(t));
    weft_trace_close(t);
    table_free(&g);
    if (oom || rc < 0) {
        if (oom)
            weft_error("profiling: out of memory");
        table_free(&pcs);
        return -1;
    }
    uint64_t *list = malloc((pcs.count ? pcs.count : 1) * sizeof *list);
    size_t n = 0;
    for (size_t i = 0; list && i < pcs.cap; i++)
        if (pcs.used[i])
            list[n++] = pcs.keys[i];
    table_free(&pcs);
    if (!list) {
        weft_error("profiling: out of memory");
        return -1;
    }
    qsort(list, n, sizeof *list, cmp_u64);
    size_t cap = n * 20 + 1, len = 0;
    char *buf = malloc(cap);
    for (size_t i = 0; buf && i < n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%" PRIx64 "\n", list[i]);
    free(list);
    if (!buf || weft_write_atomic(path, buf, len, err, sizeof err)) {
        weft_error("%s", buf ? err : "out of memory");
        free(buf);
        return -1;
    }
    free(buf);
    *npcs = n;
    *naddrs = shared;
    return 0;
}

/* Run the guest under the tracer with these plugin args, stdout and stderr
 * into files (as in replays). */
static int profile_run(const replay_config *c, const char *args, const char *trace, const char *dir,
                       guest_result *r, uint32_t *flags)
{
    char out[PATH_MAX + 32], errf[PATH_MAX + 32];
    snprintf(out, sizeof out, "%s/profile.stdout", dir);
    snprintf(errf, sizeof errf, "%s/profile.stderr", dir);
    guest_run run = c->run;
    run.plugin_args = args;
    run.timeout_s = c->timeout;
    /* The shared-points profile is a plain exact trace; the policy's is not. */
    run.speculate = !strncmp(args, "mode=exact,", 11) && !strstr(args, "sched=");
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    FILE *fo = fopen(out, "w"), *fe = fopen(errf, "w");
    if (so < 0 || se < 0 || !fo || !fe) {
        weft_error("%s: %s", dir, strerror(errno));
        return -1;
    }
    dup2(fileno(fo), 1);
    dup2(fileno(fe), 2);
    fclose(fo);
    fclose(fe);
    int rc = guest_trace_run(&run, trace, r, flags);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    if (rc != 0 || r->end == GUEST_INTERRUPTED) {
        if (rc != 0)
            weft_error("profiling run failed (its stderr is in %s)", errf);
        return -1;
    }
    /* A run killed at the time limit still has its trace: what it did
     * until then is what the profile learns (the caller says so). */
    if (r->end == GUEST_TIMED_OUT && access(trace, R_OK) != 0) {
        weft_error("profiling run timed out after %u s and left no trace: give --steps and "
                   "--threads, or a longer --timeout",
                   c->timeout);
        return -1;
    }
    unlink(out);
    unlink(errf);
    return 0;
}

/* A run killed by a signal leaves no plugin record: count its schedule
 * points from the trace (syscalls, atomics, and the plain accesses that are
 * points), and its threads. */
static int estimate_steps(const replay_config *c, const char *trace, uint64_t *steps,
                          uint64_t *threads)
{
    char err[512];
    weft_trace *t = weft_trace_open(trace, err, sizeof err);
    if (!t) {
        weft_error("profiling run: %s", err);
        return -1;
    }
    uint64_t *pcs = NULL;
    size_t npcs = 0;
    if (c->points == POINTS_SHARED || c->points == POINTS_PCS)
        replay_pcs_load(c->pcs_path, &pcs, &npcs); /* unreadable: no plain-access point counted */
    weft_event ev;
    uint64_t n = 0;
    while (weft_trace_next(t, &ev) == 1) {
        if (ev.kind == WEFT_EV_SYSCALL || ev.kind == WEFT_EV_FUTEX_WAIT ||
            ev.kind == WEFT_EV_FUTEX_WAKE || ev.kind == WEFT_EV_RMW ||
            (weft_event_is_access(ev.kind) && (ev.flags & (WEFT_EVF_ATOMIC | WEFT_EVF_EXCLUSIVE))))
            n++;
        else if (weft_event_is_access(ev.kind) && !(ev.flags & WEFT_EVF_STACK) &&
                 (c->points == POINTS_ALL ||
                  (npcs && bsearch(&ev.pc, pcs, npcs, sizeof *pcs, cmp_u64))))
            n++;
    }
    *steps = n;
    *threads = weft_trace_get_summary(t)->nthreads;
    weft_trace_close(t);
    free(pcs);
    return 0;
}

static const char *outcome(const guest_result *r, uint32_t flags, char *buf, size_t len)
{
    if (r->end == GUEST_TIMED_OUT)
        snprintf(buf, len, "it was killed at --timeout, its trace so far used");
    else if (flags & WEFT_TRACE_LIVELOCK)
        snprintf(buf, len, "it livelocked");
    else if (flags & WEFT_TRACE_DEADLOCK)
        snprintf(buf, len, "it deadlocked");
    else if (r->end == GUEST_SIGNALED)
        snprintf(buf, len, "it died of signal %d", r->status);
    else if (r->status != 0)
        snprintf(buf, len, "it exited with status %d", r->status);
    else
        buf[0] = 0;
    return buf;
}

/* One run under the random policy with seed `seed` and the campaign's
 * points: its steps and threads (from the plugin's record, or counted from
 * its trace when it died before writing one). */
static int profile_counts(const replay_config *c, uint64_t seed, const char *dir, uint64_t *steps,
                          uint64_t *threads, int *estimated, char *note, size_t notelen)
{
    char trace[PATH_MAX + 32], record[PATH_MAX + 32], args[PATH_MAX * 4];
    snprintf(trace, sizeof trace, "%s/profile.wtr", dir);
    snprintf(record, sizeof record, "%s/profile.json", dir);
    unlink(record);
    replay_config p = *c;
    p.kind = PCT_KIND_RANDOM;
    p.k = 0;
    p.n = 0;
    p.starvation = -1;
    p.host_parallel = 0;
    if (replay_plugin_args(&p, seed, args, sizeof args))
        return -1;
    size_t al = strlen(args);
    snprintf(args + al, sizeof args - al, ",out=%s,record=%s", trace, record);
    guest_result r;
    uint32_t flags = 0;
    if (profile_run(c, args, trace, dir, &r, &flags))
        return -1;
    json_t *rec = r.end == GUEST_TIMED_OUT ? NULL : json_load_file(record, 0, NULL);
    unlink(record);
    *estimated = !rec;
    if (rec) {
        *steps = (uint64_t)json_integer_value(json_object_get(rec, "steps"));
        *threads = (uint64_t)json_integer_value(json_object_get(rec, "threads"));
        json_decref(rec);
    } else if (estimate_steps(c, trace, steps, threads)) {
        return -1;
    }
    unlink(trace);
    outcome(&r, flags, note, notelen);
    return 0;
}

/* The shared-access pcs (--points shared, visible, races) from one
 * profiling trace, written to out_dir/points.pcs. 0, or -1 after one
 * line. */
static int profile_points(replay_config *c, const char *dir)
{
    char trace[PATH_MAX + 32], args[PATH_MAX * 4], note[64];
    snprintf(trace, sizeof trace, "%s/profile.wtr", dir);
    guest_result r;
    uint32_t flags = 0;
    /* Which pcs touch an address two threads use is a matter of
     * address sets, but which addresses a thread touches can depend on
     * the interleaving (a work queue's split): the trace is that of one
     * schedule, the random policy's seed 0 with the program's visible
     * operations as points, so that it is the same on every machine and
     * costs one replay, not an exact trace. The first 64 MB of events
     * are enough to see them (the run is then stopped, flagged so): a
     * real program's profile costs a fraction of one of its schedules,
     * and a guest that spins for the whole time limit does not write
     * gigabytes here. */
    snprintf(args, sizeof args, "sched=random,seed=0,depth=1,points=visible,maxsize=%llu,out=%s",
             64ull << 20, trace);
    double t0 = weft_now_s();
    if (profile_run(c, args, trace, dir, &r, &flags))
        return -1;
    snprintf(c->pcs_path, sizeof c->pcs_path, "%s/points.pcs", c->out_dir);
    uint64_t naddrs = 0;
    if (c->race_points ? replay_race_pcs(trace, c->run.binary, c->pcs_path, &c->npcs, &naddrs)
                       : write_shared_pcs(trace, c->pcs_path, &c->npcs, &naddrs))
        return -1;
    /* --save-trace keeps the schedule the points come from. */
    char kept[PATH_MAX + 32];
    snprintf(kept, sizeof kept, "%s/profile.wtr", c->out_dir);
    if (!c->save_trace || rename(trace, kept) != 0)
        unlink(trace);
    if (c->race_points)
        printf("weft: profiling trace: %" PRIu64 " race%s (weft races), %" PRIu64
               " instruction%s in them -> %s (%.2f s)%s%s\n",
               naddrs, naddrs == 1 ? "" : "s", c->npcs, c->npcs == 1 ? "" : "s", c->pcs_path,
               weft_now_s() - t0, outcome(&r, flags, note, sizeof note)[0] ? "; note: " : "", note);
    else
        printf("weft: profiling trace: %" PRIu64 " shared address%s (8-byte granules "
               "accessed by 2+ threads, 1+ write), %" PRIu64
               " instruction%s touching them -> %s (%.2f s)%s%s\n",
               naddrs, naddrs == 1 ? "" : "es", c->npcs, c->npcs == 1 ? "" : "s", c->pcs_path,
               weft_now_s() - t0, outcome(&r, flags, note, sizeof note)[0] ? "; note: " : "", note);
    return 0;
}

/* k and n: the largest counts of a few runs under the random policy
 * (seeds 0, 1, ...), since a run of another schedule may take more steps
 * than one profiling run did; the campaign's runs that still take more are
 * counted in its summary. 0, or -1 after one line. */
static int profile_k_n(replay_config *c, const char *dir)
{
    uint64_t runs = c->profile_runs ? c->profile_runs : 1, kmax = 0, nmax = 0;
    char seen[256] = "", note[64];
    size_t sl = 0;
    int any_estimated = 0;
    double t0 = weft_now_s();
    for (uint64_t s = 0; s < runs; s++) {
        uint64_t steps = 0, threads = 0;
        int estimated = 0;
        if (profile_counts(c, s, dir, &steps, &threads, &estimated, note, sizeof note))
            return -1;
        any_estimated |= estimated;
        kmax = steps > kmax ? steps : kmax;
        nmax = threads > nmax ? threads : nmax;
        if (sl < sizeof seen - 24)
            sl += (size_t)snprintf(seen + sl, sizeof seen - sl, "%s%" PRIu64, s ? ", " : "", steps);
    }
    if (!c->k) {
        c->k = kmax ? kmax : 1;
        snprintf(c->k_source, sizeof c->k_source,
                 "the largest of %" PRIu64 " profiling runs' steps", runs);
    }
    if (!c->n)
        c->n = nmax ? nmax : 1;
    printf("weft: profiling: %" PRIu64 " run%s (random, seeds 0..%" PRIu64 ", points %s) took %s "
           "steps, up to %" PRIu64 " threads -> k = %" PRIu64 ", n = %" PRIu64 " (%.2f s)%s%s%s\n",
           runs, runs == 1 ? "" : "s", runs - 1,
           c->race_points ? "races" : replay_points_name(c->points), seen, nmax, c->k, c->n,
           weft_now_s() - t0,
           any_estimated ? "; counted from a trace: a run died before the plugin wrote its record"
                         : "",
           note[0] ? "; note: the last " : "", note);
    return 0;
}

int replay_profile(replay_config *c)
{
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/tmp", c->out_dir);
    if (weft_mkdirs(dir))
        return -1;
    if ((c->points == POINTS_SHARED || (c->points == POINTS_VISIBLE && !c->pcs_path[0])) &&
        profile_points(c, dir))
        return -1;
    if (c->k && c->n)
        return 0;
    return profile_k_n(c, dir);
}
