/* Campaigns: many seeds, `jobs` of them at once, one JSON line per finished
 * run appended to runs.jsonl, resumable, with progress on stderr.
 *
 * Each run is a forked worker (which has its job slot's fork server run the
 * seed, or starts a qemu of its own through guest_run_qemu, and classifies
 * the run); the parent only dispatches seeds, keeps the slots' servers
 * going, reaps workers, has hits and progress said (campaign_progress.c),
 * and turns SIGINT/SIGTERM into an orderly stop: workers kill their runs
 * and record nothing, finished runs stay. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/replay.h"

#include "campaign_progress.h"
#include "runs_file.h"

#define WORKER_INTERRUPTED 100
#define WORKER_ERROR 101
/* OR'ed into a verdict: the slot's fork server failed, start it again. */
#define WORKER_SERVER_LOST 16

static volatile sig_atomic_t stop_signal;
static int wake_fd = -1; /* the parent's wake-up pipe (write end), or -1 */

static void wake_parent(void)
{
    int e = errno;
    if (wake_fd >= 0 && write(wake_fd, "", 1) < 0) {
        /* full: the parent has wake-ups pending anyway */
    }
    errno = e;
}

/* In a worker too: a stop between its check and its qemu run's own handler
 * must still end that run at once (guest_note_interrupt). */
static void on_stop(int sig)
{
    stop_signal = sig;
    guest_note_interrupt(sig);
    wake_parent();
}

static void on_child(int sig)
{
    (void)sig;
    wake_parent();
}

static void worker(const replay_config *c, uint64_t seed, int runs_fd, const char *tmp_dir)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGCHLD, SIG_DFL);
    wake_fd = -1; /* its own wake-ups are not the parent's */
    if (stop_signal)
        _exit(WORKER_INTERRUPTED);
    char *line = NULL;
    replay_verdict v;
    int rc = replay_run_seed(c, seed, tmp_dir, &line, &v);
    if (rc)
        _exit(rc > 0 ? WORKER_INTERRUPTED : WORKER_ERROR);
    int lost = replay_server_lost(c->server) ? WORKER_SERVER_LOST : 0;
    size_t len = strlen(line);
    /* One write with O_APPEND: concurrent workers never interleave lines. */
    if (write(runs_fd, line, len) != (ssize_t)len) {
        weft_error("runs.jsonl: %s", strerror(errno));
        _exit(WORKER_ERROR);
    }
    if (v != REPLAY_PASS || c->seed_given) {
        char path[PATH_MAX + 64], err[256];
        snprintf(path, sizeof path, "%s/%" PRIu64 ".line", tmp_dir, seed);
        weft_write_atomic(path, line, len, err, sizeof err);
    }
    _exit((int)v | lost);
}

/* The next seed of the range at or after *cursor that is not done. */
static uint64_t next_seed(const replay_config *c, const uint64_t *done, size_t ndone,
                          uint64_t *cursor)
{
    for (;;) {
        uint64_t s = c->first_seed + (*cursor)++;
        if (!done || !bsearch(&s, done, ndone, sizeof *done, replay_u64_cmp))
            return s;
    }
}

/* The workers in flight and the job slots they hold. A slot is a share of
 * the machine and, with fork servers, the slot's server: its worker gives
 * it back as soon as the server has answered its run's status, so that the
 * next seed runs there while that worker still judges the run. Up to two
 * workers per slot: one running, one judging. */
typedef struct flight {
    unsigned jobs;
    pid_t *pid;               /* [2 jobs] workers, 0: a free entry */
    uint64_t *seed;           /* [2 jobs] */
    unsigned *slot;           /* [2 jobs] the slot each worker took */
    int *holds;               /* [2 jobs] it has not given its slot back */
    int *user;                /* [jobs] the worker holding the slot, -1: free */
    volatile int *given_back; /* [jobs] set by a worker, shared memory */
    unsigned active;
    int wake[2]; /* a pipe that workers, SIGCHLD and the stop signals write to */
} flight;

