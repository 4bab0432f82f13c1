#!/usr/bin/env bash
# Optimizer speed, measured in one run (results/optimizer-bench.c):
#   - 10^6 fitness evaluations on the CFFT6 analogue (target < 1 s): full
#     evaluations, incremental moves, and RND/SHC/SA searches with a 10^6
#     budget that do not stop at the first alignment;
#   - the exact solver on synthetic traces with >= 10^5 writes written through
#     the trace writer API (target < 100 ms), with 2 and 8 threads (the number
#     of candidate pairs grows with the threads: up to writes x (threads - 1)),
#     and `weft optimize --algo exact` on the 10^5-write, 8-thread trace as the
#     user sees it.
# Writes results/optimizer-bench.md.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$here/build}"
if [ -n "${WEFT_NO_BUILD:-}" ]; then :; elif [ -f "$build/CMakeCache.txt" ]; then cmake --build "$build" --target weft >/dev/null; else "$here/scripts/build" >/dev/null; fi
weft="$build/cli/weft"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# shellcheck disable=SC2046
cc -O2 -std=c11 -Wall -I"$here/tracer/include" -I"$here/optimizer/include" -I"$here/search/include" \
  "$here/results/optimizer-bench.c" "$build/optimizer/libweft_optimizer.a" \
  "$build/optimizer/libweft_optimizer_core.a" "$build/search/libweft_search.a" \
  "$build/tracer/libweft_trace.a" $(pkg-config --libs libdw libelf jansson zlib gsl libdeflate) -lpthread -lm \
  -o "$tmp/optimizer-bench"
timeout -s KILL 120 "$weft" trace -q --mode exact -o "$tmp/cfft6.wtr" -- "$build/fixtures/paper_cfft6" >/dev/null

md="$here/results/optimizer-bench.md"
{
  echo "# Optimizer benchmarks"
  echo
  echo "Source \`$(git -C "$here" describe --always --dirty 2>/dev/null || echo unknown)\`. Measured by \`results/optimizer-bench.sh\` on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) cores), load average before: $(cut -d' ' -f1-3 /proc/loadavg). *vs target*: target / measured (under) or measured / target (OVER)."
  "$tmp/optimizer-bench" "$tmp/cfft6.wtr" "$tmp/synth8.wtr" 100000 8
  "$tmp/optimizer-bench" - "$tmp/synth2.wtr" 100000 2
  echo
  echo "## weft optimize --algo exact on the 8-thread synthetic trace (one run, as printed)"
  echo
  t0=$(date +%s.%N)
  "$weft" optimize "$tmp/synth8.wtr" --algo exact -q -o "$tmp/p.json" | grep -E "^weft: (exact|wrote)" | sed 's/^/    /'
  t1=$(date +%s.%N)
  echo
  printf 'Whole command (start, read %s bytes of trace, model, solver, plan): %.0f ms.\n' \
    "$(stat -c %s "$tmp/synth8.wtr")" "$(echo "($t1 - $t0) * 1000" | bc -l)"
  echo
  echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
} >"$md"
cat "$md"
