/* weft pct: scheduling policies as pure state machines.
 *
 * A policy never runs anything. The platform arbiter reports what happens to
 * guest threads (created, blocked, enabled, yielded, exited, one schedule
 * point executed) and asks, at every scheduling decision, which threads may
 * run next. The policies are the ones of the papers in the README's References:
 *
 *   ideal   virtual-time order: the enabled thread with the smallest virtual
 *           time (ties: smallest thread id); nothing random.
 *   random  a uniformly random enabled thread at every decision.
 *   pct     Burckhardt et al.'s PCT as restated in Nagarakatte et al. §5 / Fig. 4.
 *   ppct    parallel PCT, Nagarakatte et al. Fig. 4: several threads may be allowed.
 *   rpro    radius-aware PCT, Cai and Yang Alg. 2.
 *   pos     partial order sampling (Yuan, Yang, Gu, CAV 2018): random
 *           priorities per pending event, re-drawn for events that race
 *           with the one just executed.
 *   pb, db  preemption bounding (Musuvathi, Qadeer, PLDI 2007) and delay
 *           bounding (Emmi, Qadeer, Rakamaric, POPL 2011) over a
 *           non-preemptive round-robin scheduler: one schedule per run,
 *           named by its number of deviations and an index (no randomness).
 *   script  a given list of switches (a schedule file of weft replay
 *           --minimize) over a non-preemptive base: the current thread runs
 *           while it can, then the lowest id; no randomness.
 *
 * docs/policies.md states each algorithm exactly as implemented, the
 * guarantee weft claims for it, and how starvation is handled.
 *
 * Randomness comes only from GSL mt19937 generators seeded from the config,
 * so the same config and the same sequence of reported events give the same
 * decisions, one for one. Nothing here does I/O or allocates after creation
 * except when a thread is created. */
#ifndef WEFT_PCT_H
#define WEFT_PCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A guest thread as the platform names it (its Linux TID). Ids may be reused
 * after a thread exits; the policy then treats the newcomer as a new thread. */
typedef int64_t pct_tid;

#define PCT_NO_PARENT ((pct_tid)-1)

typedef enum pct_kind {
    PCT_KIND_IDEAL = 0,
    PCT_KIND_RANDOM = 1,
    PCT_KIND_PCT = 2,
    PCT_KIND_PPCT = 3,
    PCT_KIND_RPRO = 4,
    PCT_KIND_POS = 5,
    PCT_KIND_PB = 6,
    PCT_KIND_DB = 7,
    PCT_KIND_SCRIPT = 8,
} pct_kind;

/* One switch of a script: at the decision where the step counter reads
 * `step`, run `thread`. A preempting switch applies at the first such
 * decision where the current thread could go on (enabled, not yielded); a
 * non-preempting one at the first where it cannot (blocked, exited or
 * yielded). Entries apply in order; docs/policies.md has the rules. */
typedef struct pct_script_switch {
    uint64_t step;
    pct_tid thread;
    bool preempt;
} pct_script_switch;

/* Limits that keep a typo from allocating gigabytes. */
#define PCT_MAX_DEPTH 4096
#define PCT_MAX_THREADS (1u << 20)
#define PCT_MAX_BOUND 4096 /* pb, db: deviations per schedule */

/* Default per-decision probability of the starvation override (Nagarakatte et al.
 * §3.1.3): small enough that a run of k decisions follows the algorithm with
 * probability (1 - p)^k. */
#define PCT_DEFAULT_STARVATION 1e-3

