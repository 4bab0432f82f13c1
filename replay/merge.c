/* Merging campaigns: combine the runs of campaign shards (weft replay --shard I/N,
 * or plain campaigns of one configuration) into one campaign folder whose
 * summary is computed from the union by the same code as an unsharded
 * campaign's. See docs/scale-out.md. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/replay.h"

/* campaign.json keys that must agree: anything that changes what a seed does
 * or how its run is judged. first_seed, runs, pcs_file and shard may differ. */
static const char *const same_keys[] = {
    "policy",        "depth",      "radius",        "k",           "n",           "points",
    "pcs_count",     "starvation", "host_parallel", "real_sleeps", "real_random", "expect_exit",
    "expect_output", "argv",       "timeout",       "sysroot",     "bound",       "max_threads"};

typedef struct merge_dir {
    const char *path;
    char real[PATH_MAX];
    json_t *campaign;
    uint64_t lo, hi;       /* seeds it was meant to cover: [lo, hi] */
    uint64_t shard, count; /* shard index/count, 0 if not a shard */
} merge_dir;

static char *dump_any(json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    return s ? s : strdup("(missing)");
}

static int load_dir(merge_dir *d)
{
    char path[PATH_MAX + 32];
    if (!realpath(d->path, d->real)) {
        weft_error("%s: %s", d->path, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/campaign.json", d->path);
    json_error_t je;
    d->campaign = json_load_file(path, 0, &je);
    if (!json_is_object(d->campaign)) {
        weft_error("%s: %s (not a weft replay campaign folder)", path,
                   d->campaign ? "not a JSON object" : je.text);
        return -1;
    }
    json_t *c = d->campaign, *sh = json_object_get(c, "shard");
    if (json_is_object(sh)) {
        d->shard = (uint64_t)json_integer_value(json_object_get(sh, "index"));
        d->count = (uint64_t)json_integer_value(json_object_get(sh, "count"));
        d->lo = (uint64_t)json_integer_value(json_object_get(sh, "first_seed"));
        d->hi = d->lo + (uint64_t)json_integer_value(json_object_get(sh, "runs")) - 1;
    } else {
        d->lo = (uint64_t)json_integer_value(json_object_get(c, "first_seed"));
        d->hi = d->lo + (uint64_t)json_integer_value(json_object_get(c, "runs")) - 1;
    }
    return 0;
}

static int slurp(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    *buf = NULL;
    *len = 0;
    size_t cap = 0, got;
    char chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (*len + got > cap) {
            cap = (*len + got) * 2;
            char *n = realloc(*buf, cap);
            if (!n) {
                free(*buf);
                fclose(f);
                return -1;
            }
            *buf = n;
        }
        memcpy(*buf + *len, chunk, got);
        *len += got;
    }
    fclose(f);
    return 0;
}

/* The settings of every DIR against the first's; one line on a mismatch. */
static int check_same(merge_dir *d, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        for (size_t k = 0; k < sizeof same_keys / sizeof *same_keys; k++) {
            json_t *a = json_object_get(d[0].campaign, same_keys[k]);
            json_t *b = json_object_get(d[i].campaign, same_keys[k]);
            if ((a || b) && !(a && b && json_equal(a, b))) {
                char *sa = dump_any(a), *sb = dump_any(b);
                weft_error("merge: %s was run with %s %s, %s with %s %s: only campaigns of one "
                           "configuration merge",
                           d[i].path, same_keys[k], sb, d[0].path, same_keys[k], sa);
                free(sa), free(sb);
                return -1;
            }
        }
        if (d[i].count != d[0].count || (d[0].count && d[i].lo != d[0].lo) ||
            (d[0].count && d[i].hi != d[0].hi)) {
            weft_error("merge: %s and %s are not shards of one campaign (shard %" PRIu64 "/%" PRIu64
                       " of seeds %" PRIu64 "..%" PRIu64 " vs %" PRIu64 "/%" PRIu64 " of %" PRIu64
                       "..%" PRIu64 ")",
                       d[i].path, d[0].path, d[i].shard, d[i].count, d[i].lo, d[i].hi, d[0].shard,
                       d[0].count, d[0].lo, d[0].hi);
            return -1;
        }
    }
    /* Shards that profiled separately must have chosen the same points. */
    const char *p0 = json_string_value(json_object_get(d[0].campaign, "pcs_file"));
    char *b0 = NULL, *bi = NULL;
    size_t l0 = 0, li = 0;
    if (!p0 || !*p0 || slurp(p0, &b0, &l0))
        return 0;
    for (size_t i = 1; i < n; i++) {
        const char *pi = json_string_value(json_object_get(d[i].campaign, "pcs_file"));
        if (!pi || !*pi || slurp(pi, &bi, &li))
            continue;
        int differ = li != l0 || memcmp(bi, b0, l0);
        free(bi);
        if (differ) {
            weft_error("merge: %s and %s differ: the campaigns' profiling chose different "
                       "schedule points",
                       pi, p0);
            free(b0);
            return -1;
        }
    }
    free(b0);
    return 0;
}

