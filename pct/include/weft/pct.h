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
} pct_kind;

/* Limits that keep a typo from allocating gigabytes. */
#define PCT_MAX_DEPTH 4096
#define PCT_MAX_THREADS (1u << 20)

/* Default per-decision probability of the starvation override (Nagarakatte et al.
 * §3.1.3): small enough that a run of k decisions follows the algorithm with
 * probability (1 - p)^k. */
#define PCT_DEFAULT_STARVATION 1e-3

typedef struct pct_config {
    pct_kind kind;
    uint32_t n; /* expected number of threads; more may be created */
    /* Step budget: the number of schedule points of a profiling run of the
     * same program. 0 means unknown: the caller must fill it from a profiling
     * run before creating a pct/ppct/rpro policy, which reject k = 0. */
    uint64_t k;
    uint32_t d; /* bug depth targeted (number of ordering constraints) */
    uint64_t r; /* RPro radius, in steps */
    uint64_t seed;
    /* Probability, per decision, of overriding the policy for one decision to
     * let a starved thread run; 0 disables. Used by pct, ppct and rpro. */
    double starvation;
} pct_config;

/* Defaults: ideal, n = 1, k = 0 (unknown), d = 1, r = 1, seed = 1,
 * starvation = PCT_DEFAULT_STARVATION. */
void pct_config_init(pct_config *cfg, pct_kind kind);

/* 0 if cfg is usable; otherwise -1 and a one-line message naming the bad
 * parameter in err (if err is not NULL). */
int pct_config_check(const pct_config *cfg, char *err, size_t errlen);

/* Name ("ideal", "random", "pct", "ppct", "rpro") and its inverse (0 or -1). */
const char *pct_kind_name(pct_kind kind);
int pct_kind_parse(const char *name, pct_kind *out);

/* The hit probability weft claims per run for a bug of depth d (and, for
 * rpro, radius <= r) in a program with at most n threads and k steps:
 *   pct, ppct: 1 / (n k^(d-1))
 *   rpro:      1 / (n k (2r)^(d-2)) for d >= 2, 1/n for d = 1
 *   ideal, random: 0 (no claim).
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
/* tid executed one schedule point: the step counter advances and, at a
 * change point k_i, tid's priority drops to d - i. */
int pct_step(pct_policy *p, pct_tid tid);
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
    int64_t priority; /* larger runs first; ideal and random: 0 */
    bool in_low_set;  /* ppct: currently in L */
    uint64_t steps;   /* schedule points it executed */
    uint64_t yields;
    uint64_t time; /* ideal: last reported virtual time */
} pct_thread_info;

const pct_config *pct_policy_config(const pct_policy *p);
uint64_t pct_policy_steps(const pct_policy *p);
/* Writes k_1..k_{d-1} (in index order: k_i lowers a thread to priority d - i)
 * into out (at most cap) and returns d - 1 (0 for ideal and random). */
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

#ifdef __cplusplus
}
#endif

#endif
