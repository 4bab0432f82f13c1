/* Campaigns: many seeds, `jobs` of them at once, one JSON line per finished
 * run appended to runs.jsonl, resumable, with progress on stderr.
 *
 * Each run is a forked worker (which has its job slot's fork server run the
 * seed, or starts a qemu of its own through guest_run_qemu, and classifies
 * the run); the parent only dispatches seeds, keeps the slots' servers
 * going, reaps workers, prints hits and progress, and turns SIGINT/SIGTERM
 * into an orderly stop: workers kill their runs and record nothing,
 * finished runs stay. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/replay.h"

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

static void on_stop(int sig)
{
    stop_signal = sig;
    wake_parent();
}

static void on_child(int sig)
{
    (void)sig;
    wake_parent();
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Seeds already in runs.jsonl (sorted); a last line cut short by a kill is
 * removed so that appends start on a fresh line. */
static int load_done(const char *path, uint64_t **seeds, size_t *n)
{
    *seeds = NULL;
    *n = 0;
    FILE *f = fopen(path, "r+");
    if (!f)
        return errno == ENOENT ? 0 : (weft_error("%s: %s", path, strerror(errno)), -1);
    size_t cap = 0;
    char *buf = NULL;
    size_t blen = 0;
    ssize_t got;
    off_t good = 0;
    while ((got = getline(&buf, &blen, f)) > 0) {
        if (buf[got - 1] != '\n')
            break;
        good += got;
        json_t *o = json_loads(buf, 0, NULL);
        json_t *s = o ? json_object_get(o, "seed") : NULL;
        if (json_is_integer(s)) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 256;
                uint64_t *m = realloc(*seeds, cap * sizeof *m);
                if (!m) {
                    json_decref(o);
                    break;
                }
                *seeds = m;
            }
            (*seeds)[(*n)++] = (uint64_t)json_integer_value(s);
        }
        json_decref(o);
    }
    free(buf);
    if (ftruncate(fileno(f), good) != 0)
        weft_error("%s: %s", path, strerror(errno));
    fclose(f);
    if (*n)
        qsort(*seeds, *n, sizeof **seeds, cmp_u64);
    return 0;
}

int replay_line_cmp(const void *a, const void *b)
{
    const replay_line *x = a, *y = b;
    if (x->seed != y->seed)
        return x->seed < y->seed ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

int replay_lines_read(FILE *f, size_t tag, replay_line **lines, size_t *n, size_t *cap)
{
    char *buf = NULL;
    size_t blen = 0;
    ssize_t got;
    int rc = 0;
    while ((got = getline(&buf, &blen, f)) > 0) {
        if (buf[got - 1] != '\n')
            break;
        /* NUL bytes (zeros a crash left in the file) would cut the line's
         * text short, and its newline with it: they become spaces. */
        for (char *z = memchr(buf, 0, (size_t)got); z; z = memchr(z, 0, (size_t)(buf + got - z)))
            *z = ' ';
        json_t *o = json_loads(buf, 0, NULL);
        json_t *s = o ? json_object_get(o, "seed") : NULL;
        uint64_t seed = json_is_integer(s) ? (uint64_t)json_integer_value(s) : UINT64_MAX;
        json_decref(o);
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 256;
            replay_line *m = realloc(*lines, c * sizeof *m);
            if (!m) {
                rc = -1;
                break;
            }
            *lines = m;
            *cap = c;
        }
        (*lines)[*n] = (replay_line){seed, *n, tag, strdup(buf)};
        (*n)++;
    }
    free(buf);
    return rc;
}

/* At the end: runs.jsonl in seed order (a seed once), so two campaigns with
 * the same arguments give the same file apart from wall times. */
static void sort_runs(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    replay_line *lines = NULL;
    size_t n = 0, cap = 0, total = 0;
    if (replay_lines_read(f, 0, &lines, &n, &cap) == 0) {
        qsort(lines, n, sizeof *lines, replay_line_cmp);
        for (size_t i = 0; i < n; i++)
            total += lines[i].text ? strlen(lines[i].text) : 0;
        char *all = malloc(total + 1);
        size_t len = 0;
        for (size_t i = 0; all && i < n; i++) {
            if (!lines[i].text || (i && lines[i].seed == lines[i - 1].seed))
                continue;
            size_t l = strlen(lines[i].text);
            memcpy(all + len, lines[i].text, l);
            len += l;
        }
        char err[512];
        if (all && weft_write_atomic(path, all, len, err, sizeof err))
            weft_error("%s", err);
        free(all);
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i].text);
    free(lines);
    fclose(f);
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

