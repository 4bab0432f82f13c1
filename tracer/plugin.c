/* weft's QEMU TCG plugin: binds guest threads to platform PEs, timestamps
 * their memory events with virtual time and gates them at synchronization
 * points so that they happen in the ideal platform's order.
 *
 * Per-access work stays here (a buffer append); the platform is entered only
 * at gates. Rules learned the hard way (see BRIEF.md): memory callbacks fire
 * after the access, so ordering is enforced by insn-exec callbacks placed
 * before memory instructions; a vCPU blocked in a callback still counts as
 * running for qemu's exclusive sections, so gates give up when the process
 * is exiting and escape after a stall. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugin_replay.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static void vcpu_init(qemu_plugin_id_t id, unsigned int index)
{
    (void)id;
    vcpu_state *v = plugin_vcpu(index);
    if (v) {
        v->pe = -1;
        v->nbuf = 0;
        /* A forked child shares the buffers' file mapping: hands off. */
        if (!atomic_load(&g_plugin.forked_child)) {
            __atomic_store_n(&v->lb->thread, UINT32_MAX, __ATOMIC_RELEASE);
            __atomic_store_n(&v->lb->n, 0, __ATOMIC_RELEASE);
        }
    }
}

/* Marks itself busy only around what may block: this runs for every block. */
static void tb_exec_bound(vcpu_state *v, void *udata)
{
    plugin_inline_enter(v);
    /* The parent's first block after the first clone: qemu flushed before it. */
    int pending = atomic_load_explicit(&g_plugin.tb_flush_pending, memory_order_acquire);
    if (pending == v->pe)
        atomic_store(&g_plugin.tb_flush_pending, -1);
    /* Nearly always nothing is pending: no call for that. */
    int may_wait = pending < 0 || pending == v->pe || plugin_may_wait_in_exec(v);
    weft_platform *p = g_plugin.platform;
    if (!v->begun && may_wait) { /* at the block's start, as if the turn came before it */
        weft_platform_busy(p, v->pe, 1);
        plugin_begin_thread(v, 1);
        weft_platform_busy(p, v->pe, -1);
    }
    const tb_info *ti = udata;
    v->tb_base = v->insns;
    v->insns += ti->n;
    v->cur_tb = ti;
    v->last_ii = NULL;
    uint64_t now = vcpu_cycles_at(v, v->tb_base);
    if (!weft_block_runs_on(&v->fast, now, may_wait && v->begun))
        v->offset += weft_platform_block_start(p, v->pe, now, 1) - now;
    /* Where a run that aborts was last in the program; a loop's block once. */
    if (ti->own && !ti->plt && v->own_pcs[(v->own_n - 1) % WEFT_RUN_END_PCS] != ti->pc)
        v->own_pcs[v->own_n++ % WEFT_RUN_END_PCS] = ti->pc;
    if (ti->own && !ti->plt && ti->n) /* its last instruction: a call's own line */
        v->own_end_pc = ti->pc + 4u * (ti->n - 1);
    if (ti->stack_wait) { /* its loads are not watched: counted as a library's */
        if (++v->lib_blocks >= SPIN_LIB_BLOCKS && v->begun && g_plugin.sched.policy)
            plugin_spin_lib_blocks(v, ti, vcpu_cycles_at(v, v->tb_base));
    } else if (!ti->lib)
        v->lib_blocks = 0; /* the program's own code: its loads are watched */
    else if (ti->lib_store)
        plugin_spin_progress(v); /* its stores are not watched one by one */
    else if (++v->lib_blocks >= SPIN_LIB_BLOCKS && v->begun && g_plugin.sched.policy)
        plugin_spin_lib_blocks(v, ti, vcpu_cycles_at(v, v->tb_base));
    plugin_inline_resync(v); /* it may have waited above */
}

static void tb_exec(unsigned int index, void *udata)
{
    if (atomic_load_explicit(&g_plugin.forked_child, memory_order_relaxed))
        return;
    vcpu_state *v = g_plugin.vcpus[index];
    if (!v)
        v = plugin_vcpu(index);
    if (v->pe < 0) {
        plugin_bind_vcpu(v);
        if (v->pe < 0)
            return;
        /* A new thread's count starts here (its first block is right after
         * clone's SVC); the main thread's counts what ran before its first
         * callback (the loader's entry may be counted inline). */
        if (v->pe != 0)
            v->inline_fresh = 1;
        plugin_host_delay();
    }
    tb_exec_bound(v, udata);
}

