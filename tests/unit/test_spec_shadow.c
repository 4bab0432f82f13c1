/* The speculation check: which pairs count as ordered, which pc is blamed,
 * whichever order the host hands the two accesses in; words, pages and the
 * memory budget; threads checking at once. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "spec_shadow.h"

#define NO_SYNC (-1)

typedef struct fixture {
    spec_shadow *s;
    spec_cursor cur[8];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = spec_shadow_new((size_t)64 << 20);
    assert_non_null(f->s);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    spec_shadow_free(f->s);
    free(f);
    return 0;
}

/* Check one 8-byte access; returns the number of blames, the first in *pc. */
static int access_(fixture *f, uint32_t pe, int write, uint64_t addr, uint64_t t, uint64_t pc,
                   uint64_t sync_t, int32_t sync_pe, uint64_t *blamed)
{
    spec_access a = {.addr = addr,
                     .size = 8,
                     .write = write,
                     .t = t,
                     .pe = pe,
                     .pc = pc,
                     .sync_t = sync_t,
                     .sync_pe = sync_pe};
    uint64_t b[SPEC_MAX_BLAMES];
    int n = spec_shadow_check(f->s, &f->cur[pe], &a, b);
    if (n > 0 && blamed)
        *blamed = b[0];
    return n;
}

#define W 1
#define R 0
#define X_ 0x1000u
#define Y_ (X_ + 64) /* another line: threads on X_ do not share it */

static void test_synced_pair_is_ordered(void **state)
{
    fixture *f = *state;
    assert_int_equal(access_(f, 0, W, X_, 100, 0x400, 0, NO_SYNC, NULL), 0);
    /* Y passed a gate at 150: X's write at 100 was done before. */
    assert_int_equal(access_(f, 1, R, X_, 200, 0x500, 150, 1, NULL), 0);
}

static void test_unsynced_pair_blames_the_later(void **state)
{
    fixture *f = *state;
    uint64_t pc = 0;
    assert_int_equal(access_(f, 0, W, X_, 100, 0x400, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 1, R, X_, 200, 0x500, 50, 1, &pc), 1);
    assert_int_equal(pc, 0x500);
}

static void test_later_first_blames_the_later(void **state)
{
    fixture *f = *state;
    uint64_t pc = 0;
    /* The host ran Y's read at 200 before X's write at 100: Y's read is
     * blamed, and X's write as well (it may hide pairs with earlier ones). */
    assert_int_equal(access_(f, 1, R, X_, 200, 0x500, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 0, W, X_, 100, 0x400, 0, NO_SYNC, &pc), 2);
    assert_int_equal(pc, 0x500);
}

static void test_reads_and_own_accesses_never_conflict(void **state)
{
    fixture *f = *state;
    assert_int_equal(access_(f, 0, R, X_, 100, 0x400, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 1, R, X_, 50, 0x500, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 2, R, X_, 300, 0x600, 0, NO_SYNC, NULL), 0);
    /* One thread writing out of its own order is not a cross-thread pair. */
    assert_int_equal(access_(f, 3, W, Y_, 300, 0x700, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 3, W, Y_, 100, 0x708, 0, NO_SYNC, NULL), 0);
}

static void test_write_after_reads_conflicts(void **state)
{
    fixture *f = *state;
    uint64_t pc = 0;
    assert_int_equal(access_(f, 1, R, X_, 100, 0x500, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 0, W, X_, 200, 0x400, 90, 0, &pc), 1);
    assert_int_equal(pc, 0x400);
}

static void test_gated_access_is_ordered(void **state)
{
    fixture *f = *state;
    assert_int_equal(access_(f, 0, W, X_, 100, 0x400, 0, NO_SYNC, NULL), 0);
    /* A passed gate makes the access's own key its sync key. */
    assert_int_equal(access_(f, 1, W, X_, 120, 0x500, 120, 1, NULL), 0);
    /* Done before an earlier access all the same (a hole in the arbiter's
     * order): blamed with the gated bit. */
    spec_access a = {.addr = X_,
                     .size = 8,
                     .write = 1,
                     .t = 500,
                     .pe = 2,
                     .pc = 0x600,
                     .gated = 1,
                     .sync_t = 500,
                     .sync_pe = 2};
    uint64_t b[SPEC_MAX_BLAMES];
    assert_int_equal(spec_shadow_check(f->s, &f->cur[2], &a, b), 0);
    assert_int_equal(access_(f, 3, R, X_, 400, 0x700, 0, NO_SYNC, &b[0]), 2);
    assert_int_equal(b[0], 0x601);
    /* A gated access done after a later one blames only that one. */
    a = (spec_access){.addr = X_,
                      .size = 8,
                      .write = 1,
                      .t = 450,
                      .pe = 4,
                      .pc = 0x800,
                      .gated = 1,
                      .sync_t = 450,
                      .sync_pe = 4};
    assert_int_equal(spec_shadow_check(f->s, &f->cur[4], &a, b), 1);
    assert_int_equal(b[0], 0x601);
}

