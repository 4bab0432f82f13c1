/* Fork servers, weft's side (the plugin's is tracer/plugin_server.c; the
 * protocol is described there, the behaviour in docs/replay.md).
 *
 * A run used to cost a whole qemu start: loading, the dynamic loader, libc's
 * initialization, the plugin's and the platform's start-up. A server pays
 * them once per job slot: it runs the program to its first thread creation
 * and forks a child per seed. The campaign's parent starts the servers and
 * restarts those that fail; a worker sends its seed to its slot's server,
 * enforces the time limit on the child's process group, and then settles
 * and classifies the run exactly as for a qemu of its own. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft/replay.h"

/* Restarts after which a pool gives up and runs a qemu per seed. */
#define POOL_MAX_FAILURES 3
/* A fork takes about a millisecond: a server that has not answered with
 * the child's pid after this long is wedged. */
#define SERVER_ANSWER_S 30.0

struct replay_server {
    pid_t pid;       /* 0: none running */
    int req, resp;   /* weft's ends of the two pipes */
    char *out, *err; /* what the program wrote to stdout and stderr before its first thread */
    size_t nout, nerr;
    char buf[512]; /* answer bytes read but not consumed */
    size_t len;
    pid_t weft;              /* the campaign's process, which started the server */
    int lost;                /* set in a worker: restart this server */
    volatile int *free_flag; /* a worker's: where to say that the server is free */
    int free_fd;
};

struct replay_pool {
    unsigned n;
    replay_server *slot;
    int off, quiet;
    unsigned failures;
    char key[PATH_MAX + 64]; /* the points the servers run with */
};

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static void say_off(replay_pool *p, const replay_config *c, const char *why)
{
    p->off = 1;
    if (!p->quiet)
        printf("weft: %s %s: one qemu per run\n", base_name(c->run.binary), why);
    fflush(stdout);
}

/* Why stdin rules a server out, or NULL. A child reads what the server's
 * fd 0 refers to: a regular file is reopened by each child at the offset it
 * had at the fork; a character device (/dev/null, a terminal, which a
 * background process group cannot read anyway, a qemu of its own being one
 * too) has no offset to share; a pipe's or a socket's data would go to
 * whichever child reads first, the prefix's reads made once for all. */
const char *replay_stdin_shared(void)
{
    struct stat st;
    if (fstat(0, &st) != 0 || S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))
        return NULL;
    /* The way out is the user's: weft cannot tell whether the program reads
     * stdin, nor wait for a pipe's end that may never come. */
    if (S_ISFIFO(st.st_mode))
        return "has a pipe as stdin, which every run shares: the first to read takes what it "
               "holds, the others what is left (give the input as a file, <FILE, for every run "
               "to read it all, or </dev/null; either lets a fork server serve)";
    if (S_ISSOCK(st.st_mode))
        return "has a socket as stdin, which every run shares: the first to read takes what it "
               "holds, the others what is left (give the input as a file, <FILE, for every run "
               "to read it all, or </dev/null; either lets a fork server serve)";
    return "has neither a file nor a device as stdin, which every run shares (give the input "
           "as a file, <FILE, for every run to read it all, or </dev/null; either lets a fork "
           "server serve)";
}

replay_pool *replay_pool_create(const replay_config *c)
{
    replay_pool *p = calloc(1, sizeof *p);
    unsigned n = c->jobs ? c->jobs : 1;
    if (!p || !(p->slot = calloc(n, sizeof *p->slot))) {
        free(p);
        return NULL;
    }
    p->n = n;
    p->quiet = c->quiet;
    const char *why = replay_stdin_shared();
    if (c->no_fork_server || c->seed_given)
        p->off = 1; /* asked for, or one run: nothing to share */
    else if (c->host_parallel)
        say_off(p, c, "with --host-parallel (a token per thread, which no child takes over)");
    else if (c->kind == PCT_KIND_SCRIPT)
        say_off(p, c, "with --schedule (the script is read as the program starts)");
    else if (why)
        say_off(p, c, why);
    return p;
}

static void server_stop(replay_server *s)
{
    if (s->pid > 0) {
        kill(-s->pid, SIGKILL);
        kill(s->pid, SIGKILL);
        while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (s->pid) {
        close(s->req);
        close(s->resp);
    }
    free(s->out);
    free(s->err);
    *s = (replay_server){0};
}

void replay_pool_destroy(replay_pool *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->n; i++)
        server_stop(&p->slot[i]);
    free(p->slot);
    free(p);
}

