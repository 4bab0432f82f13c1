/* System calls: the OS emulator's side of the plugin. Every syscall is a
 * synchronization point (gated in virtual-time order) costing zero time;
 * futex waits, thread creation and exit are modelled by the platform. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "plugin_replay.h"

/* AArch64 Linux syscall numbers (asm-generic). */
enum {
    SYS_EPOLL_PWAIT = 22,
    SYS_FLOCK = 32,
    SYS_READ = 63,
    SYS_READV = 65,
    SYS_PREAD64 = 67,
    SYS_PSELECT6 = 72,
    SYS_PPOLL = 73,
    SYS_EXIT = 93,
    SYS_EXIT_GROUP = 94,
    SYS_WAITID = 95,
    SYS_FUTEX = 98,
    SYS_NANOSLEEP = 101,
    SYS_SETITIMER = 103,
    SYS_TIMER_CREATE = 107,
    SYS_CLOCK_GETTIME = 113,
    SYS_CLOCK_NANOSLEEP = 115,
    SYS_SCHED_YIELD = 124,
    SYS_TKILL = 130,
    SYS_TGKILL = 131,
    SYS_RT_SIGSUSPEND = 133,
    SYS_RT_SIGACTION = 134,
    SYS_RT_SIGTIMEDWAIT = 137,
    SYS_GETTIMEOFDAY = 169,
    SYS_MSGRCV = 188,
    SYS_SEMTIMEDOP = 192,
    SYS_SEMOP = 193,
    SYS_ACCEPT = 202,
    SYS_CONNECT = 203,
    SYS_RECVFROM = 207,
    SYS_RECVMSG = 212,
    SYS_CLONE = 220,
    SYS_MMAP = 222,
    SYS_ACCEPT4 = 242,
    SYS_WAIT4 = 260,
    SYS_GETRANDOM = 278,
};

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAKE_OP 5
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_PRIVATE_FLAG 128u
#define FUTEX_CLOCK_REALTIME 256u
#define FUTEX_CMD(op) ((op) & ~(FUTEX_PRIVATE_FLAG | 256u)) /* drop PRIVATE and CLOCK_REALTIME */

/* Same values on AArch64 as on the host (asm-generic). */
#include <sched.h>

/* A read of a regular file, a block device or one of the memory devices
 * that never wait (/dev/null, zero, full, random, urandom: major 1) returns
 * at once: its thread stays counted, so it cannot come back behind virtual
 * time (which would make the trace depend on how long the host took).
 * qemu-user hands guest fds to the host unchanged, so the host's fstat sees
 * the guest's file. */
static int reads_at_once(int64_t fd)
{
    struct stat st;
    if (fd < 0 || fd > INT32_MAX || fstat((int)fd, &st) != 0)
        return 0;
    if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
        return 1;
    unsigned minor = minor(st.st_rdev);
    return S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
           (minor == 3 || minor == 5 || minor == 7 || minor == 8 || minor == 9);
}

/* Syscalls that can wait for something outside the guest's threads: the PE
 * stops being counted while in them, or every other thread would wait too. */
static int may_block_indefinitely(int64_t num, int64_t arg0)
{
    switch (num) {
    case SYS_READ:
    case SYS_READV:
    case SYS_PREAD64:
        return !reads_at_once(arg0);
    case SYS_EPOLL_PWAIT:
    case SYS_FLOCK:
    case SYS_PSELECT6:
    case SYS_PPOLL:
    case SYS_WAITID:
    case SYS_RT_SIGSUSPEND:
    case SYS_RT_SIGTIMEDWAIT:
    case SYS_MSGRCV:
    case SYS_SEMTIMEDOP:
    case SYS_SEMOP:
    case SYS_ACCEPT:
    case SYS_CONNECT:
    case SYS_RECVFROM:
    case SYS_RECVMSG:
    case SYS_ACCEPT4:
    case SYS_WAIT4:
        return 1;
    default:
        return 0;
    }
}

/* The main thread's stack window is a guess around its first SP-relative
 * access (plugin.c); a mapping the guest makes inside it is not that stack
 * (a static program's first thread stacks and large buffers land right
 * above it): the window ends before it. Called with maps_lock held. */
