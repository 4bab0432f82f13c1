/* races/: the vector-clock engine on hand-built event sequences
 * (thread creation and join, futex wake -> wait, release/acquire atomics,
 * read-shared state, same-epoch accesses, locks on one side only, atomics
 * against atomics, byte ranges). */
#include "test_races_common.h"

/* ---- happens-before edges ------------------------------------------------------ */

static void test_fork_orders_creator_before_child(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    wr(&b, 0, X, 8, 0x400);
    spawn(&b, 0, 1);
    rd(&b, 1, X, 8, 0x500);
    wr(&b, 1, X, 8, 0x504);
    assert_int_equal(count_races(&b), 0);
    /* The creator after the clone is not ordered with the child. */
    wr(&b, 0, X, 8, 0x404);
    weft_races *d = run(&b);
    assert_int_equal(weft_races_count(d), 2);
    assert_true(has_pair(d, 0x504, 0x404)); /* write-write */
    assert_true(has_pair(d, 0x500, 0x404)); /* read-write */
    const weft_race *r = weft_races_get(d, 0);
    assert_int_equal(r->first.thread, 1);
    assert_int_equal(r->second.thread, 0);
    assert_int_equal(r->addr, X);
    weft_races_free(d);
}

/* glibc's join: an acquire load of the child's tid word, close to where
 * the creator last wrote before the clone. */
static void test_join_by_acquire_near_descriptor(void **state)
{
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        seqb b = {0};
        start_main(&b);
        wr(&b, 0, PD + 0x400, 1, 0x400); /* pthread_create fills in the descriptor */
        spawn(&b, 0, 1);
        wr(&b, 1, X, 8, 0x500);
        add(&b, 1, WEFT_EV_THREAD_EXIT, 0, 0, 0, 0);
        if (variant == 1)
            atom(&b, 0, PD + 0xd0, P_LDAR); /* the tid word */
        if (variant == 2)
            atom(&b, 0, PD + (1u << 20), P_LDAR); /* another descriptor, far away */
        rd(&b, 0, X, 8, 0x404);
        assert_int_equal(count_races(&b), variant == 1 ? 0 : 1);
    }
}

/* A policy lets main clone twice before its first child starts: the first
 * child is the first clone's (its clock, its descriptor for the join), by
 * the thread table's creation times (a fork's clone before them makes no
 * thread). One snapshot per creator gave it the second clone's, and the
 * join of it, near the first descriptor, was lost: a false race. */
static void test_two_clones_before_the_first_start(void **state)
{
    (void)state;
    for (int table = 0; table < 2; table++) {
        seqb b = {0};
        start_main(&b);
        add(&b, 0, WEFT_EV_SYSCALL, 220, 0, 0, 0); /* a fork: no thread */
        wr(&b, 0, PD + 0x400, 1, 0x400);           /* the first child's descriptor */
        add(&b, 0, WEFT_EV_SYSCALL, 220, 0, 0, 0);
        uint64_t born1 = b.time;
        wr(&b, 0, Y, 8, 0x408);               /* after the first clone: races with T1's read */
        wr(&b, 0, PD + (1u << 20), 1, 0x400); /* the second child's, far away */
        add(&b, 0, WEFT_EV_SYSCALL, 220, 0, 0, 0);
        uint64_t born2 = b.time;
        add(&b, 1, WEFT_EV_THREAD_START, 0, 0, 0, 0);
        rd(&b, 1, Y, 8, 0x508);
        wr(&b, 1, X, 8, 0x500);
        add(&b, 1, WEFT_EV_THREAD_EXIT, 0, 0, 0, 0);
        add(&b, 2, WEFT_EV_THREAD_START, 0, 0, 0, 0);
        add(&b, 2, WEFT_EV_THREAD_EXIT, 0, 0, 0, 0);
        atom(&b, 0, PD + 0xd0, P_LDAR); /* joins T1: its tid word */
        rd(&b, 0, X, 8, 0x404);
        weft_races_config cfg = weft_races_config_default();
        cfg.classify = classify;
        char err[256];
        weft_races *d = weft_races_create(&cfg, err, sizeof err);
        assert_non_null(d);
        weft_trace_thread th[3] = {{.id = 0, .parent = UINT32_MAX},
                                   {.id = 1, .start_time = born1},
                                   {.id = 2, .start_time = born2}};
        if (table)
            assert_int_equal(weft_races_threads(d, th, 3), 0);
        for (size_t i = 0; i < b.n; i++)
            assert_int_equal(weft_races_prescan(d, &b.ev[i]), 0);
        for (size_t i = 0; i < b.n; i++)
            assert_int_equal(weft_races_feed(d, &b.ev[i]), 0);
        if (table) { /* Y's race is found, X's join is seen */
            assert_int_equal(weft_races_count(d), 1);
            assert_true(has_pair(d, 0x408, 0x508));
        }
        weft_races_free(d);
    }
}

