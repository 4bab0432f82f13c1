/* State shared by the plugin's translation, memory and syscall callbacks.
 * Private to tracer/plugin*.c. */
#ifndef WEFT_PLUGIN_STATE_H
#define WEFT_PLUGIN_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#include <qemu-plugin.h>

#include "weft/pct.h"
#include "weft/platform.h"
#include "weft/trace.h"

#include "insn_decode.h"
#include "spec_shadow.h"

#define PLUGIN_MAX_VCPUS WEFT_TRACE_BUF_SLOTS
#define PLUGIN_BUF_EVENTS WEFT_TRACE_BUF_EVENTS
/* Events per thread a lazy run keeps (see plugin_open_writer). */
#define PLUGIN_TAIL_EVENTS (2 * PLUGIN_BUF_EVENTS)
/* Default trace limits (see docs/trace-format.md, "Limits"): a spool of
 * 4 GiB is ~650 million events, minutes of tracing and more than any of
 * weft's analyses handles comfortably; the final trace is several times
 * smaller. The reserve leaves room for that trace and for everyone else. */
#define PLUGIN_MAX_BYTES (4ull << 30)
#define PLUGIN_MIN_FREE (256ull << 20)

/* What translation learned about one memory instruction, handed to its
 * callbacks. */
typedef struct insn_info {
    uint64_t pc;
    uint32_t index; /* position in its TB */
    uint32_t flags;
    struct insn_info *next; /* the block's next memory instruction */
    const char *callee;     /* INSN_CALL: the synchronization function called */
} insn_info;

/* insn_decode.h's flags, and the plugin's: */
#define INSN_GATED 0x8u       /* has a gate */
#define INSN_CALL 0x20u       /* the program calls a synchronization function: a visible point */
#define INSN_UNOBSERVED 0x40u /* no callback: a plain load nobody reads, or a stack access */
/* replays with libaccess= (plugin_lib_rule): a library's plain load outside a
 * wait loop, and any plain store of a library (its block counts the progress) */
#define INSN_LIB_LOAD 0x80u
#define INSN_LIB_STORE 0x100u
/* The program's own code (not a library's): its accesses to its own stack
 * through a pointer are recorded, since it may have handed that pointer to
 * other threads (a local shared with workers, an OpenMP shared variable) */
#define INSN_PROGRAM 0x200u

/* A translation block: its length, and its memory instructions in order. */
typedef struct tb_info {
    uint32_t n;
    uint32_t lib;       /* plugin_lib_rule: library code, its loads watched in wait loops only */
    uint32_t lib_store; /* ... with a plain store outside its stack: progress */
    uint32_t own;       /* replays: the program's own code (sched_own_pc) */
    uint32_t plt;       /* ... its PLT stubs (sched_in_plt) */
    /* replays: it closes a loop that rereads a stack word and stores nothing
     * (insn_loop_rereads_stack): counted like a library's blocks for the
     * spin rule, since its loads have no callback */
    uint32_t stack_wait;
    uint64_t pc;
    insn_info *first_mem;
} tb_info;

/* One per vCPU index. qemu reuses indices after a thread exits, so a vCPU is
 * bound to a platform PE (by guest TID) on its first translation block. */
