# A departure from virtual-time order is said, not hidden: a thread that
# blocks in a read of a pipe comes back behind the others, and the trace is
# flagged `unordered` with a line on stderr; with stdin at EOF nothing
# departs and the trace is not flagged.
source "$(dirname "$0")/lib.sh"
fx="$WEFT_FIXTURES/fail_pipe_read"

run_status st "$WEFT" trace --mode exact -o "$work/eof.wtr" -- "$fx" </dev/null >"$work/eof.out" 2>&1
check "stdin at EOF: status 0 (got $st)" test "$st" = 0
check "stdin at EOF: not flagged unordered" \
  bash -c "'$WEFT' info '$work/eof.wtr' | grep -E '^flags' | grep -vq unordered"

set +e
(sleep 1; echo hello) | timeout -s KILL 120 "$WEFT" trace --mode exact -o "$work/pipe.wtr" -- "$fx" \
  >"$work/pipe.out" 2>&1
st=$?
set -e
check "late pipe: status 0 (got $st)" test "$st" = 0
check "late pipe: flagged unordered" \
  bash -c "'$WEFT' info '$work/pipe.wtr' | grep -Eq '^flags .*unordered'"
check "late pipe: said on stderr" grep -q "passed behind virtual time" "$work/pipe.out"
finish
