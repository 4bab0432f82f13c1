/* A fork server for replay campaigns, the plugin's side (docs/replay.md,
 * "The fork server"; weft's side is replay/server.c).
 *
 * weft starts qemu with server=RFD:WFD (two inherited pipe ends) instead of
 * a seed. The program runs under a policy to its first thread creation:
 * with one thread every decision is that thread, so this prefix is the same
 * for every seed and runs once. Its events stay in memory, the policy's
 * calls in the platform's journal. At the entry of the first clone of a
 * thread the server says "ready" and serves requests: each gives a seed's
 * policy parameters and its files. The server forks; the child takes over
 * (a fresh policy of that seed, caught up with the journal; its own trace
 * starting with the prefix's events; its own stdout and stderr, which weft
 * filled with what the prefix wrote) and returns from the callback to run
 * the clone and the rest of the program as a fresh qemu would. The server
 * answers the child's pid, waits for it and answers its wait status.
 *
 * Why here: qemu's own fork (fork_start/fork_end in linux-user/main.c)
 * takes the exclusive section, the mmap lock, the CPU list and the plugin
 * lock so that no other vCPU holds them across fork(). At the first clone
 * there is no other vCPU and a syscall callback holds none of them; qemu's
 * RCU thread is re-created in the child by its pthread_atfork handler, and
 * weft's own thread (the watchdog) does not run in a server: each child
 * starts its own.
 *
 * The child is forked ahead of its request (a spare, waiting on a pipe of
 * its own), so that the fork is paid while weft judges the last run.
 *
 * Protocol, one line each: the server says "ready N" (N events kept) or
 * "decline REASON" once; weft sends "run KEY=VAL,...", "out PATH",
 * "record PATH", optionally "switchlog PATH", "stdout PATH", "stderr PATH"
 * and an empty line; the server
 * answers "pid P" then "status W" (waitpid's), or "error MESSAGE". weft
 * closing its end ends the server. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sched.h>

#include "plugin_replay.h"

/* A prefix that records more than this is not kept in memory: no server. */
#define SERVER_MAX_PREFIX_EVENTS 1000000u
/* Policy calls journaled in the prefix (24 bytes each). */
#define SERVER_MAX_POLICY_CALLS 1000000u

enum {
    NR_EXIT = 93,
    NR_EXIT_GROUP = 94,
    NR_CLONE = 220,
    NR_EXECVE = 221,
    NR_EXECVEAT = 281,
    NR_GETPID = 172,
    NR_GETTID = 178,
    NR_TKILL = 130,
    NR_SETITIMER = 103,
    NR_TIMER_CREATE = 107,
};

/* Descriptors a child cannot make its own again, as it does files and pipes
 * (plugin_server_fds.c): a socket, eventfd, ... made before the first thread
 * would be every child's at once (one child's writes read by another). */
static const char *shared_object(int64_t num)
{
    switch (num) {
    case 19:
        return "an eventfd";
    case 20:
        return "an epoll instance";
    case 26:
        return "an inotify instance";
    case 74:
        return "a signalfd";
    case 85:
        return "a timerfd";

    case 198:
        return "a socket";
    case 199:
        return "a socket pair";
    case 241:
        return "a perf event";
    case 262:
        return "a fanotify instance";
    case 279:
        return "a memfd";
    case 282:
        return "a userfaultfd";
    case 425:
        return "an io_uring";
    case 434:
        return "a pidfd";
    default:
        return NULL;
    }
}

int server_parse_arg(const char *key, const char *val)
{
    server_state *s = &g_plugin.server;
    if (strcmp(key, "server"))
        return 0;
    char end;
    if (sscanf(val, "%d:%d%c", &s->rfd, &s->wfd, &end) != 2 || s->rfd < 0 || s->wfd < 0)
        return -1;
    s->on = 1;
    s->in_prefix = 1;
    return 1;
}

int server_setup(char *err, size_t errlen)
{
    server_state *s = &g_plugin.server;
    if (!g_plugin.sched.policy || g_plugin.sched.ppct_host_parallel || g_plugin.cfg.inject ||
        g_plugin.spec.on) {
        snprintf(err, errlen, "server=: only for a replay (sched=, without hostpar or inject)");
        return -1;
    }
    weft_platform_journal_policy(g_plugin.platform, SERVER_MAX_POLICY_CALLS);
    sched_serve();
    /* The trace's spool takes this fd number in a fresh run; the guest's
     * own files keep theirs if the children's spools take it too. */
    s->placeholder_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return 0;
}

