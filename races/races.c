/* The detector: thread clocks, synchronization objects and the
 * happens-before edges a weft trace shows (docs/races.md), feeding every
 * memory access to FastTrack's shadow (races_shadow.c). */
#include <string.h>
#include <unistd.h>

#include <stdio.h>

#include "races_state.h"

weft_races_config weft_races_config_default(void)
{
    weft_races_config c = {0};
    c.atomic_locations = 1;
    c.join_window = 4096;
    return c;
}

static int libc_sync(void *syms, uint64_t pc)
{
    return weft_symbols_in_libc_sync(syms, pc);
}

void weft_races_config_library(weft_races_config *c, weft_symbols *syms)
{
    c->library_relaxed = syms ? libc_sync : NULL;
    c->library_ctx = syms;
}

weft_symbols *weft_races_config_run(weft_races_config *c, const char *binary,
                                    const weft_trace_meta *m)
{
    c->binary = binary && *binary && access(binary, R_OK) == 0 ? binary : NULL;
    c->start_code = m->start_code;
    c->objects = m->objects;
    c->nobjects = m->nobjects;
    char err[256];
    weft_symbols *syms = c->binary ? weft_symbols_open_run(c->binary, m, err, sizeof err) : NULL;
    weft_races_config_library(c, syms);
    return syms;
}

weft_races *weft_races_create(const weft_races_config *cfg, char *err, size_t errlen)
{
    weft_races *d = calloc(1, sizeof *d);
    if (!d) {
        races_fail(err, errlen, "out of memory");
        return NULL;
    }
    d->cfg = cfg ? *cfg : weft_races_config_default();
    d->cfg.binary = NULL; /* not kept: the caller owns the string */
    if (cfg && cfg->binary && !cfg->classify) {
        if (!(d->code = races_code_open(cfg->binary, cfg->start_code, cfg->objects, cfg->nobjects,
                                        err, errlen))) {
            free(d);
            return NULL;
        }
        d->cfg.classify = races_code_classify;
        d->cfg.classify_ctx = d->code;
    }
    if (shadow_init(&d->sh) != 0 || rmap_init(&d->sync_index, 64) != 0 ||
        rmap_init(&d->insn_cache, 256) != 0 || rmap_init(&d->lib_cache, 256) != 0 ||
        pairs_init(&d->pairs) != 0 || (cfg && races_atomic_globals(d, cfg) != 0)) {
        weft_races_free(d);
        races_fail(err, errlen, "out of memory");
        return NULL;
    }
    return d;
}

void weft_races_free(weft_races *d)
{
    if (!d)
        return;
    for (uint32_t i = 0; i < d->nth; i++) {
        rthread *t = &d->th[i];
        vc_free(&t->C), vc_free(&t->exit_clock), vc_free(&t->pending);
        for (uint32_t k = 0; k < t->nsnaps; k++)
            vc_free(&t->snaps[k].C);
        free(t->snaps);
    }
    free(d->born_at);
    free(d->th);
    for (size_t i = 0; i < d->nsyncs; i++)
        vc_free(&d->syncs[i]);
    free(d->syncs);
    shadow_free(&d->sh);
    rmap_free(&d->sync_index);
    rmap_free(&d->insn_cache);
    rmap_free(&d->lib_cache);
    pairs_free(&d->pairs);
    free(d->races);
    free(d->pcs);
    free(d->anchors);
    free(d->exits);
    free(d->waiters);
    races_code_close(d->code);
    free(d);
}

const char *weft_races_error(const weft_races *d)
{
    return d->error;
}

static int oom(weft_races *d)
{
    snprintf(d->error, sizeof d->error, "out of memory");
    return -1;
}

/* Thread i, created (clock 1@i, FastTrack's initial state) when first
 * seen; lower indices not seen yet stay unborn and cost no clock. */
static rthread *thread_get(weft_races *d, uint32_t i)
{
    if (i >= d->cap_th) {
        uint32_t cap = d->cap_th ? d->cap_th : 8;
        while (cap <= i)
            cap *= 2;
        rthread *v = realloc(d->th, (size_t)cap * sizeof *v);
        if (!v)
            return NULL;
        memset(v + d->cap_th, 0, (size_t)(cap - d->cap_th) * sizeof *v);
        d->th = v;
        d->cap_th = cap;
    }
    if (i >= d->nth)
        d->nth = i + 1;
    rthread *t = &d->th[i];
    if (!t->born) {
        if (vc_set(&t->C, i, 1) != 0)
            return NULL;
        t->epoch = EPOCH(1, i);
        t->born = 1;
    }
    return t;
}

