/* replay_ddmin on toy oracles: the failing subsets it finds are exact where
 * the failure has one cause, 1-minimal where it has several, each subset is
 * tested once, the budget and a failed test stop it; and schedule files:
 * written, read back equal, and bad ones refused with one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "weft/replay.h"

#define MAX_TESTS 4096

/* A toy failure: the subset fails when it holds every item of `need`
 * (need_n items), or, with at_least > 0, when it has at least that many
 * items; errors from the test numbered error_at (1-based). */
typedef struct oracle {
    const size_t *need;
    size_t need_n, at_least, error_at;
    size_t calls;
    uint64_t seen[MAX_TESTS]; /* a hash of each subset tested, to find repeats */
    int repeated;
} oracle;

static uint64_t hash_of(const size_t *idx, size_t m)
{
    uint64_t h = 1469598103934665603ull ^ m;
    for (size_t i = 0; i < m; i++)
        h = (h ^ idx[i]) * 1099511628211ull;
    return h;
}

static int fails(void *ctx, const size_t *idx, size_t m)
{
    oracle *o = ctx;
    uint64_t h = hash_of(idx, m);
    for (size_t i = 0; i < o->calls && i < MAX_TESTS; i++)
        o->repeated |= o->seen[i] == h;
    if (o->calls < MAX_TESTS)
        o->seen[o->calls] = h;
    o->calls++;
    if (o->error_at && o->calls == o->error_at)
        return -1;
    for (size_t i = 1; i < m; i++)
        assert_true(idx[i - 1] < idx[i]); /* ascending, as documented */
    if (o->at_least)
        return m >= o->at_least;
    size_t found = 0;
    for (size_t k = 0; k < o->need_n; k++)
        for (size_t i = 0; i < m; i++)
            found += idx[i] == o->need[k];
    return found == o->need_n;
}

/* One cause (one item, or two far apart): exactly it comes back. */
static void test_single_causes(void **state)
{
    (void)state;
    const size_t ns[] = {1, 2, 7, 64, 100};
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
        size_t n = ns[t], one[] = {n - 1};
        const size_t two[] = {3, 37};
        oracle o = {.need = n > 37 ? two : one, .need_n = n > 37 ? 2 : 1};
        size_t *out = NULL, nout = 99, tests = 0;
        assert_int_equal(replay_ddmin(n, fails, &o, 0, &out, &nout, &tests), 0);
        assert_int_equal(tests, o.calls);
        assert_false(o.repeated);
        assert_int_equal(nout, o.need_n);
        for (size_t i = 0; i < nout; i++)
            assert_int_equal(out[i], o.need[i]);
        free(out);
    }
}

/* Nothing at all fails: one test, the empty set. */
static void test_empty_fails(void **state)
{
    (void)state;
    oracle o = {.need_n = 0};
    size_t *out = NULL, nout = 99, tests = 0;
    assert_int_equal(replay_ddmin(50, fails, &o, 0, &out, &nout, &tests), 0);
    assert_int_equal(nout, 0);
    assert_int_equal(tests, 1);
    free(out);
}

/* Any 4 items fail: the result has 4, and dropping any one passes
 * (1-minimal). */
static void test_one_minimal(void **state)
{
    (void)state;
    oracle o = {.at_least = 4};
    size_t *out = NULL, nout = 0, tests = 0;
    assert_int_equal(replay_ddmin(40, fails, &o, 0, &out, &nout, &tests), 0);
    assert_int_equal(nout, 4);
    assert_false(o.repeated);
    for (size_t drop = 0; drop < nout; drop++) {
        size_t sub[4], m = 0;
        for (size_t i = 0; i < nout; i++)
            if (i != drop)
                sub[m++] = out[i];
        oracle check = {.at_least = 4};
        assert_int_equal(fails(&check, sub, m), 0);
    }
    free(out);
}

/* The budget: at most max_tests, a failing (not minimal) subset back. */
static void test_budget(void **state)
{
    (void)state;
    const size_t need[] = {10, 20, 30, 40, 50};
    oracle o = {.need = need, .need_n = 5};
    size_t *out = NULL, nout = 0, tests = 0;
    assert_int_equal(replay_ddmin(200, fails, &o, 6, &out, &nout, &tests), 1);
    assert_int_equal(tests, 6);
    assert_int_equal(o.calls, 6);
    oracle check = {.need = need, .need_n = 5};
    assert_int_equal(fails(&check, out, nout), 1);
    free(out);
}

