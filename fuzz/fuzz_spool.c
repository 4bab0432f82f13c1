/* libFuzzer harness for weft_trace_salvage: turning the spool of a run that
 * died (qemu killed, guest crashed, disk full) into a trace. The input is the
 * spool (raw chunks, or segments); like fuzz_trace it is tried as is and with
 * its header, chunk and segment CRCs recomputed. Checks: errors are one line, and whatever salvage
 * accepts becomes a trace that opens, reads to its end without error and is flagged truncated. */
#include "fuzz_common.h"

#include "weft/trace.h"

static char trace_path[300], spool_path[310];

static void cleanup(void)
{
    unlink(spool_path);
    unlink(trace_path);
    rmdir(fz_scratch());
}

static void fix_checksums(uint8_t *d, size_t n)
{
    size_t off = fz_fix_header(d, n);
    if (!off)
        return;
    while (off + 28 <= n) {
        /* A segment (WSG4): 36-byte header, its CRC at 32 over [0, 32) and
         * the compressed payload; the chunks inside keep theirs. */
        int seg = fz_u32(d + off) == 0x34475357u;
        size_t hl = seg ? 36 : 28, at = seg ? 32 : 24;
        uint32_t len = fz_u32(d + off + (seg ? 20 : 12));
        if (off + hl + (uint64_t)len > n)
            break;
        uint32_t c = (uint32_t)crc32(0, d + off, (unsigned)at);
        c = (uint32_t)crc32(c, d + off + hl, len);
        fz_put_u32(d + off + at, c);
        off += hl + (size_t)len;
    }
}

static void run_one(const uint8_t *data, size_t size)
{
    FILE *f = fopen(spool_path, "wb");
    FUZZ_CHECK(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write spool");
    char err[512] = "";
    if (weft_trace_salvage(trace_path, WEFT_TRACE_CRASHED, -11, err, sizeof err) != 0) {
        FUZZ_ONE_LINE(err);
        unlink(spool_path);
        FUZZ_CHECK(access(trace_path, F_OK) != 0, "failed salvage left a trace");
        return;
    }
    FUZZ_CHECK(access(spool_path, F_OK) != 0, "salvage kept the spool");
    weft_trace *t = weft_trace_open(trace_path, err, sizeof err);
    FUZZ_CHECK(t, "salvaged trace does not open: %s", err);
    const weft_trace_summary *s = weft_trace_get_summary(t);
    FUZZ_CHECK((s->flags & (WEFT_TRACE_TRUNCATED | WEFT_TRACE_CRASHED)) ==
                       (WEFT_TRACE_TRUNCATED | WEFT_TRACE_CRASHED) &&
                   s->exit_status == -11,
               "salvaged trace flags 0x%x status %d", s->flags, s->exit_status);
    weft_event ev;
    uint64_t n = 0;
    int rc;
    while ((rc = weft_trace_next(t, &ev)) == 1)
        n++;
    FUZZ_CHECK(rc == 0, "salvaged trace is corrupt: %s", weft_trace_error(t));
    FUZZ_CHECK(n == weft_trace_event_count(t), "salvaged trace event count");
    weft_trace_close(t);
    unlink(trace_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!trace_path[0]) {
        snprintf(trace_path, sizeof trace_path, "%s/run.wtr", fz_scratch());
        snprintf(spool_path, sizeof spool_path, "%s.spool", trace_path);
        atexit(cleanup);
    }
    run_one(data, size);
    uint8_t *fixed = malloc(size ? size : 1);
    FUZZ_CHECK(fixed, "out of memory");
    memcpy(fixed, data, size);
    fix_checksums(fixed, size);
    if (memcmp(fixed, data, size) != 0)
        run_one(fixed, size);
    free(fixed);
    return 0;
}
