# A departure from virtual-time order is said, not hidden: a thread that
# blocks in a read of a pipe comes back after the others ran on and resumes
# at their time (not behind it), which the host's timing decides, and the
# trace is flagged `unordered` with a line on stderr; with stdin at EOF or a regular
# file (whose reads return at once, so the reader stays counted) nothing
# departs and the trace is not flagged. Waits ended by their timeout are
# flagged and said too.
source "$(dirname "$0")/lib.sh"
fx="$WEFT_FIXTURES/fail_pipe_read"

run_status st "$WEFT" trace --mode exact -o "$work/eof.wtr" -- "$fx" </dev/null >"$work/eof.out" 2>&1
check "stdin at EOF: status 0 (got $st)" test "$st" = 0
check "stdin at EOF: not flagged unordered" \
  bash -c "'$WEFT' info '$work/eof.wtr' | grep -E '^flags' | grep -vq unordered"

# 16 KB read a byte at a time while the locker runs: when reads of a file
# were released like a pipe's, most runs came back behind the locker.
head -c 16384 /dev/zero | tr '\0' x >"$work/in.txt"
for m in free exact; do
  for i in 1 2; do
    run_status st "$WEFT" trace --mode $m -o "$work/file-$m$i.wtr" -- "$fx" <"$work/in.txt" \
      >"$work/file-$m$i.out" 2>&1
    check "stdin a file, $m run $i: status 0 (got $st)" test "$st" = 0
    check "stdin a file, $m run $i: nothing passed behind virtual time" \
      bash -c "! grep -q 'behind virtual time' '$work/file-$m$i.out'"
  done
done
check "stdin a file: two exact traces byte-identical" cmp -s "$work/file-exact1.wtr" "$work/file-exact2.wtr"

# Waits that their timeout ends: the host's clock decides, said and flagged,
# by the tracer and in weft's own summary line (which reads the trace, so it
# is there even when the guest closed its stderr before exiting).
for m in free exact; do
  run_status st "$WEFT" trace --mode $m -o "$work/timed-$m.wtr" -- "$fx" timed </dev/null \
    >"$work/timed-$m.out" 2>&1
  check "timed waits, $m: status 0, the three waits timed out (got $st)" \
    bash -c "test $st = 0 && grep -q '^timed out 3' '$work/timed-$m.out'"
  check "timed waits, $m: said on stderr" \
    grep -q '^weft: 3 waits with a timeout ended by it' "$work/timed-$m.out"
  check "timed waits, $m: flagged unordered" \
    bash -c "'$WEFT' info '$work/timed-$m.wtr' | grep -Eq '^flags .*unordered'"
  check "timed waits, $m: the summary line says so" \
    grep -q '^weft: traced .*; UNORDERED (may not repeat byte for byte); trace' "$work/timed-$m.out"
done
check "a file on stdin: the summary line does not say unordered" \
  bash -c "! grep -q UNORDERED '$work/file-exact1.out'"

set +e
(sleep 1; echo hello) | timeout -s KILL 120 "$WEFT" trace --mode exact -o "$work/pipe.wtr" -- "$fx" \
  >"$work/pipe.out" 2>&1
st=$?
set -e
check "late pipe: status 0 (got $st)" test "$st" = 0
check "late pipe: flagged unordered" \
  bash -c "'$WEFT' info '$work/pipe.wtr' | grep -Eq '^flags .*unordered'"
check "late pipe: said on stderr" grep -q "came back from a wait outside the guest" "$work/pipe.out"
check "late pipe: the line names the thread and its call ($(grep -o 'the last: [^:]*' "$work/pipe.out"))" \
  grep -Eq "the last: T[0-9]+ after read:" "$work/pipe.out"
check "late pipe: no gate passed behind virtual time" \
  bash -c "! grep -q 'behind virtual time' '$work/pipe.out'"
finish