static void test_equal_times_break_ties_by_pe(void **state)
{
    fixture *f = *state;
    uint64_t pc = 0;
    /* (100, T0) < (100, T1): T1's gate at 100 ordered it after T0's write. */
    assert_int_equal(access_(f, 0, W, X_, 100, 0x400, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 1, R, X_, 100, 0x500, 100, 1, NULL), 0);
    /* (100, T3) comes after (100, T2): done first, it is blamed. */
    assert_int_equal(access_(f, 3, W, Y_, 100, 0x700, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 2, R, Y_, 100, 0x600, 100, 2, &pc), 2);
    assert_int_equal(pc, 0x700);
}

static void test_own_largest_key_does_not_hide_others(void **state)
{
    fixture *f = *state;
    uint64_t pc = 0;
    assert_int_equal(access_(f, 1, W, X_, 100, 0x500, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 0, W, X_, 300, 0x400, 200, 0, NULL), 0);
    /* T0 reads after its own write at 300: T1's write at 100 is below its sync. */
    assert_int_equal(access_(f, 0, R, X_, 350, 0x404, 320, 0, NULL), 0);
    /* T2 synced at 250 only: T0's write at 300 is not ordered before its read. */
    assert_int_equal(access_(f, 2, R, X_, 400, 0x600, 250, 2, &pc), 1);
    assert_int_equal(pc, 0x600);
    /* T1 synced at 310: the largest other write (T0's at 300) is ordered. */
    assert_int_equal(access_(f, 1, R, X_, 500, 0x504, 310, 1, NULL), 0);
}

/* A line one thread owns keeps that thread's largest keys, not its latest:
 * a word's seed is never later than them, never earlier than its access. */
static void test_owner_keeps_its_largest_key(void **state)
{
    fixture *f = *state;
    uint64_t pc = 0;
    assert_int_equal(access_(f, 0, W, X_, 300, 0x400, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 0, W, X_, 100, 0x404, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 1, R, X_, 400, 0x500, 250, 1, &pc), 1);
    assert_int_equal(pc, 0x500);
}

/* A second thread on a line: words the owner never touched start empty (no
 * blame for sharing only the line), words it touched carry the owner's time
 * on that word, not its largest on the line. */
static void test_line_taken_over(void **state)
{
    fixture *f = *state;
    uint64_t b[SPEC_MAX_BLAMES];
    assert_int_equal(access_(f, 0, W, X_, 100, 0x400, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 0, W, X_ + 8, 300, 0x404, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 1, W, X_ + 16, 200, 0x500, 150, 1, NULL), 0);
    /* X_'s write was at 100, below the sync key, though the line's largest
     * is 300: ordered. */
    assert_int_equal(access_(f, 1, R, X_, 250, 0x504, 150, 1, NULL), 0);
    /* X_ + 8's at 300 is later and already done. */
    spec_access a = {.addr = X_ + 8,
                     .size = 8,
                     .write = 0,
                     .t = 250,
                     .pe = 1,
                     .pc = 0x504,
                     .sync_t = 150,
                     .sync_pe = 1};
    assert_int_equal(spec_shadow_check(f->s, &f->cur[1], &a, b), 2);
    assert_int_equal(b[0], 0x404);
    assert_int_equal(b[1], 0x504);
    /* Synced past the owner's write at 300: ordered. */
    assert_int_equal(access_(f, 1, R, X_, 400, 0x504, 350, 1, NULL), 0);
    /* The owner's word next to T1's is its own. */
    assert_int_equal(access_(f, 0, W, X_ + 24, 500, 0x404, 0, NO_SYNC, NULL), 0);
    /* An access over both of them meets T1's write. */
    spec_access both = {.addr = X_ + 16,
                        .size = 16,
                        .write = 0,
                        .t = 600,
                        .pe = 0,
                        .pc = 0x408,
                        .sync_t = 0,
                        .sync_pe = NO_SYNC};
    assert_int_equal(spec_shadow_check(f->s, &f->cur[0], &both, b), 1);
    assert_int_equal(b[0], 0x408);
}