/* A join that waited: the wait on the tid word has no traced wake; the
 * exit that cleared it resumes the joiner. */
static void test_join_by_futex_wait_resumed_at_exit(void **state)
{
    (void)state;
    for (int exits = 0; exits < 2; exits++) {
        seqb b = {0};
        start_main(&b);
        spawn(&b, 0, 1);
        add(&b, 0, WEFT_EV_FUTEX_WAIT, 0x123450, 0, 0x410, 0);
        wr(&b, 1, X, 8, 0x500);
        if (exits)
            add(&b, 1, WEFT_EV_THREAD_EXIT, 0, 0, 0, 0);
        rd(&b, 0, X, 8, 0x404); /* main's first event after the wait */
        assert_int_equal(count_races(&b), exits ? 0 : 1);
    }
}

static void test_futex_wake_orders_the_waiting_thread(void **state)
{
    (void)state;
    /* variant 0: wake of the word T2 waits on; 1: of another word; 2: the
     * wake comes before T2 starts waiting. */
    for (int variant = 0; variant < 3; variant++) {
        seqb b = {0};
        start_main(&b);
        spawn(&b, 0, 1);
        spawn(&b, 0, 2);
        if (variant != 2)
            add(&b, 2, WEFT_EV_FUTEX_WAIT, 0xf00, 0, 0x600, 0);
        wr(&b, 1, X, 8, 0x500);
        add(&b, 1, WEFT_EV_FUTEX_WAKE, variant == 1 ? 0xf08 : 0xf00, 0, 0x504, 0);
        if (variant == 2)
            add(&b, 2, WEFT_EV_FUTEX_WAIT, 0xf00, 0, 0x600, 0);
        rd(&b, 2, X, 8, 0x604);
        assert_int_equal(count_races(&b), variant == 0 ? 0 : 1);
    }
}

/* Message passing through a flag: store-release then load-acquire orders
 * the payload; relaxed exclusives do not. */
