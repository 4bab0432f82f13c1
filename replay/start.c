/* Starting a replay from a parsed command line: the program checked, the
 * campaign's folder made or resumed, profiling, the plan line, then one
 * seed, a campaign or the portfolio. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/replay.h"
#include "weft/trace.h"

/* The line that says what the campaign is about to do. */
static void print_plan(const replay_config *c, const pct_config *cfg, const replay_shard *sh)
{
    if (c->kind == PCT_KIND_PB || c->kind == PCT_KIND_DB)
        printf("weft: %s, bound %" PRIu64, pct_kind_name(c->kind), c->max_bound);
    else if (c->kind == PCT_KIND_RANDOM || c->kind == PCT_KIND_POS)
        printf("weft: %s", pct_kind_name(c->kind));
    else
        printf("weft: %s, depth %" PRIu64, pct_kind_name(c->kind), c->depth);
    if (c->kind == PCT_KIND_RPRO)
        printf(", radius %" PRIu64 "%s", c->radius, c->radius_given ? "" : " (default)");
    /* random and pos draw nothing from k: a k there read as if it mattered */
    if (c->kind != PCT_KIND_RANDOM && c->kind != PCT_KIND_POS)
        printf(", k = %" PRIu64 " (%s)", c->k,
               c->k_source[0] ? c->k_source
               : c->k_given   ? "--steps"
                              : "the resumed campaign's");
    printf(", n = %" PRIu64 ", points %s", c->n,
           c->race_points ? "races" : replay_points_name(c->points));
    if (c->pcs_path[0])
        printf(" (%s)", c->pcs_path);
    printf(", starvation %g%s, timeout %u s", cfg->starvation,
           c->starvation < 0 ? " (default)" : "", c->timeout);
    if (c->seed_given)
        printf(", seed %" PRIu64 "\n", c->first_seed);
    else if (c->deadline && !c->runs_given)
        printf(", seeds from %" PRIu64 " while --for %" PRIu64 " s allows, %u job%s%s\n",
               c->first_seed, c->budget_s, c->jobs, c->jobs == 1 ? "" : "s",
               c->jobs_given ? "" : " (default)");
    else
        printf(", seeds %" PRIu64 "..%" PRIu64 "%s, %u job%s%s\n", c->first_seed,
               c->first_seed + c->runs - 1,
               c->runs_given ? "" : " (one run: --runs N for a campaign)", c->jobs,
               c->jobs == 1 ? "" : "s", c->jobs_given ? "" : " (default)");
    if (c->host_parallel)
        printf("weft: --host-parallel: runs are not reproducible by seed\n");
    if (sh->index)
        printf("weft: shard %" PRIu64 "/%" PRIu64 " of seeds %" PRIu64 "..%" PRIu64 "\n", sh->index,
               sh->count, sh->first_seed, sh->first_seed + sh->runs - 1);
}

/* The policy's parameters that follow from k: the default depth cut down to
 * what fits, rpro's default radius; other policies have no radius. */
static void fit_to_k(replay_config *c)
{
    if (!c->depth_given && c->depth > 1 && c->depth - 1 > c->k) {
        /* The default depth has no room for its change points in so few
         * steps: the deepest that fits. */
        printf("weft: depth %" PRIu64 " needs %" PRIu64 " change points but k = %" PRIu64
               ": depth %" PRIu64 "\n",
               c->depth, c->depth - 1, c->k, c->k + 1);
        c->depth = c->k + 1;
    }
    if (c->kind == PCT_KIND_RPRO && !c->radius_given && !c->resume)
        c->radius = c->k < REPLAY_DEFAULT_RADIUS ? c->k : REPLAY_DEFAULT_RADIUS;
    if (c->kind != PCT_KIND_RPRO)
        c->radius = 1;
}

/* The policy's own check (depth against k, radius against k and depth).
 * 0, or -1 after one line. */
static int policy_config(const replay_config *c, pct_config *cfg)
{
    pct_config_init(cfg, c->kind);
    cfg->n = (uint32_t)c->n;
    cfg->k = c->k;
    cfg->d = (uint32_t)c->depth;
    cfg->r = c->radius;
    if (c->starvation >= 0)
        cfg->starvation = c->starvation;
    char err[256];
    if (pct_config_check(cfg, err, sizeof err)) {
        weft_error("%s%s", err, c->k_given ? "" : " (k measured by the profiling run)");
        return -1;
    }
    return 0;
}

