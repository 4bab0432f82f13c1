/* Profiling runs before a replay (as Shuttle and Fray learn their bounds):
 *  - with --points visible or shared, R schedules of the program (the
 *    random policy, seeds 0..R-1, the visible operations as points) give
 *    the addresses accessed by two or more threads with at least one
 *    write; the pcs of the accesses to them become the schedule points
 *    (shared_points.c; with --points races, the racy pcs: race_points.c);
 *  - R runs under sched=random, seeds 0..R-1, with those points give the
 *    step budget k (the most steps a run took) and the thread count n. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "learn_points.h"
#include "profile_internal.h"
#include "run_record.h"
#include "weft/replay.h"
#include "weft/trace.h"

/* Profiling runs of this campaign that left the policy's order (a gate gave
 * up waiting): what they learnt, and with it the campaign's points and k,
 * may not be what a rerun learns. */
static uint64_t profile_departed;

/* One round of profiling runs (seeds 0..R-1) and what they counted. */
typedef struct profile_round {
    uint64_t runs, kmax, nmax;
    int kmax_exact;       /* some run counted its steps: kmax leaves out traces' estimates */
    uint64_t yield_steps; /* left out of the runs' steps, all runs */
    char seen[256];
    int estimated, capped;
    uint64_t died;         /* runs killed by a signal */
    int same_status;       /* the exit status every run had, or -1 */
    uint64_t kmax_failing; /* a failing run's count left out of kmax, or 0 */
    char note[64];
    char **traces;      /* [runs], under the profiling folder */
    run_counts *counts; /* [runs] */
} profile_round;

static void round_free(profile_round *pr, const replay_config *c, int round)
{
    for (uint64_t s = 0; pr->traces && s < pr->runs; s++) {
        char kept[PATH_MAX + 64];
        /* --save-trace keeps the schedules the points come from. */
        snprintf(kept, sizeof kept, "%s/profile-%d-%" PRIu64 ".wtr", c->out_dir, round, s);
        if (pr->traces[s] && (!c->save_trace || rename(pr->traces[s], kept) != 0))
            unlink(pr->traces[s]);
        static const char *const left[] = {".spool", ".live"}; /* a stopped learning run's */
        for (size_t i = 0; pr->traces[s] && i < 2; i++) {
            snprintf(kept, sizeof kept, "%s%s", pr->traces[s], left[i]);
            unlink(kept);
        }
        free(pr->traces[s]);
    }
    free(pr->traces);
    free(pr->counts);
    pr->traces = NULL;
    pr->counts = NULL;
}

static volatile sig_atomic_t round_signal;
static pid_t round_pids[64];

/* SIGINT or SIGTERM while a parallel round runs: pass it to the runs (each
 * ends its qemu and its trace as a run of its own would), then stop. */
static void on_round_signal(int sig)
{
    round_signal = sig;
    for (size_t i = 0; i < sizeof round_pids / sizeof *round_pids; i++)
        if (round_pids[i] > 0)
            kill(round_pids[i], sig);
}

/* Run seed s in a child that sends its counts through a pipe. */
static pid_t round_start(const replay_config *c, uint64_t s, const char *stem, const char *trace,
                         unsigned how, int *fd)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC))
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        profile_in_round_child(s);
        close(pfd[0]);
        run_counts rc;
        profile_counts(c, s, stem, trace, how, &rc);
        _exit(weft_write_all(pfd[1], &rc, sizeof rc) ? 1 : 0);
    }
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        return -1;
    }
    *fd = pfd[0];
    return pid;
}

/* The round's runs, `jobs` at a time in children of this process. */
static int round_parallel(const replay_config *c, const char *dir, int round, unsigned how,
                          profile_round *pr, unsigned jobs)
{
    int fds[64];
    uint64_t seed_of[64];
    unsigned live = 0;
    uint64_t next = 0;
    int failed = 0;
    round_signal = 0;
    if (profile_stopped())
        return -1;
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_round_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    while (next < pr->runs || live) {
        while (!failed && !round_signal && next < pr->runs && live < jobs) {
            char stem[PATH_MAX + 32];
            snprintf(stem, sizeof stem, "%s/profile-%d-%" PRIu64, dir, round, next);
            unsigned slot = 0;
            while (round_pids[slot] > 0)
                slot++;
            round_pids[slot] = round_start(c, next, stem, pr->traces[next],
                                           profile_run_how(c, how, next, pr->runs), &fds[slot]);
            if (round_pids[slot] < 0) {
                weft_error("profiling: cannot start a run: %s", strerror(errno));
                round_pids[slot] = 0;
                failed = 1;
                break;
            }
            seed_of[slot] = next++;
            live++;
        }
        if (!live)
            break;
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0 && errno == EINTR)
            continue;
        unsigned slot = 0;
        while (slot < jobs && round_pids[slot] != pid)
            slot++;
        if (pid < 0 || slot == jobs)
            continue;
        run_counts *rc = &pr->counts[seed_of[slot]];
        if (read(fds[slot], rc, sizeof *rc) != (ssize_t)sizeof *rc)
            rc->rc = -1;
        close(fds[slot]);
        round_pids[slot] = 0;
        live--;
        failed |= rc->rc != 0;
        if (next >= pr->runs && !live)
            break;
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (round_signal && !profile_interrupted) {
        profile_interrupted = round_signal;
        weft_error("interrupted while profiling");
    }
    return failed || round_signal || next < pr->runs ? -1 : 0;
}

