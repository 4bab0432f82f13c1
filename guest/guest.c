/* Starting qemu-aarch64 on a guest: input checks, time limit, signals. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft/guest.h"
#include "weft/trace.h"

#ifndef WEFT_QEMU
#define WEFT_QEMU "qemu-aarch64"
#endif

/* A root holding the loader interp, for a dynamic binary given none. */
static const char *default_sysroot(const char *interp)
{
    const char *env = getenv("QEMU_LD_PREFIX");
    const char *roots[] = {env && *env ? env : NULL, "/usr/aarch64-linux-gnu"};
    for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
        char path[PATH_MAX * 2];
        if (!roots[i])
            continue;
        snprintf(path, sizeof path, "%s/%s", roots[i], interp);
        if (access(path, R_OK) == 0)
            return roots[i];
    }
    return NULL;
}

int guest_check_binary(const char *binary, const char **sysroot)
{
    int fd = open(binary, O_RDONLY);
    if (fd < 0) {
        weft_error("%s: %s", binary, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        weft_error("%s: is a directory, not a program", binary);
        return -1;
    }
    Elf64_Ehdr eh;
    ssize_t n = read(fd, &eh, sizeof eh);
    if (n < (ssize_t)EI_NIDENT || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
        close(fd);
        weft_error("%s: not an ELF executable", binary);
        return -1;
    }
    if (n < (ssize_t)sizeof eh || eh.e_ident[EI_CLASS] != ELFCLASS64) {
        close(fd);
        weft_error("%s: 32-bit ELF, weft runs 64-bit AArch64 programs", binary);
        return -1;
    }
    if (eh.e_machine != EM_AARCH64) {
        close(fd);
        weft_error("%s: ELF for %s, weft runs AArch64 programs", binary,
                   weft_elf_machine_name(eh.e_machine));
        return -1;
    }
    if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
        close(fd);
        weft_error("%s: not an executable (ELF type %u)", binary, eh.e_type);
        return -1;
    }
    /* A dynamic binary names its loader in PT_INTERP: qemu needs it under -L. */
    char interp[PATH_MAX] = "";
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
            (ssize_t)sizeof ph)
            break;
        if (ph.p_type == PT_INTERP && ph.p_filesz < sizeof interp) {
            if (pread(fd, interp, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
                interp[0] = 0;
            interp[ph.p_filesz] = 0;
        }
    }
    close(fd);
    if (interp[0]) {
        if (!*sysroot && (*sysroot = default_sysroot(interp)))
            fprintf(stderr,
                    "weft: %s is dynamically linked: its libraries from %s (--sysroot DIR for "
                    "another root)\n",
                    binary, *sysroot);
        if (!*sysroot) {
            weft_error("%s: dynamically linked (needs %s): pass --sysroot DIR holding an AArch64 "
                       "root filesystem (none given, and neither $QEMU_LD_PREFIX nor "
                       "/usr/aarch64-linux-gnu holds it)",
                       binary, interp);
            return -1;
        }
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", *sysroot, interp);
        if (access(path, R_OK) != 0) {
            weft_error("%s: its loader %s is not in the sysroot %s", binary, interp, *sysroot);
            return -1;
        }
    }
    return 0;
}

const char *guest_qemu_path(void)
{
    const char *q = getenv("WEFT_QEMU");
    return q && *q ? q : WEFT_QEMU;
}

const char *guest_self_dir(void)
{
    static char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return NULL;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash)
        return NULL;
    *slash = 0;
    return self;
}

const char *guest_installed_path(const char *relative)
{
    static char path[PATH_MAX + 256], real[PATH_MAX];
    const char *dir = guest_self_dir();
    if (!dir)
        return NULL;
    snprintf(path, sizeof path, "%s/%s", dir, relative);
    if (access(path, R_OK) != 0)
        return NULL;
    return realpath(path, real) ? real : path; /* without the "bin/.." of the lookup */
}

#define PLUGIN_NAME "libweft-tracer.so"

const char *guest_plugin_path(void)
{
    const char *env = getenv("WEFT_PLUGIN");
    if (env && *env)
        return env;
    const char *p = guest_installed_path("../tracer/" PLUGIN_NAME);
    if (!p)
        p = guest_installed_path("../" WEFT_PKGLIBDIR "/" PLUGIN_NAME);
    if (!p) {
        const char *dir = guest_self_dir();
        weft_error("cannot find the tracer plugin " PLUGIN_NAME " in %s/../" WEFT_PKGLIBDIR
                   " (installed) or %s/../tracer (build tree): reinstall weft or set WEFT_PLUGIN",
                   dir ? dir : "?", dir ? dir : "?");
    }
    return p;
}

