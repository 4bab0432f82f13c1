# Bad input to weft: every row of docs/errors.md, its exact one-line message
# and exit status. The test also checks that each line it expects is written
# in docs/errors.md and, at the end, that every line of the doc's tables was
# checked here, so the doc and the behaviour cannot drift apart.
source "$(dirname "$0")/lib.sh"
: "${WEFT_SRC:?}"
doc="$WEFT_SRC/docs/errors.md"
cd "$work" # messages name the inputs as given: short relative paths
: >"$work/checked"
export TMPDIR="$work/tmp" # weft inject's run folders: must be gone afterwards
mkdir "$TMPDIR"
mounts=()
trap 'for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || true; done; rm -rf "$work"' EXIT

# expect_as DOCLINE NAME STATUS LINE CMD...: CMD exits STATUS with exactly
# LINE on stderr, and DOCLINE (LINE with placeholders for values the build
# decides) is in docs/errors.md.
expect_as() {
  local docline="$1" name="$2" want="$3" line="$4"; shift 4
  run_status st "$@" >"$work/out" 2>"$work/err"
  check "$name: exit $want (got $st)" test "$st" = "$want"
  if [ "$(cat "$work/err")" = "$line" ] || { [ -n "${among:-}" ] && grep -qxF -- "$line" "$work/err"; }; then
    ok "$name: says '$line'"
  else
    fail "$name: says '$(head -c 300 "$work/err")', expected '$line'"
  fi
  check "$name: message in docs/errors.md" grep -qF -- "\`$docline\`" "$doc"
  printf '%s\n' "$docline" >>"$work/checked"
}
# known NAME CMD...: a check that fails because of a known, reported bug:
# KNOWN (not a failure) while it fails, ok once fixed.
known() {
  local name="$1"; shift
  if "$@"; then ok "$name"; else echo "KNOWN $name"; fi
}
# expect NAME STATUS LINE CMD...: the same, LINE has no placeholder.
expect() { expect_as "$3" "$@"; }
# expect_among: as expect, for a run of the guest, whose trace's closing
# lines follow on stderr: LINE is one of stderr's lines.
expect_among() { among=1 expect_as "$3" "$@"; }

# tmpfs DIR [OPTIONS [SIZE]]: mount a tmpfs of SIZE (16 KiB) on DIR (root only); false if refused.
tmpfs() {
  mkdir -p "$1"
  if mount -t tmpfs -o "size=${3:-16k}${2:+,$2}" tmpfs "$1" 2>/dev/null; then
    mounts+=("$work/$1")
  else
    echo "skip: mount -t tmpfs refused (not root?): the rows that need $1/ are not checked"
    return 1
  fi
}

cp "$WEFT_FIXTURES/lost_update" lu
cp "$WEFT_FIXTURES/paper_avn" avn
run_status st "$WEFT" trace -q --mode exact -o lu.wtr -- ./lu >/dev/null
check "setup: traced lost_update" test "$st" = 0 -a -s lu.wtr
run_status st "$WEFT" optimize lu.wtr -o lu.json >/dev/null 2>&1
check "setup: a plan for lost_update" test "$st" = 0 -a -s lu.json
mkdir adir emptyroot
printf 'hello\n' >text
cp text text.wtr
cp /bin/true x86
ro=""
tmpfs ro ro && ro=1
full=""
# 12 KiB: lost_update's spool header and first chunk fit, then the disk is
# full, and the salvaged trace of what fit takes what is left (with more
# room the spool grows until the trace no longer fits beside it: the
# reserve check, off in the last rows, is what keeps that room).
tmpfs full "" 12k && full=1

# ---- guest programs ---------------------------------------------------------------
expect "program: missing" 1 "weft: nosuch: No such file or directory" "$WEFT" trace -o x.wtr -- nosuch
expect "program: not an ELF" 1 "weft: text: not an ELF executable" "$WEFT" trace -o x.wtr -- text
expect "program: x86-64" 1 "weft: x86: ELF for x86-64, weft runs AArch64 programs" \
  "$WEFT" trace -o x.wtr -- x86
