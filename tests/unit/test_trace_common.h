/* Helpers shared by the trace library's unit tests: a scratch directory,
 * a fully populated meta, and small trace builders. */
#ifndef WEFT_TEST_TRACE_COMMON_H
#define WEFT_TEST_TRACE_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/trace.h"

/* Scratch directory for one test program, removed at exit. */
static char tt_dir[512];

static inline int tt_rm(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static inline void tt_cleanup(void)
{
    /* WEFT_TEST_KEEP=1 leaves the files for inspection. */
    if (tt_dir[0] && !getenv("WEFT_TEST_KEEP"))
        nftw(tt_dir, tt_rm, 16, FTW_DEPTH | FTW_PHYS);
}

static inline const char *tt_scratch(void)
{
    if (!tt_dir[0]) {
        const char *base = getenv("WEFT_TEST_TMP");
        if (!base || !*base)
            base = "/tmp";
        mkdir(base, 0755);
        snprintf(tt_dir, sizeof tt_dir, "%s/weft-trace-XXXXXX", base);
        if (!mkdtemp(tt_dir)) {
            perror(tt_dir);
            exit(1);
        }
        atexit(tt_cleanup);
    }
    return tt_dir;
}

/* The n-byte little-endian integer at p. */
static inline uint64_t tt_get(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Setup and teardown of the tests of a spool of raw chunks (the writer of
 * a spool with a size limit), not of segments written as the threads
 * append (WEFT_TRACE_ONLINE=0 asks for it). */
static inline int tt_raw_spool(void **state)
{
    (void)state;
    return setenv("WEFT_TRACE_ONLINE", "0", 1);
}

static inline int tt_default_spool(void **state)
{
    (void)state;
    return unsetenv("WEFT_TRACE_ONLINE");
}

/* path of `name` in the scratch directory (static buffer rotation of 4). */
static inline const char *tt_path(const char *name)
{
    static char bufs[4][640];
    static int k;
    char *b = bufs[k++ & 3];
    snprintf(b, sizeof bufs[0], "%s/%s", tt_scratch(), name);
    return b;
}

static char *tt_argv_storage[] = {"prog", "arg with space", "ümlaut,\"quoted\"", NULL};

/* A meta with every field set to something recognisable. */
static inline weft_trace_meta tt_meta(void)
{
    weft_trace_meta m;
    memset(&m, 0, sizeof m);
    m.settings.mode = WEFT_MODE_EXACT;
    m.settings.cpi = 3;
    m.settings.ps_per_cycle = 1000;
    m.settings.quantum = 250;
    m.settings.filter = WEFT_FILTER_RANGES;
    m.settings.nranges = 2;
    m.settings.range_lo[0] = 0x400000;
    m.settings.range_hi[0] = 0x401000;
    m.settings.range_lo[1] = 0xffff000000000000ull;
    m.settings.range_hi[1] = 0xffffffffffffffffull;
    snprintf(m.settings.policy, sizeof m.settings.policy, "pct");
    m.settings.seed = 0xdeadbeefcafef00dull;
    m.binary_path = "/guest/bin/prog";
    for (int i = 0; i < 20; i++)
        m.build_id[i] = (uint8_t)(0xa0 + i);
    m.build_id_len = 20;
    m.argc = 3;
    m.argv = tt_argv_storage;
    return m;
}

static inline weft_event tt_ev(uint64_t time, uint8_t kind, uint64_t addr, uint64_t pc,
                               uint8_t size)
{
    weft_event e;
    memset(&e, 0, sizeof e);
    e.time = time;
    e.kind = kind;
    e.addr = addr;
    e.pc = pc;
    e.size = size;
    return e;
}

/* Write a trace from per-thread arrays, each thread appended in one call. */
static inline void tt_write(const char *path, uint32_t nthreads, weft_event *const *streams,
                            const size_t *counts, const weft_trace_summary *summary)
{
    char err[512] = "";
    weft_trace_meta m = tt_meta();
    weft_trace_writer *w = weft_trace_writer_open(path, &m, err, sizeof err);
    assert_non_null(w);
    m.start_code = 0x5500000000ull; /* as the tracer learns it, after the open */
    weft_trace_writer_set_loaded(w, &m);
    for (uint32_t t = 0; t < nthreads; t++)
        assert_int_equal(weft_trace_writer_append(w, t, streams[t], counts[t]), 0);
    if (weft_trace_writer_finish(w, summary, err, sizeof err) != 0)
        fail_msg("finish: %s", err);
}

/* Whole file into memory. */
static inline uint8_t *tt_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

static inline void tt_spit(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Canonical order: (time, thread, per-thread order; seq = index in the
 * thread's stream in these tests). */
static inline int tt_ev_order(const void *a, const void *b)
{
    const weft_event *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

#endif
