# A thread that waits on its own local, which another thread writes through
# a pointer (`while (!done);` on main's stack), reads that word from SP: no
# callback, so the spin watch never saw it, the loop's block was counted
# inline, and under a policy that ran main first every run spun until
# --timeout. Such a loop (it stores nothing, calls nothing and rereads one
# stack word) keeps its block's callback and counts like a library's wait
# loop: after SPIN_LIB_BLOCKS passes with nobody else running, a spin.
source "$(dirname "$0")/lib.sh"
cat >"$work/spin.c" <<'C'
#include <pthread.h>
#include <stdio.h>
static void *worker(void *arg)
{
    for (volatile int i = 0; i < 1000; i++)
        ;
    *(volatile int *)arg = 1;
    return 0;
}
int main(void)
{
    volatile int done = 0;
    pthread_t t;
    pthread_create(&t, 0, worker, (void *)&done);
    while (!done)
        ;
    pthread_join(t, 0);
    printf("ok\n");
    return 0;
}
C
if ! aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/spin" "$work/spin.c"; then
  fail "the cross compiler failed"
  finish
fi
for sched in pct rpro random; do
  run_status st "$WEFT" replay --sched $sched --runs 6 --seed 1 --timeout 5 -q \
    -o "$work/$sched" -- "$work/spin" >"$work/$sched.out" 2>&1
  check "$sched: 6 runs pass, none timed out (exit $st; $(jq -r .verdict "$work/$sched/runs.jsonl" | sort | uniq -c | tr '\n' ' '))" \
    bash -c "test $st = 0 && test \$(jq -r .verdict '$work/$sched/runs.jsonl' | grep -c '^pass$') = 6"
done
finish
