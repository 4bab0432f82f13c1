# A replay's run killed by a signal leaves a salvaged trace, without the
# plugin's thread table: weft races took each thread's creation time from
# its first event, the start of its first turn. When the policy had main
# create both workers before the first one ran, that worker took the
# second clone's clock and the second worker the first's: a false race on
# the argument main wrote for it between the two clones (3 in 10 pct
# runs). The start event now carries the creation time.
source "$(dirname "$0")/lib.sh"
cat >"$work/two.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
struct arg {
    long id, val;
};
static long out[2];
static void *worker(void *p)
{
    struct arg *a = p;
    out[a->id] = a->val * 2; /* reads what main wrote before its clone */
    return NULL;
}
int main(void)
{
    pthread_t t[2];
    struct arg *a[2];
    for (long i = 0; i < 2; i++) {
        a[i] = malloc(sizeof *a[i]);
        a[i]->id = i;
        a[i]->val = 10 + i;
        pthread_create(&t[i], NULL, worker, a[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("%ld %ld\n", out[0], out[1]);
    abort(); /* every run dies: its trace is salvaged */
}
EOF
if ! aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/two" "$work/two.c"; then
  fail "the cross compiler failed"
  finish
fi
run_status st "$WEFT" replay --sched pct --runs 12 --jobs 2 --seed 1 --save-trace -q \
  --output "$work/camp" -- "$work/two" </dev/null >"$work/camp.log" 2>&1
check "every run aborts (status $st)" test "$(jq .verdicts.abort "$work/camp/summary.json")" = 12
both=0 races=0 salvaged=0
for s in $(seq 1 12); do
  tr="$work/camp/traces/seed-$s.wtr"
  "$WEFT" info "$tr" 2>/dev/null | grep -q '^flags .*truncated' && salvaged=$((salvaged + 1))
  "$WEFT" export --format csv -o "$work/s$s.csv" "$tr" 2>/dev/null
  # T1's first event after its start, later than T2's creation: main made
  # both before T1 ran.
  awk -F, '$2 == 2 && $4 == "thread_start" { b = $1 } $2 == 1 && $3 == 1 { n = $1 }
    END { exit !(n > b) }' "$work/s$s.csv" && both=$((both + 1))
  n=$("$WEFT" races "$tr" 2>/dev/null | grep -c '^race ' || true)
  races=$((races + n))
done
check "the traces are salvaged ($salvaged of 12)" test "$salvaged" = 12
check "main created both workers before the first ran, in some runs ($both of 12)" test "$both" -ge 1
check "no race in any trace ($races)" test "$races" = 0
finish