typedef struct vcpu_state {
    int pe;                      /* -1 until bound */
    int begun;                   /* THREAD_START recorded: the thread had its first turn */
    uint64_t tb_base;            /* instructions retired before the current TB */
    uint64_t insns;              /* instructions retired including the current TB */
    uint64_t offset;             /* cycles added by blocking and injected delays */
    uint64_t last_gate;          /* cycles of the last gate passed (exact-mode quantum) */
    uint64_t stack_lo, stack_hi; /* this thread's stack, [lo, hi) */
    /* Speculation: every other thread's access below (sync_t, sync_pe) in the
     * arbiter's order has executed (sync_pe -1: none known). */
    uint64_t sync_t;
    int32_t sync_pe;
    spec_cursor spec_cur;
    uint64_t spec_last_blame; /* the last pc this vCPU had blamed */
    /* The last stack lookup: an address in [spec_stk_lo, spec_stk_hi) of the
     * table spec_stk_table is in spec_stk_hit (NULL: in no stack). */
    const struct spec_stacks *spec_stk_table;
    uint64_t spec_stk_lo, spec_stk_hi;
    const struct spec_stack *spec_stk_hit;
    /* syscall in flight */
    int64_t sys_num;
    uint64_t sys_args[6];
    uint64_t sys_cycles;
    int sys_released;
    int futex_waiting;
    /* A sleep's timeout, zeroed in guest memory for the call (replays:
     * plugin_sleep.c): 1 to restore at its return, 2 not; where (a guest
     * address) and what it was. */
    int sleep_patched;
    uint64_t sleep_at;
    unsigned char sleep_saved[16];
    /* The schedule fired the timeout of its last futex wait: the next
     * timed wait (glibc's retry) times out at once (plugin_sleep.c). */
    int timeout_armed;
    uint64_t timeout_at;   /* the scheduled timed wait's deadline, virtual ns (plugin_clock.c) */
    uint64_t last_call_pc; /* the program's last synchronization call (visible points) */
    /* replays: the last blocks of the program's own code it started, a ring */
    uint64_t own_pcs[WEFT_RUN_END_PCS];
    uint32_t own_n;
    uint64_t own_end_pc; /* the last instruction of the last such block (a call) */
    uint64_t point_pc;   /* the last gate it reached (replays: the switch log's place) */
    const char *last_callee;
    /* Spin watch (replays): gated loads since anyone last wrote (the
     * platform's progress epoch spin_epoch, checked when another thread ran
     * since spin_sw), and the few addresses they read. */
    uint64_t spin_sw, spin_epoch, spin_loads, spin_addr[4], last_gated_pc;
    unsigned nspin;
    /* ... and library blocks run in a row with no such write (libaccess=loops) */
    uint64_t lib_sw, lib_epoch, lib_blocks;
    /* POS: what the thread touched at its last point, and where each gated
     * pc went last time (a direct-mapped guess of a pending access). */
    uint64_t exec_obj;
    int exec_acc;
    struct {
        uint64_t pc, addr;
        int acc;
    } guess[64];
    /* where a fault would be: the block running and its last memory
     * instruction done (plugin_fault.c) */
    const tb_info *cur_tb;
    const insn_info *last_ii;
    pid_t tid;
    size_t nbuf;
    weft_event *buf;      /* lb->ev */
    weft_trace_buf *lb;   /* in the writer's crash-proof file, or private */
    int lb_private;       /* lb is ours (calloc), not the writer's */
    weft_block_fast fast; /* the platform's block start, inline (its pe's) */
    uint64_t inline_seen; /* g_plugin.inline_insns when it last left a callback */
    uint64_t stores_seen; /* g_plugin.inline_lib_stores then */
    int inline_fresh;     /* back from a syscall, or new: no guest code of its own since */
} vcpu_state;

/* Per guest thread (PE), for the trace's thread table. */
typedef struct thread_record {
    uint64_t events;
    uint64_t insns;
    uint64_t end_cycles;
    int exited;
    int exit_code;
    uint64_t delays;             /* DELAY events recorded (injections applied) */
    uint64_t stack_lo, stack_hi; /* from the mmap holding clone's newsp */
    atomic_int ready;            /* the parent has filled in the stack and sync key */
    uint64_t sync_t;             /* the creator's sync key at clone: the child's first */
    int32_t sync_pe;
} thread_record;

