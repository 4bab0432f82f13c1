/* A campaign's folder: campaign.json (what it was run with, for --resume,
 * weft merge and weft report) and shards of its seed range. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/replay.h"

/* Contiguous seed ranges: shard I of N runs offsets floor((I-1)R/N) up to
 * floor(IR/N) of the campaign's R seeds, so each shard is itself an ordinary
 * campaign over one range (see docs/scale-out.md for why not seed mod N). */
int replay_shard_apply(replay_config *c, replay_shard *sh)
{
    sh->first_seed = c->first_seed;
    sh->runs = c->runs;
    uint64_t lo = (sh->index - 1) * c->runs / sh->count, hi = sh->index * c->runs / sh->count;
    if (hi == lo) {
        weft_error("--shard %" PRIu64 "/%" PRIu64 ": %" PRIu64 " runs split %" PRIu64
                   " ways leave this shard no seed",
                   sh->index, sh->count, c->runs, sh->count);
        return -1;
    }
    c->first_seed += lo;
    c->runs = hi - lo;
    return 0;
}

/* campaign.json: what a campaign in DIR was run with, for --resume. */
int replay_campaign_write(const replay_config *c, const replay_shard *sh)
{
    json_t *argv = json_array();
    for (int i = 0; i < c->run.argc; i++)
        json_array_append_new(argv, json_string(c->run.argv[i]));
    json_t *o = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:s, s:s, s:I, s:f, s:b, s:I, s:I, s:i, s:s?, s:o}", "policy",
        pct_kind_name(c->kind), "depth", (json_int_t)c->depth, "radius", (json_int_t)c->radius, "k",
        (json_int_t)c->k, "n", (json_int_t)c->n, "points", replay_points_name(c->points),
        "pcs_file", c->points != POINTS_NONE && c->points != POINTS_ALL ? c->pcs_path : "",
        "pcs_count", (json_int_t)c->npcs, "starvation", c->starvation, "host_parallel",
        c->host_parallel, "first_seed", (json_int_t)c->first_seed, "runs", (json_int_t)c->runs,
        "expect_exit", c->expect_exit, "expect_output", c->expect_output, "argv", argv);
    /* What weft report and weft merge need to rebuild reproduction commands
     * and to tell shards of one campaign apart. */
    json_object_set_new(o, "timeout", json_integer(c->timeout));
    /* Only when given: campaigns from before the option compare equal. */
    if (c->real_sleeps)
        json_object_set_new(o, "real_sleeps", json_true());
    if (c->real_random)
        json_object_set_new(o, "real_random", json_true());
    if (c->max_threads)
        json_object_set_new(o, "max_threads", json_integer(c->max_threads));
    /* Seeds by time (--for without --runs): "runs" is only the range's end. */
    if (c->deadline && !c->runs_given)
        json_object_set_new(o, "for_s", json_integer((json_int_t)c->budget_s));
    json_object_set_new(o, "k_source",
                        json_string(c->k_source[0] ? c->k_source
                                    : c->k_given   ? "--steps"
                                                   : "the resumed campaign's"));
    json_object_set_new(o, "bound",
                        c->kind == PCT_KIND_PB || c->kind == PCT_KIND_DB
                            ? json_integer((json_int_t)c->max_bound)
                            : json_null());
    json_object_set_new(o, "sysroot", c->run.sysroot ? json_string(c->run.sysroot) : json_null());
    json_object_set_new(o, "shard",
                        sh->index
                            ? json_pack("{s:I, s:I, s:I, s:I}", "index", (json_int_t)sh->index,
                                        "count", (json_int_t)sh->count, "first_seed",
                                        (json_int_t)sh->first_seed, "runs", (json_int_t)sh->runs)
                            : json_null());
    char *text = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
    json_decref(o);
    char path[PATH_MAX + 32], err[512];
    snprintf(path, sizeof path, "%s/campaign.json", c->out_dir);
    int rc = text ? weft_write_atomic(path, text, strlen(text), err, sizeof err) : -1;
    if (rc)
        weft_error("%s", text ? err : "out of memory");
    free(text);
    return rc;
}

/* The first option campaign.json (o) was run with that differs from c's, in
 * what, or "" if none does. */
