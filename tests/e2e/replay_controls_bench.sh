# The benchmark's controls under replay (fixtures/bench, kind control):
# process exit is a schedule point (a program that returns from main while a
# thread asserts ends the same way for the same seed, joined or not); a
# spinner is relieved; a livelock is one; 200 threads run under every policy.
source "$(dirname "$0")/lib.sh"
b="$WEFT_FIXTURES/bench"

# exit_no_join: 100 seeds, twice, with two jobs and the same points, k and n
# (the second campaign takes the first's): the same verdict per seed, and
# both endings occur (so the seeds do decide something).
run_status st "$WEFT" replay --sched random --runs 100 --jobs 2 --timeout 60 -q \
  --output "$work/exit1" -- "$b/exit_no_join" >/dev/null 2>&1
k="$(jq .k "$work/exit1/campaign.json")" n="$(jq .n "$work/exit1/campaign.json")"
run_status st "$WEFT" replay --sched random --runs 100 --jobs 2 --timeout 60 -q \
  --points "visible:$work/exit1/points.pcs" --steps "$k" --threads "$n" \
  --output "$work/exit2" -- "$b/exit_no_join" >/dev/null 2>&1
for rep in 1 2; do
  jq -r '"\(.seed) \(.verdict)"' "$work/exit$rep/runs.jsonl" | sort -n >"$work/exit$rep.v"
done
check "exit_no_join: 100 seeds ran twice" test "$(wc -l <"$work/exit1.v") $(wc -l <"$work/exit2.v")" = "100 100"
check "exit_no_join: same verdict per seed" cmp -s "$work/exit1.v" "$work/exit2.v"
check "exit_no_join: some seeds abort" grep -q " abort$" "$work/exit1.v"
check "exit_no_join: some seeds pass" grep -q " pass$" "$work/exit1.v"

# A spinner waiting for a flag another thread sets: demoted, the setter
# runs, every run passes (spin_sleep_ok: a poller that sleeps, which a first
# sleep leaves above a delayed setter, and the next one does not).
for fx in spin_ok spin_yield_ok spin_sleep_ok; do
  run_status st "$WEFT" replay --sched pct --runs 10 --jobs 2 --timeout 60 -q \
    --output "$work/$fx" -- "$b/$fx" >/dev/null 2>&1
  check "$fx: every run passes (status $st)" \
    test "$st $(jq -r .verdict "$work/$fx/runs.jsonl" | sort -u | tr '\n' ' ')" = "0 pass "
done
# sleep_handoff (not a control): main sleeps instead of waiting for the
# thread that publishes its settings. A delay outlasts a sleep, so PCT finds
# it at depth 2 (about half the runs; none if a sleep were a yield).
run_status st "$WEFT" replay --sched pct --depth 2 --runs 40 --jobs 2 --timeout 60 -q \
  --output "$work/handoff" -- "$b/sleep_handoff" >/dev/null 2>&1
hits="$(jq -r 'select(.verdict == "bug") | .seed' "$work/handoff/runs.jsonl" | wc -l)"
check "sleep_handoff: pct d=2 finds it in at least 5 of 40 runs ($hits)" test "$hits" -ge 5
# Two threads spinning on acknowledgements nobody sends: a livelock.
run_status st "$WEFT" replay --sched pct --runs 3 --jobs 2 --timeout 60 -q \
  --output "$work/livelock" -- "$b/livelock" >/dev/null 2>&1
check "livelock: verdict livelock (status $st)" \
  test "$st $(jq -r .verdict "$work/livelock/runs.jsonl" | sort -u | tr '\n' ' ')" = "10 livelock "

# 200 threads under every policy: no fixed limit below the PE pool. The
# points are given (the program's own calls and atomics, no shared-access
# pcs), so no profiling runs.
: >"$work/none.pcs"
for sched in random pct ppct rpro pos; do
  run_status st "$WEFT" replay --sched "$sched" --seed 1 --steps 3000 --threads 201 \
    --points "visible:$work/none.pcs" --timeout 120 --output "$work/t200-$sched" \
    -- "$b/threads200" >"$work/t200-$sched.log" 2>&1
  check "threads200 under $sched: pass (status $st)" \
    test "$st $(jq -r '"\(.verdict) \(.threads)"' "$work/t200-$sched/runs.jsonl")" = "0 pass 201"
done
# Delay bounding is exhaustive: with at most one delay, seeds 1.. name every
# schedule, the campaign stops when they are done, and the AB/BA deadlock is
# among them (one delay suffices).
run_status st "$WEFT" replay --sched db --bound 1 --runs 100000 --jobs 2 --timeout 60 -q \
  --output "$work/db" -- "$b/deadlock_abba" >"$work/db.log" 2>&1
total="$(sed -nE 's/^weft: db with at most 1 delays: ([0-9]+) schedules.*/\1/p' "$work/db.log")"
check "db --bound 1: says how many schedules ($total)" test -n "$total"
check "db --bound 1: runs exactly those" test "$(wc -l <"$work/db/runs.jsonl")" = "$total"
check "db --bound 1: finds the deadlock (status $st)" \
  test "$st $(jq -r 'select(.verdict == "deadlock") | .verdict' "$work/db/runs.jsonl" | sort -u)" = "10 deadlock"
check "db --bound 1: each run names its schedule" \
  test "$(jq -r '.schedule.bound' "$work/db/runs.jsonl" | sort -u | tr '\n' ' ')" = "0 1 "

# Points learnt in rounds: work_stealing's thief stores `top` only when it
# runs between the owner's pops, which no schedule with the visible
# operations alone as points takes (the owner runs from the thread's
# creation to its join). Later rounds, with the shared pcs as points, take
# it, and that store becomes a point.
run_status st "$WEFT" replay --sched random --runs 1 --jobs 2 --save-trace --timeout 60 \
  --output "$work/ws" -- "$b/work_stealing" >"$work/ws.log" 2>&1
check "work_stealing: profiling learnt in more than two rounds" \
  grep -Eq "^weft: profiling: .*learnt.* \(([3-9]|[1-9][0-9]+) rounds" "$work/ws.log"
for t in "$work"/ws/profile-*-*.wtr; do
  "$WEFT" export -F csv -o "$t.csv" "$t" 2>/dev/null || true
done
store="$(cat "$work"/ws/profile-*.csv | awk -F, '$4 == "write" && $8 == "top" && $9 == "thief" {print $7}' |
  sed 's/^0x//' | sort -u)"
check "work_stealing: a kept profiling schedule has the thief's store to top" test -n "$store"
check "work_stealing: that store is a point" grep -qx "$store" "$work/ws/points.pcs"
# A round's runs side by side (--jobs 2) or one after the other: the same.
run_status st "$WEFT" replay --sched random --runs 1 --jobs 1 --timeout 60 \
  --output "$work/ws1" -- "$b/work_stealing" >"$work/ws1.log" 2>&1
check "work_stealing: the same points with --jobs 1 and 2" cmp -s "$work/ws/points.pcs" "$work/ws1/points.pcs"
check "work_stealing: the same k and n with --jobs 1 and 2" \
  test "$(jq -c '[.k, .n]' "$work/ws/campaign.json")" = "$(jq -c '[.k, .n]' "$work/ws1/campaign.json")"
finish
