# A dynamically linked program with lazy binding reaches each library
# function through a PLT stub that loads its GOT entry, which the loader
# writes at the first call: from a worker, a shared address written, and
# the stub's load was a schedule point. Every library call was then two
# steps (a helper's program: k 236 lazy, 149 with -z now). The stubs are
# the call's way in, not the program's own accesses.
source "$(dirname "$0")/lib.sh"
cat >"$work/locks.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static void *worker(void *a)
{
    (void)a;
    for (int i = 0; i < 5; i++) { /* the first lock of the run is a worker's */
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}
int main(void)
{
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("%ld\n", counter);
    return 0;
}
EOF
cp "$work/locks.c" "$work/locks_now.c"
user_cc locks.c -O1 -g -Wl,-z,lazy || finish
user_cc locks_now.c -O1 -g -Wl,-z,now || finish
for v in locks locks_now; do
  run_status st "$WEFT" replay --sched pct --runs 4 --jobs 2 --seed 1 --output "$work/$v-camp" \
    -- "$work/$v" </dev/null >"$work/$v.log" 2>&1
  check "$v: the campaign passes (status $st)" test "$st" = 0
done
lazy=$(jq .k "$work/locks-camp/summary.json")
now=$(jq .k "$work/locks_now-camp/summary.json")
check "lazy binding adds no steps: k $lazy, with -z now $now" test "$lazy" -le "$((now + 2))"
finish