/* One line to weft; a server that cannot talk to weft has nothing to do. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        _exit(0);
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (weft_write_all(g_plugin.server.wfd, line, (size_t)n))
        _exit(0);
}

static void decline(const char *why)
{
    say("decline %s", why);
    _exit(0);
}

void server_keep(const weft_event *ev, size_t n)
{
    server_state *s = &g_plugin.server;
    if (s->nprefix + n > SERVER_MAX_PREFIX_EVENTS)
        decline("records more than 1000000 events before its first thread");
    if (s->nprefix + n > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 65536;
        while (cap < s->nprefix + n)
            cap *= 2;
        weft_event *p = realloc(s->prefix, cap * sizeof *p);
        if (!p)
            decline("out of memory for the events before its first thread");
        s->prefix = p;
        s->cap = cap;
    }
    if (s->npieces == s->pieces_cap) {
        size_t cap = s->pieces_cap ? 2 * s->pieces_cap : 64;
        uint32_t *p = realloc(s->pieces, cap * sizeof *p);
        if (!p)
            decline("out of memory for the events before its first thread");
        s->pieces = p;
        s->pieces_cap = cap;
    }
    s->pieces[s->npieces++] = (uint32_t)n;
    memcpy(s->prefix + s->nprefix, ev, n * sizeof *ev);
    s->nprefix += n;
}

typedef struct request {
    char *policy, *out, *record, *stdout_path, *stderr_path;
    char *switchlog; /* optional */
} request;

#define REQUEST_MAX (4 * 4096 + 64)

/* A request's text (its lines and the empty one) from fd into buf: its
 * length, or -1 at the end (end of file, error, too long). weft sends one
 * request at a time and waits for its status, so nothing follows it. */
static ssize_t read_text(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    char *end;
    buf[0] = 0;
    while (!(end = strstr(buf, "\n\n"))) {
        if (len >= cap - 1)
            return -1;
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = 0;
    }
    end[2] = 0;
    return end + 2 - buf;
}

/* Split a request's text in place. 0, or -1 if it is not one. */
static int parse_request(char *buf, request *rq)
{
    *rq = (request){0};
    for (char *line = buf, *nl; (nl = strchr(line, '\n')) && nl != line; line = nl + 1) {
        *nl = 0;
        char *sp = strchr(line, ' ');
        if (!sp)
            return -1;
        *sp = 0;
        char *val = sp + 1;
        if (!strcmp(line, "run"))
            rq->policy = val;
        else if (!strcmp(line, "out"))
            rq->out = val;
        else if (!strcmp(line, "record"))
            rq->record = val;
        else if (!strcmp(line, "stdout"))
            rq->stdout_path = val;
        else if (!strcmp(line, "stderr"))
            rq->stderr_path = val;
        else if (!strcmp(line, "switchlog"))
            rq->switchlog = val;
        else
            return -1;
    }
    return rq->policy && rq->out && rq->record && rq->stdout_path && rq->stderr_path ? 0 : -1;
}

/* The request's policy, created, and with `catch_up` brought to the state
 * it would have at this point of a fresh run (the server's check of a
 * request; a child catches up as it adopts it). 0, or -1 + err (the server
 * answers it). */
static int prepare_policy(char *args, int catch_up, pct_config *cfg, pct_policy **policy, char *err,
                          size_t errlen)
{
    pct_config_init(cfg, PCT_KIND_PCT);
    for (char *kv = strtok(args, ","); kv; kv = strtok(NULL, ",")) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            snprintf(err, errlen, "bad policy argument '%s'", kv);
            return -1;
        }
        *eq = 0;
        if (sched_parse_policy_arg(cfg, kv, eq + 1) != 1) {
            snprintf(err, errlen, "bad policy argument '%s=%s'", kv, eq + 1);
            return -1;
        }
    }
    *policy = pct_policy_create(cfg, err, errlen);
    if (!*policy)
        return -1;
    if (catch_up && weft_platform_policy_catch_up(g_plugin.platform, *policy, NULL, err, errlen)) {
        pct_policy_destroy(*policy);
        return -1;
    }
    return 0;
}

/* The guest's stream `fd` goes to `path`, after what weft put there (what
 * the prefix wrote to it). */