/* After a release: the thread's later accesses are a new epoch. */
static void thread_tick(rthread *t, uint32_t i)
{
    t->C.c[i]++;
    t->epoch = EPOCH(t->C.c[i], i);
}

static int thread_acquire(weft_races *d, rthread *t, const vclock *from)
{
    int grew = vc_join(&t->C, from);
    if (grew < 0)
        return oom(d);
    d->stats.syncs += (uint64_t)grew;
    return 0;
}

/* ---- thread creation, exit and join ------------------------------------------ */

/* clone: the child's start sees the creator's clock at the clone. The
 * creator's last write before it is where glibc set up the child's
 * descriptor (its tid word, which join waits on, is close by). */
static int on_clone(weft_races *d, rthread *t, uint32_t i, uint64_t time)
{
    struct clone_snap *v = races_grow(t->snaps, t->nsnaps, &t->cap_snaps, sizeof *v, 4);
    if (!v)
        return oom(d);
    t->snaps = v;
    struct clone_snap *s = &v[t->nsnaps];
    *s =
        (struct clone_snap){.time = time, .anchor = t->last_write, .has_anchor = t->has_last_write};
    if (vc_copy(&s->C, &t->C) != 0)
        return oom(d);
    t->nsnaps++;
    thread_tick(t, i);
    return 0;
}

/* The clone that made thread `child` of p: the latest not yet taken, no
 * later than the child's creation time when the thread table gives it. A
 * policy may have p clone twice before the first child starts: one
 * snapshot for both gave the first child the second clone's clock and
 * descriptor, and its join was lost (a false race on what it wrote, in a
 * replay's trace). By time, not by count: a fork's clone makes no thread.
 * NULL: none. */
static struct clone_snap *snap_for(weft_races *d, rthread *p, uint32_t child)
{
    int known = child < d->nborn_at;
    for (uint32_t k = p->nsnaps; k-- > 0;)
        if (!p->snaps[k].used && (!known || p->snaps[k].time <= d->born_at[child]))
            return &p->snaps[k];
    return NULL;
}

int weft_races_threads(weft_races *d, const weft_trace_thread *th, uint32_t n)
{
    free(d->born_at);
    d->nborn_at = 0;
    if (!(d->born_at = malloc((n ? n : 1) * sizeof *d->born_at)))
        return oom(d);
    for (uint32_t j = 0; j < n; j++)
        d->born_at[j] = th[j].start_time;
    d->nborn_at = n;
    return 0;
}

static int on_thread_start(weft_races *d, rthread *t, uint32_t parent)
{
    if (parent >= d->nth || !d->th[parent].born || &d->th[parent] == t)
        return 0; /* the main thread, or a creator we never saw */
    rthread *p = &d->th[parent];
    struct clone_snap *s = snap_for(d, p, (uint32_t)(t - d->th));
    if (s) {
        if (thread_acquire(d, t, &s->C) != 0)
            return -1;
        s->used = 1;
        vc_free(&s->C);
        t->anchor = s->anchor;
        t->has_anchor = s->has_anchor;
    } else { /* no clone event: the creator's clock now is the best there is */
        if (thread_acquire(d, t, &p->C) != 0)
            return -1;
        thread_tick(p, parent);
        t->anchor = p->last_write;
        t->has_anchor = p->has_last_write;
    }
    if (t->has_anchor && anchors_add(d, t->anchor, (uint32_t)(t - d->th)) != 0)
        return oom(d);
    return 0;
}

static int on_thread_exit(weft_races *d, rthread *t, uint32_t i, uint64_t time)
{
    if (t->exited)
        return 0;
    if (vc_copy(&t->exit_clock, &t->C) != 0 || exits_add(d, i) != 0)
        return oom(d);
    t->exited = 1;
    t->exit_time = time;
    thread_tick(t, i);
    return 0;
}

/* Thread t observes the exit of thread x (a join). */
static int observe_exit(weft_races *d, rthread *t, uint32_t x)
{
    rthread *e = &d->th[x];
    if (!e->exited || e == t || vc_get(&t->C, x) >= vc_get(&e->exit_clock, x))
        return 0;
    return thread_acquire(d, t, &e->exit_clock);
}