/* A test that cannot run stops the search. */
static void test_error(void **state)
{
    (void)state;
    const size_t need[] = {2};
    oracle o = {.need = need, .need_n = 1, .error_at = 3};
    size_t *out = NULL, nout = 0, tests = 0;
    assert_int_equal(replay_ddmin(30, fails, &o, 0, &out, &nout, &tests), -1);
    assert_null(out);
    assert_int_equal(o.calls, 3);
}

static void test_schedule_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/weft-sched-XXXXXX", path[64], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/s.json", dir);
    char *argv[] = {"/bin/prog", "a b", NULL};
    uint64_t pcs[] = {0x400100, 0x400abc};
    pct_script_switch sw[] = {{0, 1, true}, {7, 0, false}, {7, 2, true}};
    replay_schedule s = {.program = "/bin/prog",
                         .argv = argv,
                         .argc = 2,
                         .n = 3,
                         .k = 40,
                         .points = POINTS_VISIBLE,
                         .pcs = pcs,
                         .npcs = 2,
                         .expect_exit = 0,
                         .timeout = 30,
                         .from_seed = 9,
                         .from_depth = 3,
                         .from_switches = 7,
                         .from_preemptions = 4,
                         .sw = sw,
                         .nsw = 3};
    snprintf(s.verdict, sizeof s.verdict, "bug");
    snprintf(s.detail, sizeof s.detail, "BUG: x");
    snprintf(s.from_policy, sizeof s.from_policy, "pct");
    assert_int_equal(replay_schedule_write(&s, path, err, sizeof err), 0);
    replay_schedule r;
    assert_int_equal(replay_schedule_read(path, &r, err, sizeof err), 0);
    assert_string_equal(r.program, "/bin/prog");
    assert_int_equal(r.argc, 2);
    assert_string_equal(r.argv[1], "a b");
    assert_int_equal(r.n, 3);
    assert_int_equal(r.k, 40);
    assert_int_equal(r.points, POINTS_VISIBLE);
    assert_int_equal(r.npcs, 2);
    assert_true(r.pcs[1] == 0x400abc);
    assert_int_equal(r.timeout, 30);
    assert_string_equal(r.verdict, "bug");
    assert_string_equal(r.detail, "BUG: x");
    assert_string_equal(r.from_policy, "pct");
    assert_int_equal(r.nsw, 3);
    assert_memory_equal(r.sw, sw, sizeof sw);
    replay_schedule_free(&r);
    /* Refused: not a schedule, switches out of order, a negative thread. */
    const char *bad[][2] = {
        {"{\"format\": \"weft-plan\"}", "not a weft schedule"},
        {"{\"format\": \"weft-schedule\", \"version\": 1, \"n\": 2, \"program\": \"p\", \"argv\": "
         "[\"p\"], \"points\": \"all\", \"switches\": [{\"step\": 5, \"thread\": 1}, {\"step\": "
         "2, \"thread\": 0}]}",
         "switch 2: step 2 before the previous one's"},
        {"{\"format\": \"weft-schedule\", \"version\": 1, \"n\": 2, \"program\": \"p\", \"argv\": "
         "[\"p\"], \"points\": \"all\", \"switches\": [{\"step\": 5, \"thread\": -1}]}",
         "switch 1: expected non-negative integers"},
        {"{\"format\": \"weft-schedule\", \"version\": 1, \"n\": 2, \"program\": \"p\", \"argv\": "
         "[\"p\"], \"points\": \"some\", \"switches\": []}",
         "points \"some\""},
        {"[1, 2", "s.json"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(bad[i][0], f);
        fclose(f);
        err[0] = 0;
        assert_int_equal(replay_schedule_read(path, &r, err, sizeof err), -1);
        if (!strstr(err, bad[i][1]))
            print_message("\"%s\" lacks \"%s\"\n", err, bad[i][1]);
        assert_non_null(strstr(err, bad[i][1]));
        assert_null(strchr(err, '\n'));
    }
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_causes), cmocka_unit_test(test_empty_fails),
        cmocka_unit_test(test_one_minimal),   cmocka_unit_test(test_budget),
        cmocka_unit_test(test_error),         cmocka_unit_test(test_schedule_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
