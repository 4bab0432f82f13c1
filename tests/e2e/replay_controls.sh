# The bug-free controls (*_ok fixtures of fixtures/manifest.tsv) never fail
# under replay: 100 runs each with the policy that finds their buggy twin
# quickest, and 50 under PCT depth 2 (results/replay-controls.sh runs 1000).
source "$(dirname "$0")/lib.sh"

controls=0
while IFS=$'\t' read -r name threads kind depth status args; do
  case "$name" in *_ok) ;; *) continue ;; esac
  controls=$((controls + 1))
  for cfg in "random 1 shared 100" "pct 2 shared 50"; do
    read -r sched d points runs <<<"$cfg"
    out="$work/$name-$sched"
    run_status st timeout -s KILL 300 "$WEFT" replay --sched "$sched" --depth "$d" --points "$points" \
      --runs "$runs" --jobs 2 --timeout 30 --output "$out" -- "$WEFT_FIXTURES/$name" >"$out.log" 2>&1
    check "$name/$sched d$d: $runs runs, no failure (status $st)" test "$st" = 0
    check "$name/$sched: summary says $runs runs, 0 hits" \
      test "$(jq -c '[.runs, .hits, .verdicts.pass]' "$out/summary.json")" = "[$runs,0,$runs]"
  done
done < <(grep -v '^#' "$WEFT_SRC/fixtures/manifest.tsv")
check "found the bug-free controls ($controls)" test "$controls" -ge 6
finish
