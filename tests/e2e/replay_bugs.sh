# Every known-bug fixture of fixtures/manifest.tsv (kinds ordering,
# atomicity, deadlock, interference, wsq) is exposed by some policy within
# 1000 runs with the right verdict; deadlocks name the waiting threads; a
# failing seed replays to the same verdict and the same trace bytes.
source "$(dirname "$0")/lib.sh"

# fixture -> policy depth points verdict: the quickest finder (see
# results/replay-grid.md for every policy on every fixture).
declare -A how=(
  [order_violation]="pct 1 none bug"
  [atomicity_violation]="random 1 shared bug"
  [lost_update]="ppct 2 shared bug"
  [wsq]="random 1 shared bug"
  [deadlock_lock_order]="random 1 shared deadlock"
  [deadlock_jdbc]="random 1 shared deadlock"
)
# A priority policy proper on the bugs it finds within a few hundred runs.
extra=("deadlock_lock_order pct 2 none deadlock" "lost_update pct 2 shared bug")

campaign() { # fixture policy depth points verdict
  local fx="$1" sched="$2" depth="$3" points="$4" want="$5" out="$work/$1-$2-$3"
  run_status st timeout -s KILL 300 "$WEFT" replay --sched "$sched" --depth "$depth" \
    --points "$points" --runs 1000 --jobs 2 --timeout 30 --stop-on-hit --save-trace \
    --output "$out" -- "$WEFT_FIXTURES/$fx" >"$out.log" 2>&1
  check "$fx/$sched d$depth $points: a hit within 1000 runs (status $st)" test "$st" = 10
  local got
  got="$(jq -r 'select(.verdict != "pass") | .verdict' "$out/runs.jsonl" | sort -u | tr '\n' ' ')"
  check "$fx/$sched: verdict $want (got: $got)" test "$got" = "$want "
  check "$fx/$sched: summary counts the hit" \
    test "$(jq '.hits >= 1 and .runs_to_first_hit != null and .runs <= 1001' "$out/summary.json")" = true
  check "$fx/$sched: prints how to reproduce" grep -q "reproduce: weft replay .* --seed [0-9]" "$out.log"
  if [ "$want" = deadlock ]; then
    local line
    line="$(jq -c 'select(.verdict == "deadlock")' "$out/runs.jsonl" | head -1)"
    check "$fx/$sched: deadlock lists 2 waiting threads" test "$(jq '.waits | length' <<<"$line")" = 2
    check "$fx/$sched: each waits on a named mutex" \
      test "$(jq '[.waits[] | select(.object != null and .call == "pthread_mutex_lock")] | length' <<<"$line")" = 2
    check "$fx/$sched: detail says who waits where" \
      grep -Eq "T0 waits on futex 0x[0-9a-f]+ \([a-z_]+\).*T1 waits on futex" <<<"$(jq -r .detail <<<"$line")"
    # Each mutex's holder, read from its owner field: the other thread (main's
    # lock taken before the fork server's snapshot names the server's tid).
    check "$fx/$sched: each wait names the other thread as the mutex's holder" \
      test "$(jq -c '[.waits[] | [.thread, .held_by]]' <<<"$line")" = "[[0,1],[1,0]]"
    check "$fx/$sched: detail says held by" \
      grep -Eq "held by T1; T1 waits on .*held by T0$" <<<"$(jq -r .detail <<<"$line")"
  fi
}

known=0
while IFS=$'\t' read -r name threads kind depth status args; do
  case "$kind" in ordering | atomicity | deadlock | interference | wsq) ;; *) continue ;; esac
  [ "$depth" -gt 0 ] || continue
  known=$((known + 1))
  if [ -z "${how[$name]:-}" ]; then
    fail "$name: known-bug fixture with no replay case in replay_bugs.sh"
    continue
  fi
  read -r sched d points want <<<"${how[$name]}"
  campaign "$name" "$sched" "$d" "$points" "$want"
done < <(grep -v '^#' "$WEFT_SRC/fixtures/manifest.tsv")
check "manifest has the 6 known-bug fixtures (found $known)" test "$known" -ge 6
for e in "${extra[@]}"; do
  read -r fx sched d points want <<<"$e"
  campaign "$fx" "$sched" "$d" "$points" "$want"
done

# --seed reproduces a failing run: same verdict, same trace bytes, twice.
for c in "deadlock_lock_order-random-1" "lost_update-ppct-2"; do
  out="$work/$c"
  seed="$(jq -r 'select(.verdict != "pass") | .seed' "$out/runs.jsonl" | head -1)"
  want="$(jq -r "select(.seed == $seed) | .verdict" "$out/runs.jsonl")"
  cmd="$(grep -m1 "reproduce: .* --seed $seed " "$out.log" | sed 's/.*reproduce: weft //')"
  check "$c: reproduce command found" test -n "$cmd"
  for i in 1 2; do
    # shellcheck disable=SC2086 # the printed command is shell words
    eval "run_status st \"\$WEFT\" $cmd" >"$work/repro.log" 2>&1
    check "$c seed $seed repro $i: status 10 (got $st)" test "$st" = 10
    check "$c seed $seed repro $i: verdict $want" grep -q "^seed $seed: $want" "$work/repro.log"
    check "$c seed $seed repro $i: trace byte-identical to the campaign's" \
      cmp "$out/traces/seed-$seed.wtr" "$out-seed-$seed/traces/seed-$seed.wtr"
  done
done
finish
