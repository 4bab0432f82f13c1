/* libFuzzer harness for the files of a replay campaign's folder that weft
 * reads back: built twice, as fuzz_campaign (the input is campaign.json)
 * and, with FUZZ_RUNS, as fuzz_runs (the input is runs.jsonl). The other
 * file of the folder is a fixed, valid one. Every reader of the fuzzed file
 * gets it, as weft would call it:
 *   - replay_campaign_load (weft replay --resume), with two configurations;
 *   - replay_summary_read and replay_lines_read (weft replay --summary, a
 *     campaign's end, --resume), then the summary written and printed;
 *   - replay_merge of the folder alone and with a second, fixed one
 *     (weft merge; its load_dir reads campaign.json, read_runs runs.jsonl);
 *   - report_campaign_load, the report's two sections and first failure
 *     (weft report).
 * Checks, besides no crash: an error is one line ("weft: ..." on stderr
 * for the functions that print, in err for those that return it), and
 * nothing else is printed on failure except warnings; what is accepted is
 * consistent (a summary's counts add up; lines read are whole lines with
 * their seeds; a merge that succeeds leaves a folder whose summary reads
 * back). Everything is written under a private scratch folder, removed at
 * exit. */
#include "fuzz_common.h"

#include <limits.h>
#include <math.h>

#include <jansson.h>

#include "report_internal.h"
#include "weft/replay.h"

/* What replay_campaign_write writes for `weft replay --sched pct --depth 3
 * --steps 120 --threads 3 --points none --runs 4 -- /bin/true a`. */
static const char fixed_campaign[] =
    "{\n  \"policy\": \"pct\",\n  \"depth\": 3,\n  \"radius\": 1,\n  \"k\": 120,\n  \"n\": 3,\n"
    "  \"points\": \"none\",\n  \"pcs_file\": \"\",\n  \"pcs_count\": 0,\n"
    "  \"starvation\": -1.0,\n  \"host_parallel\": false,\n  \"first_seed\": 1,\n"
    "  \"runs\": 4,\n  \"expect_exit\": 0,\n  \"expect_output\": null,\n"
    "  \"argv\": [\n    \"/bin/true\",\n    \"a\"\n  ],\n  \"timeout\": 60,\n"
    "  \"sysroot\": null,\n  \"shard\": null\n}";

#define RUN_LINE(seed, verdict, steps)                                                             \
    "{\"seed\": " #seed ", \"verdict\": \"" verdict "\", \"detail\": \"exit 0\", \"policy\": "     \
    "\"pct\", \"depth\": 3, \"radius\": null, \"n\": 3, \"k\": 120, \"points\": \"none\", "        \
    "\"exit_status\": 0, \"signal\": null, \"steps\": " #steps ", \"change_points\": [4, 9], "     \
    "\"overrides\": 0, \"threads\": 3, \"makespan_ns\": 5230, \"waits\": null, \"trace\": null, "  \
    "\"wall_s\": 0.42}\n"
static const char fixed_runs[] = RUN_LINE(1, "pass", 100) RUN_LINE(2, "assert", 97)
    RUN_LINE(3, "pass", 101) RUN_LINE(4, "pass", 99);

static char dir_a[300], dir_b[300], out_dir[300];

static void cleanup(void)
{
    fz_rmtree(fz_scratch());
}

static void path_in(char *buf, size_t len, const char *dir, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

/* Lines on stderr that are not warnings ("weft: warning: ..." or, from
 * merge, "weft: merge: warning: ..."). */
static size_t error_lines(const fz_capture *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->err_len;) {
        const char *s = c->err + i, *nl = memchr(s, '\n', c->err_len - i);
        size_t l = nl ? (size_t)(nl - s) + 1 : c->err_len - i;
        FUZZ_CHECK(l > 6 && !strncmp(s, "weft: ", 6), "stderr line not from weft: '%.*s'", (int)l,
                   s);
        n += strncmp(s, "weft: warning: ", 15) && strncmp(s, "weft: merge: warning: ", 22);
        i += l;
    }
    return n;
}

/* A function that prints its error: -1 (or an exit status) with exactly one
 * line on stderr, 0 with no error line. */
static void check_printed(const fz_capture *c, int failed, const char *what)
{
    FUZZ_CHECK(!c->err_len || strlen(c->err) == c->err_len, "%s: NUL on stderr", what);
    size_t errors = error_lines(c);
    if (failed)
        FUZZ_CHECK(errors == 1, "%s failed with %zu error lines: '%s'", what, errors, c->err);
    else
        FUZZ_CHECK(errors == 0, "%s succeeded with an error line: '%s'", what, c->err);
}