static void take_stream(int fd, const char *path)
{
    int f = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (f < 0 || lseek(f, 0, SEEK_END) < 0 || dup2(f, fd) < 0) {
        fprintf(stderr, "weft-tracer: %s: %s\n", path, strerror(errno));
        _exit(1);
    }
    close(f);
}

/* In the child: become the run of one seed. Returns to run the clone. */
static void become_child(const request *rq, const pct_config *cfg, pct_policy *policy,
                         const sigset_t *mask)
{
    server_state *s = &g_plugin.server;
    sigprocmask(SIG_SETMASK, mask, NULL);
    server_take_fds();
    take_stream(1, rq->stdout_path);
    take_stream(2, rq->stderr_path);
    server_take_stream_copies();
    /* The copy kept for a guest that closes fd 2 is this run's stderr now,
     * not the server's (which weft reads once and removes). */
    if (g_plugin.stderr_copy >= 0)
        dup2(STDERR_FILENO, g_plugin.stderr_copy);
    char err[512];
    if (sched_adopt(cfg, policy, rq->record, rq->switchlog, err, sizeof err)) {
        fprintf(stderr, "weft-tracer: %s\n", err);
        _exit(1);
    }
    g_plugin.cfg.out = rq->out;
    if (s->placeholder_fd >= 0)
        close(s->placeholder_fd);
    if (plugin_open_writer(err, sizeof err)) {
        fprintf(stderr, "weft-tracer: %s\n", err);
        _exit(1);
    }
    plugin_buf_rejoin();
    size_t at = 0;
    for (size_t i = 0; i < s->npieces; at += s->pieces[i++])
        if (weft_trace_writer_append(g_plugin.writer, 0, s->prefix + at, s->pieces[i]) != 0) {
            atomic_fetch_add(&g_plugin.write_errors, 1);
            break;
        }
    free(s->prefix);
    free(s->pieces);
    s->prefix = NULL;
    s->pieces = NULL;
    s->nprefix = s->cap = s->npieces = s->pieces_cap = 0;
    plugin_start_watchdog();
}

/* A child forked before its request arrives, so that the fork's cost is
 * paid while weft judges the last run: it waits on a pipe of its own. */
typedef struct spare {
    pid_t pid; /* 0: none */
    int fd;    /* the server's end of its pipe */
} spare;

/* Fork the spare. 1 in the child (which is then ready to wait), 0 in the
 * server (sp->pid 0 if the fork failed). */
