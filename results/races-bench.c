/* Race detector speed (results/races-bench.sh).
 *
 *   races-bench gen OUT THREADS EVENTS SEED
 *       writes a synthetic trace through the trace writer API: THREADS
 *       threads created by thread 0, about EVENTS events in all, each thread
 *       repeating a mix of what real programs do (below), seeded by SEED;
 *   races-bench time TRACE
 *       reads the trace once without analysis (decoding alone), then runs
 *       the detector's two passes on it in this process, and prints one
 *       table row: events, decode s, detector s, races (CPU seconds).
 *
 * The mix, per iteration of a thread (22 events): a lock taken with a CAS
 * and released with a swap on one of 4 locks, and 2 accesses to the data it
 * guards; 8 accesses to the thread's own array (same-epoch fast paths); 4
 * reads of a table every thread reads (read-shared vector clocks); 2 byte
 * stores into a shared flag array, each thread its own byte (cells split
 * within granules); 1 unprotected increment of a shared counter (a race
 * per pair of threads, counted on every instance); and an atomic fetch-add
 * on a statistics word. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/races.h>
#include <weft/trace.h>

static uint64_t rng_state;
static uint64_t rnd64(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* CPU time of this process: the machine is shared, and the target is for
 * one core. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define LOCKS 0x600000u
#define GUARDED 0x601000u
#define PRIVATE 0x700000u
#define TABLE 0x602000u
#define FLAGS 0x603000u
#define COUNTER 0x604000u
#define STATS 0x604040u

typedef struct gen {
    weft_event *ev;
    size_t n, cap;
    uint64_t t;
    uint32_t th;
} gen;

static void put(gen *g, uint8_t kind, uint64_t addr, uint8_t size, uint64_t pc, uint16_t flags)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 4096;
        g->ev = realloc(g->ev, g->cap * sizeof *g->ev);
        if (!g->ev) {
            fprintf(stderr, "races-bench: out of memory\n");
            exit(1);
        }
    }
    g->t += 1 + rnd64() % 8;
    g->ev[g->n++] = (weft_event){.time = g->t,
                                 .addr = addr,
                                 .pc = pc,
                                 .thread = g->th,
                                 .kind = kind,
                                 .size = size,
                                 .flags = flags};
}

static void iteration(gen *g, uint32_t i)
{
    uint64_t lock = rnd64() % 4;
    put(g, WEFT_EV_WRITE, LOCKS + 8 * lock, 4, 0x401000, WEFT_EVF_EXCLUSIVE); /* CAS */
    put(g, WEFT_EV_READ, GUARDED + 64 * lock, 8, 0x401010, 0);
    put(g, WEFT_EV_WRITE, GUARDED + 64 * lock, 8, 0x401014, 0);
    put(g, WEFT_EV_RMW, LOCKS + 8 * lock, 4, 0x401020, WEFT_EVF_ATOMIC); /* swap */
    for (int k = 0; k < 8; k++)
        put(g, k & 1 ? WEFT_EV_WRITE : WEFT_EV_READ,
            PRIVATE + 0x10000u * g->th + 8 * ((i * 4 + (uint32_t)k / 2) % 512), 8,
            0x402000 + 4 * (uint64_t)k, 0);
    for (int k = 0; k < 4; k++)
        put(g, WEFT_EV_READ, TABLE + 8 * (rnd64() % 256), 8, 0x403000, 0);
    put(g, WEFT_EV_WRITE, FLAGS + g->th, 1, 0x404000, 0);
    put(g, WEFT_EV_WRITE, FLAGS + 64 + g->th, 1, 0x404004, 0);
    put(g, WEFT_EV_READ, COUNTER, 8, 0x405000, 0);
    put(g, WEFT_EV_WRITE, COUNTER, 8, 0x405004, 0);
    put(g, WEFT_EV_RMW, STATS, 8, 0x406000, WEFT_EVF_ATOMIC);
}

/* Threads take turns in a random order, one iteration at a time, on one
 * global clock: a critical section never overlaps another, as in a real
 * run, and each thread's times increase. */