typedef struct pct_config {
    pct_kind kind;
    uint32_t n; /* expected number of threads; more may be created */
    /* Step budget: the step count (pct_policy_steps) of a profiling run of
     * the same program. 0 means unknown: the caller must fill it from a
     * profiling run before creating a pct/ppct/rpro policy, or a pb/db one
     * with bound >= 1, which reject k = 0. */
    uint64_t k;
    uint32_t d; /* bug depth targeted (number of ordering constraints) */
    uint64_t r; /* RPro radius, in steps */
    uint64_t seed;
    /* Probability, per decision, of overriding the policy for one decision to
     * let a starved thread run; 0 disables. Used by pct, ppct and rpro. */
    double starvation;
    /* false (default): a schedule point counts as a step (toward k, change
     * points, deviation positions) only if it is a choice, i.e. some thread
     * other than the one that reported it is enabled when pct_step is
     * called. true: every schedule point counts (weft before issue 17). */
    bool count_all_steps;
    /* pb, db: the schedule has exactly `bound` deviations (preemptions,
     * delays) and is number `schedule` (from 0) of the
     * pct_bounded_count(kind, k, n, bound) schedules with that many. */
    uint32_t bound;
    uint64_t schedule;
    /* script: its switches, in order of step (copied at creation). */
    const pct_script_switch *script;
    size_t script_len;
} pct_config;

/* Defaults: ideal, n = 1, k = 0 (unknown), d = 1, r = 1, seed = 1,
 * starvation = PCT_DEFAULT_STARVATION, count_all_steps = false,
 * bound = 0, schedule = 0. */
void pct_config_init(pct_config *cfg, pct_kind kind);

/* 0 if cfg is usable; otherwise -1 and a one-line message naming the bad
 * parameter in err (if err is not NULL). */
int pct_config_check(const pct_config *cfg, char *err, size_t errlen);

/* Name ("ideal", "random", "pct", "ppct", "rpro", "pos", "pb", "db",
 * "script") and its inverse (0 or -1). */
const char *pct_kind_name(pct_kind kind);
int pct_kind_parse(const char *name, pct_kind *out);

/* The hit probability weft claims per run for a bug of depth d (and, for
 * rpro, radius <= r) in a program with at most n threads and k steps:
 *   pct, ppct: 1 / (n k^(d-1))
 *   rpro:      1 / (n k (2r)^(d-2)) for d >= 2, 1/n for d = 1
 *   ideal, random, pos, pb, db, script: 0 (no claim).
 * With a starvation probability p the claim holds for runs without an
 * override, which happen with probability >= (1 - p)^k. */
double pct_guarantee(pct_kind kind, uint64_t n, uint64_t k, uint64_t d, uint64_t r);

typedef struct pct_policy pct_policy;

/* NULL on bad config or out of memory, with a one-line message in err. */
pct_policy *pct_policy_create(const pct_config *cfg, char *err, size_t errlen);
void pct_policy_destroy(pct_policy *p);

/* Events. Each returns 0, or -1 if tid is unknown / already exited (created:
 * if tid is already live). The first thread is created with PCT_NO_PARENT.
 * A created thread is enabled. */
int pct_thread_created(pct_policy *p, pct_tid tid, pct_tid parent);
int pct_thread_enabled(pct_policy *p, pct_tid tid);
int pct_thread_blocked(pct_policy *p, pct_tid tid); /* futex wait, join, ... */
int pct_thread_exited(pct_policy *p, pct_tid tid);
/* sched_yield, nanosleep, wfe or a detected spin loop: the thread says it
 * cannot progress by itself; the policy demotes it (see docs). */
int pct_thread_yielded(pct_policy *p, pct_tid tid);
/* nanosleep: a yield, but under pct and rpro a thread that has not been
 * delayed goes below the threads that have not been delayed either and stays
 * above those a change point delayed, so a delay can outlast a sleep (each
 * thread's first eight since the last change point). again: it slept or
 * spun before with no progress of its own since; it is waiting for someone,
 * and goes below everything as a yield does. */
int pct_thread_slept(pct_policy *p, pct_tid tid, bool again);
/* sched_yield, the thread's first since its own progress: a first sleep's
 * nap (a main that yields once to let a worker start is not sent below a
 * delayed worker), its next step counted as one after a yield, as k
 * leaves those out. A yield again without progress is pct_thread_yielded. */
