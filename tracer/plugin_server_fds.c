/* What a fork server's child makes its own again at the snapshot: an open
 * file description is shared across fork, so each child would move the
 * others' offsets and read the others' pipes.
 * - Regular files (the program's input, stdin when it is a file, qemu's own)
 *   are reopened at the snapshot's offsets: pigz, pbzip2 and xz open their
 *   input before their first thread, and the second child found it at its
 *   end and compressed nothing.
 * - A pipe with both ends in the program (xz's self-pipe for signals, a
 *   pipe between its threads) is made again, with what it held at the
 *   snapshot: a child's writes would otherwise be read by another, and the
 *   server's copy of the write end keep each child's reader from its end of
 *   file. A pipe with an end elsewhere (another process) cannot be: no
 *   server.
 * - Another descriptor of the server's stdout or stderr (a /dev/stdout the
 *   program opened, pixz's -o /dev/stdout, or a dup of fd 1) is the child's
 *   stream: reopened, it wrote into the server's prefix file, and every run
 *   of pixz failed its output check. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin_replay.h"

typedef struct open_fd {
    int fd, flags, fdflags;
    off_t offset; /* regular files */
    ino_t pipe;   /* pipes: the pipe's inode; 0 for a file */
    int stream;   /* 1 or 2: the server's stdout or stderr under another number */
} open_fd;

typedef struct pipe_copy {
    ino_t ino;
    int size;   /* F_GETPIPE_SZ */
    char *data; /* what it held at the snapshot */
    size_t len;
    int has_read, has_write;
} pipe_copy;

static open_fd *fds_at_fork;
static size_t nfds_at_fork, fds_cap;
static pipe_copy *pipes_at_fork;
static size_t npipes_at_fork;

static int keep_fd(open_fd o)
{
    if (nfds_at_fork == fds_cap) {
        size_t cap = fds_cap ? 2 * fds_cap : 16;
        open_fd *n = realloc(fds_at_fork, cap * sizeof *n);
        if (!n)
            return -1;
        fds_at_fork = n, fds_cap = cap;
    }
    fds_at_fork[nfds_at_fork++] = o;
    return 0;
}

static pipe_copy *pipe_of(ino_t ino)
{
    for (size_t i = 0; i < npipes_at_fork; i++) {
        if (pipes_at_fork[i].ino == ino)
            return &pipes_at_fork[i];
    }
    pipe_copy *n = realloc(pipes_at_fork, (npipes_at_fork + 1) * sizeof *n);
    if (!n)
        return NULL;
    pipes_at_fork = n;
    n[npipes_at_fork] = (pipe_copy){.ino = ino};
    return &n[npipes_at_fork++];
}

/* Empties the server's pipe into the copy: the server runs no guest code
 * again, so nothing else reads it. */
static int drain(pipe_copy *p, int fd)
{
    int n = 0;
    if (ioctl(fd, FIONREAD, &n) != 0 || n < 0)
        return -1;
    p->data = malloc((size_t)n + 1);
    if (!p->data)
        return -1;
    while (p->len < (size_t)n) {
        ssize_t r = read(fd, p->data + p->len, (size_t)n - p->len);
        if (r <= 0)
            return -1;
        p->len += (size_t)r;
    }
    return 0;
}

/* Is st the file of the server's stream 1 or 2? Which, or 0. */
static int stream_of(const struct stat *st, const struct stat std[2])
{
    for (int i = 0; i < 2; i++)
        if (std[i].st_ino && st->st_dev == std[i].st_dev && st->st_ino == std[i].st_ino)
            return i + 1;
    return 0;
}