printf 'int main(void) { return 0; }\n' >dyn.c
if aarch64-linux-gnu-gcc -o dyn dyn.c 2>/dev/null &&
  aarch64-linux-gnu-gcc -Wl,--dynamic-linker=/lib/ld-weft-none.so.1 -o dyn_none dyn.c 2>/dev/null; then
  expect "program: dynamic, no root holds its loader" 1 "weft: dyn_none: dynamically linked (needs /lib/ld-weft-none.so.1): pass --sysroot DIR holding an AArch64 root filesystem (none given, and neither \$QEMU_LD_PREFIX nor /usr/aarch64-linux-gnu holds it)" \
    "$WEFT" trace -o x.wtr -- dyn_none
  # Its loader is in the default root, a library it needs is not.
  printf 'int weft_none(void) { return 0; }\n' >libnone.c
  printf 'int weft_none(void);\nint main(void) { return weft_none(); }\n' >needs.c
  if aarch64-linux-gnu-gcc -shared -fPIC -o libweftnone.so libnone.c 2>/dev/null &&
    aarch64-linux-gnu-gcc -o needs needs.c -L. -lweftnone 2>/dev/null; then
    among=1 expect_as "weft: PROG: error while loading shared libraries: libz.so.1: cannot open shared object file: No such file or directory (--sysroot ROOT: give a root with the program's libraries)" \
      "program: a library not in the root" 1 \
      "weft: needs: error while loading shared libraries: libweftnone.so: cannot open shared object file: No such file or directory (--sysroot /usr/aarch64-linux-gnu: give a root with the program's libraries)" \
      "$WEFT" replay --runs 2 -o noroot -- needs
    among=1 expect_as "weft: status 127: if the loader could not find a shared library above, give --sysroot a root with the program's libraries (now ROOT)" \
      "trace: a library not in the root" 127 \
      "weft: status 127: if the loader could not find a shared library above, give --sysroot a root with the program's libraries (now /usr/aarch64-linux-gnu)" \
      "$WEFT" trace -o noroot.wtr -- needs
  else
    fail "program: a library not in the root: the cross compiler failed"
  fi
  # More threads over its life than processing elements.
  printf '#include <pthread.h>\nstatic void *w(void *a) { return a; }\nint main(void) { for (int i = 0; i < 6; i++) { pthread_t t; pthread_create(&t, 0, w, 0); pthread_join(t, 0); } return 0; }\n' >churn.c
  if aarch64-linux-gnu-gcc -static -pthread -o churn churn.c 2>/dev/null; then
    among=1 expect_as "weft: PROG started more than 512 threads in one run (each has a processing element of its own, never reused): give --max-threads 2048 (up to 65536)" \
      "program: more threads than --max-threads" 1 \
      "weft: churn started more than 4 threads in one run (each has a processing element of its own, never reused): give --max-threads 16 (up to 65536)" \
      "$WEFT" replay --runs 2 --max-threads 4 -o churned -- churn
    among=1 expect_as "weft: more than 512 threads: raise --max-threads (each thread the program starts has a PE of its own); stopping the run, the trace so far is kept, flagged truncated" \
      "trace program: more threads than --max-threads" 124 \
      "weft: more than 4 threads: raise --max-threads (each thread the program starts has a PE of its own); stopping the run, the trace so far is kept, flagged truncated" \
      "$WEFT" trace --max-threads 4 -o churn.wtr -- churn
    check "trace program: more threads than --max-threads: said once" \
      test "$(grep -c 'more than 4 threads' "$work/err")" = 1
    check "trace program: more threads than --max-threads: the trace so far, truncated" \
      sh -c "'$WEFT' info churn.wtr 2>&1 | grep -q 'truncated'"
  else
    fail "program: more threads than --max-threads: the cross compiler failed"
  fi
  expect "program: dynamic, no loader in the sysroot" 1 \
    "weft: dyn: its loader /lib/ld-linux-aarch64.so.1 is not in the sysroot emptyroot" \
    "$WEFT" trace --sysroot emptyroot -o x.wtr -- dyn
