/* weft optimizer: the interference model of Bhattacharya et al. §4.2 built from a trace,
 * its fitness (Eq. 2 and Eq. 4), an exact pair solver, and injection plans.
 *
 * Model. Only memory accesses (read, write, rmw; rmw counts as a write) at
 * *shared* addresses are kept: a write is kept when another thread writes the
 * same address (or, with include_reads, accesses it); a read is kept, with
 * include_reads only, when another thread writes the address. Kept events
 * are numbered 0..E-1 in (thread, per-thread order), and there is one delay
 * variable per kept event: Δ_v is inserted just before event v. So without
 * reads the variables are exactly the writes, as in Eq. 2:
 *     τ_{i,j} = t_{i,j} + Σ_{k ≤ j} Δ_{i,k}
 * (a delay before event k shifts k and every later event of its thread). A
 * delay before a dropped event moves the model's events exactly like the
 * same delay before the next kept event of that thread, so dropping loses no
 * schedule.
 *
 * Fitness (Eq. 4 with the paper's "closest later write" restriction), read as:
 * for every kept write q, let r be the event at the same address, of another
 * thread, with τ_r >= τ_q and τ_r smallest (with include_reads r may be a
 * read; a kept read q only looks for writes). q contributes
 *     1 - 1/(1 + (τ_r - τ_q))
 * and nothing when no such r exists. Writes of q's own thread in between do
 * not matter. A term is 0 exactly when q and r happen at the same virtual
 * time: an *alignment*; the search target is "at least one alignment".
 * Addresses are compared after rounding down to `granule` bytes (1 = exact
 * address); access sizes are otherwise ignored. */
#ifndef WEFT_OPTIMIZER_H
#define WEFT_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include <weft/search.h>
#include <weft/trace.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct optimizer_options {
    int include_reads; /* also align writes with other threads' reads */
    uint64_t granule;  /* address granule in bytes, >= 1 */
} optimizer_options;

optimizer_options optimizer_options_default(void); /* writes only, granule 1 */

typedef struct optimizer_model optimizer_model;

/* Build the model from events in any order (per-thread order is taken from
 * seq). Non-access events are ignored. NULL opt = defaults. Returns NULL with
 * a one-line reason in err on failure. */
optimizer_model *optimizer_model_from_events(const weft_event *ev, size_t n,
                                             const optimizer_options *opt, char *err,
                                             size_t errlen);
/* Same, reading every event of an open trace (rewinds it first). */
optimizer_model *optimizer_model_from_trace(weft_trace *t, const optimizer_options *opt, char *err,
                                            size_t errlen);
void optimizer_model_free(optimizer_model *m);

size_t optimizer_model_dim(const optimizer_model *m);       /* kept events = variables */
uint32_t optimizer_model_threads(const optimizer_model *m); /* 1 + highest thread index seen */
size_t optimizer_model_addresses(const optimizer_model *m); /* shared addresses */

/* One kept event, i.e. the position of variable v. */
typedef struct optimizer_var {
    uint32_t thread;
    uint64_t seq; /* per-thread sequence number in the trace */
    uint64_t pc;
    uint64_t addr; /* as traced, not rounded to the granule */
    uint64_t time; /* traced time t */
    uint64_t tau;  /* τ under the model's current delays (Eq. 2) */
    int is_write;
} optimizer_var;
int optimizer_model_var(const optimizer_model *m, size_t v, optimizer_var *out);

/* Eq. 4 for delays delta[0..dim); makes delta the model's current point.
 * O(E log E). */
double optimizer_fitness(optimizer_model *m, const uint64_t *delta);
/* Eq. 4 after changing Δ_v of the current point to `to`: re-sorts and
 * re-scans only the addresses touched by v's thread from v on. Gives exactly
 * (bit for bit) what optimizer_fitness would on the new point. */
double optimizer_fitness_move(optimizer_model *m, size_t v, uint64_t to);
/* Terms that are exactly 0 (alignments) at the current point. */
size_t optimizer_aligned(const optimizer_model *m);
/* The O(E^2) definition, straight from Eq. 2 and Eq. 4, independent of the
 * fast path; for tests. Stateless. aligned may be NULL. */
