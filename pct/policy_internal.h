/* The policy state machine's state, shared by the files of pct/ that
 * implement one family of policies each: policy.c (events, ideal, random,
 * PCT, PPCT, RPro), pos.c (partial order sampling) and bounded.c
 * (preemption and delay bounding). Private to pct/. */
#ifndef WEFT_PCT_POLICY_INTERNAL_H
#define WEFT_PCT_POLICY_INTERNAL_H

#include "weft/pct.h"

#include <gsl/gsl_rng.h>

struct thread {
    pct_tid tid;
    pct_tid parent;
    pct_thread_state state;
    int64_t prio;
    int64_t nap;            /* > 0: in the sleepers' band at prio d - 1, larger ranks first */
    uint32_t naps_since_cp; /* sleeps it took into that band since the last change point */
    bool ever_low;
    uint64_t steps, yields, time;
    bool yielded_since; /* yielded since the last decision */
    bool after_yield;   /* yielded (not slept) since its last step */
    /* Its pending event, as last described (pct_thread_pending). */
    uint64_t pend_object;
    pct_access pend_access;
};

struct change_point {
    uint64_t step;
    uint32_t index; /* i of k_i: the thread drops to priority d - i */
};

/* pb, db: the schedule being run and how far it got. */
struct bounded {
    uint64_t *pos; /* deviation positions, non-decreasing */
    uint32_t *alt; /* pb: alternative of each position */
    size_t npos, next;
    size_t current; /* index of the thread last chosen; SIZE_MAX: none yet */
    bool current_yielded;
    uint32_t armed;     /* deviations to apply at the next decision */
    uint32_t armed_alt; /* pb: the alternative armed */
    size_t armed_by;    /* index of the thread whose step armed it */
    bool duplicate;
};

/* What the decision log needs between decisions (decision.c). */
struct decisions {
    pct_decision_fn fn;
    void *ctx;
    bool have_last;
    pct_tid last;      /* the previous decision's (first) thread */
    pct_tid *last_set; /* ppct: the previous decision's allowed set */
    size_t nlast_set, set_cap;
    pct_why forced; /* set by this decision's pick: override, deviation, schedule */
    bool cp_fired;  /* a change point lowered cp_tid since the last decision */
    pct_tid cp_tid;
    uint32_t cp_index;
};

/* script: the switches to make and how they fared (script.c). */
struct script {
    pct_script_switch *e;
    size_t n, next;
    uint64_t applied, missed;
};

struct pct_policy {
    pct_config cfg;
    /* Two streams so that starvation overrides (drawn per decision) do not
     * shift the priorities given to threads created later. */
    gsl_rng *sched;  /* permutation, change points, slots beyond n, pos */
    gsl_rng *choice; /* random policy, overrides, reliefs */
    struct thread *threads;
    size_t nthreads, cap;
    int64_t *slot;            /* initial priority of creation index j < n, shifted on overflow */
    uint64_t band;            /* slots in the initial band: n + threads created beyond n */
    uint64_t *kpoint;         /* k_1..k_{d-1} in index order */
    struct change_point *cps; /* the same, sorted by step */
    size_t ncps, next_cp;
    uint64_t steps;
    uint64_t yield_steps; /* of them, steps that resumed a yielding thread */
    size_t low_ever;
    uint64_t overrides;
    int64_t naps; /* sleepers' band places given so far */
    bool relief;  /* ppct: an H thread yielded; the next decision helps L */
    pct_tid relief_from;
    size_t *scratch; /* indices of enabled threads, one decision's worth */
    struct bounded b;
    struct decisions dec;
    struct script script;
    pct_status *mirror; /* pct_policy_mirror's, or NULL */
};

/* The live thread with this id; NULL if none. */
struct thread *pct_find(const pct_policy *p, pct_tid tid);
/* Uniform in [0, n), n >= 1, for any 64-bit n. */
uint64_t pct_draw(gsl_rng *r, uint64_t n);
/* Writes tid as the n-th allowed thread if it fits; returns n + 1. */
size_t pct_emit(pct_tid *out, size_t cap, size_t n, pct_tid tid);

/* pos.c */
void pct_pos_created(pct_policy *p, struct thread *t);
void pct_pos_step(pct_policy *p, struct thread *t, uint64_t object, pct_access access);
void pct_pos_yielded(pct_policy *p, struct thread *t);
size_t pct_pos_next(pct_policy *p, pct_tid *out, size_t cap);

/* decision.c: after each decision, the log's bookkeeping and its callback. */
void pct_decision_note(pct_policy *p, const pct_tid *out, size_t n);
void pct_decision_free(pct_policy *p);

/* policy_info.c: the counts into the mirror, if there is one. */
void pct_mirror_counts(pct_policy *p);

/* script.c */
int pct_script_init(pct_policy *p);
void pct_script_free(pct_policy *p);
size_t pct_script_next(pct_policy *p, pct_tid *out, size_t cap);

/* bounded.c */
int pct_bounded_init(pct_policy *p);
void pct_bounded_free(pct_policy *p);
void pct_bounded_step(pct_policy *p, struct thread *t, bool counted);
void pct_bounded_yielded(pct_policy *p, struct thread *t);
size_t pct_bounded_next(pct_policy *p, pct_tid *out, size_t cap);

#endif