else
  fail "program: dynamic: the cross compiler aarch64-linux-gnu-gcc is missing"
fi
expect "program: a directory" 1 "weft: adir: is a directory, not a program" "$WEFT" trace -o x.wtr -- adir
expect "replay program: missing" 1 "weft: nosuch: No such file or directory" "$WEFT" replay -- nosuch
expect "replay --for with --shard and no --runs" 2 \
  "weft replay: --shard splits a range of seeds: give --runs N with --for (see weft replay --help)" \
  "$WEFT" replay --sched pct --shard 1/2 --for 5 -- ./lu
expect "replay --for with one --seed" 2 \
  "weft replay: --for bounds a campaign's time, not a single run (--seed alone, --schedule) (see weft replay --help)" \
  "$WEFT" replay --sched pct --seed 3 --for 5 -- ./lu
check "program errors: no trace written" test ! -e x.wtr
check "replay program: missing: no output folder" test ! -e weft-replay
rm -rf weft-replay

# ---- weft trace: options and output path ----------------------------------
expect "trace --cpi 0" 2 "weft trace: --cpi: expected a number from 1 to 1000000, got '0' (see weft trace --help)" \
  "$WEFT" trace --cpi 0 -o x.wtr -- ./lu
expect "trace --timeout -1" 2 "weft trace: --timeout: expected a number from 1 to 604800, got '-1' (see weft trace --help)" \
  "$WEFT" trace --timeout -1 -o x.wtr -- ./lu
expect "trace --timeout 0" 2 "weft trace: --timeout: expected a number from 1 to 604800, got '0' (see weft trace --help)" \
  "$WEFT" trace --timeout 0 -o x.wtr -- ./lu
expect "trace --max-threads 0" 2 "weft trace: --max-threads: expected a number from 1 to 65536, got '0' (see weft trace --help)" \
  "$WEFT" trace --max-threads 0 -o x.wtr -- ./lu
expect "trace --max-events 0" 2 "weft trace: --max-events: expected a number from 1 to 18446744073709551615, got '0' (see weft trace --help)" \
  "$WEFT" trace --max-events 0 -o x.wtr -- ./lu
expect "trace --max-trace-size 1X" 2 \
  "weft trace: --max-trace-size: expected a size like 500M or 4G (0: no limit), got '1X' (see weft trace --help)" \
  "$WEFT" trace --max-trace-size 1X -o x.wtr -- ./lu
expect "trace --filter shared --mode exact" 2 "weft trace: --filter shared: free mode only (which thread touches a page first is the host's timing; exact traces repeat byte for byte) (see weft trace --help)" \
  "$WEFT" trace --filter shared --mode exact -o x.wtr -- ./lu
expect "trace --record reads" 2 "weft trace: --record: expected all, sync or sync+writes, got 'reads' (see weft trace --help)" \
  "$WEFT" trace --record reads -o x.wtr -- ./lu
expect_among "trace --mode exact, TMPDIR missing" 0 \
  "weft: nosuch: cannot create a temporary folder (No such file or directory); exact mode gates every access" \
  env TMPDIR=nosuch "$WEFT" trace --mode exact -o x.wtr -- ./lu
check "trace --mode exact, TMPDIR missing: a trace all the same" test -s x.wtr
expect "trace -o in a missing folder" 1 "weft: nodir/x.wtr: cannot write there: No such file or directory" \
  "$WEFT" trace -o nodir/x.wtr -- ./lu
check "trace -o in a missing folder: the guest did not run" test ! -s "$work/out"
if [ -n "$ro" ]; then
  expect "trace -o on a read-only fs" 1 "weft: ro/x.wtr: cannot write there: Read-only file system" \
    "$WEFT" trace -o ro/x.wtr -- ./lu
  check "trace -o on a read-only fs: the guest did not run" test ! -s "$work/out"
fi
# access() says yes to root there: a file made and removed at once says no.
expect "trace -o under /proc" 1 "weft: /proc/x.wtr: cannot write there: No such file or directory" \
  "$WEFT" trace -o /proc/x.wtr -- ./lu