double optimizer_fitness_naive(const optimizer_model *m, const uint64_t *delta, size_t *aligned);

/* A pair of events of different threads at one address, with everything a
 * plan needs. For the exact solver's selection, a is delayed to meet b; for
 * alignments at the current point, a is the event whose term is 0 and b its
 * partner. */
typedef struct optimizer_pair {
    size_t va, vb; /* kept-event indices; va is also the variable of the delay */
    uint32_t thread_a, thread_b;
    uint64_t seq_a, seq_b;
    uint64_t addr;           /* a's address */
    uint64_t time_a, time_b; /* traced times */
    uint64_t delay;          /* time_b - time_a (0 if b is earlier) */
    uint64_t applied;        /* exact selection: Δ placed before a (accounts for earlier delays) */
    uint64_t aligned_time;   /* predicted τ of both events (of b when nudge > 0) */
    uint64_t nudge;          /* a write-read pair put in order: a lands this long after b */
} optimizer_pair;

/* Alignments at the current point, at most max written; returns how many
 * exist. delay and applied are 0. */
size_t optimizer_alignments(const optimizer_model *m, optimizer_pair *out, size_t max);

/* The model as a search problem (stateful, with the incremental move and the
 * target "an alignment exists"). The model must outlive the problem. */
search_problem optimizer_search_problem(optimizer_model *m);

/* ---- exact solver ------------------------------------------------------------
 * Candidates: for every kept event a (thread A) and every other thread B, b
 * is B's event at a's address with t_b >= t_a and (t_b, program order)
 * smallest, and at least one of a, b is a write. One delay t_b - t_a before a
 * aligns them (on the ideal platform, unless synchronization orders them; the
 * replay shows that). A pair with t_a = t_b needs no delay; it is listed
 * once, with a in the lower-numbered thread. At most E·(threads - 1)
 * candidates, found by one backwards sweep per address and ranked by radix
 * sort: O(E·T) time, 16 bytes per candidate.
 * Ranking: smallest delay first (the least perturbed schedule, the fewest
 * chances for synchronization to absorb the shift), then by a, then by b's
 * thread (a has one candidate per thread). */
typedef struct optimizer_candidate {
    uint32_t va, vb; /* kept-event indices: delay before va to meet vb */
    uint64_t delay;  /* t_b - t_a */
} optimizer_candidate;

/* Ranked candidates (caller frees *out). Works on traced times, whatever the
 * model's current point. */
int optimizer_exact_pairs(const optimizer_model *m, optimizer_candidate **out, size_t *n, char *err,
                          size_t errlen);
/* The same set and order by brute force over all event pairs, O(E^2); for
 * tests. */
int optimizer_exact_pairs_bruteforce(const optimizer_model *m, optimizer_candidate **out, size_t *n,
                                     char *err, size_t errlen);
/* Greedy selection in rank order of candidates that can all hold at once: a
 * candidate is taken when no event of a's thread at or after a belongs to an
 * already taken pair (the new delay would move it), and b, under the delays
 * already taken, is not earlier than a. Its delay is then τ_b - τ_a (taken
 * only if <= max_delay, unless max_delay is 0). Fills delta[0..dim) (zero
 * where no delay) and the taken pairs, with `applied` and `aligned_time` set
 * (caller frees *chosen). Greedy, not a maximum set. */
int optimizer_exact_select(const optimizer_model *m, const optimizer_candidate *c, size_t n,
                           uint64_t max_delay, uint64_t *delta, optimizer_pair **chosen,
                           size_t *nchosen, char *err, size_t errlen);
/* The same, and with order_nudge > 0 a pair of a write and a read is not aligned but put in
 * order, a at τ_b + order_nudge: at equal times the platform orders the two
 * accesses by thread number, which may be the traced order again, so an
 * order violation would stay hidden. The delay is τ_b - τ_a + order_nudge,
 * and later candidates see it. Pairs of two writes are aligned as ever. */
