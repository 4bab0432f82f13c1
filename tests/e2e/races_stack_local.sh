# A local variable of one thread that other threads reach through a pointer
# (main's counter handed to a worker, an OpenMP shared local) is shared
# data: the owner's own accesses to it go through a pointer too, and were
# left out of every trace as "its own stack", so a race between main and
# one worker was never reported nor scheduled (0 hits in 50 pct runs).
# The program's own code's accesses to its own stack through a pointer are
# recorded now, and any code's atomics there (a mutex on main's stack: the
# C library's lock must order main's side too); a library's plain ones (a
# compressor's local tables) still are not.
source "$(dirname "$0")/lib.sh"
cat >"$work/local.c" <<'C'
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
struct job { int *total; int n; pthread_mutex_t *m; };
static void *work(void *p)
{
    struct job *j = p;
    for (int i = 0; i < j->n; i++) {
#ifdef LOCKED
        pthread_mutex_lock(j->m);
#endif
        int t = *j->total;
        *j->total = t + 1;
#ifdef LOCKED
        pthread_mutex_unlock(j->m);
#endif
    }
    return 0;
}
static void *scratch(void *p)
{
    /* Each thread's own table, through pointers: no other thread's. */
    int table[64];
    for (int i = 0; i < 64; i++)
        table[i] = i * (int)(long)p;
    volatile int *q = table;
    long s = 0;
    for (int i = 0; i < 64; i++)
        s += q[i];
    return (void *)s;
}
int main(void)
{
    int total = 0;
    pthread_mutex_t m; /* on main's stack too: the C library's atomics on it order */
    pthread_mutex_init(&m, 0);
    pthread_t t, a, b;
    struct job j = {&total, 50, &m};
    pthread_create(&t, 0, work, &j);
    work(&j);
    pthread_join(t, 0);
    /* b reuses a's stack (glibc caches it): the join orders them. */
    pthread_create(&a, 0, scratch, (void *)1);
    pthread_join(a, 0);
    pthread_create(&b, 0, scratch, (void *)2);
    pthread_join(b, 0);
    printf("%d\n", total);
    assert(total == 100);
    return 0;
}
C
for v in racy locked; do
  flags=""
  [ $v = locked ] && flags=-DLOCKED
  if ! aarch64-linux-gnu-gcc -static -pthread -O1 -g $flags -o "$work/local-$v" "$work/local.c"; then
    fail "the cross compiler failed"
    finish
  fi
done
"$WEFT" trace -q -o "$work/racy.wtr" -- "$work/local-racy" >/dev/null 2>&1 || true
run_status st "$WEFT" races --json -o "$work/racy.json" "$work/racy.wtr"
check "main and its worker race on main's local (exit $st)" test "$st" = 10
check "the race is between main (T0) and the worker (T1), in work()" \
  test "$(jq -c '[.races[] | [.first.thread, .second.thread] | sort] | unique' "$work/racy.json")" = '[[0,1]]'
check "the variable is said to be a local on main's stack" \
  test "$(jq -c '[.races[].stack_of] | unique' "$work/racy.json")" = '[0]'
"$WEFT" races "$work/racy.wtr" >"$work/racy.txt" 2>&1 || true
check "... in the text too" grep -q "^race 1 on 0x[0-9a-f]* (a local on T0's stack)" "$work/racy.txt"
check "every race is in work()" \
  test "$(jq -c '[.races[] | .first.function, .second.function] | unique' "$work/racy.json")" = '["work"]'
# Stripped and position-independent: a pc without a symbol is named by the
# program and its link address, as objdump shows it (it printed "?").
cp "$work/local.c" "$work/stripped.c"
if user_cc stripped.c -O1 && aarch64-linux-gnu-strip "$work/stripped"; then
  "$WEFT" trace -q -o "$work/stripped.wtr" -- "$work/stripped" >/dev/null 2>&1 || true
  "$WEFT" races "$work/stripped.wtr" >"$work/stripped.txt" 2>&1 || true
  pc=$(grep -o -m1 ' in stripped+0x[0-9a-f]*$' "$work/stripped.txt" | sed 's/.*+0x//')
  check "stripped: a race's pc is named stripped+0x$pc, an instruction of the binary" \
    bash -c "[ -n '$pc' ] && aarch64-linux-gnu-objdump -d '$work/stripped' | grep -q '^ *$pc:'"
fi
"$WEFT" trace -q -o "$work/locked.wtr" -- "$work/local-locked" >"$work/locked.out"
check "the locked twin's total" grep -qx 100 "$work/locked.out"
run_status st "$WEFT" races "$work/locked.wtr" >"$work/locked.races"
check "the locked twin and the threads' own tables: no race (exit $st)" test "$st" = 0
# Its schedule points too: main's accesses are learnt and taken.
run_status st "$WEFT" replay --sched pct --runs 20 --seed 1 -o "$work/camp" -- "$work/local-racy" \
  >/dev/null 2>"$work/camp.err"
hits=$(jq -s '[.[] | select(.verdict == "abort")] | length' "$work/camp/runs.jsonl")
check "pct finds the lost update between main and one worker ($hits of 20 runs)" test "$hits" -ge 1
# An OpenMP team's shared local, main being the team's thread 0.
cat >"$work/omp.c" <<'C'
#include <stdio.h>
int main(void)
{
    long racy = 0;
#pragma omp parallel num_threads(2)
    for (int i = 0; i < 100; i++)
        racy++;
    printf("%ld\n", racy);
    return 0;
}
C
if aarch64-linux-gnu-gcc -static -fopenmp -O1 -g -o "$work/omp" "$work/omp.c" 2>/dev/null; then
  "$WEFT" trace -q -o "$work/omp.wtr" -- "$work/omp" >/dev/null
  run_status st "$WEFT" races --json -o "$work/omp.json" "$work/omp.wtr"
  check "OpenMP: the shared local's race is found (exit $st)" test "$st" = 10
  check "OpenMP: between main (T0) and the team's other thread" \
    test "$(jq -c '[.races[] | [.first.thread, .second.thread] | sort] | unique' "$work/omp.json")" = '[[0,1]]'
  # An OpenMP lock on main's stack guards the same local: no race (libgomp's
  # atomics on it were left out as main's own stack, and the guarded
  # accesses raced).
  sed 's/racy++;/{ omp_set_lock(\&l); racy++; omp_unset_lock(\&l); }/; s/long racy = 0;/long racy = 0; omp_lock_t l; omp_init_lock(\&l);/; s/#include <stdio.h>/#include <omp.h>\n#include <stdio.h>/' \
    "$work/omp.c" >"$work/omp_lock.c"
  if aarch64-linux-gnu-gcc -static -fopenmp -O1 -g -o "$work/omp_lock" "$work/omp_lock.c" 2>/dev/null; then
    "$WEFT" trace -q -o "$work/omp_lock.wtr" -- "$work/omp_lock" >"$work/omp_lock.out"
    check "OpenMP lock: the total" grep -qx 200 "$work/omp_lock.out"
    run_status st "$WEFT" races "$work/omp_lock.wtr" >"$work/omp_lock.races"
    check "OpenMP lock on main's stack: no race (exit $st)" test "$st" = 0
  else
    fail "the cross compiler failed on the OpenMP lock"
  fi
else
  fail "the cross compiler failed on -fopenmp"
fi
finish
