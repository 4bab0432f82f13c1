/* The portfolio: `weft replay` without --sched splits its run budget over
 * several policies, since no one policy finds every bug shape first
 * (random walks find shallow races, PCT's change points deep orders, POS
 * races between far-apart events). Each policy is an ordinary campaign in
 * its own folder, run a chunk of seeds at a time in turn, so that a bug any
 * of them finds early is found early whatever the order. */
#include <inttypes.h>
#include <stdlib.h>

#include <jansson.h>
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

/* The order the members' chunks of seeds ran in, to count the runs to the
 * portfolio's first bug across members. */
typedef struct chunk {
    size_t member;
    uint64_t lo, hi;
} chunk;
typedef struct chunk_log {
    chunk *v;
    size_t n, cap;
} chunk_log;

static void log_chunk(chunk_log *l, size_t member, uint64_t lo, uint64_t hi)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        chunk *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return; /* the overall summary then counts fewer runs; the members are whole */
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = (chunk){member, lo, hi};
}

/* The first bug of member m's runs with a seed in [lo, hi]: its seed and
 * verdict, or 0 if none. */
static int first_bug(const replay_config *m, uint64_t lo, uint64_t hi, uint64_t *seed,
                     char *verdict, size_t vlen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/runs.jsonl", m->out_dir);
    FILE *f = fopen(path, "r");
    char line[8192];
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        uint64_t s = (uint64_t)json_integer_value(json_object_get(o, "seed"));
        replay_verdict v;
        if (o && s >= lo && s <= hi &&
            replay_verdict_parse(json_string_value(json_object_get(o, "verdict")), &v) == 0 &&
            replay_verdict_is_hit(v) && (!found || s < *seed)) {
            found = 1;
            *seed = s;
            snprintf(verdict, vlen, "%s", replay_verdict_name(v));
        }
        json_decref(o);
    }
    if (f)
        fclose(f);
    return found;
}

/* DIR/summary.json for the whole portfolio: runs and hits of all members,
 * and the runs it took to the first bug in the order they ran (what a
 * benchmark compares with one policy's runs_to_first_hit). */
static void write_overall(const replay_config *c, const replay_config *mcs, const chunk_log *l)
{
    uint64_t runs = 0, to_first = 0, first_seed = 0;
    char verdict[32] = "", name[32] = "";
    int found = 0;
    for (size_t i = 0; i < l->n; i++) {
        const chunk *ch = &l->v[i];
        uint64_t s = 0;
        if (!found && first_bug(&mcs[ch->member], ch->lo, ch->hi, &s, verdict, sizeof verdict)) {
            found = 1;
            to_first = runs + (s - ch->lo + 1);
            first_seed = s;
            member_name(&members[ch->member], name, sizeof name);
        }
        runs += ch->hi - ch->lo + 1;
    }
    json_t *o = json_pack("{s:s, s:I, s:I, s:s, s:I}", "policy", "portfolio", "n", (json_int_t)c->n,
                          "k", (json_int_t)c->k, "points", replay_points_name(c->points), "runs",
                          (json_int_t)runs);
    json_object_set_new(o, "runs_to_first_hit",
                        found ? json_integer((json_int_t)to_first) : json_null());
    json_object_set_new(o, "first_hit_seed",
                        found ? json_integer((json_int_t)first_seed) : json_null());
    json_object_set_new(o, "first_hit_policy", found ? json_string(name) : json_null());
    json_object_set_new(o, "first_hit_verdict", found ? json_string(verdict) : json_null());
    char *text = json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    char path[PATH_MAX + 32], err[512];
    snprintf(path, sizeof path, "%s/summary.json", c->out_dir);
    if (!text || weft_write_atomic(path, text, strlen(text), err, sizeof err))
        weft_error("%s", text ? err : "out of memory");
    free(text);
}

