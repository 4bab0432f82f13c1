/* Profiling's parts, private to replay/: one run (profile_run.c) and its
 * rounds (profile.c). */
#ifndef WEFT_REPLAY_PROFILE_INTERNAL_H
#define WEFT_REPLAY_PROFILE_INTERNAL_H

#include <signal.h>
#include <stdint.h>

#include "weft/replay.h"

/* What one profiling run counted (a child of a parallel round sends it to
 * its parent through a pipe). */
typedef struct run_counts {
    int rc; /* 0, or -1 after one line */
    int estimated;
    int capped; /* a learning run stopped at its trace's size limit */
    int died;   /* killed by a signal: its steps end where it died */
    int status; /* the exit status of a run that exited by itself, no BUG line, else -1 */
    uint64_t steps, threads;
    uint64_t yield_steps; /* left out of steps: they resumed a spinning or yielding thread */
    uint64_t departures;  /* gates that gave up waiting (the record's `departures`) */
    char note[64];
} run_counts;

/* What a round's runs are for (bits). */
enum {
    ROUND_FIRST = 1,   /* the visible operations alone are points (no pcs learnt yet) */
    ROUND_LEARN = 2,   /* learning: stop each run at 32 MB of spool */
    ROUND_PRIORITY = 4 /* this run: strict priorities (pct, depth 1), not random */
};

/* The SIGINT or SIGTERM that interrupted profiling, or 0 (and the one its
 * handler noted, from profiling's start to its end). */
extern int profile_interrupted;
extern volatile sig_atomic_t profile_signal;
void profile_on_signal(int sig);
/* Was profiling interrupted? Says so once. */
int profile_stopped(void);
/* In a child of a parallel round, running seed: the first one's failures
 * are said, the others' are not. */
void profile_in_round_child(uint64_t seed);
/* How round run s of runs goes (ROUND_PRIORITY for the second half when the
 * policy counts on k). */
unsigned profile_run_how(const replay_config *c, unsigned how, uint64_t s, uint64_t runs);
/* One profiling run with seed, its trace at trace, other files at STEM.*. */
void profile_counts(const replay_config *c, uint64_t seed, const char *stem, const char *trace,
                    unsigned how, run_counts *out);

#endif
