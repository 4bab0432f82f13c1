#!/usr/bin/env bash
# Exact mode by speculation against gating every access, per fixture, in
# one run of this script: how many runs the speculation took, how many
# instructions it learnt to gate, wall time both ways, and whether the two
# traces and guest outputs are byte-identical (they must be unless the run
# reports gated accesses out of order: holes of both modes). Writes
# results/exact-speculation.md.
# Usage: results/exact-speculation.sh [FIXTURE[:ARG]...] (default: every
# fixture of fixtures/manifest.tsv that ends by itself, plus parallel8:20000)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$here/build}"
"$here/scripts/build" >/dev/null
weft="$build/cli/weft"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

specs=("$@")
if [ "${#specs[@]}" = 0 ]; then
  while IFS=$'\t' read -r name _ _ _ status args; do
    [ "$status" = hang ] && continue
    specs+=("$name${args:+:$args}")
  done < <(grep -v '^#' "$here/fixtures/manifest.tsv")
  specs+=(parallel8:20000)
fi

now() { date +%s.%N; }
out="$tmp/table.md"
{
  echo "# Exact mode: speculating against gating every access ($(date -u +%Y-%m-%d), $(nproc) cores)"
  echo
  echo "| fixture | runs | gates learnt | out of order | speculating s | all gated s | speed-up | trace | output |"
  echo "|---|---|---|---|---|---|---|---|---|"
} >"$out"
same=0 total=0
for spec in "${specs[@]}"; do
  fx="${spec%%:*}"
  arg=()
  [ "$spec" != "$fx" ] && read -r -a arg <<<"${spec#*:}"
  bin="$build/fixtures/$fx"
  echo "exact-speculation: $spec" >&2
  # Files, not pipes, for the guest's streams: a pipe rules out speculation.
  t0="$(now)"
  timeout -s KILL 600 "$weft" trace --mode exact -o "$tmp/s.wtr" -- "$bin" "${arg[@]}" \
    </dev/null >"$tmp/s.out" 2>"$tmp/s.err" || true
  t1="$(now)"
  timeout -s KILL 600 "$weft" trace --mode exact --no-speculate -o "$tmp/g.wtr" -- "$bin" "${arg[@]}" \
    </dev/null >"$tmp/g.out" 2>"$tmp/g.err" || true
  t2="$(now)"
  runs="$(sed -n 's/^weft: exact mode: \([0-9]*\) runs.*/\1/p' "$tmp/s.out")"
  learnt="$(sed -n 's/.* \([0-9]*\) instructions were found to need a gate.*/\1/p' "$tmp/s.out")"
  grep -q 'the last gating every access' "$tmp/s.out" && learnt="gave up"
  unordered="$(sed -n 's/^weft: exact mode: \([0-9]*\) gated accesses ran out.*/\1/p' "$tmp/s.out")"
  tr=differ
  cmp -s "$tmp/s.wtr" "$tmp/g.wtr" && tr=identical && same=$((same + 1))
  total=$((total + 1))
  o=differs
  cmp -s <(grep -v '^weft' "$tmp/s.out"; cat "$tmp/s.err") <(grep -v '^weft' "$tmp/g.out"; cat "$tmp/g.err") &&
    o=identical
  s="$(echo "$t1 - $t0" | bc -l)" g="$(echo "$t2 - $t1" | bc -l)"
  printf '| %s | %s | %s | %s | %.2f | %.2f | %.1fx | %s | %s |\n' "$spec" "${runs:-1}" "${learnt:-0}" \
    "${unordered:-0}" "$s" "$g" "$(echo "$g / $s" | bc -l)" "$tr" "$o" >>"$out"
done
{
  echo
  echo "$same of $total traces byte-identical. One run per fixture and mode, wall time of the"
  echo "whole weft trace command (all of the speculation's runs). 'gave up': a fork while other"
  echo "threads ran, so the last run gated every access. fail_fork_exec's parent blocks in wait4,"
  echo "which makes even fully gated runs depend on host timing (docs/platform.md)."
} >>"$out"
cat "$out"
cp "$out" "$here/results/exact-speculation.md.tmp" && mv "$here/results/exact-speculation.md.tmp" "$here/results/exact-speculation.md"
