# The weft command line: help, version, dispatch, usage errors, bad binaries.
source "$(dirname "$0")/lib.sh"

out="$("$WEFT" --help)"
for sub in trace info export optimize inject replay demo; do
  check "help lists $sub" grep -q "^  $sub " <<<"$out"
done
check "version" grep -Eq '^weft [0-9]+\.[0-9]+\.[0-9]+$' <<<"$("$WEFT" --version)"

run_status st "$WEFT" nosuch 2>"$work/err"
check "unknown command exits 2" test "$st" = 2
check "unknown command: one line" test "$(wc -l <"$work/err")" = 1
check "unknown command: names it" grep -q "unknown command 'nosuch'" "$work/err"

run_status st "$WEFT" --bogus 2>"$work/err"
check "unknown option exits 2" test "$st" = 2
check "unknown option: one line" test "$(wc -l <"$work/err")" = 1

run_status st "$WEFT" trace --bogus -- /bin/true 2>"$work/err"
check "unknown trace option exits 2" test "$st" = 2

run_status st "$WEFT" trace --cpi 0 -- /bin/true 2>"$work/err"
check "--cpi 0 rejected with 2" test "$st" = 2
check "--cpi 0 message" grep -q -- "--cpi: expected a number from 1" "$work/err"

# Bad programs: one line naming the problem, exit 1.
expect_bad() { # name expected-text program...
  local name="$1" text="$2"; shift 2
  run_status st "$WEFT" trace -o "$work/x.wtr" -- "$@" 2>"$work/err" >/dev/null
  check "$name: exit 1" test "$st" = 1
  check "$name: one line" test "$(wc -l <"$work/err")" = 1
  check "$name: message" grep -q -- "$text" "$work/err"
}
expect_bad "missing binary" "no-such-prog: No such file or directory" "$work/no-such-prog"
printf 'hello\n' >"$work/text"
expect_bad "not an ELF" "text: not an ELF executable" "$work/text"
expect_bad "x86-64 ELF" "ELF for x86-64, weft runs AArch64 programs" /bin/true
cat >"$work/dyn.c" <<'C'
int main(void) { return 0; }
C
# A dynamic program without --sysroot runs with Debian's cross root (what
# aarch64-linux-gnu-gcc linked it against); one whose loader no root has is
# refused.
if aarch64-linux-gnu-gcc -o "$work/dyn" "$work/dyn.c" 2>/dev/null &&
  aarch64-linux-gnu-gcc -Wl,--dynamic-linker=/lib/ld-weft-none.so.1 -o "$work/dyn_none" "$work/dyn.c" 2>/dev/null; then
  run_status st "$WEFT" trace -q -o "$work/dyn.wtr" -- "$work/dyn" 2>"$work/err"
  check "dynamic without sysroot: runs with the cross root (status $st)" test "$st" = 0
  check "dynamic without sysroot: says which root" \
    grep -q "dyn is dynamically linked: its libraries from /usr/aarch64-linux-gnu" "$work/err"
  QEMU_LD_PREFIX="$work/nowhere" expect_bad "dynamic, no root holds the loader" \
    "dynamically linked (needs /lib/ld-weft-none.so.1): pass --sysroot" "$work/dyn_none"
  mkdir -p "$work/emptyroot"
  run_status st "$WEFT" trace --sysroot "$work/emptyroot" -o "$work/x.wtr" -- "$work/dyn" 2>"$work/err"
  check "dynamic with a sysroot lacking the loader" grep -q "is not in the sysroot" "$work/err"
else
  fail "cross compiler missing"
fi

run_status st "$WEFT" info "$work/text" 2>"$work/err"
check "info on a non-trace exits 1" test "$st" = 1
check "info on a non-trace: one line" test "$(wc -l <"$work/err")" = 1
finish
