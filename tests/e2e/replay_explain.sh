# A failing run explained and cut down: weft replay --explain names the
# switches at the change points and the racing variable, weft explain says
# the same from the kept files; --minimize finds a schedule with fewer
# preemptions and switches than the policy's on four failing fixtures, and
# weft replay --schedule reproduces it 10 times out of 10, trace for trace;
# an abort's minimal schedule is saved too.
source "$(dirname "$0")/lib.sh"

# replay DIR ARGS...: a weft replay with its output in DIR.log, status in $st.
replay() {
  local dir="$1"
  shift
  run_status st timeout -s KILL 300 "$WEFT" replay --timeout 30 -o "$dir" "$@" >"$dir.log" 2>&1
}

# ---- --explain: change points and the racing variable -----------------------------
explain_case() { # fixture depth
  local fx="$1" d="$2" c="$work/$1-pct"
  replay "$c" --sched pct --depth "$d" --runs 30 --jobs 2 --save-trace -- "$WEFT_FIXTURES/$fx"
  check "$fx: a pct campaign fails (status $st)" test "$st" = 10
  # The first failing seed whose log has a switch at a change point.
  local seed=""
  for s in $(jq -r 'select(.verdict != "pass") | .seed' "$c/runs.jsonl"); do
    if jq -e '[.switches[] | select(.why == "change_point")] | length > 0' \
      "$c/traces/seed-$s.sched.json" >/dev/null; then
      seed="$s"
      break
    fi
  done
  check "$fx: a failing seed switched at a change point" test -n "$seed"
  [ -n "$seed" ] || return 0
  local e="$work/$fx-explain"
  replay "$e" --sched pct --depth "$d" --seed "$seed" --explain -- "$WEFT_FIXTURES/$fx"
  check "$fx seed $seed --explain: the run fails again (status $st)" test "$st" = 10
  check "$fx seed $seed --explain: its verdict line once, not again before the schedule" \
    test "$(grep -c "^seed $seed: " "$e.log")" = 1
  local cps step i
  cps="$(jq -c '.change_points' "$c/traces/seed-$seed.sched.json")"
  while read -r step i; do
    check "$fx seed $seed: explains the switch at change point k_$i (step $step of $cps)" \
      grep -Eq "^  step +$step  T[0-9]+ -> T[0-9]+  preempt +change point k_$i: " "$e.log"
  done < <(jq -r '.switches[] | select(.why == "change_point") | "\(.step) \(.change_point)"' \
    "$c/traces/seed-$seed.sched.json")
  local var
  # weft races exits 10 when it finds races.
  var="$({ timeout -s KILL 60 "$WEFT" races --json "$e/traces/seed-$seed.wtr" || true; } |
    jq -r '.races[0].variable')"
  check "$fx seed $seed: weft races names a variable ($var)" test -n "$var" -a "$var" != null
  check "$fx seed $seed: the explanation names race 1 on $var" grep -q "^  race 1 on $var " "$e.log"
  check "$fx seed $seed: and its last accesses" grep -q "^  last accesses to $var:" "$e.log"
  check "$fx seed $seed: ends with the verdict" \
    test "$(tail -1 "$e.log")" = "verdict: $(jq -r '"\(.verdict): \(.detail)"' "$e/runs.jsonl")"
  # weft explain from the campaign's kept files says the same as --explain.
  run_status st2 "$WEFT" explain "$c" "$seed" >"$work/$fx-weft-explain.txt" 2>&1
  check "$fx seed $seed: weft explain exits 0 (got $st2)" test "$st2" = 0
  sed -n '/^schedule: /,$p' "$e.log" | sed "s|$e/|DIR/|g" >"$work/a"
  sed -n '/^schedule: /,$p' "$work/$fx-weft-explain.txt" | sed "s|$c/|DIR/|g" >"$work/b"
  check "$fx seed $seed: weft explain DIR SEED = --explain" cmp -s "$work/a" "$work/b"
}
explain_case lost_update 2
explain_case atomicity_violation 3

run_status st "$WEFT" explain "$work/lost_update-pct" 999999
check "weft explain: a seed not kept is one line, exit 1" test "$st" = 1