const char *server_note_fds(int skip_a, int skip_b)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return NULL;
    struct stat std[2] = {0};
    for (int i = 0; i < 2; i++)
        if (fstat(i + 1, &std[i]) != 0 || !(S_ISREG(std[i].st_mode) || S_ISFIFO(std[i].st_mode)))
            std[i].st_ino = 0;
    const char *why = NULL;
    struct dirent *e;
    while (!why && (e = readdir(d))) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        struct stat st;
        if (*end || end == e->d_name || fd == dirfd(d) || fstat((int)fd, &st) != 0)
            continue;
        open_fd o = {(int)fd, fcntl((int)fd, F_GETFL), fcntl((int)fd, F_GETFD), -1, 0, 0};
        if (fd > 2 && (o.stream = stream_of(&st, std)) != 0) {
            if (keep_fd(o))
                why = "has more open files than weft could note";
            continue;
        }
        if (S_ISREG(st.st_mode)) {
            o.offset = lseek((int)fd, 0, SEEK_CUR);
            if (keep_fd(o))
                why = "has more open files than weft could note";
            continue;
        }
        /* The standard streams are each child's own already (its stdout and
         * stderr files; stdin a file or a device), the server's pipes its own. */
        if (!S_ISFIFO(st.st_mode) || fd <= 2 || fd == skip_a || fd == skip_b)
            continue;
        o.pipe = st.st_ino;
        pipe_copy *p = pipe_of(st.st_ino);
        if (!p || keep_fd(o)) {
            why = "has more open pipes than weft could note";
            continue;
        }
        if ((o.flags & O_ACCMODE) == O_RDONLY) {
            p->has_read = 1;
            if (!p->data && drain(p, (int)fd))
                why = "has a pipe whose contents weft could not take";
        } else
            p->has_write = 1;
        p->size = fcntl((int)fd, F_GETPIPE_SZ);
    }
    closedir(d);
    for (size_t i = 0; !why && i < npipes_at_fork; i++) {
        if (!pipes_at_fork[i].has_read || !pipes_at_fork[i].has_write)
            why = "has a pipe to or from another process open at its first thread (every run "
                  "would share it)";
    }
    return why;
}

static void child_fail(const char *what, int fd)
{
    fprintf(stderr, "weft-tracer: %s %d of the program: %s\n", what, fd, strerror(errno));
    _exit(1);
}

/* The child's own copy of pipe p at every fd the server had of it. */
static void take_pipe(const pipe_copy *p)
{
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0)
        child_fail("making again pipe", -1);
    if (p->size > 0)
        (void)fcntl(ends[1], F_SETPIPE_SZ, p->size);
    if (p->len && write(ends[1], p->data, p->len) != (ssize_t)p->len)
        child_fail("filling again pipe", ends[1]);
    for (size_t i = 0; i < nfds_at_fork; i++) {
        const open_fd *o = &fds_at_fork[i];
        if (o->pipe != p->ino)
            continue;
        int end = (o->flags & O_ACCMODE) == O_RDONLY ? ends[0] : ends[1];
        if (dup2(end, o->fd) < 0 || fcntl(o->fd, F_SETFL, o->flags & O_NONBLOCK) < 0 ||
            fcntl(o->fd, F_SETFD, o->fdflags) < 0)
            child_fail("making again pipe", o->fd);
    }
    close(ends[0]);
    close(ends[1]);
}

void server_take_fds(void)
{
    for (size_t i = 0; i < nfds_at_fork; i++) {
        const open_fd *o = &fds_at_fork[i];
        if (o->pipe || o->stream)
            continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", o->fd);
        int f = open(path, (o->flags & (O_ACCMODE | O_APPEND | O_NONBLOCK)) | O_CLOEXEC);
        if (f < 0 || (o->offset >= 0 && lseek(f, o->offset, SEEK_SET) < 0) || dup2(f, o->fd) < 0 ||
            fcntl(o->fd, F_SETFD, o->fdflags) < 0)
            child_fail("reopening file", o->fd);
        close(f);
    }
    for (size_t i = 0; i < npipes_at_fork; i++)
        take_pipe(&pipes_at_fork[i]);
}

void server_take_stream_copies(void)
{
    for (size_t i = 0; i < nfds_at_fork; i++) {
        const open_fd *o = &fds_at_fork[i];
        if (o->stream && (dup2(o->stream, o->fd) < 0 || fcntl(o->fd, F_SETFD, o->fdflags) < 0))
            child_fail("making the run's stream of", o->fd);
    }
}
