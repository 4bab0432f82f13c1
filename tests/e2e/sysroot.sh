# A real multithreaded program from Debian's arm64 packages (pigz, dynamically
# linked) traced with --sysroot: same output as the plain qemu run, several
# threads in the trace.
source "$(dirname "$0")/lib.sh"
: "${WEFT_SYSROOT:?}"
pigz="$WEFT_SYSROOT/usr/bin/pigz"
if [ ! -x "$pigz" ]; then
  fail "no arm64 sysroot at $WEFT_SYSROOT (scripts/bootstrap makes it)"
  finish
fi
head -c 60000 /dev/urandom | base64 >"$work/in.txt"
run_status st "$QEMU_AARCH64" -L "$WEFT_SYSROOT" "$pigz" -p 4 -c "$work/in.txt" >"$work/plain.gz"
check "plain pigz runs (status $st)" test "$st" = 0
run_status st "$WEFT" trace -q --sysroot "$WEFT_SYSROOT" -o "$work/p.wtr" -- "$pigz" -p 4 -c "$work/in.txt" >"$work/traced.gz"
check "traced pigz exits 0 (status $st)" test "$st" = 0
check "traced output equals plain output" cmp -s "$work/plain.gz" "$work/traced.gz"
check "output decompresses to the input" cmp -s <(gunzip -c "$work/traced.gz") "$work/in.txt"
"$WEFT" info "$work/p.wtr" >"$work/info"
n="$(grep -Ec '^  T[0-9]+ ' "$work/info")"
check "pigz -p 4 ran several threads (saw $n)" test "$n" -ge 3
check "trace names the binary" grep -q "binary .*usr/bin/pigz (build-id" "$work/info"
# Exact mode speculates on a real program too: its output (held in a file
# per run) is the plain one, written once.
run_status st "$WEFT" trace -q --mode exact --sysroot "$WEFT_SYSROOT" -o "$work/e.wtr" -- "$pigz" -p 4 -c "$work/in.txt" >"$work/exact.gz"
check "exact pigz exits 0 (status $st)" test "$st" = 0
check "exact output equals plain output" cmp -s "$work/plain.gz" "$work/exact.gz"
run_status st "$WEFT" trace -q -o "$work/x.wtr" -- "$pigz" -c "$work/in.txt" 2>"$work/err" >/dev/null
check "without --sysroot: exit 1" test "$st" = 1
check "without --sysroot: says what is missing" grep -q "dynamically linked (needs /lib/ld-linux-aarch64.so.1): pass --sysroot" "$work/err"
finish
