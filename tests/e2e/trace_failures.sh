# Guests that crash, abort, deadlock or exit mid-loop end with the right
# status and a readable trace, never a hang.
source "$(dirname "$0")/lib.sh"

# fixture, expected weft status, text expected in weft's output, trace flag in info
cases=(
  "fail_segv 139 killed.by.signal.11 crashed"
  "fail_abort 134 killed.by.signal.6 crashed"
  "fail_deadlock 125 deadlocked deadlock"
  "fail_exit_midloop 0 exited.with.status.0 complete"
)
for c in "${cases[@]}"; do
  read -r fx want text flag <<<"$c"
  for mode in free exact; do
    run_status st "$WEFT" trace --mode "$mode" --timeout 60 -o "$work/$fx.wtr" -- "$WEFT_FIXTURES/$fx" \
      >"$work/out" 2>"$work/err"
    check "$fx/$mode: status $want (got $st)" test "$st" = "$want"
    check "$fx/$mode: says it" grep -Eq "$text" "$work/err"
    check "$fx/$mode: trace readable" "$WEFT" info "$work/$fx.wtr" >"$work/info"
    check "$fx/$mode: trace flagged $flag" grep -qi "$flag" "$work/info"
    check "$fx/$mode: no spool left" test ! -e "$work/$fx.wtr.spool"
  done
done
# The deadlock report names the waiting threads.
"$WEFT" trace -o "$work/d.wtr" -- "$WEFT_FIXTURES/fail_deadlock" >/dev/null 2>"$work/err" || true
check "deadlock report lists waiting threads" test "$(grep -c 'waits on futex' "$work/err")" -ge 2

# A guest that never ends is killed at the time limit and its trace salvaged.
# Meanwhile weft says it is alive (WEFT_PROGRESS_S: the first line after
# half a second instead of 10), what it spooled so far; -q says none of it.
WEFT_PROGRESS_S=0.5 run_status st "$WEFT" trace --timeout 2 -o "$work/loop.wtr" -- "$WEFT_FIXTURES/fail_spin" >"$work/out" 2>&1
check "spinning guest: status 124 (got $st)" test "$st" = 124
check "spinning guest: says timed out" grep -q "timed out" "$work/out"
check "spinning guest: progress lines with what was spooled ($(grep -c 'tracing' "$work/out"))" \
  grep -Eq '^weft: [0-9]+ s: tracing, [0-9.]+ (bytes|KB|MB|GB) spooled$' "$work/out"
WEFT_PROGRESS_S=0.5 run_status st "$WEFT" trace -q --timeout 2 -o "$work/loop-q.wtr" -- "$WEFT_FIXTURES/fail_spin" >"$work/out-q" 2>&1
check "spinning guest, -q: no progress line" bash -c "! grep -q 'tracing' '$work/out-q'"
"$WEFT" info "$work/loop.wtr" >"$work/info" 2>&1
check "spinning guest: trace readable and flagged" grep -Eqi "timed.out" "$work/info"
# Only this test's qemu: its plugin arguments name this test's work folder.
check "spinning guest: no qemu left behind" bash -c "! pgrep -f 'qemu-aarch6[4].*${work}/loop[.]wtr' >/dev/null"
# A dynamic program whose libraries the sysroot lacks: the loader's line
# goes to the terminal, and weft trace names --sysroot as weft replay does.
mkdir -p "$work/bare/lib"
cp /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 "$work/bare/lib/"
run_status st timeout -s KILL 60 "$WEFT" trace --sysroot "$work/bare" -o "$work/bare.wtr" \
  -- "$WEFT_FIXTURES/lost_update_dynamic" >"$work/bare.out" 2>"$work/bare.err"
check "a sysroot without the program's libraries: status 127 (got $st)" test "$st" = 127
check "a sysroot without the program's libraries: weft names --sysroot" \
  grep -q "^weft: status 127: if the loader could not find a shared library above, give --sysroot a root with the program's libraries (now $work/bare)$" "$work/bare.err"

finish
