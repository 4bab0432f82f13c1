/* The summary of a campaign, computed from its runs.jsonl alone (so files
 * of several campaigns with the same configuration can be concatenated and
 * summarized together). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "weft/replay.h"
#include "weft/search.h"

typedef struct run_row {
    uint64_t seed, line;
    int verdict;
    int64_t steps, overrides;
    uint64_t yield_steps; /* of steps, those k leaves out */
    uint64_t threads, makespan;
    double wall;
    int duplicate; /* pb, db: the schedule repeated one with fewer deviations */
    int departed;  /* a gate gave up waiting: the run left the policy's order */
} run_row;

static int cmp_row(const void *a, const void *b)
{
    const run_row *x = a, *y = b;
    if (x->seed != y->seed)
        return x->seed < y->seed ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int same_config(replay_summary *s, json_t *o, int first, char *err, size_t errlen,
                       uint64_t line)
{
    const char *policy = json_string_value(json_object_get(o, "policy"));
    const char *points = json_string_value(json_object_get(o, "points"));
    uint64_t depth = (uint64_t)json_integer_value(json_object_get(o, "depth"));
    uint64_t radius = (uint64_t)json_integer_value(json_object_get(o, "radius"));
    uint64_t n = (uint64_t)json_integer_value(json_object_get(o, "n"));
    uint64_t k = (uint64_t)json_integer_value(json_object_get(o, "k"));
    if (!policy || !points) {
        snprintf(err, errlen, "line %" PRIu64 ": no policy or points field", line);
        return -1;
    }
    if (first) {
        snprintf(s->policy, sizeof s->policy, "%s", policy);
        snprintf(s->points, sizeof s->points, "%s", points);
        s->depth = depth;
        s->radius = radius;
        s->n = n;
        s->k = k;
        return 0;
    }
    if (strcmp(s->policy, policy) || strcmp(s->points, points) || s->depth != depth ||
        s->radius != radius || s->n != n || s->k != k) {
        snprintf(err, errlen,
                 "line %" PRIu64 ": configuration %s d=%" PRIu64 " n=%" PRIu64 " k=%" PRIu64
                 " points %s differs from the first line's %s d=%" PRIu64 " n=%" PRIu64
                 " k=%" PRIu64 " points %s: summarize one configuration at a time",
                 line, policy, depth, n, k, points, s->policy, s->depth, s->n, s->k, s->points);
        weft_one_line(err); /* the names are the file's: a "\n" in one is a newline */
        return -1;
    }
    return 0;
}

typedef struct row_list {
    run_row *v;
    size_t n, cap;
} row_list;

/* Adds the run of one parsed line to rows. Returns 1 if the line is not a
 * finished run (it is skipped), 0 if added, -1 with err if its configuration
 * differs from the first run's or memory ran out. */
static int take_row(replay_summary *s, json_t *o, uint64_t lineno, row_list *rows, char *err,
                    size_t errlen)
{
    replay_verdict v;
    json_t *seed = json_object_get(o, "seed");
    if (!json_is_integer(seed) ||
        replay_verdict_parse(json_string_value(json_object_get(o, "verdict")), &v))
        return 1;
    if (same_config(s, o, rows->n == 0, err, errlen, lineno))
        return -1;
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 256;
        run_row *n = realloc(rows->v, cap * sizeof *n);
        if (!n) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        rows->v = n;
        rows->cap = cap;
    }
    json_t *st = json_object_get(o, "steps"), *ov = json_object_get(o, "overrides");
    json_int_t ys = json_integer_value(json_object_get(o, "yield_steps"));
    rows->v[rows->n++] = (run_row){
        .seed = (uint64_t)json_integer_value(seed),
        .line = lineno,
        .verdict = (int)v,
        .steps = json_is_integer(st) ? json_integer_value(st) : -1,
        .overrides = json_is_integer(ov) ? json_integer_value(ov) : -1,
        .yield_steps = ys > 0 ? (uint64_t)ys : 0,
        .threads = (uint64_t)json_integer_value(json_object_get(o, "threads")),
        .makespan = (uint64_t)json_integer_value(json_object_get(o, "makespan_ns")),
        .wall = json_number_value(json_object_get(o, "wall_s")),
        .duplicate = !strcmp(
            json_string_value(json_object_get(json_object_get(o, "schedule"), "status")) ?: "",
            "duplicate"),
        .departed = json_integer_value(json_object_get(o, "departures")) > 0};
    return 0;
}