/* glibc's join reads the child's tid word with an acquire load (and waits
 * on it with a futex) until the kernel clears it at the child's exit. The
 * trace has no record of that word: an acquire access close to where the
 * creator set up an exited thread's descriptor stands for it. Returns the
 * thread joined, or UINT32_MAX. */
static uint32_t join_near(weft_races *d, rthread *t, uint64_t addr)
{
    if (!d->nexits)
        return UINT32_MAX;
    uint32_t x = anchors_nearest(d, addr, d->cfg.join_window);
    if (x == UINT32_MAX || !d->th[x].exited)
        return UINT32_MAX;
    if (observe_exit(d, t, x) != 0)
        return UINT32_MAX - 1;
    return x;
}

/* ---- futexes ------------------------------------------------------------------- */

static int on_futex_wait(weft_races *d, rthread *t, uint32_t i, const weft_event *ev)
{
    t->waiting = 1;
    t->woken = 0;
    t->wait_addr = ev->addr;
    t->wait_time = ev->time;
    if (t->pending.n)
        memset(t->pending.c, 0, (size_t)t->pending.n * sizeof *t->pending.c);
    return waiters_add(d, i) != 0 ? oom(d) : 0;
}

/* A wake orders the waker before every thread waiting on the word then:
 * the trace does not say how many it woke, nor which. */
static int on_futex_wake(weft_races *d, rthread *t, uint32_t i, uint64_t addr)
{
    for (size_t k = 0; k < d->nwaiters; k++) {
        rthread *w = &d->th[d->waiters[k]];
        if (w == t || w->wait_addr != addr)
            continue;
        if (vc_join(&w->pending, &t->C) < 0)
            return oom(d);
        w->woken = 1;
    }
    thread_tick(t, i);
    return 0;
}

/* The thread's first event after a futex wait: it resumed. */
static int on_resume(weft_races *d, rthread *t, uint32_t i, uint64_t time)
{
    t->waiting = 0;
    waiters_remove(d, i);
    if (t->woken && thread_acquire(d, t, &t->pending) != 0)
        return -1;
    uint32_t x = join_near(d, t, t->wait_addr);
    if (x == UINT32_MAX - 1)
        return -1;
    if (t->woken || x != UINT32_MAX)
        return 0;
    /* No traced wake: the platform resumes a wait on a tid word at the
     * exit that cleared it, so the latest exit since the wait began. */
    x = exits_latest_between(d, t->wait_time, time);
    return x == UINT32_MAX ? 0 : observe_exit(d, t, x);
}

/* ---- memory accesses ------------------------------------------------------------- */

static unsigned classify(weft_races *d, uint64_t pc)
{
    if (!d->cfg.classify)
        return 0;
    size_t h = rmap_slot(&d->insn_cache, pc);
    if (d->insn_cache.vals[h])
        return d->insn_cache.vals[h] - 1;
    unsigned c = d->cfg.classify(d->cfg.classify_ctx, pc);
    rmap_put(&d->insn_cache, pc, c + 1); /* a failed insert only costs a lookup later */
    return c;
}

static int sync_release(weft_races *d, rthread *t, uint64_t addr)
{
    size_t h = rmap_slot(&d->sync_index, addr);
    uint32_t k = d->sync_index.vals[h];
    if (!k) {
        vclock *v = races_grow(d->syncs, d->nsyncs, &d->cap_syncs, sizeof *v, 64);
        if (!v)
            return oom(d);
        d->syncs = v;
        memset(&d->syncs[d->nsyncs], 0, sizeof *d->syncs);
        if (rmap_put(&d->sync_index, addr, (uint32_t)++d->nsyncs) != 0)
            return oom(d);
        k = (uint32_t)d->nsyncs;
    }
    /* Joined, not assigned: a release sequence may continue through other
     * threads' read-modify-writes, and a later acquire sees all of it. */
    return vc_join(&d->syncs[k - 1], &t->C) < 0 ? oom(d) : 0;
}

static int sync_acquire(weft_races *d, rthread *t, uint64_t addr)
{
    uint32_t k = rmap_get(&d->sync_index, addr);
    if (k && thread_acquire(d, t, &d->syncs[k - 1]) != 0)
        return -1;
    return join_near(d, t, addr) == UINT32_MAX - 1 ? -1 : 0;
}

/* The access's synchronization: from its instruction when it can be read,
 * else every atomic or exclusive access is acquire and release (a CAS is
 * traced as a write, yet it acquires). */