static void clip_main_stack(uint64_t lo, uint64_t hi)
{
    vcpu_state *m = atomic_load_explicit(&g_plugin.main_vcpu, memory_order_acquire);
    if (!m)
        return;
    uint64_t sp = g_plugin.main_first_sp;
    uint64_t slo = __atomic_load_n(&m->stack_lo, __ATOMIC_RELAXED);
    uint64_t shi = __atomic_load_n(&m->stack_hi, __ATOMIC_RELAXED);
    if (lo > sp && lo < shi)
        shi = lo;
    else if (hi <= sp && hi > slo)
        slo = hi;
    else
        return;
    __atomic_store_n(&m->stack_lo, slo, __ATOMIC_RELAXED);
    __atomic_store_n(&m->stack_hi, shi, __ATOMIC_RELAXED);
    spec_thread_stack(0, slo, shi);
}

/* Every mmap the guest makes, newest last: glibc maps each thread's stack
 * before clone, so the newest mapping holding clone's newsp is that stack.
 * Under a lock because threads mmap concurrently. */
static void remember_mapping(uint64_t lo, uint64_t len)
{
    pthread_mutex_lock(&g_plugin.maps_lock);
    if (g_plugin.nmaps == g_plugin.maps_cap) {
        size_t cap = g_plugin.maps_cap ? g_plugin.maps_cap * 2 : 256;
        uint64_t *l = realloc(g_plugin.map_lo, cap * sizeof *l);
        uint64_t *h = l ? realloc(g_plugin.map_hi, cap * sizeof *h) : NULL;
        if (l)
            g_plugin.map_lo = l;
        if (h)
            g_plugin.map_hi = h;
        if (l && h)
            g_plugin.maps_cap = cap;
    }
    if (g_plugin.nmaps < g_plugin.maps_cap) {
        g_plugin.map_lo[g_plugin.nmaps] = lo;
        g_plugin.map_hi[g_plugin.nmaps++] = lo + len;
    }
    clip_main_stack(lo, lo + len);
    pthread_mutex_unlock(&g_plugin.maps_lock);
}

static void stack_of(uint64_t sp, uint64_t *lo, uint64_t *hi)
{
    pthread_mutex_lock(&g_plugin.maps_lock);
    *lo = sp > (8u << 20) ? sp - (8u << 20) : 0; /* glibc's default stack size */
    *hi = sp + 4096;
    for (size_t i = g_plugin.nmaps; i-- > 0;) {
        if (sp > g_plugin.map_lo[i] && sp <= g_plugin.map_hi[i]) {
            *lo = g_plugin.map_lo[i];
            *hi = g_plugin.map_hi[i];
            break;
        }
    }
    pthread_mutex_unlock(&g_plugin.maps_lock);
}