# A guest killed by a signal writes no record: the log the plugin appended
# as the run went explains it.
replay "$work/segv" --sched pct --seed 1 --explain -- "$WEFT_FIXTURES/fail_segv"
check "fail_segv --explain: a crash (status $st)" test "$st" = 10
check "fail_segv: its switch log kept as it went" test -s "$work/segv/traces/seed-1.switches.jsonl"
# The plugin appends it through a mapping grown a window at a time: the
# kept log ends at its last line, without the window's zeros.
check "fail_segv: its switch log ends at its last line" \
  test "$(tr -d '\000' <"$work/segv/traces/seed-1.switches.jsonl" | wc -c)" = "$(wc -c <"$work/segv/traces/seed-1.switches.jsonl")"
check "fail_segv: every line of it is JSON" jq -e . "$work/segv/traces/seed-1.switches.jsonl"
check "fail_segv: explained from it" grep -q "the run died before the plugin wrote its record" "$work/segv.log"
check "fail_segv: with the counts its policy kept" grep -q "the counts its policy kept" "$work/segv.log"
check "fail_segv: kept beside it" test -s "$work/segv/traces/seed-1.status"
check "fail_segv: its step count" \
  test "$(sed -nE 's/^schedule: .* ([0-9]+) steps, .*/\1/p' "$work/segv.log")" = "$(jq .steps "$work/segv/runs.jsonl")"
check "fail_segv: ends with the verdict" grep -q "^verdict: crash: killed by signal 11" "$work/segv.log"

