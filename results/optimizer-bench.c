/* Optimizer benchmarks for results/optimizer-bench.sh, measured in one run:
 *   1. 10^6 fitness evaluations (Bhattacharya et al. Eq. 4) on a traced model (the
 *      CFFT6 analogue): full evaluations of random points (what RND does),
 *      incremental one-coordinate moves (what SHC/SA do), and whole RND / SA
 *      searches with a budget of 10^6 that do not stop at the first hit.
 *      Target: under 1 s.
 *   2. The exact solver (candidate pairs + greedy selection) on a synthetic
 *      trace with >= 10^5 writes, written with the trace writer API and read
 *      back like any trace. Target: under 100 ms.
 * The model keeps what `weft optimize` keeps by default: plain (non-atomic)
 * accesses at addresses another thread writes.
 * Usage: optimizer-bench MODEL.wtr SYNTH.wtr [WRITES] [THREADS] */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/optimizer.h>
#include <weft/search.h>
#include <weft/trace.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd64(void) /* xorshift64* */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

static optimizer_model *load(const char *path, size_t *nwrites)
{
    char err[512];
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t) {
        fprintf(stderr, "optimizer-bench: %s\n", err);
        exit(1);
    }
    size_t cap = 1 << 16, n = 0;
    weft_event *ev = malloc(cap * sizeof *ev), e;
    int rc;
    while ((rc = weft_trace_next(t, &e)) == 1) {
        if (!(weft_event_is_access(e.kind) || e.kind == WEFT_EV_THREAD_START) ||
            (e.flags & (WEFT_EVF_ATOMIC | WEFT_EVF_EXCLUSIVE)))
            continue;
        if (n == cap)
            ev = realloc(ev, (cap *= 2) * sizeof *ev);
        ev[n++] = e;
    }
    if (rc < 0) {
        fprintf(stderr, "optimizer-bench: %s\n", weft_trace_error(t));
        exit(1);
    }
    optimizer_model *m = optimizer_model_from_events(ev, n, NULL, err, sizeof err);
    if (!m) {
        fprintf(stderr, "optimizer-bench: %s\n", err);
        exit(1);
    }
    *nwrites = 0;
    for (size_t v = 0; v < optimizer_model_dim(m); v++) {
        optimizer_var x;
        optimizer_model_var(m, v, &x);
        *nwrites += x.is_write;
    }
    free(ev);
    weft_trace_close(t);
    return m;
}

static void line(const char *what, double s, double target)
{
    printf("| %s | %.4f | %.3g | %.1fx %s |\n", what, s, target,
           s < target ? target / s : s / target, s < target ? "under" : "OVER");
}

static void bench_fitness(const char *path)
{
    size_t nw;
    optimizer_model *m = load(path, &nw);
    size_t dim = optimizer_model_dim(m);
    const uint64_t dmax = 10000000, n = 1000000;
    uint64_t *x = calloc(dim, sizeof *x);
    printf("\n## 10^6 fitness evaluations, %s (%zu variables, %zu writes, %zu addresses), "
           "D_max 10^7\n\n",
           path, dim, nw, optimizer_model_addresses(m));
    printf("| what | seconds | target s | vs target |\n|---|---|---|---|\n");
    volatile double sink = 0;
    double t0 = now_s();
    for (uint64_t k = 0; k < n; k++) {
        for (size_t i = 0; i < dim; i++)
            x[i] = rnd64() % (dmax + 1);
        sink += optimizer_fitness(m, x);
    }
    line("10^6 full evaluations of random points (RND)", now_s() - t0, 1.0);
    t0 = now_s();
    for (uint64_t k = 0; k < n; k++)
        sink += optimizer_fitness_move(m, rnd64() % dim, rnd64() % (dmax + 1));
    line("10^6 one-coordinate moves (SHC/SA, incremental)", now_s() - t0, 1.0);
    search_problem p = optimizer_search_problem(m);
    for (int a = 0; a < 3; a++) {
        search_config c = search_config_default(dmax);
        c.algorithm = (search_algorithm)a;
        c.budget = n;
        c.stop_on_target = 0;
        search_result r;
        char err[256], what[128];
        if (search_run(&p, &c, &r, err, sizeof err) != 0) {
            fprintf(stderr, "optimizer-bench: %s\n", err);
            exit(1);
        }
        snprintf(what, sizeof what,
                 "%s search, budget 10^6, no early stop (%" PRIu64 " evaluations)",
                 search_algorithm_name(c.algorithm), r.evaluations);
        line(what, r.seconds, 1.0);
        search_result_free(&r);
    }
    (void)sink;
    free(x);
    optimizer_model_free(m);
}

