#!/usr/bin/env bash
# Replay throughput and overhead, side by side in one run, on small fixtures:
#  1. campaigns: `weft replay --sched pct --depth 2 --runs RUNS` (profiling
#     included) with the fork server and with --no-fork-server, at --jobs 1
#     and --jobs 2: schedules per second, and the wall time per schedule
#     against one plain `qemu-aarch64` run of the program;
#     With FILED_BUILD=DIR (a build of the commit issue 18 was filed at,
#     e5a6cf5: `git worktree add /tmp/filed e5a6cf5` and
#     `WEFT_BUILD_DIR=DIR /tmp/filed/scripts/build`), the same campaigns
#     with that weft too, on the same fixture binaries: the issue's
#     "today's" schedules per second, measured beside today's;
#  2. one run: plain qemu-aarch64, `weft trace --mode free` and one
#     `weft replay --seed S` run given n, k and the shared pcs (what a run
#     costs without a server).
# Everything is interleaved (each repetition runs every configuration in
# turn) so that machine drift hits all alike; medians are printed.
# Writes results/replay-bench.md.
# Usage: results/replay-bench.sh [RUNS] [REPS] [FIXTURE...]
#   (default 200 runs per campaign, 3 repetitions; lost_update
#   order_violation atomicity_violation deadlock_lock_order wsq paper_mm,
#   and order_violation with 2^23 iterations of work as the CPU-bound one)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$here/build}"
[ -n "${WEFT_NO_BUILD:-}" ] || "$here/scripts/build" >/dev/null
weft="$build/cli/weft"
qemu="$(command -v qemu-aarch64)"
filed="${FILED_BUILD:-}"
[ -z "$filed" ] || [ -x "$filed/cli/weft" ] || { echo "replay-bench: no $filed/cli/weft" >&2; exit 2; }
runs="${1:-200}"
reps="${2:-3}"
shift 2 || shift $#
fixtures=("$@")
[ "${#fixtures[@]}" -gt 0 ] ||
  fixtures=(lost_update order_violation atomicity_violation deadlock_lock_order wsq paper_mm
    "order_violation 8388608")
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
exec </dev/null # a pipe as stdin would rule the fork server out
# The *flush* arm: qemu flushing its translations at the first clone, as it
# did before weft set its parallel flag from the start (docs/platform.md).
# Every arm passes the variable, so every guest sees the same environment.
export WEFT_GUEST_ENV=WEFT_QEMU_FLUSH_AT_CLONE WEFT_QEMU_FLUSH_AT_CLONE=0

now() { date +%s.%N; }
time_one() { # FILE CMD...: append the wall seconds of one run of CMD to FILE
  local f="$1" t0 t1
  shift
  t0="$(now)"
  timeout -s KILL 1200 "$@" >/dev/null 2>&1 || true
  t1="$(now)"
  echo "$t1 - $t0" | bc -l >>"$f"
}
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { echo "$1 / $2" | bc -l; }

campaign_rows=()
filed_rows=()
run_rows=()
start=$(date +%s)
for spec in "${fixtures[@]}"; do
  read -r fx args <<<"$spec"
  bin="$build/fixtures/$fx"
  # shellcheck disable=SC2206 # the fixture's arguments are words
  argv=("$bin" $args)
  key="${spec// /-}"
  # n, k and the shared pcs for the single runs, from one profiling.
  "$weft" replay --sched pct --depth 2 --points shared --runs 1 --jobs 1 --quiet \
    --output "$tmp/$key-prof" -- "${argv[@]}" >/dev/null 2>&1 || true
  n="$(jq .n "$tmp/$key-prof/summary.json")"
  k="$(jq .k "$tmp/$key-prof/summary.json")"
  for i in $(seq 1 "$reps"); do
    for j in 1 2; do
      for mode in server plain flush filed; do
        extra=()
        w="$weft"
        [ "$mode" = plain ] && extra=(--no-fork-server)
        [ "$mode" = flush ] && [ "$j" = 1 ] && continue
        if [ "$mode" = filed ]; then
          [ -n "$filed" ] || continue
          w="$filed/cli/weft"
        fi
        rm -rf "$tmp/c"
        WEFT_QEMU_FLUSH_AT_CLONE="$([ "$mode" = flush ] && echo 1 || echo 0)" \
          time_one "$tmp/$key.$mode$j" "$w" replay --sched pct --depth 2 --runs "$runs" --jobs "$j" \
          --quiet "${extra[@]}" --output "$tmp/c" -- "${argv[@]}"
      done
    done
    for r in $(seq 1 3); do
      time_one "$tmp/$key.qemu" "$qemu" "${argv[@]}"
      time_one "$tmp/$key.free" "$weft" trace -q --mode free -o "$tmp/$key.wtr" -- "${argv[@]}"
      time_one "$tmp/$key.one" "$weft" replay --sched pct --depth 2 --steps "$k" --threads "$n" \
        --points "pcs:$tmp/$key-prof/points.pcs" --seed "$((i * 3 + r))" --output "$tmp/$key-r" \
        -- "${argv[@]}"
    done
  done
  q="$(median "$tmp/$key.qemu")"
  s1="$(median "$tmp/$key.server1")" p1="$(median "$tmp/$key.plain1")"
  s2="$(median "$tmp/$key.server2")" p2="$(median "$tmp/$key.plain2")" x2="$(median "$tmp/$key.flush2")"
  campaign_rows+=("$(printf '| %s | %.3f | %.1f | %.1f | %.2f× | %.2f | %.1f | %.1f | %.2f× | %.2f | %.2f× | %.1f | %.2f× |' \
    "$spec" "$q" "$(ratio "$runs" "$p1")" "$(ratio "$runs" "$s1")" "$(ratio "$p1" "$s1")" \
    "$(ratio "$s1 / $runs" "$q")" "$(ratio "$runs" "$p2")" "$(ratio "$runs" "$s2")" \
    "$(ratio "$p2" "$s2")" "$(ratio "$s2 / $runs" "$q")" "$(ratio "$s1" "$s2")" \
    "$(ratio "$runs" "$x2")" "$(ratio "$x2" "$s2")")")
  if [ -n "$filed" ]; then
    f1="$(median "$tmp/$key.filed1")" f2="$(median "$tmp/$key.filed2")"
    filed_rows+=("$(printf '| %s | %.1f | %.1f | %.2f× | %.2f | %.1f | %.1f | %.2f× | %.2f |' "$spec" \
      "$(ratio "$runs" "$f1")" "$(ratio "$runs" "$s1")" "$(ratio "$f1" "$s1")" "$(ratio "$f1 / $runs" "$q")" \
      "$(ratio "$runs" "$f2")" "$(ratio "$runs" "$s2")" "$(ratio "$f2" "$s2")" "$(ratio "$f2 / $runs" "$q")")")
  fi
  f="$(median "$tmp/$key.free")" o="$(median "$tmp/$key.one")"
  run_rows+=("$(printf '| %s | %s | %s | %.3f | %.3f | %.3f | %.2f× | %.2f× |' "$spec" "$n" "$k" \
    "$q" "$f" "$o" "$(ratio "$f" "$q")" "$(ratio "$o" "$q")")")
  echo "replay-bench: $spec done" >&2