typedef struct plugin_config {
    const char *out;
    weft_trace_settings settings;
    uint32_t max_pes;
    uint32_t stall_ms;
    int argi;             /* index of the guest binary in /proc/self/cmdline */
    const char *inject;   /* delays to inject ("thread seq pc delay_cycles" lines) */
    const char *injected; /* JSON report of what was injected */
    uint64_t max_events;  /* stop recording after about this many events (0: no limit) */
    uint64_t max_bytes;   /* stop the run when the spool would pass this (0: no limit) */
    int raw_spool;        /* spool=raw: raw chunks, not segments (a learning run's) */
    uint64_t min_free;    /* ... or when its file system has less free (0: never) */
    int not_durable;      /* sync=0: the trace is not fsynced (a campaign's run) */
    int summary_only; /* lazy=1: no events in the trace unless the run deadlocked or livelocked */
    /* libaccess=loops: a replay watches libraries' plain loads in wait loops
     * only, and counts their plain stores as progress by block (a lazy run
     * does not see the others); skip: nor does it record them (profiling's
     * counting runs) */
    int lib_access;
    uint64_t wait_loop_bytes; /* ... those closed by a branch back over at most this */
    int errfd;                /* errfd=N: weft's copy of qemu's stderr, or -1 */
} plugin_config;

enum { LIB_ACCESS_ALL, LIB_ACCESS_LOOPS, LIB_ACCESS_SKIP };
/* Does a replay neither watch nor record libraries' plain stores and their
 * plain loads outside wait loops, so that they need no callback? */
static inline int plugin_lib_accesses_unseen(const plugin_config *c)
{
    return c->lib_access == LIB_ACCESS_SKIP ||
           (c->lib_access == LIB_ACCESS_LOOPS && c->summary_only);
}

/* Replays: which plain accesses are schedule points. */
typedef enum points_kind {
    POINTS_NONE = 0,
    POINTS_ALL = 1,
    POINTS_PCS = 2,
    /* The program's own visible operations: its calls of the C library's
     * synchronization, its atomics, its accesses at the pcs of the file, its
     * thread and process exits; nothing inside the library is a point. */
    POINTS_VISIBLE = 3
} points_kind;

/* One decision of a replay's switch log (plugin_sched.c): a switch, or a
 * yielded thread chosen again. Threads are PEs; seq is how many events the
 * thread had recorded (its next event's seq); pc the last gate it reached. */
#define SCHED_LOG_MAX 10000
#define SCHED_LOG_ENABLED 16
typedef struct sched_switch {
    uint64_t step, from_pc, to_pc, from_seq, to_seq;
    int32_t from, to;
    uint32_t change_point, nenabled;
    uint8_t why, preempt, stay;
    uint8_t timeout;    /* `to` was asleep in a timed wait: the decision fires its timeout */
    uint8_t timed_wait; /* `from` yielded by falling asleep in a timed wait */
    int32_t enabled[SCHED_LOG_ENABLED]; /* the first of nenabled */
} sched_switch;

typedef struct sched_state {
    pct_config cfg;
    pct_policy *policy; /* NULL: ideal platform (weft trace) */
    int requested;      /* a sched= argument was given */
    int points;         /* points_kind */
    const char *pcs_path;
    int lib_points; /* points=races:FILE: the library's pcs of the file are points too */
    uint64_t *pcs;  /* sorted */
    size_t npcs;
    int ppct_host_parallel;
    int real_sleeps;         /* realsleep=1: the host sleeps as asked */
    int real_random;         /* realrandom=1: getrandom and /dev/urandom as the host gives */
    const char *record_path; /* JSON record of the policy's run */
    weft_code_map code;      /* POINTS_VISIBLE: link-time addresses */
    int have_code;
    _Atomic int64_t bias;      /* load address - link address, once known (INT64_MIN before) */
    const char *schedule_path; /* sched=script: the schedule file's switches */
    pct_script_switch *script;
    sched_switch *log; /* ring of the last SCHED_LOG_MAX decisions */
    uint64_t log_total, log_stays, log_preemptions;
    /* Every decision also appended to this file as it happens, one JSON
     * line each: a run that dies of a signal writes no record. */
    const char *switchlog_path;
    int switchlog_fd;   /* -1: none */
    pct_status *status; /* the record's .status file, mapped; or NULL */
} sched_state;

