/* optimizer plans: JSON round trip of every field, atomic write errors, and
 * one expected one-line message per malformed plan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include <weft/optimizer.h>

static char dir[] = "/tmp/weft-plan-test-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    const char *files[] = {"plan.json", "base.json"};
    char path[256];
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    return rmdir(dir);
}

static void sample_plan(optimizer_plan *p)
{
    char *argv[] = {"/fixtures/avn", "--threads", "3"};
    weft_trace_meta meta = {0};
    meta.settings.mode = WEFT_MODE_EXACT;
    meta.settings.cpi = 2;
    meta.settings.ps_per_cycle = 500;
    meta.binary_path = "/fixtures/avn";
    const uint8_t id[4] = {0xde, 0xad, 0x0b, 0x1e};
    memcpy(meta.build_id, id, 4);
    meta.build_id_len = 4;
    meta.argc = 3;
    meta.argv = argv;
    assert_int_equal(optimizer_plan_init(p, &meta), 0);
    optimizer_plan_set_search(p, "sa", 12345, 10000000, 4711);
    optimizer_injection a = {.thread = 1,
                             .seq = 17,
                             .pc = 0x400a10,
                             .function = "worker",
                             .file = "avn.c",
                             .line = 42,
                             .variable = "total",
                             .offset = 8,
                             .delay_ns = 1501,
                             .has_predicted = 1,
                             .predicted = {.thread_a = 1,
                                           .seq_a = 17,
                                           .thread_b = 2,
                                           .seq_b = 9,
                                           .address = 0x4a1020,
                                           .time = 23000}};
    optimizer_injection b = {.thread = 2, .seq = 0, .pc = 0x400b00, .delay_ns = 0};
    /* An order-violation pair (weft optimize --reads): a is put 2 ns after b. */
    optimizer_injection c = {.thread = 0,
                             .seq = 3,
                             .pc = 0x400c00,
                             .delay_ns = 902,
                             .has_predicted = 1,
                             .predicted = {.thread_a = 0,
                                           .seq_a = 3,
                                           .thread_b = 1,
                                           .seq_b = 4,
                                           .address = 0x4a2078,
                                           .time = 1900,
                                           .nudge = 2}};
    assert_int_equal(optimizer_plan_add(p, &a), 0);
    assert_int_equal(optimizer_plan_add(p, &b), 0);
    assert_int_equal(optimizer_plan_add(p, &c), 0);
}

static void assert_str_or_null(const char *a, const char *b)
{
    if (!a || !b)
        assert_true(a == b);
    else
        assert_string_equal(a, b);
}