static void futex_entry(vcpu_state *v, uint64_t pc)
{
    uint64_t uaddr = v->sys_args[0];
    unsigned cmd = FUTEX_CMD((unsigned)v->sys_args[1]);
    weft_platform *p = g_plugin.platform;
    if ((cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET) || !v->sys_args[3])
        v->timeout_armed = 0; /* only the retry of the fired wait itself times out */
    switch (cmd) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET:
        /* The kernel compares the word: a read, ordered by the syscall's gate. */
        if (g_plugin.spec.on)
            spec_on_access(v, SPEC_KERNEL_PC, 1, uaddr, 4, 0, v->sys_cycles);
        plugin_record(v, WEFT_EV_FUTEX_WAIT, v->sys_cycles, uaddr, pc, 0, 0);
        plugin_flush(v); /* a deadlock report needs this event on disk */
        /* A timeout (argument 4, NULL: none) ends the wait by itself. */
        weft_platform_futex_wait_enter(p, v->pe, uaddr, v->sys_cycles, (int)gettid(),
                                       v->sys_args[3] != 0);
        if (v->sys_args[3]) /* FUTEX_WAIT's timeout is relative, WAIT_BITSET's absolute */
            plugin_timed_wait(v, uaddr, v->sys_args[3], (v->sys_args[1] & FUTEX_PRIVATE_FLAG) != 0,
                              cmd == FUTEX_WAIT                         ? -1
                              : (v->sys_args[1] & FUTEX_CLOCK_REALTIME) ? 0
                                                                        : 1);
        v->futex_waiting = 1;
        break;
    case FUTEX_WAKE:
    case FUTEX_WAKE_BITSET:
    case FUTEX_REQUEUE:
    case FUTEX_CMP_REQUEUE:
        plugin_record(v, WEFT_EV_FUTEX_WAKE, v->sys_cycles, uaddr, pc, 0, 0);
        weft_platform_futex_wake(p, v->pe, uaddr, (int)v->sys_args[2], v->sys_cycles);
        break;
    case FUTEX_WAKE_OP:
        plugin_record(v, WEFT_EV_FUTEX_WAKE, v->sys_cycles, uaddr, pc, 0, 0);
        weft_platform_futex_wake(p, v->pe, uaddr, (int)v->sys_args[2], v->sys_cycles);
        weft_platform_futex_wake(p, v->pe, v->sys_args[4], (int)v->sys_args[3], v->sys_cycles);
        break;
    default: /* PI futexes and friends: not modelled */
        plugin_record(v, WEFT_EV_SYSCALL, v->sys_cycles, SYS_FUTEX, pc, 0, 0);
        weft_platform_syscall_release(p, v->pe, v->sys_cycles, 0);
        v->sys_released = 1;
        break;
    }
}

/* The syscall's place in virtual time: its gate, at the SVC's cycle. A
 * pause (a yield or a sleep under a policy, already told) makes it a
 * point, so the decision that follows it is made here: a loop that polls
 * with a sleep may have no other point, and each of its rounds would cost a
 * real sleep while everybody else waits. */
static void syscall_gate(vcpu_state *v, int64_t num, int pause)
{
    if (!v->begun) /* outside guest code: it may wait for its first turn here */
        plugin_begin_thread(v, 1);
    /* The SVC is the last instruction of its block. */
    v->sys_cycles = vcpu_cycles_at(v, v->insns ? v->insns - 1 : 0);
    /* Where the switch log places a thread asleep in the call: the end of
     * the last block of its own code, the call (a read of a pipe was
     * "place unknown", a yield's thread shown at its last lock). */
    if (g_plugin.sched.policy && v->own_end_pc)
        v->point_pc = v->own_end_pc;
    weft_platform *p = g_plugin.platform;
    uint64_t resume;
    /* With visible points a syscall is the library's business (a futex
     * inside pthread_mutex_lock), except the exits: a thread's end and the
     * process's are the program's own steps. The gate still runs, for the
     * syscall's place in virtual time and its blocking. */
    int quiet = sched_visible() && num != SYS_EXIT && num != SYS_EXIT_GROUP && !pause;
    if (weft_platform_gate(p, v->pe, v->sys_cycles, (uint64_t)num,
                           WEFT_SYNC_SYSCALL | (quiet ? WEFT_SYNC_NOT_A_POINT : 0),
                           &resume) == WEFT_GATE_OK)
        plugin_synced(v, resume);
    v->offset += resume - v->sys_cycles; /* held back by a replay policy */
    v->sys_cycles = resume;
}

/* A thread waiting at a gate while the holder forks leaves qemu's set of
 * vCPUs in guest code, which the fork's exclusive section waits for, and
 * comes back before the holder goes on (weft_platform_set_cpu_hooks): qemu
 * 7.2 exports cpu_exec_end and cpu_exec_start, the calls its own cpu_loop
 * brackets guest code with. Without them the waiter escapes, running the
 * rest of its block out of the policy's order. WEFT_FORK_PARK=0: escape. */
typedef void (*cpu_fn)(void *cpu);
static cpu_fn exec_start, exec_end;
/* In a syscall callback: outside guest code, where qemu's cpu_loop already
 * ended the vCPU's turn. */
static __thread int in_syscall_cb;

static int leave_cpu(void)
{
    void *cpu = plugin_current_cpu();
    if (!cpu || in_syscall_cb)
        return 0;
    exec_end(cpu);
    return 1;
}

