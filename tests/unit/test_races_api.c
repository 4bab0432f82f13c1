/* races/: the instruction classifier (on encodings, and on a real
 * fixture's code), the API's results and errors, and the text and JSON
 * output. */
#include <unistd.h>

#include <jansson.h>

#include "races_state.h"
#include "test_races_common.h"

#define K WEFT_INSN_KNOWN
#define AT WEFT_INSN_ATOMIC
#define AQ WEFT_INSN_ACQUIRE
#define RL WEFT_INSN_RELEASE
#define RMW WEFT_INSN_RMW

static void test_insn_class(void **state)
{
    (void)state;
    static const struct {
        uint32_t w;
        unsigned want;
    } cases[] = {
        {I_LDAR, K | AT | AQ},
        {I_STLR, K | AT | RL},
        {I_LDXR, K | AT},
        {I_LDAXR, K | AT | AQ},
        {I_STXR, K | AT},
        {I_STLXR, K | AT | RL},
        {I_CAS, K | AT | RMW},
        {I_CASA, K | AT | RMW | AQ},
        {I_CASL, K | AT | RMW | RL},
        {I_CASAL, K | AT | RMW | AQ | RL},
        {I_LDADD, K | AT | RMW},
        {I_LDADDA, K | AT | RMW | AQ},
        {I_LDADDL, K | AT | RMW | RL},
        {I_LDADDAL, K | AT | RMW | AQ | RL},
        {I_SWPAL, K | AT | RMW | AQ | RL},
        {I_SWPL, K | AT | RMW | RL},
        {I_LDAPR, K | AT | AQ},
        {I_LDR, K},
        {I_STR, K},
        {I_LDP, K},
        {I_CASP, K | AT | RMW},
        {I_CASPAL, K | AT | RMW | AQ | RL},
        {I_LDAXP, K | AT | AQ},
        {I_STLURB, K | AT | RL},
        {I_LDAPUR, K | AT | AQ},
        {I_ADD, K},
        {I_STADD, K | AT | RMW},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (weft_races_insn_class(cases[i].w) != cases[i].want)
            fail_msg("word %#x: class %#x, expected %#x", cases[i].w,
                     weft_races_insn_class(cases[i].w), cases[i].want);
    }
}

/* The outlined atomics glibc and the fixtures use, read from the program:
 * each helper's LSE instruction has the ordering its name says. */
static void test_insn_from_the_program(void **state)
{
    (void)state;
    char err[256];
    races_code *code = races_code_open(WEFT_TEST_FIXTURE, 0, NULL, 0, err, sizeof err);
    weft_symbols *syms = weft_symbols_open(WEFT_TEST_FIXTURE, err, sizeof err);
    assert_non_null(code);
    assert_non_null(syms);
    static const struct {
        const char *fn;
        unsigned want;
    } helpers[] = {{"__aarch64_ldadd8_acq_rel", AQ | RL},
                   {"__aarch64_swp4_rel", RL},
                   {"__aarch64_cas4_acq", AQ}};
    for (size_t i = 0; i < sizeof helpers / sizeof *helpers; i++) {
        uint64_t addr, size;
        assert_int_equal(weft_symbols_function(syms, helpers[i].fn, &addr, &size), 0);
        unsigned found = 0;
        for (uint64_t pc = addr; pc < addr + size && !found; pc += 4) {
            unsigned c = races_code_classify(code, pc);
            assert_true(c & K);
            if (c & RMW)
                found = c;
        }
        if ((found & (AQ | RL)) != helpers[i].want)
            fail_msg("%s: class %#x, expected ordering %#x", helpers[i].fn, found, helpers[i].want);
    }
    assert_int_equal(races_code_classify(code, 0x10), 0); /* not in the code */
    weft_symbols_close(syms);
    races_code_close(code);

    /* Through the detector: message passing with the release-only swap on
     * both sides orders nothing; the acquiring CAS on the reader's side
     * does. */
    for (int reader_cas = 0; reader_cas < 2; reader_cas++) {
        weft_races_config cfg = weft_races_config_default();
        cfg.binary = WEFT_TEST_FIXTURE;
        weft_races *d = weft_races_create(&cfg, err, sizeof err);
        assert_non_null(d);
        syms = weft_symbols_open(WEFT_TEST_FIXTURE, err, sizeof err);
        uint64_t swp, cas, size;
        assert_int_equal(weft_symbols_function(syms, "__aarch64_swp4_rel", &swp, &size), 0);
        assert_int_equal(weft_symbols_function(syms, "__aarch64_cas4_acq", &cas, &size), 0);
        weft_symbols_close(syms);
        /* the LSE instruction: the first word of the helper that is one */
        code = races_code_open(WEFT_TEST_FIXTURE, 0, NULL, 0, err, sizeof err);
        while (!(races_code_classify(code, swp) & RMW))
            swp += 4;
        while (!(races_code_classify(code, cas) & RMW))
            cas += 4;
        races_code_close(code);
        seqb b = {0};
        start_main(&b);
        spawn(&b, 0, 1);
        spawn(&b, 0, 2);
        wr(&b, 1, X, 8, 0x500);
        add(&b, 1, WEFT_EV_RMW, Y, 4, swp, WEFT_EVF_ATOMIC);
        if (reader_cas)
            add(&b, 2, WEFT_EV_WRITE, Y, 4, cas, WEFT_EVF_EXCLUSIVE);
        else
            add(&b, 2, WEFT_EV_RMW, Y, 4, swp, WEFT_EVF_ATOMIC);
        rd(&b, 2, X, 8, 0x600);
        for (size_t i = 0; i < b.n; i++)
            assert_int_equal(weft_races_prescan(d, &b.ev[i]), 0);
        for (size_t i = 0; i < b.n; i++)
            assert_int_equal(weft_races_feed(d, &b.ev[i]), 0);
        assert_int_equal(weft_races_count(d), reader_cas ? 0 : 1);
        weft_races_free(d);
    }
}

