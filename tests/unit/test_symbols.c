/* Symbolization of the lost_update fixture (AArch64, static, -g): data
 * addresses to object+offset, pcs to function and file:line, build-id, and
 * clear errors for files that are not AArch64 ELF. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "weft/trace.h"

static void test_data_symbols(void **state)
{
    (void)state;
    char err[512];
    weft_symbols *s = weft_symbols_open(WEFT_TEST_FIXTURE, err, sizeof err);
    if (!s)
        fail_msg("%s", err);
    uint64_t addr, size;
    assert_int_equal(weft_symbols_lookup(s, "counter", &addr, &size), 0);
    assert_int_equal(size, 8);
    const char *name;
    uint64_t off;
    assert_int_equal(weft_symbols_data(s, addr, &name, &off), 0);
    assert_string_equal(name, "counter");
    assert_int_equal(off, 0);
    assert_int_equal(weft_symbols_data(s, addr + 4, &name, &off), 0);
    assert_string_equal(name, "counter");
    assert_int_equal(off, 4);
    assert_int_equal(weft_symbols_data(s, 0x10, &name, &off), -1);
    assert_null(name);
    assert_int_equal(weft_symbols_lookup(s, "no_such_symbol_anywhere", &addr, &size), -1);
    assert_int_equal(weft_symbols_lookup(s, "worker", &addr, &size), -1);    /* a function */
    assert_int_equal(weft_symbols_function(s, "counter", &addr, &size), -1); /* an object */
    weft_symbols_close(s);
}

static void test_pc_symbols(void **state)
{
    (void)state;
    char err[512];
    weft_symbols *s = weft_symbols_open(WEFT_TEST_FIXTURE, err, sizeof err);
    assert_non_null(s);
    uint64_t worker, size;
    assert_int_equal(weft_symbols_function(s, "worker", &worker, &size), 0);
    assert_true(size >= 8);
    const char *fn, *file;
    int line;
    for (uint64_t pc = worker; pc < worker + size; pc += 4) {
        assert_int_equal(weft_symbols_pc(s, pc, &fn, &file, &line), 0);
        assert_string_equal(fn, "worker");
        assert_non_null(file);
        const char *base = strrchr(file, '/');
        assert_string_equal(base ? base + 1 : file, "lost_update.c");
        /* worker() spans lines 16-24 of fixtures/lost_update.c. */
        assert_in_range(line, 16, 24);
    }
    /* Cached: the same answer, the same strings. */
    const char *fn2, *file2;
    int line2;
    assert_int_equal(weft_symbols_pc(s, worker + 4, &fn, &file, &line), 0);
    assert_int_equal(weft_symbols_pc(s, worker + 4, &fn2, &file2, &line2), 0);
    assert_ptr_equal(fn, fn2);
    assert_ptr_equal(file, file2);
    assert_int_equal(line, line2);

    uint64_t main_addr;
    assert_int_equal(weft_symbols_function(s, "main", &main_addr, NULL), 0);
    assert_int_equal(weft_symbols_pc(s, main_addr, &fn, &file, &line), 0);
    assert_string_equal(fn, "main");

    assert_int_equal(weft_symbols_pc(s, 0, &fn, &file, &line), -1);
    assert_null(fn);
    weft_symbols_close(s);
}

static void test_build_id(void **state)
{
    (void)state;
    uint8_t id[64];
    int n = weft_elf_build_id(WEFT_TEST_FIXTURE, id, sizeof id);
    assert_true(n >= 0);
    if (n == 0)
        printf("# the fixture has no build-id note (toolchain default)\n");
    assert_int_equal(weft_elf_build_id(__FILE__, id, sizeof id), -1);
    assert_int_equal(weft_elf_build_id("/nonexistent-weft-file", id, sizeof id), -1);
}

static void expect_error(const char *path, const char *needle)
{
    char err[512] = "";
    weft_symbols *s = weft_symbols_open(path, err, sizeof err);
    if (s)
        fail_msg("%s opened as symbols", path);
    assert_int_equal(strncmp(err, path, strlen(path)), 0);
    assert_null(strchr(err, '\n'));
    if (!strstr(err, needle))
        fail_msg("error \"%s\" lacks \"%s\"", err, needle);
}

/* The program's own code: the compile units of a static -g binary hold
 * main and worker but not glibc's pthread_mutex_lock, whose entry is a
 * synchronization entry; in a dynamic binary the PLT stubs are. */
static void test_code_map_static(void **state)
{
    (void)state;
    char err[256];
    weft_symbols *s = weft_symbols_open(WEFT_TEST_FIXTURE, err, sizeof err);
    assert_non_null(s);
    weft_code_map m;
    assert_int_equal(weft_code_map_build(s, &m, err, sizeof err), 0);
    assert_int_equal(m.how, WEFT_CODE_DWARF);
    uint64_t main_at, lock_at, malloc_at;
    assert_int_equal(weft_symbols_function(s, "main", &main_at, NULL), 0);
    assert_int_equal(weft_symbols_function(s, "pthread_mutex_lock", &lock_at, NULL), 0);
    assert_int_equal(weft_symbols_function(s, "malloc", &malloc_at, NULL), 0);
    assert_true(weft_code_map_own(&m, main_at));
    assert_false(weft_code_map_own(&m, lock_at));
    assert_false(weft_code_map_own(&m, malloc_at));
    assert_string_equal(weft_code_map_sync(&m, lock_at), "pthread_mutex_lock");
    assert_null(weft_code_map_sync(&m, malloc_at));
    assert_null(weft_code_map_sync(&m, main_at));
    assert_true(m.text_lo <= main_at);
    weft_code_map_free(&m);
    weft_symbols_close(s);
}

