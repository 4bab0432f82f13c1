#!/usr/bin/env bash
# Tracing overhead, measured side by side in one run: plain qemu-aarch64 vs
# `weft trace --mode free` vs `--mode exact` on the same fixtures, runs
# interleaved (plain, free, exact, plain, ...) so machine drift hits all
# three alike. Prints medians, ratios and traced events per second, and
# writes the table to results/bench-trace.md.
# Usage: results/bench-trace.sh [RUNS] [FIXTURE[:ARG]...]
#   default: 5 runs; paper_mm, lost_update, parallel8:20000 (20000 passes: a
#   workload long enough that start-up does not dominate)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$here/build}"
"$here/scripts/build" >/dev/null
weft="$build/cli/weft"
qemu="$(command -v qemu-aarch64)"
runs="${1:-5}"
shift || true
fixtures=("$@")
[ "${#fixtures[@]}" -gt 0 ] || fixtures=(paper_mm lost_update parallel8:20000)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
# time_one FILE CMD...: append wall seconds of one run of CMD to FILE
time_one() {
  local f="$1"; shift
  local t0 t1
  t0="$(now)"
  timeout -s KILL 600 "$@" >/dev/null 2>&1 || true
  t1="$(now)"
  echo "$t1 - $t0" | bc -l >>"$f"
}
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

out="$tmp/table.md"
{
  echo "# Tracing overhead (median of $runs interleaved runs, $(date -u +%Y-%m-%d), $(nproc) cores)"
  echo
  echo "| fixture | plain qemu s | free s | exact s | free/plain | exact/plain | events | free events/s | exact events/s |"
  echo "|---|---|---|---|---|---|---|---|---|"
} >"$out"
for spec in "${fixtures[@]}"; do
  fx="${spec%%:*}"
  arg=()
  [ "$spec" != "$fx" ] && arg=("${spec#*:}")
  bin="$build/fixtures/$fx"
  [ -x "$bin" ] || { echo "bench-trace: no fixture $bin" >&2; exit 1; }
  for i in $(seq 1 "$runs"); do
    echo "bench-trace: $spec run $i/$runs" >&2
    time_one "$tmp/$fx.plain" "$qemu" "$bin" "${arg[@]}"
    time_one "$tmp/$fx.free" "$weft" trace -q --mode free -o "$tmp/$fx.free.wtr" -- "$bin" "${arg[@]}"
    time_one "$tmp/$fx.exact" "$weft" trace -q --mode exact -o "$tmp/$fx.exact.wtr" -- "$bin" "${arg[@]}"
  done
  p="$(median "$tmp/$fx.plain")"; f="$(median "$tmp/$fx.free")"; e="$(median "$tmp/$fx.exact")"
  ev="$("$weft" info "$tmp/$fx.exact.wtr" | sed -n '1s/.*, \([0-9]*\) events).*/\1/p')"
  ev="${ev:-0}"
  printf '| %s | %.3f | %.3f | %.3f | %.1fx | %.1fx | %s | %.0f | %.0f |\n' \
    "$spec" "$p" "$f" "$e" "$(echo "$f/$p" | bc -l)" "$(echo "$e/$p" | bc -l)" "$ev" \
    "$(echo "$ev/$f" | bc -l)" "$(echo "$ev/$e" | bc -l)" >>"$out"
done
{
  echo
  echo "Targets (issue: tracer): free <= 5x plain qemu, exact <= 25x. Whole-process wall time,"
  echo "including weft's own start-up, SystemC elaboration and the final trace merge."
} >>"$out"
cat "$out"
cp "$out" "$here/results/bench-trace.md.tmp" && mv "$here/results/bench-trace.md.tmp" "$here/results/bench-trace.md"