/* Every finished line of DIR/runs.jsonl that names its seed (a line cut
 * short by a kill is not a finished run). */
static int read_runs(merge_dir *d, size_t di, replay_line **lines, size_t *n, size_t *cap)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/runs.jsonl", d->path);
    FILE *f = fopen(path, "r");
    if (!f) {
        weft_error("%s: %s", path, strerror(errno));
        return -1;
    }
    size_t first = *n;
    int rc = replay_lines_read(f, di, lines, n, cap);
    fclose(f);
    if (rc) {
        weft_error("out of memory");
        return -1;
    }
    size_t k = first; /* drop lines without a seed */
    for (size_t i = first; i < *n; i++) {
        if ((*lines)[i].seed == UINT64_MAX) {
            free((*lines)[i].text);
            continue;
        }
        (*lines)[k] = (*lines)[i];
        (*lines)[k].order = k;
        k++;
    }
    *n = k;
    return 0;
}

/* A run's line without its wall time, canonical, for comparing duplicates. */
static char *normalized(const char *text)
{
    json_t *o = json_loads(text, 0, NULL);
    if (!o)
        return strdup(text);
    json_object_del(o, "wall_s");
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return s ? s : strdup(text);
}

/* Copy (hard link when possible) a saved trace into OUT. */
static void copy_trace(const char *from_dir, const char *out, const char *rel)
{
    char src[PATH_MAX * 2], dst[PATH_MAX * 2];
    snprintf(src, sizeof src, "%s/%s", from_dir, rel);
    snprintf(dst, sizeof dst, "%s/%s", out, rel);
    char *slash = strrchr(dst, '/');
    if (slash) {
        *slash = 0;
        weft_mkdirs(dst);
        *slash = '/';
    }
    unlink(dst);
    if (link(src, dst) == 0)
        return;
    char *buf;
    size_t len;
    char err[512];
    if (slurp(src, &buf, &len) == 0) {
        if (weft_write_atomic(dst, buf, len, err, sizeof err))
            weft_error("%s", err);
        free(buf);
    }
}

/* Missing seed ranges: the first few to name, and how many in all. */
#define SHOWN_GAPS 8
typedef struct gap_list {
    uint64_t lo[SHOWN_GAPS], hi[SHOWN_GAPS];
    size_t n;
    uint64_t missing;
} gap_list;

static void gap_add(gap_list *g, uint64_t lo, uint64_t hi)
{
    if (g->n < SHOWN_GAPS)
        g->lo[g->n] = lo, g->hi[g->n] = hi;
    g->n++;
    g->missing += hi - lo + 1;
}

static void gap_print(FILE *f, const gap_list *g)
{
    for (size_t i = 0; i < g->n && i < SHOWN_GAPS; i++) {
        if (g->lo[i] == g->hi[i])
            fprintf(f, "%s%" PRIu64, i ? ", " : "", g->lo[i]);
        else
            fprintf(f, "%s%" PRIu64 "..%" PRIu64, i ? ", " : "", g->lo[i], g->hi[i]);
    }
    if (g->n > SHOWN_GAPS)
        fprintf(f, " and %zu more ranges", g->n - SHOWN_GAPS);
}

/* campaign.json of the merged folder: the settings, the whole range, the
 * merged points file, and where the runs came from. */
