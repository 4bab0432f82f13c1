# Same seed, same run: three replays of one seed write byte-identical traces
# and JSON lines (wall time aside), for every policy, on fixtures where host
# timing used to leak in (a child created by the first clone, PPCT's high set
# on 8 threads, a thread blocking in a futex, a reader asleep in a pipe's read
# whom the writer's writes wake: it rejoined by host timing, one seed's run
# 17, 22 or 20 steps in a helper's server).
source "$(dirname "$0")/lib.sh"

cases=(
  "parallel8 ppct 2 7" "parallel8 pct 3 2" "lost_update random 1 7" "lost_update rpro 3 4"
  "wsq pct 2 11" "deadlock_lock_order ppct 2 3" "atomicity_violation random 1 9"
  "pipe_ok random 1 5" "pipe_ok pct 2 3"
)
# three_campaigns NAME SCHED RUNS: the same campaign of $work/NAME three
# times, $work/NAME-REP.lines its runs.jsonl without wall times and
# NAME-REP.said its failing runs' lines (the folder's name made the same).
three_campaigns() {
  local rep
  for rep in 1 2 3; do
    run_status st timeout -s KILL 300 "$WEFT" replay --sched "$2" --runs "$3" --jobs 2 --timeout 20 \
      --output "$work/$1-$rep" -- "$work/$1" </dev/null >"$work/$1-$rep.log" 2>&1
    jq -c 'del(.wall_s)' "$work/$1-$rep/runs.jsonl" >"$work/$1-$rep.lines"
    sed -n "s/$1-$rep/$1-N/g; /^seed \|^  reproduce: /p" "$work/$1-$rep.log" >"$work/$1-$rep.said"
  done
}
# same_three NAME EXT: the three campaigns' NAME-REP.EXT are the same, and not empty.
same_three() {
  test -s "$work/$1-1.$2" && cmp -s "$work/$1-1.$2" "$work/$1-2.$2" && cmp -s "$work/$1-1.$2" "$work/$1-3.$2"
}

# On a difference: what differed, each run's gate statistics (escapes and
# exclusive yields are where host timing can enter) and profiling lines (the
# points learnt, and whether a profiling run departed), and the three runs kept
# in $WEFT_TMP/determinism-failed for a closer look.
explain_difference() {
  local stem="$1" seed="$2" r
  echo "  verdict lines:"
  for r in 1 2 3; do echo "    $r: $(cat "$stem-$r.line")"; done
  for r in 1 2 3; do echo "    $r: $(cat "$stem-$r/traces/seed-$seed.stderr" 2>/dev/null | grep weft-stats)"; done
  for r in 1 2 3; do grep "^weft: profiling" "$stem-$r.log" | sed "s/^/    $r: /"; done
  for r in 2 3; do
    echo "    trace 1 vs $r: $(cmp "$stem-1/traces/seed-$seed.wtr" "$stem-$r/traces/seed-$seed.wtr" 2>&1 | head -1)"
  done
  local keep
  keep="$WEFT_TMP/determinism-failed/$(basename "$stem")-$(date +%s)"
  mkdir -p "$keep" && cp -r "$stem"-[123] "$stem"-[123].log "$keep"/ && echo "  kept in $keep"
}

for c in "${cases[@]}"; do
  read -r fx sched d seed <<<"$c"
  for rep in 1 2 3; do
    WEFT_GUEST_ENV=WEFT_PLUGIN_STATS WEFT_PLUGIN_STATS=1 run_status st "$WEFT" replay --sched "$sched" --depth "$d" --points shared --steps 400 --threads 3 \
      --seed "$seed" --save-trace --timeout 60 --output "$work/$fx-$sched-$rep" -- "$WEFT_FIXTURES/$fx" \
      >"$work/$fx-$sched-$rep.log" 2>&1
    jq -c 'del(.wall_s, .trace)' "$work/$fx-$sched-$rep/runs.jsonl" >"$work/$fx-$sched-$rep.line"
  done
  t="traces/seed-$seed.wtr"
  check "$fx $sched d$d seed $seed: a trace was written" test -s "$work/$fx-$sched-1/$t"
  check "$fx $sched seed $seed: three runs, one trace" \
    bash -c "cmp -s '$work/$fx-$sched-1/$t' '$work/$fx-$sched-2/$t' && cmp -s '$work/$fx-$sched-1/$t' '$work/$fx-$sched-3/$t'"
  check "$fx $sched seed $seed: three runs, one verdict line" \
    bash -c "cmp -s '$work/$fx-$sched-1.line' '$work/$fx-$sched-2.line' && cmp -s '$work/$fx-$sched-1.line' '$work/$fx-$sched-3.line'"
  same="$(cat "$work/$fx-$sched"-[123].line | sort -u | wc -l)"
  for r in 2 3; do cmp -s "$work/$fx-$sched-1/$t" "$work/$fx-$sched-$r/$t" || same=2; done
  [ "$same" = 1 ] || explain_difference "$work/$fx-$sched" "$seed"
done