check "trace -o under /proc: the guest did not run" test ! -s "$work/out"
expect "trace -o a folder" 1 "weft: adir: is a directory" "$WEFT" trace -o adir -- ./lu
if [ -n "$full" ]; then
  expect_among "trace to a nearly full disk" 124 \
    "weft: stopping the run: only 0 MiB left on the trace's file system (weft keeps 256 MiB and room for the trace free); the trace so far is kept, flagged truncated" \
    "$WEFT" trace -o full/x.wtr -- ./lu
  check "trace to a nearly full disk: a readable trace flagged stopped, nothing else" \
    bash -c '[ "$(ls full)" = x.wtr ] && "$0" info full/x.wtr | grep -q "^flags .*stopped"' "$WEFT"
  rm -f full/*
  # The reserve check off: the disk fills up under the tracer. With a spool
  # of raw chunks their writes fail, and the trace of what fit is smaller.
  expect_among "trace to a full disk (raw chunks)" 0 \
    "weft: full/x.wtr.spool: write failed: No space left on device" \
    env WEFT_GUEST_ENV="WEFT_TRACE_MIN_FREE WEFT_TRACE_ONLINE" WEFT_TRACE_MIN_FREE=0 \
    WEFT_TRACE_ONLINE=0 "$WEFT" trace -o full/x.wtr -- ./lu
  check "trace to a full disk (raw chunks): the guest ran to its end" grep -q '^counter = ' "$work/out"
  check "trace to a full disk (raw chunks): what fit is salvaged, flagged truncated, nothing else left" \
    bash -c '[ "$(ls full)" = x.wtr ] && "$0" info full/x.wtr | grep -q "^flags .*truncated"' "$WEFT"
  rm -f full/*
  # A spool of segments is the trace's size: the trace does not fit beside
  # it, and the spool stays for weft salvage where there is room.
  expect_among "trace to a full disk" 1 "weft: full/x.wtr: cannot write the trace: No space left on device" \
    env WEFT_GUEST_ENV=WEFT_TRACE_MIN_FREE WEFT_TRACE_MIN_FREE=0 "$WEFT" trace -o full/x.wtr -- ./lu
  check "trace to a full disk: the guest ran to its end" grep -q '^counter = ' "$work/out"
  check "trace to a full disk: the spool and the buffer file kept, no trace" \
    test "$(ls full | xargs)" = "x.wtr.live x.wtr.spool"
  mkdir -p roomy
  cp full/x.wtr.spool roomy/
  run_status st "$WEFT" salvage roomy/x.wtr >/dev/null 2>&1
  check "trace to a full disk: its spool salvaged elsewhere (status $st) holds the run to its end" \
    grep -Eq "^ended .*last event: T0 thread_exit" <("$WEFT" info roomy/x.wtr 2>&1)
  rm -rf full/* roomy
fi

# ---- traces: weft info (and export, optimize) --------------------------------------
expect "info: missing" 1 "weft: nosuch.wtr: cannot open: No such file or directory" "$WEFT" info nosuch.wtr
expect "info: a folder" 1 "weft: adir: is a directory, not a trace" "$WEFT" info adir
: >empty.wtr
expect "info: empty" 1 "weft: empty.wtr: empty file, not a trace" "$WEFT" info empty.wtr
expect "info: not a trace" 1 "weft: text.wtr: not a weft trace (bad magic)" "$WEFT" info text.wtr
head -c 10 lu.wtr >short.wtr
expect "info: shorter than a header" 1 "weft: short.wtr: truncated header (file is 10 bytes)" \
  "$WEFT" info short.wtr
head -c 1000 lu.wtr >cut.wtr
expect "info: truncated" 1 "weft: cut.wtr: truncated (no trailer at the end of its 1000 bytes)" \
  "$WEFT" info cut.wtr
# poke FILE OFFSET [BYTE]: a copy of lu.wtr with one byte overwritten (0xff)
poke() { cp lu.wtr "$1"; printf "${3:-\\xff}" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
poke v6.wtr 8 '\x06'
expect "info: newer format version" 1 \
  "weft: v6.wtr: trace format version 6 is newer than this weft supports (5)" "$WEFT" info v6.wtr
poke hdr.wtr 20
expect "info: corrupt header" 1 "weft: hdr.wtr: corrupt header (checksum mismatch)" "$WEFT" info hdr.wtr
# The first frame starts right after the header: 156 bytes and the binary
# path the trace recorded, "./lu" made absolute ("$PWD/lu").
frame=$((156 + ${#PWD} + 3))
poke blk.wtr $((frame + 40))
expect_as "weft: blk.wtr: corrupt block at offset OFFSET (checksum mismatch)" "info: corrupt block" 1 \
  "weft: blk.wtr: corrupt block at offset $frame (checksum mismatch)" \
  "$WEFT" info blk.wtr
poke foot.wtr $(($(stat -c %s lu.wtr) - 30))
expect "info: corrupt footer" 1 "weft: foot.wtr: corrupt footer (checksum mismatch)" "$WEFT" info foot.wtr
cp "$WEFT_SRC/tests/unit/data/fuzz_trace/exit_status_int_min.wtr" exit.wtr
expect "info: an exit status no run ends with" 1 "weft: exit.wtr: corrupt footer (exit status -2147483648)" \
  "$WEFT" info exit.wtr
cp "$WEFT_SRC/tests/unit/data/fuzz_trace/footer_thread_events_mismatch.wtr" footer.wtr
expect "info: footer counts disagree" 1 \
  "weft: footer.wtr: corrupt footer (thread 0 has 104 events in the blocks, the footer says 31)" \
  "$WEFT" info footer.wtr
cp "$WEFT_SRC/fuzz/corpus/spool/kinds.spool" run.wtr
expect "info: a spool" 1 \
  "weft: run.wtr: is the spool of an unfinished run, not a trace (weft salvage makes one)" "$WEFT" info run.wtr
cp lu.wtr ro.wtr
chmod 000 ro.wtr
if [ "$(id -u)" = 0 ]; then
  # root reads anything: read as nobody (who may enter $work: it is 0700 root's).
  chmod 755 "$work"
  if setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    # ... and nobody can read a readable trace there: the mode of ro.wtr is
    # what the next line is refused for.
    run_status st setpriv --reuid=65534 --regid=65534 --clear-groups "$WEFT" info lu.wtr >/dev/null 2>&1
    check "info: nobody reads a readable trace (status $st)" test "$st" = 0
    expect "info: unreadable" 1 "weft: ro.wtr: cannot open: Permission denied" \
      setpriv --reuid=65534 --regid=65534 --clear-groups "$WEFT" info ro.wtr
  else
    fail "info: unreadable: setpriv is missing"
  fi
else
  expect "info: unreadable" 1 "weft: ro.wtr: cannot open: Permission denied" "$WEFT" info ro.wtr
fi
expect "info: output to a full disk" 1 "weft: lu.wtr: cannot write the summary: No space left on device" \
  bash -c "exec \"\$0\" info lu.wtr >/dev/full" "$WEFT"
# export and optimize read traces with the same reader and say the same.
expect "export: missing trace" 1 "weft: nosuch.wtr: cannot open: No such file or directory" \
  "$WEFT" export -o x.json nosuch.wtr
expect "export: truncated trace" 1 "weft: cut.wtr: truncated (no trailer at the end of its 1000 bytes)" \
  "$WEFT" export -o x.json cut.wtr
expect "optimize: newer format version" 1 \
  "weft: v6.wtr: trace format version 6 is newer than this weft supports (5)" "$WEFT" optimize v6.wtr
expect_as "weft: blk.wtr: corrupt block at offset OFFSET (checksum mismatch)" "optimize: corrupt block" 1 \
  "weft: blk.wtr: corrupt block at offset $frame (checksum mismatch)" \
  "$WEFT" optimize blk.wtr -o p.json
check "export/optimize of bad traces: no output" test ! -e x.json -a ! -e p.json

# ---- weft export: options and output ---------------------------------------------
expect "export --format bogus" 2 "weft export: --format: expected chrome, vcd or csv, got 'bogus' (see weft export --help)" \
  "$WEFT" export --format bogus lu.wtr
expect "export -o a folder" 1 "weft: adir: is a directory" "$WEFT" export -o adir lu.wtr
expect "export -o in a missing folder" 1 "weft: nodir/x.json: cannot write there: No such file or directory" \
  "$WEFT" export -o nodir/x.json lu.wtr
if [ -n "$ro" ]; then
  expect "export -o on a read-only fs" 1 "weft: ro/x.json: cannot write there: Read-only file system" \
    "$WEFT" export -o ro/x.json lu.wtr
fi
if [ -n "$full" ]; then
  expect "export to a full disk" 1 "weft: full/x.csv: write failed: No space left on device" \
    "$WEFT" export --format csv -o full/x.csv lu.wtr
  check "export to a full disk: no file left" test -z "$(ls full)"
fi

# ---- weft optimize: options and output -------------------------------------------
expect "optimize --runs -1" 2 "weft optimize: --runs: expected a number from 1 to 1000000, got '-1' (see weft optimize --help)" \
  "$WEFT" optimize lu.wtr --algo sa --runs -1
expect "optimize --budget 0" 2 "weft optimize: --budget: expected a number from 1 to 1099511627776, got '0' (see weft optimize --help)" \
  "$WEFT" optimize lu.wtr --algo sa --budget 0
expect "optimize -o in a missing folder" 1 "weft: nodir/p.json: cannot write there: No such file or directory" \
  "$WEFT" optimize lu.wtr -o nodir/p.json
check "optimize -o in a missing folder: refused before the search" test ! -s "$work/out"
if [ -n "$ro" ]; then
  expect "optimize -o on a read-only fs" 1 "weft: ro/p.json: cannot write there: Read-only file system" \
    "$WEFT" optimize lu.wtr -o ro/p.json
fi
expect "optimize --stats-json in a missing folder" 1 \
  "weft: nodir/s.json: cannot write there: No such file or directory" \
  "$WEFT" optimize lu.wtr --algo sa --stats-json nodir/s.json
if [ -n "$full" ]; then
  dd if=/dev/zero of=full/fill bs=4k status=none 2>/dev/null || true # fill it
  expect "optimize: plan to a full disk" 1 "weft: full/p.json: cannot write: No space left on device" \
    "$WEFT" optimize lu.wtr -o full/p.json
  check "optimize: plan to a full disk: no file left" test "$(ls full)" = fill
  rm -f full/fill
fi

# ---- plans, through weft inject ----------------------------------------------------
expect "plan: missing" 1 "weft: nosuch.json: cannot open: No such file or directory" "$WEFT" inject nosuch.json
expect "plan: a folder" 1 "weft: adir: is a directory" "$WEFT" inject adir
sed 's/"weft-plan"/"weft-trace"/' lu.json >schema.json
expect "plan: wrong format" 1 'weft: schema.json: format: must be "weft-plan"' "$WEFT" inject schema.json
sed 's/"delay_ns":/"delay":/' lu.json >key.json
expect "plan: unknown key" 1 'weft: key.json: injections[0].delay: unknown key' "$WEFT" inject key.json
sed 's/"delay_ns": \([0-9]*\)/"delay_ns": "\1"/' lu.json >types.json
expect "plan: wrong type" 1 'weft: types.json: injections[0].delay_ns: must be a non-negative integer' \
  "$WEFT" inject types.json
sed 's/"delay_ns": [0-9]*/"delay_ns": -5/' lu.json >neg.json
expect "plan: negative delay" 1 'weft: neg.json: injections[0].delay_ns: must be a non-negative integer' \
  "$WEFT" inject neg.json
