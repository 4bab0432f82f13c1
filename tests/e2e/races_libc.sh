# The C library's own synchronization is not the program's race: glibc
# reads and writes a condition variable's counters, a rwlock's readers and
# its arenas' flags with relaxed atomics, plain LDR and STR on AArch64,
# which weft races took for racing plain accesses in every correct program
# that waits on a condition (exit 10). Accesses in the C library's threads,
# locks and allocator code count as relaxed atomics; the program's own
# unprotected counter next to them is still a race. The OpenMP runtime's
# bookkeeping likewise.
source "$(dirname "$0")/lib.sh"
cat >"$work/queue.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nonempty = PTHREAD_COND_INITIALIZER, nonfull = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static int *slot[4], count, head, tail, config = 1;
long unguarded;
static void *producer(void *arg)
{
    for (int i = 0; i < 200; i++) {
        int *v = malloc(sizeof *v);
        *v = i;
        pthread_mutex_lock(&m);
        while (count == 4)
            pthread_cond_wait(&nonfull, &m);
        slot[tail] = v;
        tail = (tail + 1) % 4;
        count++;
        pthread_cond_signal(&nonempty);
        pthread_mutex_unlock(&m);
    }
    return arg;
}
static void *consumer(void *arg)
{
    long sum = 0;
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&m);
        while (count == 0)
            pthread_cond_wait(&nonempty, &m);
        int *v = slot[head];
        head = (head + 1) % 4;
        count--;
        pthread_cond_signal(&nonfull);
        pthread_mutex_unlock(&m);
        pthread_rwlock_rdlock(&rw);
        sum += *v * config;
        pthread_rwlock_unlock(&rw);
        free(v); /* allocated by the producer: another thread's arena */
#ifdef RACY
        unguarded++;
#endif
    }
    *(long *)arg = sum;
    return arg;
}
int main(void)
{
    pthread_t p, c1, c2;
    long s1, s2;
    pthread_create(&p, 0, producer, 0);
    pthread_create(&c1, 0, consumer, &s1);
    pthread_create(&c2, 0, consumer, &s2);
    pthread_rwlock_wrlock(&rw);
    config = 1;
    pthread_rwlock_unlock(&rw);
    pthread_join(p, 0);
    pthread_join(c1, 0);
    pthread_join(c2, 0);
    printf("%ld\n", s1 + s2);
    return 0;
}
C
for v in ok racy; do
  flags=""
  [ $v = racy ] && flags=-DRACY
  if ! aarch64-linux-gnu-gcc -static -pthread -O1 -g $flags -o "$work/queue-$v" "$work/queue.c"; then
    fail "the cross compiler failed"
    finish
  fi
done
for i in 1 2 3; do
  "$WEFT" trace -q -o "$work/ok$i.wtr" -- "$work/queue-ok" >"$work/ok$i.out"
  check "run $i: the program's sum" grep -qx 19900 "$work/ok$i.out"
  run_status st "$WEFT" races "$work/ok$i.wtr" >"$work/ok$i.races"
  check "run $i: no race in the correct queue (exit $st; $(grep -c '^race' "$work/ok$i.races") found)" \
    test "$st" = 0
done
# A replayed run's trace too: a thread the schedule held back resumes no
# earlier than the last time its holder reached, at any gate (it used to be
# its last schedule point, and a consumer's lock was stamped before the
# unlock that let it in: "races in this run" on the queue's own counters).
for s in 1 2 3 4; do
  "$WEFT" replay --sched pct --seed $s --explain -o "$work/replay$s" -- "$work/queue-ok" \
    >"$work/replay$s.out" 2>&1 || true
  check "replayed seed $s: passes, no race in its run ($(grep -o 'races in this run.*' "$work/replay$s.out"))" \
    bash -c "grep -q '^verdict: pass' '$work/replay$s.out' && grep -q 'races in this run (.*): 0' '$work/replay$s.out'"
done
# --points races learns from the same analysis: the correct queue's
# condition variables made racy points (8 reports of a bounded buffer).
run_status st "$WEFT" replay --sched pct --runs 2 --points races -o "$work/rpoints" -- "$work/queue-ok" \
  </dev/null >"$work/rpoints.log" 2>&1
check "--points races on the correct queue: no race report in profiling ($(grep -o '[0-9]* race reports' "$work/rpoints.log" | head -1))" \
  grep -q "profiling: 0 race reports" "$work/rpoints.log"
