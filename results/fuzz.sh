#!/usr/bin/env bash
# Fuzz weft's readers of untrusted input with libFuzzer (fuzz/): the trace
# reader (fuzz_trace, formats 1 to 4), spool salvage (fuzz_spool), the plan
# parser (fuzz_plan), command lines (fuzz_options), and a replay campaign's
# campaign.json (fuzz_campaign) and runs.jsonl (fuzz_runs), each for SECONDS
# of wall time (default 600), one after the other on one core. Each starts
# from its seed corpus (fuzz/corpus/NAME) plus the kept crashing inputs
# (tests/unit/data/fuzz_NAME), which are first replayed once: they must all
# pass. If a fuzzer crashes, the input is kept under
# build-fuzz/fuzz-artifacts/ and the fuzzer restarts with its grown corpus
# for the time left, so one run reports every crash it meets.
#
# Each harness's figures (executions, exec/s, edge coverage, features,
# corpus, peak RSS, crashes, and the load average sampled every 30 s while
# it ran: exec/s depend on what else the machine does) go to
# build-fuzz/fuzz-rows/NAME.row; results/fuzz.md is then rewritten from all
# the rows there, so harnesses can be run at different times:
#   nice -n 15 results/fuzz.sh 1800 trace spool    # then, later:
#   nice -n 15 results/fuzz.sh 1800 options campaign runs plan
# The grown corpus of each run stays in build-fuzz/fuzz-corpus/NAME.
# Usage: results/fuzz.sh [SECONDS [NAME...]]   (WEFT_FUZZ_BUILD: build dir,
# default build-fuzz)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
all=(trace spool plan options campaign runs)
secs="${1:-600}"
case "$secs" in '' | *[!0-9]* | 0) echo "usage: results/fuzz.sh [SECONDS>0 [NAME...]]" >&2; exit 2 ;; esac
shift || true
names=("$@")
[ "${#names[@]}" -gt 0 ] || names=("${all[@]}")
declare -A maxlen=([trace]=65536 [spool]=65536 [plan]=16384 [options]=4096 [campaign]=16384
  [runs]=65536)
for n in "${names[@]}"; do
  [ -n "${maxlen[$n]:-}" ] || { echo "fuzz: no harness '$n' (one of: ${all[*]})" >&2; exit 2; }
done
build="${WEFT_FUZZ_BUILD:-$here/build-fuzz}"
qemu_include="${WEFT_QEMU_INCLUDE:-$here/build/qemu-include}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S "$here" -B "$build" -G Ninja -DWEFT_FUZZ=ON \
    -DWEFT_QEMU_INCLUDE="$qemu_include" >/dev/null
fi
cmake --build "$build" --target fuzzers >/dev/null
work="$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz.XXXXXX")"
sampler=""
trap '[ -z "$sampler" ] || kill "$sampler" 2>/dev/null; rm -rf "$work"' EXIT
artifacts="$build/fuzz-artifacts"
rowdir="$build/fuzz-rows"
mkdir -p "$artifacts" "$rowdir"
commit="$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$here" diff --quiet HEAD -- fuzz cli replay report tracer optimizer 2>/dev/null ||
  commit+=" (with local changes)"
out="$here/results/fuzz.md"

# Copies, all taken now: the fuzzers may be rebuilt while this runs (fixes),
# and every row must be of the commit it names.
for name in "${names[@]}"; do
  cp "$build/fuzz/fuzz_$name" "$work/fuzz_$name"
done

load() { cut -d' ' -f1 /proc/loadavg; }
status=0
for name in "${names[@]}"; do
  bin="$work/fuzz_$name"
  corpus="$build/fuzz-corpus/$name"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  cp "$here/fuzz/corpus/$name/"* "$corpus/"
  kept="$here/tests/unit/data/fuzz_$name"
  nkept=0
  if [ -d "$kept" ]; then
    nkept=$(find "$kept" -type f | wc -l)
    echo "fuzz: $name: replaying $nkept kept crashing inputs" >&2
    "$bin" -runs=0 "$kept" >"$work/replay_$name.log" 2>&1 ||
      { echo "fuzz: $name: a kept crashing input fails again:" >&2; tail -30 "$work/replay_$name.log" >&2; exit 1; }
    cp "$kept/"* "$corpus/"
  fi
  nseeds=$(find "$corpus" -type f | wc -l)
  started=$(date -u '+%Y-%m-%d %H:%M')
  start=$(date +%s)
  (while :; do load; sleep 30; done) >"$work/load_$name" &
  sampler=$!
  execs=0 crashes=0 restarts=0 cov=0 ft=0 corp="" rss=0 crash_lines=""
  while :; do
    left=$((secs - ($(date +%s) - start)))
    [ "$left" -gt 0 ] || break
    echo "fuzz: $name: ${left}s to go" >&2
    log="$work/$name.$restarts.log"
    set +e
    # -timeout: an input taking longer than 10 s is a hang and counts as a crash.
    timeout -s KILL $((left + 120)) "$bin" -max_total_time="$left" -max_len="${maxlen[$name]}" \
      -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts/$name-" \
      "$corpus" >"$log" 2>&1
    rc=$?
    set -e
    e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    execs=$((execs + ${e:-0}))
    r=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    [ "${r:-0}" -gt "$rss" ] && rss=${r:-0}
    last=$(grep -E '^#[0-9]+' "$log" | grep -E ' cov: ' | tail -1 || true)
    if [ -n "$last" ]; then
      cov=$(sed -E 's/.* cov: ([0-9]+).*/\1/' <<<"$last")
      ft=$(sed -E 's/.* ft: ([0-9]+).*/\1/' <<<"$last")
      corp=$(sed -E 's/.* corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/' <<<"$last")
    fi
    if [ "$rc" -eq 0 ]; then
      break
    fi
    crashes=$((crashes + 1))
    art=$(sed -n "s/^.*Test unit written to \(.*\)$/\1/p" "$log" | tail -1)
    why=$(grep -m1 -E 'fuzz check failed|ERROR: |SUMMARY: ' "$log" | cut -c1-200 || true)
    crash_lines+="- \`fuzz_$name\`: ${why:-exit status $rc} — input kept as \`${art#"$here/"}\`"$'\n'
    echo "fuzz: $name: crash ($why), restarting" >&2
    restarts=$((restarts + 1))
    if [ "$restarts" -ge 20 ]; then
      crash_lines+="- \`fuzz_$name\`: stopped after 20 crashes"$'\n'
      break
    fi
  done
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  sampler=""
  elapsed=$(($(date +%s) - start))
  rate=$((execs / (elapsed > 0 ? elapsed : 1)))
  loads=$(awk '{s += $1; if ($1 > m) m = $1; n++} END {if (n) printf "%.1f / %.1f", s / n, m}' \
    "$work/load_$name")
  printf '| `fuzz_%s` | %s | %s | %d | %s (%s kept crashes) | %d | %d | %s | %s | %s | %s | %s | %d |\n' \
    "$name" "$started" "$commit" "$elapsed" "$nseeds" "$nkept" "$execs" "$rate" "$cov" "$ft" \
    "${corp:-?}" "$rss" "${loads:-?}" "$crashes" >"$rowdir/$name.row"
  printf '%s' "$crash_lines" >"$rowdir/$name.crashes"
  [ "$crashes" -eq 0 ] || status=1