/* POS decides by races between the events threads are about to execute:
 * the address a gated pc touched last time is its guess for this time (the
 * plugin API cannot read the registers that hold the address), and a
 * synchronization call touches an object the plugin cannot see: unknown,
 * which POS treats as racing with everything. */
static void describe_for_pos(vcpu_state *v, const insn_info *ii)
{
    uint64_t obj = 0;
    int acc = PCT_ACCESS_UNKNOWN;
    if (ii->flags & INSN_CALL) {
        acc = PCT_ACCESS_SYNC;
    } else {
        unsigned h = (unsigned)(ii->pc >> 2) & 63u;
        if (v->guess[h].pc == ii->pc)
            obj = v->guess[h].addr, acc = v->guess[h].acc;
    }
    weft_platform_describe_step(g_plugin.platform, v->pe, v->exec_obj, v->exec_acc, obj, acc);
    /* Until the access reports itself (mem_access), the pending event. */
    v->exec_obj = obj;
    v->exec_acc = acc;
}

static void insn_gate_bound(vcpu_state *v, const insn_info *ii)
{
    if (!plugin_may_wait_in_exec(v))
        return;
    if (g_plugin.cfg.inject) /* shift before the gate, so the access is ordered at its new time */
        plugin_inject_at_gate(v, vcpu_cycles_at(v, v->tb_base + ii->index), ii->pc);
    uint64_t cycles = vcpu_cycles_at(v, v->tb_base + ii->index);
    int atomic = (ii->flags & INSN_ATOMIC) != 0;
    if (!atomic && g_plugin.cfg.settings.quantum &&
        cycles < v->last_gate + g_plugin.cfg.settings.quantum)
        return;
    if (ii->flags & INSN_CALL) {
        v->last_call_pc = ii->pc;
        v->last_callee = ii->callee;
    }
    if (plugin_pos_bookkeeping() && g_plugin.sched.policy)
        describe_for_pos(v, ii);
    v->point_pc = ii->pc;
    plugin_record_ran_on(v->pe);
    uint64_t resume;
    if (weft_platform_gate(g_plugin.platform, v->pe, cycles, ii->pc,
                           atomic ? WEFT_SYNC_ATOMIC : WEFT_SYNC_ACCESS, &resume) == WEFT_GATE_OK)
        plugin_synced(v, resume);
    v->offset += resume - cycles; /* held back by a replay policy */
    v->last_gate = resume;
}

static void insn_gate(unsigned int index, void *udata)
{
    if (atomic_load_explicit(&g_plugin.forked_child, memory_order_relaxed))
        return;
    vcpu_state *v = g_plugin.vcpus[index];
    if (!v || v->pe < 0)
        return;
    int pe = v->pe;
    weft_platform_busy(g_plugin.platform, pe, 1);
    insn_gate_bound(v, udata);
    weft_platform_busy(g_plugin.platform, pe, -1);
    plugin_inline_resync(v);
}

static void insn_yield(unsigned int index, void *udata)
{
    (void)udata;
    vcpu_state *v = g_plugin.vcpus[index];
    if (!v || v->pe < 0 || atomic_load_explicit(&g_plugin.forked_child, memory_order_relaxed))
        return;
    weft_platform_busy(g_plugin.platform, v->pe, 1);
    plugin_spin_yield(v);
    weft_platform_busy(g_plugin.platform, v->pe, -1);
    plugin_inline_resync(v);
}

static int in_ranges(uint64_t a)
{
    const weft_trace_settings *s = &g_plugin.cfg.settings;
    for (uint32_t i = 0; i < s->nranges; i++)
        if (a >= s->range_lo[i] && a < s->range_hi[i])
            return 1;
    return 0;
}

