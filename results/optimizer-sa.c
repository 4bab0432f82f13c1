/* Move-by-move record of SA (or SHC) runs for results/optimizer-sa.sh: the
 * fitness differences SA's Metropolis rule sees and what it accepts.
 *
 * Usage: optimizer-sa TRACE.wtr DMAX SEED RUNS ALGO TEMP P0 SAMPLE COOL MOVES
 *   ALGO sa or shc; TEMP paper or scaled (ignored for shc); P0 and SAMPLE
 *   the scaled rule's; COOL moves between coolings (0: the default, one
 *   ladder cycle); MOVES how many moves of each run to print.
 * Runs RUNS searches with seeds SEED.., each until the first alignment (or
 * the budget of 10^6), with weft optimize's model and configuration, and
 * prints one line for each of the first MOVES moves of a run:
 *     M seed move from to temperature accepted
 * (move: 1-based move index in the run), one line per run:
 *     R seed evals_to_hit tmax moves moves_worse moves_worse_accepted restarts
 * and, first, one line per variable of the model (when MOVES > 0):
 *     V variable thread traced_time is_write
 * Everything else is the script's arithmetic. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/optimizer.h>
#include <weft/search.h>
#include <weft/trace.h>

typedef struct recorder {
    uint64_t seed, moves, print;
} recorder;

static void observe(void *ctx, const search_move_info *m)
{
    recorder *r = ctx;
    if (++r->moves <= r->print)
        printf("M %" PRIu64 " %" PRIu64 " %.17g %.17g %.17g %d\n", r->seed, r->moves, m->from,
               m->to, m->temperature, m->accepted);
}

static void usage(void)
{
    fprintf(stderr, "usage: optimizer-sa TRACE.wtr DMAX SEED RUNS sa|shc paper|scaled P0 SAMPLE "
                    "COOL MOVES\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc != 11)
        usage();
    char err[512];
    weft_trace *t = weft_trace_open(argv[1], err, sizeof err);
    if (!t) {
        fprintf(stderr, "optimizer-sa: %s\n", err);
        return 1;
    }
    opt_filter filter = {0};
    optimizer_options mo = optimizer_options_default();
    optimizer_model *m = opt_model_load(t, &filter, &mo, err, sizeof err);
    if (!m) {
        fprintf(stderr, "optimizer-sa: %s\n", err);
        return 1;
    }
    uint64_t dmax = strtoull(argv[2], NULL, 10), seed0 = strtoull(argv[3], NULL, 10);
    uint64_t runs = strtoull(argv[4], NULL, 10);
    search_config c = search_config_default(dmax);
    if (search_algorithm_parse(argv[5], &c.algorithm) != 0 ||
        search_sa_temperature_parse(argv[6], &c.sa_temperature) != 0)
        usage();
    c.sa_p0 = strtod(argv[7], NULL);
    c.sa_sample = (unsigned)strtoul(argv[8], NULL, 10);
    unsigned cool = (unsigned)strtoul(argv[9], NULL, 10);
    if (cool)
        c.sa_cool_every = cool;
    uint64_t print = strtoull(argv[10], NULL, 10);
    recorder rec = {0};
    c.observe = observe;
    c.observe_ctx = &rec;
    for (size_t v = 0; print && v < optimizer_model_dim(m); v++) {
        optimizer_var x;
        optimizer_model_var(m, v, &x);
        printf("V %zu %" PRIu32 " %" PRIu64 " %d\n", v, x.thread, x.time, x.is_write);
    }
    search_problem p = optimizer_search_problem(m);
    for (uint64_t i = 0; i < runs; i++) {
        c.seed = seed0 + i;
        rec = (recorder){.seed = c.seed, .print = print};
        search_result r;
        if (search_run(&p, &c, &r, err, sizeof err) != 0) {
            fprintf(stderr, "optimizer-sa: %s\n", err);
            return 1;
        }
        printf("R %" PRIu64 " %" PRIu64 " %.17g %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
               c.seed, r.evals_to_hit, r.sa_tmax, r.moves, r.moves_worse, r.moves_worse_accepted,
               r.restarts);
        search_result_free(&r);
    }
    optimizer_model_free(m);
    weft_trace_close(t);
    return 0;
}
