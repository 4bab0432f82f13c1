# weft trace on fixtures: the guest behaves as under plain qemu, the trace
# has the right threads and access patterns, and traces are reproducible.
source "$(dirname "$0")/lib.sh"

guest_output() { grep -v '^weft: ' "$1" || true; }

# fixture, mode, reproducible?(yes/no)
cases=(
  "lost_update free no"
  "lost_update exact yes"
  "many_threads free yes"
  "many_threads exact yes"
)
for c in "${cases[@]}"; do
  read -r fx mode repro <<<"$c"
  bin="$WEFT_FIXTURES/$fx"
  run_status plain_st "$QEMU_AARCH64" "$bin" >"$work/plain.out" 2>/dev/null
  run_status st "$WEFT" trace --mode "$mode" -o "$work/a.wtr" -- "$bin" >"$work/a.out" 2>"$work/a.err"
  check "$fx/$mode: exit status equals plain qemu ($plain_st)" test "$st" = "$plain_st"
  check "$fx/$mode: output equals plain qemu" cmp -s <(guest_output "$work/a.out") "$work/plain.out"
  check "$fx/$mode: summary printed" grep -q "^weft: traced " "$work/a.out"
  check "$fx/$mode: no stall escapes" grep -q "stall escapes 0;" "$work/a.out"
  if [ "$repro" = yes ]; then
    # stdout must go to the same kind of file: glibc buffers a pipe, a file and
    # /dev/null differently, and that is part of what the guest executes.
    run_status st2 "$WEFT" trace --mode "$mode" -o "$work/b.wtr" -- "$bin" >"$work/b.out" 2>"$work/b.err"
    check "$fx/$mode: second trace byte-identical" cmp -s "$work/a.wtr" "$work/b.wtr"
  fi
  "$WEFT" info "$work/a.wtr" >"$work/info.txt"
  "$WEFT" export --format csv -o "$work/a.csv" "$work/a.wtr"
  case "$fx" in
  lost_update)
    check "$fx/$mode: 3 threads" test "$(grep -Ec '^  T[0-9]+ ' "$work/info.txt")" = 3
    for t in 1 2; do
      n="$(awk -F, -v t="$t" '$2 == t && $4 == "write" && $8 ~ /^counter(\+0)?$/' "$work/a.csv" | wc -l)"
      check "$fx/$mode: T$t writes counter 50 times (saw $n)" test "$n" = 50
      n="$(awk -F, -v t="$t" '$2 == t && $4 == "read" && $8 ~ /^counter(\+0)?$/' "$work/a.csv" | wc -l)"
      check "$fx/$mode: T$t reads counter 50 times (saw $n)" test "$n" = 50
    done
    check "$fx/$mode: info shows counter's pattern" grep -q '^  counter: T0 RR, T1 (RW)x50, T2 (RW)x50; write-write pairs: 2500 cross-thread' "$work/info.txt"
    ;;
  many_threads)
    check "$fx/$mode: 101 threads" test "$(grep -Ec '^  T[0-9]+ ' "$work/info.txt")" = 101
    ;;
  esac
done
finish