static volatile sig_atomic_t interrupted;
/* A stop that came while another handler was in place (the caller's, between
 * two runs): never cleared, since weft starts no run after one. */
static volatile sig_atomic_t interrupt_noted;

static void on_signal(int sig)
{
    interrupted = sig;
}

void guest_note_interrupt(int sig)
{
    if (!interrupt_noted)
        interrupt_noted = sig;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The guest sees a fixed part of weft's environment: its size and content
 * shape the guest's stack, so a variable that differs between two shells
 * (PWD, SHLVL, GNU parallel's PARALLEL_SEQ, Slurm's SLURM_*) would change
 * virtual times and with them a seed's run. Kept: the variables below, LC_*,
 * QEMU_* (qemu's own settings), OMP_* and GOMP_* (an OpenMP program's team
 * size and wait policy: without them it ran another program than the user's
 * shell) and the names listed in WEFT_GUEST_ENV. */
static int guest_env_kept(const char *var)
{
    static const char *const kept[] = {"PATH",     "HOME", "USER", "LOGNAME", "LANG",
                                       "LANGUAGE", "TZ",   "TERM", "SHELL",   "TMPDIR"};
    size_t len = strcspn(var, "=");
    static const char *const prefixes[] = {"LC_", "QEMU_", "OMP_", "GOMP_"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(var, prefixes[i], strlen(prefixes[i])))
            return 1;
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (strlen(kept[i]) == len && !strncmp(var, kept[i], len))
            return 1;
    const char *extra = getenv("WEFT_GUEST_ENV");
    while (extra && *extra) {
        size_t n = strcspn(extra, " ,:");
        if (n == len && !strncmp(var, extra, n))
            return 1;
        extra += n + (extra[n] != 0);
    }
    return 0;
}

extern char **environ;

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Built before fork: the child of a threaded weft may not allocate. */
char **guest_environment(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (guest_env_kept(environ[i]))
            env[k++] = environ[i];
    /* In one order whatever order the shell exported them in: getenv's
     * scan, and with it the guest's virtual time, depends on it. */
    qsort(env, k, sizeof *env, compare_strings);
    return env;
}

/* In the forked child: the guest's stream `fd` goes to `path` instead. */
static int capture(const char *path, int fd)
{
    if (!path)
        return 0;
    int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (f < 0 || dup2(f, fd) < 0) {
        fprintf(stderr, "weft: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    close(f);
    return 0;
}

/* The fds the qemu process keeps besides 0, 1 and 2: each `from` at `to`
 * (no other open file of weft's reaches the guest, whose fd numbers then
 * do not depend on what weft happened to have open). In the forked child. */
static void pass_fds(const guest_fd *fds, size_t n)
{
    unsigned lo = 3;
    for (size_t i = 0; i < n; i++)
        if (fds[i].from != fds[i].to && dup2(fds[i].from, fds[i].to) < 0)
            _exit(127);
    /* Targets ascending (callers pass few): close everything between them. */
    for (;;) {
        unsigned next = ~0u;
        for (size_t i = 0; i < n; i++)
            if ((unsigned)fds[i].to >= lo && (unsigned)fds[i].to < next)
                next = (unsigned)fds[i].to;
        if (next > lo)
            close_range(lo, next == ~0u ? ~0u : next - 1, 0);
        if (next == ~0u)
            break;
        lo = next + 1;
    }
}

/* Where weft's stdin began, when it is a regular file (-1 otherwise),
 * noted as weft starts: each qemu reads its own copy from there. Sharing
 * weft's open file description, the first run (a profiling run) read the
 * input to its end and every later run found nothing. */
static off_t stdin_start = -1;
__attribute__((constructor)) static void note_stdin_start(void)
{
    struct stat st;
    if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode))
        stdin_start = lseek(STDIN_FILENO, 0, SEEK_CUR);
}

int guest_stdin_copy(void)
{
    if (stdin_start < 0)
        return -1;
    int mode = fcntl(STDIN_FILENO, F_GETFL);
    int fd = open("/proc/self/fd/0", (mode >= 0 ? mode & O_ACCMODE : O_RDONLY) | O_CLOEXEC);
    if (fd >= 0 && lseek(fd, stdin_start, SEEK_SET) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* The first line of file path that holds needle, into out: 1, or 0. */
static int line_with(const char *path, const char *needle, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int found = 0;
    while (f && !found && getline(&line, &cap, f) > 0)
        found = strstr(line, needle) != NULL;
    if (found) {
        line[strcspn(line, "\n")] = 0;
        snprintf(out, len, "%s", line);
    }
    free(line);
    if (f)
        fclose(f);
    return found;
}

int guest_loader_failed(const guest_run *run, const guest_result *r, const char *errf, int quiet)
{
    char line[1024];
    if (r->end != GUEST_EXITED || r->status != 127 ||
        !line_with(errf, "error while loading shared libraries", line, sizeof line))
        return 0;
    if (!quiet)
        weft_error("%s (--sysroot %s: give a root with the program's libraries)", line,
                   run->sysroot ? run->sysroot : "none");
    return 1;
}

int guest_too_many_threads(const guest_run *run, const char *errf, int quiet)
{
    char line[1024];
    unsigned max;
    if (!line_with(errf, " threads: raise --max-threads", line, sizeof line) ||
        sscanf(line, "weft: more than %u threads", &max) != 1)
        return 0;
    if (!quiet)
        weft_error("%s started more than %u threads in one run (each has a processing element "
                   "of its own, never reused): give --max-threads %u (up to 65536)",
                   run->binary, max, max * 4 < 65536 ? max * 4 : 65536);
    return 1;
}

int guest_fd_top(void)
{
    struct rlimit rl;
    rlim_t top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 1024 ? rl.rlim_cur : 1024;
    return (int)top;
}

/* Where qemu finds a copy of its stderr for the tracer (errfd=): below a
 * fork server's two pipes. Made here, in the forked child, because the
 * kernel grows a multithreaded process's fd table past 64 only after an
 * RCU grace period: the tracer's own dup to a high fd cost every qemu
 * start 10-15 ms. */
static int stderr_copy_fd(void)
{
    return guest_fd_top() - 3;
}

int guest_spawn_qemu(const guest_run *run, const guest_fd *fds, size_t nfds, pid_t *out_pid)
{
    char *args[run->argc + 12];
    int k = 0;
    args[k++] = (char *)guest_qemu_path();
    /* The guest's AT_RANDOM bytes (stack canaries, pointer guards) from a
     * fixed seed: the same in every run of a program. */
    args[k++] = "-seed";
    args[k++] = "1";
    /* qemu's default cpu has SVE, and glibc's memcpy and memmove then copy
     * 32 bytes or fewer with a predicated ld1b/st1b, which qemu 7.2 does in
     * a helper that calls no plugin back: the copy was no access at all, and
     * a race on a short record went unseen (a 24-byte copy: no race; 48
     * bytes, copied with ldp/stp, found). Without SVE glibc takes its
     * Advanced SIMD routines. QEMU_CPU in weft's environment still chooses. */
    if (!getenv("QEMU_CPU")) {
        args[k++] = "-cpu";
        args[k++] = "max,sve=off";
    }
    if (run->sysroot) {
        args[k++] = "-L";
        args[k++] = (char *)run->sysroot;
    }
    char plugin_opt[8192];
    if (run->plugin_args) {
        const char *plugin = guest_plugin_path();
        if (!plugin)
            return -1;
        /* argi tells the plugin where the guest's argv starts in qemu's. */
        snprintf(plugin_opt, sizeof plugin_opt, "%s,%s,errfd=%d,argi=%d", plugin, run->plugin_args,
                 stderr_copy_fd(), k + 2);
        args[k++] = "-plugin";
        args[k++] = plugin_opt;
    }
    for (int i = 0; i < run->argc; i++)
        args[k++] = run->argv[i];
    args[k] = NULL;
    char **env = guest_environment();
    if (!env) {
        weft_error("cannot start qemu: out of memory");
        return -1;
    }
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        weft_error("cannot start qemu: %s", strerror(errno));
        free(env);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        /* weft killed outright (SIGKILL, no handler runs) must not leave
         * qemu running unwatched, without a time limit: the kernel kills it
         * with its parent. Checked after the call, in case weft died first. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        if (capture(run->capture_out, STDOUT_FILENO) ||
            (run->capture_err && run->capture_err == run->capture_out
                 ? dup2(STDOUT_FILENO, STDERR_FILENO) < 0 /* 2>&1: one stream, in order */
                 : capture(run->capture_err, STDERR_FILENO)))
            _exit(127);
        int given_in = 0;
        for (size_t i = 0; i < nfds; i++)
            given_in |= fds[i].to == STDIN_FILENO;
        if (!given_in) { /* the caller did not choose its stdin: its own copy */
            int in = guest_stdin_copy();
            if (in >= 0 && (dup2(in, STDIN_FILENO) < 0 || close(in) != 0))
                _exit(127);
        }
        pass_fds(fds, nfds);
        if (run->plugin_args && dup2(STDERR_FILENO, stderr_copy_fd()) < 0)
            _exit(127);
        execvpe(args[0], args, env);
        fprintf(stderr, "weft: cannot run %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    free(env);
    setpgid(pid, pid);
    *out_pid = pid;
    return 0;
}

/* Until qemu's pidfd says it exited, a signal comes, or `left` seconds
 * pass, at most 0.1 (a signal just before the poll is seen that late);
 * without a pidfd (a kernel before 5.3), 2 ms. */
static void wait_a_while(int pfd, double left)
{
    if (pfd < 0) {
        struct timespec nap = {0, 2000000};
        nanosleep(&nap, NULL);
        return;
    }
    int ms = left >= 0.1 ? 100 : left > 0 ? (int)(left * 1000) + 1 : 1;
    struct pollfd p = {.fd = pfd, .events = POLLIN};
    poll(&p, 1, ms);
}

/* A size for a person: "812 KB", "1.4 GB". */
static void size_words(char *buf, size_t len, double bytes)
{
    const char *unit[] = {"bytes", "KB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000 && u < 4)
        bytes /= 1000, u++;
    snprintf(buf, len, u && bytes < 10 ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

/* A long trace says it is alive (guest_run.progress): the time so far and
 * what it has written, the spool while the guest runs (segments as its
 * threads close them), the trace once the tracer writes it. WEFT_PROGRESS_S
 * sets the first line's time (tests). */
static void say_progress(const guest_run *run, pid_t pid, double t0, double *next_at)
{
    double el = now_s() - t0;
    if (el < *next_at)
        return;
    char path[PATH_MAX + 64], size[32];
    struct stat st;
    snprintf(path, sizeof path, "%s.tmp.%d", run->watch_trace, (int)pid);
    if (stat(path, &st) == 0) {
        size_words(size, sizeof size, (double)st.st_size);
        fprintf(stderr, "weft: %.0f s: the guest has ended; writing the trace, %s so far\n", el,
                size);
    } else {
        snprintf(path, sizeof path, "%s.spool", run->watch_trace);
        if (stat(path, &st) == 0) {
            size_words(size, sizeof size, (double)st.st_size);
            fprintf(stderr, "weft: %.0f s: tracing, %s spooled\n", el, size);
        } else {
            fprintf(stderr, "weft: %.0f s: tracing\n", el);
        }
    }
    double gap = *next_at < 60 ? *next_at : 60;
    *next_at += gap;
}

static double progress_first_s(void)
{
    const char *e = getenv("WEFT_PROGRESS_S");
    char *end;
    double s = e && *e ? strtod(e, &end) : 0;
    return e && *e && *end == 0 && s > 0 ? s : 10;
}

int guest_run_qemu(const guest_run *run, guest_result *res)
{
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    interrupted = 0; /* before the handler: a signal from here on counts */
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    if (interrupt_noted && !interrupted)
        interrupted = interrupt_noted;
    double t0 = now_s();
    pid_t pid;
    if (guest_spawn_qemu(run, NULL, 0, &pid)) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        return -1;
    }
    res->pid = (int)pid;
    int status = 0;
    res->end = GUEST_EXITED;
    /* Readable when qemu exits: the wait ends then, not at the next 2 ms tick
     * (a small program's run is 20 ms, and profiling makes nine). */
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    double next_progress = progress_first_s();
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            weft_error("waiting for qemu: %s", strerror(errno));
            if (pfd >= 0)
                close(pfd);
            return -1;
        }
        /* A hung qemu ignores SIGTERM: only SIGKILL on the whole group works. */
        if (interrupted || (run->timeout_s && now_s() - t0 > run->timeout_s)) {
            res->end = interrupted ? GUEST_INTERRUPTED : GUEST_TIMED_OUT;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        if (run->progress && run->watch_trace)
            say_progress(run, pid, t0, &next_progress);
        wait_a_while(pfd, run->timeout_s ? run->timeout_s - (now_s() - t0) : 0.1);
    }
    if (pfd >= 0)
        close(pfd);
    res->wall_s = now_s() - t0;
    kill(-pid, SIGKILL); /* anything the guest left behind in its group */
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (res->end == GUEST_EXITED) {
        if (WIFSIGNALED(status)) {
            res->end = GUEST_SIGNALED;
            res->status = WTERMSIG(status);
        } else {
            res->status = WEXITSTATUS(status);
        }
    } else {
        res->status = interrupted ? interrupted : SIGKILL;
    }
    return 0;
}