void replay_pool_lost(replay_pool *p, unsigned slot)
{
    if (!p || slot >= p->n || !p->slot[slot].pid)
        return;
    server_stop(&p->slot[slot]);
    if (++p->failures == POOL_MAX_FAILURES && !p->off) {
        p->off = 1;
        if (!p->quiet)
            printf("weft: the fork server failed %u times: one qemu per run from here on\n",
                   p->failures);
    }
}

void replay_pool_reaped(replay_pool *p, pid_t pid)
{
    for (unsigned i = 0; p && i < p->n; i++)
        if (p->slot[i].pid == pid)
            p->slot[i].pid = -1; /* gone: server_stop only closes its pipes */
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { LINE_OK = 0, LINE_EOF = -1, LINE_LATE = -2, LINE_STOPPED = -3 };

/* The server's next answer line (newline dropped) by `deadline`; *stop
 * (if given) ends the wait. */
static int read_answer(replay_server *s, char *line, size_t len, double deadline,
                       volatile sig_atomic_t *stop)
{
    for (;;) {
        char *nl = memchr(s->buf, '\n', s->len);
        if (nl) {
            size_t l = (size_t)(nl - s->buf);
            snprintf(line, len, "%.*s", (int)l, s->buf);
            memmove(s->buf, nl + 1, s->len - l - 1);
            s->len -= l + 1;
            return LINE_OK;
        }
        if (s->len == sizeof s->buf)
            return LINE_EOF; /* no line this long is ever sent */
        if (stop && *stop)
            return LINE_STOPPED;
        double left = deadline - now_s();
        if (left <= 0)
            return LINE_LATE;
        struct pollfd pf = {.fd = s->resp, .events = POLLIN};
        /* Short waits: a signal between the check above and poll is seen soon. */
        int ms = left > 0.1 ? 100 : (int)(left * 1000) + 1;
        if (poll(&pf, 1, ms) <= 0)
            continue;
        ssize_t n = read(s->resp, s->buf + s->len, sizeof s->buf - s->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return LINE_EOF;
        s->len += (size_t)n;
    }
}

/* The whole file, or NULL with *n = 0. */
static char *slurp(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0;
    for (;;) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 4096;
            char *b = realloc(buf, cap);
            if (!b)
                break;
            buf = b;
        }
        size_t got = fread(buf + *n, 1, cap - *n, f);
        if (got == 0)
            break;
        *n += got;
    }
    fclose(f);
    return buf;
}

/* The fds the plugin finds its pipes at: high, so that the guest's own
 * files get the numbers they get in a qemu of their own. */
static int server_fd(int which)
{
    return guest_fd_top() - 2 + which;
}

static int start_failed(char *why, size_t whylen)
{
    snprintf(why, whylen, "could not get a fork server started (%s)", strerror(errno));
    return 1;
}

/* The server's qemu, its request and answer pipes at server_fd's numbers.
 * 0 with *s set; 1 it could not be started (why says so). */
static int server_spawn(replay_server *s, const replay_config *c, const char *args, const char *out,
                        const char *err, char *why, size_t whylen)
{
    int req[2], resp[2];
    if (pipe2(req, O_CLOEXEC))
        return start_failed(why, whylen);
    if (pipe2(resp, O_CLOEXEC)) {
        close(req[0]);
        close(req[1]);
        return start_failed(why, whylen);
    }
    guest_run run = c->run;
    run.plugin_args = args;
    run.capture_out = out;
    run.capture_err = err;
    guest_fd fds[3] = {{req[0], server_fd(0)}, {resp[1], server_fd(1)}, {guest_stdin_copy(), 0}};
    pid_t pid;
    int rc = guest_spawn_qemu(&run, fds, fds[2].from >= 0 ? 3 : 2, &pid);
    close(req[0]);
    close(resp[1]);
    if (fds[2].from >= 0)
        close(fds[2].from);
    if (rc) {
        close(req[1]);
        close(resp[0]);
        snprintf(why, whylen, "could not get a fork server started");
        return 1;
    }
    *s = (replay_server){.pid = pid, .req = req[1], .resp = resp[0], .weft = getpid()};
    return 0;
}

/* Why a server that did not answer "ready" cannot serve (rc: how its first
 * answer ended); a server that died says its last line of stderr. */