# The guest's environment is fixed by weft: a variable that differs between
# shells (or that GNU parallel and Slurm set per task) changes nothing.
c="$work/lost_update-random-1"
env WEFT_GUEST_ENV=WEFT_PLUGIN_STATS WEFT_PLUGIN_STATS=1 PARALLEL_SEQ=3 SLURM_ARRAY_TASK_ID=12 SOME_LONG_NAME="$(printf '%0200d' 0)" \
  "$WEFT" replay --sched random --depth 1 --points shared --steps 400 --threads 3 --seed 7 --save-trace \
  --timeout 60 --output "$work/env" -- "$WEFT_FIXTURES/lost_update" >"$work/env.log" 2>&1 || true
check "extra environment variables: the same trace" cmp -s "$c/traces/seed-7.wtr" "$work/env/traces/seed-7.wtr"
# The same variables in another order (HOME moved to the end): the same run.
env -u HOME WEFT_GUEST_ENV=WEFT_PLUGIN_STATS WEFT_PLUGIN_STATS=1 HOME="${HOME:-/root}" \
  "$WEFT" replay --sched random --depth 1 --points shared --steps 400 --threads 3 --seed 7 --save-trace \
  --timeout 60 --output "$work/env3" -- "$WEFT_FIXTURES/lost_update" >"$work/env3.log" 2>&1 || true
check "the environment in another order: the same trace" cmp -s "$c/traces/seed-7.wtr" "$work/env3/traces/seed-7.wtr"
WEFT_GUEST_ENV="WEFT_PLUGIN_STATS SOME_LONG_NAME" WEFT_PLUGIN_STATS=1 SOME_LONG_NAME="$(printf '%0200d' 0)" \
  "$WEFT" replay --sched random --depth 1 --points shared --steps 400 --threads 3 --seed 7 --save-trace \
  --timeout 60 --output "$work/env2" -- "$WEFT_FIXTURES/lost_update" >"$work/env2.log" 2>&1 || true
check "WEFT_GUEST_ENV passes a variable through (the run changes)" \
  bash -c "! cmp -s '$c/traces/seed-7.wtr' '$work/env2/traces/seed-7.wtr'"
# OpenMP's settings are the program's input: OMP_NUM_THREADS=4 traced 2
# threads of a helper's program (its team at the default size), silently.
env WEFT_GUEST_ENV=WEFT_PLUGIN_STATS WEFT_PLUGIN_STATS=1 OMP_NUM_THREADS=4 \
  "$WEFT" replay --sched random --depth 1 --points shared --steps 400 --threads 3 --seed 7 --save-trace \
  --timeout 60 --output "$work/env4" -- "$WEFT_FIXTURES/lost_update" >"$work/env4.log" 2>&1 || true
check "OMP_* passes through without WEFT_GUEST_ENV (the run changes)" \
  bash -c "test -s '$work/env4/traces/seed-7.wtr' && ! cmp -s '$c/traces/seed-7.wtr' '$work/env4/traces/seed-7.wtr'"
# A consumer that polls a pipe with a 5 ms timeout: the timeout ran on the
# host's clock, and the failing seeds of one campaign were {1, 38}, {25}
# and {} in three runs. A poll's timeout is now up when the schedule
# resumes the thread.
cat >"$work/pollpipe.c" <<'EOF'
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int pfd[2];
static volatile int pdone;
static int consumed;
static void *producer(void *x)
{
    for (int i = 0; i < 5; i++)
        if (write(pfd[1], "x", 1) != 1)
            abort();
    pdone = 1;
    return x;
}
static void *consumer(void *x)
{
    struct pollfd p = {.fd = pfd[0], .events = POLLIN};
    for (;;) {
        int r = poll(&p, 1, 5);
        char c;
        if (r > 0 && read(pfd[0], &c, 1) == 1)
            consumed++;
        else if (r == 0 && pdone)
            break; /* the bug: data may still be queued */
    }
    return x;
}
int main(void)
{
    if (pipe(pfd))
        return 2;
    pthread_t p, c;
    pthread_create(&c, 0, consumer, 0);
    pthread_create(&p, 0, producer, 0);
    pthread_join(p, 0);
    pthread_join(c, 0);
    if (consumed != 5)
        printf("BUG: consumed %d of 5\n", consumed);
    return consumed != 5;
}
EOF
cross_cc pollpipe
three_campaigns pollpipe pct 30
check "a poll with a timeout: three campaigns, the same runs" same_three pollpipe lines

# Every worker dereferences the same NULL: the token holder crashes first,
# and the others wait at their gates while qemu exits. Let go then (for the
# exclusive section of qemu's exit), one crashed too and the verdict named
# whichever was noted last, by host timing; they now stay parked. Three
# campaigns of the same seeds: the same runs, and the failing runs said in
# seed order, two jobs at a time.
cat >"$work/crashpair.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int *volatile table; /* never set: every worker crashes */
static int done;
static void *worker(void *a)
{
    long id = (long)a;
    pthread_mutex_lock(&m);
    done++;
    pthread_mutex_unlock(&m);
    return (void *)(long)table[id];
}
int main(void)
{
    pthread_t t[3];
    for (long i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("%d\n", done);
    return 0;
}
EOF
cross_cc crashpair
three_campaigns crashpair random 40
check "crashes of every thread: three campaigns, the same runs" same_three crashpair lines
said_in_order() { grep '^seed' "$work/$1-1.said" | sort -n -k2 -c && same_three "$1" said; }
check "crashes of every thread: the failing runs said in seed order, the same each time" \
  said_in_order crashpair

finish