#ifndef FUZZ_RUNS
static void campaign_load(int variant)
{
    static char *argv[] = {"/bin/true", "a", NULL};
    replay_config c;
    memset(&c, 0, sizeof c);
    replay_shard sh = {0};
    c.kind = PCT_KIND_PCT;
    c.depth = 3;
    c.points = POINTS_NONE;
    c.starvation = -1;
    c.run.argc = 2;
    c.run.argv = argv;
    c.run.binary = argv[0];
    if (variant) {
        /* A shard resumed with everything given that can be, points profiled. */
        c.kind = PCT_KIND_RPRO;
        c.radius = 1, c.radius_given = 1;
        c.k = 120, c.k_given = 1;
        c.n = 3, c.n_given = 1;
        c.points = POINTS_SHARED;
        c.runs = 7, c.runs_given = 1;
        sh.index = 1, sh.count = 2;
    }
    snprintf(c.out_dir, sizeof c.out_dir, "%s", dir_a);
    fz_capture cap;
    fz_capture_begin(&cap);
    int rc = replay_campaign_load(&c, &sh);
    fz_capture_end(&cap);
    FUZZ_CHECK(rc == 0 || rc == -1, "replay_campaign_load returned %d", rc);
    check_printed(&cap, rc != 0, "replay_campaign_load");
    FUZZ_CHECK(cap.out_len == 0, "replay_campaign_load printed to stdout");
    FUZZ_CHECK(memchr(c.pcs_path, 0, sizeof c.pcs_path), "pcs_path not terminated");
    fz_capture_free(&cap);
}
#else
static void summary(const char *runs_path)
{
    replay_summary s;
    char err[512] = "";
    if (replay_summary_read(runs_path, &s, err, sizeof err) != 0) {
        FUZZ_ONE_LINE(err);
        return;
    }
    uint64_t sum = 0;
    for (int i = 0; i < REPLAY_VERDICT_COUNT; i++)
        sum += s.verdicts[i];
    FUZZ_CHECK(s.runs > 0 && sum == s.runs, "verdicts add up to %llu of %llu runs",
               (unsigned long long)sum, (unsigned long long)s.runs);
    FUZZ_CHECK(s.hits + s.timeouts <= s.runs && s.runs_without_override <= s.runs &&
                   s.runs_beyond_k <= s.runs,
               "counts beyond the runs");
    FUZZ_CHECK(s.seed_min <= s.seed_max, "seed range %llu..%llu", (unsigned long long)s.seed_min,
               (unsigned long long)s.seed_max);
    FUZZ_CHECK(s.hit_rate >= 0 && s.hit_rate <= 1 && s.ci_lo <= s.hit_rate + 1e-12 &&
                   s.ci_hi >= s.hit_rate - 1e-12,
               "hit rate %g outside [%g, %g]", s.hit_rate, s.ci_lo, s.ci_hi);
    FUZZ_CHECK(memchr(s.policy, 0, sizeof s.policy) && memchr(s.points, 0, sizeof s.points),
               "summary strings not terminated");
    char sum_path[400], timing[400];
    path_in(sum_path, sizeof sum_path, fz_scratch(), "summary.json");
    path_in(timing, sizeof timing, fz_scratch(), "timing.json");
    FUZZ_CHECK(replay_summary_write(&s, sum_path, err, sizeof err) == 0, "summary write: %s", err);
    FUZZ_CHECK(replay_timing_write(&s, timing, -1, err, sizeof err) == 0, "timing write: %s", err);
    json_error_t je;
    json_t *o = json_load_file(sum_path, 0, &je);
    FUZZ_CHECK(json_is_object(o), "summary.json does not read back: %s", je.text);
    FUZZ_CHECK((uint64_t)json_integer_value(json_object_get(o, "runs")) == s.runs,
               "summary.json runs");
    json_decref(o);
    unlink(sum_path);
    unlink(timing);
    FILE *devnull = fopen("/dev/null", "w");
    FUZZ_CHECK(devnull, "/dev/null");
    replay_summary_print(&s, devnull);
    fclose(devnull);
}

static void lines(const char *runs_path)
{
    FILE *f = fopen(runs_path, "r");
    FUZZ_CHECK(f, "cannot open %s", runs_path);
    replay_line *l = NULL;
    size_t n = 0, cap = 0;
    FUZZ_CHECK(replay_lines_read(f, 7, &l, &n, &cap) == 0, "replay_lines_read failed");
    fclose(f);
    for (size_t i = 0; i < n; i++) {
        const char *t = l[i].text;
        FUZZ_CHECK(t, "line %zu: no text", i);
        size_t len = strlen(t);
        FUZZ_CHECK(len && t[len - 1] == '\n' && memchr(t, '\n', len) == t + len - 1,
                   "line %zu is not one whole line: '%s'", i, t);
        FUZZ_CHECK(l[i].order == i && l[i].tag == 7, "line %zu: order %zu tag %zu", i, l[i].order,
                   l[i].tag);
        json_t *o = json_loads(t, 0, NULL), *s = json_object_get(o, "seed");
        uint64_t seed = json_is_integer(s) ? (uint64_t)json_integer_value(s) : UINT64_MAX;
        FUZZ_CHECK(seed == l[i].seed, "line %zu: seed %llu, read as %llu", i,
                   (unsigned long long)seed, (unsigned long long)l[i].seed);
        json_decref(o);
    }
    if (n)
        qsort(l, n, sizeof *l, replay_line_cmp);
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(!i || l[i - 1].seed < l[i].seed ||
                       (l[i - 1].seed == l[i].seed && l[i - 1].order < l[i].order),
                   "lines not sorted");
        free(l[i].text);
    }
    free(l);
}
#endif

