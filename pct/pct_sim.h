/* Abstract programs for exercising policies without QEMU (private to pct/,
 * used by the unit tests; results/ scripts may use it for synthetic studies).
 *
 * A program is a fixed set of threads, each a straight-line list of
 * operations on a few shared variables and mutexes. Every operation is one
 * schedule point (one pct_step). The simulator plays the platform's part:
 * it reports thread creation, blocking on a held mutex or an unfinished
 * join, exits and yields to the policy, asks it for a decision, and when the
 * policy allows several threads (ppct) an adversary picks one of them.
 *
 * After an operation it reports, in this order: the enabled/blocked changes
 * it caused (the stepping thread included: its next operation may be a
 * held lock), the step (pct_step or pct_step_access), the yield, the exit,
 * and the description of the thread's next operation. So, as on the
 * platform, the policy knows at pct_step which threads the following
 * decision can choose from. */
#ifndef WEFT_PCT_SIM_H
#define WEFT_PCT_SIM_H

#include "weft/pct.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCT_SIM_MAX_THREADS 16
#define PCT_SIM_MAX_OPS 256
#define PCT_SIM_VARS 8
#define PCT_SIM_LOCKS 8
#define PCT_SIM_REGS 4

/* The policy sees thread i of a program as tid PCT_SIM_TID(i): ids that are
 * not indices catch code that confuses the two. */
#define PCT_SIM_TID(i) ((pct_tid)(1000 + (i)))

typedef enum pct_sim_opcode {
    PCT_SIM_WORK,       /* local work: a schedule point touching nothing shared */
    PCT_SIM_STORE,      /* var[a] = b */
    PCT_SIM_LOAD,       /* reg[b] = var[a] */
    PCT_SIM_LOCK,       /* acquire mutex a; the thread is blocked while it is held */
    PCT_SIM_UNLOCK,     /* release mutex a */
    PCT_SIM_SPAWN,      /* start thread a */
    PCT_SIM_JOIN,       /* blocked until thread a has exited */
    PCT_SIM_SPIN,       /* busy-wait until var[a] == b; each check is a step */
    PCT_SIM_SPIN_YIELD, /* the same, calling sched_yield after a failed check */
    PCT_SIM_SPIN_SLEEP, /* the same, calling nanosleep after a failed check */
    PCT_SIM_SLEEP,      /* nanosleep: local, then the next operation */
} pct_sim_opcode;

typedef struct pct_sim_op {
    pct_sim_opcode code;
    int a;
    int64_t b;
} pct_sim_op;

struct pct_sim_run;

typedef struct pct_sim_program {
    const char *name;
    unsigned depth; /* of the bug the oracle detects */
    size_t nthreads;
    struct {
        bool at_start; /* running from the beginning (else started by SPAWN) */
        size_t nops;
        pct_sim_op ops[PCT_SIM_MAX_OPS];
    } thread[PCT_SIM_MAX_THREADS];
    int64_t init[PCT_SIM_VARS];
    /* The bug oracle on the final state; NULL means "the run deadlocked". */
    bool (*bug)(const struct pct_sim_run *run);
} pct_sim_program;

/* Nagarakatte et al.'s Fig. 3 bugs and two deeper ones, as programs. `pad` steps of
 * unrelated work surround the racy code (they make k large), `gap` steps
 * separate the two halves of a non-atomic region. Each sets prog->depth. */

/* Fig. 3(a), ordering, depth 1: thread 0 starts `consumers` threads, works,
 * then initialises t; each consumer works, then reads t->state. Bug: some
 * consumer read t before it was initialised. */
void pct_sim_shape_order(pct_sim_program *prog, size_t consumers, size_t pad);
/* Fig. 3(b), atomicity violation, depth 2: thread 1 checks x != NULL, works
 * `gap` steps, then calls x->print(); thread 0 sets x = NULL. Bug: the check
 * passed and the call saw NULL. */
void pct_sim_shape_atomicity(pct_sim_program *prog, size_t pad, size_t gap);
/* Fig. 3(c), deadlock, depth 2: thread 0 locks A then B, thread 1 locks B
 * then A, with `gap` steps between the two acquisitions. Bug: deadlock. */
void pct_sim_shape_deadlock(pct_sim_program *prog, size_t pad, size_t gap);
/* Depth 3: thread 0 writes x = 1 then x = 2; thread 1 reads x twice, each
 * after `lead` steps, `gap` steps between, `tail` after. Bug: it read 0 then
 * 1 (read < write 1 < read < write 2: three constraints). With lead = 0 the
 * change points that expose it lie within gap + 2 steps of each other however
 * long the tail: a bug of small radius (Cai and Yang). */