/* pb, db: seeds name schedules, and the bound's schedules are all there
 * are: a campaign is cut to those left, a single seed runs its own.
 * 0, or -1 after one line. */
static int bounded_seeds(replay_config *c, pct_config *cfg)
{
    if (c->kind != PCT_KIND_PB && c->kind != PCT_KIND_DB)
        return 0;
    if (c->seed_given) {
        uint32_t b;
        uint64_t idx;
        if (replay_bounded_schedule(c, c->first_seed, &b, &idx)) {
            weft_error("--seed %" PRIu64 ": past the last schedule of bound %" PRIu64,
                       c->first_seed, c->max_bound);
            return -1;
        }
        cfg->bound = b;
        cfg->schedule = idx;
        return 0;
    }
    uint64_t total = pct_bounded_total(c->kind, c->k, (uint32_t)c->n, (uint32_t)c->max_bound);
    printf("weft: %s with at most %" PRIu64 " %s: %" PRIu64 " schedules for k = %" PRIu64
           ", n = %" PRIu64 "\n",
           pct_kind_name(c->kind), c->max_bound, c->kind == PCT_KIND_PB ? "preemptions" : "delays",
           total, c->k, c->n);
    if (c->first_seed > total) {
        weft_error("--seed %" PRIu64 ": past the last schedule (%" PRIu64 ")", c->first_seed,
                   total);
        return -1;
    }
    if (c->first_seed - 1 + c->runs > total) {
        c->runs = total - (c->first_seed - 1);
        printf("weft: the search is exhaustive: %" PRIu64 " runs cover every schedule left\n",
               c->runs);
    }
    return 0;
}

/* Visible points need the program's code told from the C library's. The
 * plugin says so in each run's stderr, which the user never sees: say it
 * once here, where they look. */
static void warn_no_debug_info(const replay_config *c)
{
    if (c->points != POINTS_VISIBLE)
        return;
    char err[512];
    weft_symbols *syms = weft_symbols_open(c->run.binary, err, sizeof err);
    weft_code_map m;
    if (!syms)
        return;
    if (weft_code_map_build(syms, &m, err, sizeof err) == 0) {
        if (m.how == WEFT_CODE_ALL)
            fprintf(stderr,
                    "weft: %s is static and has no debug info: its own code cannot be told "
                    "from the C library's, so the library's internals are schedule points "
                    "too and dilute the search (rebuild with -g)\n",
                    c->run.binary);
        weft_code_map_free(&m);
    }
    weft_symbols_close(syms);
}

int replay_start(replay_config *c, const char *out, replay_shard *sh)
{
    int rc;
    /* The program first: a bad one leaves no output folder behind. */
    if (guest_check_binary(c->run.binary, &c->run.sysroot))
        return WEFT_EXIT_FAIL;
    warn_no_debug_info(c);
    if (weft_mkdirs(out) || !realpath(out, c->out_dir))
        return WEFT_EXIT_FAIL;
    if (strchr(c->out_dir, ',') || strchr(c->pcs_path, ',')) {
        weft_error("%s: commas are not allowed in the paths weft hands to the tracer",
                   strchr(c->out_dir, ',') ? c->out_dir : c->pcs_path);
        return WEFT_EXIT_USAGE;
    }
    int shard_given = sh->index != 0;
    if (c->resume && replay_campaign_load(c, sh))
        return WEFT_EXIT_USAGE;
    if (shard_given && replay_shard_apply(c, sh))
        return WEFT_EXIT_USAGE;
    const char *shared_stdin = replay_stdin_shared();
    if (shared_stdin && !c->quiet && !c->seed_given)
        /* Before profiling, whose first run would read it all: every later
         * run then reads what is left (often nothing), and an output check
         * fails them all as if the schedule had. */
        printf("weft: %s %s\n", c->run.binary, shared_stdin);
    if (!c->resume ||
        ((c->points == POINTS_SHARED || c->points == POINTS_VISIBLE) && !c->pcs_path[0]))
        if ((rc = replay_profile(c)))
            return rc > 0 ? rc : WEFT_EXIT_FAIL;
    if (c->portfolio)
        return replay_portfolio(c);
    fit_to_k(c);
    pct_config cfg;
    if (policy_config(c, &cfg) || bounded_seeds(c, &cfg))
        return WEFT_EXIT_USAGE;
    print_plan(c, &cfg, sh);
    if (replay_campaign_write(c, sh))
        return WEFT_EXIT_FAIL;
    return replay_campaign(c);
}
