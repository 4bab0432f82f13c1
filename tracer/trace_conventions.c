/* weft's conventions for what it tells the user and writes: one-line
 * errors, atomic output files, folders made on demand. Every component that
 * reports to the user links the trace library, so they live here. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "weft/trace.h"

void weft_one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
}

/* Messages quote what they were given (paths, arguments, JSON parsers'
 * "near '...'"): a newline in there must not make two lines. */
void weft_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0) {
        fputs("weft: out of memory\n", stderr);
        return;
    }
    weft_one_line(msg);
    fprintf(stderr, "weft: %s\n", msg);
    free(msg);
}

double weft_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int weft_mkdirs(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            int made = mkdir(buf, 0777) == 0;
            if (!made && errno != EEXIST) {
                weft_error("%s: cannot create the output folder: %s", buf, strerror(errno));
                return -1;
            }
            struct stat st;
            if (!made && stat(buf, &st) == 0 && !S_ISDIR(st.st_mode)) {
                /* Said of the user's path, not of the first file weft
                 * would have put in it. */
                weft_error("%s: exists and is not a folder", buf);
                return -1;
            }
            if (!c)
                return 0;
            *p = c;
        }
    }
}

int weft_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The folder a path's file is in: "." for a bare name, "/" for "/x.wtr". */
static void folder_of(const char *path, char *dir, size_t len)
{
    snprintf(dir, len, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, len, ".");
    else
        slash[slash == dir] = 0;
}

int weft_output_in_place(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int weft_output_open_in_place(const char *path)
{
    struct stat st, fs;
    if (stat(path, &st) == 0)
        for (int fd = 1; fd <= 2; fd++)
            if (fstat(fd, &fs) == 0 && fs.st_dev == st.st_dev && fs.st_ino == st.st_ino) {
                fflush(fd == 1 ? stdout : stderr);
                return dup(fd);
            }
    return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666); /* a link's target too */
}

/* Through a link, into a device or a FIFO, as it is: no temporary, no
 * fsync (a device need not support it). */
static int write_in_place(const char *path, const char *buf, size_t len, char *err, size_t errlen)
{
    int fd = weft_output_open_in_place(path);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    int e = weft_write_all(fd, buf, len) != 0 ? errno : 0;
    if (close(fd) != 0 && !e)
        e = errno;
    if (e) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

int weft_write_atomic(const char *path, const char *buf, size_t len, char *err, size_t errlen)
{
    if (weft_output_in_place(path))
        return write_in_place(path, buf, len, err, errlen);
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    int e = weft_write_all(fd, buf, len) != 0 || fsync(fd) != 0 ? errno : 0;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (e) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(e));
        unlink(tmp);
        return -1;
    }
    /* The rename itself, durable; failing here loses nothing written. */
    char dir[PATH_MAX];
    folder_of(path, dir, sizeof dir);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

int weft_check_output(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        weft_error("%s: is a directory", path);
        return -1;
    }
    if (weft_output_in_place(path)) {
        if (access(path, W_OK) != 0 && errno != ENOENT) { /* ENOENT: a link to a new file */
            weft_error("%s: cannot write: %s", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    char dir[PATH_MAX];
    folder_of(path, dir, sizeof dir);
    if (access(dir, W_OK | X_OK) != 0) {
        weft_error("%s: cannot write there: %s", path, strerror(errno));
        return -1;
    }
    /* access() says yes to root for /proc and read-only mounts: a file made
     * and removed at once says what the write at the end would meet. */
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/.weft-probe-%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) {
        weft_error("%s: cannot write there: %s", path, strerror(errno));
        return -1;
    }
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    return 0;
}
