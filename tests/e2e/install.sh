# `cmake --install build --prefix P`: P/bin/weft finds the plugin and the
# fixtures in P/lib/weft by itself, never the build tree's (a copy of the
# binary without P/lib/weft fails, naming where it looked), and the man page
# and bash completion say what the binary says.
source "$(dirname "$0")/lib.sh"
: "${WEFT_BUILD:?}"
unset WEFT_PLUGIN
P="$work/prefix"
cmake --install "$WEFT_BUILD" --prefix "$P" >"$work/install.log"
P="$(realpath "$P")"
W="$P/bin/weft"

check "installed: bin/weft, the plugin and lost_update in lib/weft" \
  test -x "$W" -a -f "$P/lib/weft/libweft-tracer.so" -a -x "$P/lib/weft/fixtures/lost_update"
check "installed: fixtures/manifest.tsv names every installed fixture" \
  test "$(awk '/^[a-z]/ { print $1 }' "$P/lib/weft/fixtures/manifest.tsv" | sort | tr '\n' ' ')" = \
  "$(cd "$P/lib/weft/fixtures" && ls | grep -v manifest.tsv | sort | tr '\n' ' ')"
run_status st "$W" demo --help
check "weft demo --help: status 0 (got $st)" test "$st" = 0
check "weft demo --help: its usage" bash -c '"$1" demo --help | grep -q "^usage: weft demo"' _ "$W"

# Which plugin qemu loads: a wrapper in WEFT_QEMU logs qemu's arguments.
cat >"$work/qemu" <<SH
#!/bin/sh
echo "\$@" >>"$work/qemu-args"
exec "$QEMU_AARCH64" "\$@"
SH
chmod +x "$work/qemu"
cd "$work"
WEFT_QEMU="$work/qemu" run_status st "$W" trace -q -o "$work/lu.wtr" -- "$P/lib/weft/fixtures/lost_update" >/dev/null
check "installed weft traces the installed lost_update (status $st)" test "$st" = 0
check "qemu loaded the installed plugin, $P/lib/weft/libweft-tracer.so" \
  grep -q -- "-plugin $P/lib/weft/libweft-tracer.so," "$work/qemu-args"
check "weft info: the trace's three threads" test "$("$W" info "$work/lu.wtr" | grep -c '^  T[0-2] ')" = 3

# The same binary with no lib/weft beside it has nothing to fall back on.
mkdir -p "$work/moved/bin"
cp "$W" "$work/moved/bin/weft"
run_status st "$work/moved/bin/weft" trace -q -o "$work/x.wtr" -- "$P/lib/weft/fixtures/lost_update" \
  2>"$work/moved.err"
check "a copy without lib/weft: status 1 (got $st)" test "$st" = 1
check "a copy without lib/weft: one line naming where it looked" \
  test "$(cat "$work/moved.err")" = "weft: cannot find the tracer plugin libweft-tracer.so in $work/moved/bin/../lib/weft (installed) or $work/moved/bin/../tracer (build tree): reinstall weft or set WEFT_PLUGIN"
run_status st "$work/moved/bin/weft" demo -o "$work/moved-demo" 2>"$work/moved-demo.err" >/dev/null
check "a copy's demo: status 1, the missing fixture named (got $st)" \
  grep -q "^weft: $work/moved/bin/../lib/weft/fixtures/lost_update: No such file" "$work/moved-demo.err"

# weft demo's default program is the installed fixture, its steps the installed weft.
WEFT_QEMU="$work/qemu" run_status st "$W" demo -o "$work/demo" --runs 2 --search-runs 1 --budget 2000 \
  --jobs 1 >"$work/demo.log" 2>&1
check "installed weft demo: status 0 (got $st)" test "$st" = 0
check "demo traced $P/lib/weft/fixtures/lost_update" \
  grep -q "^   \$ weft trace .* -- $P/lib/weft/fixtures/lost_update$" "$work/demo.log"
check "demo wrote report.html" test -s "$work/demo/report.html"
check "every qemu the demo started loaded the installed plugin" \
  test "$(grep -c -- -plugin "$work/qemu-args")" = "$(grep -c -- "-plugin $P/lib/weft/libweft-tracer.so," "$work/qemu-args")"

# Man page and completion: generated from this binary at build time.
man="$P/share/man/man1/weft.1.gz"
check "man page installed" test -s "$man"
for c in $("$W" --help | awk '/^commands:$/ { on = 1; next } on && /^  [a-z]/ && $1 != "help" { print $1 }'); do
  check "man page: a section for weft $c" zgrep -q "^\.SS $c\$" "$man"
done
check "man page: every option of weft replay --help" bash -c '
  for o in $("$1" replay --help | grep -oE -- "--[a-z-]+" | sort -u); do
    zcat "$2" | sed "s/\\\\-/-/g" | grep -q -- "$o" || { echo "missing $o"; exit 1; }
  done' _ "$W" "$man"
if command -v man >/dev/null; then
  check "man page: man renders it without warnings" \
    test -z "$(MANWIDTH=80 man --warnings -l "$man" 2>&1 >/dev/null)"
fi
comp="$P/share/bash-completion/completions/weft"
check "completion: the binary's own 'weft completion bash'" cmp -s "$comp" <("$W" completion bash)
check "completion: completes 'weft repl' to replay" bash -c '
  source "$1"; COMP_WORDS=(weft repl); COMP_CWORD=1; _weft; [ "${COMPREPLY[*]}" = replay ]' _ "$comp"
check "docs: README and docs/scale-out.md in share/doc/weft" \
  test -s "$P/share/doc/weft/README.md" -a -s "$P/share/doc/weft/docs/scale-out.md"
finish