static int profile_round_run(const replay_config *c, const char *dir, int round, unsigned how,
                             profile_round *pr)
{
    memset(pr, 0, sizeof *pr);
    pr->runs = c->profile_runs ? c->profile_runs : 1;
    pr->traces = calloc(pr->runs, sizeof *pr->traces);
    pr->counts = calloc(pr->runs, sizeof *pr->counts);
    if (!pr->traces || !pr->counts) {
        weft_error("profiling: out of memory");
        return -1;
    }
    for (uint64_t s = 0; s < pr->runs; s++)
        if (asprintf(&pr->traces[s], "%s/profile-%d-%" PRIu64 ".wtr", dir, round, s) < 0) {
            pr->traces[s] = NULL;
            weft_error("profiling: out of memory");
            return -1;
        }
    /* The runs of a round are independent: with --jobs they run side by
     * side, as a campaign's seeds do. */
    unsigned jobs = c->jobs < 64 ? c->jobs : 64;
    if (jobs > 1 && pr->runs > 1) {
        if (round_parallel(c, dir, round, how, pr, jobs))
            return -1;
    } else {
        for (uint64_t s = 0; s < pr->runs; s++) {
            char stem[PATH_MAX + 32];
            snprintf(stem, sizeof stem, "%s/profile-%d-%" PRIu64, dir, round, s);
            if (profile_stopped())
                return -1;
            profile_counts(c, s, stem, pr->traces[s], profile_run_how(c, how, s, pr->runs),
                           &pr->counts[s]);
            if (pr->counts[s].rc || profile_stopped())
                return -1;
        }
    }
    size_t sl = 0;
    uint64_t kmax_estimated = 0, kmax_passed = 0, failed_runs = 0;
    for (uint64_t s = 0; s < pr->runs; s++) {
        const run_counts *rc = &pr->counts[s];
        profile_departed += rc->departures > 0;
        if (rc->note[0])
            snprintf(pr->note, sizeof pr->note, "%s", rc->note);
        pr->estimated |= rc->estimated;
        pr->capped |= rc->capped;
        pr->died += (uint64_t)rc->died;
        pr->same_status = s == 0 || rc->status == pr->same_status ? rc->status : -1;
        /* A run killed at --timeout is counted from its trace, every event
         * a step: ten million where the others took 61 and 68, and every
         * change point past their ends. Its count only when no other run
         * has one. */
        if (rc->estimated || rc->capped)
            kmax_estimated = rc->steps > kmax_estimated ? rc->steps : kmax_estimated;
        else {
            pr->kmax = rc->steps > pr->kmax ? rc->steps : pr->kmax;
            if (!rc->died && rc->status == c->expect_exit)
                kmax_passed = rc->steps > kmax_passed ? rc->steps : kmax_passed;
            else
                failed_runs++;
        }
        pr->kmax_exact |= !rc->estimated && !rc->capped;
        pr->yield_steps += rc->yield_steps;
        pr->nmax = rc->threads > pr->nmax ? rc->threads : pr->nmax;
        if (sl < sizeof pr->seen - 24)
            sl += (size_t)snprintf(pr->seen + sl, sizeof pr->seen - sl, "%s%" PRIu64, s ? ", " : "",
                                   rc->steps);
    }
    if (!pr->kmax_exact)
        pr->kmax = kmax_estimated;
    /* A run that found the bug may go on far longer than the program does
     * (a lost update rewound a parallel for's work counter: the items
     * again, 8094 steps where passing runs took 1044), and PCT's change
     * points spread over steps that only a failed run reaches (8 hits in
     * 100 against 48 with k from the passing runs). The bug came before
     * those steps; the passing runs' count is k then. */
    else if (failed_runs && kmax_passed && kmax_passed * 2 < pr->kmax) {
        pr->kmax_failing = pr->kmax;
        pr->kmax = kmax_passed;
    }
    return 0;
}

