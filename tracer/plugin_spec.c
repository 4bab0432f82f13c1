/* Exact mode by speculation, the plugin's side. Gating every plain access
 * makes threads take turns at each one; instead only atomics, syscalls and
 * the pcs learnt by earlier attempts are gated, and spec_shadow checks every
 * non-stack access. A pc it blames goes to the learn file at once (a killed
 * attempt still teaches), and weft runs the program again with it gated; an
 * attempt that blames nothing was ordered exactly like a fully gated run.
 * Accesses from SP are not checked (as in the fully gated mode, a thread's
 * stack is its own): an ungated access into another thread's stack is
 * blamed as well, so that it waits like it would there. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_state.h"

/* Records for 32 MiB of touched guest memory per GiB; past it the run
 * cannot be checked and weft falls back to gating everything. */
#define SPEC_SHADOW_BUDGET ((size_t)2 << 30)

int spec_parse_arg(const char *key, const char *val)
{
    if (!strcmp(key, "spec"))
        g_plugin.spec.learn_path = val;
    else if (!strcmp(key, "gates"))
        g_plugin.spec.gates_path = val;
    else if (!strcmp(key, "gaterange")) {
        spec_state *s = &g_plugin.spec;
        unsigned long long lo, hi;
        if (s->nranges >= 8 || sscanf(val, "%llx-%llx", &lo, &hi) != 2 || hi <= lo)
            return -1;
        s->range_lo[s->nranges] = lo;
        s->range_hi[s->nranges++] = hi;
    } else
        return 0;
    return 1;
}

int spec_setup(char *err, size_t errlen)
{
    spec_state *s = &g_plugin.spec;
    s->learn_fd = -1;
    if (!s->learn_path)
        return 0;
    if (g_plugin.cfg.settings.mode != WEFT_MODE_EXACT || g_plugin.cfg.settings.quantum ||
        g_plugin.sched.requested || g_plugin.cfg.inject) {
        snprintf(err, errlen, "spec= needs mode=exact without quantum, sched or inject");
        return -1;
    }
    if (s->gates_path && weft_pcs_load(s->gates_path, &s->gates, &s->ngates, err, errlen))
        return -1;
    s->learn_fd = open(s->learn_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (s->learn_fd < 0) {
        snprintf(err, errlen, "%s: %s", s->learn_path, strerror(errno));
        return -1;
    }
    s->shadow = spec_shadow_new(SPEC_SHADOW_BUDGET);
    if (!s->shadow) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->on = 1;
    return 0;
}

int spec_gated(uint64_t pc)
{
    const spec_state *s = &g_plugin.spec;
    for (unsigned i = 0; i < s->nranges; i++)
        if (pc >= s->range_lo[i] && pc < s->range_hi[i])
            return 1;
    return weft_pcs_contain(s->gates, s->ngates, pc);
}

static void learn_line(const char *line)
{
    size_t n = strlen(line);
    if (write(g_plugin.spec.learn_fd, line, n) != (ssize_t)n)
        atomic_store(&g_plugin.spec.abandoned, 1); /* unknown blames: do not trust the run */
}

void spec_abandon(const char *why)
{
    spec_state *s = &g_plugin.spec;
    if (!s->on)
        return;
    atomic_store(&s->invalid, 1);
    if (atomic_exchange(&s->abandoned, 1))
        return;
    char line[160];
    snprintf(line, sizeof line, "abandon: %s\n", why);
    pthread_mutex_lock(&s->lock);
    learn_line(line);
    pthread_mutex_unlock(&s->lock);
}

/* pc's bit 0 set: the access was gated, yet ran out of order: the gate let
 * it go (a stall escape, qemu's exclusive sections) or its thread came back
 * late from a blocking syscall, which is released from the arbiter. A fully
 * gated run has the same holes, unseen; gating more cannot close them, so
 * they are counted and reported, not rerun. */
static void blame(uint64_t pc)
{
    spec_state *s = &g_plugin.spec;
    if (pc & 1) {
        atomic_fetch_add(&s->unordered, 1);
        return;
    }
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->nblamed; i++)
        if (s->blamed[i] == pc) {
            pthread_mutex_unlock(&s->lock);
            return;
        }
    if (s->nblamed == s->blamed_cap) {
        size_t cap = s->blamed_cap ? s->blamed_cap * 2 : 64;
        uint64_t *b = realloc(s->blamed, cap * sizeof *b);
        if (b) {
            s->blamed = b;
            s->blamed_cap = cap;
        }
    }
    if (s->nblamed < s->blamed_cap)
        s->blamed[s->nblamed++] = pc;
    char line[32];
    snprintf(line, sizeof line, "0x%" PRIx64 "\n", pc);
    learn_line(line);
    atomic_store(&s->invalid, 1);
    pthread_mutex_unlock(&s->lock);
}

/* The stack holding addr, or NULL. Every access asks, and a binary search's
 * branches were a tenth of exact mode's time: the answer holds for the whole
 * stack or gap around addr until the table is replaced. */
static const spec_stack *stack_at(vcpu_state *v, uint64_t addr)
{
    const spec_stacks *t = atomic_load_explicit(&g_plugin.spec.stacks, memory_order_acquire);
    if (t == v->spec_stk_table && addr - v->spec_stk_lo < v->spec_stk_hi - v->spec_stk_lo)
        return v->spec_stk_hit;
    size_t lo = 0, hi = t ? t->n : 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->v[mid].hi <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    v->spec_stk_table = t;
    if (t && lo < t->n && t->v[lo].lo <= addr) {
        v->spec_stk_lo = t->v[lo].lo;
        v->spec_stk_hi = t->v[lo].hi;
        return v->spec_stk_hit = &t->v[lo];
    }
    v->spec_stk_lo = t && lo > 0 ? t->v[lo - 1].hi : 0;
    v->spec_stk_hi = t && lo < t->n ? t->v[lo].lo : UINT64_MAX;
    return v->spec_stk_hit = NULL;
}