/* 0, or 1 after one line. */
static int flight_open(flight *f, unsigned jobs)
{
    *f = (flight){.jobs = jobs, .wake = {-1, -1}};
    f->pid = calloc(2 * jobs, sizeof *f->pid);
    f->seed = calloc(2 * jobs, sizeof *f->seed);
    f->slot = calloc(2 * jobs, sizeof *f->slot);
    f->holds = calloc(2 * jobs, sizeof *f->holds);
    f->user = malloc(jobs * sizeof *f->user);
    void *shared =
        mmap(NULL, jobs * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    f->given_back = shared == MAP_FAILED ? NULL : shared;
    if (!f->pid || !f->seed || !f->slot || !f->holds || !f->user || !f->given_back ||
        pipe2(f->wake, O_CLOEXEC | O_NONBLOCK)) {
        weft_error("cannot start the campaign: %s", strerror(errno));
        return 1;
    }
    for (unsigned s = 0; s < jobs; s++)
        f->user[s] = -1;
    wake_fd = f->wake[1];
    return 0;
}

static void flight_close(flight *f)
{
    wake_fd = -1;
    for (int i = 0; i < 2; i++)
        if (f->wake[i] >= 0)
            close(f->wake[i]);
    if (f->given_back)
        munmap((void *)f->given_back, f->jobs * sizeof(int));
    free(f->pid);
    free(f->seed);
    free(f->slot);
    free(f->holds);
    free(f->user);
}

/* Slots whose workers said their server is free again. */
static void flight_collect(flight *f)
{
    for (unsigned s = 0; f->given_back && s < f->jobs; s++) {
        if (f->user[s] < 0 || !__atomic_exchange_n(&f->given_back[s], 0, __ATOMIC_ACQ_REL))
            continue;
        f->holds[f->user[s]] = 0;
        f->user[s] = -1;
    }
}

/* A free slot, if a worker entry is free too; else -1. */
static int flight_free_slot(const flight *f)
{
    if (f->active >= 2 * f->jobs)
        return -1;
    for (unsigned s = 0; s < f->jobs; s++)
        if (f->user[s] < 0)
            return (int)s;
    return -1;
}

/* Fork a worker for `seed` on slot s. 0, or -1 after one line. */
static int flight_start(flight *f, unsigned s, replay_config *wc, uint64_t seed, int runs_fd,
                        const char *tmp_dir)
{
    unsigned w = 0;
    while (f->pid[w])
        w++;
    f->given_back[s] = 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        weft_error("fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        close(f->wake[0]);
        replay_server_when_free(wc->server, &f->given_back[s], f->wake[1]);
        worker(wc, seed, runs_fd, tmp_dir);
    }
    f->pid[w] = pid;
    f->seed[w] = seed;
    f->slot[w] = s;
    f->holds[w] = 1;
    f->user[s] = (int)w;
    f->active++;
    return 0;
}

/* Until a worker ends or gives its slot back, or a signal comes. */
static void flight_sleep(flight *f)
{
    struct pollfd pf = {.fd = f->wake[0], .events = POLLIN};
    if (poll(&pf, 1, -1) > 0) {
        char buf[64];
        while (read(f->wake[0], buf, sizeof buf) > 0)
            ;
    }
}

/* waitpid reaped `pid`: 1 if it was no worker; else 0 with its exit code
 * (a verdict, or WORKER_*) and seed. A worker that did not finish its run
 * may have left its server's answer unread: that server is restarted. */
static int flight_reaped(flight *f, replay_pool *pool, pid_t pid, int st, int *code, uint64_t *seed)
{
    unsigned w = 0;
    while (w < 2 * f->jobs && f->pid[w] != pid)
        w++;
    if (w == 2 * f->jobs)
        return 1;
    f->pid[w] = 0;
    f->active--;
    *seed = f->seed[w];
    *code = WIFEXITED(st) ? WEXITSTATUS(st) : WORKER_INTERRUPTED;
    unsigned s = f->slot[w];
    if (f->holds[w]) {
        f->holds[w] = 0;
        f->user[s] = -1;
        int freed = __atomic_exchange_n(&f->given_back[s], 0, __ATOMIC_ACQ_REL);
        if (!freed && ((*code & WORKER_SERVER_LOST) || *code >= WORKER_INTERRUPTED))
            replay_pool_lost(pool, s);
    }
    if (*code < WORKER_INTERRUPTED)
        *code &= ~WORKER_SERVER_LOST;
    return 0;
}

/* A campaign while it runs: what the dispatching loop and its steps share. */
typedef struct campaign {
    replay_config *c;
    char runs_path[PATH_MAX + 32], tmp_dir[PATH_MAX + 16];
    uint64_t *done; /* seeds already in runs.jsonl (--resume), sorted */
    size_t ndone;
    int fd; /* runs.jsonl, appended to by the workers */
    uint64_t ntodo, cursor, next;
    unsigned jobs;
    replay_pool *pool;
    flight f;
    unsaid_runs unsaid; /* failing runs finished, said once every lower seed is done */
    progress pg;        /* its done and hits are the campaign's counts */
    int error, stop_hit, stop_time, forwarded;
    struct sigaction old_int, old_term, old_chld;
} campaign;

/* The seeds to run are the range minus the done ones, taken one at a
 * time: no list as long as --runs (which may be 2^40). */
static void campaign_plan(campaign *k)
{
    const replay_config *c = k->c;
    uint64_t ndone_here = 0;
    for (size_t i = 0; i < k->ndone; i++)
        ndone_here += k->done[i] >= c->first_seed && k->done[i] - c->first_seed < c->runs;
    k->ntodo = c->runs - ndone_here;
    k->jobs = c->jobs;
    /* No more slots than seeds: each slot may start a fork server. */
    if (k->jobs > k->ntodo)
        k->jobs = k->ntodo ? (unsigned)k->ntodo : 1;
    if (!c->seed_given && !c->inner && c->deadline && !c->runs_given)
        printf("weft: seeds from %" PRIu64 ", as many as --for %" PRIu64
               " s allows, %u at a time -> %s\n",
               c->first_seed, c->budget_s, k->jobs, k->runs_path);
    else if (!c->seed_given && !c->inner)
        printf("weft: seeds %" PRIu64 "..%" PRIu64 ": %" PRIu64 " to run (%" PRIu64
               " already done), %u at a time%s -> %s\n",
               c->first_seed, c->first_seed + c->runs - 1, k->ntodo, c->runs - k->ntodo, k->jobs,
               c->deadline ? ", while --for allows" : "", k->runs_path);
    fflush(stdout);
}

/* The folder's tmp/ and runs.jsonl, truncated unless resumed. 0, or -1
 * after one line. */
static int campaign_open(campaign *k, replay_config *c)
{
    *k = (campaign){.c = c, .fd = -1};
    snprintf(k->runs_path, sizeof k->runs_path, "%s/runs.jsonl", c->out_dir);
    snprintf(k->tmp_dir, sizeof k->tmp_dir, "%s/tmp", c->out_dir);
    if (weft_mkdirs(k->tmp_dir))
        return -1;
    if (c->resume) {
        if (replay_runs_done(k->runs_path, &k->done, &k->ndone))
            return -1;
    } else if (access(k->runs_path, F_OK) == 0 && !c->seed_given) {
        printf("weft: %s: replacing the runs of an earlier campaign (--resume continues one)\n",
               k->runs_path);
    }
    k->fd = open(k->runs_path, O_WRONLY | O_CREAT | O_APPEND | (c->resume ? 0 : O_TRUNC), 0666);
    if (k->fd < 0) {
        weft_error("%s: %s", k->runs_path, strerror(errno));
        free(k->done);
        return -1;
    }
    campaign_plan(k);
    return 0;
}

/* SIGINT and SIGTERM stop the campaign in order instead of killing it
 * (finished runs stay, --resume runs the rest); no SA_RESTART, so that a
 * wait returns on them. SIGCHLD wakes the dispatching loop. */
static void signals_take(campaign *k)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, &sa, &k->old_int);
    sigaction(SIGTERM, &sa, &k->old_term);
    sa.sa_handler = on_child;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, &k->old_chld);
}