/* A line that lives long keeps its words' times in coarser steps, rounded
 * up: a seed is late by less than a step, never early. */
static void test_line_steps_round_up(void **state)
{
    fixture *f = *state;
    uint64_t pc = 0;
    assert_int_equal(access_(f, 0, W, X_, 100, 0x400, 0, NO_SYNC, NULL), 0);
    assert_int_equal(access_(f, 0, W, X_ + 8, 1000, 0x404, 0, NO_SYNC, NULL), 0);
    /* 10^9 cycles after the first access: 255 steps of 2^22 cycles. */
    assert_int_equal(access_(f, 0, W, X_ + 16, 100 + 1000000000, 0x408, 0, NO_SYNC, NULL), 0);
    uint64_t step = 1u << 22;
    /* X_ + 8 was written at 1000, in the first step: seeded at its end. */
    assert_int_equal(access_(f, 1, R, X_ + 8, 2 * step, 0x500, 100 + step - 2, 1, &pc), 1);
    assert_int_equal(pc, 0x500);
    assert_int_equal(access_(f, 1, R, X_ + 8, 2 * step, 0x504, 100 + step, 1, NULL), 0);
    /* X_ (at 100) too, though its first step was 1 cycle long. */
    assert_int_equal(access_(f, 1, R, X_, 2 * step, 0x508, 100 + step, 1, NULL), 0);
    assert_int_equal(access_(f, 2, R, X_, 2 * step, 0x600, 100 + step - 2, 1, &pc), 1);
    assert_int_equal(pc, 0x600);
}

static void test_access_spanning_a_page_checks_both_words(void **state)
{
    fixture *f = *state;
    uint64_t pc = 0;
    uint64_t edge = (uint64_t)1 << SPEC_PAGE_SHIFT;
    spec_access a = {.addr = edge - 8,
                     .size = 16,
                     .write = 1,
                     .t = 100,
                     .pe = 0,
                     .pc = 0x400,
                     .sync_t = 0,
                     .sync_pe = NO_SYNC};
    uint64_t b[SPEC_MAX_BLAMES];
    assert_int_equal(spec_shadow_check(f->s, &f->cur[0], &a, b), 0);
    assert_int_equal(access_(f, 1, R, edge, 200, 0x500, 50, 1, &pc), 1);
    assert_int_equal(pc, 0x500);
    assert_int_equal(access_(f, 1, R, edge - 8, 200, 0x508, 150, 1, NULL), 0);
    /* Two pages touched, in each one line touched by two threads. */
    assert_int_equal(spec_shadow_bytes(f->s),
                     2 * SPEC_PAGE_RECORD_BYTES + 2 * SPEC_LINE_WORDS_BYTES);
}

static void test_budget_exhausted(void **state)
{
    (void)state;
    spec_shadow *s = spec_shadow_new(SPEC_PAGE_RECORD_BYTES);
    spec_cursor c = {0}, c1 = {0};
    uint64_t b[SPEC_MAX_BLAMES];
    spec_access a = {
        .addr = 0x1000, .size = 8, .write = 1, .t = 1, .pe = 0, .pc = 4, .sync_pe = NO_SYNC};
    assert_int_equal(spec_shadow_check(s, &c, &a, b), 0);
    a.addr = 0x100000; /* a second page */
    assert_int_equal(spec_shadow_check(s, &c, &a, b), -1);
    a.addr = 0x1000; /* the first page's line, now touched by a second thread */
    a.pe = 1;
    assert_int_equal(spec_shadow_check(s, &c1, &a, b), -1);
    assert_int_equal(spec_shadow_bytes(s), SPEC_PAGE_RECORD_BYTES);
    spec_shadow_free(s);
}

typedef struct worker {
    spec_shadow *s;
    spec_cursor c; /* the shadow keeps pointers to it: outlives the thread */
    uint32_t pe;
    int shared;
    int blames;
} worker;

/* Eight threads on one page: private lines never blame, a word they all
 * write without ordering always does, and concurrent checks lose nothing. */
static void *hammer(void *arg)
{
    worker *w = arg;
    uint64_t b[SPEC_MAX_BLAMES];
    for (uint64_t i = 0; i < 200000; i++) {
        spec_access a = {.addr = 0x8000 + (w->shared ? 0 : 64 * (1 + w->pe)),
                         .size = 8,
                         .write = 1,
                         .t = i,
                         .pe = w->pe,
                         .pc = 0x400 + 4 * w->pe,
                         .sync_t = i,
                         .sync_pe = (int32_t)w->pe};
        int n = spec_shadow_check(w->s, &w->c, &a, b);
        if (n < 0)
            return NULL;
        w->blames += n;
    }
    return NULL;
}