/* A copy of the stack table with room for one more; called locked. */
static spec_stacks *stacks_copy(void)
{
    spec_state *s = &g_plugin.spec;
    const spec_stacks *old = atomic_load(&s->stacks);
    size_t n = old ? old->n : 0;
    spec_stacks *t = malloc(sizeof *t + (n + 1) * sizeof t->v[0]);
    if (!t) {
        atomic_store(&s->abandoned, 1);
        return NULL;
    }
    t->n = n;
    if (n)
        memcpy(t->v, old->v, n * sizeof t->v[0]);
    return t;
}

/* Readers may still hold the old table; thread creation and exit are rare,
 * so it is left allocated rather than reclaimed. */
static void stacks_publish(spec_stacks *t)
{
    atomic_store_explicit(&g_plugin.spec.stacks, t, memory_order_release);
}

void spec_thread_exited(int pe, uint64_t cycles)
{
    spec_state *s = &g_plugin.spec;
    if (!s->on)
        return;
    pthread_mutex_lock(&s->lock);
    spec_stacks *t = stacks_copy();
    if (t) {
        for (size_t i = 0; i < t->n; i++)
            if (t->v[i].pe == pe && t->v[i].exit_pe < 0) {
                t->v[i].exit_pe = pe;
                t->v[i].exit_t = cycles;
            }
        stacks_publish(t);
    }
    pthread_mutex_unlock(&s->lock);
}

void spec_thread_stack(int pe, uint64_t lo, uint64_t hi)
{
    spec_state *s = &g_plugin.spec;
    if (!s->on || hi <= lo)
        return;
    pthread_mutex_lock(&s->lock);
    spec_stacks *t = stacks_copy();
    if (!t) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    /* Drop what the new stack overlaps (a reused stack of an exited thread). */
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].hi <= lo || t->v[i].lo >= hi)
            t->v[k++] = t->v[i];
    size_t at = 0;
    while (at < k && t->v[at].lo < lo)
        at++;
    memmove(&t->v[at + 1], &t->v[at], (k - at) * sizeof t->v[0]);
    t->v[at] = (spec_stack){lo, hi, pe, -1, 0};
    t->n = k + 1;
    stacks_publish(t);
    pthread_mutex_unlock(&s->lock);
}

void spec_on_access(vcpu_state *v, uint64_t pc, int gated, uint64_t addr, unsigned size, int write,
                    uint64_t cycles)
{
    spec_state *s = &g_plugin.spec;
    /* Once the process exits nothing is gated in either mode: not checked. */
    if (atomic_load_explicit(&s->abandoned, memory_order_relaxed) ||
        cycles > atomic_load_explicit(&g_plugin.exit_cycles, memory_order_relaxed) ||
        atomic_load_explicit((const _Atomic int *)v->fast.exiting, memory_order_relaxed))
        return;
    /* Another thread's stack: its SP accesses are not checked, so this one
     * needs a gate, unless the owner's exit is ordered before it. Gated or
     * not, it is still checked below: the owner's accesses to its stack
     * through a pointer are gated in a fully gated run, and only this pair
     * can show that they need it (libgomp's taskwait spins on a semaphore
     * in the waiter's stack, which the task's thread posts; unchecked, the
     * spin ran ungated and its length followed the host). */
    const spec_stack *st = stack_at(v, addr);
    if (st && st->pe != v->pe && !gated &&
        (st->exit_pe < 0 || v->sync_pe < 0 || st->exit_t > v->sync_t ||
         (st->exit_t == v->sync_t && st->exit_pe > v->sync_pe)))
        blame(pc);
    spec_access a = {.addr = addr,
                     .size = size,
                     .write = write,
                     .t = cycles,
                     .pe = (uint32_t)v->pe,
                     .pc = pc,
                     .gated = gated,
                     .sync_t = v->sync_t,
                     .sync_pe = v->sync_pe};
    uint64_t pcs[SPEC_MAX_BLAMES];
    int n = spec_shadow_check(s->shadow, &v->spec_cur, &a, pcs);
    if (n < 0) {
        spec_abandon("shadow memory budget exhausted");
        return;
    }
    for (int i = 0; i < n; i++) {
        /* A racy loop blames the same pc at every pass: only the first
         * should take the lock (gated ones are counted each time). */
        if (!(pcs[i] & 1) && pcs[i] == v->spec_last_blame)
            continue;
        if (!(pcs[i] & 1))
            v->spec_last_blame = pcs[i];
        blame(pcs[i]);
    }
}

void spec_finish(void)
{
    spec_state *s = &g_plugin.spec;
    if (!s->on)
        return;
    char line[160];
    pthread_mutex_lock(&s->lock);
    snprintf(line, sizeof line, "done: gated=%zu blamed=%zu unordered=%lu shadow_bytes=%zu%s\n",
             s->ngates, s->nblamed, (unsigned long)atomic_load(&s->unordered),
             spec_shadow_bytes(s->shadow), atomic_load(&s->abandoned) ? " abandoned" : "");
    learn_line(line);
    pthread_mutex_unlock(&s->lock);
}