/* The finished runs of path, all of one configuration (recorded in s). */
static int read_rows(const char *path, replay_summary *s, row_list *rows, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %m", path);
        weft_one_line(err);
        return -1;
    }
    char *buf = NULL;
    size_t blen = 0;
    ssize_t got;
    uint64_t lineno = 0;
    int rc = 0;
    while ((got = getline(&buf, &blen, f)) > 0) {
        lineno++;
        if (buf[got - 1] != '\n') {
            /* a line cut short by a kill: not a finished run */
            weft_error("%s:%" PRIu64 ": a line cut short, left out (a run killed as it was "
                       "written; --resume runs it again)",
                       path, lineno);
            break;
        }
        json_t *o = json_loads(buf, 0, NULL);
        if (!o) {
            weft_error("%s:%" PRIu64 ": not a run's line (damaged), left out", path, lineno);
            continue;
        }
        int took = take_row(s, o, lineno, rows, err, errlen);
        json_decref(o);
        if (took < 0) {
            rc = -1;
            break;
        }
    }
    free(buf);
    fclose(f);
    return rc;
}

/* Counts, maxima and means over rows sorted by seed. */
static void tally_rows(replay_summary *s, const run_row *rows, size_t nrows)
{
    double steps_sum = 0, makespan_sum = 0;
    uint64_t steps_n = 0;
    for (size_t i = 0; i < nrows; i++) {
        if (i && rows[i].seed == rows[i - 1].seed)
            continue; /* a seed run twice counts once: the schedule is the same */
        const run_row *r = &rows[i];
        if (s->runs == 0)
            s->seed_min = r->seed;
        s->seed_max = r->seed;
        s->runs++;
        s->verdicts[r->verdict]++;
        s->timeouts += r->verdict == REPLAY_TIMEOUT;
        if (replay_verdict_is_hit((replay_verdict)r->verdict)) {
            s->hits++;
            if (s->first_hit_seed == UINT64_MAX) {
                s->first_hit_seed = r->seed;
                s->complete_prefix = r->seed - s->seed_min + 1 == s->runs;
            }
        }
        if (r->overrides == 0)
            s->runs_without_override++;
        s->duplicates += r->duplicate;
        s->runs_departed += r->departed;
        if (r->steps >= 0) {
            steps_sum += (double)r->steps;
            steps_n++;
            if ((uint64_t)r->steps > s->steps_max)
                s->steps_max = (uint64_t)r->steps;
            /* k leaves out the steps that resumed a yielding thread; so does this */
            uint64_t kept =
                (uint64_t)r->steps -
                (r->yield_steps < (uint64_t)r->steps ? r->yield_steps : (uint64_t)r->steps);
            s->runs_beyond_k += s->k && kept > s->k;
            if (kept > s->kept_steps_max)
                s->kept_steps_max = kept;
        }
        if (r->threads > s->threads_max)
            s->threads_max = r->threads;
        makespan_sum += (double)r->makespan;
        s->wall_total_s += r->wall;
    }
    s->steps_mean = steps_n ? steps_sum / (double)steps_n : 0;
    s->makespan_mean_ns = makespan_sum / (double)s->runs;
    s->wall_mean_s = s->wall_total_s / (double)s->runs;
}

int replay_summary_read(const char *path, replay_summary *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->first_hit_seed = UINT64_MAX;
    row_list rows = {0};
    if (read_rows(path, s, &rows, err, errlen)) {
        free(rows.v);
        return -1;
    }
    if (rows.n == 0) {
        free(rows.v);
        snprintf(err, errlen, "%s: no finished runs", path);
        return -1;
    }
    qsort(rows.v, rows.n, sizeof *rows.v, cmp_row);
    tally_rows(s, rows.v, rows.n);
    free(rows.v);
    s->hit_rate = (double)s->hits / (double)s->runs;
    search_clopper_pearson(s->hits, s->runs, 0.95, &s->ci_lo, &s->ci_hi);
    pct_kind kind;
    s->bound = pct_kind_parse(s->policy, &kind) == 0
                   ? pct_guarantee(kind, s->n, s->k, s->depth, s->radius)
                   : 0;
    return 0;
}

/* Dump o (consumed) with a final newline, atomically. */
static int write_json(json_t *o, const char *path, char *err, size_t errlen)
{
    char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(o);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t len = strlen(text);
    char *t2 = realloc(text, len + 2);
    if (t2) {
        text = t2;
        text[len++] = '\n';
        text[len] = 0;
    }
    int rc = weft_write_atomic(path, text, len, err, errlen);
    free(text);
    return rc;
}