static void mem_access(unsigned int index, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
    if (atomic_load_explicit(&g_plugin.forked_child, memory_order_relaxed))
        return;
    vcpu_state *v = g_plugin.vcpus[index];
    const insn_info *ii = udata;
    if (!v || v->pe < 0)
        return;
    v->last_ii = ii; /* done: a fault from here on is at a later instruction */
    uint16_t flags = 0;
    if (ii->flags & INSN_SP_BASE) {
        /* The main thread's stack is not mmap'd by the guest: learn it from
         * SP-relative accesses (a generous window around them). qemu maps
         * the interpreter right above the stack, and the libraries after
         * it: the code of this first access (the interpreter's start) ends
         * the window, or their data would count as the main thread's stack
         * (left out of the trace, and blamed in every other thread). */
        if (v->pe == 0 && v->stack_hi == 0) {
            v->stack_lo = vaddr > (8u << 20) ? vaddr - (8u << 20) : 0;
            v->stack_hi = vaddr + (1u << 20);
            if (ii->pc > vaddr && ii->pc < v->stack_hi)
                v->stack_hi = ii->pc & ~(uint64_t)4095;
            spec_thread_stack(0, v->stack_lo, v->stack_hi);
            g_plugin.main_first_sp = vaddr;
            atomic_store_explicit(&g_plugin.main_vcpu, v, memory_order_release);
            atomic_store_explicit(&g_plugin.main_stack_known, 1, memory_order_release);
        }
        flags |= WEFT_EVF_STACK;
    } else if (vaddr >= __atomic_load_n(&v->stack_lo, __ATOMIC_RELAXED) &&
               vaddr < __atomic_load_n(&v->stack_hi, __ATOMIC_RELAXED)) {
        /* A library's atomics too: a lock on the stack orders the program's
         * accesses to what it guards. */
        flags |= ii->flags & (INSN_PROGRAM | INSN_ATOMIC) ? WEFT_EVF_LOCAL : WEFT_EVF_STACK;
    }
    int store = qemu_plugin_mem_is_store(info);
    uint8_t size = (uint8_t)(1u << qemu_plugin_mem_size_shift(info));
    /* Before the filter: ordering concerns every access, recorded or not. */
    if (g_plugin.spec.on && !(ii->flags & INSN_SP_BASE))
        spec_on_access(v, ii->pc, (ii->flags & INSN_GATED) != 0, vaddr, size,
                       store || (ii->flags & INSN_RMW), vcpu_cycles_at(v, v->tb_base + ii->index));
    switch (g_plugin.cfg.settings.filter) {
    case WEFT_FILTER_NONSTACK:
        if (flags & WEFT_EVF_STACK)
            return;
        break;
    case WEFT_FILTER_RANGES:
        if (!in_ranges(vaddr))
            return;
        break;
    case WEFT_FILTER_SHARED:
        if (flags & WEFT_EVF_STACK)
            return;
        if (!plugin_shared_record(v->pe, vaddr, vcpu_cycles_at(v, v->tb_base + ii->index)) &&
            !(ii->flags & (INSN_RMW | INSN_ATOMIC)))
            return;
        break;
    default:
        break;
    }
    if (g_plugin.sched.policy && !(flags & WEFT_EVF_STACK) &&
        !(ii->flags & (INSN_LIB_LOAD | INSN_LIB_STORE))) {
        plugin_spin_watch(v, ii->pc, vaddr, store || (ii->flags & INSN_RMW),
                          vcpu_cycles_at(v, v->tb_base + ii->index));
        plugin_inline_resync(v); /* a demoted spinner may have waited */
    }
    if ((ii->flags & INSN_GATED) && plugin_pos_bookkeeping()) {
        unsigned h = (unsigned)(ii->pc >> 2) & 63u;
        int acc = store || (ii->flags & INSN_RMW) ? PCT_ACCESS_WRITE : PCT_ACCESS_READ;
        v->guess[h].pc = ii->pc;
        v->guess[h].addr = vaddr;
        v->guess[h].acc = acc;
        v->exec_obj = vaddr;
        v->exec_acc = acc;
    }
    uint8_t kind;
    if (ii->flags & INSN_RMW) {
        kind = WEFT_EV_RMW;
        flags |= WEFT_EVF_ATOMIC;
    } else {
        kind = store ? WEFT_EV_WRITE : WEFT_EV_READ;
        if (ii->flags & INSN_ATOMIC)
            flags |= WEFT_EVF_EXCLUSIVE;
        else if (!(g_plugin.cfg.settings.record & (store ? WEFT_RECORD_WRITES : WEFT_RECORD_READS)))
            return; /* --record: a plain access the analysis does not need */
    }
    plugin_record(v, kind, vcpu_cycles_at(v, v->tb_base + ii->index), vaddr, ii->pc, size, flags);
}

/* Is a plain (non-stack) access at pc a gate? In exact tracing, every one,
 * or when speculating those learnt so far and their block's (`near`); in a
 * replay, as --points says. */