/* merge reads the pcs_file a campaign.json names (to compare the shards'
 * points and copy them): only let it read a file that is safe to read
 * (a FIFO, /dev/zero or a huge file would hang the fuzzer, not find a bug). */
static int pcs_file_is_safe(const char *campaign_path)
{
    json_t *o = json_load_file(campaign_path, 0, NULL);
    const char *p = json_string_value(json_object_get(o, "pcs_file"));
    struct stat st;
    int ok = !p || !*p || stat(p, &st) != 0 || (S_ISREG(st.st_mode) && st.st_size < (1 << 20));
    json_decref(o);
    return ok;
}

static void merge(int both, int allow_gaps)
{
    const char *dirs[2] = {dir_a, dir_b};
    fz_capture cap;
    fz_capture_begin(&cap);
    int rc = replay_merge(dirs, both ? 2 : 1, out_dir, allow_gaps, 0);
    fz_capture_end(&cap);
    FUZZ_CHECK(rc == WEFT_EXIT_OK || rc == WEFT_EXIT_FAIL || rc == WEFT_EXIT_USAGE,
               "replay_merge returned %d", rc);
    check_printed(&cap, rc != WEFT_EXIT_OK, "replay_merge");
    if (rc == WEFT_EXIT_OK) {
        char p[PATH_MAX], err[512];
        replay_summary s;
        path_in(p, sizeof p, out_dir, "runs.jsonl");
        FUZZ_CHECK(replay_summary_read(p, &s, err, sizeof err) == 0,
                   "merged runs.jsonl does not summarize: %s", err);
        path_in(p, sizeof p, out_dir, "campaign.json");
        json_t *o = json_load_file(p, 0, NULL);
        FUZZ_CHECK(json_is_object(o), "merged campaign.json does not read back");
        json_decref(o);
    }
    fz_capture_free(&cap);
    fz_rmtree(out_dir);
}

static void report(void)
{
    report_campaign c;
    char err[512] = "";
    fz_capture cap;
    fz_capture_begin(&cap);
    int rc = report_campaign_load(dir_a, &c, err, sizeof err);
    if (rc == 0) {
        if (!c.have_sum)
            FUZZ_ONE_LINE(err);
        rbuf b = {0};
        report_section_campaigns(&b, &c, 1);
        report_section_failures(&b, &c, 1, 3);
        uint64_t seed;
        char verdict[64], detail[256], cmd[8192];
        if (report_campaign_first_failure(&c, &seed, verdict, sizeof verdict, detail,
                                          sizeof detail) == 0)
            report_campaign_repro(&c, seed, cmd, sizeof cmd);
        FUZZ_CHECK(!b.oom, "report buffer out of memory");
        rb_free(&b);
        report_campaign_free(&c);
    } else {
        FUZZ_ONE_LINE(err);
    }
    fz_capture_end(&cap);
    /* Nothing but the summary's notes on lines it left out, each one line
     * naming the file. */
    FUZZ_CHECK(cap.out_len == 0, "the report's reading printed: '%s'", cap.out);
    for (const char *l = cap.err_len ? cap.err : ""; *l;) {
        const char *nl = strchr(l, '\n');
        FUZZ_CHECK(nl && strncmp(l, "weft: ", 6) == 0 && strstr(l, "runs.jsonl:") &&
                       strstr(l, "runs.jsonl:") < nl,
                   "the report's reading printed: '%s'", cap.err);
        l = nl + 1;
    }
    fz_capture_free(&cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir_a[0]) {
        path_in(dir_a, sizeof dir_a, fz_scratch(), "a");
        path_in(dir_b, sizeof dir_b, fz_scratch(), "b");
        path_in(out_dir, sizeof out_dir, fz_scratch(), "out");
        FUZZ_CHECK(mkdir(dir_a, 0755) == 0 && mkdir(dir_b, 0755) == 0, "mkdir");
        char p[400];
        path_in(p, sizeof p, dir_b, "campaign.json");
        fz_write_file(p, fixed_campaign, strlen(fixed_campaign));
        path_in(p, sizeof p, dir_b, "runs.jsonl");
        fz_write_file(p, fixed_runs, strlen(fixed_runs));
        atexit(cleanup);
    }
    char campaign[400], runs[400];
    path_in(campaign, sizeof campaign, dir_a, "campaign.json");
    path_in(runs, sizeof runs, dir_a, "runs.jsonl");
#ifdef FUZZ_RUNS
    fz_write_file(campaign, fixed_campaign, strlen(fixed_campaign));
    fz_write_file(runs, data, size);
    summary(runs);
    lines(runs);
#else
    fz_write_file(campaign, data, size);
    fz_write_file(runs, fixed_runs, strlen(fixed_runs));
    campaign_load(0);
    campaign_load(1);
#endif
    if (pcs_file_is_safe(campaign)) {
        merge(0, 1);
        merge(1, 0);
    }
    report();
    return 0;
}