static int write_merged_campaign(merge_dir *d, size_t n, const char *out, uint64_t lo, uint64_t hi)
{
    char path[PATH_MAX + 32], err[512];
    json_t *o = json_deep_copy(d[0].campaign);
    json_object_set_new(o, "first_seed", json_integer((json_int_t)lo));
    json_object_set_new(o, "runs", json_integer((json_int_t)(hi - lo + 1)));
    json_object_set_new(o, "shard", json_null());
    const char *pcs = json_string_value(json_object_get(o, "pcs_file"));
    char real[PATH_MAX];
    if (pcs && *pcs) {
        char *buf;
        size_t len;
        /* absolute, as campaigns record it: reproduction commands run anywhere */
        snprintf(path, sizeof path, "%s/points.pcs", realpath(out, real) ? real : out);
        if (slurp(pcs, &buf, &len) == 0) {
            if (weft_write_atomic(path, buf, len, err, sizeof err) == 0)
                json_object_set_new(o, "pcs_file", json_string(path));
            free(buf);
        }
    }
    json_t *from = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(from, json_string(d[i].real));
    json_object_set_new(o, "merged_from", from);
    char *text = json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    snprintf(path, sizeof path, "%s/campaign.json", out);
    int rc = text ? weft_write_atomic(path, text, strlen(text), err, sizeof err) : -1;
    if (rc)
        weft_error("%s", text ? err : "out of memory");
    free(text);
    return rc;
}

/* What the seed-sorted lines say about [lo, hi]: seeds in more than one line
 * (the first DIR's line is kept) and seeds in none. */
typedef struct merge_scan {
    size_t dups, differ;
    gap_list gaps;
} merge_scan;

/* Warns (the first few times) of duplicates that differ beyond wall time. */
static void scan_lines(const merge_dir *d, const replay_line *lines, size_t n, uint64_t lo,
                       uint64_t hi, merge_scan *sc)
{
    uint64_t next = lo;
    size_t k = 0; /* the first line of the current seed: the one kept */
    for (size_t i = 0; i < n; i++) {
        if (i && lines[i].seed == lines[i - 1].seed) {
            sc->dups++;
            char *a = normalized(lines[k].text), *b = normalized(lines[i].text);
            if (strcmp(a, b) && sc->differ++ < 5)
                fprintf(stderr,
                        "weft: merge: warning: seed %" PRIu64 " differs between %s and %s "
                        "(beyond wall time): the replay was not deterministic; kept %s's\n",
                        lines[i].seed, d[lines[k].tag].path, d[lines[i].tag].path,
                        d[lines[k].tag].path);
            free(a), free(b);
            continue;
        }
        k = i;
        uint64_t s = lines[i].seed;
        if (s > next && next <= hi)
            gap_add(&sc->gaps, next, s - 1 < hi ? s - 1 : hi);
        if (s >= next)
            next = s + 1;
    }
    if (next <= hi && next >= lo)
        gap_add(&sc->gaps, next, hi);
}

/* A line on the duplicates and one on the gaps; -1 if the gaps stop the merge. */
static int report_scan(const merge_scan *sc, uint64_t lo, uint64_t hi, int allow_gaps)
{
    if (sc->dups)
        printf("weft: merge: %zu duplicate run%s (a seed found in more than one line): kept the "
               "first of each%s\n",
               sc->dups, sc->dups == 1 ? "" : "s",
               sc->differ ? ", some differing: see the warnings" : "");
    if (!sc->gaps.n)
        return 0;
    FILE *f = allow_gaps ? stdout : stderr;
    fprintf(f, "weft: %s%" PRIu64 " seed%s of %" PRIu64 "..%" PRIu64 " not run: ",
            allow_gaps ? "merge: note: " : "merge: ", sc->gaps.missing,
            sc->gaps.missing == 1 ? "" : "s", lo, hi);
    gap_print(f, &sc->gaps);
    fprintf(f, "%s\n",
            allow_gaps ? " (--allow-gaps)" : " (run them, e.g. with --resume, or --allow-gaps)");
    return allow_gaps ? 0 : -1;
}

/* OUT/runs.jsonl (named in path) of the kept line of each seed, and the
 * traces those lines name. */