# ---- --minimize and --schedule -------------------------------------------------
minimize_case() { # fixture policy depth
  local fx="$1" pol="$2" d="$3" c="$work/$1-$2"
  replay "$c" --sched "$pol" --depth "$d" --runs 20 --jobs 2 -- "$WEFT_FIXTURES/$fx"
  check "$fx/$pol: the campaign fails (status $st)" test "$st" = 10
  # The failing seed with the most preemptions (the lowest on ties).
  local seed pre sw
  read -r seed pre sw < <(jq -s -r '[.[] | select(.verdict != "pass")] | sort_by(-.preemptions, .seed)
    | .[0] | "\(.seed) \(.preemptions) \(.switches)"' "$c/runs.jsonl")
  check "$fx/$pol: a failing seed with 2+ preemptions (seed $seed: $pre)" test "${pre:-0}" -ge 2
  local m="$work/$fx-min"
  replay "$m" --sched "$pol" --depth "$d" --seed "$seed" --minimize -q -- "$WEFT_FIXTURES/$fx"
  check "$fx/$pol seed $seed --minimize: exit 10 (got $st)" test "$st" = 10
  local line
  line="$(grep '^weft: minimal schedule: ' "$m.log" || true)"
  local mp mpre msw msw_of
  read -r mp mpre msw msw_of < <(sed -E 's/^weft: minimal schedule: ([0-9]+) preemptions? of ([0-9]+), ([0-9]+) switches of ([0-9]+) .*/\1 \2 \3 \4/' <<<"$line")
  check "$fx/$pol seed $seed: $mp preemptions, fewer than the policy's $mpre" test "${mp:-99}" -lt "${mpre:-0}"
  check "$fx/$pol seed $seed: $msw switches, fewer than the policy's $msw_of" test "${msw:-99}" -lt "${msw_of:-0}"
  check "$fx/$pol seed $seed: the policy's counts are the campaign's ($pre, $sw)" \
    test "$mpre $msw_of" = "$pre $sw"
  local f="$m/schedule.json"
  check "$fx/$pol: schedule.json has $mp preempting switches" \
    test "$(jq '[.switches[] | select(.preempt)] | length' "$f")" = "$mp"
  check "$fx/$pol: replayed from the file, the same failure" grep -q "(the same failure)$" "$m.log"
  local want
  want="$(jq -r '"\(.verdict)\t\(.detail)"' "$f")"
  local same=0 traces=0 first=""
  for i in 1 2 3 4 5 6 7 8 9 10; do
    run_status st timeout -s KILL 120 "$WEFT" replay --schedule "$f" --save-trace -o "$m-r$i" >"$m-r$i.log" 2>&1
    if [ "$st" = 10 ] && grep -q "): reproduced$" "$m-r$i.log" &&
      [ "$(jq -r '"\(.verdict)\t\(.detail)"' "$m-r$i/runs.jsonl")" = "$want" ] &&
      [ "$(jq '.script_missed' "$m-r$i/runs.jsonl")" = 0 ]; then
      same=$((same + 1))
    fi
    [ -z "$first" ] && first="$m-r$i/traces/seed-1.wtr"
    cmp -s "$first" "$m-r$i/traces/seed-1.wtr" && traces=$((traces + 1))
  done
  check "$fx/$pol: --schedule reproduces the failure 10/10 (got $same)" test "$same" = 10
  check "$fx/$pol: and the same trace bytes 10/10 (got $traces)" test "$traces" = 10
}
minimize_case lost_update pct 3
minimize_case atomicity_violation random 1
minimize_case deadlock_lock_order random 1
minimize_case order_violation random 1

# The schedule file keeps the guest's environment: replayed with another,
# weft says which variables differ (a schedule minimized with
# OMP_NUM_THREADS=3 replayed without it ran 2 threads and said only "NOT
# reproduced"); with the same one, nothing.
f="$work/lost_update-min/schedule.json"
check "schedule.json records the guest's environment" \
  test "$(jq '[.env[] | select(startswith("PATH="))] | length' "$f")" = 1
run_status st env OMP_NUM_THREADS=3 timeout -s KILL 120 "$WEFT" replay --schedule "$f" \
  -o "$work/envdiff" >"$work/envdiff.log" 2>&1
check "--schedule with another environment: names the variable" \
  grep -q "^weft: note: the guest's environment differs from the one .* was found with (1 variable: OMP_NUM_THREADS (unset there, 3 here)): the run may not follow it$" "$work/envdiff.log"
check "--schedule with the same environment: no such note" \
  bash -c "! grep -q 'environment differs' '$work/lost_update-min-r1.log'"

# A run killed by a signal (an abort, a crash) leaves its switch log, no
# record: the minimal schedule of an abort was "did not fail again" and not
# saved.
m="$work/crash2_abort-min"
replay "$m" --sched random --seed 3 --minimize -q -- "$WEFT_FIXTURES/bench/crash2_abort"
check "crash2_abort --minimize: exit 10 (got $st)" test "$st" = 10
check "crash2_abort: the minimal schedule is saved, an abort" \
  test "$(jq -r .verdict "$m/schedule.json" 2>/dev/null)" = abort

# The file decides: options it decides are refused, without a program too.
f="$work/lost_update-min/schedule.json"
run_status st "$WEFT" replay --schedule "$f" --sched pct
check "--schedule with --sched: exit 2" test "$st" = 2
run_status st "$WEFT" replay --sched pct --minimize -- "$WEFT_FIXTURES/lost_update"
check "--minimize without --seed: exit 2" test "$st" = 2
# ---- races on different pcs of the same lines are one entry -----------------------
# Two stores on one line (an if/else) race with main's store as two pc pairs
# that read the same: --explain shows them once, their instances summed.
cat >"$work/oneline.c" <<'EOF'
#include <pthread.h>
#include <stdlib.h>
static volatile int g;
static void *work(void *a)
{
    for (int i = 0; i < 50; i++)
        if (i & 1) g = 3; else g = 5;
    return a;
}
int main(void)
{
    pthread_t t;
    pthread_create(&t, 0, work, 0);
    for (int i = 0; i < 50; i++)
        g = 7;
    pthread_join(t, 0);
    return g != 7;
}
EOF
cross_cc oneline
merged=0
for s in 1 2 3 4 5 6; do
  replay "$work/oneline-$s" --sched random --seed "$s" --explain -- "$work/oneline"
  lines="$(grep -c '^  race [0-9]* on ' "$work/oneline-$s.log" || true)"
  total="$(sed -n 's/^races in this run (weft races .*): \([0-9]*\).*/\1/p' "$work/oneline-$s.log")"
  check "oneline seed $s: no two race lines read the same" \
    test -z "$(sed -n 's/^  race [0-9]* \(on .*\), [0-9]* instances*: /\1 /p' "$work/oneline-$s.log" |
      sort | uniq -d)"
  [ -n "$total" ] && [ "$lines" -lt "$total" ] && merged=$((merged + 1))
done
check "oneline: some seed's races on the same lines were merged ($merged of 6)" test "$merged" -gt 0

# ---- a thread asleep in a read is placed at its call --------------------------------
# The switch log placed a thread blocked in a read of a pipe "(place
# unknown)", or at its last lock: now at the last block of its own code.
cat >"$work/blockread.c" <<'EOF'
#include <pthread.h>
#include <unistd.h>
static int fds[2];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int total;
static void *reader(void *a)
{
    int x = 0;
    if (read(fds[0], &x, sizeof x) != sizeof x) /* READ_LINE */
        return a;
    pthread_mutex_lock(&m);
    total += x;
    pthread_mutex_unlock(&m);
    return a;
}
int main(void)
{
    pthread_t t;
    if (pipe(fds))
        return 2;
    pthread_create(&t, NULL, reader, NULL);
    for (int i = 0; i < 3; i++) {
        pthread_mutex_lock(&m);
        total++;
        pthread_mutex_unlock(&m);
    }
    int v = 4;
    if (write(fds[1], &v, sizeof v) != sizeof v)
        return 2;
    pthread_join(t, NULL);
    return total != 7;
}
EOF
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/blockread" "$work/blockread.c" ||
  fail "the cross compiler failed on blockread.c"