static void enter_cpu(void)
{
    void *cpu = plugin_current_cpu();
    if (cpu)
        exec_start(cpu);
}

void plugin_fork_hooks_setup(void)
{
    const char *e = getenv("WEFT_FORK_PARK");
    if ((e && !strcmp(e, "0")) || plugin_qemu_api_version() != 1)
        return;
    exec_start = (cpu_fn)dlsym(RTLD_DEFAULT, "cpu_exec_start");
    exec_end = (cpu_fn)dlsym(RTLD_DEFAULT, "cpu_exec_end");
    if (exec_start && exec_end && dlsym(RTLD_DEFAULT, "current_cpu"))
        weft_platform_set_cpu_hooks(g_plugin.platform, leave_cpu, enter_cpu);
}

/* fork (a clone of the process, not a thread): qemu copies itself inside
 * an exclusive section, which waits for every other vCPU. */
static void fork_entry(vcpu_state *v)
{
    weft_platform *p = g_plugin.platform;
    weft_platform_forking(p, v->pe, 1);
    /* The child gets memory as the host left it, with the ungated
     * writes of threads ahead in virtual time. */
    if (weft_platform_thread_count(p) > 1)
        spec_abandon("fork while other threads run");
}

/* exit and exit_group alike: the thread's last event and its table entry. */
static void thread_ends(vcpu_state *v, thread_record *tr, uint64_t code)
{
    plugin_record(v, WEFT_EV_THREAD_EXIT, v->sys_cycles, code, 0, 0, 0);
    tr->exited = 1;
    tr->exit_code = (int)code;
    tr->insns = v->insns;
    tr->end_cycles = v->sys_cycles;
}

/* One thread's exit: the platform stops counting it at the exit's virtual
 * time rather than when qemu reaps the host thread, so no gate waits for
 * a thread that is gone. */
static void exit_entry(vcpu_state *v, thread_record *tr, uint64_t code)
{
    weft_platform *p = g_plugin.platform;
    thread_ends(v, tr, code);
    plugin_flush(v);
    /* The kernel clears the CLONE_CHILD_CLEARTID word: a write. */
    if (g_plugin.spec.on && weft_platform_thread_clear_tid(p, v->pe))
        spec_on_access(v, SPEC_KERNEL_PC, 1, weft_platform_thread_clear_tid(p, v->pe), 4, 1,
                       v->sys_cycles);
    spec_thread_exited(v->pe, v->sys_cycles);
    weft_platform_thread_exit(p, v->pe, v->sys_cycles);
    __atomic_store_n(&v->lb->thread, UINT32_MAX, __ATOMIC_RELEASE);
    v->pe = -1;
}

/* The process's end: its status and time are kept for the summary, which
 * whichever thread finishes the trace writes (plugin_finish), and events
 * after that time are not the program's. */
static void exit_group_entry(vcpu_state *v, thread_record *tr, uint64_t code)
{
    thread_ends(v, tr, code);
    atomic_store(&g_plugin.exit_code, (int)(code & 0xff));
    atomic_store(&g_plugin.exit_group_seen, 1);
    atomic_store(&g_plugin.exit_cycles, v->sys_cycles);
    plugin_flush(v);
    if (g_plugin.sched.policy && !g_plugin.sched.ppct_host_parallel) {
        /* Under a policy this thread holds the only token: every other
         * thread waits at a gate. Ending the process here, before qemu
         * lets them run while it exits, keeps what they do next out of
         * the run, so a program that returns from main without joining
         * ends the same way for the same seed. */
        plugin_finish(PLUGIN_ENDS_RUN);
        _exit((int)(code & 0xff));
    }
    /* qemu now stops every vCPU in an exclusive section: no gate may hold one. */
    weft_platform_exiting(g_plugin.platform);
}

/* Is the call a sleep, and where is its timeout (a guest address, 0 if
 * none)? nanosleep and clock_nanosleep; under a policy also a pselect6 or
 * ppoll with a timeout (select and poll with a timeout, on descriptors or
 * none: what is ready when the schedule resumes the thread is returned at
 * once, else 0, the timeout up, as a timed futex wait ends when the policy
 * chooses it; left to the host's clock, a consumer polling a pipe with a
 * 5 ms timeout replayed one seed as a pass 11 times and a bug once), and an
 * rt_sigtimedwait with a timeout (a poll for signals: one pending is
 * returned at once, else EAGAIN when the schedule says the time is up, at
 * once; outside a policy they wait released, as before). */