/* Exact mode by speculation (plugin_spec.c): only atomics, syscalls and the
 * pcs in `gates` are gated; a shadow checks that every conflicting pair
 * still ran in virtual-time order and blames the pcs that need a gate. */
typedef struct spec_stack {
    uint64_t lo, hi;
    int pe;
    int32_t exit_pe; /* -1 while the owner lives; then its exit key (exit_t, pe) */
    uint64_t exit_t;
} spec_stack;

typedef struct spec_stacks {
    size_t n;
    spec_stack v[];
} spec_stacks;

typedef struct spec_state {
    int on;
    const char *learn_path; /* blamed pcs are appended here, one per line */
    const char *gates_path; /* pcs to gate, one per line (hex) */
    int learn_fd;
    uint64_t *gates; /* sorted */
    size_t ngates;
    uint64_t range_lo[8], range_hi[8]; /* gated from the start (weft's seeded functions) */
    unsigned nranges;
    spec_shadow *shadow;
    pthread_mutex_t lock; /* blamed[], learn_fd, stacks updates */
    uint64_t *blamed;
    size_t nblamed, blamed_cap;
    _Atomic(spec_stacks *) stacks; /* thread stacks, sorted by lo; replaced, never edited */
    atomic_ulong unordered;        /* blames on gated pcs: ordering holes gating cannot close */
    atomic_int abandoned;          /* the shadow ran out of memory: the run is not checked */
    atomic_int invalid; /* a pc was blamed: this trace will be discarded, record no more */
} spec_state;

/* A fork server (plugin_server.c): the program runs once up to its first
 * thread creation; from there each request forks a child that runs one
 * seed to its end, as a fresh qemu would have. */
typedef struct server_state {
    int on;             /* server=RFD:WFD: this qemu is a fork server */
    int in_prefix;      /* the server before its first clone: events kept in memory */
    int child;          /* a server's child, running one seed */
    int rfd, wfd;       /* requests in, answers out */
    atomic_int forking; /* the server's own fork is under way: not a guest's */
    weft_event *prefix; /* events flushed before the first clone (thread 0's) */
    size_t nprefix, cap;
    /* the flushes they came in: a child appends them the same way, as a
     * trace's chunks follow its appends */
    uint32_t *pieces;
    size_t npieces, pieces_cap;
    int placeholder_fd; /* keeps the trace spool's fd number for the children */
    /* A child: the server's main thread's tid, which glibc keeps in the main
     * thread's descriptor, and the child's own (server_redirect_kill) */
    pid_t stale_tid, main_tid;
} server_state;