static void access_semantics(weft_races *d, const weft_event *ev, cur_access *cur, int *acq,
                             int *rel)
{
    int flagged = (ev->flags & (WEFT_EVF_ATOMIC | WEFT_EVF_EXCLUSIVE)) || ev->kind == WEFT_EV_RMW;
    unsigned cls = flagged ? classify(d, ev->pc) : 0;
    *acq = *rel = 0;
    if ((cls & (WEFT_INSN_KNOWN | WEFT_INSN_ATOMIC)) == (WEFT_INSN_KNOWN | WEFT_INSN_ATOMIC)) {
        cur->a.atomic = 1;
        *acq = (cls & WEFT_INSN_ACQUIRE) != 0;
        *rel = (cls & WEFT_INSN_RELEASE) != 0;
        if (cls & WEFT_INSN_RMW)
            cur->a.kind = WEFT_EV_RMW;
    } else if (flagged) {
        cur->a.atomic = 1;
        *acq = *rel = 1;
    } else if (d->cfg.library_relaxed) {
        size_t h = rmap_slot(&d->lib_cache, ev->pc);
        uint32_t v = d->lib_cache.vals[h];
        if (!v) {
            v = 1 + (d->cfg.library_relaxed(d->cfg.library_ctx, ev->pc) != 0);
            rmap_put(&d->lib_cache, ev->pc, v); /* a failed insert only costs a lookup later */
        }
        cur->a.atomic = v == 2;
    }
}

static int race_found(void *ctx, const sh_access *prev, uint32_t prev_thread, const cur_access *cur,
                      uint64_t addr);

static int on_access(weft_races *d, rthread *t, uint32_t i, const weft_event *ev)
{
    if ((ev->flags & WEFT_EVF_STACK) || ev->size == 0 ||
        (d->code &&
         (races_code_in_got(d->code, ev->addr) || races_code_in_loader(d->code, ev->pc))))
        return 0;
    cur_access cur = {.thread = i, .C = &t->C, .id = ++d->access_id};
    cur.a = (sh_access){.pc = ev->pc,
                        .time = ev->time,
                        .seq = ev->seq,
                        .kind = ev->kind,
                        .size = ev->size,
                        .local = (ev->flags & WEFT_EVF_LOCAL) != 0};
    int acq, rel;
    access_semantics(d, ev, &cur, &acq, &rel);
    uint64_t first = ev->addr >> 3, last = (ev->addr + ev->size - 1) >> 3;
    if (last < first) /* wraps around the address space: keep what fits */
        last = UINT64_MAX >> 3;
    uint32_t gi[10];
    size_t ng = 0;
    int relaxed = 0;
    for (uint64_t g = first; g <= last && ng < 10; g++, ng++) {
        if (shadow_granule_index(&d->sh, g, &gi[ng]) != 0)
            return oom(d);
        uint8_t m = granule_mask(ev->addr, ev->size, g);
        relaxed |= (d->sh.granules[gi[ng]].atomic_mask & m) != 0;
    }
    if (relaxed && d->cfg.atomic_locations)
        cur.a.atomic = 1;
    d->stats.accesses++;
    d->stats.atomics += cur.a.atomic;
    if (acq && sync_acquire(d, t, ev->addr) != 0)
        return -1;
    cur.epoch = t->epoch;
    cur.a.epoch = t->epoch;
    for (size_t k = 0; k < ng; k++) {
        uint64_t g = first + k;
        if (shadow_access(&d->sh, gi[k], g, granule_mask(ev->addr, ev->size, g), &cur, race_found,
                          d) != 0)
            return oom(d);
    }
    if (rel) {
        if (sync_release(d, t, ev->addr) != 0)
            return -1;
        thread_tick(t, i);
    }
    /* Where glibc set up a child's descriptor, not a local of the creator's. */
    if (cur.a.kind != WEFT_EV_READ && !(ev->flags & WEFT_EVF_LOCAL)) {
        t->last_write = ev->addr;
        t->has_last_write = 1;
    }
    return 0;
}

