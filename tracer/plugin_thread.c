/* A guest thread under the tracer: its vCPU and event buffer, binding the
 * vCPU to its PE, the thread's first turn (which must not depend on which
 * host thread got going first, see plugin_may_wait_in_exec), and recording
 * its events, with the delays a plan injects before them. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "plugin_replay.h"

static uint64_t inject_apply(vcpu_state *v, uint64_t cycles, uint64_t pc, int recorded);

vcpu_state *plugin_vcpu(unsigned int index)
{
    if (index >= PLUGIN_MAX_VCPUS)
        return NULL;
    vcpu_state *v = g_plugin.vcpus[index];
    if (!v) {
        /* Cache lines of its own: every block writes its clock and every
         * event its count, and a neighbour's on the same line made the
         * threads' cores fight over it. */
        size_t size = (sizeof *v + 63) & ~(size_t)63;
        v = aligned_alloc(64, size);
        if (!v)
            return NULL;
        memset(v, 0, size);
        v->pe = -1;
        if (plugin_buf_attach(v, index) < 0) {
            free(v);
            return NULL;
        }
        g_plugin.vcpus[index] = v;
    }
    return v;
}

void plugin_flush(vcpu_state *v)
{
    if (v->nbuf == 0 || v->pe < 0)
        return;
    /* Counted per buffer, not per event: the limit is approximate (by up to
     * a buffer per thread) so that recording stays free of shared writes. */
    if (g_plugin.cfg.max_events &&
        atomic_fetch_add(&g_plugin.flushed, v->nbuf) + v->nbuf >= g_plugin.cfg.max_events)
        atomic_store(&g_plugin.capped, 1);
    /* Counted per buffer: threads' records share cache lines, and a count
     * per event made the cores fight over them. */
    g_plugin.threads[v->pe].events += v->nbuf;
    int rc = 0;
    if (plugin_tracing_here() && g_plugin.writer && !atomic_load(&g_plugin.finished)) {
        weft_platform_busy(g_plugin.platform, v->pe, 1); /* may sleep on the writer's lock */
        rc = weft_trace_writer_append_buf(g_plugin.writer, v->lb);
        if (rc < 0)
            atomic_fetch_add(&g_plugin.write_errors, 1);
        weft_platform_busy(g_plugin.platform, v->pe, -1);
    } else if (g_plugin.server.in_prefix) {
        server_keep(v->buf, v->nbuf); /* every child's trace starts with them */
    }
    v->nbuf = 0;
    if (rc == 1)
        plugin_stop();
}

void plugin_record_slow(vcpu_state *v, uint8_t kind, uint64_t cycles, uint64_t addr, uint64_t pc,
                        uint8_t size, uint16_t flags)
{
    if (v->pe < 0 || cycles > atomic_load_explicit(&g_plugin.exit_cycles, memory_order_relaxed) ||
        atomic_load_explicit(&g_plugin.spec.invalid, memory_order_relaxed) ||
        atomic_load_explicit(&g_plugin.capped, memory_order_relaxed))
        return;
    if (!v->begun && kind != WEFT_EV_THREAD_START)
        plugin_begin_thread(v, 0); /* an event before its first turn: it started unordered */
    if (g_plugin.cfg.inject && kind != WEFT_EV_DELAY)
        cycles += inject_apply(v, cycles, pc, 1); /* not applied at a gate: shift here */
    weft_event *e = &v->buf[v->nbuf++];
    e->time = cycles_to_ns(cycles);
    e->seq = 0;
    e->addr = addr;
    e->pc = pc;
    e->thread = (uint32_t)v->pe;
    e->kind = kind;
    e->size = size;
    e->flags = flags;
    /* Published after the event: what a crash leaves in the buffer is whole. */
    __atomic_store_n(&v->lb->n, (uint32_t)v->nbuf, __ATOMIC_RELEASE);
    if (v->nbuf == PLUGIN_BUF_EVENTS)
        plugin_flush(v);
}

/* Apply the injections due now: a DELAY event each, then the shift. */
static uint64_t inject_apply(vcpu_state *v, uint64_t cycles, uint64_t pc, int recorded)
{
    uint64_t total = 0;
    injection *in;
    thread_record *tr = v->pe >= 0 ? &g_plugin.threads[v->pe] : NULL;
    while ((in = inject_due(v, pc, recorded)) != NULL) {
        uint64_t delay = inject_delay_cycles(in), at = cycles + total;
        if (delay) {
            tr->delays++;
            plugin_record(v, WEFT_EV_DELAY, at, cycles_to_ns(delay), pc, 0, 0);
            v->offset += delay;
            total += delay;
        }
        inject_applied(in, at, plugin_thread_events(v)); /* the delayed event comes next */
    }
    return total;
}

uint64_t plugin_inject_at_gate(vcpu_state *v, uint64_t cycles, uint64_t pc)
{
    return inject_apply(v, cycles, pc, 0);
}