int optimizer_exact_select_order(const optimizer_model *m, const optimizer_candidate *c, size_t n,
                                 uint64_t max_delay, uint64_t order_nudge, uint64_t *delta,
                                 optimizer_pair **chosen, size_t *nchosen, char *err,
                                 size_t errlen);
/* The nudge a pair of these two kept events gets: order_nudge if exactly one
 * of them is a write, else 0. */
uint64_t optimizer_pair_nudge(const optimizer_model *m, size_t va, size_t vb, uint64_t order_nudge);

/* ---- injection plans (docs/plan-format.md) --------------------------------- */

#define OPTIMIZER_PLAN_VERSION 1

typedef struct optimizer_predicted {
    uint32_t thread_a, thread_b;
    uint64_t seq_a, seq_b;
    uint64_t address;
    uint64_t time;  /* predicted common virtual time, ns (b's when nudge > 0) */
    uint64_t nudge; /* ns a is predicted after b (plan key nudge_ns; 0: together) */
} optimizer_predicted;

typedef struct optimizer_injection {
    uint32_t thread; /* creation-order index */
    uint64_t seq;    /* the delay goes before this event of the thread */
    uint64_t pc;
    char *function; /* symbol fields: NULL when unknown */
    char *file;
    uint32_t line; /* 0 when unknown */
    char *variable;
    uint64_t offset; /* within variable */
    uint64_t delay_ns;
    uint64_t delay_insns; /* delay_ns * 1000 / (cpi * ps_per_cycle) */
    int has_predicted;
    optimizer_predicted predicted;
} optimizer_injection;

typedef struct optimizer_plan {
    char *program;  /* guest binary path */
    char *build_id; /* lower-case hex, "" when the binary has none */
    uint32_t argc;
    char **argv;
    char *mode; /* "exact" or "free" */
    uint32_t cpi;
    uint64_t ps_per_cycle;
    char *algorithm; /* "rnd", "shc", "sa", "exact" or "manual" */
    uint64_t seed;   /* <= INT64_MAX */
    uint64_t dmax;
    uint64_t evaluations;
    size_t ninjections;
    optimizer_injection *injections;
} optimizer_plan;

/* Limits a plan is checked against when read; zero/NULL fields skip a check. */
typedef struct optimizer_plan_limits {
    uint32_t nthreads;      /* thread must be < nthreads */
    const uint64_t *events; /* per thread: seq must be < events[thread] */
} optimizer_plan_limits;

/* delay_ns in instructions at cpi cycles of ps_per_cycle ps (rounded down). */
uint64_t optimizer_delay_insns(uint64_t delay_ns, uint32_t cpi, uint64_t ps_per_cycle);

/* Start a plan from a trace's identity and platform settings (copies). */
int optimizer_plan_init(optimizer_plan *p, const weft_trace_meta *meta);
void optimizer_plan_set_search(optimizer_plan *p, const char *algorithm, uint64_t seed,
                               uint64_t dmax, uint64_t evaluations);
/* An injection of delay_ns before kept event v, symbol fields NULL; when
 * pred is given, its events and aligned_time become `predicted`. */
void optimizer_injection_for_var(const optimizer_model *m, size_t v, uint64_t delay_ns,
                                 const optimizer_pair *pred, optimizer_injection *out);
/* Append a deep copy of inj; delay_insns is recomputed from delay_ns. */
int optimizer_plan_add(optimizer_plan *p, const optimizer_injection *inj);
void optimizer_plan_free(optimizer_plan *p);

/* Write atomically (temporary file, fsync, rename). Returns 0 or -1 (err). */
int optimizer_plan_write(const optimizer_plan *p, const char *path, char *err, size_t errlen);
/* Parse and validate; errors read "NAME: JSON.PATH: problem". lim may be NULL.
 * On failure *out is left empty (nothing to free). */
int optimizer_plan_read(const char *path, const optimizer_plan_limits *lim, optimizer_plan *out,
                        char *err, size_t errlen);
int optimizer_plan_parse(const char *text, const char *name, const optimizer_plan_limits *lim,
                         optimizer_plan *out, char *err, size_t errlen);
