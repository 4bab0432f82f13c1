# Scale-out: a campaign split with --shard I/N into 4 shards run by GNU
# parallel and combined by weft merge gives the same summary.json, byte for
# byte, and the same runs (wall times aside) as the unsharded campaign; the
# shards' seed ranges; merge's refusals, duplicates and gaps.
source "$(dirname "$0")/lib.sh"
fx="$WEFT_FIXTURES/lost_update"
command -v parallel >/dev/null || { fail "GNU parallel is not installed (scripts/bootstrap)"; finish; }

# parallel adds PARALLEL_* variables to each shard's environment; weft
# gives the guest a fixed environment, so the shards run under parallel as
# they are and must still match the unsharded campaign (docs/scale-out.md).
clean_env=()
camp=(replay --sched pct --depth 2 --runs 40 --timeout 30 -q)

# The unsharded campaign and its 4 shards. A run that departed from the
# policy's order (a gate gave up waiting on a loaded host) says so and may
# not repeat by its seed: then both are run once more, so that what is
# compared byte for byte is runs that kept the order.
full_and_shards() {
  rm -rf "$work/full" "$work/shards" "$work/shard-status"
  run_status st "${clean_env[@]}" "$WEFT" "${camp[@]}" --jobs 2 -o "$work/full" -- "$fx" >"$work/full.log" 2>&1
  export WEFT fx work
  timeout -s KILL 300 parallel --will-cite -j 2 \
    "${clean_env[*]} $WEFT ${camp[*]} --jobs 1 --shard {}/4 -o $work/shards/{} -- $fx >$work/s{}.log 2>&1; echo {} \$? >>$work/shard-status" \
    ::: 1 2 3 4
  departed="$(cat "$work/full/runs.jsonl" "$work"/shards/*/runs.jsonl 2>/dev/null | departed_seeds /dev/stdin)"
}
full_and_shards
if [ -n "$departed" ]; then
  echo "note: seeds $departed departed from the policy's order on this host; both run again"
  full_and_shards
fi
check "no run departed from the policy's order (${departed:-none})" test -z "$departed"
check "unsharded campaign: status 10, some run failed (got $st)" test "$st" = 10
check "4 shards ran through GNU parallel" test "$(wc -l <"$work/shard-status")" = 4
check "each shard: status 0 or 10" test "$(awk '$2 != 0 && $2 != 10' "$work/shard-status" | wc -l)" = 0
for i in 1 2 3 4; do
  lo=$(((i - 1) * 10 + 1)) hi=$((i * 10))
  check "shard $i/4 ran seeds $lo..$hi" \
    test "$(jq -s -c '[.[].seed]' "$work/shards/$i/runs.jsonl")" = "$(jq -c -n "[range($lo; $((hi + 1)))]")"
  check "shard $i/4: campaign.json names the shard" \
    test "$(jq -c '.shard' "$work/shards/$i/campaign.json")" = "{\"index\":$i,\"count\":4,\"first_seed\":1,\"runs\":40}"
done

run_status st "$WEFT" merge -o "$work/merged" "$work"/shards/{1,2,3,4} >"$work/merge.log" 2>&1
check "merge: status 0 (got $st)" test "$st" = 0
check "merged summary.json equals the unsharded one, byte for byte" \
  cmp "$work/merged/summary.json" "$work/full/summary.json"
check "merged runs.jsonl: the same runs in seed order (wall_s aside)" \
  cmp <(jq -c 'del(.wall_s)' "$work/merged/runs.jsonl") <(jq -c 'del(.wall_s)' "$work/full/runs.jsonl")
check "summary.json has no wall time; timing.json has it" \
  test "$(jq '[paths | map(tostring) | join(".") | select(test("wall"))] | length' "$work/full/summary.json") $(jq '.wall_s_campaign > 0' "$work/full/timing.json")" = "0 true"
check "merged campaign.json: whole range, no shard" \
  test "$(jq -c '[.first_seed, .runs, .shard]' "$work/merged/campaign.json")" = "[1,40,null]"
check "merged folder summarizes with weft replay --summary" \
  bash -c "'$WEFT' replay --summary '$work/merged/runs.jsonl' | grep -q 'runs      40'"