typedef struct plugin {
    plugin_config cfg;
    server_state server;
    weft_trace_meta meta; /* the trace's header, kept for a fork server's children */
    sched_state sched;
    spec_state spec;
    weft_platform *platform;
    weft_trace_writer *writer;
    pid_t owner_pid; /* a forked guest child must not touch the trace */
    int stderr_copy; /* weft's stderr, kept from the guest closing fd 2 (or -1) */
    /* Set in a forked guest child (pthread_atfork): its callbacks do
     * nothing. Its copy of the platform still counts the parent's threads,
     * which do not exist there, so any gate would wait for them. */
    atomic_int forked_child;
    vcpu_state *vcpus[PLUGIN_MAX_VCPUS];
    thread_record *threads; /* [max_pes] */
    atomic_int main_bound;
    /* The main thread's stack window is learnt (from its first SP-relative
     * access): later blocks need no callback on plain SP-relative accesses
     * when the filter drops stack events anyway. */
    atomic_int main_stack_known;
    /* Its vCPU and first SP-relative address, once known: a guest mapping
     * inside the window ends it (plugin_syscall.c). */
    _Atomic(vcpu_state *) main_vcpu;
    uint64_t main_first_sp;
    atomic_int exit_group_seen;
    atomic_int exit_code;
    /* Virtual time of exit_group: what other threads run after it (until
     * qemu stops them) is past the end of the program and not recorded. */
    _Atomic uint64_t exit_cycles;
    atomic_int finished;
    /* The first clone makes qemu flush its translations, which it does in an
     * exclusive section when the parent next leaves guest code, before its
     * next block. Until then no other vCPU may wait inside guest code: this
     * is the parent's PE, or -1 once the parent runs its next block. */
    atomic_int tb_flush_pending;
    int parallel_from_start; /* qemu made parallel code from the start: no flush at the clone */
    /* Blocks counted inline (plugin_block_inline): the instructions run in
     * them, by whichever thread holds the token; count_inline says whether
     * this run counts so, decided before the first translation. */
    uint64_t inline_insns;
    /* ... and the library blocks among them that store (progress for the
     * spin rule, which the running thread takes at its next callback) */
    uint64_t inline_lib_stores;
    int count_inline;
    /* WEFT_HOST_DELAY=1 (tests): a thread sleeps where the host's
     * scheduler may keep it off a core while the holder runs on, after its
     * syscall returns and before a new thread's first block; nothing of the
     * run may change (tests/e2e/replay_inline_blocks.sh). */
    int host_delay;
    uint64_t inline_blocks; /* translated so (WEFT_PLUGIN_STATS) */
    uint64_t translated; /* blocks translated by this process (a server's child: since its fork) */
    atomic_ulong write_errors;
    _Atomic uint64_t flushed; /* events handed to the writer, counted for max_events */
    atomic_int capped;        /* max_events reached: record no more, flag the trace truncated */
    /* Waits with a timeout that ended by it: when (and whether) that happens
     * is the host clock's decision, not virtual time's. */
    atomic_ulong host_timeouts;
    /* The last thread that came back from a wait outside the guest after
     * the others ran on: (pe + 1) << 32 | its syscall number; 0: none. */
    _Atomic uint64_t last_rejoin;
    atomic_ulong sleeps_skipped; /* replays: sleeps that returned at once (plugin_sleep.c) */
    atomic_ulong random_fills;   /* replays: random bytes given from the fixed stream */
    /* mmap'd regions, to find a new thread's stack from clone's newsp */
    pthread_mutex_t maps_lock;
    uint64_t *map_lo, *map_hi;
    size_t nmaps, maps_cap;
} plugin;

extern plugin g_plugin;

/* A replay's libaccess=loops: libraries' plain loads outside wait loops are
 * not watched for spinning, their plain stores are progress by block (the
 * spin watch starts over when a block with one starts), and a lazy run
 * calls back neither (in a real program most of its accesses: zlib's,
 * libbz2's, liblzma's; results/bench-replay-real.md). The program's own
 * code is watched whole. Both kinds of run apply the same rule, so a seed
 * schedules the same with --save-trace or without. It needs the code map
 * (plugin_sched.c) to tell the libraries' code. */
static inline int plugin_lib_rule(void)
{
    return g_plugin.cfg.lib_access != LIB_ACCESS_ALL && g_plugin.sched.policy &&
           g_plugin.sched.have_code;
}

/* plugin_args.c: g_plugin.cfg from the plugin's arguments; 0, or -1 (said
 * on stderr). */
int plugin_parse_args(int argc, char **argv);
/* The program is loaded at start_code: link-time addresses in the
 * arguments move with a position-independent program. */
void plugin_args_relocate(uint64_t start_code);

/* plugin_objects.c: the guest's shared objects as they are mapped now,
 * into the meta and the writer if there is one (weft_trace_writer_set_loaded). */
void plugin_note_objects(void);