void pct_sim_shape_torn(pct_sim_program *prog, size_t lead, size_t gap, size_t tail);
/* A deadlock of m threads in a lock cycle (thread i locks i, then i+1 mod m),
 * each followed by `tail` steps of work. For m = 2 and 3 its depth is 2:
 * after one change point, blocking on the held locks does the other
 * switches. For m > 3 the threads must also reach their first locks in
 * reverse cycle order, which one change point no longer ensures; depth is
 * then set to 0 (not established). */
void pct_sim_shape_lock_cycle(pct_sim_program *prog, size_t m, size_t tail);

/* Append one operation, or `count` WORK steps; -1 if they do not fit. */
int pct_sim_add(pct_sim_program *prog, size_t thread, pct_sim_opcode code, int a, int64_t b);
int pct_sim_pad(pct_sim_program *prog, size_t thread, size_t count);
/* Steps of a complete run: every operation once (exact without spins). */
uint64_t pct_sim_op_count(const pct_sim_program *prog);

typedef enum pct_sim_adversary {
    PCT_SIM_PICK_FIRST,  /* the first allowed thread (creation order) */
    PCT_SIM_PICK_LAST,   /* the last allowed thread */
    PCT_SIM_PICK_RANDOM, /* uniformly among the allowed threads */
} pct_sim_adversary;

typedef struct pct_sim_run {
    uint64_t steps;
    bool completed;     /* every started thread exited */
    bool deadlocked;    /* no enabled thread, some blocked */
    bool policy_agrees; /* pct_policy_deadlocked matched the simulator at the end */
    bool bug;           /* the oracle's verdict */
    size_t max_allowed; /* largest set of threads allowed by one decision */
    int64_t var[PCT_SIM_VARS];
    int64_t reg[PCT_SIM_MAX_THREADS][PCT_SIM_REGS];
    uint64_t exit_step[PCT_SIM_MAX_THREADS]; /* step at which it exited, 0 = never */
} pct_sim_run;

/* Called after every step, e.g. to record decisions or check invariants. */
typedef void (*pct_sim_hook)(void *ctx, const pct_policy *p, const pct_tid *allowed,
                             size_t nallowed, pct_tid chosen);

/* What the simulated platform tells the policy about accesses. Objects:
 * variable a is PCT_SIM_VAR_OBJECT(a), mutex a PCT_SIM_LOCK_OBJECT(a),
 * thread a (spawn, join) PCT_SIM_THREAD_OBJECT(a); WORK touches nothing. */
typedef enum pct_sim_report {
    PCT_SIM_REPORT_NOTHING, /* pct_step only, as weft's platform did first */
    /* The kind of the next access (read, write, sync, none) but not its
     * object, as a QEMU plugin that cannot read registers before the
     * access; the executed access exactly (memory callbacks come after). */
    PCT_SIM_REPORT_KINDS,
    PCT_SIM_REPORT_EXACT, /* pending and executed accesses, objects included */
} pct_sim_report;

#define PCT_SIM_VAR_OBJECT(a) ((uint64_t)0x1000 + (uint64_t)(a))
#define PCT_SIM_LOCK_OBJECT(a) ((uint64_t)0x2000 + (uint64_t)(a))
#define PCT_SIM_THREAD_OBJECT(a) ((uint64_t)0x3000 + (uint64_t)(a))

typedef struct pct_sim_options {
    pct_sim_adversary adv;
    uint64_t adv_seed; /* seeds the adversary's own mt19937 */
    uint64_t max_steps;
    pct_sim_hook hook; /* may be NULL */
    void *ctx;
    pct_sim_report report;
} pct_sim_options;

/* Runs prog under p (fresh, no thread created yet) for at most max_steps
 * steps. 0 or -1 if the policy misbehaved (allowed no thread while one was
 * enabled, or a thread that is not enabled). */
int pct_sim_run_with(const pct_sim_program *prog, pct_policy *p, const pct_sim_options *opt,
                     pct_sim_run *run);
/* The same, reporting nothing about accesses. */
int pct_sim_execute(const pct_sim_program *prog, pct_policy *p, pct_sim_adversary adv,
                    uint64_t adv_seed, uint64_t max_steps, pct_sim_hook hook, void *ctx,
                    pct_sim_run *run);

#endif