# Duplicates: a shard given twice counts once.
run_status st "$WEFT" merge -o "$work/dup" "$work"/shards/{1,1,2,3,4} >"$work/dup.log" 2>&1
check "duplicate shard: merged (status $st)" test "$st" = 0
check "duplicate shard: reported" grep -q "10 duplicate runs" "$work/dup.log"
check "duplicate shard: summary unchanged" cmp "$work/dup/summary.json" "$work/full/summary.json"

# Gaps: a missing shard is an error naming the seeds, unless --allow-gaps.
run_status st "$WEFT" merge -o "$work/gap" "$work"/shards/{1,2,4} >"$work/gap.log" 2>"$work/gap.err"
check "missing shard: status 1 (got $st)" test "$st" = 1
check "missing shard: one line naming seeds 21..30" \
  test "$(wc -l <"$work/gap.err") $(grep -c '10 seeds of 1..40 not run: 21..30' "$work/gap.err")" = "1 1"
check "missing shard: nothing written" test ! -e "$work/gap/summary.json"
run_status st "$WEFT" merge --allow-gaps -o "$work/gap" "$work"/shards/{1,2,4} >"$work/gap.log" 2>&1
check "--allow-gaps: merged 30 runs" \
  test "$st $(jq .runs "$work/gap/summary.json")" = "0 30"

# Another configuration is refused in one line.
run_status st "${clean_env[@]}" "$WEFT" replay --sched pct --depth 1 --runs 40 --jobs 2 --timeout 30 -q \
  --shard 3/4 -o "$work/d1" -- "$fx" >/dev/null 2>&1
run_status st "$WEFT" merge -o "$work/bad" "$work"/shards/{1,2} "$work/d1" "$work/shards/4" >/dev/null 2>"$work/bad.err"
check "other depth: refused with status 1 (got $st)" test "$st" = 1
check "other depth: one line naming it" \
  test "$(wc -l <"$work/bad.err") $(grep -c 'was run with depth 1' "$work/bad.err")" = "1 1"
run_status st "$WEFT" merge -o "$work/shards/1" "$work"/shards/{1,2} >/dev/null 2>"$work/self.err"
check "-o one of the inputs: refused (status $st)" test "$st" = 2
run_status st "$WEFT" merge -o "$work/x" "$work/nonexistent" >/dev/null 2>"$work/ne.err"
check "not a campaign folder: status 1, one line" test "$st $(wc -l <"$work/ne.err")" = "1 1"

# --shard: bad values, conflicts, an empty shard, a resumed shard.
for bad in 0/4 5/4 3 1/0 a/b 2/4x; do
  run_status st "$WEFT" replay --shard "$bad" --runs 8 -- "$fx" >/dev/null 2>"$work/e"
  check "--shard $bad: status 2, one line" test "$st $(wc -l <"$work/e")" = "2 1"
done
run_status st "$WEFT" replay --shard 1/4 --seed 3 -- "$fx" >/dev/null 2>"$work/e"
check "--shard with --seed: status 2" test "$st" = 2
run_status st "$WEFT" replay --sched pct --shard 3/8 --runs 2 -o "$work/empty" -- "$fx" >/dev/null 2>"$work/e"
check "--shard 3/8 of 2 runs: empty shard refused" test "$st $(grep -c 'no seed' "$work/e")" = "2 1"
run_status st "${clean_env[@]}" "$WEFT" replay --sched pct --depth 2 --runs 40 --timeout 30 -q --resume \
  --shard 2/4 -o "$work/shards/2" -- "$fx" >"$work/resume.log" 2>&1
check "resumed shard 2/4: nothing left to run" grep -q "0 to run (10 already done)" "$work/resume.log"
run_status st "$WEFT" replay --sched pct --depth 2 --runs 40 --resume --shard 3/4 -o "$work/shards/2" \
  -- "$fx" >/dev/null 2>"$work/e"
check "resuming shard 2/4 as 3/4: refused" test "$st $(grep -c 'is shard 2/4' "$work/e")" = "2 1"
check "merge --help" bash -c "'$WEFT' merge --help | grep -q -- '--allow-gaps'"
check "replay --help documents --shard" bash -c "'$WEFT' replay --help | grep -q -- '--shard I/N'"
run_status st "$WEFT" merge "$work/shards/1" >/dev/null 2>"$work/e"
check "merge without -o: status 2" test "$st" = 2
finish