int pct_thread_yield_napped(pct_policy *p, pct_tid tid);
/* tid executed one schedule point. If it was a choice (see
 * count_all_steps) the step counter advances and, at a change point k_i,
 * tid's priority drops to d - i. pos: tid's next event gets a fresh
 * priority, and so does every pending event that races with the one tid
 * executed (its pending description, see below). pb, db: a deviation
 * placed at this step applies to the next decision. */
int pct_step(pct_policy *p, pct_tid tid);

/* What a schedule point touches. pos uses it; every other kind stores it
 * and ignores it. Two events of different threads race unless one is NONE,
 * both are READ, or both name known objects (not 0) that differ. So object
 * 0 (address unknown) and PCT_ACCESS_UNKNOWN race with everything that is
 * not NONE: a wrong "no race" could make pos miss the ordering it exists
 * to sample, a wrong "race" only re-draws a priority (docs/policies.md). */
typedef enum pct_access {
    PCT_ACCESS_UNKNOWN = 0, /* not known: may read or write anything */
    PCT_ACCESS_NONE = 1,    /* touches nothing another thread can see */
    PCT_ACCESS_READ = 2,
    PCT_ACCESS_WRITE = 3, /* including read-modify-write */
    PCT_ACCESS_SYNC = 4,  /* lock, unlock, futex, create, join: like a write */
} pct_access;

/* tid's pending event (its next schedule point) will touch object with
 * access; may be a prediction (e.g. the address this pc touched last time).
 * A thread's pending event is UNKNOWN until described, and again after
 * each of its steps. 0, or -1 for an unknown tid or access. */
int pct_thread_pending(pct_policy *p, pct_tid tid, uint64_t object, pct_access access);
/* pct_step, telling what the executed event really touched; with
 * PCT_ACCESS_UNKNOWN the pending description stands for it (pct_step is
 * pct_step_access(p, tid, 0, PCT_ACCESS_UNKNOWN)). */
int pct_step_access(pct_policy *p, pct_tid tid, uint64_t object, pct_access access);
/* ideal only (ignored otherwise): tid's virtual time is now t. A new thread
 * starts at its parent's time. */
int pct_thread_time(pct_policy *p, pct_tid tid, uint64_t t);

/* The decision. Writes the threads allowed to run next into out (at most cap)
 * and returns how many there are; 0 when no thread is enabled. Exactly one
 * for ideal, random, pct and rpro; for ppct every enabled thread of the high
 * set H, or the highest-priority enabled thread of the low set L when no H
 * thread is enabled (or one starved thread during a starvation override).
 * Call it once per decision: it may draw random numbers. Ids are listed in
 * creation order. */
size_t pct_policy_next(pct_policy *p, pct_tid *out, size_t cap);

/* No enabled thread while some live thread is blocked. */
bool pct_policy_deadlocked(const pct_policy *p);

/* pb, db: how a schedule's deviations fared so far. After the run, anything
 * but DONE means that the run repeated a schedule with fewer deviations (a
 * duplicate: count it as explored, not as a new schedule). Other kinds:
 * always DONE. */
typedef enum pct_schedule_status {
    PCT_SCHEDULE_DONE = 0,      /* every deviation was applied */
    PCT_SCHEDULE_PENDING = 1,   /* some positions were not reached (yet) */
    PCT_SCHEDULE_DUPLICATE = 2, /* a deviation found too few alternatives */
} pct_schedule_status;
pct_schedule_status pct_policy_schedule_status(const pct_policy *p);
/* script: switches applied, and switches missed (their thread was not
 * enabled, or the run passed their step without a decision of their kind).
 * Other kinds: 0 and 0. */
void pct_policy_script_counts(const pct_policy *p, uint64_t *applied, uint64_t *missed);

/* ---- decisions as they happen (explanations, schedule files) ------------- */