static int write_runs(const merge_dir *d, const replay_line *lines, size_t n, const char *out,
                      char *path, size_t pathlen)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += strlen(lines[i].text);
    char *all = malloc(total + 1), err[512];
    size_t len = 0;
    for (size_t i = 0; all && i < n; i++) {
        if (i && lines[i].seed == lines[i - 1].seed)
            continue;
        size_t l = strlen(lines[i].text);
        memcpy(all + len, lines[i].text, l);
        len += l;
        json_t *o = json_loads(lines[i].text, 0, NULL);
        const char *trace = json_string_value(json_object_get(o, "trace"));
        if (trace && *trace && trace[0] != '/' && !strstr(trace, ".."))
            copy_trace(d[lines[i].tag].path, out, trace);
        json_decref(o);
    }
    snprintf(path, pathlen, "%s/runs.jsonl", out);
    int rc = 0;
    if (!all || weft_write_atomic(path, all, len, err, sizeof err)) {
        weft_error("%s", all ? err : "out of memory");
        rc = -1;
    }
    free(all);
    return rc;
}

/* OUT/summary.json (named in sum) and OUT/timing.json, from the merged runs. */
static int write_summaries(const char *runs, const char *out, replay_summary *s, char *sum,
                           size_t sumlen)
{
    char err[512], timing[PATH_MAX + 32];
    snprintf(sum, sumlen, "%s/summary.json", out);
    snprintf(timing, sizeof timing, "%s/timing.json", out);
    if (replay_summary_read(runs, s, err, sizeof err) ||
        replay_summary_write(s, sum, err, sizeof err) ||
        replay_timing_write(s, timing, -1, err, sizeof err)) {
        weft_error("%s", err);
        return -1;
    }
    return 0;
}

static int merge_runs(merge_dir *d, size_t nd, const char *out, int allow_gaps, int quiet)
{
    replay_line *lines = NULL;
    size_t n = 0, cap = 0;
    int rc = WEFT_EXIT_FAIL;
    for (size_t i = 0; i < nd; i++)
        if (read_runs(&d[i], i, &lines, &n, &cap))
            goto out;
    if (!n) {
        weft_error("merge: no finished runs in any of the %zu folders", nd);
        goto out;
    }
    qsort(lines, n, sizeof *lines, replay_line_cmp);
    uint64_t lo = d[0].lo, hi = d[0].hi;
    for (size_t i = 1; i < nd; i++)
        lo = d[i].lo < lo ? d[i].lo : lo, hi = d[i].hi > hi ? d[i].hi : hi;
    merge_scan sc = {0};
    scan_lines(d, lines, n, lo, hi, &sc);
    if (report_scan(&sc, lo, hi, allow_gaps))
        goto out;

    char runs[PATH_MAX + 32], sum[PATH_MAX + 32];
    replay_summary s;
    if (weft_mkdirs(out) || write_runs(d, lines, n, out, runs, sizeof runs) ||
        write_summaries(runs, out, &s, sum, sizeof sum) ||
        write_merged_campaign(d, nd, out, lo, hi))
        goto out;
    printf("weft: merged %zu folder%s: %" PRIu64 " runs of seeds %" PRIu64 "..%" PRIu64 " -> %s\n",
           nd, nd == 1 ? "" : "s", s.runs, lo, hi, out);
    if (!quiet) {
        replay_summary_print(&s, stdout);
        printf("  files     %s, %s\n", runs, sum);
    }
    rc = WEFT_EXIT_OK;
out:
    for (size_t i = 0; i < n; i++)
        free(lines[i].text);
    free(lines);
    return rc;
}

int replay_merge(const char *const *dirs, size_t nd, const char *out, int allow_gaps, int quiet)
{
    merge_dir *d = calloc(nd, sizeof *d);
    if (!d) {
        weft_error("out of memory");
        return WEFT_EXIT_FAIL;
    }
    int rc = WEFT_EXIT_FAIL;
    char out_real[PATH_MAX];
    int out_exists = realpath(out, out_real) != NULL;
    for (size_t i = 0; i < nd; i++) {
        d[i].path = dirs[i];
        if (load_dir(&d[i]))
            goto done;
        if (out_exists && !strcmp(out_real, d[i].real)) {
            weft_error("merge: -o %s is one of the folders to merge: write elsewhere", out);
            rc = WEFT_EXIT_USAGE;
            goto done;
        }
    }
    if (check_same(d, nd) == 0)
        rc = merge_runs(d, nd, out, allow_gaps, quiet);
done:
    for (size_t i = 0; i < nd; i++)
        json_decref(d[i].campaign);
    free(d);
    return rc;
}