jq '.injections = []' lu.json >none.json
expect "plan: no injections" 1 'weft: none.json: injections: the plan has none, nothing to inject' \
  "$WEFT" inject none.json
check "plan: no injections: nothing ran" test -z "$(cat "$work/out")"
sed 's/"version": 1/"version": 2/' lu.json >v2.json
expect "plan: newer version" 1 'weft: v2.json: version: unsupported version 2 (this weft reads 1)' \
  "$WEFT" inject v2.json
printf '{"format": "weft-plan", "version": 1,\n' >trunc.json
expect "plan: not JSON" 1 "weft: trunc.json: line 2 column 0: string or '}' expected near end of file" \
  "$WEFT" inject trunc.json
sed 's/"delay_ns": [0-9]*/"delay_ns": 1500/; s/"delay_insns": [0-9]*/"delay_insns": 7/' lu.json >insns.json
expect "plan: inconsistent delay_insns" 1 \
  'weft: insns.json: injections[0].delay_insns: is 7 but delay_ns*1000/(cpi*ps_per_cycle) = 1500' \
  "$WEFT" inject insns.json
id1="$(sed -n 's/.*"build_id": "\([0-9a-f]*\)".*/\1/p' lu.json)"
id2="$(readelf -n avn | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')"
check "setup: two different build-ids ($id1, $id2)" test -n "$id1" -a -n "$id2" -a "$id1" != "$id2"
expect_as 'weft: lu.json: program.build_id: plan is for build-id "ID1" but avn has "ID2"' \
  "plan: build-id mismatch" 1 "weft: lu.json: program.build_id: plan is for build-id \"$id1\" but avn has \"$id2\"" \
  "$WEFT" inject lu.json -- avn