/* 0 if the plan was made for the binary with this build-id, else -1 (err). */
int optimizer_plan_check_build_id(const optimizer_plan *p, const char *name, const uint8_t *id,
                                  size_t len, char *err, size_t errlen);

/* ---- from a trace to a plan: weft optimize's work (trace_filter.c, run.c,
 * run_search.c, narrate.c, convergence.c) ------------------------------------ */

#define OPT_MAX_VARS 16

/* Which accesses the interference model keeps (besides the optimizer's own
 * rule: addresses another thread writes). */
typedef struct opt_filter {
    int atomics; /* keep atomic / exclusive accesses (off: they synchronize, they cannot lose
                    an update) */
    size_t nranges;
    uint64_t lo[OPT_MAX_VARS], hi[OPT_MAX_VARS]; /* --var NAME: [lo, hi) */
    const uint64_t *pcs; /* --from-races: only accesses at these pcs (sorted), if npcs */
    size_t npcs;
} opt_filter;

/* Resolve --var NAME in the traced binary's symbols; one line on error. */
int opt_filter_add_var(opt_filter *f, weft_symbols *syms, const char *binary, const char *name);

/* Build the model from a trace's events, keeping what the filter allows.
 * One line in err on failure. */
optimizer_model *opt_model_load(weft_trace *t, const opt_filter *f, const optimizer_options *o,
                                char *err, size_t errlen);

/* 1 if thread creation alone orders event (ta, time_a) before (tb, time_b):
 * ta is an ancestor of tb and the event precedes the clone leading to tb.
 * Such a pair cannot be aligned by delaying the earlier event: the delay
 * shifts the clone and so the later event too. */
int opt_ordered_by_creation(const weft_trace_summary *s, uint32_t ta, uint64_t time_a, uint32_t tb,
                            uint64_t time_b);

/* "function (file:line)" / "variable+off" of a pc / address, or hex. */
void opt_describe_pc(weft_symbols *syms, uint64_t pc, char *buf, size_t len);
void opt_describe_addr(weft_symbols *syms, uint64_t addr, char *buf, size_t len);

/* Fill the symbol fields of an injection (strings owned by syms). */
void opt_symbolize_injection(weft_symbols *syms, uint64_t addr, optimizer_injection *inj);

typedef struct optimize_opts {
    const char *trace, *out, *stats;
    search_algorithm algo;
    int exact;
    uint64_t dmax, budget, seed, runs, pairs;
    int dmax_set, reads, keep_ordered, quiet;
    /* Run weft races on the trace first: the model keeps only accesses at
     * racy pcs, and the exact solver only pairs whose two pcs race. */
    int from_races;
    /* SA's temperature (weft/search.h); zero = the defaults: the paper's
     * schedule, T_max by D_max; scaled with p0 0.5 over 100 moves. */
    search_sa_temperature sa_temperature;
    int sa_set;         /* some --sa-* option was given (checked against --algo) */
    double sa_tmax;     /* > 0: the paper schedule's T_max instead of 10^-4 / 10^-2 */
    double sa_p0;       /* > 0: scaled rule's p0 */
    uint64_t sa_sample; /* > 0: scaled rule's sample of moves */
    opt_filter filter;
    const char *vars[OPT_MAX_VARS];
    size_t nvars;
} optimize_opts;

/* Run weft optimize with these options: load the trace's model, run the
 * exact solver or the searches, print what they found and write the plan
 * and statistics. Returns weft's exit status. */
int optimizer_run(optimize_opts *o);

/* For each of RND, SHC and SA: one search with `seed` on the model of
 * trace_path, recording the best fitness so far against the evaluation count
 * (log-spaced, plus every improvement) until the first alignment or the
 * budget; written to out_path as JSON. Returns 0; 1 when the model is empty
 * (nothing written, *why says so); -1 after printing an error. */
int optimizer_convergence(const char *trace_path, uint64_t seed, uint64_t dmax, uint64_t budget,
                          const char *out_path, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif
#endif
