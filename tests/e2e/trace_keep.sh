# Traces are never lost: a guest that dies of a signal keeps every event
# recorded before it (the faulting access or the abort's syscall last), a
# run that reaches the trace size limit or a nearly full disk stops with a
# readable trace, and --record drops event classes at the source.
source "$(dirname "$0")/lib.sh"

# last_of CSV THREAD: the thread's last event as "kind,addr,function"
last_of() { awk -F, -v t="$2" '$2 == t { k = $4 "," $5 "," $9 } END { print k }' "$1"; }

for mode in free exact; do
  for fx in fail_segv fail_abort; do
    run_status st "$WEFT" trace --mode "$mode" --timeout 60 -o "$work/$fx.wtr" -- "$WEFT_FIXTURES/$fx" \
      >"$work/out" 2>"$work/err"
    "$WEFT" info "$work/$fx.wtr" >"$work/info"
    "$WEFT" export --format csv -o "$work/$fx.csv" "$work/$fx.wtr"
    # Both threads are in the table with events.
    n0="$(awk '$1 == "T0" { print $7 }' "$work/info")"
    n1="$(awk '$1 == "T1" { print $7 }' "$work/info")"
    check "$fx/$mode: main thread's events kept (${n0:-none})" test "${n0:-0}" -gt 100
    check "$fx/$mode: worker's events kept (${n1:-none})" test "${n1:-0}" -gt 5
    check "$fx/$mode: no spool or buffer file left" \
      test ! -e "$work/$fx.wtr.spool" -a ! -e "$work/$fx.wtr.live"
  done
  # The worker's last event: its null store, at the line that dereferences.
  last="$(last_of "$work/fail_segv.csv" 1)"
  check "fail_segv/$mode: worker ends with its faulting write ($last)" \
    test "$last" = "fault,0x0,worker"
  check "fail_segv/$mode: info says where it ended" \
    grep -Eq "^ended +by signal 11 .*T1 faulting write of 0x0 at pc .*worker" <("$WEFT" info "$work/fail_segv.wtr")
  # abort() ends in raise's tgkill (syscall 131).
  last="$(last_of "$work/fail_abort.csv" 1)"
  check "fail_abort/$mode: worker ends with the abort's tgkill ($last)" test "$last" = "syscall,0x83,"
  check "fail_abort/$mode: info says by which signal" \
    grep -Eq "^ended +by signal 6 .*T1 syscall 131" <("$WEFT" info "$work/fail_abort.wtr")
done

# Without reads observed (--record sync+writes: loads get no callback) the
# null store is still named exactly: the pointer's load before it had no
# callback, and the host fault's write bit picks the store after it.
for what in sync+writes sync; do
  run_status st "$WEFT" trace --record "$what" --timeout 60 -o "$work/segv-$what.wtr" -- \
    "$WEFT_FIXTURES/fail_segv" >"$work/out" 2>"$work/err"
  "$WEFT" export --format csv -o "$work/segv-$what.csv" "$work/segv-$what.wtr"
  last="$(last_of "$work/segv-$what.csv" 1)"
  check "fail_segv/record $what: worker ends with its faulting write ($last)" \
    test "$last" = "fault,0x0,worker"
  check "fail_segv/record $what: info names the write, not a guess" \
    grep -Eq "^ended +by signal 11 .*T1 faulting write of 0x0 at pc 0x[0-9a-f]+ \(worker" \
    <("$WEFT" info "$work/segv-$what.wtr")
done

# A fault at a stack access: accesses addressed from SP get no callback
# when stack events are filtered out (the default), so the fault is named
# with its block's first candidate store and flagged near; with --filter
# all every one of them is recorded.
for what in all sync+writes; do
  run_status st "$WEFT" trace --record "$what" --timeout 60 -o "$work/ovf-$what.wtr" -- \
    "$WEFT_FIXTURES/fail_segv" overflow >"$work/out" 2>"$work/err"
  check "stack overflow/record $what: killed by SIGSEGV (status $st)" test "$st" = 139
  check "stack overflow/record $what: info names a write in the recursing function" \
    grep -Eq "^ended +by signal 11 .*T1 faulting write of 0x[0-9a-f]+ \(or a later access of its block.*\(deep, " \
    <("$WEFT" info "$work/ovf-$what.wtr")
done
run_status st "$WEFT" trace --filter all --timeout 60 -o "$work/ovf-all.wtr" -- \
  "$WEFT_FIXTURES/fail_segv" overflow >"$work/out" 2>"$work/err"
"$WEFT" export --format csv -o "$work/ovf-all.csv" "$work/ovf-all.wtr"
n="$(awk -F, '$2 == 1 && $4 == "write" && $9 == "deep"' "$work/ovf-all.csv" | wc -l)"
check "stack overflow/--filter all: every frame's stack stores recorded ($n)" test "$n" -gt 10000