static int generate(const char *path, uint32_t threads, uint64_t events, uint64_t seed)
{
    rng_state = seed ? seed : 1;
    char *argv[] = {"synthetic"};
    weft_trace_meta meta = {.binary_path = argv[0], .argc = 1, .argv = argv};
    meta.settings.mode = WEFT_MODE_EXACT;
    meta.settings.cpi = 1;
    meta.settings.ps_per_cycle = 1000;
    snprintf(meta.settings.policy, sizeof meta.settings.policy, "ideal");
    char err[512];
    weft_trace_writer *w = weft_trace_writer_open(path, &meta, err, sizeof err);
    if (!w) {
        fprintf(stderr, "races-bench: %s\n", err);
        return 1;
    }
    gen g[64] = {{0}};
    uint64_t clock = 0, iters = events / 22 + 1, done[64] = {0};
    g[0].th = 0;
    put(&g[0], WEFT_EV_THREAD_START, UINT32_MAX, 0, 0, 0);
    for (uint32_t k = 0; k < 256; k++) /* thread 0 fills the table */
        put(&g[0], WEFT_EV_WRITE, TABLE + 8 * k, 8, 0x400100, 0);
    for (uint32_t th = 1; th < threads; th++) {
        put(&g[0], WEFT_EV_SYSCALL, 220, 0, 0, 0);
        g[th].th = th;
        g[th].t = g[0].t;
        put(&g[th], WEFT_EV_THREAD_START, 0, 0, 0, 0);
    }
    clock = g[0].t;
    for (uint64_t i = 0; i < iters; i++) {
        uint32_t th = (uint32_t)(rnd64() % threads);
        g[th].t = clock > g[th].t ? clock : g[th].t;
        iteration(&g[th], (uint32_t)done[th]++);
        clock = g[th].t;
        /* Flush in chunks: the writer spools, memory stays small. */
        if (g[th].n >= 1u << 16) {
            if (weft_trace_writer_append(w, th, g[th].ev, g[th].n) != 0)
                goto fail;
            g[th].n = 0;
        }
    }
    for (uint32_t th = 0; th < threads; th++) {
        if (g[th].n && weft_trace_writer_append(w, th, g[th].ev, g[th].n) != 0)
            goto fail;
        free(g[th].ev);
    }
    if (weft_trace_writer_finish(w, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "races-bench: %s\n", err);
        return 1;
    }
    return 0;
fail:
    fprintf(stderr, "races-bench: append failed\n");
    return 1;
}

static int time_trace(const char *path)
{
    char err[512];
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t) {
        fprintf(stderr, "races-bench: %s\n", err);
        return 1;
    }
    weft_event ev;
    uint64_t n = 0, sum = 0;
    double t0 = now_s();
    while (weft_trace_next(t, &ev) == 1)
        n++, sum += ev.addr;
    double decode = now_s() - t0;
    weft_races *d = weft_races_create(NULL, err, sizeof err);
    t0 = now_s();
    if (!d || weft_races_analyze(d, t, err, sizeof err) != 0) {
        fprintf(stderr, "races-bench: %s\n", err);
        return 1;
    }
    double detect = now_s() - t0;
    printf("%llu %.3f %.3f %zu %llu\n", (unsigned long long)n, decode, detect, weft_races_count(d),
           (unsigned long long)(sum & 1));
    weft_races_free(d);
    weft_trace_close(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[1], "gen")) {
        uint32_t threads = (uint32_t)strtoul(argv[3], NULL, 10);
        if (threads < 2 || threads > 64) {
            fprintf(stderr, "races-bench: 2 to 64 threads\n");
            return 2;
        }
        return generate(argv[2], threads, strtoull(argv[4], NULL, 10), strtoull(argv[5], NULL, 10));
    }
    if (argc == 3 && !strcmp(argv[1], "time"))
        return time_trace(argv[2]);
    fprintf(stderr, "usage: races-bench gen OUT THREADS EVENTS SEED | races-bench time TRACE\n");
    return 2;
}