static void test_round_trip(void **state)
{
    (void)state;
    optimizer_plan p, q;
    sample_plan(&p);
    /* 1501 ns at cpi 2 and 500 ps per cycle = 1501000 / 1000 = 1501 insns. */
    assert_int_equal(p.injections[0].delay_insns, 1501);
    assert_int_equal(optimizer_delay_insns(1501, 4, 1000), 375);
    assert_string_equal(p.build_id, "dead0b1e");
    assert_string_equal(p.mode, "exact");

    char path[256], err[256];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    assert_int_equal(optimizer_plan_write(&p, path, err, sizeof err), 0);
    uint64_t events[3] = {5, 18, 1};
    optimizer_plan_limits lim = {.nthreads = 3, .events = events};
    assert_int_equal(optimizer_plan_read(path, &lim, &q, err, sizeof err), 0);

    assert_string_equal(q.program, p.program);
    assert_string_equal(q.build_id, p.build_id);
    assert_int_equal(q.argc, p.argc);
    for (uint32_t i = 0; i < p.argc; i++)
        assert_string_equal(q.argv[i], p.argv[i]);
    assert_string_equal(q.mode, p.mode);
    assert_int_equal(q.cpi, p.cpi);
    assert_int_equal(q.ps_per_cycle, p.ps_per_cycle);
    assert_string_equal(q.algorithm, "sa");
    assert_int_equal(q.seed, 12345);
    assert_int_equal(q.dmax, 10000000);
    assert_int_equal(q.evaluations, 4711);
    assert_int_equal(q.ninjections, 3);
    assert_int_equal(q.injections[2].predicted.nudge, 2);
    for (size_t i = 0; i < 3; i++) {
        const optimizer_injection *a = &p.injections[i], *b = &q.injections[i];
        assert_int_equal(a->thread, b->thread);
        assert_int_equal(a->seq, b->seq);
        assert_int_equal(a->pc, b->pc);
        assert_str_or_null(a->function, b->function);
        assert_str_or_null(a->file, b->file);
        assert_int_equal(a->line, b->line);
        assert_str_or_null(a->variable, b->variable);
        assert_int_equal(a->offset, b->offset);
        assert_int_equal(a->delay_ns, b->delay_ns);
        assert_int_equal(a->delay_insns, b->delay_insns);
        assert_int_equal(a->has_predicted, b->has_predicted);
        assert_memory_equal(&a->predicted, &b->predicted, sizeof a->predicted);
    }
    assert_int_equal(optimizer_plan_check_build_id(
                         &q, "plan.json", (const uint8_t *)"\xde\xad\x0b\x1e", 4, err, sizeof err),
                     0);
    assert_int_equal(optimizer_plan_check_build_id(&q, "plan.json", (const uint8_t *)"\xde\xad", 2,
                                                   err, sizeof err),
                     -1);
    assert_string_equal(err, "plan.json: program.build_id: plan is for build-id \"dead0b1e\" but "
                             "/fixtures/avn has \"dead\"");
    /* nudge_ns is written only for a nudged pair: a collision's prediction
     * reads as it did before the key existed. */
    char cmd0[1024];
    snprintf(cmd0, sizeof cmd0,
             "test $(grep -c '\"nudge_ns\": 2' '%s') -eq 1 && "
             "test $(grep -c nudge_ns '%s') -eq 1",
             path, path);
    assert_int_equal(system(cmd0), 0);
    /* No temporary file is left next to the plan. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 1", dir);
    assert_int_equal(system(cmd), 0);
    optimizer_plan_free(&p);
    optimizer_plan_free(&q);
}

static void test_unwritable_and_unreadable(void **state)
{
    (void)state;
    optimizer_plan p, q;
    sample_plan(&p);
    char err[256];
    assert_int_equal(optimizer_plan_write(&p, "/nonexistent-weft-dir/plan.json", err, sizeof err),
                     -1);
    assert_string_equal(err, "/nonexistent-weft-dir/plan.json: cannot create: No such file or "
                             "directory");
    assert_int_equal(
        optimizer_plan_read("/nonexistent-weft-dir/plan.json", NULL, &q, err, sizeof err), -1);
    assert_string_equal(err, "/nonexistent-weft-dir/plan.json: cannot open: No such file or "
                             "directory");
    p.seed = UINT64_MAX; /* cannot be a JSON integer */
    char path[256];
    snprintf(path, sizeof path, "%s/big.json", dir);
    assert_int_equal(optimizer_plan_write(&p, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot encode plan"));
    assert_int_equal(access(path, F_OK), -1);
    optimizer_plan_free(&p);
}

/* The sample plan as JSON text, then one edit at a dotted path ("a.b.2.c",
 * numbers index arrays): replace with a JSON value, or delete when NULL. */
static char *edited(const char *path, const char *value)
{
    optimizer_plan p;
    sample_plan(&p);
    char file[256];
    snprintf(file, sizeof file, "%s/base.json", dir);
    assert_int_equal(optimizer_plan_write(&p, file, NULL, 0), 0);
    optimizer_plan_free(&p);
    json_error_t je;
    json_t *root = json_load_file(file, 0, &je);
    assert_non_null(root);
    if (path) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", path);
        json_t *parent = root;
        char *key = strtok(buf, "."), *next;
        while ((next = strtok(NULL, "."))) {
            parent = json_is_array(parent) ? json_array_get(parent, strtoul(key, NULL, 10))
                                           : json_object_get(parent, key);
            assert_non_null(parent);
            key = next;
        }
        if (!value) {
            json_object_del(parent, key);
        } else {
            json_t *v = json_loads(value, JSON_DECODE_ANY, &je);
            assert_non_null(v);
            if (json_is_array(parent))
                json_array_set_new(parent, strtoul(key, NULL, 10), v);
            else
                json_object_set_new(parent, key, v);
        }
    }
    char *text = json_dumps(root, JSON_ENCODE_ANY);
    json_decref(root);
    return text;
}

typedef struct bad_case {
    const char *path, *value, *message;
} bad_case;

static const bad_case bad_cases[] = {
    {"format", NULL, "format: missing (is this a weft plan?)"},
    {"format", "\"weft-trace\"", "format: must be \"weft-plan\""},
    {"version", "2", "version: unsupported version 2 (this weft reads 1)"},
    {"version", "\"1\"", "version: must be a non-negative integer"},
    {"extra", "1", "extra: unknown key"},
    {"program", NULL, "program: missing"},
    {"program", "[]", "program: must be an object"},
    {"program.path", "7", "program.path: must be a string"},
    {"program.build_id", "\"DEAD\"", "program.build_id: must be lower-case hex digits (or \"\")"},
    {"program.argv", "\"avn\"", "program.argv: must be an array of strings"},
    {"program.argv.1", "3", "program.argv[1]: must be a string"},
    {"platform.mode", "\"fast\"", "platform.mode: must be \"exact\" or \"free\""},
    {"platform.cpi", "0", "platform.cpi: must be a positive integer"},
    {"platform.ps_per_cycle", "1.5", "platform.ps_per_cycle: must be a non-negative integer"},
    {"search.algorithm", "\"ga\"", "search.algorithm: must be one of rnd, shc, sa, exact, manual"},
    {"search.seed", "-1", "search.seed: must be a non-negative integer"},
    {"search.evaluations", NULL, "search.evaluations: missing"},
    {"injections", "{}", "injections: must be an array"},
    {"injections.1", "3", "injections[1]: must be an object"},
    {"injections.1.delay_ns", "-5", "injections[1].delay_ns: must be a non-negative integer"},
    {"injections.0.delay_ns", "\"100\"", "injections[0].delay_ns: must be a non-negative integer"},
    {"injections.0.delay_insns", "7",
     "injections[0].delay_insns: is 7 but delay_ns*1000/(cpi*ps_per_cycle) = 1501"},
    {"injections.0.thread", "3", "injections[0].thread: thread 3 does not exist (the trace has 3)"},
    {"injections.0.thread", "-1", "injections[0].thread: must be a non-negative integer"},
    {"injections.0.seq", "18",
     "injections[0].seq: event 18 is out of range (thread 1 has 18 events)"},
    {"injections.0.pc", "4196880", "injections[0].pc: must be a hex string like \"0x400a10\""},
    {"injections.0.pc", "\"0xg1\"", "injections[0].pc: must be a hex string like \"0x400a10\""},
    {"injections.0.function", "5", "injections[0].function: must be a string or null"},
    {"injections.0.line", "0", "injections[0].line: must be a positive integer or null"},
    {"injections.0.delay", "1", "injections[0].delay: unknown key"},
    {"injections.0.predicted", "[]", "injections[0].predicted: must be an object or null"},
    {"injections.0.predicted.address", "\"here\"",
     "injections[0].predicted.address: must be a hex string like \"0x400a10\""},
    {"injections.0.predicted.time", NULL, "injections[0].predicted.time: missing"},
    {"injections.2.predicted.nudge_ns", "-2",
     "injections[2].predicted.nudge_ns: must be a non-negative integer"},
    {"injections.2.predicted.nudge", "2", "injections[2].predicted.nudge: unknown key"},
};

static void test_malformed_plans(void **state)
{
    (void)state;
    uint64_t events[3] = {5, 18, 1};
    optimizer_plan_limits lim = {.nthreads = 3, .events = events};
    optimizer_plan q;
    char err[256], want[256];
    /* The unedited text is valid: each case fails for its edit alone. */
    char *ok = edited(NULL, NULL);
    assert_int_equal(optimizer_plan_parse(ok, "plan.json", &lim, &q, err, sizeof err), 0);
    optimizer_plan_free(&q);
    free(ok);
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        const bad_case *c = &bad_cases[i];
        char *text = edited(c->path, c->value);
        int rc = optimizer_plan_parse(text, "plan.json", &lim, &q, err, sizeof err);
        snprintf(want, sizeof want, "plan.json: %s", c->message);
        if (rc != -1 || strcmp(err, want) != 0)
            print_error("case %zu (%s = %s): got rc %d \"%s\"\n", i, c->path,
                        c->value ? c->value : "deleted", rc, rc ? err : "");
        assert_int_equal(rc, -1);
        assert_string_equal(err, want);
        assert_null(strchr(err, '\n'));
        free(text);
    }
    assert_int_equal(optimizer_plan_parse("{\"format\": ", "plan.json", NULL, &q, err, sizeof err),
                     -1);
    assert_true(strncmp(err, "plan.json: line 1 column ", 25) == 0);
    assert_int_equal(optimizer_plan_parse("[1, 2]", "plan.json", NULL, &q, err, sizeof err), -1);
    assert_string_equal(err, "plan.json: (top level): must be an object");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_unwritable_and_unreadable),
        cmocka_unit_test(test_malformed_plans),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
