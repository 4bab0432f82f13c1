/* The platform's OS emulator and arbiter without qemu: thread creation
 * times, the futex blocking model (a wait returns at max(own, waker's
 * time)), join through the exit of a thread with a clear-TID word, and
 * deadlock detection, and what counts as a thread parked in qemu's exclusive
 * section. Host threads stand in for guest threads where the
 * platform looks at /proc (it confirms a waiter is asleep in the kernel). */
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "weft/platform.h"

static weft_platform *plat;
static volatile int sleeper_tid;

/* A host thread asleep in a futex, as a guest thread blocked in FUTEX_WAIT
 * is (the word never changes). */
static void *sleeper(void *arg)
{
    (void)arg;
    static uint32_t never_changes;
    sleeper_tid = (int)gettid();
    for (;;)
        syscall(SYS_futex, &never_changes, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    return NULL;
}

/* A host thread asleep in nanosleep: not in a futex. */
static volatile int napper_tid;
static void *napper(void *arg)
{
    (void)arg;
    napper_tid = (int)gettid();
    for (;;) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int start_host_thread(void *(*fn)(void *), volatile int *tid)
{
    pthread_t t;
    pthread_create(&t, NULL, fn, NULL);
    while (!*tid)
        usleep(1000);
    usleep(20000); /* let it fall asleep */
    return *tid;
}

static int sleeping_host_thread(void)
{
    static int tid;
    if (!tid)
        tid = start_host_thread(sleeper, &sleeper_tid);
    return tid;
}

static int napping_host_thread(void)
{
    static int tid;
    if (!tid)
        tid = start_host_thread(napper, &napper_tid);
    return tid;
}

/* Let the watchdog-style probe see the sleeper asleep. */
static void settle(void)
{
    for (int i = 0; i < 5; i++) {
        weft_platform_check_deadlock(plat);
        usleep(30000);
    }
}

static void test_threads_start_at_parent_time(void **state)
{
    (void)state;
    int main_pe = weft_platform_thread_create(plat, -1, 1000, 0, 0);
    assert_int_equal(main_pe, 0);
    int child = weft_platform_thread_create(plat, main_pe, 1001, 500, 0x4000);
    assert_int_equal(child, 1);
    assert_int_equal(weft_platform_thread_start(plat, child), 500);
    assert_int_equal(weft_platform_thread_parent(plat, child), 0);
    assert_int_equal(weft_platform_thread_by_tid(plat, 1001), 1);
    assert_int_equal(weft_platform_thread_by_tid(plat, 4242), -1);
    assert_int_equal(weft_platform_thread_count(plat), 2);
}

static void test_futex_wait_returns_at_waker_time(void **state)
{
    (void)state;
    int host = sleeping_host_thread();
    /* T1 waits at 600 on 0x5000; T0 wakes it at 900: T1 resumes at 900. */
    weft_platform_futex_wait_enter(plat, 1, 0x5000, 600, host, 0);
    assert_int_equal(weft_platform_blocked_on(plat, 1), 0x5000);
    settle();
    assert_int_equal(weft_platform_futex_wake(plat, 0, 0x5000, 1, 900), 1);
    assert_int_equal(weft_platform_futex_wait_return(plat, 1, 600), 900);
    /* A wake before the waiter's own time does not move it back. */
    weft_platform_futex_wait_enter(plat, 1, 0x5000, 2000, host, 0);
    settle();
    assert_int_equal(weft_platform_futex_wake(plat, 0, 0x5000, 1, 1500), 1);
    assert_int_equal(weft_platform_futex_wait_return(plat, 1, 2000), 2000);
    /* A wake of another word wakes nobody; the wait returns at its own time
     * (EAGAIN-like) when the model never woke it. */
    weft_platform_futex_wait_enter(plat, 1, 0x5000, 2100, host, 0);
    settle();
    assert_int_equal(weft_platform_futex_wake(plat, 0, 0x6000, 1, 2500), 0);
    assert_int_equal(weft_platform_futex_wait_return(plat, 1, 2100), 2100);
}

static void test_join_through_exit(void **state)
{
    (void)state;
    int host = sleeping_host_thread();
    /* T0 joins T1: it waits on T1's clear-TID word 0x4000 at 700; T1 exits
     * at 3000, which wakes the word: T0 resumes at 3000. */
    weft_platform_futex_wait_enter(plat, 0, 0x4000, 700, host, 0);
    settle();
    weft_platform_thread_exit(plat, 1, 3000);
    assert_int_equal(weft_platform_futex_wait_return(plat, 0, 700), 3000);
}

static void test_deadlock_detected(void **state)
{
    (void)state;
    int host = sleeping_host_thread();
    /* T2 and T3 each wait on a word nobody will wake; T0 waits too. */
    int a = weft_platform_thread_create(plat, 0, 1002, 3100, 0);
    int b = weft_platform_thread_create(plat, 0, 1003, 3200, 0);
    uint32_t idle = weft_platform_idle_seq(plat);
    weft_platform_futex_wait_enter(plat, a, 0x7000, 3300, host, 0);
    weft_platform_futex_wait_enter(plat, b, 0x7100, 3400, host, 0);
    assert_int_equal(weft_platform_idle_seq(plat), idle); /* T0 still runs */
    weft_platform_futex_wait_enter(plat, 0, 0x7200, 3500, host, 0);
    /* The last runner waits: the watchdog is told at once. */
    assert_int_not_equal(weft_platform_idle_seq(plat), idle);
    weft_platform_wait_idle(plat, idle, 1000000000L); /* returns at once */
    /* A first look that finds every thread blocked says "look again"; a
     * second one with nothing changed in between confirms. */
    int seen = 0, first = 0;
    for (int i = 0; i < 20 && seen != 1; i++) {
        seen = weft_platform_check_deadlock(plat);
        first = first ? first : seen;
        usleep(1000);
    }
    assert_int_equal(first, 2);
    assert_int_equal(seen, 1);
    char buf[1024];
    weft_platform_describe_blocked(plat, buf, sizeof buf);
    assert_non_null(strstr(buf, "T2 (tid 1002) waits on futex 0x7000"));
    assert_non_null(strstr(buf, "T3 (tid 1003) waits on futex 0x7100"));
}

/* After test_deadlock_detected: T2 and T3 still wait for good. T0 waiting
 * with a timeout will wake by itself: no deadlock, however long it sleeps;
 * the same wait without one is one. */
static int deadlock_within(int tries)
{
    int seen = 0;
    for (int i = 0; i < tries && seen != 1; i++) {
        seen = weft_platform_check_deadlock(plat);
        usleep(10000);
    }
    return seen == 1;
}

static void test_timed_wait_is_no_deadlock(void **state)
{
    (void)state;
    int host = sleeping_host_thread();
    weft_platform_futex_wait_return(plat, 0, 3500);
    weft_platform_futex_wait_enter(plat, 0, 0x7200, 3600, host, 1);
    assert_false(deadlock_within(10));
    weft_platform_futex_wait_return(plat, 0, 3600);
    weft_platform_futex_wait_enter(plat, 0, 0x7200, 3700, host, 0);
    assert_true(deadlock_within(20));
}

/* Every thread blocked in the model, but one whose host thread sleeps
 * elsewhere than in a futex (the kernel woke it, or it never got there): no
 * deadlock, however long it stays so. */
static void test_deadlock_needs_every_waiter_in_a_futex(void **state)
{
    (void)state;
    assert_true(deadlock_within(20)); /* as test_timed_wait_is_no_deadlock left it */
    weft_platform_futex_wait_return(plat, 0, 3800);
    weft_platform_futex_wait_enter(plat, 0, 0x7300, 3900, napping_host_thread(), 0);
    assert_false(deadlock_within(10));
    weft_platform_futex_wait_return(plat, 0, 4000);
}

/* Host threads asleep three ways: in a condition wait (how qemu parks a
 * vCPU for an exclusive section), on a mutex (whose holder lets go by
 * itself), in nanosleep. */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER, cond_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static volatile int cond_tid, lock_tid;

static void *in_cond_wait(void *arg)
{
    (void)arg;
    cond_tid = (int)gettid();
    pthread_mutex_lock(&cond_mu);
    for (;;)
        pthread_cond_wait(&never, &cond_mu);
    return NULL;
}

static void *on_mutex(void *arg)
{
    (void)arg;
    lock_tid = (int)gettid();
    pthread_mutex_lock(&held);
    pthread_mutex_unlock(&held);
    return NULL;
}

static void test_stuck_in_qemu_means_a_condition_wait(void **state)
{
    (void)state;
    pthread_t a, b;
    pthread_mutex_lock(&held);
    assert_int_equal(pthread_create(&a, NULL, in_cond_wait, NULL), 0);
    assert_int_equal(pthread_create(&b, NULL, on_mutex, NULL), 0);
    while (!cond_tid || !lock_tid)
        usleep(1000);
    usleep(50000); /* both asleep by now */
    int cond_pe = weft_platform_thread_create(plat, 0, (uint64_t)cond_tid, 0, 0);
    int lock_pe = weft_platform_thread_create(plat, 0, (uint64_t)lock_tid, 0, 0);
    int nap_pe = weft_platform_thread_create(plat, 0, (uint64_t)napping_host_thread(), 0, 0);
    assert_true(cond_pe >= 0 && lock_pe >= 0 && nap_pe >= 0);
    assert_int_equal(weft_platform_stuck_in_qemu(plat, cond_pe), 1);
    assert_int_equal(weft_platform_stuck_in_qemu(plat, lock_pe), 0);
    assert_int_equal(weft_platform_stuck_in_qemu(plat, nap_pe), 0);
    /* Busy in weft's own code: never qemu's. */
    weft_platform_busy(plat, cond_pe, 1);
    assert_int_equal(weft_platform_stuck_in_qemu(plat, cond_pe), 0);
    weft_platform_busy(plat, cond_pe, -1);
    pthread_mutex_unlock(&held);
    pthread_join(b, NULL);
}

int main(void)
{
    weft_platform_config cfg;
    weft_platform_config_default(&cfg);
    cfg.max_pes = 16;
    char err[256];
    plat = weft_platform_create(&cfg, err, sizeof err);
    if (!plat) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_start_at_parent_time),
        cmocka_unit_test(test_futex_wait_returns_at_waker_time),
        cmocka_unit_test(test_join_through_exit),
        cmocka_unit_test(test_deadlock_detected),
        cmocka_unit_test(test_timed_wait_is_no_deadlock),
        cmocka_unit_test(test_deadlock_needs_every_waiter_in_a_futex),
        cmocka_unit_test(test_stuck_in_qemu_means_a_condition_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