int weft_races_feed(weft_races *d, const weft_event *ev)
{
    if (ev->thread >= WEFT_TRACE_MAX_THREADS) {
        snprintf(d->error, sizeof d->error, "thread index %u is too large", ev->thread);
        return -1;
    }
    rthread *t = thread_get(d, ev->thread);
    if (!t)
        return oom(d);
    d->stats.events++;
    d->pcs_valid = 0;
    uint32_t i = ev->thread;
    if (t->waiting && on_resume(d, t, i, ev->time) != 0)
        return -1;
    switch (ev->kind) {
    case WEFT_EV_READ:
    case WEFT_EV_WRITE:
    case WEFT_EV_RMW:
        return on_access(d, t, i, ev);
    case WEFT_EV_THREAD_START:
        return on_thread_start(d, t, ev->addr > UINT32_MAX ? UINT32_MAX : (uint32_t)ev->addr);
    case WEFT_EV_THREAD_EXIT:
        return on_thread_exit(d, t, i, ev->time);
    case WEFT_EV_FUTEX_WAIT:
        return on_futex_wait(d, t, i, ev);
    case WEFT_EV_FUTEX_WAKE:
        return on_futex_wake(d, t, i, ev->addr);
    case WEFT_EV_SYSCALL:
        /* clone and clone3 (AArch64 numbers); a fork's clone makes no
         * thread, and no child takes its snapshot (snap_for). */
        if (ev->addr == 220 || ev->addr == 435)
            return on_clone(d, t, i, ev->time);
        return 0;
    default:
        return 0;
    }
}

/* ---- races found --------------------------------------------------------------- */

static weft_race_access side(uint32_t thread, const sh_access *a)
{
    return (weft_race_access){.thread = thread,
                              .kind = a->kind,
                              .atomic = a->atomic,
                              .size = a->size,
                              .pc = a->pc,
                              .time = a->time,
                              .seq = a->seq};
}

static int race_found(void *ctx, const sh_access *prev, uint32_t prev_thread, const cur_access *cur,
                      uint64_t addr)
{
    weft_races *d = ctx;
    uint32_t k;
    if (pairs_find(&d->pairs, prev->pc, cur->a.pc, &k) != 0) {
        race_entry *v = races_grow(d->races, d->nraces, &d->cap_races, sizeof *v, 16);
        if (!v)
            return -1;
        d->races = v;
        k = (uint32_t)d->nraces;
        if (pairs_add(&d->pairs, prev->pc, cur->a.pc, k) != 0)
            return -1;
        race_entry *r = &d->races[d->nraces++];
        r->race = (weft_race){.first = side(prev_thread, prev),
                              .second = side(cur->thread, &cur->a),
                              .addr = addr,
                              .stack_of = UINT32_MAX};
        r->last_id = 0;
    }
    race_entry *r = &d->races[k];
    /* Its owner's side says whose local it is (any instance will do). */
    if (r->race.stack_of == UINT32_MAX && (prev->local || cur->a.local))
        r->race.stack_of = prev->local ? prev_thread : cur->thread;
    if (r->last_id != cur->id) { /* one instance per access, whatever bytes it spans */
        r->last_id = cur->id;
        r->race.count++;
    }
    return 0;
}

size_t weft_races_count(const weft_races *d)
{
    return d->nraces;
}

const weft_race *weft_races_get(const weft_races *d, size_t i)
{
    return i < d->nraces ? &d->races[i].race : NULL;
}

void weft_races_get_stats(const weft_races *d, weft_races_stats *out)
{
    *out = d->stats;
    out->granules = d->sh.ngranules;
    out->threads = d->nth;
}

int weft_races_analyze(weft_races *d, weft_trace *t, char *err, size_t errlen)
{
    weft_event ev;
    int r;
    if (d->cfg.atomic_locations) {
        weft_trace_rewind(t);
        while ((r = weft_trace_next(t, &ev)) == 1)
            if (weft_races_prescan(d, &ev) != 0)
                return races_fail(err, errlen, "%s: out of memory", weft_trace_path(t));
        if (r < 0)
            return races_fail(err, errlen, "%s", weft_trace_error(t));
    }
    const weft_trace_summary *sum = weft_trace_get_summary(t);
    if (sum && sum->nthreads && weft_races_threads(d, sum->threads, sum->nthreads) != 0)
        return races_fail(err, errlen, "%s: out of memory", weft_trace_path(t));
    weft_trace_rewind(t);
    while ((r = weft_trace_next(t, &ev)) == 1)
        if (weft_races_feed(d, &ev) != 0)
            return races_fail(err, errlen, "%s: %s", weft_trace_path(t), weft_races_error(d));
    if (r < 0)
        return races_fail(err, errlen, "%s", weft_trace_error(t));
    return 0;
}