static void print_table(const replay_config *c, const replay_config *mcs, const int *used)
{
    /* The runs made: each policy's share is rounded up, and --stop-on-hit
     * may have ended them early. */
    uint64_t total = 0, hits = 0;
    size_t nused = 0;
    for (size_t i = 0; i < NMEMBERS; i++) {
        char path[PATH_MAX + 32], err[512];
        replay_summary s;
        snprintf(path, sizeof path, "%s/runs.jsonl", mcs[i].out_dir);
        nused += used[i] != 0;
        if (used[i] && replay_summary_read(path, &s, err, sizeof err) == 0) {
            total += s.runs;
            hits += s.hits;
        }
    }
    printf("portfolio: %" PRIu64 " runs over %zu policies, n = %" PRIu64 ", k = %" PRIu64
           ", points %s\n",
           total, nused, c->n, c->k, replay_points_name(c->points));
    printf("  %-8s %6s %6s %9s  %-27s %s\n", "policy", "runs", "hits", "rate",
           "95% Clopper-Pearson", "first hit seed");
    for (size_t i = 0; i < NMEMBERS; i++) {
        char name[32], path[PATH_MAX + 32], err[512];
        member_name(&members[i], name, sizeof name);
        replay_summary s;
        snprintf(path, sizeof path, "%s/runs.jsonl", mcs[i].out_dir);
        if (!used[i]) {
            printf("  %-8s %6s  (not run: depth %" PRIu64 " needs k >= %" PRIu64 ")\n", name, "-",
                   members[i].depth, members[i].depth - 1);
            continue;
        }
        if (replay_summary_read(path, &s, err, sizeof err)) {
            printf("  %-8s %6s  (no run: the portfolio stopped at the first hit)\n", name, "-");
            continue;
        }
        char ci[64], first[32] = "-";
        snprintf(ci, sizeof ci, "%.3g%% .. %.3g%%", 100 * s.ci_lo, 100 * s.ci_hi);
        if (s.first_hit_seed != UINT64_MAX)
            snprintf(first, sizeof first, "%" PRIu64, s.first_hit_seed);
        printf("  %-8s %6" PRIu64 " %6" PRIu64 " %8.3g%%  %-27s %s\n", name, s.runs, s.hits,
               100 * s.hit_rate, ci, first);
    }
    if (!hits && total)
        printf("  no bug    no run failed; each interval bounds its policy's hit rate, and a "
               "rarer bug needs more runs (--runs N, shared; --for SEC)\n");
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
    /* The budget in chunks: each policy its share of every round, rounded up. */
    uint64_t per = (c->runs + nused - 1) / (nused ? nused : 1), status = WEFT_EXIT_OK;
    if (c->deadline && !c->runs_given)
        printf("weft: portfolio of %zu policies (random, pct-d1..d3, pos), as many runs as --for "
               "%" PRIu64 " s allows, in turns of %d seeds, %u job%s -> %s/<policy>/\n",
               nused, c->budget_s, PORTFOLIO_CHUNK, c->jobs, c->jobs == 1 ? "" : "s", c->out_dir);
    else
        printf("weft: portfolio of %zu policies (random, pct-d1..d3, pos), %" PRIu64
               " runs (%" PRIu64 " each: --runs %" PRIu64 " shared%s%s) in turns of %d seeds, %u "
               "job%s -> %s/<policy>/\n",
               nused, per * nused, per, c->runs, c->runs_given ? "" : ", the default",
               c->deadline ? ", while --for allows" : "", PORTFOLIO_CHUNK, c->jobs,
               c->jobs == 1 ? "" : "s", c->out_dir);
    fflush(stdout);
    /* One set of fork servers for every policy: a server's prefix does not
     * depend on the policy (each child catches its own policy up). */
    replay_pool *pool = replay_pool_create(c);
    for (size_t i = 0; i < NMEMBERS; i++)
        mcs[i].pool = pool;
    int hit = 0, out_of_time = 0;
    chunk_log log = {0};
    for (uint64_t done = 0; done < per && !(hit && c->stop_on_hit) && !out_of_time;) {
        uint64_t chunk = per - done < PORTFOLIO_CHUNK ? per - done : PORTFOLIO_CHUNK;
        for (size_t i = 0; i < NMEMBERS && !(hit && c->stop_on_hit); i++) {
            if (!used[i])
                continue;
            if (c->deadline && weft_now_s() >= c->deadline) {
                out_of_time = 1;
                break;
            }
            mcs[i].runs = done + chunk;
            int rc = replay_campaign(&mcs[i]);
            if (rc == 10)
                hit = 1, status = 10;
            else if (rc != WEFT_EXIT_OK) {
                replay_pool_destroy(pool);
                free(log.v);
                return rc;
            }
            log_chunk(&log, i, c->first_seed + done, c->first_seed + done + chunk - 1);
        }
        done += chunk;
    }
    replay_pool_destroy(pool);
    write_overall(c, mcs, &log);
    free(log.v);
    print_table(c, mcs, used);
    if (hit && c->stop_on_hit)
        printf("weft: stopped at the first hit (--stop-on-hit)\n");
    else if (out_of_time || (c->deadline && weft_now_s() >= c->deadline))
        printf("weft: no run started after %" PRIu64 " s (--for)\n", c->budget_s);
    return (int)status;
}
