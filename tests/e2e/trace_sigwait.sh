# A signal sent to the whole process while every guest thread blocks it (a
# thread takes it with sigwait) may go to any host thread that does not
# block it: weft's watchdog did not, and qemu's handler, run on a thread
# that is no vCPU, crashed the guest (SIGSEGV in 8 traces of 8). weft's
# own threads start with every signal blocked.
source "$(dirname "$0")/lib.sh"
cat >"$work/sigw.c" <<'C'
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static sigset_t set;
static void *taker(void *arg)
{
    int sig = -1;
    int r = sigwait(&set, &sig);
    printf("sigwait %d got %d\n", r, sig);
    return arg;
}
int main(void)
{
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, 0);
    pthread_t t;
    pthread_create(&t, 0, taker, 0);
    kill(getpid(), SIGUSR2);
    pthread_join(t, 0);
    return 0;
}
C
if ! aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/sigw" "$work/sigw.c"; then
  fail "the cross compiler failed"
  finish
fi
for m in free exact; do
  for i in 1 2 3; do
    run_status st "$WEFT" trace -q --mode $m -o "$work/$m$i.wtr" -- "$work/sigw" \
      >"$work/$m$i.out" 2>"$work/$m$i.err"
    check "trace $m $i: status 0 (got $st), the signal taken" \
      bash -c "test $st = 0 && grep -qx 'sigwait 0 got 12' '$work/$m$i.out'"
  done
done
run_status st "$WEFT" replay --sched pct --runs 5 --no-fork-server -q -o "$work/replay" -- "$work/sigw" \
  >"$work/replay.out" 2>&1
check "replay: 5 runs pass (exit $st; $(jq -r '.verdict' "$work/replay/runs.jsonl" | sort | uniq -c | tr '\n' ' '))" \
  bash -c "test $st = 0 && test \$(jq -r '.verdict' '$work/replay/runs.jsonl' | grep -c '^pass$') = 5"
finish