/* What the parent says about a finished failing run (or the --seed run). */
static void report_run(const replay_config *c, uint64_t seed, const char *tmp_dir)
{
    char path[PATH_MAX + 64], cmd[8192];
    snprintf(path, sizeof path, "%s/%" PRIu64 ".line", tmp_dir, seed);
    json_t *o = json_load_file(path, 0, NULL);
    unlink(path);
    if (!o)
        return;
    const char *verdict = json_string_value(json_object_get(o, "verdict"));
    const char *detail = json_string_value(json_object_get(o, "detail"));
    const char *trace = json_string_value(json_object_get(o, "trace"));
    if (c->seed_given) {
        json_t *st = json_object_get(o, "steps"), *cp = json_object_get(o, "change_points");
        char *cps = json_is_array(cp) ? json_dumps(cp, JSON_COMPACT) : NULL;
        char steps[32] = "unknown";
        if (json_is_integer(st))
            snprintf(steps, sizeof steps, "%" JSON_INTEGER_FORMAT, json_integer_value(st));
        printf("seed %" PRIu64 ": %s%s%s\n", seed, verdict, detail && *detail ? ": " : "",
               detail ? detail : "");
        printf("  steps %s, change points %s, starvation overrides %" JSON_INTEGER_FORMAT
               ", threads %" JSON_INTEGER_FORMAT ", virtual makespan %" JSON_INTEGER_FORMAT
               " ns, wall %.3f s%s\n",
               steps, cps ? cps : "unknown", json_integer_value(json_object_get(o, "overrides")),
               json_integer_value(json_object_get(o, "threads")),
               json_integer_value(json_object_get(o, "makespan_ns")),
               json_number_value(json_object_get(o, "wall_s")),
               json_is_integer(st) ? "" : " (the run ended before the plugin wrote its record)");
        free(cps);
        if (trace)
            printf("  trace %s/%s (weft info, weft export)\n", c->out_dir, trace);
    } else if (!c->quiet) {
        printf("seed %" PRIu64 ": %s: %s\n", seed, verdict, detail ? detail : "");
        replay_repro_command(c, seed, cmd, sizeof cmd);
        printf("  reproduce: %s\n", cmd);
        if (trace)
            printf("  trace: %s/%s\n", c->out_dir, trace);
    }
    fflush(stdout);
    json_decref(o);
}

typedef struct progress {
    int tty;
    uint64_t total, done, hits;
    double t0, last_line;
    uint64_t next_line_at;
} progress;

static void progress_clear(const progress *p)
{
    if (p->tty)
        fputs("\r\033[K", stderr);
}

static void progress_show(progress *p)
{
    double el = weft_now_s() - p->t0;
    double per = p->done ? el / (double)p->done : 0;
    double eta = per * (double)(p->total - p->done);
    if (p->tty) {
        int width = 30, fill = p->total ? (int)(width * p->done / p->total) : width;
        fprintf(stderr,
                "\r\033[K[%.*s%*s] %" PRIu64 "/%" PRIu64 " runs, %" PRIu64
                " hit%s, %.2f s/run, ETA %.0f s",
                fill, "##############################", width - fill, "", p->done, p->total,
                p->hits, p->hits == 1 ? "" : "s", per, eta);
        fflush(stderr);
    } else if (p->done >= p->next_line_at || weft_now_s() - p->last_line > 60) {
        fprintf(stderr, "weft: %" PRIu64 "/%" PRIu64 " runs, %" PRIu64 " hit%s, %.2f s/run\n",
                p->done, p->total, p->hits, p->hits == 1 ? "" : "s", per);
        p->last_line = weft_now_s();
        uint64_t step = p->total / 10 ? p->total / 10 : 1;
        while (p->next_line_at <= p->done)
            p->next_line_at += step;
    }
}