static void signals_restore(const campaign *k)
{
    sigaction(SIGINT, &k->old_int, NULL);
    sigaction(SIGTERM, &k->old_term, NULL);
    sigaction(SIGCHLD, &k->old_chld, NULL);
}

/* Start seeds on the free slots, until none is free or nothing more
 * should start. */
static void campaign_dispatch(campaign *k)
{
    int s = -1;
    if (k->c->deadline && weft_now_s() >= k->c->deadline && k->next < k->ntodo)
        k->stop_time = 1;
    while (!stop_signal && !k->error && !k->stop_hit && !k->stop_time && k->next < k->ntodo &&
           (s = flight_free_slot(&k->f)) >= 0) {
        replay_config wc = *k->c;
        wc.server = replay_pool_server(k->pool, k->c, (unsigned)s, &stop_signal);
        if (stop_signal)
            break;
        uint64_t seed = next_seed(k->c, k->done, k->ndone, &k->cursor);
        if (flight_start(&k->f, (unsigned)s, &wc, seed, k->fd, k->tmp_dir)) {
            k->error = 1;
            break;
        }
        k->next++;
    }
}

/* Say the finished failing runs below every seed still running (all of
 * them when `all`, at the end). */
static void say_finished(campaign *k, int all)
{
    uint64_t below = UINT64_MAX;
    for (unsigned w = 0; !all && w < 2 * k->f.jobs; w++)
        if (k->f.pid[w] && k->f.seed[w] < below)
            below = k->f.seed[w];
    unsaid_say(&k->unsaid, below, k->c, k->tmp_dir, &k->pg);
}