# A guest that spins forever stops at a small size limit, well before its
# time limit, with one line saying why and a readable, flagged trace. The
# limit counts the spool: the trace's compressed segments (a spin loop's
# events take about 0.003 bytes there), or with WEFT_TRACE_ONLINE=0 raw
# chunks (about 1 byte: its records are predicted).
for spool in segments raw; do
  if [ "$spool" = raw ]; then limit=8M lo=1000000 hi=9000000; else limit=64K lo=1000000 hi=100000000; fi
  WEFT_GUEST_ENV=WEFT_TRACE_ONLINE WEFT_TRACE_ONLINE=$([ "$spool" = raw ] && echo 0 || echo 1) \
    run_status st "$WEFT" trace --timeout 100 --max-trace-size "$limit" -o "$work/spin.wtr" -- \
    "$WEFT_FIXTURES/fail_spin" >"$work/out" 2>"$work/err"
  check "size limit ($spool): status 124 (got $st)" test "$st" = 124
  check "size limit ($spool): one line says why" \
    test "$(grep -c 'size limit of .* (--max-trace-size)' "$work/err")" = 1
  "$WEFT" info "$work/spin.wtr" >"$work/info"
  check "size limit ($spool): trace readable and flagged" grep -q "^flags  *truncated stopped" "$work/info"
  events="$(sed -n 's/^trace .*(format [0-9]*, \([0-9]*\) events)$/\1/p' "$work/info")"
  # the limit's worth of events, plus what the buffers and pending segments held
  check "size limit ($spool): about the limit's worth of events (${events:-none})" \
    test "${events:-0}" -gt "$lo" -a "${events:-0}" -lt "$hi"
  check "size limit ($spool): nothing left beside the trace" \
    test ! -e "$work/spin.wtr.spool" -a ! -e "$work/spin.wtr.live"
done

# A nearly full disk (the reserve raised past this disk's free space) stops
# the run the same way.
WEFT_GUEST_ENV=WEFT_TRACE_MIN_FREE WEFT_TRACE_MIN_FREE=$((1 << 60)) \
  run_status st "$WEFT" trace --timeout 100 -o "$work/full.wtr" -- "$WEFT_FIXTURES/fail_spin" \
  >"$work/out" 2>"$work/err"
check "disk nearly full: status 124 (got $st)" test "$st" = 124
check "disk nearly full: one line says why" \
  test "$(grep -c "left on the trace's file system" "$work/err")" = 1
check "disk nearly full: trace readable and flagged" \
  grep -q "^flags  *truncated stopped" <("$WEFT" info "$work/full.wtr")

# A spool nobody salvaged (qemu run by hand, stopped at the plugin's size
# limit): weft salvage makes the trace, once, and replaces no trace.
plugin="${WEFT_PLUGIN:-$(dirname "$WEFT")/../tracer/libweft-tracer.so}"
run_status st timeout -s KILL 60 "$QEMU_AARCH64" -plugin "$plugin,out=$work/left.wtr,maxsize=65536" \
  "$WEFT_FIXTURES/fail_spin" >/dev/null 2>"$work/err"
check "left spool: qemu stopped at the limit (status $st)" test "$st" = 124 -a -e "$work/left.wtr.spool"
check "left spool: info says what to do" \
  grep -q "weft salvage makes one" <("$WEFT" info "$work/left.wtr.spool" 2>&1)
run_status st "$WEFT" salvage "$work/left.wtr.spool" 2>"$work/err"
check "salvage: status 0 (got $st)" test "$st" = 0
check "salvage: one line says what ($(head -c 120 "$work/err"))" \
  grep -Eq "left.wtr: [0-9]+ events of 2 threads salvaged, the run was stopped at a trace limit" "$work/err"
"$WEFT" info --no-vars "$work/left.wtr" >"$work/info" 2>&1
check "salvage: trace flagged truncated stopped" \
  grep -q "^flags  *truncated stopped" "$work/info"
check "salvage: exit status unknown" grep -q "^exit status  *unknown (salvaged afterwards)" "$work/info"
check "salvage: spool and buffers gone" test ! -e "$work/left.wtr.spool" -a ! -e "$work/left.wtr.live"
run_status st "$WEFT" salvage "$work/left.wtr" 2>"$work/err"
check "salvage again: status 1, one line ($st)" test "$st" = 1 -a "$(wc -l <"$work/err")" = 1
cp "$work/left.wtr" "$work/keep.wtr"
run_status st timeout -s KILL 60 "$QEMU_AARCH64" -plugin "$plugin,out=$work/left.wtr,maxsize=65536" \
  "$WEFT_FIXTURES/fail_spin" >/dev/null 2>&1
run_status st "$WEFT" salvage "$work/left.wtr" 2>"$work/err"
check "salvage over a trace: refused ($st): $(cat "$work/err")" \
  test "$st" = 1 -a -e "$work/left.wtr.spool" && cmp -s "$work/left.wtr" "$work/keep.wtr"

# --record keeps atomics and syscalls and drops plain reads (and writes).
col() { awk -v c="$2" '$1 ~ /^T[0-9]+$/ { s += $c } END { print s + 0 }' "$1"; }
for what in all sync+writes sync; do
  run_status st "$WEFT" trace --record "$what" -o "$work/r.wtr" -- "$WEFT_FIXTURES/lost_update" >/dev/null 2>&1
  "$WEFT" info "$work/r.wtr" >"$work/info.$what"
done
check "record all: plain reads recorded" test "$(col "$work/info.all" 8)" -gt 1000
check "record sync+writes: writes, no plain reads" \
  test "$(col "$work/info.sync+writes" 9)" -gt 1000 -a "$(col "$work/info.sync+writes" 8)" -lt 100
check "record sync: no plain writes either" test "$(col "$work/info.sync" 9)" -lt 100
check "record sync: atomics kept" test "$(col "$work/info.sync" 10)" = "$(col "$work/info.all" 10)"
check "record sync: info says what is missing" \
  grep -q "^recorded  *sync (plain reads and writes not recorded)" "$work/info.sync"
run_status st "$WEFT" trace --record everything -o "$work/r.wtr" -- "$WEFT_FIXTURES/lost_update"
check "record: a bad value is refused (status $st)" test "$st" = 2
finish