static int fork_spare(spare *sp, pid_t server)
{
    int p[2];
    *sp = (spare){0};
    if (pipe2(p, O_CLOEXEC))
        return 0;
    atomic_store(&g_plugin.server.forking, 1);
    pid_t pid = fork();
    atomic_store(&g_plugin.server.forking, 0);
    if (pid == 0) {
        server_state *s = &g_plugin.server;
        g_plugin.owner_pid = getpid();
        s->in_prefix = 0;
        s->child = 1;
        g_plugin.translated = 0;
        /* Its own process group, for weft's kill at the time limit; gone
         * with the server. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != server)
            _exit(1);
        close(s->rfd);
        close(s->wfd);
        close(p[1]);
        s->rfd = p[0];
        return 1;
    }
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return 0;
    }
    setpgid(pid, pid);
    *sp = (spare){.pid = pid, .fd = p[1]};
    return 0;
}

/* The spare's life once its request comes (the server checked it): the
 * policy, then the run. Returns to run the clone. */
static void spare_run(const sigset_t *mask)
{
    static char text[REQUEST_MAX];
    request rq;
    pct_config cfg;
    pct_policy *policy;
    char err[512];
    /* Nothing comes when the server ends without a run for it. */
    if (read_text(g_plugin.server.rfd, text, sizeof text) < 0)
        _exit(0);
    close(g_plugin.server.rfd);
    if (parse_request(text, &rq) || prepare_policy(rq.policy, 0, &cfg, &policy, err, sizeof err)) {
        fprintf(stderr, "weft-tracer: fork server: %s\n", err);
        _exit(1);
    }
    become_child(&rq, &cfg, policy, mask);
}

/* The server's loop: a child per request. Returns only in a child. */
static void serve(vcpu_state *v)
{
    server_state *s = &g_plugin.server;
    if (weft_platform_thread_count(g_plugin.platform) != 1)
        decline("has more than one thread at its first clone");
    if (weft_platform_journal_overflowed(g_plugin.platform))
        decline("makes more than 1000000 policy calls before its first thread");
    const char *shared = server_note_fds(s->rfd, s->wfd);
    if (shared)
        decline(shared);
    /* A child's exit must not become a guest signal pending in the next
     * child, nor a vanished weft a SIGPIPE for the guest: both stay blocked
     * here, and each child gets the guest's mask back. */
    sigset_t block, mask;
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigaddset(&block, SIGPIPE);
    sigprocmask(SIG_BLOCK, &block, &mask);
    pid_t self = getpid();
    say("ready %zu", s->nprefix + v->nbuf);
    spare sp = {0};
    for (;;) {
        if (!sp.pid && fork_spare(&sp, self)) {
            /* The thread that forked is the child's main thread, with the
             * child's pid for its tid: a fault is looked up by it. */
            v->tid = gettid();
            s->stale_tid = self;
            s->main_tid = v->tid;
            spare_run(&mask);
            return;
        }
        static char text[REQUEST_MAX], copy[REQUEST_MAX];
        ssize_t n = read_text(s->rfd, text, sizeof text);
        if (n < 0)
            _exit(0); /* weft is done with this server: the spare ends with it */
        /* Checked here, so that a bad request is answered, not run. */
        memcpy(copy, text, (size_t)n + 1);
        request rq;
        pct_config cfg;
        pct_policy *policy;
        char err[512] = "bad request";
        if (parse_request(copy, &rq) ||
            prepare_policy(rq.policy, 1, &cfg, &policy, err, sizeof err)) {
            say("error %s", err);
            continue;
        }
        pct_policy_destroy(policy);
        pid_t pid = sp.pid;
        int fed = pid && weft_write_all(sp.fd, text, (size_t)n) == 0;
        if (sp.pid)
            close(sp.fd);
        sp.pid = 0;
        if (!fed) {
            say("error no child to run it: %s", strerror(errno));
            if (pid > 0 && kill(pid, SIGKILL) == 0)
                waitpid(pid, NULL, 0);
            continue;
        }
        say("pid %d", (int)pid);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        say("status %d", status);
        pretranslate_absorb(); /* before the next spare's fork */
    }
}

/* glibc keeps each thread's tid in its descriptor, the main thread's from
 * start-up: in a child it is the server's, and a worker's pthread_kill of
 * the main thread (tgkill(pid, that tid)) found no such thread here (ESRCH),
 * the signal was lost, and every run of a program that wakes its main
 * thread so hung to --timeout. weft sends the signal to the child's main
 * thread itself; the guest's own call still fails (ESRCH), which
 * pthread_kill's callers rarely look at. Classic signals only: qemu keeps
 * the real-time ones' numbers for itself. */
void server_redirect_kill(int64_t num, const uint64_t args[6])
{
    server_state *s = &g_plugin.server;
    uint64_t tid = num == NR_TKILL ? args[0] : args[1];
    int64_t sig = (int64_t)(num == NR_TKILL ? args[1] : args[2]);
    if (!s->child || !s->stale_tid || tid != (uint64_t)s->stale_tid || sig <= 0 || sig >= 32)
        return;
    syscall(SYS_tgkill, (long)getpid(), (long)s->main_tid, (long)sig);
}

void server_at_syscall(vcpu_state *v, int64_t num, uint64_t a1)
{
    switch (num) {
    case NR_CLONE:
        if (a1 & CLONE_THREAD) {
            plugin_note_objects(); /* once, for every child */
            serve(v);
        } else
            decline("forks before its first thread (the child would be every run's)");
        break;
    case NR_EXECVE:
    case NR_EXECVEAT:
        decline("runs another program before its first thread");
        break;
    case NR_EXIT:
    case NR_EXIT_GROUP:
        decline("exits before creating a thread (every run is the same)");
        break;
    case NR_SETITIMER:
    case NR_TIMER_CREATE:
        /* A forked child inherits no timer: a program waiting for its
         * SIGALRM timed out in every run. */
        decline("arms a timer before its first thread (a child would not inherit it)");
        break;
    case NR_GETPID:
    case NR_GETTID:
        /* lbzip2 keeps its pid and its workers signal the main thread with
         * kill(pid, SIGUSR2): in a child that went to the server, and every
         * run hung to its timeout. */
        decline("asks for its process id before its first thread (a child's is another)");
        break;
    default: {
        const char *what = shared_object(num);
        char why[128];
        if (what) {
            snprintf(why, sizeof why, "makes %s before its first thread (every run would share it)",
                     what);
            decline(why);
        }
        break;
    }
    }
}
