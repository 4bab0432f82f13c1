# A thread asleep on the host's clock (nanosleep, clock_nanosleep) waits on
# the outside world: it is released from the arbiter like a blocking read,
# not counted. Counted, it held up every other thread's gates: a program
# whose helper thread sleeps for an hour while main returns made weft trace
# wait out 23 stall escapes of 2 s (and the escapes were not flagged).
source "$(dirname "$0")/lib.sh"
cat >"$work/sleeper.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static void *nap(void *arg)
{
    struct timespec ts = {3600, 0};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, 0);
    return arg;
}
static void *doze(void *arg)
{
    for (;;)
        sleep(100);
    return arg;
}
int main(void)
{
    pthread_t a, b;
    pthread_create(&a, 0, nap, 0);
    pthread_create(&b, 0, doze, 0);
    usleep(2000); /* both asleep by now, most likely */
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    for (int i = 0; i < 1000; i++) { /* gates for the sleepers to hold up */
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    printf("main returns\n");
    fflush(stdout);
    return 7;
}
C
if ! aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/sleeper" "$work/sleeper.c"; then
  fail "the cross compiler failed"
  finish
fi
for m in free exact; do
  run_status st "$WEFT" trace --mode $m -o "$work/$m.wtr" -- "$work/sleeper" \
    >"$work/$m.out" 2>"$work/$m.err"
  check "$m: the guest's status 7 (got $st)" test "$st" = 7
  check "$m: its output" grep -qx "main returns" "$work/$m.out"
  check "$m: no stall escape" grep -q "stall escapes 0;" "$work/$m.err"
  check "$m: no gate gave up waiting" bash -c "! grep -q 'gave up waiting' '$work/$m.err'"
done
finish