static int is_sleep(int64_t num, const uint64_t args[6], uint64_t *req)
{
    *req = 0;
    if (num == SYS_NANOSLEEP || num == SYS_CLOCK_NANOSLEEP) {
        *req = num == SYS_NANOSLEEP ? args[0] : args[2];
        return 1;
    }
    if (!g_plugin.sched.policy)
        return 0;
    if (num == SYS_PSELECT6 && args[4])
        *req = args[4];
    else if (num == SYS_RT_SIGTIMEDWAIT && args[2])
        *req = args[2];
    else if (num == SYS_PPOLL && args[2])
        *req = args[2];
    return *req != 0;
}

static void syscall_entry_bound(vcpu_state *v, int64_t num, const uint64_t args[6])
{
    uint64_t a1 = args[0];
    memcpy(v->sys_args, args, sizeof v->sys_args);
    v->sys_num = num;
    v->sys_released = 0;
    v->futex_waiting = 0;
    uint64_t req;
    int sleep = is_sleep(num, args, &req);
    int pause = g_plugin.sched.policy && v->begun && (num == SYS_SCHED_YIELD || sleep);
    if (pause && num == SYS_SCHED_YIELD)
        plugin_spin_yield(v); /* demotes, and may find every thread spinning */
    else if (pause)
        plugin_spin_sleep(v);
    syscall_gate(v, num, pause);
    if (num == SYS_CLONE && !(a1 & CLONE_THREAD))
        fork_entry(v);
    weft_platform *p = g_plugin.platform;
    thread_record *tr = &g_plugin.threads[v->pe];
    if (num == SYS_SCHED_YIELD || sleep) {
        /* The thread cannot progress by itself: a policy may demote it
         * (NeedlePoint's starvation rule). */
        plugin_record(v, WEFT_EV_SYSCALL, v->sys_cycles, (uint64_t)num, 0, 0, 0);
        if (sleep && !g_plugin.sched.policy) {
            /* A real sleep waits on the host's clock: counted, it held up
             * every other thread's gates (a thread asleep for an hour as
             * main returned made weft trace wait for 23 stall escapes). */
            weft_platform_syscall_release(p, v->pe, v->sys_cycles, 0);
            v->sys_released = 1;
        } else if (!pause) /* told before the gate */
            weft_platform_yield(p, v->pe);
        else if (sleep) /* clock_nanosleep with TIMER_ABSTIME (1): until a time on its clock */
            plugin_sleep_skip(v, req,
                              num == SYS_NANOSLEEP || num == SYS_CLOCK_NANOSLEEP ||
                                  num == SYS_RT_SIGTIMEDWAIT,
                              num == SYS_CLOCK_NANOSLEEP && (args[1] & 1) ? (int64_t)args[0] : -1);
        return;
    }
    if (g_plugin.sched.policy) {
        weft_platform_outside(p, v->pe);
        /* A handler of a classic signal, or a timer: a thread may yield
         * until a signal comes from outside, in wall time. */
        if ((num == SYS_RT_SIGACTION && a1 < 32 && args[1]) || num == SYS_SETITIMER ||
            num == SYS_TIMER_CREATE)
            weft_platform_signals_expected(p);
    }
    switch (num) {
    case SYS_FUTEX:
        if (g_plugin.sched.policy) /* a wake, or a wait that may be woken: not spinning */
            weft_platform_progress(p, v->pe);
        futex_entry(v, 0);
        break;
    case SYS_EXIT:
        exit_entry(v, tr, a1);
        break;
    case SYS_EXIT_GROUP:
        exit_group_entry(v, tr, a1);
        break;
    case SYS_TKILL:
    case SYS_TGKILL: /* abort() and raise(): to the calling thread itself */
        plugin_record(v, WEFT_EV_SYSCALL, v->sys_cycles, (uint64_t)num, 0, 0, 0);
        if ((num == SYS_TKILL ? a1 : args[1]) == (uint64_t)gettid())
            plugin_record_raised(v, (int)(num == SYS_TKILL ? args[1] : args[2]));
        server_redirect_kill(num, args);
        break;
    default:
        plugin_record(v, WEFT_EV_SYSCALL, v->sys_cycles, (uint64_t)num, 0, 0, 0);
        if (may_block_indefinitely(num, (int64_t)v->sys_args[0])) {
            weft_platform_syscall_release(p, v->pe, v->sys_cycles, 1);
            v->sys_released = 1;
        }
        break;
    }
}

