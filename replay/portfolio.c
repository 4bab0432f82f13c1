/* The portfolio: `weft replay` without --sched splits its run budget over
 * several policies, since no one policy finds every bug shape first
 * (random walks find shallow races, PCT's change points deep orders, POS
 * races between far-apart events). Each policy is an ordinary campaign in
 * its own folder, run a chunk of seeds at a time in turn, so that a bug any
 * of them finds early is found early whatever the order. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "weft/replay.h"

#define PORTFOLIO_CHUNK 10

typedef struct member {
    pct_kind kind;
    uint64_t depth;
} member;

/* Random, PCT at depths 1-3 and POS (docs/policies.md, "The portfolio"). */
static const member members[] = {
    {PCT_KIND_RANDOM, 1}, {PCT_KIND_PCT, 1}, {PCT_KIND_PCT, 2},
    {PCT_KIND_PCT, 3},    {PCT_KIND_POS, 1},
};
#define NMEMBERS (sizeof members / sizeof *members)

static void member_name(const member *m, char *buf, size_t len)
{
    if (m->kind == PCT_KIND_PCT)
        snprintf(buf, len, "pct-d%" PRIu64, m->depth);
    else
        snprintf(buf, len, "%s", pct_kind_name(m->kind));
}

/* A member's campaign: the portfolio's program, points, n and k, its own
 * policy and folder. Depths beyond k + 1 have no room for their change
 * points: such a member is left out (returns -1). */
static int member_config(const replay_config *c, const member *m, replay_config *mc)
{
    *mc = *c;
    mc->kind = m->kind;
    mc->depth = m->depth;
    mc->radius = 1;
    mc->portfolio = 0;
    mc->inner = 1;
    mc->resume = 1;
    mc->runs = 0;
    mc->runs_given = 1;
    if (m->depth > 1 && m->depth - 1 > c->k)
        return -1;
    char name[32];
    member_name(m, name, sizeof name);
    if (strlen(c->out_dir) + strlen(name) + 2 > sizeof mc->out_dir)
        return -1;
    memcpy(mc->out_dir + strlen(c->out_dir), "/", 2);
    strcat(mc->out_dir, name);
    return 0;
}

static void print_table(const replay_config *c, const replay_config *mcs, const int *used)
{
    printf("portfolio: %" PRIu64 " runs over %zu policies, n = %" PRIu64 ", k = %" PRIu64
           ", points %s\n",
           c->runs, NMEMBERS, c->n, c->k, replay_points_name(c->points));
    printf("  %-8s %6s %6s %9s  %-27s %s\n", "policy", "runs", "hits", "rate",
           "95% Clopper-Pearson", "first hit seed");
    for (size_t i = 0; i < NMEMBERS; i++) {
        char name[32], path[PATH_MAX + 32], err[512];
        member_name(&members[i], name, sizeof name);
        replay_summary s;
        snprintf(path, sizeof path, "%s/runs.jsonl", mcs[i].out_dir);
        if (!used[i] || replay_summary_read(path, &s, err, sizeof err)) {
            printf("  %-8s %6s  (not run: depth %" PRIu64 " needs k >= %" PRIu64 ")\n", name, "-",
                   members[i].depth, members[i].depth - 1);
            continue;
        }
        char ci[64], first[32] = "-";
        snprintf(ci, sizeof ci, "%.3g%% .. %.3g%%", 100 * s.ci_lo, 100 * s.ci_hi);
        if (s.first_hit_seed != UINT64_MAX)
            snprintf(first, sizeof first, "%" PRIu64, s.first_hit_seed);
        printf("  %-8s %6" PRIu64 " %6" PRIu64 " %8.3g%%  %-27s %s\n", name, s.runs, s.hits,
               100 * s.hit_rate, ci, first);
    }
    printf("  folders   %s/<policy>/ (each a campaign: weft replay --summary "
           "%s/<policy>/runs.jsonl)\n",
           c->out_dir, c->out_dir);
}

int replay_portfolio(replay_config *c)
{
    replay_config mcs[NMEMBERS];
    int used[NMEMBERS] = {0};
    size_t nused = 0;
    for (size_t i = 0; i < NMEMBERS; i++) {
        used[i] = member_config(c, &members[i], &mcs[i]) == 0;
        nused += used[i];
        replay_shard whole = {0};
        if (used[i] && (weft_mkdirs(mcs[i].out_dir) || replay_campaign_write(&mcs[i], &whole)))
            return WEFT_EXIT_FAIL;
        /* A new portfolio: no member resumes an older one's runs. */
        char runs[PATH_MAX + 32];
        snprintf(runs, sizeof runs, "%s/runs.jsonl", mcs[i].out_dir);
        unlink(runs);
    }
    printf("weft: portfolio of %zu policies (random, pct-d1..d3, pos), %" PRIu64
           " runs in turns of %d seeds, %u job%s -> %s/<policy>/\n",
           nused, c->runs, PORTFOLIO_CHUNK, c->jobs, c->jobs == 1 ? "" : "s", c->out_dir);
    fflush(stdout);
    /* One set of fork servers for every policy: a server's prefix does not
     * depend on the policy (each child catches its own policy up). */
    replay_pool *pool = replay_pool_create(c);
    for (size_t i = 0; i < NMEMBERS; i++)
        mcs[i].pool = pool;
    /* The budget in chunks: each policy its share of every round. */
    uint64_t per = (c->runs + nused - 1) / (nused ? nused : 1), status = WEFT_EXIT_OK;
    int hit = 0;
    for (uint64_t done = 0; done < per && !(hit && c->stop_on_hit);) {
        uint64_t chunk = per - done < PORTFOLIO_CHUNK ? per - done : PORTFOLIO_CHUNK;
        done += chunk;
        for (size_t i = 0; i < NMEMBERS && !(hit && c->stop_on_hit); i++) {
            if (!used[i])
                continue;
            mcs[i].runs = done;
            int rc = replay_campaign(&mcs[i]);
            if (rc == 10)
                hit = 1, status = 10;
            else if (rc != WEFT_EXIT_OK) {
                replay_pool_destroy(pool);
                return rc;
            }
        }
    }
    replay_pool_destroy(pool);
    print_table(c, mcs, used);
    if (hit && c->stop_on_hit)
        printf("weft: stopped at the first hit (--stop-on-hit)\n");
    return (int)status;
}
