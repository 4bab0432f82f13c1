/* Regression tests for inputs that once broke weft's readers (found by the
 * fuzzers in fuzz/, kept in tests/unit/data/fuzz_{trace,spool,plan,options,
 * campaign,runs}/):
 * each named input gets the check of its bug, and every file in those
 * folders (including ones added later) gets the generic contract: no crash,
 * errors are one line naming the file, and what is accepted reads whole.
 * Run under scripts/test-sanitize too, where ASan/UBSan catch the memory
 * and undefined-behaviour bugs themselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/optimizer.h"
#include "weft/replay.h"
#include "weft/report.h"
#include "weft/trace.h"

#include "cli.h"

#ifndef WEFT_TEST_DATA
#error "WEFT_TEST_DATA must name tests/unit/data"
#endif

static char scratch[512];

static const char *data(const char *rel)
{
    static char bufs[4][1024];
    static int k;
    char *b = bufs[k++ & 3];
    snprintf(b, sizeof bufs[0], "%s/%s", WEFT_TEST_DATA, rel);
    return b;
}

static void assert_one_line(const char *err, const char *name)
{
    assert_true(err[0] != 0);
    if (strchr(err, '\n'))
        fail_msg("error is not one line: '%s'", err);
    if (name && !strstr(err, name))
        fail_msg("error '%s' does not name %s", err, name);
}

static void copy_file(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    assert_non_null(f);
    assert_non_null(g);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        assert_int_equal(fwrite(buf, 1, n, g), n);
    fclose(f);
    assert_int_equal(fclose(g), 0);
}

/* Open, read every event, print the info view. Returns 1 if the trace was
 * read whole, 0 if it was rejected (with a one-line error naming it). */
static int read_trace(const char *path)
{
    char err[512] = "";
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t) {
        assert_one_line(err, path);
        return 0;
    }
    weft_event ev;
    uint64_t n = 0;
    int rc;
    while ((rc = weft_trace_next(t, &ev)) == 1)
        n++;
    if (rc == 0)
        assert_int_equal(n, weft_trace_event_count(t));
    else
        assert_one_line(weft_trace_error(t), path);
    FILE *devnull = fopen("/dev/null", "w");
    assert_non_null(devnull);
    int info = weft_trace_print_info(t, NULL, 1, devnull);
    fclose(devnull);
    assert_int_equal(info != 0, rc != 0);
    weft_trace_close(t);
    return rc == 0;
}

/* Salvage a spool copied into the scratch folder; 1 if it became a trace. */
static int salvage(const char *spool_src)
{
    char trace[600], spool[620], err[512] = "";
    snprintf(trace, sizeof trace, "%s/salvaged.wtr", scratch);
    snprintf(spool, sizeof spool, "%s.spool", trace);
    unlink(trace);
    copy_file(spool_src, spool);
    if (weft_trace_salvage(trace, WEFT_TRACE_CRASHED, -11, err, sizeof err) != 0) {
        assert_one_line(err, spool);
        unlink(spool);
        return 0;
    }
    assert_int_equal(read_trace(trace), 1);
    unlink(trace);
    return 1;
}

static int parse_plan(const char *path, char *err, size_t errlen)
{
    optimizer_plan p;
    if (optimizer_plan_read(path, NULL, &p, err, errlen) != 0) {
        assert_one_line(err, path);
        return -1;
    }
    optimizer_plan_free(&p);
    return 0;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 20);
    assert_non_null(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

/* What the code under test prints on stderr, as the fuzzers capture it. */
typedef struct captured {
    FILE *saved;
    char *text;
    size_t len;
} captured;

static void capture(captured *c)
{
    fflush(stderr);
    c->saved = stderr;
    c->text = NULL;
    stderr = open_memstream(&c->text, &c->len);
    assert_non_null(stderr);
}

static void release(captured *c)
{
    fclose(stderr);
    stderr = c->saved;
}

static size_t count_lines(const captured *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->len; i++)
        n += c->text[i] == '\n';
    return n + (c->len && c->text[c->len - 1] != '\n');
}

/* A fuzz_options input: the command's index in cli_commands, then its
 * arguments separated by NUL bytes. Returns cli_parse's result; a bad
 * command line must be one line, an accepted one may print only
 * deprecation warnings. *err gets the message (malloc'd). */
/* As fuzz_options does, the input's first byte picks the command by its
 * index in cli_commands (cli/weft.c): a kept input names its command only
 * while the table keeps its order, so each test checks the name. */