/* No wall time in here: a summary is a function of the runs' lines alone, so
 * shards merged with weft merge give the same bytes as one campaign. */
int replay_summary_write(const replay_summary *s, const char *path, char *err, size_t errlen)
{
    json_t *o = json_object();
    json_object_set_new(o, "policy", json_string(s->policy));
    json_object_set_new(o, "depth", json_integer((json_int_t)s->depth));
    json_object_set_new(
        o, "radius", strcmp(s->policy, "rpro") ? json_null() : json_integer((json_int_t)s->radius));
    json_object_set_new(o, "n", json_integer((json_int_t)s->n));
    json_object_set_new(o, "k", json_integer((json_int_t)s->k));
    json_object_set_new(o, "points", json_string(s->points));
    json_object_set_new(o, "runs", json_integer((json_int_t)s->runs));
    json_object_set_new(o, "hits", json_integer((json_int_t)s->hits));
    json_object_set_new(o, "hit_rate", json_real(s->hit_rate));
    json_object_set_new(o, "ci95", json_pack("[f,f]", s->ci_lo, s->ci_hi));
    json_object_set_new(o, "bound", json_real(s->bound));
    json_object_set_new(o, "runs_without_override",
                        json_integer((json_int_t)s->runs_without_override));
    json_object_set_new(o, "runs_beyond_k", json_integer((json_int_t)s->runs_beyond_k));
    if (!strcmp(s->policy, "pb") || !strcmp(s->policy, "db"))
        json_object_set_new(o, "duplicates", json_integer((json_int_t)s->duplicates));
    json_object_set_new(o, "timeouts", json_integer((json_int_t)s->timeouts));
    json_object_set_new(o, "runs_departed", json_integer((json_int_t)s->runs_departed));
    json_t *v = json_object();
    for (int i = 0; i < REPLAY_VERDICT_COUNT; i++)
        json_object_set_new(v, replay_verdict_name((replay_verdict)i),
                            json_integer((json_int_t)s->verdicts[i]));
    json_object_set_new(o, "verdicts", v);
    json_object_set_new(o, "seeds",
                        json_pack("[I,I]", (json_int_t)s->seed_min, (json_int_t)s->seed_max));
    json_object_set_new(o, "first_hit_seed",
                        s->first_hit_seed == UINT64_MAX
                            ? json_null()
                            : json_integer((json_int_t)s->first_hit_seed));
    json_object_set_new(o, "runs_to_first_hit",
                        s->first_hit_seed != UINT64_MAX && s->complete_prefix
                            ? json_integer((json_int_t)(s->first_hit_seed - s->seed_min + 1))
                            : json_null());
    json_object_set_new(o, "steps_mean", json_real(s->steps_mean));
    json_object_set_new(o, "steps_max", json_integer((json_int_t)s->steps_max));
    json_object_set_new(o, "kept_steps_max", json_integer((json_int_t)s->kept_steps_max));
    json_object_set_new(o, "threads_max", json_integer((json_int_t)s->threads_max));
    json_object_set_new(o, "makespan_ns_mean", json_real(s->makespan_mean_ns));
    return write_json(o, path, err, errlen);
}

int replay_timing_write(const replay_summary *s, const char *path, double campaign_wall_s,
                        char *err, size_t errlen)
{
    json_t *o = json_object();
    json_object_set_new(o, "runs", json_integer((json_int_t)s->runs));
    json_object_set_new(o, "wall_s_per_run", json_real(s->wall_mean_s));
    json_object_set_new(o, "wall_s_runs_total", json_real(s->wall_total_s));
    json_object_set_new(o, "wall_s_campaign",
                        campaign_wall_s >= 0 ? json_real(campaign_wall_s) : json_null());
    return write_json(o, path, err, errlen);
}

static const char *bound_formula(const char *policy, uint64_t d)
{
    if (!strcmp(policy, "pct") || !strcmp(policy, "ppct"))
        return d == 1 ? "1/n" : "1/(n k^(d-1))";
    if (!strcmp(policy, "rpro"))
        return d == 1 ? "1/n" : "1/(n k (2r)^(d-2))";
    return NULL;
}