check "plan: build-id mismatch: nothing ran" test ! -s "$work/out"
# An unknown thread or event is found by the uninjected run (inject reads
# the plan without the trace), and refused before any injected run.
sed '0,/"thread": [0-9]*/s//"thread": 9/' lu.json >thread.json
expect "plan: unknown thread" 1 \
  'weft: thread.json: injections[0].thread: thread 9 does not exist (the uninjected run has 3)' \
  "$WEFT" inject thread.json
check "plan: unknown thread: no injected run" bash -c "! grep -q '^weft: injected run' '$work/out'"
n="$("$WEFT" info lu.wtr | awk '$1 == "T1" { print $7 }')"
sed '0,/"seq": [0-9]*/s//"seq": 999999/' lu.json >seq.json
expect_as 'weft: seq.json: injections[0].seq: event 999999 is out of range (thread 1 has N events in the uninjected run)' \
  "plan: event out of range" 1 \
  "weft: seq.json: injections[0].seq: event 999999 is out of range (thread 1 has $n events in the uninjected run)" \
  "$WEFT" inject seq.json
check "plan: event out of range: no injected run" bash -c "! grep -q '^weft: injected run' '$work/out'"
expect "inject --refine -1" 2 "weft inject: --refine: expected a number from 0 to 100, got '-1' (see weft inject --help)" \
  "$WEFT" inject lu.json --refine -1