static void run_hammer(int shared, int *blames)
{
    spec_shadow *s = spec_shadow_new((size_t)1 << 20);
    worker w[8];
    pthread_t th[8];
    for (uint32_t i = 0; i < 8; i++) {
        w[i] = (worker){.s = s, .pe = i, .shared = shared};
        assert_int_equal(pthread_create(&th[i], NULL, hammer, &w[i]), 0);
    }
    *blames = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        *blames += w[i].blames;
    }
    spec_shadow_free(s);
}

static void test_threads_private_words(void **state)
{
    (void)state;
    int blames;
    run_hammer(0, &blames);
    assert_int_equal(blames, 0);
}

static void test_threads_shared_word(void **state)
{
    (void)state;
    int blames;
    /* Every thread's sync key is its own time: (i, pe) is ordered after every
     * other thread's (i', pe') < (i, pe) only if that was done first, which
     * eight free-running threads cannot all manage. */
    run_hammer(1, &blames);
    assert_true(blames > 0);
}

#define RACE_LINES 20000u

typedef struct race {
    spec_shadow *s;
    spec_cursor c[3];
    _Atomic uint32_t ready; /* lines the owner has claimed */
} race;

static void race_access(race *r, uint32_t pe, int write, uint32_t line, uint64_t word, uint64_t t,
                        uint64_t sync_t, int32_t sync_pe, int *blames)
{
    spec_access a = {.addr = 0x100000 + 64 * (uint64_t)line + 8 * word,
                     .size = 8,
                     .write = write,
                     .t = t,
                     .pe = pe,
                     .pc = 0x400 + 4 * pe,
                     .sync_t = sync_t,
                     .sync_pe = sync_pe};
    uint64_t b[SPEC_MAX_BLAMES];
    int n = spec_shadow_check(r->s, &r->c[pe], &a, b);
    assert_true(n >= 0);
    if (blames)
        *blames = n;
}

/* The owner claims a line, then writes it again without a lock while the
 * taker takes the line over. */
static void *race_owner(void *arg)
{
    race *r = arg;
    for (uint32_t l = 0; l < RACE_LINES; l++) {
        race_access(r, 0, 1, l, 0, 1, 1, 0, NULL);
        atomic_store(&r->ready, l + 1);
        race_access(r, 0, 1, l, 0, 2, 2, 0, NULL);
    }
    return NULL;
}

static void *race_taker(void *arg)
{
    race *r = arg;
    for (uint32_t l = 0; l < RACE_LINES; l++) {
        while (atomic_load(&r->ready) <= l)
            ;
        race_access(r, 1, 0, l, 1, 0, 0, NO_SYNC, NULL);
    }
    return NULL;
}

/* Whichever way the owner's second write and the takeover meet, the write
 * is in the line's words afterwards: a read synced past the first write
 * only is blamed for it on every line. (The window membarrier closes, an
 * owner stopped between its look at the line and its record, is a few
 * instructions wide: this checks the ways around it, not the window.) */
static void test_owner_racing_a_takeover(void **state)
{
    (void)state;
    race *r = calloc(1, sizeof *r);
    r->s = spec_shadow_new((size_t)256 << 20);
    pthread_t owner, taker;
    assert_int_equal(pthread_create(&owner, NULL, race_owner, r), 0);
    assert_int_equal(pthread_create(&taker, NULL, race_taker, r), 0);
    pthread_join(owner, NULL);
    pthread_join(taker, NULL);
    uint32_t unblamed = 0;
    for (uint32_t l = 0; l < RACE_LINES; l++) {
        int n;
        race_access(r, 2, 0, l, 0, 1, 1, 2, &n);
        unblamed += n == 0;
    }
    assert_int_equal(unblamed, 0);
    spec_shadow_free(r->s);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_synced_pair_is_ordered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_pair_blames_the_later, setup, teardown),
        cmocka_unit_test_setup_teardown(test_later_first_blames_the_later, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reads_and_own_accesses_never_conflict, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_write_after_reads_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gated_access_is_ordered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_equal_times_break_ties_by_pe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_own_largest_key_does_not_hide_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_owner_keeps_its_largest_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_line_steps_round_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_line_taken_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_access_spanning_a_page_checks_both_words, setup,
                                        teardown),
        cmocka_unit_test(test_budget_exhausted),
        cmocka_unit_test(test_threads_private_words),
        cmocka_unit_test(test_threads_shared_word),
        cmocka_unit_test(test_owner_racing_a_takeover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
