# The livelock rule's edges, and sleeps (docs/replay.md, "Spinning"). A correct
# program whose workers poll a flag a few times with sched_yield and give up
# was a livelock in every pct run: three yields each were three sightings.
# And a barrier every thread spins in for ever was never seen spinning under
# random, whose turns are a step or two (the count began again at every
# handoff): each run went to --timeout.
source "$(dirname "$0")/lib.sh"
cat >"$work/yield_ok.c" <<'EOF'
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
static atomic_int work_available, gave_up;
static void *worker(void *a)
{
    for (int tries = 0; tries < 8; tries++) {
        if (atomic_load(&work_available))
            return a;
        sched_yield();
    }
    atomic_fetch_add(&gave_up, 1);
    return a;
}
int main(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("gave up: %d\n", atomic_load(&gave_up));
    return 0;
}
EOF
cat >"$work/spin_all.c" <<'EOF'
#include <pthread.h>
#include <stdatomic.h>
static atomic_int flag;
static void *worker(void *a)
{
    while (!atomic_load(&flag)) /* nobody ever sets it */
        ;
    return a;
}
int main(void)
{
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    return 0;
}
EOF
cross_cc yield_ok
cross_cc spin_all
for s in pct random; do
  run_status st "$WEFT" replay --sched $s --runs 10 --jobs 2 --timeout 20 --output "$work/y-$s" \
    -- "$work/yield_ok" </dev/null >"$work/y-$s.log" 2>&1
  check "bounded yields under $s: every run passes (status $st; $(jq -r .verdict "$work/y-$s/runs.jsonl" | sort | uniq -c | xargs))" \
    test "$st $(jq -r .verdict "$work/y-$s/runs.jsonl" | sort | uniq -c | xargs)" = "0 10 pass"
done
# Profiling's k leaves out the steps that resumed a yielding thread; the
# summary's runs beyond k leave them out too (every run of yield_ok took more
# steps than k with them: "200 runs took more than k", a helper's sigstop).
k="$(jq .k "$work/y-pct/summary.json")"
with="$(jq -s --argjson k "$k" '[.[] | select(.steps > $k)] | length' "$work/y-pct/runs.jsonl")"
without="$(jq -s --argjson k "$k" '[.[] | select(.steps - .yield_steps > $k)] | length' \
  "$work/y-pct/runs.jsonl")"
check "bounded yields: runs beyond k = $k counted without their yield steps ($without; with them $with)" \
  test "$(jq .runs_beyond_k "$work/y-pct/summary.json")" = "$without"
check "bounded yields: some run's yield steps take it past k ($with of 10)" test "$with" -gt "$without"
for s in random pct; do
  run_status st timeout -s KILL 300 "$WEFT" replay --sched $s --runs 4 --jobs 2 --timeout 20 \
    --steps 100 --threads 4 --output "$work/s-$s" -- "$work/spin_all" </dev/null >"$work/s-$s.log" 2>&1
  check "every thread spins under $s: livelock in every run (status $st; $(jq -r .verdict "$work/s-$s/runs.jsonl" | sort | uniq -c | xargs))" \
    test "$(jq -r .verdict "$work/s-$s/runs.jsonl" | sort | uniq -c | xargs)" = "4 livelock"
done
# A poller that takes a lock to check, then sleeps: its lock is progress of
# its own, so every sleep was a first one, above the worker a change point
# delayed, and each of the worker's steps waited for a starvation override
# (md5deep: 1.1 million steps and 27 s for a run of 0.2; here up to 2.8
# times the steps). A thread's sleeps above delayed threads are eight per
# change point now.
cat >"$work/poller.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int finished;
static long work[64];
static void *worker(void *a)
{
    for (int i = 0; i < 3000; i++)
        work[i % 64] += i; /* progress: writes outside a stack */
    pthread_mutex_lock(&m);
    finished = 1;
    pthread_mutex_unlock(&m);
    return a;
}
int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    for (;;) {
        pthread_mutex_lock(&m);
        int done = finished;
        pthread_mutex_unlock(&m);
        if (done)
            break;
        usleep(1000);
    }
    pthread_join(t, NULL);
    printf("%ld\n", work[1]);
    return 0;
}
EOF
cross_cc poller
run_status st "$WEFT" replay --sched pct --runs 10 --jobs 2 --points all --output "$work/poll" \
  -- "$work/poller" </dev/null >"$work/poll.log" 2>&1