static int point_at(int exact, uint64_t pc, int near)
{
    if (!g_plugin.sched.policy)
        return exact && (!g_plugin.spec.on || near || spec_gated(pc));
    switch (g_plugin.sched.points) {
    case POINTS_ALL:
        return 1;
    case POINTS_PCS:
        return sched_is_point_pc(pc);
    default:
        return 0;
    }
}

/* May a plain SP-relative access go without a callback? Its only use is
 * the event the stack filter drops (spin watching, speculation and gates
 * skip the stack), once the main thread's stack window is learnt from one:
 * the trace is the same, and code built without optimization (every local
 * addressed from SP) runs several times faster. */
static int plugin_stack_unobserved(void)
{
    int f = g_plugin.cfg.settings.filter;
    return (f == WEFT_FILTER_NONSTACK || f == WEFT_FILTER_SHARED) &&
           atomic_load_explicit(&g_plugin.main_stack_known, memory_order_acquire);
}

/* Does anything look at plain loads? Recording them, a replay (its spin
 * detection and POS watch them; a fork server's children are replays), or
 * speculation's ordering check. Decided once: a block is translated once. */
static int plugin_reads_observed(void)
{
    return (g_plugin.cfg.settings.record & WEFT_RECORD_READS) || g_plugin.sched.requested ||
           g_plugin.server.on || g_plugin.spec.on;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    plugin_parallel_from_start();
    size_t n = qemu_plugin_tb_n_insns(tb);
    __atomic_fetch_add(&g_plugin.translated, 1, __ATOMIC_RELAXED);
    pretranslate_note(tb, n);
    tb_info *ti = plugin_arena_alloc(sizeof *ti);
    if (!ti)
        return; /* the process is out of memory: nothing of this block is seen */
    ti->n = (uint32_t)n;
    insn_info **link = &ti->first_mem;
    plugin_fault_setup(tb);
    int any_cb = 0; /* an instruction's callback: the block's start has one too */
    int exact = g_plugin.cfg.settings.mode == WEFT_MODE_EXACT;
    /* A blamed access's neighbours in its block touch the same data often
     * (a racy statement's loads and stores): gating them with it saves a
     * run per neighbour. */
    int near = 0;
    for (size_t i = 0; g_plugin.spec.on && !near && i < n; i++)
        near = spec_gated(qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i)));
    int visible = sched_visible();
    int reads = plugin_reads_observed();
    int stack_unobserved = plugin_stack_unobserved();
    ti->pc = n ? qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0)) : 0;
    /* The program's own code: its stack accesses through a pointer are
     * recorded (INSN_PROGRAM); without the code map (no symbols), its
     * binary's text, a static program's C library included. */
    int program = g_plugin.sched.have_code
                      ? sched_own_pc(ti->pc)
                      : ti->pc >= qemu_plugin_start_code() && ti->pc < qemu_plugin_end_code();
    /* Replays only: the own_pcs ring in tb_exec is a replay's run end, and
     * a trace loads the code map too. */
    ti->own = g_plugin.sched.policy && g_plugin.sched.have_code && program;
    ti->plt = ti->own && sched_in_plt(ti->pc);
    ti->lib = plugin_lib_rule() && !ti->own;
    ti->stack_wait = g_plugin.sched.policy && !ti->lib && plugin_tb_rereads_stack(tb, n, ti->pc);
    int lib_rule = ti->lib && !insn_tb_closes_wait_loop(tb, n);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        if (qemu_plugin_insn_size(insn) != 4)
            continue;
        uint32_t w;
        memcpy(&w, qemu_plugin_insn_data(insn), 4);
        uint64_t pc = qemu_plugin_insn_vaddr(insn), target;
        /* Visible points: the program's own code only; what the library
         * does inside a call is part of that one step, and a PLT stub's
         * load of its GOT entry (the loader writes it on the first call,
         * lazy binding: a shared address) is that call's way in: it made
         * every library call a second step (a helper's program: k 236,
         * 149 linked with -z now). */
        int own = visible && sched_own_pc(pc) && !sched_in_plt(pc);
        /* YIELD and WFE: the thread says it waits for another. */
        if ((w == 0xd503203fu || w == 0xd503205fu) && g_plugin.sched.policy) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_yield, QEMU_PLUGIN_CB_NO_REGS, NULL);
            any_cb = 1;
            continue;
        }
        const char *callee;
        if (own && insn_branch_target(w, pc, &target) && (callee = sched_sync_target(target))) {
            insn_info *ci = plugin_arena_alloc(sizeof *ci);
            if (ci) {
                *ci = (insn_info){.pc = pc,
                                  .index = (uint32_t)i,
                                  .flags = INSN_CALL | INSN_GATED,
                                  .callee = callee};
                qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_gate, QEMU_PLUGIN_CB_NO_REGS, ci);
                any_cb = 1;
            }
            continue;
        }
        if (!insn_is_load_store(w))
            continue;
        insn_info *ii = plugin_arena_alloc(sizeof *ii);
        if (!ii)
            continue;
        ii->pc = pc;
        ii->index = (uint32_t)i;
        ii->flags = insn_classify(w) | (program ? INSN_PROGRAM : 0);
        *link = ii; /* the block's memory instructions in order, for a fault */
        link = &ii->next;
        /* A race inside the C library on the program's data (a record it
         * copies with memcpy after its unlock) is a point under races: no
         * visible point falls between the unlock and the copy. A shared
         * access there is not (malloc's, stdio's: --points shared). */
        int lib_point = visible && g_plugin.sched.lib_points && !sched_own_pc(pc) &&
                        !sched_in_plt(pc) && !(ii->flags & INSN_SP_BASE) && sched_is_point_pc(pc);
        int gate = visible ? (own && ((ii->flags & INSN_ATOMIC) ||
                                      (!(ii->flags & INSN_SP_BASE) && sched_is_point_pc(pc)))) ||
                                 lib_point
                           : (ii->flags & INSN_ATOMIC) ||
                                 (!(ii->flags & INSN_SP_BASE) && point_at(exact, pc, near));
        if (gate) {
            ii->flags |= INSN_GATED;
            qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_gate, QEMU_PLUGIN_CB_NO_REGS, ii);
            any_cb = 1;
        }
        int plain = !(ii->flags & (INSN_ATOMIC | INSN_RMW));
        if (plain && ti->lib && !gate && !(ii->flags & INSN_SP_BASE) && !sched_own_pc(pc) &&
            ((ii->flags & INSN_STORE) || lib_rule)) {
            if (ii->flags & INSN_STORE) {
                ii->flags |= INSN_LIB_STORE;
                ti->lib_store = 1;
            } else {
                ii->flags |= INSN_LIB_LOAD;
            }
            if (plugin_lib_accesses_unseen(&g_plugin.cfg)) {
                ii->flags |= INSN_UNOBSERVED;
                continue;
            }
        }
        if (plain && (((ii->flags & INSN_SP_BASE) && stack_unobserved) ||
                      (!(ii->flags & INSN_STORE) && !reads))) {
            ii->flags |= INSN_UNOBSERVED; /* no callback at all (a fault: faulting_insn) */
            continue;
        }
        qemu_plugin_register_vcpu_mem_cb(insn, mem_access, QEMU_PLUGIN_CB_NO_REGS,
                                         QEMU_PLUGIN_MEM_RW, ii);
        any_cb = 1;
    }
    /* Registered last, it still runs first (qemu puts a block's callbacks
     * before its instructions'). */
    if (plugin_block_inline(tb, ti, n, any_cb))
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
                                                 &g_plugin.inline_insns, ti->n);
    else
        qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, ti);
}