/* A wait whose timeout ended it (-ETIMEDOUT, -EAGAIN for sigtimedwait,
 * nothing ready for ppoll / pselect6): the guest computed its deadline from
 * the host's clock and the host's clock expired it, so how often this
 * happens, and what the program does next, varies from run to run. */
static int ended_by_timeout(const vcpu_state *v, int64_t num, int64_t ret)
{
    switch (num) {
    case SYS_FUTEX:
        return v->futex_waiting && ret == -110;
    case SYS_RT_SIGTIMEDWAIT:
        return ret == -11;
    case SYS_PPOLL:
        return ret == 0 && v->sys_args[2] != 0;
    case SYS_PSELECT6:
        return ret == 0 && v->sys_args[4] != 0;
    default:
        return 0;
    }
}

/* Back from a wait the model did not end, at `resume`: past every gate the
 * others passed meanwhile (weft_platform_syscall_return). In exact mode it
 * passes a gate there, so that everything below it has run: its sync key
 * (else what the others did meanwhile would stay unordered with what it
 * does next, and be blamed). */
static void syscall_rejoined(vcpu_state *v, int64_t num, uint64_t resume)
{
    if (resume != v->sys_cycles) /* said at the end: which thread, after what */
        atomic_store(&g_plugin.last_rejoin, ((uint64_t)v->pe + 1) << 32 | (uint32_t)num);
    v->offset += resume - v->sys_cycles;
    if (resume == v->sys_cycles || g_plugin.cfg.settings.mode != WEFT_MODE_EXACT ||
        g_plugin.sched.policy)
        return;
    uint64_t at;
    if (weft_platform_gate(g_plugin.platform, v->pe, resume, 0, WEFT_SYNC_ACCESS, &at) ==
        WEFT_GATE_OK)
        plugin_synced(v, resume);
}

