# A static binary's atomics are calls to GCC's outline atomics
# (__aarch64_swp1_acq and the like, from libgcc.a, without DWARF): they
# counted as the C library's code, so a spin lock's test-and-set was no
# schedule point and no spin's progress. Profiling ran every learning run
# to --timeout (k ten million from a killed run) and pct found a thread
# that skips the lock in 0 of 100 runs; the dynamic build of the same
# program, whose helpers sit in its own text, in 20.
source "$(dirname "$0")/lib.sh"
cat >"$work/spin.c" <<'EOF'
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
static atomic_flag busy = ATOMIC_FLAG_INIT;
static long counter;
static void *worker(void *a)
{
    long id = (long)a;
    for (int i = 0; i < 30; i++) {
        if (id != 2) /* the bug: worker 2 skips the lock */
            while (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire))
                ;
        counter++;
        if (id != 2)
            atomic_flag_clear_explicit(&busy, memory_order_release);
    }
    return NULL;
}
int main(void)
{
    pthread_t t[3];
    for (long i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("counter = %ld\n", counter);
    assert(counter == 90);
    return 0;
}
EOF
if ! aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/spin" "$work/spin.c"; then
  fail "the cross compiler failed"
  finish
fi
check "the test-and-set is a call to an outline atomic" \
  bash -c "aarch64-linux-gnu-objdump -d '$work/spin' | grep -q 'bl.*<__aarch64_swp1_acq>'"
run_status st "$WEFT" replay --sched pct --runs 100 --jobs 2 --seed 1 --timeout 10 \
  --output "$work/camp" -- "$work/spin" </dev/null >"$work/camp.log" 2>&1
k=$(jq .k "$work/camp/summary.json")
hits=$(jq '.verdicts.abort' "$work/camp/summary.json")
check "profiling's runs end on their own (k $k)" test "$k" -lt 100000
check "pct finds the unlocked increment in 3+ of 100 runs ($hits)" test "$hits" -ge 3
finish