done
elapsed=$(($(date +%s) - start))

{
  echo "# Replay throughput: fork server vs a qemu per run"
  echo
  echo "Generated by \`results/replay-bench.sh $runs $reps ${fixtures[*]}\` on $(date -u +%Y-%m-%d)"
  echo "($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end, ${elapsed} s)."
  echo "Medians of $reps interleaved repetitions."
  echo
  echo "## Campaigns"
  echo
  echo "Each cell times a whole \`weft replay --sched pct --depth 2 --runs $runs --jobs J\`"
  echo "command, profiling (its rounds of three runs) included, with the fork server (*server*) or"
  echo "with \`--no-fork-server\` (*plain*: a qemu per run, what weft did before). *sched/s* is"
  echo "$runs / that wall time; *wall/qemu* is the wall time per schedule over one plain"
  echo "\`qemu-aarch64\` run of the program (median of $((reps * 3))). Targets (issue 18): server ≥ 3× plain"
  echo "(aim 5×); wall/qemu ≤ 0.6; --jobs 2 ≥ 1.8× --jobs 1 on a CPU-bound campaign (the last row)."
  echo "*j2 flush*: the server at --jobs 2 with qemu flushing its translations at the first clone"
  echo "(\`WEFT_QEMU_FLUSH_AT_CLONE=1\`, what qemu did before weft set its parallel flag from the"
  echo "start), and *parallel gain* the server's sched/s over it."
  echo
  echo "| fixture | plain qemu (s) | j1 plain sched/s | j1 server sched/s | j1 speed-up | j1 wall/qemu | j2 plain sched/s | j2 server sched/s | j2 speed-up | j2 wall/qemu | server j2/j1 | j2 flush sched/s | parallel gain |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${campaign_rows[@]}"
  echo
  if [ -n "$filed" ]; then
    echo "## Against the issue's starting point"
    echo
    echo "The same campaigns with weft as it was when issue 18 was filed (commit"
    echo "$(git -C "$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$filed/CMakeCache.txt")" \
      rev-parse --short HEAD 2>/dev/null || echo "of $filed"), built in \`$filed\`;"
    echo "a qemu per run, no fork server), on the same fixture binaries, interleaved with"
    echo "the columns above: *filed* is its sched/s, *× filed* today's server over it, and"
    echo "*filed wall/qemu* its wall time per schedule over one plain qemu run."
    echo
    echo "| fixture | j1 filed sched/s | j1 server sched/s | j1 × filed | j1 filed wall/qemu | j2 filed sched/s | j2 server sched/s | j2 × filed | j2 filed wall/qemu |"
    echo "|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${filed_rows[@]}"
    echo
  fi
  echo "## One run"
  echo
  echo "Median wall seconds of one plain qemu run, one \`weft trace --mode free\` and one"
  echo "\`weft replay --sched pct --depth 2 --points pcs:FILE --steps k --threads n --seed S\` (a"
  echo "single run has no server: it is what each run of a campaign cost before it)."
  echo
  echo "| fixture | n | k | plain qemu (s) | free trace (s) | pct replay (s) | free/plain | pct/plain |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${run_rows[@]}"
} >"$tmp/md"
mv "$tmp/md" "$here/results/replay-bench.md"
cat "$here/results/replay-bench.md"