# The OpenMP runtime's team bookkeeping (gomp_thread_start against
# gomp_init_task) is its business too.
cat >"$work/omp.c" <<'C'
#include <stdio.h>
int main(void)
{
    long sum = 0, n = 0;
#pragma omp parallel for num_threads(3) reduction(+ : sum)
    for (int i = 1; i <= 300; i++)
        sum += i;
#pragma omp parallel for num_threads(3) reduction(+ : n) /* the team again */
    for (int i = 0; i < 30; i++)
        n++;
    printf("%ld\n", sum + n);
    return 0;
}
C
if aarch64-linux-gnu-gcc -static -fopenmp -O1 -g -o "$work/omp" "$work/omp.c"; then
  "$WEFT" trace -q -o "$work/omp.wtr" -- "$work/omp" >"$work/omp.out"
  check "OpenMP: the sum" grep -qx 45180 "$work/omp.out"
  run_status st "$WEFT" races "$work/omp.wtr" >"$work/omp.races"
  check "OpenMP: no race in a reduction (exit $st; $(grep -c '^race' "$work/omp.races") found)" \
    test "$st" = 0
else
  fail "the cross compiler failed on -fopenmp"
fi
# Dynamically linked: Debian's libc.so.6 names only its exported functions,
# and frees across threads ran through its internal _int_free, unnamed and
# reported (4 races in each trace). The bootstrap's sysroot holds libc6-dbg,
# whose separate debug file (found by build id) names them; the cross root
# weft uses without --sysroot has none, and a stripped libc's unnamed code
# counts as its internals.
: "${WEFT_SYSROOT:?}"
libc=$(find "$WEFT_SYSROOT" -name libc.so.6 | head -1)
id=$(readelf -n "$libc" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
check "the sysroot has the C library's debug file" \
  test -f "$WEFT_SYSROOT/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
if user_cc queue.c -O1 -g; then
  for i in 1 2 3; do
    "$WEFT" trace -q --sysroot "$WEFT_SYSROOT" -o "$work/dyn$i.wtr" -- "$work/queue" >"$work/dyn$i.out"
    check "dynamic run $i: the program's sum" grep -qx 19900 "$work/dyn$i.out"
    run_status st "$WEFT" races "$work/dyn$i.wtr" >"$work/dyn$i.races"
    check "dynamic run $i: no race in the shared C library's allocator (exit $st; $(grep -A2 '^race' "$work/dyn$i.races" | grep -o ' in [^ ]*$' | sort -u | tr -d '\n'))" \
      test "$st" = 0
  done
  for i in 1 2; do
    "$WEFT" trace -q -o "$work/cross$i.wtr" -- "$work/queue" >"$work/cross$i.out"
    run_status st "$WEFT" races "$work/cross$i.wtr" >"$work/cross$i.races"
    check "cross root run $i: no race in its stripped C library (exit $st; $(grep -A2 '^race' "$work/cross$i.races" | grep -o ' in [^ ]*$' | sort -u | tr -d '\n'))" \
      test "$st" = 0
  done
  cp "$work/queue.c" "$work/dracy.c"
  if user_cc dracy.c -O1 -g -DRACY; then
    "$WEFT" trace -q -o "$work/dracy.wtr" -- "$work/dracy" >/dev/null
    run_status st "$WEFT" races --json -o "$work/dracy.json" "$work/dracy.wtr"
    check "dynamic racy twin: its counter is the only variable (exit $st)" \
      test "$(jq -c '[.races[].variable] | unique' "$work/dracy.json")" = '["unguarded"]'
  fi
fi
"$WEFT" trace -q -o "$work/racy.wtr" -- "$work/queue-racy" >/dev/null
run_status st "$WEFT" races --json -o "$work/racy.json" "$work/racy.wtr"
check "the racy twin: races found (exit $st)" test "$st" = 10
check "the racy twin: its counter is the only variable" \
  test "$(jq -c '[.races[].variable] | unique' "$work/racy.json")" = '["unguarded"]'
# Two threads copy 24 bytes into one buffer with memcpy. Under qemu's
# default cpu glibc copies that with SVE's ld1b/st1b, which qemu executes
# without calling the plugin back: no access, no race. weft runs the guest
# without SVE, and glibc's Advanced SIMD copy is seen (48 bytes always were).
cat >"$work/shortcopy.c" <<'C'
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
static char shared[64];
static size_t len = 24;
static void *writer(void *a)
{
    char buf[64];
    memset(buf, (int)(long)a, sizeof buf);
    memcpy(shared, buf, len);
    return NULL;
}
int main(int argc, char **argv)
{
    if (argc > 1)
        len = (size_t)atoi(argv[1]);
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, writer, (void *)(i + 'a'));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return shared[0] == 0;
}
C
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/shortcopy" "$work/shortcopy.c"
for n in 8 24 48; do
  run_status st timeout -s KILL 120 "$WEFT" trace -q -o "$work/shortcopy-$n.wtr" -- "$work/shortcopy" "$n"
  run_status st "$WEFT" races --json -o "$work/shortcopy-$n.json" "$work/shortcopy-$n.wtr"
  check "a $n-byte memcpy by two threads: a race on shared" \
    test "$(jq -c '[.races[].variable] | unique' "$work/shortcopy-$n.json")" = '["shared"]'
done

finish
