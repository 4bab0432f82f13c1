/* One step of weft demo: a child `weft ...` with its output in a log file,
 * progress while it runs, and its record in demo.json. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft/demo.h"
#include "weft/replay.h"

void demo_cmd_add(demo_cmd *c, const char *arg)
{
    if (c->argc < DEMO_MAX_ARGS - 1) {
        c->argv[c->argc++] = (char *)arg;
        c->argv[c->argc] = NULL;
    }
}

void demo_cmd_addf(demo_cmd *c, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0 || c->nown >= DEMO_MAX_ARGS) {
        free(n < 0 ? NULL : s);
        return;
    }
    c->own[c->nown++] = s;
    demo_cmd_add(c, s);
}

void demo_cmd_free(demo_cmd *c)
{
    for (int i = 0; i < c->nown; i++)
        free(c->own[i]);
    memset(c, 0, sizeof *c);
}

size_t demo_shell_word(char *buf, size_t len, const char *w)
{
    int plain = *w != 0;
    for (const char *p = w; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *p))
            plain = 0;
    size_t n = 0;
#define PUT(ch) (n + 1 < len ? (buf[n] = (ch), n++) : n)
    PUT(' ');
    if (plain) {
        for (const char *p = w; *p; p++)
            PUT(*p);
    } else {
        PUT('\'');
        for (const char *p = w; *p; p++) {
            if (*p == '\'') {
                PUT('\'');
                PUT('\\');
                PUT('\'');
            }
            PUT(*p);
        }
        PUT('\'');
    }
#undef PUT
    if (len)
        buf[n < len ? n : len - 1] = 0;
    return n;
}

void demo_cmd_shell(const demo_cmd *c, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "weft");
    for (int i = 1; i < c->argc && n < len; i++)
        n += demo_shell_word(buf + n, len - n, c->argv[i]);
}

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Finished runs and failing runs in a runs.jsonl, counted by line. */
static void count_runs(const char *path, uint64_t *done, uint64_t *hits)
{
    *done = *hits = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) > 0) {
        if (line[got - 1] != '\n')
            break;
        (*done)++;
        if (!strstr(line, "\"verdict\":\"pass\""))
            (*hits)++;
    }
    free(line);
    fclose(f);
}

/* What a running step shows: a campaign's runs so far, or the time. */
typedef struct step_progress {
    demo_progress kind;
    const char *runs_path;
    uint64_t total;
    double last; /* elapsed time when the last line was shown */
} step_progress;

static void show_progress(demo_ctx *ctx, step_progress *pg, double elapsed, int final)
{
    /* Quiet for short steps; a terminal gets one updating line, a log file
     * a line every 15 s. */
    if (elapsed < 2 || (!ctx->tty && !final && elapsed - pg->last < 15) || (!ctx->tty && final))
        return;
    char msg[160];
    if (pg->kind == DEMO_PROGRESS_RUNS) {
        uint64_t done, hits;
        count_runs(pg->runs_path, &done, &hits);
        snprintf(msg, sizeof msg, "%llu/%llu runs, %llu failing, %.0f s", (unsigned long long)done,
                 (unsigned long long)pg->total, (unsigned long long)hits, elapsed);
    } else {
        snprintf(msg, sizeof msg, "running, %.0f s", elapsed);
    }
    if (ctx->tty)
        fprintf(stderr, "\r\033[K   ... %s%s", msg, final ? "\n" : "");
    else
        fprintf(stderr, "   ... %s\n", msg);
    pg->last = elapsed;
}

/* Forks `weft ARGS` with stdout and stderr to fd and stdin from /dev/null;
 * returns its pid, or -1 if fork failed. */
static pid_t spawn(const demo_ctx *ctx, const demo_cmd *cmd, int fd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    int dn = open("/dev/null", O_RDONLY);
    if (dn >= 0)
        dup2(dn, 0);
    execv(ctx->self, cmd->argv);
    fprintf(stderr, "weft: cannot run %s: %s\n", ctx->self, strerror(errno));
    _exit(127);
}

