# weft demo on its default fixture: every stage's outputs, the printed
# summary with reproduction commands that do reproduce, the same results
# from the same seed, an orderly stop on SIGTERM, bad command lines.
source "$(dirname "$0")/lib.sh"

demo() { # out-dir extra-args...: a small demo (the default counts take ~1.5 min)
  local out="$1"; shift
  set +e
  timeout -s KILL 500 "$WEFT" demo --runs 30 --search-runs 5 --jobs 2 -o "$out" "$@" >"$out.log" 2>"$out.err"
  st=$?
  set -e
}

demo "$work/a"
check "demo: status 0 (got $st)" test "$st" = 0
for f in run.wtr timeline.json plan-exact.json plan-sa.json search-rnd.json search-shc.json \
  search-sa.json convergence.json inject-exact.json inject-sa.json demo.json report.html \
  replay-pct/summary.json replay-ppct/summary.json replay-rpro/summary.json; do
  check "demo wrote $f" test -s "$work/a/$f"
done
check "trace: the default fixture, lost_update, 3 threads" \
  test "$("$WEFT" info "$work/a/run.wtr" | grep -c 'lost_update\|^  T[0-2] ')" -ge 4
check "convergence: RND, SHC and SA, each from 1 evaluation on, each aligned" \
  test "$(jq -c '[.runs[] | [.algorithm, .points[0][0], .hit]]' "$work/a/convergence.json")" = \
  '[["rnd",1,true],["shc",1,true],["sa",1,true]]'
check "searches: 5 runs each with the seeds 1..5" \
  test "$(jq -s -c '[.[] | [.runs, .seed0]]' "$work/a"/search-{rnd,shc,sa}.json)" = '[[5,1],[5,1],[5,1]]'
check "inject: the exact plan's collision achieved" \
  test "$(jq -c '[.planned, .achieved >= 1, .achieved == .planned]' "$work/a/inject-exact.json")" = '[1,true,true]'
check "inject: the program fails with the delay and passes without" \
  test "$(jq -c '[.uninjected.passes, .runs[-1].verdict.passes]' "$work/a/inject-exact.json")" = '[true,false]'
for p in pct ppct rpro; do
  check "$p campaign: 30 runs, seeds 1..30, depth 2" \
    test "$(jq -c '[.runs, .seeds, .depth]' "$work/a/replay-$p/summary.json")" = '[30,[1,30],2]'
done
check "demo.json: every step recorded with its command" \
  test "$(jq '[.steps[] | select(.command | startswith("weft "))] | length' "$work/a/demo.json")" = 12
check "printed: the seed" grep -q "^seed 1 (--seed)" "$work/a.log"
check "printed: a summary" grep -q "^== summary (seed 1)" "$work/a.log"
check "printed: the collision and how to reproduce it" \
  grep -q "reproduce: weft inject $work/a/plan-exact.json" "$work/a.log"
check "printed: one line per policy with its bound" \
  test "$(grep -Ec '^(pct |ppct|rpro) d2 .* runs failed .* guaranteed >= ' "$work/a.log")" = 3
check "printed: where the report is" grep -q "^report     $work/a/report.html" "$work/a.log"

# The printed commands reproduce their findings.
cmd="$(grep -m1 'reproduce: weft inject' "$work/a.log" | sed 's/.*reproduce: weft //')"
# shellcheck disable=SC2086 # the printed command is shell words
run_status st "$WEFT" $cmd >"$work/inject.log" 2>&1
check "printed inject command: the collision again (status $st)" test "$st" = 0
n=0
while read -r line; do
  seed="$(sed -E 's/.* --seed ([0-9]+) .*/\1/' <<<"$line")"
  pol="$(sed -E 's/.*--sched ([a-z]+) .*/\1/' <<<"$line")"
  want="$(jq -r "select(.seed == $seed) | .verdict" "$work/a/replay-$pol/runs.jsonl")"
  cmd="$(sed 's/.*reproduce: weft //' <<<"$line")"
  eval "run_status st \"\$WEFT\" $cmd" >"$work/repro.log" 2>&1
  check "printed $pol command: seed $seed fails again with $want (status $st)" \
    grep -q "^seed $seed: $want" "$work/repro.log"
  n=$((n + 1))