static void first_difference(const replay_config *c, json_t *o, char *what, size_t len)
{
    const char *policy = json_string_value(json_object_get(o, "policy"));
    const char *points = json_string_value(json_object_get(o, "points"));
    uint64_t depth = (uint64_t)json_integer_value(json_object_get(o, "depth"));
    uint64_t radius = (uint64_t)json_integer_value(json_object_get(o, "radius"));
    uint64_t k = (uint64_t)json_integer_value(json_object_get(o, "k"));
    uint64_t n = (uint64_t)json_integer_value(json_object_get(o, "n"));
    json_t *argv = json_object_get(o, "argv");
    what[0] = 0;
    if (!policy || strcmp(policy, pct_kind_name(c->kind)))
        snprintf(what, len, "--sched %s", policy ? policy : "?");
    else if (depth != c->depth)
        snprintf(what, len, "--depth %" PRIu64, depth);
    else if (c->kind == PCT_KIND_RPRO && c->radius_given && radius != c->radius)
        snprintf(what, len, "--radius %" PRIu64, radius);
    else if (!points || strcmp(points, replay_points_name(c->points)))
        snprintf(what, len, "--points %s", points ? points : "?");
    else if ((c->k_given && k != c->k) || (c->n_given && n != c->n))
        snprintf(what, len, "--steps %" PRIu64 " --threads %" PRIu64, k, n);
    else if (json_number_value(json_object_get(o, "starvation")) != c->starvation)
        snprintf(what, len, "--starvation %g", json_number_value(json_object_get(o, "starvation")));
    else if (json_integer_value(json_object_get(o, "expect_exit")) != c->expect_exit)
        snprintf(what, len, "--expect-exit %" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(o, "expect_exit")));
    else if (json_array_size(argv) != (size_t)c->run.argc)
        snprintf(what, len, "another program or arguments");
    for (int i = 0; !what[0] && i < c->run.argc; i++) {
        const char *a = json_string_value(json_array_get(argv, (size_t)i));
        if (!a || strcmp(a, c->run.argv[i]))
            snprintf(what, len, "another program or arguments");
    }
}

/* The campaign's points file, when the points are to come from it: it
 * must still be there. */
static int take_points_file(replay_config *c, json_t *o)
{
    if (!(c->points == POINTS_SHARED || (c->points == POINTS_VISIBLE && !c->pcs_path[0])))
        return 0;
    snprintf(c->pcs_path, sizeof c->pcs_path, "%s",
             json_string_value(json_object_get(o, "pcs_file")));
    c->npcs = (uint64_t)json_integer_value(json_object_get(o, "pcs_count"));
    if (access(c->pcs_path, R_OK) != 0) {
        weft_error("--resume: %s: %s", c->pcs_path, strerror(errno));
        return -1;
    }
    return 0;
}

/* A shard resumes as the same shard; stored is campaign.json's shard (all
 * 0 if it was not one). */
static int resume_shard(replay_config *c, replay_shard *sh, const replay_shard *stored)
{
    if (sh->index && (stored->index != sh->index || stored->count != sh->count)) {
        if (stored->index)
            weft_error("--resume: the campaign in %s is shard %" PRIu64 "/%" PRIu64 ", not %" PRIu64
                       "/%" PRIu64,
                       c->out_dir, stored->index, stored->count, sh->index, sh->count);
        else
            weft_error("--resume: the campaign in %s is not a shard: resume it without --shard",
                       c->out_dir);
        return -1;
    }
    if (sh->index) {
        /* The shard's range is cut again from the whole campaign's. */
        if (!c->runs_given)
            c->runs = stored->runs;
        if (!c->first_given)
            c->first_seed = stored->first_seed;
    } else {
        *sh = *stored; /* resumed without --shard: still that shard */
    }
    return 0;
}

/* --resume: take k, n, points and the seed range from campaign.json unless
 * given, and refuse a different configuration. */
int replay_campaign_load(replay_config *c, replay_shard *sh)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/campaign.json", c->out_dir);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    if (!o) {
        weft_error("--resume: %s: %s (no campaign to continue)", path, je.text);
        return -1;
    }
    char what[128];
    first_difference(c, o, what, sizeof what);
    if (what[0]) {
        weft_error("--resume: the campaign in %s was run with %s: resume it with the same "
                   "options",
                   c->out_dir, what);
        json_decref(o);
        return -1;
    }
    c->k = (uint64_t)json_integer_value(json_object_get(o, "k"));
    c->n = (uint64_t)json_integer_value(json_object_get(o, "n"));
    c->radius = (uint64_t)json_integer_value(json_object_get(o, "radius"));
    if (take_points_file(c, o)) {
        json_decref(o);
        return -1;
    }
    if (!c->runs_given && json_object_get(o, "for_s") && !c->deadline) {
        weft_error("--resume: the campaign in %s ran as long as --for %" JSON_INTEGER_FORMAT
                   " s allowed: give --for SEC or --runs N to say how much more",
                   c->out_dir, json_integer_value(json_object_get(o, "for_s")));
        json_decref(o);
        return -1;
    }
    if (!c->runs_given)
        c->runs = (uint64_t)json_integer_value(json_object_get(o, "runs"));
    if (!c->first_given)
        c->first_seed = (uint64_t)json_integer_value(json_object_get(o, "first_seed"));
    json_t *js = json_object_get(o, "shard");
    replay_shard stored = {0};
    if (json_is_object(js))
        stored = (replay_shard){(uint64_t)json_integer_value(json_object_get(js, "index")),
                                (uint64_t)json_integer_value(json_object_get(js, "count")),
                                (uint64_t)json_integer_value(json_object_get(js, "first_seed")),
                                (uint64_t)json_integer_value(json_object_get(js, "runs"))};
    json_decref(o);
    return resume_shard(c, sh, &stored);
}