if [ -n "$ro" ]; then
  expect "inject --report-json on a read-only fs" 1 \
    "weft: ro/r.json: cannot write there: Read-only file system" "$WEFT" inject lu.json --report-json ro/r.json
  check "inject --report-json on a read-only fs: nothing ran" test ! -s "$work/out"
fi
check "inject: no temporary folder left" test -z "$(ls "$TMPDIR")"

# ---- weft replay: numeric options -------------------------------------------------
expect "replay --runs -1" 2 "weft replay: --runs: expected a number from 1 to 1099511627776, got '-1' (see weft replay --help)" \
  "$WEFT" replay --runs -1 -- ./lu
expect "replay --runs 0" 2 "weft replay: --runs: expected a number from 1 to 1099511627776, got '0' (see weft replay --help)" \
  "$WEFT" replay --runs 0 -- ./lu
expect "replay --depth 0" 2 "weft replay: --depth: expected a number from 1 to 4096, got '0' (see weft replay --help)" \
  "$WEFT" replay --depth 0 -- ./lu
expect "replay --jobs 0" 2 "weft replay: --jobs: expected a number from 1 to 1024, got '0' (see weft replay --help)" \
  "$WEFT" replay --jobs 0 -- ./lu
expect "replay radius > k" 2 "weft replay: --radius 20: larger than the step budget k = 10 (see weft replay --help)" \
  "$WEFT" replay --sched rpro --steps 10 --radius 20 -- ./lu