/* plugin_insn.c */
void *plugin_arena_alloc(size_t n);
int insn_tb_closes_wait_loop(struct qemu_plugin_tb *tb, size_t n);
/* Decided once: a serialized replay (one thread runs at a time) with the
 * library rule, no injections, no speculation, unless WEFT_INLINE_BLOCKS=0. */
void plugin_inline_setup(void);
/* Is the block (its tb_info filled in, any_cb: some instruction of it has
 * a callback) one whose start needs no callback, its instructions counted
 * by an inline add to g_plugin.inline_insns? One with no callback of any of
 * its instructions, not right after an SVC (where a new thread starts and
 * a syscall returns), and in a library without a backward jump at its end
 * closing a loop that may wait (such a loop keeps its count of blocks for
 * the spin watch). A library block that stores also adds one to
 * g_plugin.inline_lib_stores: its thread's progress. */
int plugin_block_inline(struct qemu_plugin_tb *tb, const tb_info *ti, size_t n, int any_cb);
/* Does the block, starting at start, close a loop that rereads a stack
 * word and stores nothing (insn_loop_rereads_stack)? */
int plugin_tb_rereads_stack(struct qemu_plugin_tb *tb, size_t n, uint64_t start);

/* Instructions run in inline-counted blocks belong to the thread that ran
 * them since it last left a callback: one thread runs guest code at a time.
 * A callback entered from guest code adds them (settle); one that may have
 * waited, or follows a syscall, starts counting anew when it leaves
 * (resync). With no inline counting both are no-ops.
 * A thread back from a syscall, or new, is not the holder yet: between its
 * callback's resync and its next block's (the pc after the SVC, never
 * counted inline) the holder runs on, as long as the host keeps this thread
 * off a core. That block's callback therefore resyncs instead of settling
 * (plugin_inline_enter). */
void plugin_spin_progress(vcpu_state *v); /* plugin_spin.c */

static inline void plugin_inline_settle(vcpu_state *v)
{
    uint64_t g = __atomic_load_n(&g_plugin.inline_insns, __ATOMIC_RELAXED);
    v->insns += g - v->inline_seen;
    v->inline_seen = g;
    uint64_t s = __atomic_load_n(&g_plugin.inline_lib_stores, __ATOMIC_RELAXED);
    if (s != v->stores_seen) {
        v->stores_seen = s;
        plugin_spin_progress(v); /* what the block's own call did at its start */
    }
}

static inline void plugin_inline_resync(vcpu_state *v)
{
    v->inline_seen = __atomic_load_n(&g_plugin.inline_insns, __ATOMIC_RELAXED);
    v->stores_seen = __atomic_load_n(&g_plugin.inline_lib_stores, __ATOMIC_RELAXED);
}

void plugin_host_delay(void);

/* At a block's callback: settle, or resync for a thread that ran no guest
 * code since its syscall or its creation. */
static inline void plugin_inline_enter(vcpu_state *v)
{
    if (v->inline_fresh) {
        v->inline_fresh = 0;
        plugin_inline_resync(v);
    } else {
        plugin_inline_settle(v);
    }
}

/* plugin_fault.c */
/* At each translation: learns where guest memory sits in the host's, and
 * the first time hooks the host SIGSEGV/SIGBUS handlers (qemu installs its
 * own after loading plugins) to note a faulting access before qemu's
 * handler turns it into the guest's fatal signal. */
void plugin_fault_setup(struct qemu_plugin_tb *tb);
/* qemu-user's guest_base (host address of guest address 0): 1 once known. */
int plugin_guest_base(uintptr_t *base);

/* plugin_guest_mem.c */
/* The guest's memory at guest address addr (len bytes), from a syscall
 * callback: 0, or -1 if the address is not mapped or not yet known. */
int plugin_guest_read(uint64_t addr, void *buf, size_t len);
/* plugin_server.c: in a server's child, a tkill or tgkill (args as the
 * syscall's) of the main thread by the server's tid, sent to the child's. */
