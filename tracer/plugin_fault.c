/* Keeping a dying guest's trace.
 *
 * qemu-user ends a guest killed by a signal in dump_core_and_abort
 * (linux-user/signal.c, 7.2): it re-raises the signal on itself with the
 * default action, so no atexit handler and no plugin callback runs. So the
 * events are put where death cannot lose them: each vCPU's buffer is a slot
 * of the writer's shared file mapping (weft_trace_writer_buf), which the
 * weft command salvages with the spool.
 *
 * The faulting access itself never reaches a memory callback (they run
 * after the access). Its host SIGSEGV does reach qemu's host handler, which
 * this file wraps: before qemu turns the fault into the guest's signal, the
 * wrapper notes the faulting thread's next memory instruction in the
 * running block (its pc, and the address from the host fault address) in
 * the thread's buffer, and salvage adds it as a FAULT event if the run
 * died of it. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <ucontext.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_replay.h"

static struct sigaction prev_segv, prev_bus;
static atomic_int hooked;
static atomic_ulong fault_seq;
/* host address of guest address 0 (qemu-user's guest_base), once known */
static _Atomic uintptr_t guest_base;
static atomic_int guest_base_known;

static vcpu_state *vcpu_of_this_thread(void)
{
    pid_t tid = gettid();
    for (unsigned i = 0; i < PLUGIN_MAX_VCPUS; i++) {
        vcpu_state *v = g_plugin.vcpus[i];
        if (v && v->tid == tid && v->pe >= 0)
            return v;
    }
    return NULL;
}

/* Was the host fault a write? 1 yes, 0 no, -1 unknown. On an x86-64 host
 * the page-fault error code says (bit 1); a guest store is a host store. */
static int host_fault_is_write(const void *uc)
{
#if defined(__x86_64__) && defined(REG_ERR)
    const ucontext_t *u = uc;
    return u ? (u->uc_mcontext.gregs[REG_ERR] & 2) != 0 : -1;
#else
    (void)uc;
    return -1;
#endif
}

/* Could the instruction make an access of this direction? */
static int insn_may(const insn_info *i, int write)
{
    return (i->flags & INSN_RMW) || ((i->flags & INSN_STORE) != 0) == (write != 0);
}

/* The faulting instruction: the block's first memory instruction after the
 * last one whose callback ran, or, when instructions without a callback
 * (unobserved loads, stack accesses) lie between, the first of those up to
 * the next observed one that could make an access of the host fault's
 * direction. More than one such candidate: `near`. Direction unknown: the
 * first, near if it had no callback. */
static const insn_info *faulting_insn(const vcpu_state *v, int write, int *near)
{
    const insn_info *c = v->last_ii ? v->last_ii->next : v->cur_tb ? v->cur_tb->first_mem : NULL;
    *near = 0;
    if (!c || !(c->flags & INSN_UNOBSERVED))
        return c;
    if (write < 0) {
        *near = 1;
        return c;
    }
    const insn_info *found = NULL;
    for (const insn_info *i = c; i; i = i->next) {
        if (insn_may(i, write)) {
            if (found) {
                *near = 1;
                break;
            }
            found = i;
        }
        if (!(i->flags & INSN_UNOBSERVED))
            break; /* its callback did not run: the fault is here at the latest */
    }
    return found ? found : c; /* the error code disagrees with every candidate: keep the first */
}

/* Async-signal-safe: plain stores into the thread's own buffer. 1 if
 * noted, 0 if the faulting instruction is not known. */
static int note_fault(vcpu_state *v, uintptr_t host_addr, const void *uc)
{
    /* In a block counted inline (plugin_block_inline, a lazy replay's library
     * loads only) the running block is not known: no note. */
    if (__atomic_load_n(&g_plugin.inline_insns, __ATOMIC_RELAXED) != v->inline_seen)
        return 0;
    int write = host_fault_is_write(uc), near;
    const insn_info *c = faulting_insn(v, write, &near);
    if (!c || !atomic_load(&guest_base_known))
        return 0;
    weft_trace_buf *b = v->lb;
    b->fault = (weft_event){
        .time = cycles_to_ns(vcpu_cycles_at(v, v->tb_base + c->index)),
        .addr = (uint64_t)(host_addr - atomic_load(&guest_base)),
        .pc = c->pc,
        .thread = (uint32_t)v->pe,
        .kind = WEFT_EV_FAULT,
        .flags = (uint16_t)(((c->flags & INSN_STORE) ? WEFT_EVF_FAULT_WRITE : 0) |
                            (near ? WEFT_EVF_FAULT_NEAR : 0)),
    };
    b->fault_events = b->base + v->nbuf;
    __atomic_store_n(&b->fault_seq, atomic_fetch_add(&fault_seq, 1) + 1, __ATOMIC_RELEASE);
    plugin_record_fault(&b->fault); /* a replay: for its verdict */
    return 1;
}

