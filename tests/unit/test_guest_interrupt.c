/* guest_note_interrupt: a SIGINT that a caller's handler took (between two
 * runs, before the run's own handler was in place) must still end the next
 * run at once as interrupted, not let it go on to its time limit. The note
 * lasts for the process, so each case runs in a child of its own. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/guest.h"

/* parallel8 with 10^7 passes runs for hours under qemu. */
static char *long_argv[] = {WEFT_TEST_FIXTURES "/parallel8", "10000000", NULL};
static char *short_argv[] = {WEFT_TEST_FIXTURES "/lost_update_ok", NULL};

static guest_result run(char **argv, unsigned timeout_s)
{
    guest_run r = {
        .binary = argv[0], .argv = argv, .argc = argv[1] ? 2 : 1, .timeout_s = timeout_s};
    guest_result res = {0};
    if (guest_run_qemu(&r, &res) != 0)
        res.end = (guest_end)-1;
    return res;
}

/* The child's verdict as its exit status: 0 as expected, else which check
 * failed. */
static int in_child(int (*body)(void))
{
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 1); /* the guest's output */
        _exit(body());
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static int noted_before(void)
{
    guest_note_interrupt(SIGINT);
    guest_result r = run(long_argv, 30);
    if (r.end != GUEST_INTERRUPTED)
        return r.end == GUEST_TIMED_OUT ? 2 : 1;
    return r.status == SIGINT ? 0 : 3;
}

static void test_noted_before_the_run(void **state)
{
    (void)state;
    assert_int_equal(in_child(noted_before), 0);
}

/* The first stop noted is the one reported. */
static int first_wins(void)
{
    guest_note_interrupt(SIGTERM);
    guest_note_interrupt(SIGINT);
    guest_result r = run(long_argv, 30);
    return r.end == GUEST_INTERRUPTED && r.status == SIGTERM ? 0 : 1;
}

static void test_first_signal_is_reported(void **state)
{
    (void)state;
    assert_int_equal(in_child(first_wins), 0);
}

static int nothing_noted(void)
{
    guest_result r = run(short_argv, 120);
    return r.end == GUEST_EXITED && r.status == 0 ? 0 : 1;
}

static void test_without_a_note_the_run_ends_by_itself(void **state)
{
    (void)state;
    assert_int_equal(in_child(nothing_noted), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_noted_before_the_run),
        cmocka_unit_test(test_first_signal_is_reported),
        cmocka_unit_test(test_without_a_note_the_run_ends_by_itself),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