void server_redirect_kill(int64_t num, const uint64_t args[6]);
int plugin_guest_write(uint64_t addr, const void *buf, size_t len);
/* The vCPU's event buffer: the writer's crash-proof one if it can. */
int plugin_buf_attach(vcpu_state *v, unsigned index);
/* A fork server's child, once its writer is open: the buffers the server
 * kept in private memory (it had no writer) move to the writer's
 * crash-proof ones, as a fresh run's are. */
void plugin_buf_rejoin(void);
/* The writer stopped at a limit: say why, leave the spool for salvage and
 * end the process at once (another thread may be recording). */
void plugin_stop(void) __attribute__((noreturn));
void plugin_too_many_threads(void) __attribute__((noreturn));
static inline int plugin_tracing_here(void)
{
    return getpid() == g_plugin.owner_pid;
}

/* POS's guesses of what a thread touches next. A fork server keeps them
 * during its prefix whatever its own policy, since a child may run POS. */
static inline int plugin_pos_bookkeeping(void)
{
    return g_plugin.sched.cfg.kind == PCT_KIND_POS || g_plugin.server.in_prefix;
}

static inline uint64_t vcpu_cycles_at(const vcpu_state *v, uint64_t insn_index)
{
    return insn_index * g_plugin.cfg.settings.cpi + v->offset;
}

int plugin_may_wait_in_exec(const vcpu_state *v);

static inline uint64_t cycles_to_ns(uint64_t cycles)
{
    return cycles * g_plugin.cfg.settings.ps_per_cycle / 1000;
}

/* Events the vCPU's thread recorded so far: those flushed and those buffered. */
static inline uint64_t plugin_thread_events(const vcpu_state *v)
{
    return g_plugin.threads[v->pe].events + v->nbuf;
}

/* plugin_thread.c */
vcpu_state *plugin_vcpu(unsigned int index);
/* Every case of plugin_record: before the thread's first turn, with
 * injections, past the end, and when the buffer fills. */
void plugin_record_slow(vcpu_state *v, uint8_t kind, uint64_t cycles, uint64_t addr, uint64_t pc,
                        uint8_t size, uint16_t flags);
void plugin_flush(vcpu_state *v);

/* Record an event of the vCPU's thread at `cycles`. Inline: it runs for
 * every access recorded (about a billion in a real program's free trace),
 * and nearly always only fills the buffer's next slot. */
static inline void plugin_record(vcpu_state *v, uint8_t kind, uint64_t cycles, uint64_t addr,
                                 uint64_t pc, uint8_t size, uint16_t flags)
{
    if (__builtin_expect(
            v->pe < 0 || !v->begun || g_plugin.cfg.inject || v->nbuf + 1 >= PLUGIN_BUF_EVENTS ||
                cycles > atomic_load_explicit(&g_plugin.exit_cycles, memory_order_relaxed) ||
                atomic_load_explicit(&g_plugin.spec.invalid, memory_order_relaxed) ||
                atomic_load_explicit(&g_plugin.capped, memory_order_relaxed),
            0)) {
        plugin_record_slow(v, kind, cycles, addr, pc, size, flags);
        return;
    }
    weft_event *e = &v->buf[v->nbuf++];
    *e = (weft_event){.time = cycles_to_ns(cycles),
                      .addr = addr,
                      .pc = pc,
                      .thread = (uint32_t)v->pe,
                      .kind = kind,
                      .size = size,
                      .flags = flags};
    /* Published after the event: what a crash leaves in the buffer is whole. */
    __atomic_store_n(&v->lb->n, (uint32_t)v->nbuf, __ATOMIC_RELEASE);
}
void plugin_bind_vcpu(vcpu_state *v);
void plugin_begin_thread(vcpu_state *v, int wait);
/* Before a gate: if the thread's next recorded event is a planned one (and
 * its pc matches), record a DELAY event at `cycles` and shift the thread;
 * returns the delay. The access may yet be dropped by the filter, so
 * another pc here leaves the injection pending; plugin_record misses it. */
