#!/usr/bin/env bash
# Race detector speed (target, weft issue 14: <= 1 s per 10 million events,
# one core). Traces:
#   - parallel8 20000 traced with weft trace (free mode: it is race-free,
#     so its trace is the exact one too): 8 threads on
#     disjoint rows, ~10^7 accesses, almost all on FastTrack's same-epoch
#     fast path;
#   - synthetic traces written through the trace writer API
#     (results/races-bench.c): 8 and 32 threads, ~10^7 events of locks,
#     guarded data, private arrays, a read-shared table, byte flags, an
#     atomic counter and an unprotected one (a race on every pair).
# For each: the detector in-process (CPU seconds of decoding alone, and of
# weft_races_analyze's two passes), and the whole `weft races` command
# (CPU seconds user+sys and wall, median of 3 runs). CPU time, because the
# machine is shared: wall time depends on the others' load.
# Writes results/races-bench.md.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$here/build}"
if [ -n "${WEFT_NO_BUILD:-}" ]; then :; elif [ -f "$build/CMakeCache.txt" ]; then cmake --build "$build" --target weft >/dev/null; else "$here/scripts/build" >/dev/null; fi
weft="$build/cli/weft"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
seed="${SEED:-1}"

# shellcheck disable=SC2046
cc -O2 -std=c11 -Wall -Wextra -I"$here/tracer/include" -I"$here/races/include" \
  "$here/results/races-bench.c" "$build/races/libweft_races.a" "$build/tracer/libweft_trace.a" \
  $(pkg-config --libs libdw libelf jansson libdeflate) -lpthread -lm -o "$tmp/races-bench"

traces=()
labels=()
timeout -s KILL 600 "$weft" trace -q --mode free -o "$tmp/parallel8.wtr" -- "$build/fixtures/parallel8" 20000 >/dev/null
traces+=("$tmp/parallel8.wtr") labels+=("parallel8 20000 (weft trace)")
for th in 8 32; do
  "$tmp/races-bench" gen "$tmp/synth$th.wtr" "$th" 10000000 "$seed"
  traces+=("$tmp/synth$th.wtr") labels+=("synthetic, $th threads (seed $seed)")
done

# median CMD...: the median of 3 runs' "cpu wall" (seconds) of CMD.
median() {
  for _ in 1 2 3; do
    /usr/bin/time -q -f "%U %S %e" -o "$tmp/time" "$@" >/dev/null || [ $? = 10 ]
    awk '{ printf "%.2f %.2f\n", $1 + $2, $3 }' "$tmp/time"
  done | sort -n | sed -n 2p
}

md="$here/results/races-bench.md"
{
  echo "# Race detector speed"
  echo
  echo "Source \`$(git -C "$here" describe --always --dirty 2>/dev/null || echo unknown)\`. Measured by \`results/races-bench.sh\` on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) cores, shared), load average before: $(cut -d' ' -f1-3 /proc/loadavg). Target: at most 1 s per 10^7 events on one core. Times are CPU seconds of one process (the machine is shared; wall time is shown for the command)."
  echo
  echo "| trace | events | races (pc pairs) | decode s | detector s | detector events/s | detector s per 10^6 events | ns/event | weft races CPU s | weft races wall s | CPU s per 10^7 events |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for i in "${!traces[@]}"; do
    t="${traces[$i]}"
    read -r n dec det races _ < <("$tmp/races-bench" time "$t")
    read -r cpu wall < <(median "$weft" races "$t")
    awk -v l="${labels[$i]}" -v n="$n" -v dec="$dec" -v det="$det" -v r="$races" -v cpu="$cpu" -v wall="$wall" 'BEGIN {
      printf "| %s | %d | %d | %.3f | %.3f | %.1f M | %.3f | %.0f | %.2f | %.2f | %.2f |\n",
        l, n, r, dec, det, n / det / 1e6, det / n * 1e6, det / n * 1e9, cpu, wall, cpu / n * 1e7 }'
  done
  echo
  echo "*decode*: reading every event with weft_trace_next and nothing else (the trace library's share)."
  echo "*detector*: weft_races_analyze, both passes (atomic locations, then FastTrack), decoding included."
  echo "*weft races*: the whole command, start to exit, text report to /dev/null."
  echo
  echo "Commands:"
  echo
  echo "    weft trace -q --mode free -o parallel8.wtr -- build/fixtures/parallel8 20000"
  echo "    races-bench gen synth8.wtr 8 10000000 $seed    # results/races-bench.c"
  echo "    races-bench gen synth32.wtr 32 10000000 $seed"
  echo "    races-bench time TRACE"
  echo "    /usr/bin/time -f '%U %S %e' weft races TRACE"
  echo
  echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
} >"$md"
cat "$md"