/* Waits for the child, showing progress; returns its wait status. */
static int wait_child(demo_ctx *ctx, pid_t pid, step_progress *pg, double t0)
{
    int status = 0, forwarded = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            break;
        if (stop_signal == SIGTERM && !forwarded) {
            kill(pid, SIGTERM); /* ^C reaches the child from the terminal; SIGTERM only us */
            forwarded = 1;
        }
        show_progress(ctx, pg, now_s() - t0, 0);
        /* most steps take well under a second: poll often at first */
        struct timespec nap = {0, now_s() - t0 < 1 ? 10000000 : 200000000};
        nanosleep(&nap, NULL);
    }
    return status;
}

/* The signal that stopped the step, whether it reached the demo or only
 * the child. */
static void note_interrupt(demo_ctx *ctx, int status, int rc)
{
    if (stop_signal)
        ctx->interrupted = stop_signal;
    else if (rc == 128 + SIGINT || rc == 128 + SIGTERM)
        ctx->interrupted = rc - 128;
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT)
        ctx->interrupted = SIGINT;
}

int demo_step(demo_ctx *ctx, const char *name, const demo_cmd *cmd, demo_progress kind,
              const char *runs_path, uint64_t total, char *log_path, size_t log_len)
{
    char logdir[4096 + 8], shell[16384];
    snprintf(logdir, sizeof logdir, "%s/logs", ctx->dir);
    mkdir(logdir, 0777);
    ctx->nstep++;
    snprintf(log_path, log_len, "%s/%02d-%s.log", logdir, ctx->nstep, name);
    demo_cmd_shell(cmd, shell, sizeof shell);
    printf("   $ %s\n", shell);
    fflush(stdout);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        weft_error("%s: %s", log_path, strerror(errno));
        return -1;
    }
    /* The child gets ^C from the terminal itself and stops cleanly (a
     * campaign keeps its finished runs); the demo only notes it. */
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    double t0 = now_s();
    step_progress pg = {.kind = kind, .runs_path = runs_path, .total = total};
    fflush(NULL);
    pid_t pid = spawn(ctx, cmd, fd);
    if (pid < 0) {
        close(fd);
        weft_error("fork: %s", strerror(errno));
        return -1;
    }
    close(fd);
    int status = wait_child(ctx, pid, &pg, t0);
    double wall = now_s() - t0;
    show_progress(ctx, &pg, wall, 1);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    note_interrupt(ctx, status, rc);

    json_t *argv = json_array();
    for (int i = 0; i < cmd->argc; i++)
        json_array_append_new(argv, json_string(cmd->argv[i]));
    const char *rel = log_path + strlen(ctx->dir) + 1;
    json_array_append_new(ctx->steps,
                          json_pack("{s:s, s:s, s:o, s:i, s:s, s:f}", "name", name, "command",
                                    shell, "argv", argv, "status", rc, "log", rel, "wall_s", wall));
    demo_save(ctx);
    return rc;
}

void demo_print_log(const char *path, size_t max, const char *const *skip)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0, shown = 0, more = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) > 0) {
        int drop = 0;
        for (size_t i = 0; skip && skip[i]; i++)
            drop |= strncmp(line, skip[i], strlen(skip[i])) == 0;
        /* progress lines of a campaign or a search */
        drop |= strncmp(line, "weft: run ", 10) == 0 || strchr(line, '\r') != NULL;
        if (drop)
            continue;
        if (shown < max) {
            printf("   %s%s", line, line[got - 1] == '\n' ? "" : "\n");
            shown++;
        } else {
            more++;
        }
    }
    if (more)
        printf("   (%zu more lines in %s)\n", more, path);
    free(line);
    fclose(f);
}

int demo_log_find(const char *path, const char *prefix, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int found = -1;
    while ((got = getline(&line, &cap, f)) > 0) {
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            if (line[got - 1] == '\n')
                line[got - 1] = 0;
            snprintf(buf, len, "%s", line);
            found = 0;
        }
    }
    free(line);
    fclose(f);
    return found;
}

int demo_save(demo_ctx *ctx)
{
    char path[4096 + 16], err[512];
    snprintf(path, sizeof path, "%s/demo.json", ctx->dir);
    char *text = json_dumps(ctx->doc, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    if (!text)
        return -1;
    int rc = weft_write_atomic(path, text, strlen(text), err, sizeof err);
    if (rc)
        weft_error("%s", err);
    free(text);
    return rc;
}