uint64_t plugin_inject_at_gate(vcpu_state *v, uint64_t cycles, uint64_t pc);

/* plugin_shared.c (--filter shared) */
int plugin_shared_init(void);
/* pe's access at vaddr, at cycles: 1 to record it, 0 while its page is pe's alone. */
int plugin_shared_record(int pe, uint64_t vaddr, uint64_t cycles);
/* Did a choice go against virtual time (the trace may not repeat)? */
int plugin_shared_behind(void);

/* plugin_finish.c */
/* Finish the trace with these summary flags. With PLUGIN_ENDS_RUN the
 * caller _exits right after: waiting threads stay waiting. */
#define PLUGIN_ENDS_RUN 0x80000000u
void plugin_finish(uint32_t extra_flags);
void plugin_at_exit(qemu_plugin_id_t id, void *udata);
void plugin_start_watchdog(void);

/* plugin_syscall.c: waiters leave qemu's running set for a holder's fork. */
void plugin_fork_hooks_setup(void);

/* plugin_parallel.c: qemu's parallel code from the first block on. */
void plugin_parallel_note_api(int version);
/* The plugin API version qemu reported (1: qemu 7.x, whose internals
 * plugin_parallel.c and plugin_pretranslate.c know). */
int plugin_qemu_api_version(void);
void plugin_parallel_from_start(void);
/* Open the trace at cfg.out with the kept meta and the current settings. */
int plugin_open_writer(char *err, size_t errlen);

/* plugin_state.c */
/* A plugin argument's number (decimal or 0x hex): 0, or -1 if malformed. */
int plugin_parse_u64(const char *s, uint64_t *out);

/* plugin_spec.c */
int spec_parse_arg(const char *key, const char *val); /* 1 taken, 0 not ours, -1 bad */
int spec_setup(char *err, size_t errlen);
int spec_gated(uint64_t pc);
void spec_on_access(vcpu_state *v, uint64_t pc, int gated, uint64_t addr, unsigned size, int write,
                    uint64_t cycles);
void spec_thread_stack(int pe, uint64_t lo, uint64_t hi);
void spec_thread_exited(int pe, uint64_t cycles);
/* The pc of the kernel's own accesses (futex compare, tid clear): gated by
 * their syscall; no instruction lives at page 0. */
#define SPEC_KERNEL_PC 0x4u
/* The run cannot be checked: weft will gate everything in the next one. */
void spec_abandon(const char *why);
void spec_finish(void);

/* A gate the PE passed in order at `cycles`: its new sync key. */
static inline void plugin_synced(vcpu_state *v, uint64_t cycles)
{
    v->sync_t = cycles;
    v->sync_pe = v->pe;
}

/* plugin_inject.c: which planned delay is due; plugin_thread.c applies it. */
typedef struct injection injection;
int inject_load(const char *path, uint32_t max_pes, char *err, size_t errlen);
/* The thread's next injection if it is due now (and marked applied), else
 * NULL. `recorded`: called as an event is recorded, rather than at the gate
 * of an access the filter may still drop. */
injection *inject_due(vcpu_state *v, uint64_t pc, int recorded);
uint64_t inject_delay_cycles(const injection *in);
/* Where it was applied: the thread's time, and the delayed event's seq. */
void inject_applied(injection *in, uint64_t at_cycles, uint64_t trace_seq);
void inject_write_report(const char *path);

void plugin_syscall_entry(qemu_plugin_id_t id, unsigned int vcpu_index, int64_t num, uint64_t a1,
                          uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                          uint64_t a7, uint64_t a8);
void plugin_syscall_return(qemu_plugin_id_t id, unsigned int vcpu_idx, int64_t num, int64_t ret);

#endif
