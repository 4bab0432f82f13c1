# Signals between threads and a yield to let a worker start (docs/replay.md,
# "Schedule points"). A main that creates a worker, yields once, then sends
# it SIGUSR1 crashes when the signal comes before the worker's own
# sigaction. No priority policy could reach that order: the yield demoted
# main below every thread and the sigaction was no step, so pct and rpro
# found it in 0 of 200 runs where random found it in 104. Now a first yield
# since the thread's own progress is a nap (as a sleep's) and sigaction,
# pthread_kill and friends are visible operations.
source "$(dirname "$0")/lib.sh"
cat >"$work/sigorder.c" <<'EOF'
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
static volatile sig_atomic_t stop;
static void on_usr1(int sig)
{
    (void)sig;
    stop = 1;
}
static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
}
static void *worker(void *a)
{
#ifndef FIXED
    install(); /* too late if main signals first */
#endif
    while (!stop)
        sched_yield();
    return a;
}
int main(void)
{
    pthread_t t;
#ifdef FIXED
    install();
#endif
    pthread_create(&t, NULL, worker, NULL);
    sched_yield();
    pthread_kill(t, SIGUSR1);
    pthread_join(t, NULL);
    puts("stopped");
    return 0;
}
EOF
cross_cc sigorder
cp "$work/sigorder.c" "$work/sigorder_fixed.c"
sed -i '1i #define FIXED 1' "$work/sigorder_fixed.c"
cross_cc sigorder_fixed
for s in pct rpro; do
  run_status st timeout -s KILL 300 "$WEFT" replay --sched $s --runs 60 --jobs 2 --timeout 30 \
    --output "$work/$s" -- "$work/sigorder" </dev/null >"$work/$s.log" 2>&1
  crashes="$(jq -s '[.[] | select(.verdict == "crash")] | length' "$work/$s/runs.jsonl")"
  check "$s: the signal before the handler is reached ($crashes of 60 runs crash; status $st)" \
    test "$crashes" -gt 0 -a "$st" = 10
  run_status st timeout -s KILL 300 "$WEFT" replay --sched $s --runs 60 --jobs 2 --timeout 30 \
    --output "$work/$s-fixed" -- "$work/sigorder_fixed" </dev/null >"$work/$s-fixed.log" 2>&1
  check "$s: the handler installed first: every run passes (status $st; $(jq -r .verdict "$work/$s-fixed/runs.jsonl" | sort | uniq -c | xargs))" \
    test "$st $(jq -r .verdict "$work/$s-fixed/runs.jsonl" | sort | uniq -c | xargs)" = "0 60 pass"
done
finish
