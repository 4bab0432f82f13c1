# Shared by the results/replay-*.sh experiments (sourced, not run).
# Expects $weft, $build, $runs, $jobs.

# campaign DIR SCHED DEPTH FIXTURE [REPLAY OPTIONS...]: one campaign of $runs
# runs (seeds 1..$runs) into DIR. A campaign already in DIR is continued with
# --resume (an interrupted experiment, or one rerun with more runs, only
# does the missing seeds).
campaign() {
  local dir="$1" sched="$2" depth="$3" fx="$4" resume=()
  shift 4
  if [ -f "$dir/summary.json" ] && [ "$(jq .runs "$dir/summary.json")" = "$runs" ]; then
    echo "${0##*/}: ${dir##*/}: kept from an earlier run" >&2
    return
  fi
  if [ -f "$dir/campaign.json" ]; then resume=(--resume); else rm -rf "$dir"; fi
  # A campaign's exit status is 10 when a run failed: that is a finding here.
  timeout -s KILL 7200 "$weft" replay --sched "$sched" --depth "$depth" --runs "$runs" --jobs "$jobs" \
    --timeout 60 --quiet --output "$dir" "${resume[@]}" "$@" -- "$build/fixtures/$fx" >>"$dir.log" 2>&1 || true
  if [ -f "$dir/summary.json" ]; then
    echo "${0##*/}: ${dir##*/}: $(jq -r '"\(.hits)/\(.runs) hits"' "$dir/summary.json")" >&2
  else
    echo "${0##*/}: ${dir##*/}: no summary (see $dir.log)" >&2
  fi
}

# jq definitions: percentages with 1 decimal, or 3 below 1%.
jq_pct='def pct: if . >= 0.01 then (. * 1000 | round) / 10 else (. * 100000 | round) / 1000 end | tostring;'
