# The main thread's stack is a window guessed around its first SP-based
# access; what the guest maps inside it is not that stack. A static
# program's first large malloc lands right above the main thread's stack
# under qemu: the main thread's writes there are in the trace, and exact
# mode needs no gate for the worker's (it used to blame them as accesses to
# another thread's stack).
source "$(dirname "$0")/lib.sh"
cat >"$work/above.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static long *buf;
static void *worker(void *arg)
{
    for (int i = 0; i < 64; i++)
        buf[8 * i + 1] = i;
    return arg;
}
int main(void)
{
    buf = malloc(1 << 20); /* above the mmap threshold: a mapping of its own */
    for (int i = 0; i < 64; i++)
        buf[8 * i] = i;
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    pthread_join(t, 0);
    long sum = 0;
    for (int i = 0; i < 64; i++)
        sum += buf[8 * i] + buf[8 * i + 1];
    printf("%p %ld\n", (void *)buf, sum);
    return 0;
}
C
if ! aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/above" "$work/above.c"; then
  fail "the cross compiler failed"
  finish
fi
run_status st "$WEFT" trace -q -o "$work/free.wtr" -- "$work/above" >"$work/free.out"
read -r buf sum <"$work/free.out"
check "free: exits 0 (status $st), sum ${sum:-none}" test "$st ${sum:-}" = "0 4032"
"$WEFT" export -F csv -o "$work/free.csv" "$work/free.wtr"
# A thread's writes into [buf, buf + 4 KiB): time,thread,seq,kind,addr,...
writes() {
  local n=0 lo=$((buf)) a
  while IFS=, read -r _ th _ kind a _; do
    [ "$th" = "$1" ] && [ "$kind" = write ] && [ "${a#0x}" != "$a" ] || continue
    [ $((a)) -ge "$lo" ] && [ $((a)) -lt $((lo + 4096)) ] && n=$((n + 1))
  done <"$work/free.csv"
  echo "$n"
}
check "free: the main thread's 64 writes above its stack are recorded ($(writes 0))" test "$(writes 0)" = 64
check "free: the worker's 64 too ($(writes 1))" test "$(writes 1)" = 64
run_status st "$WEFT" trace -o "$work/exact.wtr" --mode exact -- "$work/above" >"$work/exact.out" 2>"$work/exact.err"
check "exact: exits 0 (status $st)" test "$st" = 0
check "exact: one run, no gate learnt ($(grep -c 'not ordered' "$work/exact.err") runs redone)" \
  test "$(grep -c 'not ordered' "$work/exact.err")" = 0
finish
