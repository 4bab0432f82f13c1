# --filter shared (docs/trace-format.md, "Recording only shared pages"):
# writes to buffers each thread keeps to itself are left out; writes to
# globals every thread touches are kept, every thread's; the trace says
# which filter made it.
source "$(dirname "$0")/lib.sh"

cat >"$work/own.c" <<'EOF2'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define WORKERS 4
#define WORDS (4 * 4096 / 8)
volatile unsigned long counter, racy;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long *bufs[WORKERS];
static void *work(void *arg)
{
    volatile unsigned long *b = bufs[(long)arg];
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < WORDS; i++)
            b[i] = b[i] * 3 + (unsigned long)i;
        pthread_mutex_lock(&mu);
        counter++;
        pthread_mutex_unlock(&mu);
        racy = (unsigned long)arg;
    }
    return NULL;
}
int main(void)
{
    pthread_t t[WORKERS];
    counter = 0; /* main touches the globals' page first */
    racy = 0;
    for (long i = 0; i < WORKERS; i++)
        bufs[i] = aligned_alloc(4096, WORDS * 8);
    for (long i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < WORKERS; i++)
        printf("buf %lx %lx\n", (unsigned long)bufs[i], (unsigned long)(bufs[i] + WORDS));
    printf("counter %lx\nracy %lx\ntotal %lu\n", (unsigned long)&counter, (unsigned long)&racy,
           counter);
    return 0;
}
EOF2
cross_cc own

# trace NAME OPTIONS...: a sync+writes trace and its events as CSV.
trace() {
  local name="$1"
  shift
  run_status st "$WEFT" trace -q --record sync+writes -o "$work/$name.wtr" "$@" -- "$work/own" \
    >"$work/$name.out" 2>"$work/$name.err"
  check "$name: traced (status $st)" test "$st" = 0
  "$WEFT" export -F csv -o "$work/$name.csv" "$work/$name.wtr"
}
# in_bufs NAME: how many of its write events fall in a worker's own buffer.
in_bufs() {
  local -a lo hi
  local kind a n=0 c=0 i
  while read -r kind a b; do
    [ "$kind" = buf ] && lo[n]=$((0x$a)) hi[n]=$((0x$b)) n=$((n + 1))
  done <"$work/$1.out"
  while read -r a; do
    a=$((a))
    for ((i = 0; i < n; i++)); do
      ((a >= lo[i] && a < hi[i])) && c=$((c + 1))
    done
  done < <(awk -F, '$4 == "write" { print $5 }' "$work/$1.csv")
  echo "$c"
}
# writers NAME VAR: the threads that wrote VAR (counter or racy), as "T1 T2 ...".
writers() {
  local addr
  addr="$(awk -v v="$2" '$1 == v { print $2 }' "$work/$1.out")"
  awk -F, -v a="0x$addr" '$5 == a && ($4 == "write" || $4 == "rmw") { print "T" $2 }' "$work/$1.csv" |
    sort -u | xargs
}

trace all
trace shared --filter shared
check "the program computed the same with the filter" \
  test "$(grep total "$work/all.out")" = "$(grep total "$work/shared.out")"
check "without it, the buffers' writes are recorded ($(in_bufs all))" test "$(in_bufs all)" -ge 60000
check "with it, none of them ($(in_bufs shared))" test "$(in_bufs shared)" = 0
for var in counter racy; do
  check "without it, every worker's writes of $var ($(writers all $var))" \
    test "$(writers all $var)" = "T0 T1 T2 T3 T4"
  check "with it, every worker's still, main's first one left out ($(writers shared $var))" \
    test "$(writers shared $var)" = "T1 T2 T3 T4"
done
check "weft info names the filter" grep -q "filter shared," <("$WEFT" info "$work/shared.wtr")
check "weft races says what a shared-pages trace cannot show" \
  grep -q "^weft races: note: traced with --filter shared" <("$WEFT" races "$work/shared.wtr" 2>&1 >/dev/null)
check "weft info --vars still finds racy shared" \
  grep -q "^  racy: T1 W.*T4 W" <("$WEFT" info --vars "$work/shared.wtr")

# Exact traces repeat byte for byte; page ownership would follow the host's
# order wherever speculation leaves accesses ungated.
run_status st "$WEFT" trace --filter shared --mode exact -o "$work/exact.wtr" -- "$work/own" \
  >/dev/null 2>"$work/exact.err"
check "exact mode: refused (status $st)" test "$st" = 2
check "exact mode: one line says why" \
  test "$(grep -c 'free mode only' "$work/exact.err")" = 1 -a ! -e "$work/exact.wtr"
finish
