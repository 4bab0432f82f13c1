#!/usr/bin/env bash
# The bug-finding benchmark (fixtures/bench/, docs/bug-benchmark.md):
# - its manifest is well formed and the benchmark has its promised mix;
# - every program is built as its flavor says (AArch64; static or dynamic;
#   -O0 or -O2, from the DWARF producer);
# - every program's oracle fires when its buggy interleaving is forced (the
#   -DBENCH_FORCE build: gates at the bug's ordering constraints): a BUG
#   line and exit 3, an abort, or a hang; a forced deadlock is a deadlock
#   on the program's own objects, not on a gate (weft replay's waits);
# - the controls with a fixed outcome have it under plain qemu.
# Plain runs of the benchmark binaries are not checked: some of them fail
# now and then by design (docs/bug-benchmark.md lists how often).
source "$(dirname "$0")/lib.sh"
: "${WEFT_SRC:?}" "${WEFT_SYSROOT:?}"
manifest="$WEFT_SRC/fixtures/bench/manifest.tsv"
bench="$WEFT_FIXTURES/bench"
hang_s=3 # a forced deadlock is still running after this long

names=()
declare -A threads kind depth expect flavor ops oracle args
bugs=0 o2=0 dyn=0 bad=0
while IFS= read -r line; do
  case "$line" in '' | '#'*) continue ;; esac
  IFS=$'\x1f' read -r n t k d e f o orc a shape <<<"${line//$'\t'/$'\x1f'}"
  if ! [[ "$t" =~ ^[0-9]+$ && "$d" =~ ^[0-9]+$ && "$e" =~ ^([0-9]+|hang)$ && "$o" =~ ^([0-9]+|-)$ ]] ||
    ! [[ "$k" =~ ^(deadlock|atomicity|order|control)$ && "$f" =~ ^(static-O0|static-O2|dynamic)$ ]] ||
    ! [[ "$orc" =~ ^(bug|abort|crash|deadlock|livelock|none)$ ]] || [ -z "$shape" ] ||
    [ -n "${kind[$n]:-}" ]; then
    fail "manifest line for '$n' is malformed or repeated: $line"
    bad=$((bad + 1))
    continue
  fi
  names+=("$n")
  threads[$n]=$t kind[$n]=$k depth[$n]=$d expect[$n]=$e flavor[$n]=$f ops[$n]=$o oracle[$n]=$orc
  args[$n]=$a
  if [ "$k" != control ]; then
    bugs=$((bugs + 1))
    [ "$f" = static-O2 ] && o2=$((o2 + 1))
    [ "$f" = dynamic ] && dyn=$((dyn + 1))
  fi
done <"$manifest"
check "manifest lines are well formed" test "$bad" -eq 0
check "at least 32 benchmark programs (saw $bugs)" test "$bugs" -ge 32
check "at least 5 of them static -O2 (saw $o2)" test "$o2" -ge 5
check "at least 4 of them dynamic (saw $dyn)" test "$dyn" -ge 4

# built_as NAME FILE: AArch64, linked and optimized as the flavor says.
built_as() {
  local hdr producer
  hdr="$(readelf -h -l "$2" 2>/dev/null)" || return 1
  grep -q 'Machine:.*AArch64' <<<"$hdr" || return 1
  if [ "${flavor[$1]}" = dynamic ]; then grep -q INTERP <<<"$hdr" || return 1; else ! grep -q INTERP <<<"$hdr" || return 1; fi
  # Static glibc carries no DWARF: the first compilation unit is the program's.
  producer="$(readelf --debug-dump=info "$2" 2>/dev/null | grep -m1 DW_AT_producer)"
  case "${flavor[$1]}" in
    static-O2) [[ "$producer" == *" -O2"* ]] ;;
    *) [[ "$producer" == *" -O0"* ]] ;;
  esac
}

# run_guest NAME FILE SECONDS: plain qemu, status in $st, stdout in $work/out.
run_guest() {
  local sys=()
  [ "${flavor[$1]}" = dynamic ] && sys=(-L "$WEFT_SYSROOT")
  set +e
  timeout -s KILL "$3" "$QEMU_AARCH64" "${sys[@]}" "$2" >"$work/out" 2>"$work/err"
  st=$?
  set -e
}

hangs=()
for n in "${names[@]}"; do
  check "$n: built as ${flavor[$n]}" built_as "$n" "$bench/$n"
  [ "${kind[$n]}" = control ] && continue
  check "$n: forced build exists" built_as "$n" "$bench/force/$n"
  case "${oracle[$n]}" in
    bug)
      run_guest "$n" "$bench/force/$n" 30
      check "$n: forced run exits 3 (status $st)" test "$st" -eq 3
      check "$n: forced run prints a BUG line" grep -q "^BUG: $n: " "$work/out"
      ;;
    abort)
      run_guest "$n" "$bench/force/$n" 30
      check "$n: forced run aborts (status $st)" test "$st" -eq 134
      ;;
    deadlock) hangs+=("$n") ;;
    *) fail "$n: no forced check for oracle ${oracle[$n]}" ;;
  esac
done

# Forced deadlocks: all at once (they only sleep), each must outlive hang_s.
declare -A pid
for n in "${hangs[@]}"; do
  sys=()
  [ "${flavor[$n]}" = dynamic ] && sys=(-L "$WEFT_SYSROOT")
  timeout -s KILL "$hang_s" "$QEMU_AARCH64" "${sys[@]}" "$bench/force/$n" >/dev/null 2>&1 &
  pid[$n]=$!
done
for n in "${hangs[@]}"; do
  set +e
  wait "${pid[$n]}"
  st=$?
  set -e
  check "$n: forced run hangs (killed after ${hang_s} s; status $st)" test "$st" -eq 137
done

# ...and weft calls it a deadlock on the program's objects (a dynamic one's
# too: position-independent, named where qemu loaded it).
for n in "${hangs[@]}"; do
  sys=()
  [ "${flavor[$n]}" = dynamic ] && sys=(--sysroot "$WEFT_SYSROOT")
  run_status st "$WEFT" replay --sched random --seed 1 --timeout 30 --quiet "${sys[@]}" \
    --out "$work/dl-$n" -- "$bench/force/$n"
  j="$work/dl-$n/runs.jsonl"
  check "$n: weft's verdict on the forced run is deadlock" \
    test "$(jq -r .verdict "$j" 2>/dev/null)" = deadlock
  check "$n: no thread waits on a gate" \
    test "$(jq '[.waits[]? | select((.object // "") | startswith("bench_gate"))] | length' "$j")" = 0
  check "$n: a thread waits on the program's own object" \
    test "$(jq '[.waits[]? | select(.object != null)] | length' "$j")" -ge 1
done

# Controls with a fixed outcome under plain qemu.
for n in "${names[@]}"; do
  [ "${kind[$n]}" = control ] || continue
  case "${expect[$n]}" in
    hang)
      run_guest "$n" "$bench/$n" "$hang_s"
      check "$n: never ends (killed after ${hang_s} s; status $st)" test "$st" -eq 137
      ;;
    0) [ "${oracle[$n]}" = none ] || continue # exit_no_join aborts in some schedules
      run_guest "$n" "$bench/$n" 60
      check "$n: exits 0 (status $st)" test "$st" -eq 0
      ;;
    *)
      run_guest "$n" "$bench/$n" 60
      check "$n: exits ${expect[$n]} (status $st)" test "$st" -eq "${expect[$n]}"
      ;;
  esac
done
finish