expect "replay --radius without rpro" 2 "weft replay: --radius: only for --sched rpro (see weft replay --help)" \
  "$WEFT" replay --sched pct --radius 2 -- ./lu
expect "replay --explain without --seed" 2 "weft replay: --explain describes one run: give --seed S without --runs (see weft replay --help)" \
  "$WEFT" replay --sched pct --explain -- ./lu
expect "replay --minimize-match x" 2 "weft replay: --minimize-match: expected line or verdict, got 'x' (see weft replay --help)" \
  "$WEFT" replay --sched pct --seed 1 --minimize --minimize-match x -- ./lu
expect "replay --minimize-runs alone" 2 "weft replay: --minimize-runs and --minimize-match: only with --minimize (see weft replay --help)" \
  "$WEFT" replay --sched pct --seed 1 --minimize-runs 5 -- ./lu
expect "replay --sched script" 2 "weft replay: --sched script: give the schedule file instead, --schedule FILE (see weft replay --help)" \
  "$WEFT" replay --sched script -- ./lu
expect "replay --schedule with --sched" 2 "weft replay: --sched: the schedule file decides it (--schedule) (see weft replay --help)" \
  "$WEFT" replay --schedule lu.json --sched pct
expect "replay --schedule missing" 1 "weft: --schedule nosuch.json: unable to open nosuch.json: No such file or directory" \
  "$WEFT" replay --schedule nosuch.json
cp lu.json plan.json
expect "replay --schedule of a plan" 1 'weft: --schedule plan.json: not a weft schedule (format "weft-schedule")' \
  "$WEFT" replay --schedule plan.json
check "replay usage errors: no output folder left" test ! -e weft-replay -a ! -e weft-replay-schedule

# ---- weft explain -------------------------------------------------------------------
expect "explain without a seed" 2 "weft explain: expected a replay folder and a seed (weft explain DIR SEED) (see weft explain --help)" \
  "$WEFT" explain adir
expect "explain seed x" 2 "weft explain: SEED: expected a number from 0 to 9223372036854775807, got 'x' (see weft explain --help)" \
  "$WEFT" explain adir x
expect "explain missing folder" 1 "weft: nosuch: No such file or directory" "$WEFT" explain nosuch 3
expect "explain a seed not kept" 1 "weft: adir/traces: seed 3's trace and switch log were not kept (replay it with --seed 3 --save-trace, or --explain)" \
  "$WEFT" explain adir 3
if [ -n "$ro" ]; then
  expect "replay -o on a read-only fs" 1 "weft: ro/out: cannot create the output folder: Read-only file system" \
    "$WEFT" replay -o ro/out -- ./lu
fi
: >afile
expect "replay -o a file" 1 "weft: afile: exists and is not a folder" "$WEFT" replay -o afile -- ./lu

# ---- the doc lists nothing this test did not check ---------------------------------
# Every `weft: ...` line in the message column of a table row.
awk -F' [|] ' '/^\| / && !/^\|---/ { print $2 }' "$doc" | grep -oE '`weft( [a-z]+)?: [^`]*`' | tr -d '`' |
  sort -u >"$work/documented"
sort -u "$work/checked" >"$work/checked.sorted"
unchecked="$(comm -23 "$work/documented" "$work/checked.sorted")"
if [ -z "$unchecked" ]; then
  ok "every line in docs/errors.md's tables is checked ($(wc -l <"$work/documented") lines)"
elif [ -z "$ro$full" ]; then
  echo "skip: without tmpfs mounts, not every documented line was checked:"
  echo "$unchecked"
else
  fail "lines in docs/errors.md that this test does not check:"$'\n'"$unchecked"
fi
check "the doc's tables have lines at all" test "$(wc -l <"$work/documented")" -gt 50

cd /
finish