/* The guest's argv is qemu's command line from the binary on. */
static void fill_meta(weft_trace_meta *m, char **storage)
{
    static char cmdline[65536];
    size_t n = 0;
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (f) {
        n = fread(cmdline, 1, sizeof cmdline - 1, f);
        fclose(f);
    }
    cmdline[n] = 0;
    int count = 0;
    for (size_t i = 0; i < n; i += strlen(cmdline + i) + 1)
        storage[count++ < 1023 ? count - 1 : 1022] = cmdline + i;
    int first = g_plugin.cfg.argi >= 0 && g_plugin.cfg.argi < count ? g_plugin.cfg.argi : count - 1;
    m->argc = (uint32_t)(count - first);
    m->argv = storage + first;
    m->binary_path = m->argc ? m->argv[0] : "";
    /* A relative path read from another directory named no file, or
     * another one: weft races then lost the program's code and counted
     * every atomic as acquire and release (false races in libgomp). */
    static char absolute[PATH_MAX];
    char cwd[PATH_MAX];
    const char *rel = m->argc ? m->binary_path : "/";
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    if (rel[0] != '/' && getcwd(cwd, sizeof cwd) &&
        snprintf(absolute, sizeof absolute, "%s/%s", cwd, rel) < (int)sizeof absolute)
        m->binary_path = absolute;
    int len = m->argc ? weft_elf_build_id(m->binary_path, m->build_id, sizeof m->build_id) : 0;
    m->build_id_len = len > 0 ? (uint32_t)len : 0;
}