static void why_not_ready(int rc, const char *line, const char *err, unsigned timeout, char *why,
                          size_t whylen)
{
    if (rc == LINE_OK && !strncmp(line, "decline ", 8)) {
        snprintf(why, whylen, "%s", line + 8);
    } else if (rc == LINE_LATE) {
        snprintf(why, whylen, "does not reach its first thread within --timeout %u s", timeout);
    } else if (rc == LINE_EOF) {
        size_t n;
        char *msg = slurp(err, &n);
        while (msg && n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
            n--;
        size_t from = n;
        while (msg && from && msg[from - 1] != '\n')
            from--;
        snprintf(why, whylen, "ends before its first thread under a fork server (%.*s)",
                 msg && n > from ? (int)(n - from) : 11,
                 msg && n > from ? msg + from : "no message");
        free(msg);
    } else {
        snprintf(why, whylen, "was interrupted");
    }
}

/* Start slot's server and wait until it is ready. 0; 1 it cannot serve
 * (why says so); -1 interrupted. */
static int server_start(replay_server *s, const replay_config *c, unsigned slot,
                        volatile sig_atomic_t *stop, char *why, size_t whylen)
{
    char out[PATH_MAX + 64], err[PATH_MAX + 64], args[PATH_MAX * 4];
    snprintf(out, sizeof out, "%s/tmp/server-%u.stdout", c->out_dir, slot);
    snprintf(err, sizeof err, "%s/tmp/server-%u.stderr", c->out_dir, slot);
    if (replay_plugin_args(c, 0, args, sizeof args) || replay_run_args(c, args, sizeof args)) {
        snprintf(why, whylen, "has plugin arguments too long for a server");
        return 1;
    }
    size_t al = strlen(args);
    snprintf(args + al, sizeof args - al, ",server=%d:%d", server_fd(0), server_fd(1));
    if (server_spawn(s, c, args, out, err, why, whylen))
        return 1;
    char line[512];
    int rc = read_answer(s, line, sizeof line, now_s() + c->timeout, stop);
    if (rc == LINE_OK && !strncmp(line, "ready ", 6)) {
        /* What the program wrote before its first thread: each child's
         * files start with it, as a run of its own would. */
        s->out = slurp(out, &s->nout);
        s->err = slurp(err, &s->nerr);
        unlink(out);
        unlink(err);
        return 0;
    }
    why_not_ready(rc, line, err, c->timeout, why, whylen);
    server_stop(s);
    unlink(out);
    unlink(err);
    return rc == LINE_STOPPED ? -1 : 1;
}

replay_server *replay_pool_server(replay_pool *p, const replay_config *c, unsigned slot,
                                  volatile sig_atomic_t *stop)
{
    if (!p || p->off || slot >= p->n)
        return NULL;
    /* The servers' prefix depends on the points (what is gated), nothing
     * else of the policy: the portfolio's campaigns share them. */
    char key[sizeof p->key];
    snprintf(key, sizeof key, "%s%s:%s", replay_points_name(c->points),
             c->race_points ? "+races" : "", c->pcs_path);
    if (strcmp(key, p->key)) {
        for (unsigned i = 0; i < p->n; i++)
            server_stop(&p->slot[i]);
        snprintf(p->key, sizeof p->key, "%s", key);
    }
    replay_server *s = &p->slot[slot];
    if (s->pid < 0)
        server_stop(s); /* reaped: close what is left */
    if (s->pid)
        return s;
    char why[1024];
    int rc = server_start(s, c, slot, stop, why, sizeof why);
    if (rc > 0)
        say_off(p, c, why);
    return rc == 0 ? s : NULL;
}

int replay_server_lost(const replay_server *s)
{
    return s && s->lost;
}

void replay_server_when_free(replay_server *s, volatile int *flag, int wake_fd)
{
    if (s) {
        s->free_flag = flag;
        s->free_fd = wake_fd;
    }
}

/* The server has answered: the next seed may go to it now. */
static void say_free(replay_server *s)
{
    if (!s->free_flag)
        return;
    __atomic_store_n(s->free_flag, 1, __ATOMIC_RELEASE);
    if (write(s->free_fd, "", 1) < 0) {
        /* a full pipe: the campaign has wake-ups pending anyway */
    }
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    interrupted = sig;
}

static int write_file(const char *path, const char *buf, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    if (weft_write_all(fd, buf, n)) {
        close(fd);
        return -1;
    }
    return close(fd);
}

/* The child's end: its wait status, after killing its process group when
 * the time limit passes or SIGINT/SIGTERM comes. 0; 1 if the server did not
 * say how a run that had not ended ended (the server is lost then). */
static int await_child(replay_server *s, pid_t pid, double t0, unsigned timeout, guest_result *r)
{
    char line[512];
    r->end = GUEST_EXITED;
    int rc = read_answer(s, line, sizeof line, t0 + timeout, &interrupted);
    if (rc == LINE_LATE || rc == LINE_STOPPED) {
        r->end = rc == LINE_STOPPED ? GUEST_INTERRUPTED : GUEST_TIMED_OUT;
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        /* The server reaps it at once and answers: then it can go on. */
        rc = read_answer(s, line, sizeof line, now_s() + 5, NULL);
    }
    r->wall_s = now_s() - t0;
    int status;
    if (rc != LINE_OK || sscanf(line, "status %d", &status) != 1) {
        /* The server died (its children with it) or is wedged: a run that
         * had not ended has no outcome, and is run again by a qemu of its own. */
        s->lost = 1;
        r->status = SIGKILL;
        return r->end == GUEST_EXITED ? 1 : 0;
    }
    say_free(s);
    if (r->end != GUEST_EXITED)
        r->status = interrupted ? interrupted : SIGKILL;
    else if (WIFSIGNALED(status))
        r->end = GUEST_SIGNALED, r->status = WTERMSIG(status);
    else
        r->status = WEXITSTATUS(status);
    return 0;
}

int replay_server_run(replay_server *s, const replay_config *c, uint64_t seed,
                      const replay_run_files *files, guest_result *r, uint32_t *flags)
{
    const char *trace = files->trace, *record = files->record, *out = files->out, *err = files->err;
    char policy[1024], spool[PATH_MAX + 80];
    /* The child appends to what the prefix wrote, as a fresh run has it. */
    if (write_file(out, s->out, s->nout) || write_file(err, s->err, s->nerr)) {
        weft_error("%s: %s", out, strerror(errno));
        return -2;
    }
    snprintf(spool, sizeof spool, "%s.spool", trace);
    unlink(spool); /* a stale spool would be salvaged as this run's */
    if (replay_policy_args(c, seed, policy, sizeof policy)) {
        weft_error("plugin arguments too long");
        return -2;
    }
    size_t tlen = strlen(policy) + strlen(trace) + strlen(record) + strlen(files->switches) +
                  strlen(out) + strlen(err) + 96;
    char *text = malloc(tlen);
    if (!text) {
        weft_error("out of memory");
        return -2;
    }
    snprintf(text, tlen, "run %s\nout %s\nrecord %s\nswitchlog %s\nstdout %s\nstderr %s\n\n",
             policy, trace, record, files->switches, out, err);
    struct sigaction sa = {0}, old_int, old_term, old_pipe;
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = SIG_IGN; /* a dead server is an answer, not a reason to die */
    sigaction(SIGPIPE, &sa, &old_pipe);
    double t0 = now_s();
    char line[512] = "";
    int pid = 0, rc = 1;
    if (weft_write_all(s->req, text, strlen(text)) == 0 &&
        read_answer(s, line, sizeof line, t0 + SERVER_ANSWER_S, &interrupted) == LINE_OK &&
        sscanf(line, "pid %d", &pid) == 1 && pid > 0) {
        r->pid = pid;
        rc = await_child(s, pid, t0, c->timeout, r);
    } else {
        if (!strncmp(line, "error ", 6))
            weft_error("seed %" PRIu64 ": the fork server refused it: %s", seed, line + 6);
        s->lost = 1;
        if (interrupted)
            r->end = GUEST_INTERRUPTED, rc = 0;
    }
    free(text);
    /* A server that died with weft: nobody is left to record a run. */
    if (rc == 1 && getppid() != s->weft)
        r->end = GUEST_INTERRUPTED, rc = 0;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    if (rc == 0 && r->end == GUEST_INTERRUPTED) {
        /* Nothing of the run is kept: not even the child's unfinished files. */
        char tmp[PATH_MAX + 80];
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", trace, pid);
        unlink(spool);
        unlink(tmp);
    }
    if (rc != 0 || r->end == GUEST_INTERRUPTED)
        return rc;
    return guest_trace_settle(trace, r, flags);
}