void plugin_bind_vcpu(vcpu_state *v)
{
    uint64_t tid = (uint64_t)gettid();
    struct timespec nap = {0, 20000};
    int pe;
    if (!atomic_exchange(&g_plugin.main_bound, 1)) {
        /* The program is loaded by now: where, names its pcs if it is
         * position-independent. */
        g_plugin.meta.start_code = qemu_plugin_start_code();
        plugin_args_relocate(g_plugin.meta.start_code);
        weft_trace_writer_set_loaded(g_plugin.writer, &g_plugin.meta);
        pe = weft_platform_thread_create(g_plugin.platform, -1, tid, 0, 0);
    } else {
        /* The parent registers the child when clone returns to it, which may
         * be after the child's first block: wait for it. */
        while ((pe = weft_platform_thread_by_tid(g_plugin.platform, tid)) < 0) {
            if (weft_platform_is_exiting(g_plugin.platform))
                return;
            nanosleep(&nap, NULL);
        }
    }
    if (pe < 0)
        plugin_too_many_threads();
    while (pe > 0 && !atomic_load(&g_plugin.threads[pe].ready) &&
           !weft_platform_is_exiting(g_plugin.platform))
        nanosleep(&nap, NULL);
    /* The buffer follows its thread: unowned while it changes hands, and
     * empty before it counts from the thread's flushed events. */
    __atomic_store_n(&v->lb->thread, UINT32_MAX, __ATOMIC_RELEASE);
    __atomic_store_n(&v->lb->n, 0, __ATOMIC_RELEASE);
    v->lb->base = g_plugin.threads[pe].events;
    __atomic_store_n(&v->lb->thread, (uint32_t)pe, __ATOMIC_RELEASE);
    v->tid = (pid_t)tid;
    weft_platform_block_fast(g_plugin.platform, pe, &v->fast);
    v->pe = pe;
    v->begun = 0;
    v->tb_base = v->insns = 0;
    v->cur_tb = NULL;
    v->last_ii = NULL;
    v->nbuf = 0;
    v->offset = weft_platform_thread_start(g_plugin.platform, pe);
    v->last_gate = 0;
    v->point_pc = 0; /* a new thread is about to start, not where the vCPU's last one was */
    memset(v->own_pcs, 0, sizeof v->own_pcs);
    v->own_n = 0;
    v->own_end_pc = 0;
    v->sync_t = g_plugin.threads[pe].sync_t;
    v->sync_pe = pe > 0 ? g_plugin.threads[pe].sync_pe : -1;
    v->spec_cur = (spec_cursor){0};
    /* Children: the mapping clone's newsp points into. Main thread: learnt
     * from its first SP-based access. */
    v->stack_lo = g_plugin.threads[pe].stack_lo;
    v->stack_hi = g_plugin.threads[pe].stack_hi;
}

/* The thread's first turn. `wait` says whether it may wait for it here (a
 * replay policy's token); a thread that runs before it could wait (see
 * plugin_may_wait_in_exec) starts at its creation time. */
void plugin_begin_thread(vcpu_state *v, int wait)
{
    weft_platform *p = g_plugin.platform;
    v->begun = 1;
    if (wait) /* the offset is still its creation time: it executed no block yet, or one unordered
               */
        v->offset = weft_platform_thread_begin(p, v->pe);
    /* Host TIDs differ from run to run; the trace records the creator's
     * index instead so that identical runs give identical files. At the
     * thread's creation time, which a policy's first turn may come well
     * after: a trace salvaged from a killed run has no thread table, and
     * its start event is what tells which of the creator's clones made the
     * thread (races.c, snap_for). */
    int parent = weft_platform_thread_parent(p, v->pe);
    plugin_record(v, WEFT_EV_THREAD_START, weft_platform_thread_start(p, v->pe),
                  parent < 0 ? UINT32_MAX : (uint64_t)parent, 0, 0, 0);
}

/* May this vCPU wait inside guest code (an insn or block callback) now?
 * Not while qemu's flush after the first clone is pending: the flush waits
 * for every vCPU to leave guest code. A new thread that gets here first
 * waits outside the policy for as long as the parent runs, and goes on only
 * once the parent is parked in that exclusive section: then qemu stops it at
 * the end of this block, so it runs ahead of the policy by at most one block
 * (its first is the clone return path, which touches no memory), and the
 * schedule does not depend on which host thread was faster. */
int plugin_may_wait_in_exec(const vcpu_state *v)
{
    struct timespec nap = {0, 20000};
    for (;;) {
        int pending = atomic_load(&g_plugin.tb_flush_pending);
        if (pending < 0 || pending == v->pe)
            return 1;
        if (weft_platform_is_exiting(g_plugin.platform) ||
            weft_platform_stuck_in_qemu(g_plugin.platform, pending))
            return 0;
        weft_platform_busy(g_plugin.platform, v->pe, 1); /* asleep here is not in qemu */
        nanosleep(&nap, NULL);
        weft_platform_busy(g_plugin.platform, v->pe, -1);
    }
}