/* k and n: the largest counts of a round of runs under the random policy
 * (seeds 0, 1, ...; the second half under priorities, run_how) with the campaign's
 * points, since a run of another
 * schedule may take more steps than one profiling run did; the campaign's
 * runs that still take more are counted in its summary. */
static void take_k_n(replay_config *c, const profile_round *pr, int rounds, double t0)
{
    int counted = !c->k;
    if (!c->k) {
        c->k = pr->kmax ? pr->kmax : 1;
        if (pr->kmax_failing)
            snprintf(c->k_source, sizeof c->k_source,
                     "the passing profiling runs' most steps (a failing one: %" PRIu64 ")%s",
                     pr->kmax_failing,
                     pr->yield_steps ? ", without the steps of spinning or yielding threads" : "");
        else
            snprintf(c->k_source, sizeof c->k_source,
                     "the largest of %" PRIu64 " profiling runs' steps%s", pr->runs,
                     pr->yield_steps ? ", without the steps of spinning or yielding threads" : "");
    }
    if (!c->n)
        c->n = pr->nmax ? pr->nmax : 1;
    char how[96];
    uint64_t first = pr->runs / 2; /* the first under priorities (run_how) */
    if (profile_run_how(c, 0, pr->runs - 1, pr->runs) & ROUND_PRIORITY)
        snprintf(how, sizeof how,
                 first > 1 ? "random, seeds 0..%" PRIu64 "; pct depth 1, seeds %" PRIu64
                             "..%" PRIu64
                           : "random, seed %" PRIu64 "; pct depth 1, seeds %" PRIu64 "..%" PRIu64,
                 first - 1, first, pr->runs - 1);
    else
        snprintf(how, sizeof how, "random, seeds 0..%" PRIu64, pr->runs - 1);
    printf("weft: profiling: %" PRIu64 " run%s (%s, points %s%s) took "
           "%s steps, up to %" PRIu64 " threads -> k = %" PRIu64 ", n = %" PRIu64
           " (%d round%s, %.2f s)%s%s%s\n",
           pr->runs, pr->runs == 1 ? "" : "s", how,
           c->race_points ? "races" : replay_points_name(c->points), rounds > 1 ? ", learnt" : "",
           pr->seen, pr->nmax, c->k, c->n, rounds, rounds == 1 ? "" : "s", weft_now_s() - t0,
           !pr->estimated ? ""
           : pr->kmax_exact
               ? "; a run that died before the plugin wrote its record is left out of k"
               : "; counted from a trace: a run died before the plugin wrote its record",
           pr->note[0] ? "; note: a profiling run " : "", pr->note);
    if (profile_departed)
        printf("weft: profiling: %" PRIu64 " run%s left the policy's order (a gate gave up "
               "waiting: a host stall, or a thread stuck in qemu's exclusive section): the points "
               "and k learnt may differ from a rerun's, and with them every seed's schedule\n",
               profile_departed, profile_departed == 1 ? "" : "s");
    /* A program whose normal end is a non-zero status fails every run of
     * the campaign; the user may not know that a passing run's is 0. */
    if (pr->runs && pr->same_status >= 0 && pr->same_status != c->expect_exit)
        printf("weft: profiling: every run exited with status %d, a failing run's status (a "
               "passing run's is %d): if it is the program's normal status, --expect-exit %d\n",
               pr->same_status, c->expect_exit, pr->same_status);
    /* Fewer steps than threads: the threads were created and synchronize
     * where visible points do not look (xz's, inside liblzma), and a
     * priority policy has next to nothing to choose. Unless every run died
     * early: then that is why. */
    if (counted && c->points == POINTS_VISIBLE && !c->race_points && c->k < c->n &&
        pr->died < pr->runs)
        printf("weft: profiling: k = %" PRIu64 " for %" PRIu64 " threads: they synchronize "
               "inside a library, where visible points do not look (only the program's own "
               "code has them); --points shared makes the library's atomics, system calls and "
               "shared accesses points too\n",
               c->k, c->n);
    /* Tens of thousands of steps: a program that hands much data between
     * its threads correctly (documents, pages, a sort's runs, heap blocks
     * malloc moved between threads) has each such access as a point, and a
     * change point rarely falls where a bug needs it (a helper's programs:
     * an LRU cache's use after free, k 1.5 million, PCT 4 hits in 100; with
     * --points races, k 9,738 and 49). */
    enum { K_CROWDED = 10000 };
    if (counted && c->points == POINTS_VISIBLE && !c->race_points && c->k > K_CROWDED &&
        (c->kind == PCT_KIND_PCT || c->kind == PCT_KIND_PPCT || c->kind == PCT_KIND_RPRO))
        printf("weft: profiling: k = %" PRIu64 ": most steps are plain accesses to data the "
               "threads share, and a change point rarely falls where a bug needs it; "
               "--points races keeps only the accesses weft races finds racing (docs/replay.md, "
               "\"Schedule points\")\n",
               c->k);
}