static int parse_cmdline(const char *path, const char **cmd_name, char **err)
{
    size_t len;
    char *text = slurp(path, &len);
    assert_true(len >= 1);
    const cli_command *cmd = cli_commands[(uint8_t)text[0] % cli_ncommands];
    char *argv[66];
    int argc = 0;
    argv[argc++] = (char *)cmd->name;
    for (size_t i = 1; i < len && argc < 65; i += strlen(text + i) + 1)
        argv[argc++] = text + i;
    argv[argc] = NULL;
    static _Alignas(64) unsigned char opts[65536];
    memset(opts, 0, sizeof opts);
    int first;
    cli_seen seen;
    captured c;
    FILE *out = stdout;
    stdout = fopen("/dev/null", "w");
    capture(&c);
    int rc = cli_parse(cmd, argc, argv, opts, &first, &seen);
    release(&c);
    fclose(stdout);
    stdout = out;
    if (rc == -1) {
        if (count_lines(&c) != 1)
            fail_msg("%s: a bad command line printed %zu lines: %s", path, count_lines(&c), c.text);
    } else {
        for (char *l = c.text; l && *l; l = strchr(l, '\n') + 1)
            if (!strstr(l, ": warning: ") || strstr(l, ": warning: ") > strchr(l, '\n'))
                fail_msg("%s: accepted with an error: %s", path, c.text);
    }
    *cmd_name = cmd->name;
    *err = c.text;
    free(text);
    return rc;
}

/* A campaign folder in the scratch folder: campaign.json and runs.jsonl,
 * either of them a kept input and the other a fixed valid one. */
static const char fixed_campaign[] =
    "{\"policy\": \"pct\", \"depth\": 3, \"radius\": 1, \"k\": 120, \"n\": 3, \"points\": "
    "\"none\", \"pcs_file\": \"\", \"pcs_count\": 0, \"starvation\": -1.0, \"host_parallel\": "
    "false, \"first_seed\": 1, \"runs\": 2, \"expect_exit\": 0, \"expect_output\": null, "
    "\"argv\": [\"/bin/true\"], \"timeout\": 60, \"sysroot\": null, \"shard\": null}\n";
static const char fixed_runs[] =
    "{\"seed\": 1, \"verdict\": \"pass\", \"policy\": \"pct\", \"depth\": 3, \"n\": 3, "
    "\"k\": 120, \"points\": \"none\", \"steps\": 90}\n"
    "{\"seed\": 2, \"verdict\": \"assert\", \"policy\": \"pct\", \"depth\": 3, \"n\": 3, "
    "\"k\": 120, \"points\": \"none\", \"steps\": 91}\n";

/* dir/name: a copy of the file src, or if NULL the text fixed. */
static void put_file(const char *dir, const char *name, const char *src, const char *fixed)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (src) {
        copy_file(src, p);
        return;
    }
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(fixed, f);
    assert_int_equal(fclose(f), 0);
}

static const char *campaign_dir(const char *campaign_src, const char *runs_src)
{
    static char dir[600];
    snprintf(dir, sizeof dir, "%s/campaign", scratch);
    mkdir(dir, 0755);
    put_file(dir, "campaign.json", campaign_src, fixed_campaign);
    put_file(dir, "runs.jsonl", runs_src, fixed_runs);
    return dir;
}

/* report_campaign_load and replay_campaign_load (--resume) of the folder:
 * an error is one line. Returns report_campaign_load's result. */
static int load_campaign(const char *dir, char *err, size_t errlen)
{
    report_campaign rc;
    int r = report_campaign_load(dir, &rc, err, errlen);
    if (r == 0)
        report_campaign_free(&rc);
    else
        assert_one_line(err, dir);
    static char *argv[] = {"/bin/true", NULL};
    replay_config c;
    memset(&c, 0, sizeof c);
    c.kind = PCT_KIND_PCT;
    c.depth = 3;
    c.points = POINTS_NONE;
    c.run.argc = 1;
    c.run.argv = argv;
    snprintf(c.out_dir, sizeof c.out_dir, "%s", dir);
    replay_shard sh = {0};
    captured cap;
    capture(&cap);
    int l = replay_campaign_load(&c, &sh);
    release(&cap);
    assert_int_equal(count_lines(&cap), l ? 1 : 0);
    free(cap.text);
    return r;
}

