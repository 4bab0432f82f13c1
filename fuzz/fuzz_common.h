/* Shared pieces of the libFuzzer harnesses: an in-memory file with a path
 * (the readers take paths), a scratch directory on tmpfs for code that
 * renames files, and checksum repair so mutated inputs get past the CRCs. */
#ifndef WEFT_FUZZ_COMMON_H
#define WEFT_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Abort with a message: libFuzzer keeps the input as a crash. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz check failed: %s: ", #cond);                                     \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
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

#endif
