# Same seed, same run: three replays of one seed write byte-identical traces
# and JSON lines (wall time aside), for every policy, on fixtures where host
# timing used to leak in (a child created by the first clone, PPCT's high set
# on 8 threads, a thread blocking in a futex).
source "$(dirname "$0")/lib.sh"

cases=(
  "parallel8 ppct 2 7" "parallel8 pct 3 2" "lost_update random 1 7" "lost_update rpro 3 4"
  "wsq pct 2 11" "deadlock_lock_order ppct 2 3" "atomicity_violation random 1 9"
)
for c in "${cases[@]}"; do
  read -r fx sched d seed <<<"$c"
  for rep in 1 2 3; do
    run_status st "$WEFT" replay --sched "$sched" --depth "$d" --points shared --steps 400 --threads 3 \
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
done

# The guest's environment is fixed by weft: a variable that differs between
# shells (or that GNU parallel and Slurm set per task) changes nothing.
c="$work/lost_update-random-1"
env PARALLEL_SEQ=3 SLURM_ARRAY_TASK_ID=12 SOME_LONG_NAME="$(printf '%0200d' 0)" \
  "$WEFT" replay --sched random --depth 1 --points shared --steps 400 --threads 3 --seed 7 --save-trace \
  --timeout 60 --output "$work/env" -- "$WEFT_FIXTURES/lost_update" >"$work/env.log" 2>&1 || true
check "extra environment variables: the same trace" cmp -s "$c/traces/seed-7.wtr" "$work/env/traces/seed-7.wtr"
WEFT_GUEST_ENV=SOME_LONG_NAME SOME_LONG_NAME="$(printf '%0200d' 0)" \
  "$WEFT" replay --sched random --depth 1 --points shared --steps 400 --threads 3 --seed 7 --save-trace \
  --timeout 60 --output "$work/env2" -- "$WEFT_FIXTURES/lost_update" >"$work/env2.log" 2>&1 || true
check "WEFT_GUEST_ENV passes a variable through (the run changes)" \
  bash -c "! cmp -s '$c/traces/seed-7.wtr' '$work/env2/traces/seed-7.wtr'"
finish