void replay_summary_print(const replay_summary *s, FILE *out)
{
    fprintf(out, "summary: %s", s->policy);
    /* Only the priority policies have a depth (random and pos printed 3). */
    if (!strcmp(s->policy, "pct") || !strcmp(s->policy, "ppct") || !strcmp(s->policy, "rpro"))
        fprintf(out, ", depth %" PRIu64, s->depth);
    if (!strcmp(s->policy, "rpro"))
        fprintf(out, ", radius %" PRIu64, s->radius);
    fprintf(out, ", n = %" PRIu64, s->n);
    if (strcmp(s->policy, "random") && strcmp(s->policy, "pos")) /* they use no k */
        fprintf(out, ", k = %" PRIu64, s->k);
    fprintf(out, ", points %s; seeds %" PRIu64 "..%" PRIu64 "\n", s->points, s->seed_min,
            s->seed_max);
    fprintf(out, "  runs      %" PRIu64 "\n", s->runs);
    fprintf(out,
            "  hits      %" PRIu64 " = %.4g%% (95%% Clopper-Pearson interval %.4g%% .. %.4g%%)%s\n",
            s->hits, 100 * s->hit_rate, 100 * s->ci_lo, 100 * s->ci_hi,
            s->timeouts ? "; timeouts are not counted as hits" : "");
    if (s->timeouts)
        fprintf(out,
                "  timeouts  %" PRIu64 " (livelock, or a --timeout too short for the program)\n",
                s->timeouts);
    fprintf(out, "  verdicts ");
    for (int i = 0; i < REPLAY_VERDICT_COUNT; i++)
        if (s->verdicts[i])
            fprintf(out, " %s %" PRIu64, replay_verdict_name((replay_verdict)i), s->verdicts[i]);
    fprintf(out, "\n");
    const char *f = bound_formula(s->policy, s->depth);
    if (f) {
        fprintf(out,
                "  bound     %.4g%% per run = %s for a depth-%" PRIu64 " bug%s (runs without a "
                "starvation override or yield demotion: %" PRIu64 ")\n",
                100 * s->bound, f, s->depth,
                !strcmp(s->policy, "rpro") && s->depth > 1 ? " within the radius" : "",
                s->runs_without_override);
        /* The bound is for runs the override left alone: with none, a
         * line about the runs beyond k would name runs it does not cover. */
        if (s->runs && !s->runs_without_override)
            fprintf(out,
                    "  overrides every run had a starvation override (one choice in a thousand "
                    "by default, --starvation; up to %" PRIu64
                    " steps a run here) or a thread moved down for yielding, sleeping or "
                    "waiting with a timeout (runs.jsonl's overrides counts both): the bound "
                    "covers none of them\n",
                    s->steps_max);
        else if (s->runs_beyond_k)
            fprintf(out,
                    "  beyond k  %" PRIu64 " run%s took more than k = %" PRIu64
                    " steps (up to %" PRIu64 ", both without the steps that resumed a yielding "
                    "thread): the bound speaks only of the other %" PRIu64 "%s\n",
                    s->runs_beyond_k, s->runs_beyond_k == 1 ? "" : "s", s->k, s->kept_steps_max,
                    s->runs - s->runs_beyond_k,
                    s->runs_beyond_k * 10 > s->runs
                        ? "; many: profile with more runs (--profile-runs) or give --steps"
                        : "");
    } else
        fprintf(out, "  bound     none claimed for %s\n", s->policy);
    if (s->runs_departed)
        fprintf(out,
                "  departed  %" PRIu64 " run%s left the policy's order where a gate gave up "
                "waiting (the host stalled, or a thread was stuck in qemu): %s not repeat by "
                "seed (departures in runs.jsonl)\n",
                s->runs_departed, s->runs_departed == 1 ? "" : "s",
                s->runs_departed == 1 ? "it may" : "they may");
    if (!strcmp(s->policy, "pb") || !strcmp(s->policy, "db"))
        fprintf(out,
                "  schedules %" PRIu64 " explored, %" PRIu64
                " of them repeating a schedule with fewer deviations (seeds 1, 2, ... enumerate "
                "bound 0, then 1, ...)\n",
                s->runs, s->duplicates);
    if (s->first_hit_seed != UINT64_MAX) {
        fprintf(out, "  first hit seed %" PRIu64, s->first_hit_seed);
        if (s->complete_prefix)
            fprintf(out, " (run %" PRIu64 " of the seeds from %" PRIu64 ")",
                    s->first_hit_seed - s->seed_min + 1, s->seed_min);
        fprintf(out, "\n");
    }
    fprintf(out,
            "  per run   %.3f s wall, %.0f schedule points (max %" PRIu64
            "), virtual makespan %.0f ns\n",
            s->wall_mean_s, s->steps_mean, s->steps_max, s->makespan_mean_ns);
}