/* ---- API ---------------------------------------------------------------------------- */

static void test_pcs_and_errors(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    wr(&b, 1, X, 8, 0x900);
    wr(&b, 0, X, 8, 0x300);
    wr(&b, 1, Y, 8, 0x900);
    wr(&b, 0, Y, 8, 0x100);
    weft_races *d = run(&b);
    const uint64_t *pcs;
    assert_int_equal(weft_races_pcs(d, &pcs), 3);
    assert_int_equal(pcs[0], 0x100);
    assert_int_equal(pcs[1], 0x300);
    assert_int_equal(pcs[2], 0x900);
    weft_races_stats st;
    weft_races_get_stats(d, &st);
    assert_int_equal(st.threads, 2);
    assert_int_equal(st.accesses, 4);
    assert_int_equal(st.events, b.n);
    weft_event bad = {.thread = WEFT_TRACE_MAX_THREADS, .kind = WEFT_EV_READ, .size = 1};
    assert_int_equal(weft_races_feed(d, &bad), -1);
    assert_non_null(strstr(weft_races_error(d), "thread index"));
    weft_races_free(d);

    char err[256];
    weft_races_config cfg = weft_races_config_default();
    cfg.binary = "/nonexistent/prog";
    assert_null(weft_races_create(&cfg, err, sizeof err));
    assert_string_equal(err, "/nonexistent/prog: cannot open: No such file or directory");
    cfg.binary = "/bin/true"; /* the host's */
    assert_null(weft_races_create(&cfg, err, sizeof err));
    assert_string_equal(err, "/bin/true: not an AArch64 program");
}

static void test_output(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    wr(&b, 1, X, 8, 0x900);
    rd(&b, 0, X + 2, 2, 0x300);
    weft_races *d = run(&b);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    weft_races_source src = {.trace = "t.wtr", .decoded = 1};
    assert_int_equal(weft_races_print(d, &src, NULL, m), 0);
    fclose(m);
    assert_non_null(strstr(text, "race 1 on 0x500002: 1 instance, the first:\n"));
    assert_non_null(strstr(text, "T1   write  8 bytes at 40 ns (seq 1), pc 0x900 in ?"));
    assert_non_null(strstr(text, "T0   read   2 bytes at 50 ns (seq 2), pc 0x300 in ?"));
    free(text);

    char dir[] = "/tmp/test_races.XXXXXX", path[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/r.json", dir);
    assert_int_equal(weft_races_write(d, &src, NULL, WEFT_RACES_JSON, path, err, sizeof err), 0);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "format")), "weft-races");
    json_t *r0 = json_array_get(json_object_get(root, "races"), 0);
    assert_string_equal(json_string_value(json_object_get(r0, "address")), "0x500002");
    assert_int_equal(json_integer_value(json_object_get(r0, "count")), 1);
    json_t *second = json_object_get(r0, "second");
    assert_string_equal(json_string_value(json_object_get(second, "kind")), "read");
    assert_string_equal(json_string_value(json_object_get(second, "pc")), "0x300");
    assert_int_equal(json_integer_value(json_object_get(second, "seq")), 2);
    assert_true(json_is_null(json_object_get(second, "line")));
    assert_int_equal(json_array_size(json_object_get(root, "pcs")), 2);
    json_decref(root);
    /* A folder that does not exist: one line, nothing left behind. */
    snprintf(path, sizeof path, "%s/no/r.json", dir);
    assert_int_equal(weft_races_write(d, &src, NULL, WEFT_RACES_JSON, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot create: No such file or directory"));
    snprintf(path, sizeof path, "%s/r.json", dir);
    unlink(path);
    assert_int_equal(rmdir(dir), 0); /* empty: no temporary file left */
    weft_races_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_insn_class),
        cmocka_unit_test(test_insn_from_the_program),
        cmocka_unit_test(test_pcs_and_errors),
        cmocka_unit_test(test_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