static void test_code_map_dynamic(void **state)
{
    (void)state;
    char err[256];
    weft_symbols *s = weft_symbols_open(WEFT_TEST_FIXTURE_DYN, err, sizeof err);
    assert_non_null(s);
    weft_code_map m;
    assert_int_equal(weft_code_map_build(s, &m, err, sizeof err), 0);
    assert_int_equal(m.how, WEFT_CODE_DYNAMIC);
    uint64_t main_at;
    assert_int_equal(weft_symbols_function(s, "main", &main_at, NULL), 0);
    assert_true(weft_code_map_own(&m, main_at));
    /* lost_update locks nothing but creates and joins threads. */
    int create = 0, join = 0;
    for (size_t i = 0; i < m.nsync; i++) {
        create += !strcmp(m.sync[i].name, "pthread_create");
        join += !strcmp(m.sync[i].name, "pthread_join");
        /* A stub lies in the binary's own executable segments. */
        assert_true(weft_code_map_own(&m, m.sync[i].addr));
    }
    assert_int_equal(create, 1);
    assert_int_equal(join, 1);
    weft_code_map_free(&m);
    weft_symbols_close(s);
}

/* The dynamic fixture is position-independent: relocated to where qemu put
 * it, pcs and variables resolve at run-time addresses; its PLT stubs have
 * names of their own; a pc outside its code is no function of its. */
static void test_relocated(void **state)
{
    (void)state;
    char err[256];
    weft_symbols *s = weft_symbols_open(WEFT_TEST_FIXTURE_DYN, err, sizeof err);
    assert_non_null(s);
    weft_code_map m;
    assert_int_equal(weft_code_map_build(s, &m, err, sizeof err), 0);
    uint64_t link_main, link_counter, size, at;
    assert_int_equal(weft_symbols_function(s, "main", &link_main, NULL), 0);
    assert_int_equal(weft_symbols_lookup(s, "counter", &link_counter, &size), 0);
    const uint64_t start = 0x5500000000ull; /* qemu's start_code */
    const uint64_t bias = start - m.text_lo;
    weft_symbols_relocate(s, start);
    assert_true((uint64_t)weft_symbols_bias(s) == bias);
    assert_int_equal(weft_symbols_function(s, "main", &at, NULL), 0);
    assert_true(at == link_main + bias);
    const char *fn = NULL, *file = NULL, *name = NULL;
    int line = 0;
    uint64_t off = 1;
    assert_int_equal(weft_symbols_pc(s, link_main + bias, &fn, &file, &line), 0);
    assert_string_equal(fn, "main");
    assert_non_null(strstr(file, "lost_update.c"));
    assert_true(line > 0);
    assert_int_equal(weft_symbols_data(s, link_counter + bias + 2, &name, &off), 0);
    assert_string_equal(name, "counter");
    assert_int_equal(off, 2);
    /* The stub pthread_create goes through, by its own name. */
    const char *stub = NULL;
    for (size_t i = 0; i < m.nsync; i++)
        if (!strcmp(m.sync[i].name, "pthread_create"))
            assert_int_equal(weft_symbols_pc(s, m.sync[i].addr + bias + 4, &stub, NULL, NULL), 0);
    assert_non_null(stub);
    assert_string_equal(stub, "pthread_create@plt");
    /* The PLT's header, the jump to the lazy binder, is .plt. */
    uint64_t plt0, plt0_size;
    assert_int_equal(weft_symbols_function(s, ".plt", &plt0, &plt0_size), 0);
    assert_int_equal(plt0_size, 32);
    assert_int_equal(weft_symbols_pc(s, plt0 + 8, &stub, NULL, NULL), 0);
    assert_string_equal(stub, ".plt");
    /* Far past the program's code (the C library, say): not found, where
     * the last symbol (_fini) used to claim everything above it. */
    assert_int_equal(weft_symbols_pc(s, start + 0x2800000, &fn, NULL, NULL), -1);
    assert_null(fn);
    weft_code_map_free(&m);
    weft_symbols_close(s);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("/nonexistent-weft-file", "cannot open: No such file or directory");
    expect_error(__FILE__, "not an ELF file");
    expect_error("/proc/self/exe", "expected AArch64"); /* this x86-64 test program */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_symbols),     cmocka_unit_test(test_pc_symbols),
        cmocka_unit_test(test_build_id),         cmocka_unit_test(test_code_map_static),
        cmocka_unit_test(test_code_map_dynamic), cmocka_unit_test(test_relocated),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests_name("symbols", tests, NULL, NULL);
}