/* The points (--points visible without a file, shared, races) learnt in
 * rounds: the first round's runs have the visible operations alone as
 * points, each later round's the pcs learnt so far, each run stopped at 64
 * MB of trace; a round whose traces add no pc ends the learning, and its
 * counts give k and n (its runs used the final points) unless a run was
 * stopped at the limit: then one more round, of whole runs, counts. So a
 * long program's profiling costs R of its schedules plus the learning's
 * short runs. A program whose points keep growing gets a last round that
 * only counts. */
static int profile_learn(replay_config *c, const char *dir)
{
    enum { MAX_LEARNING_ROUNDS = 4 };
    learn_points *lp = learn_points_new(c->race_points, c->run.binary);
    if (!lp)
        return -1;
    snprintf(c->pcs_path, sizeof c->pcs_path, "%s/points.pcs", c->out_dir);
    double t0 = weft_now_s();
    profile_round pr = {0};
    int rc = -1, round, count_only = 0;
    for (round = 0;; round++) {
        unsigned how = count_only ? 0 : ROUND_LEARN | (round == 0 ? ROUND_FIRST : 0);
        size_t added = 0;
        double tr = weft_now_s();
        if (profile_round_run(c, dir, round, how, &pr) ||
            (!count_only &&
             learn_points_add(lp, (const char *const *)pr.traces, pr.runs, &added)) ||
            profile_stopped() || (!count_only && learn_points_write(lp, c->pcs_path)))
            break;
        /* A long program's profiling takes minutes: say where it is. */
        if (!c->quiet && weft_now_s() - tr >= 5)
            fprintf(stderr,
                    "weft: profiling round %d (%s, %" PRIu64 " runs%s) took %.1f s: %" PRIu64
                    " pcs so far\n",
                    round + 1, count_only ? "whole runs, counting" : "learning", pr.runs,
                    pr.capped ? ", stopped at --learn-size" : "", weft_now_s() - tr,
                    learn_points_pcs(lp));
        round_free(&pr, c, round);
        if (count_only || (!added && !pr.capped)) {
            rc = 0;
            break;
        }
        count_only = !added || round + 1 >= MAX_LEARNING_ROUNDS;
    }
    round_free(&pr, c, round);
    if (rc == 0) {
        c->npcs = learn_points_pcs(lp);
        uint64_t found = learn_points_found(lp);
        if (c->race_points)
            printf("weft: profiling: %" PRIu64 " race report%s (weft races on each run), %" PRIu64
                   " instruction%s in them -> %s\n",
                   found, found == 1 ? "" : "s", c->npcs, c->npcs == 1 ? "" : "s", c->pcs_path);
        else
            printf("weft: profiling: %" PRIu64 " shared address%s (8-byte granules accessed by 2+ "
                   "threads of a run, 1+ write), %" PRIu64 " instruction%s touching them -> %s\n",
                   found, found == 1 ? "" : "es", c->npcs, c->npcs == 1 ? "" : "s", c->pcs_path);
        take_k_n(c, &pr, round + 1, t0);
    }
    learn_points_free(lp);
    return rc;
}

static int profile(replay_config *c)
{
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/tmp", c->out_dir);
    if (weft_mkdirs(dir))
        return -1;
    if (c->points == POINTS_SHARED || (c->points == POINTS_VISIBLE && !c->pcs_path[0]))
        return profile_learn(c, dir);
    if (c->k && c->n)
        return 0;
    double t0 = weft_now_s();
    profile_round pr;
    int rc = profile_round_run(c, dir, 0, 0, &pr);
    round_free(&pr, c, 0);
    if (!rc)
        take_k_n(c, &pr, 1, t0);
    return rc;
}

int replay_profile(replay_config *c)
{
    profile_interrupted = 0;
    profile_departed = 0;
    profile_signal = 0;
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = profile_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int rc = profile(c);
    if (!rc && profile_stopped())
        rc = -1; /* the last analysis was interrupted */
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return rc && profile_interrupted ? 128 + profile_interrupted : rc;
}
