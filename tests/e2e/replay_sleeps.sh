# Sleeps under a replay policy (docs/replay.md, "Spinning"): the host skips
# them unless --real-sleeps; the program cannot tell (its requests intact,
# every call 0); the schedule is the same either way.
source "$(dirname "$0")/lib.sh"
fx="$WEFT_FIXTURES/sleep_ok"

# stats_run NAME ARGS...: one seed, kept with its stderr, the plugin's stats on.
stats_run() {
  local name="$1"
  shift
  run_status st env WEFT_GUEST_ENV=WEFT_PLUGIN_STATS WEFT_PLUGIN_STATS=1 "$WEFT" replay \
    --sched pct --depth 2 --seed 3 --save-trace --timeout 60 "$@" --output "$work/$name" \
    -- "$fx" >"$work/$name.log" 2>&1
}
skipped() { sed -nE 's/.*sleeps_skipped=([0-9]+).*/\1/p' "$work/$1/traces/seed-3.stderr"; }

stats_run skip
check "sleep_ok: passes with its sleeps skipped (status $st)" \
  test "$st $(jq -r .verdict "$work/skip/runs.jsonl")" = "0 pass"
check "sleep_ok: the program slept 7 times, the host none ($(skipped skip))" test "$(skipped skip)" = 7
stats_run real --real-sleeps
check "--real-sleeps: passes (status $st)" test "$st $(jq -r .verdict "$work/real/runs.jsonl")" = "0 pass"
check "--real-sleeps: the host slept each time ($(skipped real) skipped)" test "$(skipped real)" = 0
check "--real-sleeps: in campaign.json" test "$(jq .real_sleeps "$work/real/campaign.json")" = true
check "the same schedule with sleeps skipped or not" \
  test "$(jq -c '[.steps, .change_points]' "$work/skip/runs.jsonl")" = \
  "$(jq -c '[.steps, .change_points]' "$work/real/runs.jsonl")"

# A campaign: the same verdict and steps per seed either way.
for mode in skip real; do
  extra=()
  [ "$mode" = real ] && extra=(--real-sleeps)
  run_status st "$WEFT" replay --sched pct --depth 2 --runs 20 --jobs 2 --steps 40 --threads 2 \
    --timeout 60 "${extra[@]}" --output "$work/c-$mode" -- "$WEFT_FIXTURES/bench/sleep_handoff" \
    >"$work/c-$mode.log" 2>&1
  jq -r '"\(.seed) \(.verdict) \(.steps)"' "$work/c-$mode/runs.jsonl" | sort -n >"$work/c-$mode.v"
done
check "sleep_handoff: 20 seeds both ways" test "$(wc -l <"$work/c-skip.v") $(wc -l <"$work/c-real.v")" = "20 20"
check "sleep_handoff: the same verdict and steps per seed" cmp -s "$work/c-skip.v" "$work/c-real.v"
check "sleep_handoff: some seeds find the bug" grep -q " bug " "$work/c-skip.v"
check "--real-sleeps: in the reproduction commands" grep -Eq "reproduce: .* --real-sleeps " "$work/c-real.log"
check "no --real-sleeps where not given" test "$(grep -c -- "--real-sleeps" "$work/c-skip.log")" = 0
finish