steps=$(jq -s -c '[.[] | .steps] | sort' "$work/poll/runs.jsonl")
check "a lock-checking poller: no seed takes 1.2 times the fewest steps ($steps)" \
  test "$(jq -s '[.[] | .steps] | max <= 1.2 * min' "$work/poll/runs.jsonl")" = true

# A worker polls a flag 20000 times and goes on, main waits in join: the
# worker spins alone, and 3000 loads without progress were a livelock in
# every run. A lone spinner needs far more sightings.
cat >"$work/boundspin.c" <<'EOF'
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
static atomic_int hint;
static int result;
static void *worker(void *x)
{
    (void)x;
    int got = 0;
    for (int i = 0; i < 20000; i++)
        if (atomic_load_explicit(&hint, memory_order_acquire)) {
            got = 1;
            break;
        }
    result = got ? 2 : 1;
    return NULL;
}
int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    printf("result %d\n", result);
    return 0;
}
EOF
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/boundspin" "$work/boundspin.c" ||
  fail "the cross compiler failed"
run_status st "$WEFT" replay --sched pct --runs 10 --jobs 2 --timeout 30 --output "$work/bs" \
  -- "$work/boundspin" </dev/null >"$work/bs.log" 2>&1
check "a bounded poll alone: every run passes ($(jq -c .verdicts "$work/bs/summary.json"))" \
  test "$(jq .verdicts.pass "$work/bs/summary.json")" = 10

# A worker polls a flag under a lock, yielding, for ever: main, which was
# to set it, waits in join. The lock's writes were progress, and every run
# went to --timeout, a timeout rather than a hit. With the flag set after a
# sleep (the twin), main is asleep, not in a futex: every run passes.
cat >"$work/lone.c" <<'EOF'
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int flag;
static void *worker(void *x)
{
    (void)x;
    for (;;) {
        pthread_mutex_lock(&m);
        int f = flag;
        pthread_mutex_unlock(&m);
        if (f)
            return NULL;
        sched_yield();
    }
}
int main(int argc, char **argv)
{
    (void)argv;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    if (argc > 1) { /* the twin sets the flag */
        usleep(1000);
        pthread_mutex_lock(&m);
        flag = 1;
        pthread_mutex_unlock(&m);
    }
    pthread_join(t, NULL);
    puts("done");
    return 0;
}
EOF
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/lone" "$work/lone.c" ||
  fail "the cross compiler failed"
run_status st "$WEFT" replay --sched pct --runs 4 --jobs 2 --timeout 60 --output "$work/lone-camp" \
  -- "$work/lone" </dev/null >"$work/lone.log" 2>&1
check "a lone poller that never ends: a livelock in every run ($(jq -c .verdicts "$work/lone-camp/summary.json"))" \
  test "$(jq .verdicts.livelock "$work/lone-camp/summary.json")" = 4
check "its detail says it yields alone" \
  grep -q 'T1 at worker (lone.c:[0-9]*), yielding 100000 times alone' "$work/lone-camp/runs.jsonl"
run_status st "$WEFT" replay --sched pct --runs 4 --jobs 2 --timeout 60 --output "$work/lone-ok" \
  -- "$work/lone" set </dev/null >"$work/lone-ok.log" 2>&1
check "the twin whose main sets the flag after a sleep passes ($(jq -c .verdicts "$work/lone-ok/summary.json"))" \
  test "$(jq .verdicts.pass "$work/lone-ok/summary.json")" = 4

# A program that yields until its timer's signal comes: in wall time, so
# its yields are no livelock (300 of them were, before it had a handler
# rule: every run failed).
cat >"$work/alarm.c" <<'EOF'
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
static volatile sig_atomic_t rang;
static void on_alarm(int s)
{
    (void)s;
    rang = 1;
}
static void *worker(void *a)
{
    return a;
}
int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    signal(SIGALRM, on_alarm);
    struct itimerval it = {{0, 0}, {0, 500000}};
    setitimer(ITIMER_REAL, &it, NULL);
    while (!rang)
        sched_yield();
    puts("rang");
    return 0;
}
EOF
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/alarm" "$work/alarm.c" ||
  fail "the cross compiler failed"
run_status st "$WEFT" replay --sched pct --runs 2 --jobs 2 --timeout 60 --output "$work/alarm-camp" \
  -- "$work/alarm" </dev/null >"$work/alarm.log" 2>&1
check "yielding until a timer's signal: every run passes ($(jq -c .verdicts "$work/alarm-camp/summary.json"))" \
  test "$(jq .verdicts.pass "$work/alarm-camp/summary.json")" = 2
finish
