#!/usr/bin/env bash
# Tracing overhead, measured side by side in one run: plain qemu-aarch64 vs
# `weft trace --mode free` vs `--mode exact` (speculating, the default) vs
# `--mode exact --no-speculate` (every shared access gated) on the same
# fixtures, runs interleaved (plain, free, exact, gated, plain, ...) so
# machine drift hits all alike. Prints medians, ratios and traced events per
# second, and writes the table to results/bench-trace.md. Guests read
# /dev/null and write to /dev/null, which lets exact mode speculate.
# Then trace size against zstd level (docs/trace-format.md): each workload
# traced in free mode at every level in LEVELS, runs interleaved, level 0
# being format 1 (uncompressed blocks, the encoding before compression):
# bytes per event, the trace's wall time and the merge's own time (the
# plugin's finish, where the compression runs) with its throughput in MB of
# format-1 events per second, each as a ratio to level 0. Workloads:
# parallel8 with a large argument and pigz -p4 from the arm64 sysroot (a
# real, dynamically linked program). Last, `weft info` on the biggest trace
# made (wall time, max RSS).
# Usage: results/bench-trace.sh [RUNS] [FIXTURE[:ARG]...]
#   default: 5 runs; paper_mm, lost_update, parallel8:20000 (20000 passes: a
#   workload long enough that start-up does not dominate)
#   SIZE_RUNS (default 3), LEVELS (default "0 1 3 6 9"), P8_PASSES (default
#   200000), PIGZ_KB (input size, default 1024), SKIP_OVERHEAD=1 (size table only),
#   SPIN_S (trace fail_spin that long for the biggest trace; default 0: not),
#   BASE_WEFT (an older weft to compare with)
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
  timeout -s KILL 600 "$@" </dev/null >/dev/null 2>&1 || true
  t1="$(now)"
  echo "$t1 - $t0" | bc -l >>"$f"
}
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

out="$tmp/table.md"
: >"$out"
[ "${SKIP_OVERHEAD:-0}" = 1 ] && fixtures=()
[ "${#fixtures[@]}" -gt 0 ] && {
  echo "# Tracing overhead (median of $runs interleaved runs, $(date -u +%Y-%m-%d), $(nproc) cores)"
  echo
  echo "| fixture | plain qemu s | free s | exact s | all gated s | free/plain | exact/plain | all gated/plain | exact runs | events | free events/s | exact events/s |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
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
    time_one "$tmp/$fx.gated" "$weft" trace -q --mode exact --no-speculate -o "$tmp/$fx.gated.wtr" -- "$bin" "${arg[@]}"
    cmp -s "$tmp/$fx.exact.wtr" "$tmp/$fx.gated.wtr" ||
      { echo "bench-trace: $spec: speculating and fully gated exact traces differ" >&2; exit 1; }
  done
  p="$(median "$tmp/$fx.plain")"; f="$(median "$tmp/$fx.free")"; e="$(median "$tmp/$fx.exact")"
  g="$(median "$tmp/$fx.gated")"
  # (to a file: a pipe would rule out speculation)
  "$weft" trace --mode exact -o "$tmp/$fx.runs.wtr" -- "$bin" "${arg[@]}" </dev/null >"$tmp/runs.out" 2>&1 || true
  xruns="$(sed -n 's/^weft: exact mode: \([0-9]*\) runs.*/\1/p' "$tmp/runs.out")"
  ev="$("$weft" info "$tmp/$fx.exact.wtr" | sed -n '1s/.*, \([0-9]*\) events).*/\1/p')"
  ev="${ev:-0}"
  printf '| %s | %.3f | %.3f | %.3f | %.3f | %.1fx | %.1fx | %.1fx | %s | %s | %.0f | %.0f |\n' \
    "$spec" "$p" "$f" "$e" "$g" "$(echo "$f/$p" | bc -l)" "$(echo "$e/$p" | bc -l)" \
    "$(echo "$g/$p" | bc -l)" "${xruns:-1}" "$ev" "$(echo "$ev/$f" | bc -l)" "$(echo "$ev/$e" | bc -l)" >>"$out"
done
[ "${#fixtures[@]}" -gt 0 ] && {
  echo
  echo "Targets (issue: tracer): free <= 5x plain qemu, exact <= 25x. Whole-process wall time,"
  echo "including weft's own start-up, SystemC elaboration and the final trace merge; exact"
  echo "includes every run the speculation needed (column 'exact runs'). Each exact trace was"
  echo "checked byte-identical to the fully gated one of the same run of this script."
} >>"$out"
. "$here/results/bench-trace-size.sh"
cat "$out"
cp "$out" "$here/results/bench-trace.md.tmp" && mv "$here/results/bench-trace.md.tmp" "$here/results/bench-trace.md"