/* A guest's fork, not a fork server's (whose children trace). */
static void after_fork_in_child(void)
{
    if (!atomic_load(&g_plugin.server.forking))
        atomic_store(&g_plugin.forked_child, 1);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv)
{
    if (strcmp(info->target_name, "aarch64") != 0) {
        fprintf(stderr, "weft-tracer: guest architecture is %s, weft needs aarch64\n",
                info->target_name);
        return -1;
    }
    if (plugin_parse_args(argc, argv))
        return -1;
    plugin_parallel_note_api(info->version.cur);
    g_plugin.owner_pid = getpid();
    /* The guest shares qemu's fd table: a guest that closes its stderr
     * before exiting (xz does) would silence the plugin's last lines. weft
     * passes a copy (errfd=, guest.c says why); by hand, the plugin dups
     * one, which costs an RCU grace period. Not for the guest's children. */
    g_plugin.stderr_copy =
        g_plugin.cfg.errfd >= 0 && fcntl(g_plugin.cfg.errfd, F_SETFD, FD_CLOEXEC) == 0
            ? g_plugin.cfg.errfd
            : fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 500);
    pthread_atfork(NULL, NULL, after_fork_in_child);
    atomic_store(&g_plugin.exit_cycles, UINT64_MAX);
    atomic_store(&g_plugin.tb_flush_pending, -1);
    pthread_mutex_init(&g_plugin.maps_lock, NULL);
    g_plugin.threads = calloc(g_plugin.cfg.max_pes, sizeof *g_plugin.threads);
    weft_platform_config pc;
    weft_platform_config_default(&pc);
    pc.max_pes = g_plugin.cfg.max_pes;
    pc.ps_per_cycle = g_plugin.cfg.settings.ps_per_cycle;
    pc.stall_ms = g_plugin.cfg.stall_ms;
    char err[512];
    /* SystemC prints a banner on stdout, which is the guest's. */
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    g_plugin.platform = weft_platform_create(&pc, err, sizeof err);
    unsetenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE");
    if (!g_plugin.platform || !g_plugin.threads) {
        fprintf(stderr, "weft-tracer: %s\n", g_plugin.platform ? "out of memory" : err);
        return -1;
    }
    plugin_fork_hooks_setup();
    if (g_plugin.cfg.inject &&
        inject_load(g_plugin.cfg.inject, g_plugin.cfg.max_pes, err, sizeof err)) {
        fprintf(stderr, "weft-tracer: %s\n", err);
        return -1;
    }
    if (sched_setup(err, sizeof err) != 0 || spec_setup(err, sizeof err) != 0) {
        fprintf(stderr, "weft-tracer: %s\n", err);
        return -1;
    }
    static char *argstore[1024];
    fill_meta(&g_plugin.meta, argstore);
    if (sched_load_code(g_plugin.meta.binary_path, err, sizeof err) != 0) {
        fprintf(stderr, "weft-tracer: %s\n", err);
        return -1;
    }
    plugin_inline_setup();
    if (g_plugin.cfg.settings.filter == WEFT_FILTER_SHARED && plugin_shared_init() != 0) {
        fprintf(stderr, "weft-tracer: --filter shared: no memory for the page table\n");
        return -1;
    }
    /* A fork server opens no trace: each child opens its own at the fork. */
    if (g_plugin.server.on ? server_setup(err, sizeof err) : plugin_open_writer(err, sizeof err)) {
        fprintf(stderr, "weft-tracer: %s\n", err);
        return -1;
    }
    if (!g_plugin.server.on)
        plugin_start_watchdog();
    qemu_plugin_register_vcpu_init_cb(id, vcpu_init);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_vcpu_syscall_cb(id, plugin_syscall_entry);
    qemu_plugin_register_vcpu_syscall_ret_cb(id, plugin_syscall_return);
    qemu_plugin_register_atexit_cb(id, plugin_at_exit, NULL);
    return 0;
}