done

{
  echo "# Fuzzing weft's readers of untrusted input"
  echo
  echo "Generated by \`results/fuzz.sh\` (last run finished $(date -u '+%Y-%m-%d %H:%M UTC')),"
  echo "$(clang --version | head -1), libFuzzer with ASan + UBSan, one harness at a time"
  echo "on a $(nproc)-core machine shared with other work, at nice $(nice) (the command:"
  echo "\`nice -n 15 results/fuzz.sh SECONDS NAME...\`). Each row is one run of one harness;"
  echo "\`load\` is the 1-minute load average sampled every 30 s while it ran (mean / max):"
  echo "exec/s are those of a busy machine, not an idle one."
  echo
  echo "| harness | started (UTC) | commit | seconds | seed inputs | executions | exec/s | edges (cov) | features (ft) | corpus (files/size) | peak RSS MB | load mean / max | crashes |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for n in "${all[@]}"; do
    [ ! -f "$rowdir/$n.row" ] || cat "$rowdir/$n.row"
  done
  echo
  echo "- \`fuzz_trace\`: \`weft_trace_open\`, every event, \`weft_trace_print_info\`,"
  echo "  \`weft_trace_set_outcome\` and the optimizer's model, fitness and exact pairs"
  echo "  (fast vs brute force) from the trace; each input also with its CRCs repaired, and a"
  echo "  format 2 input once more with its frames' payloads compressed (seeds in that raw"
  echo "  form reach the frame decoder: \`fuzz/fuzz_frames.h\`). Seeds: format 2, format 1 and"
  echo "  raw form."
  echo "- \`fuzz_spool\`: \`weft_trace_salvage\` of a spool; what it accepts must read back whole."
  echo "- \`fuzz_plan\`: \`optimizer_plan_parse\` with and without trace limits,"
  echo "  the build-id check, and a write/read round trip of every accepted plan."
  echo "- \`fuzz_options\`: \`cli_parse\` with every subcommand's option table (the commands are"
  echo "  not run): a bad command line is exactly one line on stderr, an accepted one leaves"
  echo "  its operands in order and every value in range."
  echo "- \`fuzz_campaign\`, \`fuzz_runs\`: a campaign folder's \`campaign.json\` or \`runs.jsonl\`"
  echo "  through everything that reads it back: \`replay_campaign_load\` (\`--resume\`),"
  echo "  \`replay_summary_read\`/\`_write\`/\`_print\` and \`replay_lines_read\`, \`replay_merge\`"
  echo "  of the folder alone and with another, and \`report_campaign_load\` with the report's"
  echo "  campaign sections and first failure."
  echo "- All harnesses require every error message to be one line, and write only under a"
  echo "  private scratch folder that they remove."
  echo "- Seed inputs include the kept crashing inputs of \`tests/unit/data/fuzz_*\`, which were"
  echo "  replayed first and all passed; \`tests/unit/test_regressions.c\` checks them too."
  echo
  total=0
  for n in "${all[@]}"; do
    [ ! -f "$rowdir/$n.row" ] || total=$((total + $(awk -F'|' '{print $(NF-1)}' "$rowdir/$n.row")))
  done
  if [ "$total" -eq 0 ]; then
    echo "**Crashes: none.**"
  else
    echo "**Crashes: $total** (open until fixed and moved to tests/unit/data):"
    echo
    for n in "${all[@]}"; do
      [ ! -f "$rowdir/$n.crashes" ] || cat "$rowdir/$n.crashes"
    done
  fi
} >"$out"
echo "fuzz: wrote $out" >&2
cat "$out"
exit "$status"