/* replay_lines_read of a runs.jsonl: every line whole, with its newline. */
static size_t read_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    replay_line *l = NULL;
    size_t n = 0, cap = 0;
    assert_int_equal(replay_lines_read(f, 0, &l, &n, &cap), 0);
    fclose(f);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(l[i].text);
        if (!len || l[i].text[len - 1] != '\n' || strchr(l[i].text, '\n') != l[i].text + len - 1)
            fail_msg("%s: line %zu is not one whole line: '%s'", path, i, l[i].text);
        free(l[i].text);
    }
    free(l);
    return n;
}

/* ---- the bugs, one by one ----------------------------------------------- */

/* weft info on a trace without shared variables called qsort(NULL, 0, ...)
 * (UBSan: null pointer passed as argument 1, trace_info.c). */
static void test_info_without_shared_vars(void **state)
{
    (void)state;
    assert_int_equal(read_trace(data("fuzz_trace/info_no_shared_vars_qsort_null.wtr")), 1);
}

/* Footer per-thread event counts that disagree with the blocks (their sum
 * still right) were accepted; plans are range-checked against them. */
static void test_footer_thread_counts_checked(void **state)
{
    (void)state;
    const char *path = data("fuzz_trace/footer_thread_events_mismatch.wtr");
    char err[512];
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    assert_non_null(t);
    weft_event ev;
    int rc;
    while ((rc = weft_trace_next(t, &ev)) == 1)
        ;
    assert_int_equal(rc, -1);
    assert_non_null(strstr(weft_trace_error(t), "corrupt footer (thread 0 has"));
    assert_one_line(weft_trace_error(t), path);
    weft_trace_close(t);
}

/* A trace of an older format reads as the same events: version 4's
 * chunks interleave their records, version 5's split them into streams
 * (the same synthetic trace written by the writers of the time). */
static void test_version4_reads_as_version3(void **state)
{
    (void)state;
    char err[512];
    weft_trace *a = weft_trace_open(data("formats/v4_many_threads.wtr"), err, sizeof err);
    weft_trace *b = weft_trace_open(data("formats/v3_many_threads.wtr"), err, sizeof err);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(weft_trace_get_meta(a)->version, 4);
    assert_int_equal(weft_trace_get_meta(b)->version, 3);
    weft_event x, y;
    uint64_t n = 0;
    int ra;
    while ((ra = weft_trace_next(a, &x)) == 1) {
        assert_int_equal(weft_trace_next(b, &y), 1);
        assert_memory_equal(&x, &y, sizeof x);
        n++;
    }
    assert_int_equal(ra, 0);
    assert_int_equal(weft_trace_next(b, &y), 0);
    assert_true(n >= 100);
    weft_trace_close(a);
    weft_trace_close(b);
}

/* A spool chunk with an empty payload made salvage compute NULL + 0
 * (UBSan: applying zero offset to null pointer, trace_merge.c). */
static void test_spool_empty_chunk(void **state)
{
    (void)state;
    salvage(data("fuzz_spool/empty_chunk_payload.spool"));
}

/* jansson's "near '...'" quoted a newline from the plan into the message. */
static void test_plan_json_error_one_line(void **state)
{
    (void)state;
    char err[512];
    assert_int_equal(parse_plan(data("fuzz_plan/newline_in_json_error.json"), err, sizeof err), -1);
    assert_non_null(strstr(err, "invalid escape"));
}