static void syscall_return_bound(vcpu_state *v, int64_t num, int64_t ret)
{
    /* A sleep made to return at once ended by its (zeroed) timeout, which
     * no host clock decided. */
    int skipped = v->sleep_patched;
    plugin_sleep_restore(v);
    if (num == SYS_GETRANDOM || num == SYS_READ || num == SYS_PREAD64)
        plugin_random_return(v, num == SYS_GETRANDOM, ret);
    if (num == SYS_CLOCK_GETTIME || num == SYS_GETTIMEOFDAY)
        plugin_clock_read(v, num == SYS_GETTIMEOFDAY, ret);
    if (!skipped && ended_by_timeout(v, num, ret))
        atomic_fetch_add(&g_plugin.host_timeouts, 1);
    weft_platform *p = g_plugin.platform;
    if (num == SYS_CLONE && !(v->sys_args[0] & CLONE_THREAD))
        weft_platform_forking(p, v->pe, 0);
    weft_platform_syscall_done(p, v->pe);
    if (v->futex_waiting) {
        uint64_t resume = weft_platform_futex_wait_return(p, v->pe, v->sys_cycles);
        uint64_t woke_at;
        int waker = weft_platform_woken_by(p, v->pe, &woke_at);
        if (waker < 0)
            syscall_rejoined(v, num, resume);
        else
            v->offset += resume - v->sys_cycles;
        if (waker >= 0 && (woke_at > v->sync_t || (woke_at == v->sync_t && waker > v->sync_pe))) {
            v->sync_t = woke_at; /* everything before the waker's wake had run */
            v->sync_pe = waker;
        }
        v->futex_waiting = 0;
        v->timeout_armed = weft_platform_timeout_fired(p, v->pe);
        if (v->timeout_armed) /* the deadline passed, for whoever reads a clock */
            plugin_clock_passed(v->timeout_at);
    } else if (v->sys_released) {
        syscall_rejoined(v, num, weft_platform_syscall_return(p, v->pe, v->sys_cycles));
        v->sys_released = 0;
    } else if (num == SYS_MMAP && ret > 0 && (ret & 0xfff) == 0) {
        remember_mapping((uint64_t)ret, v->sys_args[1]);
    } else if (num == SYS_CLONE && ret > 0 && (v->sys_args[0] & CLONE_VM) &&
               (v->sys_args[0] & CLONE_THREAD)) {
        uint64_t clear_tid = (v->sys_args[0] & CLONE_CHILD_CLEARTID) ? v->sys_args[4] : 0;
        int child = weft_platform_thread_create(p, v->pe, (uint64_t)ret, v->sys_cycles, clear_tid);
        if (child < 0)
            plugin_too_many_threads();
        thread_record *ct = &g_plugin.threads[child];
        stack_of(v->sys_args[1], &ct->stack_lo, &ct->stack_hi);
        /* What SP can reach: below the initial SP. The thread descriptor and
         * TLS above it are reached from other registers and are checked. */
        spec_thread_stack(child, ct->stack_lo, v->sys_args[1]);
        /* The child exists only from here on: what was ordered before the
         * parent's clone was done before the child's first access. */
        ct->sync_t = v->sync_t;
        ct->sync_pe = v->sync_pe;
        if (child == 1 && !g_plugin.parallel_from_start)
            atomic_store(&g_plugin.tb_flush_pending, v->pe);
        /* The program's libraries are loaded by now (a fork server's child
         * has them from the server, which looked before it forked). */
        if (child == 1 && !(g_plugin.sched.policy && g_plugin.meta.nobjects))
            plugin_note_objects();
        atomic_store(&g_plugin.threads[child].ready, 1);
    }
}

/* Both callbacks run in weft's code from start to end (see weft_platform_busy). */
void plugin_syscall_entry(qemu_plugin_id_t id, unsigned int vcpu_index, int64_t num, uint64_t a1,
                          uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                          uint64_t a7, uint64_t a8)
{
    (void)id;
    (void)a7;
    (void)a8;
    vcpu_state *v = plugin_vcpu(vcpu_index);
    if (!v || v->pe < 0 || getpid() != g_plugin.owner_pid)
        return;
    if (g_plugin.server.in_prefix)
        server_at_syscall(v, num, a1); /* a fork server serves from its first clone */
    const uint64_t args[6] = {a1, a2, a3, a4, a5, a6};
    int pe = v->pe;
    /* A system call of a thread whose fault is noted (its handler's
     * rt_sigreturn, or any after a siglongjmp): it survived. Before the
     * call's own bookkeeping, which notes an abort's tgkill. */
    plugin_record_ran_on(pe);
    plugin_inline_enter(v); /* the SVC's block may have been counted inline */
    weft_platform_busy(g_plugin.platform, pe, 1);
    in_syscall_cb = 1;
    syscall_entry_bound(v, num, args);
    in_syscall_cb = 0;
    weft_platform_busy(g_plugin.platform, pe, -1);
    plugin_inline_resync(v);
}

void plugin_syscall_return(qemu_plugin_id_t id, unsigned int vcpu_idx, int64_t num, int64_t ret)
{
    (void)id;
    vcpu_state *v = plugin_vcpu(vcpu_idx);
    if (!v || v->pe < 0 || getpid() != g_plugin.owner_pid || num != v->sys_num)
        return;
    int pe = v->pe;
    plugin_inline_resync(v); /* others may have run meanwhile: not its instructions */
    weft_platform_busy(g_plugin.platform, pe, 1);
    in_syscall_cb = 1;
    syscall_return_bound(v, num, ret);
    if (g_plugin.sched.policy) /* the call may have woken a thread asleep in a read */
        weft_platform_settle_released(g_plugin.platform, pe);
    in_syscall_cb = 0;
    weft_platform_busy(g_plugin.platform, pe, -1);
    v->inline_fresh = 1;
    plugin_host_delay();
}