/* A synthetic run: `threads` threads, `writes` plain 8-byte writes in all,
 * spread over 1000 globals, 1..64 ns apart within a thread. */
static void make_synthetic(const char *path, uint64_t writes, uint32_t threads)
{
    weft_trace_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.settings.mode = WEFT_MODE_EXACT;
    meta.settings.cpi = 1;
    meta.settings.ps_per_cycle = 1000;
    snprintf(meta.settings.policy, sizeof meta.settings.policy, "ideal");
    char *argv[] = {"synthetic"};
    meta.binary_path = argv[0];
    meta.argc = 1;
    meta.argv = argv;
    char err[512];
    weft_trace_writer *w = weft_trace_writer_open(path, &meta, err, sizeof err);
    if (!w) {
        fprintf(stderr, "optimizer-bench: %s\n", err);
        exit(1);
    }
    uint64_t per = writes / threads + 1;
    weft_event *ev = calloc(per + 1, sizeof *ev);
    for (uint32_t th = 0; th < threads; th++) {
        uint64_t t = 100 * th;
        ev[0] = (weft_event){
            .time = t, .kind = WEFT_EV_THREAD_START, .addr = th ? 0 : UINT32_MAX, .thread = th};
        for (uint64_t k = 1; k <= per; k++) {
            t += 1 + rnd64() % 64;
            ev[k] = (weft_event){.time = t,
                                 .kind = WEFT_EV_WRITE,
                                 .size = 8,
                                 .addr = 0x500000 + 8 * (rnd64() % 1000),
                                 .pc = 0x400000 + 4 * (rnd64() % 256),
                                 .thread = th};
        }
        if (weft_trace_writer_append(w, th, ev, per + 1) != 0) {
            fprintf(stderr, "optimizer-bench: append failed\n");
            exit(1);
        }
    }
    free(ev);
    if (weft_trace_writer_finish(w, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "optimizer-bench: %s\n", err);
        exit(1);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void bench_exact(const char *path, uint64_t writes, uint32_t threads)
{
    make_synthetic(path, writes, threads);
    size_t nw;
    double t0 = now_s();
    optimizer_model *m = load(path, &nw);
    double t_load = now_s() - t0;
    size_t dim = optimizer_model_dim(m);
    printf("\n## Exact solver, synthetic trace %s: %u threads, %zu writes kept at %zu "
           "addresses (model built from the trace file in %.1f ms)\n\n",
           path, threads, nw, optimizer_model_addresses(m), t_load * 1e3);
    printf("| what | seconds | target s | vs target |\n|---|---|---|---|\n");
    enum { REPS = 7 };
    double tp[REPS], ts[REPS], tt[REPS];
    size_t ncand = 0, nchosen = 0;
    uint64_t *delta = calloc(dim, sizeof *delta);
    for (int r = 0; r < REPS; r++) {
        optimizer_candidate *c;
        optimizer_pair *ch;
        char err[256];
        t0 = now_s();
        if (optimizer_exact_pairs(m, &c, &ncand, err, sizeof err) != 0) {
            fprintf(stderr, "optimizer-bench: %s\n", err);
            exit(1);
        }
        double t1 = now_s();
        if (optimizer_exact_select(m, c, ncand, 0, delta, &ch, &nchosen, err, sizeof err) != 0) {
            fprintf(stderr, "optimizer-bench: %s\n", err);
            exit(1);
        }
        double t2 = now_s();
        tp[r] = t1 - t0, ts[r] = t2 - t1, tt[r] = t2 - t0;
        free(c), free(ch);
    }
    qsort(tp, REPS, sizeof *tp, cmp_double);
    qsort(ts, REPS, sizeof *ts, cmp_double);
    qsort(tt, REPS, sizeof *tt, cmp_double);
    char what[160];
    snprintf(what, sizeof what, "candidate pairs (%zu found), median of %d", ncand, REPS);
    line(what, tp[REPS / 2], 0.1);
    snprintf(what, sizeof what, "greedy selection (%zu pairs chosen), median of %d", nchosen, REPS);
    line(what, ts[REPS / 2], 0.1);
    snprintf(what, sizeof what, "exact solver total, median of %d (min %.4f, max %.4f)", REPS,
             tt[0], tt[REPS - 1]);
    line(what, tt[REPS / 2], 0.1);
    free(delta);
    optimizer_model_free(m);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: optimizer-bench MODEL.wtr SYNTH.wtr [WRITES] [THREADS]\n");
        return 2;
    }
    uint64_t writes = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
    uint32_t threads = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 10) : 8;
    if (strcmp(argv[1], "-") != 0) /* "-": exact solver only */
        bench_fitness(argv[1]);
    bench_exact(argv[2], writes, threads);
    return 0;
}