/* A worker's exit code: count its run, and say what a failing run (or the
 * --seed run) found as soon as every lower seed is done, not at the end. */
static void campaign_count(campaign *k, int code, uint64_t seed)
{
    const replay_config *c = k->c;
    if (code == WORKER_ERROR) {
        k->error = 1;
        return;
    }
    if (code == WORKER_INTERRUPTED || code >= REPLAY_VERDICT_COUNT)
        return;
    k->pg.done++;
    if (code != REPLAY_PASS || c->seed_given) {
        if (replay_verdict_is_hit((replay_verdict)code)) {
            k->pg.hits++;
            if (c->stop_on_hit)
                k->stop_hit = 1;
        }
        unsaid_add(&k->unsaid, c, seed, k->tmp_dir, &k->pg);
    }
    say_finished(k, 0);
    if (!c->seed_given && !c->quiet && !c->inner)
        progress_show(&k->pg);
}

/* Reap a worker, or sleep until there may be one to reap. 0, or -1 after
 * one line when waitpid fails. */
static int campaign_reap(campaign *k)
{
    int st;
    pid_t w = waitpid(-1, &st, WNOHANG);
    if (w == 0 || (w < 0 && errno == EINTR)) {
        flight_sleep(&k->f);
        return 0;
    }
    if (w < 0) {
        weft_error("waitpid: %s", strerror(errno));
        return -1;
    }
    int code;
    uint64_t seed;
    if (flight_reaped(&k->f, k->pool, w, st, &code, &seed))
        replay_pool_reaped(k->pool, w);
    else
        campaign_count(k, code, seed);
    return 0;
}

static void campaign_loop(campaign *k)
{
    while (!k->error || k->f.active) {
        flight_collect(&k->f);
        campaign_dispatch(k);
        if (!k->f.active)
            break;
        /* A stop sent to weft alone (kill, not the terminal's ^C) must
         * reach the workers too, once: they kill their runs. */
        if (stop_signal && !k->forwarded) {
            for (unsigned i = 0; i < 2 * k->f.jobs; i++)
                if (k->f.pid[i])
                    kill(k->f.pid[i], SIGTERM);
            k->forwarded = 1;
        }
        if (campaign_reap(k))
            break;
    }
}