/* The next seed of the range at or after *cursor that is not done. */
static uint64_t next_seed(const replay_config *c, const uint64_t *done, size_t ndone,
                          uint64_t *cursor)
{
    for (;;) {
        uint64_t s = c->first_seed + (*cursor)++;
        if (!done || !bsearch(&s, done, ndone, sizeof *done, cmp_u64))
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

int replay_campaign(replay_config *c)
{
    char runs_path[PATH_MAX + 32], tmp_dir[PATH_MAX + 16], err[512];
    snprintf(runs_path, sizeof runs_path, "%s/runs.jsonl", c->out_dir);
    snprintf(tmp_dir, sizeof tmp_dir, "%s/tmp", c->out_dir);
    if (weft_mkdirs(tmp_dir))
        return WEFT_EXIT_FAIL;
    uint64_t *done = NULL;
    size_t ndone = 0;
    if (c->resume) {
        if (load_done(runs_path, &done, &ndone))
            return WEFT_EXIT_FAIL;
    } else if (access(runs_path, F_OK) == 0 && !c->seed_given) {
        printf("weft: %s: replacing the runs of an earlier campaign (--resume continues one)\n",
               runs_path);
    }
    int fd = open(runs_path, O_WRONLY | O_CREAT | O_APPEND | (c->resume ? 0 : O_TRUNC), 0666);
    if (fd < 0) {
        weft_error("%s: %s", runs_path, strerror(errno));
        free(done);
        return WEFT_EXIT_FAIL;
    }
    /* The seeds to run are the range minus the done ones, taken one at a
     * time: no list as long as --runs (which may be 2^40). */
    uint64_t ndone_here = 0;
    for (size_t i = 0; i < ndone; i++)
        ndone_here += done[i] >= c->first_seed && done[i] - c->first_seed < c->runs;
    uint64_t ntodo = c->runs - ndone_here, cursor = 0;
    unsigned jobs = c->jobs;
    if (jobs > ntodo)
        jobs = ntodo ? (unsigned)ntodo : 1;
    if (!c->seed_given && !c->inner)
        printf("weft: seeds %" PRIu64 "..%" PRIu64 ": %" PRIu64 " to run (%" PRIu64
               " already done), %u at a time -> %s\n",
               c->first_seed, c->first_seed + c->runs - 1, ntodo, c->runs - ntodo, jobs, runs_path);
    fflush(stdout);

    struct sigaction sa = {0}, old_int, old_term, old_chld;
    sa.sa_handler = on_stop; /* no SA_RESTART: a wait returns on a signal */
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = on_child;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, &old_chld);

    replay_pool *pool = c->pool ? c->pool : replay_pool_create(c);
    flight f;
    progress pg = {.tty = isatty(2) && !c->seed_given && !c->quiet && !c->inner,
                   .total = ntodo,
                   .t0 = weft_now_s(),
                   .last_line = weft_now_s(),
                   .next_line_at = ntodo / 10 ? ntodo / 10 : 1};
    uint64_t next = 0, finished = 0, hits = 0;
    int error = flight_open(&f, jobs), stop_hit = 0, forwarded = 0;
    while (!error || f.active) {
        flight_collect(&f);
        int s = -1;
        while (!stop_signal && !error && !stop_hit && next < ntodo &&
               (s = flight_free_slot(&f)) >= 0) {
            replay_config wc = *c;
            wc.server = replay_pool_server(pool, c, (unsigned)s, &stop_signal);
            if (stop_signal)
                break;
            if (flight_start(&f, (unsigned)s, &wc, next_seed(c, done, ndone, &cursor), fd,
                             tmp_dir)) {
                error = 1;
                break;
            }
            next++;
        }
        if (!f.active)
            break;
        if (stop_signal && !forwarded) {
            for (unsigned i = 0; i < 2 * f.jobs; i++)
                if (f.pid[i])
                    kill(f.pid[i], SIGTERM);
            forwarded = 1;
        }
        int st;
        pid_t w = waitpid(-1, &st, WNOHANG);
        if (w == 0 || (w < 0 && errno == EINTR)) {
            flight_sleep(&f);
            continue;
        }
        if (w < 0) {
            weft_error("waitpid: %s", strerror(errno));
            break;
        }
        int code;
        uint64_t seed;
        if (flight_reaped(&f, pool, w, st, &code, &seed)) {
            replay_pool_reaped(pool, w);
            continue;
        }
        if (code == WORKER_ERROR) {
            error = 1;
            continue;
        }
        if (code == WORKER_INTERRUPTED || code >= REPLAY_VERDICT_COUNT)
            continue;
        finished++;
        pg.done = finished;
        if (code != REPLAY_PASS || c->seed_given) {
            if (replay_verdict_is_hit((replay_verdict)code)) {
                hits++;
                pg.hits = hits;
                if (c->stop_on_hit)
                    stop_hit = 1;
            }
            progress_clear(&pg);
            report_run(c, seed, tmp_dir);
        }
        if (!c->seed_given && !c->quiet && !c->inner)
            progress_show(&pg);
    }
    if (pg.tty)
        fputs("\n", stderr);
    if (!c->pool)
        replay_pool_destroy(pool);
    flight_close(&f);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGCHLD, &old_chld, NULL);
    free(done);
    double wall = weft_now_s() - pg.t0;
    if (fsync(fd) != 0 && errno != EINVAL)
        weft_error("%s: %s", runs_path, strerror(errno));
    close(fd);
    sort_runs(runs_path);
    rmdir(tmp_dir); /* empty unless a worker was killed mid-run */

    int status = hits ? 10 : WEFT_EXIT_OK;
    replay_summary s;
    char sum_path[PATH_MAX + 32], timing_path[PATH_MAX + 32];
    snprintf(sum_path, sizeof sum_path, "%s/summary.json", c->out_dir);
    snprintf(timing_path, sizeof timing_path, "%s/timing.json", c->out_dir);
    if (replay_summary_read(runs_path, &s, err, sizeof err) == 0) {
        if (replay_summary_write(&s, sum_path, err, sizeof err) ||
            /* after --resume, this invocation's wall time is not the campaign's */
            replay_timing_write(&s, timing_path, c->resume ? -1 : wall, err, sizeof err))
            weft_error("%s", err);
        if (!c->seed_given && !c->inner) {
            replay_summary_print(&s, stdout);
            printf("  files     %s, %s\n", runs_path, sum_path);
        }
        status = s.hits ? 10 : WEFT_EXIT_OK;
    } else if (finished) {
        weft_error("%s", err);
    }
    if (stop_signal) {
        printf("weft: interrupted (%s): %" PRIu64 " of %" PRIu64
               " runs finished this time; the same command with --resume runs the rest\n",
               strsignal(stop_signal), finished, ntodo);
        return 128 + stop_signal;
    }
    if (error)
        return WEFT_EXIT_FAIL;
    if (stop_hit && !c->seed_given && !c->inner)
        printf("weft: stopped at the first hit (--stop-on-hit): the hit rate above is not an "
               "estimate\n");
    return status;
}