/* Why a decision switched threads, most compelling first: the current
 * thread could not go on (blocked, exited, yielded), or the policy moved it
 * aside (the rest). */
typedef enum pct_why {
    PCT_WHY_NONE = 0,     /* not a switch */
    PCT_WHY_BLOCKED,      /* the current thread blocked (futex wait, join, ...) */
    PCT_WHY_EXITED,       /* it exited */
    PCT_WHY_YIELD,        /* it yielded or spun: demoted (or, stay: chosen again) */
    PCT_WHY_OVERRIDE,     /* a starvation override (ppct: a relief) */
    PCT_WHY_CHANGE_POINT, /* a change point k_i lowered it at this step */
    PCT_WHY_PRIORITY,     /* a thread of higher priority became enabled (pct, rpro) */
    PCT_WHY_RANDOM,       /* random: the draw */
    PCT_WHY_POS,          /* pos: the highest-priority pending event is another's */
    PCT_WHY_TIME,         /* ideal: another thread is earlier in virtual time */
    PCT_WHY_SET,          /* ppct: the set of allowed threads changed */
    PCT_WHY_DEVIATION,    /* pb, db: a deviation of the schedule */
    PCT_WHY_SCHEDULE,     /* script: a switch of the script */
    PCT_WHY_BASE,         /* pb, db, script: the base scheduler */
} pct_why;

/* "blocked", "exited", "yield", "override", "change_point", "priority",
 * "random", "pos", "time", "set", "deviation", "schedule", "base"; "none". */
const char *pct_why_name(pct_why why);

/* One decision worth recording: a switch (`to` differs from the thread the
 * previous decision chose; ppct: the allowed set changed), or a yielded
 * thread chosen again (stay), which a schedule must repeat. */
typedef struct pct_decision {
    uint64_t step; /* pct_policy_steps at the decision */
    pct_tid from;  /* the previous decision's (first) thread */
    pct_tid to;    /* this decision's first allowed thread */
    pct_why why;
    uint32_t change_point; /* CHANGE_POINT: i of k_i (from dropped to d - i) */
    /* from could have gone on: enabled and not yielded since the previous
     * decision. A switch that is not a preemption was forced on the policy. */
    bool preempt;
    bool stay;              /* to == from, a yielder chosen again */
    const pct_tid *allowed; /* this decision's allowed threads (valid during the call) */
    size_t nallowed;
} pct_decision;

/* Called from pct_policy_next for each switch and stay (never for the first
 * decision); p may be inspected (pct_policy_thread_at), not changed. NULL
 * fn stops the calls. */
typedef void (*pct_decision_fn)(void *ctx, const pct_policy *p, const pct_decision *d);
void pct_policy_on_decision(pct_policy *p, pct_decision_fn fn, void *ctx);

/* Schedule bounding without state across runs (docs/policies.md). A pb or
 * db schedule deviates from the round-robin base at chosen positions
 * 1..k among the run's steps (step counter values):
 *   pb: c distinct positions, each with an alternative 1..n-1 (run the
 *       alternative-th enabled thread after the current one);
 *       C(k, c) (n-1)^c schedules with exactly c preemptions;
 *   db: a multiset of c positions (m delays at one position skip m
 *       threads); C(k+c-1, c) schedules with exactly c delays.
 * Counts saturate at UINT64_MAX; other kinds have none (0). */
uint64_t pct_bounded_count(pct_kind kind, uint64_t k, uint32_t n, uint32_t c);
/* The schedules with at most c deviations: the sum of the counts 0..c
 * (c beyond PCT_MAX_BOUND counts as PCT_MAX_BOUND, here and in locate). */
uint64_t pct_bounded_total(pct_kind kind, uint64_t k, uint32_t n, uint32_t c);
/* Iterative deepening: global schedule number g (from 0) runs level c = 0
 * first, then 1, ...; writes its (bound, schedule). -1 when g lies past
 * the schedules with at most max_bound deviations (the search is
 * exhausted) or the kind is not pb/db. */