/* Everything the loop held, given back; runs.jsonl made durable and put in
 * seed order. Returns this invocation's wall time. */
/* What runs killed mid-way left in tmp/ (a spool, the live notes: sparse,
 * yet their apparent size is the whole mapping's, 1.7 GB each): --resume
 * runs those seeds again from the start. */
static void clear_scratch(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

static double campaign_close(campaign *k)
{
    say_finished(k, 1); /* a lower seed interrupted or failed to start */
    free(k->unsaid.seeds);
    if (k->pg.tty)
        fputs("\n", stderr);
    if (!k->c->pool)
        replay_pool_destroy(k->pool);
    flight_close(&k->f);
    signals_restore(k);
    free(k->done);
    double wall = weft_now_s() - k->pg.t0;
    if (fsync(k->fd) != 0 && errno != EINVAL)
        weft_error("%s: %s", k->runs_path, strerror(errno));
    close(k->fd);
    replay_runs_sort(k->runs_path);
    clear_scratch(k->tmp_dir); /* empty unless a worker was killed mid-run */
    rmdir(k->tmp_dir);
    return wall;
}

/* summary.json and timing.json from the whole runs.jsonl (a resumed
 * campaign's earlier runs too), and the summary printed. Returns weft's
 * exit status by the hits. */
static int campaign_summarize(const campaign *k, double wall)
{
    const replay_config *c = k->c;
    int status = k->pg.hits ? 10 : WEFT_EXIT_OK;
    replay_summary s;
    char sum_path[PATH_MAX + 32], timing_path[PATH_MAX + 32], err[512];
    snprintf(sum_path, sizeof sum_path, "%s/summary.json", c->out_dir);
    snprintf(timing_path, sizeof timing_path, "%s/timing.json", c->out_dir);
    if (replay_summary_read(k->runs_path, &s, err, sizeof err) == 0) {
        if (replay_summary_write(&s, sum_path, err, sizeof err) ||
            /* after --resume, this invocation's wall time is not the campaign's */
            replay_timing_write(&s, timing_path, c->resume ? -1 : wall, err, sizeof err))
            weft_error("%s", err);
        if (!c->seed_given && !c->inner) {
            replay_summary_print(&s, stdout);
            printf("  files     %s, %s\n", k->runs_path, sum_path);
        }
        status = s.hits ? 10 : WEFT_EXIT_OK;
    } else if (k->pg.done) {
        weft_error("%s", err);
    }
    return status;
}

int replay_campaign(replay_config *c)
{
    campaign k;
    if (campaign_open(&k, c))
        return WEFT_EXIT_FAIL;
    signals_take(&k);
    k.pool = c->pool ? c->pool : replay_pool_create(c);
    k.pg = (progress){.tty = isatty(2) && !c->seed_given && !c->quiet && !c->inner,
                      .total = k.ntodo,
                      .t0 = weft_now_s(),
                      .last_line = weft_now_s(),
                      .next_line_at = k.ntodo / 10 ? k.ntodo / 10 : 1,
                      .deadline = c->deadline};
    k.error = flight_open(&k.f, k.jobs);
    campaign_loop(&k);
    int status = campaign_summarize(&k, campaign_close(&k));
    if (stop_signal) {
        printf("weft: interrupted (%s): %" PRIu64 " of %" PRIu64
               " runs finished this time; the same command with --resume runs the rest\n",
               strsignal(stop_signal), k.pg.done, k.ntodo);
        return 128 + stop_signal;
    }
    if (k.error)
        return WEFT_EXIT_FAIL;
    if (k.stop_hit && !c->seed_given && !c->inner)
        printf("weft: stopped at the first hit (--stop-on-hit): the hit rate above is not an "
               "estimate\n");
    else if (k.stop_time && !c->inner)
        printf("weft: no run started after %" PRIu64 " s (--for): %" PRIu64 " runs this time\n",
               c->budget_s, k.pg.done);
    return status;
}