/* An unknown key holding "\n" was quoted into the message as is. */
static void test_plan_key_one_line(void **state)
{
    (void)state;
    char err[512];
    assert_int_equal(parse_plan(data("fuzz_plan/newline_in_key.json"), err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown key"));
}

/* A deprecated option accepted, then a bad one: the warning came before
 * the error, two lines for a bad command line (options.c). */
static void test_options_deprecated_then_bad(void **state)
{
    (void)state;
    const char *name;
    char *err;
    assert_int_equal(parse_cmdline(data("fuzz_options/deprecated_then_bad_option"), &name, &err),
                     -1);
    assert_string_equal(name, "merge");
    assert_null(strstr(err, "deprecated"));
    free(err);
}

/* A value holding a newline was quoted into the error as is. */
static void test_options_newline_in_value(void **state)
{
    (void)state;
    const char *name;
    char *err;
    assert_int_equal(parse_cmdline(data("fuzz_options/newline_in_value"), &name, &err), -1);
    assert_string_equal(name, "optimize");
    assert_non_null(strstr(err, "--algo: expected"));
    free(err);
}

/* The kept campaign.json is refused, in one line that says `why`. */
static void campaign_refused(const char *name, const char *why)
{
    char err[512];
    assert_int_equal(load_campaign(campaign_dir(data(name), NULL), err, sizeof err), -1);
    assert_non_null(strstr(err, why));
}

/* jansson's "near '...'" quoted a newline into report_campaign_load's error. */
static void test_campaign_json_error_one_line(void **state)
{
    (void)state;
    campaign_refused("fuzz_campaign/newline_in_json_error.json", "invalid escape");
}

/* argv holding a non-string: the report's reproduction command got a NULL
 * argument (UBSan: load of null pointer, replay/run.c shell_word). */
static void test_campaign_argv_not_strings(void **state)
{
    (void)state;
    campaign_refused("fuzz_campaign/argv_not_strings.json", "is not a string");
}

/* A NUL byte in a runs.jsonl line cut the line's text, newline included:
 * sorting or merging the runs then joined two lines. All 6 lines whole. */
static void test_runs_nul_in_line(void **state)
{
    (void)state;
    assert_int_equal(read_lines(data("fuzz_runs/nul_in_line.jsonl")), 6);
}

/* A policy name holding "\n" was quoted into the summary's error as is. */
static void test_runs_newline_in_policy(void **state)
{
    (void)state;
    char err[512];
    replay_summary s;
    const char *path = data("fuzz_runs/newline_in_policy.jsonl");
    assert_int_equal(replay_summary_read(path, &s, err, sizeof err), -1);
    assert_one_line(err, NULL);
    assert_non_null(strstr(err, "differs from the first line's"));
}

/* ---- every kept input: the generic contract ------------------------------- */

static void each_file(const char *sub, void (*fn)(const char *))
{
    DIR *d = opendir(data(sub));
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/%s", WEFT_TEST_DATA, sub, e->d_name);
        fn(path);
        n++;
    }
    closedir(d);
    assert_true(n > 0);
}

static void trace_file(const char *path)
{
    read_trace(path);
}
static void spool_file(const char *path)
{
    salvage(path);
}
static void plan_file(const char *path)
{
    char err[512];
    parse_plan(path, err, sizeof err);
}

static void options_file(const char *path)
{
    const char *name;
    char *err;
    parse_cmdline(path, &name, &err);
    free(err);
}
static void campaign_file(const char *path)
{
    char err[512];
    load_campaign(campaign_dir(path, NULL), err, sizeof err);
}
static void runs_file(const char *path)
{
    char err[512];
    read_lines(path);
    load_campaign(campaign_dir(NULL, path), err, sizeof err);
    replay_summary s;
    if (replay_summary_read(path, &s, err, sizeof err) != 0)
        assert_one_line(err, NULL);
}

static void test_all_kept_inputs(void **state)
{
    (void)state;
    each_file("fuzz_trace", trace_file);
    each_file("fuzz_spool", spool_file);
    each_file("fuzz_plan", plan_file);
    each_file("fuzz_options", options_file);
    each_file("fuzz_campaign", campaign_file);
    each_file("fuzz_runs", runs_file);
}

static void cleanup(void)
{
    char p[600];
    snprintf(p, sizeof p, "%s/salvaged.wtr", scratch);
    unlink(p);
    strcat(p, ".spool");
    unlink(p);
    const char *const camp[] = {"campaign.json", "runs.jsonl", ""};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/campaign/%s", scratch, camp[i]);
        remove(p);
    }
    rmdir(scratch);
}

int main(void)
{
    const char *base = getenv("WEFT_TEST_TMP");
    if (!base || !*base)
        base = "/tmp";
    mkdir(base, 0755);
    snprintf(scratch, sizeof scratch, "%s/weft-regress-XXXXXX", base);
    if (!mkdtemp(scratch)) {
        perror(scratch);
        return 1;
    }
    atexit(cleanup);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info_without_shared_vars),
        cmocka_unit_test(test_footer_thread_counts_checked),
        cmocka_unit_test(test_spool_empty_chunk),
        cmocka_unit_test(test_plan_json_error_one_line),
        cmocka_unit_test(test_plan_key_one_line),
        cmocka_unit_test(test_options_deprecated_then_bad),
        cmocka_unit_test(test_options_newline_in_value),
        cmocka_unit_test(test_campaign_json_error_one_line),
        cmocka_unit_test(test_campaign_argv_not_strings),
        cmocka_unit_test(test_runs_nul_in_line),
        cmocka_unit_test(test_runs_newline_in_policy),
        cmocka_unit_test(test_version4_reads_as_version3),
        cmocka_unit_test(test_all_kept_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
