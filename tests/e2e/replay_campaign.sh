# Campaigns: one JSON line per run, a summary computed from them, the same
# lines for the same arguments whatever --jobs, an interrupted campaign
# that keeps its finished runs and a --resume that runs exactly the rest.
source "$(dirname "$0")/lib.sh"
fx="$WEFT_FIXTURES/lost_update"

# 60 runs, 2 at a time.
run_status st "$WEFT" replay --sched random --points shared --runs 60 --jobs 2 --timeout 30 \
  --output "$work/a" -- "$fx" >"$work/a.log" 2>&1
check "campaign: status 10 (some runs hit; got $st)" test "$st" = 10
check "runs.jsonl has 60 lines" test "$(wc -l <"$work/a/runs.jsonl")" = 60
check "seeds 1..60, each once, in order" \
  test "$(jq -s -c '[.[].seed] == [range(1; 61)]' "$work/a/runs.jsonl")" = true
check "every line has the run's fields" \
  test "$(jq -s '[.[] | select(.verdict and .policy == "random" and (.steps | type) == "number"
    and (.change_points | type) == "array" and (.makespan_ns > 0) and (.wall_s > 0) and .k > 0 and .n == 3)]
    | length' "$work/a/runs.jsonl")" = 60
hits="$(jq -s '[.[] | select(.verdict != "pass")] | length' "$work/a/runs.jsonl")"
check "summary: runs 60, hits $hits, verdict counts add up" \
  test "$(jq -c "[.runs, .hits, (.verdicts | add)] == [60, $hits, 60]" "$work/a/summary.json")" = true
check "summary: rate = hits/runs inside its 95% interval" \
  test "$(jq "(.hit_rate - $hits / 60 | fabs) < 1e-9 and .ci95[0] <= .hit_rate and .hit_rate <= .ci95[1]
    and .ci95[0] > 0 and (.ci95[1] < 1 or $hits == 60)" "$work/a/summary.json")" = true
# Clopper-Pearson in closed form at the ends: 0 hits -> [0, 1-0.025^(1/n)], n hits -> [0.025^(1/n), 1].
check "summary: Clopper-Pearson end in closed form when hits is 0 or all" \
  test "$(jq "if $hits == 60 then (.ci95[0] - pow(0.025; 1/60) | fabs) < 1e-6 and .ci95[1] == 1
    elif $hits == 0 then (.ci95[1] - 1 + pow(0.025; 1/60) | fabs) < 1e-6 and .ci95[0] == 0
    else true end" "$work/a/summary.json")" = true
check "summary: random claims no bound" test "$(jq .bound "$work/a/summary.json")" = 0
check "summary printed" grep -q "hits      $hits = " "$work/a.log"
check "--summary recomputes it from runs.jsonl" \
  bash -c "'$WEFT' replay --summary '$work/a/runs.jsonl' | grep -q 'hits      $hits = '"

# Same arguments, one job: the same lines apart from wall times.
run_status st "$WEFT" replay --sched random --points shared --runs 60 --jobs 1 --timeout 30 \
  --output "$work/b" -- "$fx" >/dev/null 2>&1
# A run whose gate gave up waiting (a host stall under heavy load) left the
# policy's order and says so (departures > 0): it may not repeat by seed
# (docs/replay.md). Every other run must.
departed="$(departed_seeds "$work/a/runs.jsonl" "$work/b/runs.jsonl")"
check "deterministic: same runs.jsonl with --jobs 1 and --jobs 2 (without wall_s; departed: ${departed:-none})" \
  cmp <(runs_but "$departed" "$work/a/runs.jsonl") <(runs_but "$departed" "$work/b/runs.jsonl")
check "deterministic: at most 5 of the 60 runs departed" test "$(wc -w <<<"$departed")" -le 5
check "deterministic: the lines compared are the runs that did not depart" \
  test "$(runs_but "$departed" "$work/a/runs.jsonl" | wc -l)" = "$((60 - $(wc -w <<<"$departed")))"

# The guaranteed bounds for the measured n and k.
"$WEFT" replay --sched pct --depth 2 --points shared --runs 4 --output "$work/p" -- "$fx" >/dev/null 2>&1 || true
check "pct d2: bound = 1/(n k)" \
  test "$(jq '(.bound * .n * .k - 1 | fabs) < 1e-9' "$work/p/summary.json")" = true
"$WEFT" replay --sched rpro --depth 3 --radius 5 --points shared --runs 4 --output "$work/r" -- "$fx" \
  >/dev/null 2>&1 || true
check "rpro d3 r5: bound = 1/(n k 2r)" \
  test "$(jq '(.bound * .n * .k * 10 - 1 | fabs) < 1e-9 and .radius == 5' "$work/r/summary.json")" = true

# Interrupt a campaign of a bug-free program half way with SIGINT.
ok_fx="$WEFT_FIXTURES/lost_update_ok"
timeout -s KILL 300 "$WEFT" replay --sched random --points shared --runs 300 --jobs 2 --timeout 30 \
  --output "$work/i" -- "$ok_fx" >"$work/i1.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ "$(wc -l <"$work/i/runs.jsonl" 2>/dev/null || echo 0)" -ge 20 ] && break
  sleep 0.1
done
kill -INT "$pid"
set +e
wait "$pid"
st=$?
set -e
done1="$(wc -l <"$work/i/runs.jsonl")"
check "interrupted: status 130 (got $st)" test "$st" = 130
check "interrupted: kept $done1 finished runs, fewer than 300" test "$done1" -ge 20 -a "$done1" -lt 300
check "interrupted: says how to go on" grep -q -- "--resume" "$work/i1.log"
check "interrupted: every kept line is whole and its seed distinct" \
  test "$(jq -s '[.[].seed] | length == (unique | length)' "$work/i/runs.jsonl")" = true
check "interrupted: no qemu left behind" bash -c "! pgrep -f 'qemu-aarch6[4].*${work}/i/' >/dev/null"
# The runs killed mid-way left spools and live notes (sparse, 1.7 GB each
# as ls counts): gone with tmp/, as --resume runs those seeds again.
check "interrupted: no scratch left ($(ls "$work/i/tmp" 2>/dev/null | wc -l) files in tmp/)" \
  test ! -e "$work/i/tmp"
run_status st "$WEFT" replay --sched random --depth 2 --points shared --runs 300 --resume \
  --output "$work/i" -- "$ok_fx" >"$work/i2.log" 2>"$work/i2.err"
check "resume with another --depth: refused (status $st)" test "$st" = 2
run_status st "$WEFT" replay --sched random --points shared --runs 300 --jobs 2 --timeout 30 --resume \
  --output "$work/i" -- "$ok_fx" >"$work/i2.log" 2>&1
check "resume: status 0 (got $st)" test "$st" = 0
check "resume: ran exactly the $((300 - done1)) missing seeds" \
  grep -q "$((300 - done1)) to run ($done1 already done)" "$work/i2.log"
check "resume: seeds 1..300, each once" \
  test "$(jq -s -c '[.[].seed] == [range(1; 301)]' "$work/i/runs.jsonl")" = true
check "resume: summary of 300 runs, no hit" \
  test "$(jq -c '[.runs, .hits]' "$work/i/summary.json")" = "[300,0]"
finish