int pct_bounded_locate(pct_kind kind, uint64_t k, uint32_t n, uint32_t max_bound, uint64_t g,
                       uint32_t *bound, uint64_t *schedule);
/* Schedule `schedule` of level c: its c positions in non-decreasing order
 * (repeats only in db) and, for pb, the alternative of each (alt may be
 * NULL; db writes 1s). 0, or -1 if schedule >= the level's count. */
int pct_bounded_schedule(pct_kind kind, uint64_t k, uint32_t n, uint32_t c, uint64_t schedule,
                         uint64_t *pos, uint32_t *alt);

/* Introspection, for logs and tests. */
typedef enum pct_thread_state {
    PCT_THREAD_ENABLED = 0,
    PCT_THREAD_BLOCKED = 1,
    PCT_THREAD_EXITED = 2,
} pct_thread_state;

typedef struct pct_thread_info {
    pct_tid tid;
    pct_tid parent;
    pct_thread_state state;
    int64_t priority; /* larger runs first; ideal, random, pb, db: 0 */
    bool in_low_set;  /* ppct: currently in L */
    uint64_t steps;   /* schedule points it executed, choices or not */
    uint64_t yields;
    uint64_t time; /* ideal: last reported virtual time */
} pct_thread_info;

const pct_config *pct_policy_config(const pct_policy *p);
/* The step counter: choices only unless count_all_steps. A profiling run
 * reads it as k. */
uint64_t pct_policy_steps(const pct_policy *p);
/* Of those, the steps a thread took right after it yielded (sched_yield or
 * a detected spin; not a sleep). How often a spinner spins depends on the
 * schedule: a random one preempts lock holders at most of its steps, and
 * its spinners spin far more than under PCT, whose k should not count them. */
uint64_t pct_policy_yield_steps(const pct_policy *p);
/* Writes k_1..k_{d-1} (in index order: k_i lowers a thread to priority d - i)
 * into out (at most cap) and returns d - 1 (0 for ideal, random and pos);
 * pb, db: the schedule's deviation positions, c of them. */
size_t pct_policy_change_points(const pct_policy *p, uint64_t *out, size_t cap);
/* ppct: number of distinct threads that have ever been in L (never > d). */
size_t pct_policy_low_set_ever(const pct_policy *p);
/* Decisions and priorities not made by the algorithm proper: starvation
 * overrides that changed a decision, yield demotions and yield reliefs. */
uint64_t pct_policy_overrides(const pct_policy *p);
/* Threads ever created, in creation order (exited ones included). */
size_t pct_policy_thread_count(const pct_policy *p);
int pct_policy_thread_at(const pct_policy *p, size_t index, pct_thread_info *out);
/* The live thread with this id (else the last exited one); 0 or -1. */
int pct_policy_thread_info(const pct_policy *p, pct_tid tid, pct_thread_info *out);

/* A run's counts as they stand, kept up to date by the policy at every
 * step and decision once pct_policy_mirror gives it a place. The tracer
 * puts that place in a file mapping: a guest killed by a signal (an
 * assertion's abort, a crash) never returns to write its record, and its
 * steps are what a profiling run is for. */
#define PCT_STATUS_MAGIC 0x5446455753544154ull /* "TATSWEFT" */
typedef struct pct_status {
    uint64_t magic; /* PCT_STATUS_MAGIC once the fields below are valid */
    uint64_t steps, overrides, threads, low_set_ever;
    uint64_t nchange_points; /* pct_policy_change_points' count; the first PCT_MAX_DEPTH: */
    uint64_t change_points[PCT_MAX_DEPTH];
    uint64_t yield_steps;
} pct_status;
/* Fills *s now and after every step and decision from here on; NULL stops. */
void pct_policy_mirror(pct_policy *p, pct_status *s);

#ifdef __cplusplus
}
#endif

#endif