static void test_release_acquire(void **state)
{
    (void)state;
    static const struct {
        int store, load;
        size_t races;
    } cases[] = {{P_STLR, P_LDAR, 0},
                 {P_STXR, P_LDAR, 1},
                 {P_STLR, P_LDXR, 1},
                 {P_LDADDAL, P_LDADDAL, 0},
                 {P_LDADD, P_LDAR, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        seqb b = {0};
        start_main(&b);
        spawn(&b, 0, 1);
        spawn(&b, 0, 2);
        wr(&b, 1, X, 8, 0x500);
        atom(&b, 1, Y, cases[i].store);
        atom(&b, 2, Y, cases[i].load);
        rd(&b, 2, X, 8, 0x600);
        if (count_races(&b) != cases[i].races)
            fail_msg("case %zu: %zu races, expected %zu", i, count_races(&b), cases[i].races);
        /* Without the program's code every atomic is acquire and release. */
        weft_races_config cfg = weft_races_config_default();
        weft_races *d = run_cfg(&b, &cfg);
        assert_int_equal(weft_races_count(d), 0);
        weft_races_free(d);
    }
}

/* A mutex (CAS-acquire to lock, swap-release to unlock, as glibc) orders
 * the accesses that take it, and only those. */
static void test_lock_taken_on_one_side_only(void **state)
{
    (void)state;
    for (int both = 0; both < 2; both++) {
        seqb b = {0};
        start_main(&b);
        spawn(&b, 0, 1);
        spawn(&b, 0, 2);
        atom(&b, 1, Y, P_CASA);
        rd(&b, 1, X, 8, 0x500);
        wr(&b, 1, X, 8, 0x504);
        atom(&b, 1, Y, P_SWPL);
        if (both)
            atom(&b, 2, Y, P_CASA);
        rd(&b, 2, X, 8, 0x600);
        wr(&b, 2, X, 8, 0x604);
        if (both)
            atom(&b, 2, Y, P_SWPL);
        weft_races *d = run(&b);
        if (both) {
            assert_int_equal(weft_races_count(d), 0);
        } else {
            assert_int_equal(weft_races_count(d), 3);
            assert_true(has_pair(d, 0x504, 0x600)); /* write, then the other's read */
            assert_true(has_pair(d, 0x500, 0x604));
            assert_true(has_pair(d, 0x504, 0x604));
        }
        weft_races_free(d);
    }
}

/* ---- FastTrack's states ---------------------------------------------------------- */

static void test_read_shared_then_write(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    wr(&b, 0, X, 8, 0x400);
    spawn(&b, 0, 1);
    spawn(&b, 0, 2);
    rd(&b, 1, X, 8, 0x500);
    rd(&b, 2, X, 8, 0x600); /* concurrent reads: read-shared, no race */
    assert_int_equal(count_races(&b), 0);
    wr(&b, 1, X, 8, 0x504); /* races with T2's read only */
    weft_races *d = run(&b);
    assert_int_equal(weft_races_count(d), 1);
    const weft_race *r = weft_races_get(d, 0);
    assert_int_equal(r->first.thread, 2);
    assert_int_equal(r->first.pc, 0x600);
    assert_int_equal(r->first.kind, WEFT_EV_READ);
    assert_int_equal(r->second.thread, 1);
    assert_int_equal(r->second.pc, 0x504);
    assert_int_equal(r->count, 1);
    weft_races_free(d);
    /* The write took the location back to an epoch: T2 reading again races
     * with the write, and T1's read is forgotten. */
    rd(&b, 2, X, 8, 0x608);
    d = run(&b);
    assert_int_equal(weft_races_count(d), 2);
    assert_true(has_pair(d, 0x504, 0x608));
    weft_races_free(d);
}

static void test_same_epoch_keeps_the_latest_access(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    spawn(&b, 0, 2);
    wr(&b, 1, X, 8, 0x500);
    wr(&b, 1, X, 8, 0x504); /* same epoch: not checked again, remembered */
    rd(&b, 2, X, 8, 0x600);
    rd(&b, 2, X, 8, 0x600); /* same epoch: no second instance */
    weft_races *d = run(&b);
    assert_int_equal(weft_races_count(d), 1);
    const weft_race *r = weft_races_get(d, 0);
    assert_int_equal(r->first.pc, 0x504);
    assert_int_equal(r->first.seq, 2);
    assert_int_equal(r->count, 1);
    weft_races_free(d);
    /* A release starts a new epoch: T2's next read is checked again. */
    atom(&b, 2, Y, P_SWPL);
    rd(&b, 2, X, 8, 0x600);
    d = run(&b);
    assert_int_equal(weft_races_count(d), 1);
    assert_int_equal(weft_races_get(d, 0)->count, 2);
    weft_races_free(d);
}

static void test_atomics_never_race_with_atomics(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    spawn(&b, 0, 2);
    atom(&b, 1, X, P_LDADD);
    atom(&b, 2, X, P_LDADD);
    atom(&b, 2, X, P_LDXR);
    assert_int_equal(count_races(&b), 0);
    wr(&b, 2, X, 8, 0x604); /* plain store to an atomic location */
    /* By default it is a relaxed atomic store (same instruction as plain). */
    assert_int_equal(count_races(&b), 0);
    weft_races_config cfg = weft_races_config_default();
    cfg.classify = classify;
    cfg.atomic_locations = 0;
    weft_races *d = run_cfg(&b, &cfg);
    assert_int_equal(weft_races_count(d), 0); /* T2's own atomics, same epoch */
    weft_races_free(d);
    wr(&b, 1, X, 8, 0x504); /* T1: unordered with T2's read and plain write */
    d = run_cfg(&b, &cfg);
    assert_int_equal(weft_races_count(d), 2);
    const weft_race *r = weft_races_get(d, 0); /* the write check looks at reads first */
    assert_int_equal(r->first.pc, PC(P_LDXR));
    assert_int_equal(r->first.atomic, 1);
    assert_int_equal(r->first.kind, WEFT_EV_READ);
    assert_int_equal(r->second.atomic, 0);
    /* T2's plain write replaced its atomic one of the same epoch as the
     * location's last write: it can race where the atomic one could not. */
    r = weft_races_get(d, 1);
    assert_int_equal(r->first.pc, 0x604);
    assert_int_equal(r->first.atomic, 0);
    weft_races_free(d);
    assert_int_equal(count_races(&b), 0); /* relaxed atomics by default */
}

static void test_byte_ranges(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    spawn(&b, 0, 2);
    wr(&b, 1, X, 4, 0x500);
    wr(&b, 2, X + 4, 4, 0x600); /* adjacent halves of one word: no race */
    rd(&b, 2, X + 4, 1, 0x604);
    assert_int_equal(count_races(&b), 0);
    wr(&b, 2, X + 2, 4, 0x608); /* overlaps T1's bytes 2..3 */
    weft_races *d = run(&b);
    assert_int_equal(weft_races_count(d), 1);
    assert_int_equal(weft_races_get(d, 0)->addr, X + 2);
    weft_races_free(d);
    /* Across a granule boundary, and one instance per access however many
     * granules it spans. */
    wr(&b, 1, Y, 16, 0x508);
    rd(&b, 2, Y + 4, 8, 0x60c);
    rd(&b, 2, Y, 16, 0x610);
    d = run(&b);
    assert_int_equal(weft_races_count(d), 3);
    assert_true(has_pair(d, 0x508, 0x60c));
    assert_true(has_pair(d, 0x508, 0x610));
    for (size_t i = 1; i < 3; i++) {
        assert_int_equal(weft_races_get(d, i)->count, 1);
        assert_int_equal(weft_races_get(d, i)->addr, Y + (i == 1 ? 4 : 0));
    }
    weft_races_free(d);
}

static void test_stack_accesses_are_ignored(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    add(&b, 1, WEFT_EV_WRITE, X, 8, 0x500, WEFT_EVF_STACK);
    add(&b, 0, WEFT_EV_WRITE, X, 8, 0x400, WEFT_EVF_STACK);
    assert_int_equal(count_races(&b), 0);
}

/* A local shared through a pointer: its owner's accesses (flagged LOCAL)
 * race like any other and say whose stack holds it; the creator's local
 * write before the clone is no descriptor for the join rule. */
static void test_local_says_whose_stack(void **state)
{
    (void)state;
    for (int owner_first = 0; owner_first < 2; owner_first++) {
        seqb b = {0};
        start_main(&b);
        spawn(&b, 0, 1);
        if (owner_first)
            add(&b, 0, WEFT_EV_WRITE, X, 4, 0x400, WEFT_EVF_LOCAL);
        add(&b, 1, WEFT_EV_WRITE, X, 4, 0x500, 0);
        if (!owner_first)
            add(&b, 0, WEFT_EV_WRITE, X, 4, 0x400, WEFT_EVF_LOCAL);
        weft_races *d = run(&b);
        assert_int_equal(weft_races_count(d), 1);
        assert_int_equal(weft_races_get(d, 0)->stack_of, 0);
        weft_races_free(d);
    }
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    add(&b, 1, WEFT_EV_WRITE, X, 4, 0x500, 0);
    add(&b, 0, WEFT_EV_WRITE, X, 4, 0x400, 0);
    weft_races *d = run(&b);
    assert_int_equal(weft_races_get(d, 0)->stack_of, UINT32_MAX);
    weft_races_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fork_orders_creator_before_child),
        cmocka_unit_test(test_join_by_acquire_near_descriptor),
        cmocka_unit_test(test_join_by_futex_wait_resumed_at_exit),
        cmocka_unit_test(test_two_clones_before_the_first_start),
        cmocka_unit_test(test_futex_wake_orders_the_waiting_thread),
        cmocka_unit_test(test_release_acquire),
        cmocka_unit_test(test_lock_taken_on_one_side_only),
        cmocka_unit_test(test_read_shared_then_write),
        cmocka_unit_test(test_same_epoch_keeps_the_latest_access),
        cmocka_unit_test(test_atomics_never_race_with_atomics),
        cmocka_unit_test(test_byte_ranges),
        cmocka_unit_test(test_stack_accesses_are_ignored),
        cmocka_unit_test(test_local_says_whose_stack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