line="$(grep -n READ_LINE "$work/blockread.c" | cut -d: -f1)"
placed=0
for s in 1 2 3 4; do
  replay "$work/blockread-$s" --sched pct --depth 2 --seed "$s" --explain -- "$work/blockread"
  sed -n '/^switches:/,/^races in this run/p' "$work/blockread-$s.log" >"$work/blockread-$s.sw"
  check "blockread seed $s: no place unknown" bash -c "! grep -q 'place unknown' '$work/blockread-$s.sw'"
  grep -q "T1 at reader (blockread.c:$line)" "$work/blockread-$s.sw" && placed=$((placed + 1))
done
check "blockread: the reader asleep in read is placed at its call, line $line ($placed of 4 seeds)" \
  test "$placed" -gt 0

# ---- a race on an unnamed (heap) address: the address once --------------------------
cat >"$work/heaprace.c" <<'EOF'
#include <pthread.h>
#include <stdlib.h>
static void *work(void *a)
{
    for (int i = 0; i < 50; i++)
        ++*(volatile int *)a;
    return a;
}
int main(void)
{
    int *p = calloc(1, sizeof *p);
    pthread_t t;
    pthread_create(&t, 0, work, p);
    for (int i = 0; i < 50; i++)
        ++*(volatile int *)p;
    pthread_join(t, 0);
    return *p != 100;
}
EOF
cross_cc heaprace
replay "$work/heaprace-1" --sched random --seed 1 --explain -- "$work/heaprace"
check "heaprace: a race on a heap address is listed" grep -Eq "^  race 1 on 0x[0-9a-f]+, " "$work/heaprace-1.log"
check "heaprace: its address is not said twice" bash -c "! grep -Eq '^  race [0-9]+ on (0x[0-9a-f]+) \(\1\)' '$work/heaprace-1.log'"

# ---- what killed a run, and where --------------------------------------------------
# A crash: the trace's fault event (the access that faulted), named.
replay "$work/segv-x" --sched pct --seed 1 --explain -- "$WEFT_FIXTURES/fail_segv"
check "fail_segv --explain: the faulting write, where (status $st)" \
  grep -Eq '^fault: T1 at worker \(fail_segv.c:30\), writing 0x0, [0-9]+ ns$' "$work/segv-x.log"
# An abort: the thread that signalled itself, and its last code in the program.
replay "$work/abort-x" --sched pct --seed 1 --explain -- "$WEFT_FIXTURES/fail_abort"
check "fail_abort --explain: the thread that raised the signal (status $st)" \
  grep -Eq '^raised: T1 sent itself a signal \(abort' "$work/abort-x.log"
check "fail_abort --explain: its last code in the program" \
  grep -q '^  its last code in the program: at worker (fail_abort.c:14)$' "$work/abort-x.log"

# A thread polling a variable repeats one access: its reads fold into one
# line, so that the accesses before the spin (the write it waits for) stay
# among the last shown (a helper's livelock showed eight identical reads).
cat >"$work/fold.c" <<'EOF'
#include <pthread.h>
static volatile int x;
static void *writer(void *a)
{
    x = 1; /* racy: main polls it without synchronization */
    return a;
}
int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    int seen = 0;
    for (int i = 0; i < 1000; i++)
        seen += x;
    pthread_join(t, NULL);
    return seen < 0;
}
EOF
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/fold" "$work/fold.c"
run_status st timeout -s KILL 120 "$WEFT" replay --sched pct --seed 1 --timeout 30 --explain \
  --output "$work/fold-run" -- "$work/fold" >"$work/fold.out" 2>&1
check "a polled variable: its reads folded into one line" \
  grep -q "^    read  T0 at main (fold.c:14), [0-9]* ns (seq [0-9]*), the last of 1000 in a row$" "$work/fold.out"
check "a polled variable: the write before them still shown" \
  grep -q "^    write T1 at writer (fold.c:5), " "$work/fold.out"

finish
