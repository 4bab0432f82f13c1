/* Shared pieces of the libFuzzer harnesses: an in-memory file with a path
 * (the readers take paths), a scratch directory on tmpfs for code that
 * renames files, checksum repair so mutated inputs get past the CRCs, and
 * capturing what code under test prints, to check that an error is one
 * line. */
#ifndef WEFT_FUZZ_COMMON_H
#define WEFT_FUZZ_COMMON_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Abort with a message: libFuzzer keeps the input as a crash. Written to
 * fd 2 itself: stderr may be a capture (fz_capture_begin) at that point. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            dprintf(2, "fuzz check failed: %s: ", #cond);                                          \
            dprintf(2, __VA_ARGS__);                                                               \
            dprintf(2, "\n");                                                                      \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* An error message must be one non-empty line. */
#define FUZZ_ONE_LINE(msg)                                                                         \
    FUZZ_CHECK((msg)[0] && !strchr((msg), '\n'), "error message not one line: '%s'", (msg))

static inline uint32_t fz_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t fz_u64(const uint8_t *p)
{
    return (uint64_t)fz_u32(p) | (uint64_t)fz_u32(p + 4) << 32;
}
static inline void fz_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t fz_crc(const uint8_t *p, size_t n)
{
    return (uint32_t)crc32(0, p, (uInt)n);
}

/* Replace the contents of an anonymous in-memory file; its path is
 * /proc/self/fd/N, which open() re-opens like a regular file. */
static inline const char *fz_memfile(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("weft-fuzz", 0);
        FUZZ_CHECK(fd >= 0, "memfd_create");
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    FUZZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate");
    size_t off = 0;
    while (off < size) {
        ssize_t w = pwrite(fd, data + off, size - off, (off_t)off);
        FUZZ_CHECK(w > 0, "pwrite");
        off += (size_t)w;
    }
    return path;
}

/* A private scratch directory, on /dev/shm when there is one (the writers
 * fsync and rename; on tmpfs that costs nothing). */
static inline const char *fz_scratch(void)
{
    static char dir[256];
    if (!dir[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/weft-fuzz-XXXXXX", base && *base ? base : "/tmp");
        FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    }
    return dir;
}

/* Repair the header CRC of a trace or spool (header_len at offset 12, the
 * CRC in its last 4 bytes). Returns header_len, or 0 if it does not fit. */
static inline size_t fz_fix_header(uint8_t *d, size_t n)
{
    if (n < 16)
        return 0;
    uint32_t hl = fz_u32(d + 12);
    if (hl < 20 || hl > n)
        return 0;
    fz_put_u32(d + hl - 4, fz_crc(d, hl - 4));
    return hl;
}

/* Write a whole file (the harness's own input files in its scratch dir). */
static inline void fz_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s", path);
}

static inline int fz_rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

/* Remove a folder the code under test wrote into, and everything in it. */
static inline void fz_rmtree(const char *path)
{
    if (access(path, F_OK) == 0)
        FUZZ_CHECK(nftw(path, fz_rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0, "cannot remove %s", path);
}

/* What the code under test prints between fz_capture_begin and _end:
 * stdio's stdout and stderr are swapped for memory streams (the sanitizers
 * and libFuzzer write to fd 2 directly, so their reports still show). */
typedef struct fz_capture {
    FILE *saved_out, *saved_err;
    char *out, *err;
    size_t out_len, err_len;
} fz_capture;

static inline void fz_capture_begin(fz_capture *c)
{
    memset(c, 0, sizeof *c);
    fflush(stdout);
    fflush(stderr);
    c->saved_out = stdout;
    c->saved_err = stderr;
    stdout = open_memstream(&c->out, &c->out_len);
    stderr = open_memstream(&c->err, &c->err_len);
    FUZZ_CHECK(stdout && stderr, "open_memstream");
}

static inline void fz_capture_end(fz_capture *c)
{
    fclose(stdout);
    fclose(stderr);
    stdout = c->saved_out;
    stderr = c->saved_err;
}

static inline void fz_capture_free(fz_capture *c)
{
    free(c->out);
    free(c->err);
}

/* Lines in s (a last line without '\n' counts); 0 for "". */
static inline size_t fz_count_lines(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += s[i] == '\n' || (i + 1 == len);
    return n;
}

/* s holds exactly one line, non-empty and ending in '\n', with no NUL. */
static inline int fz_is_one_line(const char *s, size_t len)
{
    return len > 1 && s[len - 1] == '\n' && memchr(s, '\n', len) == s + len - 1 && strlen(s) == len;
}

#endif