static void on_host_fault(int sig, siginfo_t *info, void *uc)
{
    int saved = errno;
    /* si_code > 0: raised by the hardware, not sent by kill. */
    if (info && info->si_code > 0 && !atomic_load(&g_plugin.forked_child) &&
        getpid() == g_plugin.owner_pid) {
        vcpu_state *v = vcpu_of_this_thread();
        /* Not located (a library's block counted inline): a replay's
         * verdict still says whose it was and where its program was. */
        if (v && !note_fault(v, (uintptr_t)info->si_addr, uc))
            plugin_record_raised(v, sig);
    }
    errno = saved;
    const struct sigaction *p = sig == SIGSEGV ? &prev_segv : &prev_bus;
    if (p->sa_flags & SA_SIGINFO) {
        p->sa_sigaction(sig, info, uc);
        /* qemu's handler returns only from a fault it recovered from (a
         * write to a page it had translated code from); a guest's fault
         * leaves it by siglongjmp. */
        if (info && info->si_code > 0 && !atomic_load(&g_plugin.forked_child) &&
            getpid() == g_plugin.owner_pid) {
            vcpu_state *v = vcpu_of_this_thread();
            if (v)
                plugin_record_fault_recovered((uint32_t)v->pe);
        }
    } else if (p->sa_handler != SIG_IGN && p->sa_handler != SIG_DFL) {
        p->sa_handler(sig);
    } else {
        /* Nobody else wanted it: die of it as before. */
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

static void hook(int sig, struct sigaction *prev)
{
    struct sigaction act;
    if (sigaction(sig, NULL, prev) != 0)
        return;
    act = *prev;
    act.sa_sigaction = on_host_fault;
    act.sa_flags |= SA_SIGINFO;
    sigaction(sig, &act, NULL);
}

void plugin_fault_setup(struct qemu_plugin_tb *tb)
{
    if (!atomic_load_explicit(&guest_base_known, memory_order_relaxed) &&
        qemu_plugin_tb_n_insns(tb)) {
        /* qemu-user maps guest address a at host address guest_base + a,
         * and tells a plugin the host address of an instruction's bytes. */
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, 0);
        void *h = qemu_plugin_insn_haddr(insn);
        if (h) {
            atomic_store(&guest_base, (uintptr_t)h - (uintptr_t)qemu_plugin_insn_vaddr(insn));
            atomic_store(&guest_base_known, 1);
        }
    }
    /* The first translation comes after qemu's signal_init. */
    if (!atomic_load_explicit(&hooked, memory_order_relaxed) && !atomic_exchange(&hooked, 1)) {
        hook(SIGSEGV, &prev_segv);
        hook(SIGBUS, &prev_bus);
    }
}

int plugin_guest_base(uintptr_t *base)
{
    if (!atomic_load(&guest_base_known))
        return 0;
    *base = atomic_load(&guest_base);
    return 1;
}

int plugin_buf_attach(vcpu_state *v, unsigned index)
{
    /* A forked child must not touch the parent's shared buffers. */
    weft_trace_buf *b = g_plugin.writer && !atomic_load(&g_plugin.forked_child)
                            ? weft_trace_writer_buf(g_plugin.writer, index)
                            : NULL;
    v->lb_private = b == NULL;
    if (!b && !(b = calloc(1, sizeof *b)))
        return -1;
    b->thread = UINT32_MAX;
    v->lb = b;
    v->buf = b->ev;
    return 0;
}

void plugin_buf_rejoin(void)
{
    for (unsigned i = 0; g_plugin.writer && i < PLUGIN_MAX_VCPUS; i++) {
        vcpu_state *v = g_plugin.vcpus[i];
        weft_trace_buf *b = v && v->lb_private ? weft_trace_writer_buf(g_plugin.writer, i) : NULL;
        if (!b)
            continue;
        uint32_t n = v->lb->n;
        __atomic_store_n(&b->thread, UINT32_MAX, __ATOMIC_RELEASE);
        __atomic_store_n(&b->n, 0, __ATOMIC_RELEASE);
        memcpy(b->ev, v->lb->ev, n * sizeof *b->ev);
        b->base = v->pe >= 0 ? g_plugin.threads[v->pe].events : 0;
        __atomic_store_n(&b->n, n, __ATOMIC_RELEASE);
        __atomic_store_n(&b->thread, v->lb->thread, __ATOMIC_RELEASE);
        free(v->lb);
        v->lb = b;
        v->buf = b->ev;
        v->lb_private = 0;
    }
}

static void size_text(uint64_t b, char *out, size_t n)
{
    if (b && b % (1u << 30) == 0)
        snprintf(out, n, "%" PRIu64 " GiB", b >> 30);
    else if (b && b % (1u << 20) == 0)
        snprintf(out, n, "%" PRIu64 " MiB", b >> 20);
    else
        snprintf(out, n, "%" PRIu64 " bytes", b);
}

void plugin_stop(void)
{
    char lim[32];
    size_text(g_plugin.cfg.max_bytes, lim, sizeof lim);
    uint64_t free_bytes = 0;
    int why = weft_trace_writer_stopped(g_plugin.writer, &free_bytes);
    if (why == WEFT_TRACE_STOP_DISK)
        fprintf(stderr,
                "weft: stopping the run: only %" PRIu64 " MiB left on the trace's file system "
                "(weft keeps %" PRIu64 " MiB and room for the trace free); the trace so far is "
                "kept, flagged truncated\n",
                free_bytes >> 20, g_plugin.cfg.min_free >> 20);
    else
        fprintf(stderr,
                "weft: stopping the run: the trace reached its size limit of %s "
                "(--max-trace-size); the trace so far is kept, flagged truncated\n",
                lim);
    fflush(stderr);
    /* The writer writes nothing more; the buffers are in the live file. */
    _exit(124);
}

/* A thread past --max-threads has no PE: it would run untraced, and a
 * thread waiting for it (a join) would look deadlocked. The run stops as at
 * a trace limit; weft replay recognizes the line (guest_too_many_threads). */
void plugin_too_many_threads(void)
{
    static atomic_int said;
    if (!atomic_exchange(&said, 1)) {
        fprintf(stderr,
                "weft: more than %u threads: raise --max-threads (each thread the program "
                "starts has a PE of its own); stopping the run, the trace so far is kept, "
                "flagged truncated\n",
                g_plugin.cfg.max_pes);
        fflush(stderr);
        if (g_plugin.writer)
            weft_trace_writer_stop(g_plugin.writer, WEFT_TRACE_STOP_THREADS);
        _exit(124);
    }
    for (;;)
        pause(); /* the first one ends the process */
}