done < <(grep 'reproduce: weft replay' "$work/a.log")
check "printed a failing seed for some policy ($n)" test "$n" -ge 1

# The same seed gives the same results.
demo "$work/b"
check "same seed: same exact plan" cmp "$work/a/plan-exact.json" "$work/b/plan-exact.json"
check "same seed: same search statistics" \
  cmp <(jq -c '[.evals_to_hit, .best_fitness]' "$work/a/search-sa.json") \
  <(jq -c '[.evals_to_hit, .best_fitness]' "$work/b/search-sa.json")
check "same seed: same convergence" \
  cmp <(jq -c 'del(.runs[].seconds) | del(.trace)' "$work/a/convergence.json") \
  <(jq -c 'del(.runs[].seconds) | del(.trace)' "$work/b/convergence.json")
for p in pct ppct rpro; do
  # Runs that departed from the policy's order (host stalls under load) may
  # not repeat: then the other runs must, line for line.
  d="$(departed_seeds "$work/a/replay-$p/runs.jsonl" "$work/b/replay-$p/runs.jsonl")"
  if [ -z "$d" ]; then
    check "same seed: same $p summary.json" cmp "$work/a/replay-$p/summary.json" "$work/b/replay-$p/summary.json"
    if ! cmp -s "$work/a/replay-$p/summary.json" "$work/b/replay-$p/summary.json"; then
      # Say how, for a failure seen only under load: the campaigns' plan
      # lines (k, n, points), the first runs that differ, and keep both.
      grep -h "^weft: \(profiling\|$p\)" "$work/a.log" "$work/b.log" | head -8 | sed 's/^/  /'
      diff <(runs_but "" "$work/a/replay-$p/runs.jsonl" | sort) \
        <(runs_but "" "$work/b/replay-$p/runs.jsonl" | sort) | head -6 | cut -c1-400 | sed 's/^/  /'
      keep="$WEFT_TMP/demo-failed/$p-$(date +%s)"
      mkdir -p "$keep" && cp -r "$work/a/replay-$p" "$keep/a" && cp -r "$work/b/replay-$p" "$keep/b" &&
        cp "$work/a.log" "$work/b.log" "$keep/" && echo "  kept in $keep"
    fi
  else
    check "same seed: same $p runs but those that departed ($d)" \
      cmp <(runs_but "$d" "$work/a/replay-$p/runs.jsonl") <(runs_but "$d" "$work/b/replay-$p/runs.jsonl")
  fi
done

# SIGTERM during the campaigns: the demo stops them and says so.
timeout -s KILL 300 "$WEFT" demo --runs 200 --search-runs 0 --jobs 2 -o "$work/t" >"$work/t.log" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
  [ -f "$work/t/replay-pct/runs.jsonl" ] && [ "$(wc -l <"$work/t/replay-pct/runs.jsonl")" -ge 3 ] && break
  sleep 0.1
done
kill -TERM "$pid"
set +e
wait "$pid"
st=$?
set -e
check "SIGTERM: status 143 (got $st)" test "$st" = 143
check "SIGTERM: says so" grep -q "demo interrupted" "$work/t.log"
check "SIGTERM: the campaign kept its finished runs" test "$(wc -l <"$work/t/replay-pct/runs.jsonl")" -ge 3
check "SIGTERM: no qemu left behind" bash -c "! pgrep -f 'qemu-aarch6[4].*$work/t/' >/dev/null"

# Bad command lines and programs: one line, non-zero.
run_status st "$WEFT" demo --runs 0 2>"$work/e" >/dev/null
check "--runs 0: status 2, one line" test "$st $(wc -l <"$work/e")" = "2 1"
run_status st "$WEFT" demo -o "$work/n" -- "$work/nonexistent" 2>"$work/e" >/dev/null
check "missing program: status 1, one line" test "$st $(wc -l <"$work/e")" = "1 1"
run_status st "$WEFT" demo -o "$work/n" -- /bin/sh 2>"$work/e" >/dev/null
check "x86 program: status 1, names AArch64" test "$st $(grep -c AArch64 "$work/e")" = "1 1"
check "--help" bash -c "'$WEFT' demo --help | grep -q -- '--search-runs'"
finish
