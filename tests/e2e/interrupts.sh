# Nothing lost: SIGINT/SIGTERM to `weft trace` on a guest that would run
# for a long time ends the guest at once, keeps what was recorded as a
# readable trace flagged truncated, exits 130 and leaves neither qemu nor a
# spool or temporary file behind; SIGKILL to weft takes qemu with it; and
# output files (traces, exports, plans) are replaced atomically, so a kill
# at any moment leaves the old content or the complete new one.
source "$(dirname "$0")/lib.sh"
cd "$work"

# start VAR CMD...: run CMD in the background under a 120 s kill timer,
# store the pid of CMD itself (not of timeout) in VAR.
start() {
  local __var="$1"; shift
  timeout -s KILL 120 "$@" >"$work/out" 2>"$work/err" &
  local tpid=$! child=""
  for _ in $(seq 200); do
    child="$(pgrep -P "$tpid" || true)"
    [ -n "$child" ] && break
    sleep 0.01
  done
  printf -v "$__var" '%s' "${child:-$tpid}"
  printf -v "${__var}_timer" '%s' "$tpid"
}
# finish_bg PID TIMER: wait for the background command; its status in $st
# and the seconds it took in $took.
finish_bg() {
  local t0 t1
  t0=$(date +%s.%N)
  set +e
  { wait "$2"; } 2>/dev/null # no "Killed" notices from the shell
  st=$?
  set -e
  t1=$(date +%s.%N)
  took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
}
# wait_for FILE [BYTES]: until FILE holds more than BYTES (4096; at most
# 120 s: exact mode on 8 threads is slow on a loaded machine).
wait_for() {
  for _ in $(seq 1200); do
    [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -gt "${2:-4096}" ] && return 0
    sleep 0.1
  done
  return 1
}
# wait_for_match DIR REGEX: until a file of DIR matches REGEX (at most 120 s).
wait_for_match() {
  for _ in $(seq 1200); do
    ls "$1" 2>/dev/null | grep -q "$2" && return 0
    sleep 0.1
  done
  return 1
}
no_qemu() { ! pgrep -f "qemu-aarch6[4].*$work" >/dev/null; }
# no_qemu_within S: no qemu of this test is left after at most S seconds.
no_qemu_within() {
  for _ in $(seq $(($1 * 10))); do
    no_qemu && return 0
    sleep 0.1
  done
  return 1
}

# ---- SIGINT and SIGTERM to weft trace --------------------------------------------
# NAME SIGNAL THREADS MODE SPOOL FIXTURE ARGS...: signal weft once the spool
# holds SPOOL bytes (then all THREADS threads have recorded something).
# fail_spin never ends; parallel8 with 10^7 passes runs for hours.
interrupt() {
  local name="$1" sig="$2" threads="$3" mode="$4" spool="$5"; shift 5
  local trace="$work/$name.wtr" num
  num=$(kill -l "$sig")
  start pid "$WEFT" trace --mode "$mode" --timeout 100 -o "$trace" -- "$@"
  check "$name: the guest is recording" wait_for "$trace.spool" "$spool"
  sleep 0.3
  kill -"$sig" "$pid"
  finish_bg "$pid" "$pid_timer"
  check "$name: exit 128+$num (got $st)" test "$st" = $((128 + num))
  check "$name: ends within 20 s of the signal (took ${took}s)" awk -v t="$took" 'BEGIN { exit !(t < 20) }'
  check "$name: says so" grep -qx "weft: interrupted by signal $num; guest killed" "$work/err"
  check "$name: no qemu left" no_qemu
  check "$name: no spool or temporary file left" test "$(ls "$work" | grep -c "^$name\.wtr\.")" = 0
  if "$WEFT" info "$trace" >"$work/info" 2>"$work/err"; then
    ok "$name: the salvaged trace reads"
  else
    fail "$name: the salvaged trace reads: $(cat "$work/err")"
  fi
  check "$name: flagged truncated" grep -Eq '^flags +truncated' "$work/info"
  check "$name: outcome is the signal" grep -Eq "^exit status +killed by signal $num\$" "$work/info"
  local n events
  n="$(grep -Ec '^  T[0-9]+ ' "$work/info" || true)"
  check "$name: at least $threads threads recorded (saw $n)" test "$n" -ge "$threads"
  events="$(sed -n 's/^trace .*(format [0-9]*, \([0-9]*\) events)$/\1/p' "$work/info")"
  check "$name: events recorded (${events:-none})" test "${events:-0}" -gt 1000
  rm -f "$trace"
}
interrupt spin_int INT 2 free 4096 "$WEFT_FIXTURES/fail_spin"
interrupt spin_term TERM 2 free 4096 "$WEFT_FIXTURES/fail_spin"
interrupt par8_int INT 8 exact 600000 "$WEFT_FIXTURES/parallel8" 10000000
interrupt par8_term TERM 8 free 600000 "$WEFT_FIXTURES/parallel8" 10000000

# Ctrl-C in a terminal: SIGINT to weft's whole process group (qemu runs in
# a group of its own, so only weft gets it and must pass it on).
timeout -s KILL 120 setsid "$WEFT" trace --timeout 100 -o "$work/ctrlc.wtr" -- "$WEFT_FIXTURES/fail_spin" \
  >"$work/out" 2>"$work/err" &
tpid=$!
check "ctrl-c: the guest is recording" wait_for "$work/ctrlc.wtr.spool"
wpid="$(pgrep -P "$tpid" || true)"
kill -INT -- -"${wpid:-$tpid}"
finish_bg "$wpid" "$tpid"
check "ctrl-c: exit 130 (got $st)" test "$st" = 130
check "ctrl-c: no qemu left" no_qemu
check "ctrl-c: truncated trace reads" bash -c "'$WEFT' info '$work/ctrlc.wtr' | grep -Eq '^flags +truncated'"
rm -f "$work"/ctrlc.wtr*

# A second signal while weft salvages the first run's spool (a big one:
# fail_spin free records ~50 MB/s) does not cut the salvage short.
start pid "$WEFT" trace --timeout 100 -o "$work/twice.wtr" -- "$WEFT_FIXTURES/fail_spin"
check "signal twice: the guest is recording" wait_for "$work/twice.wtr.spool"
sleep 1
kill -INT "$pid"
sleep 0.2
kill -TERM "$pid" 2>/dev/null || true
finish_bg "$pid" "$pid_timer"
check "signal twice: exit 130, the first signal's (got $st)" test "$st" = 130
check "signal twice: no qemu left" no_qemu
check "signal twice: the trace reads" bash -c "'$WEFT' info '$work/twice.wtr' >/dev/null"
check "signal twice: no spool or temporary file left" test "$(ls "$work" | grep -c '^twice\.wtr\.')" = 0
rm -f "$work"/twice.wtr*

# SIGKILL to weft: no handler runs, but qemu must not live on without its
# time limit (it dies with its parent); the path holds no partial trace.
start pid "$WEFT" trace --timeout 100 -o "$work/kill.wtr" -- "$WEFT_FIXTURES/fail_spin"
check "SIGKILL: the guest is recording" wait_for "$work/kill.wtr.spool"
kill -KILL "$pid"
finish_bg "$pid" "$pid_timer"
check "SIGKILL: qemu gone within 5 s" no_qemu_within 5
check "SIGKILL: no trace at the path" test ! -e "$work/kill.wtr"
rm -f "$work"/kill.wtr*

# ---- SIGTERM and SIGINT to weft replay while it profiles ------------------------------
# parallel8 with 10^7 passes runs for hours: its profiling rounds (two runs
# side by side with --jobs 2, or one after the other) never end by
# themselves. The signal ends them at once, with one line, 128+signal, and
# no qemu left.
for case in "TERM 2" "INT 1"; do
  read -r sig jobs <<<"$case"
  num=$(kill -l "$sig")
  start pid "$WEFT" replay --sched pct --runs 1 --jobs "$jobs" --timeout 100 \
    -o "$work/prof-$sig" -- "$WEFT_FIXTURES/parallel8" 10000000
  check "profiling, SIG$sig, --jobs $jobs: the guests are running" \
    wait_for_match "$work/prof-$sig/tmp" 'profile-[0-9]*-[0-9]*\.wtr'
  sleep 1
  kill -"$sig" "$pid"
  finish_bg "$pid" "$pid_timer"
  check "profiling, SIG$sig: exit 128+$num (got $st)" test "$st" = $((128 + num))
  check "profiling, SIG$sig: ends within 20 s (took ${took}s)" awk -v t="$took" 'BEGIN { exit !(t < 20) }'
  check "profiling, SIG$sig: says so in one line" \
    test "$(grep -c "^weft: interrupted while profiling$" "$work/err")" = 1
  check "profiling, SIG$sig: no qemu left" no_qemu_within 5
done

# ---- atomic replacement -------------------------------------------------------------
# kill_at NAME SIGNAL TARGET REFERENCE SECONDS CMD...: with TARGET holding
# "old", CMD (writing TARGET, SECONDS long) is killed at fractions of its
# run time, most near the end, where the rename is; each time TARGET must
# hold "old" or exactly REFERENCE, never anything else.
kill_at() {
  local name="$1" sig="$2" target="$3" ref="$4" secs="$5"; shift 5
  local d f bad=0 old=0 new=0
  for f in 0.01 0.3 0.6 0.8 0.9 0.95 1.0 1.05 1.1 1.3; do
    d=$(awk -v s="$secs" -v f="$f" 'BEGIN { printf "%.3f", s * f }')
    echo old >"$target"
    start pid "$@"
    sleep "$d"
    kill -"$sig" "$pid" 2>/dev/null || true
    finish_bg "$pid" "$pid_timer"
    if [ "$(cat "$target")" = old ]; then
      old=$((old + 1))
    elif cmp -s "$target" "$ref"; then
      new=$((new + 1))
    else
      bad=$((bad + 1))
      echo "  $name: after ${d}s: $(stat -c %s "$target") bytes, neither old nor complete"
    fi
  done
  check "$name: the target is always old or complete ($old old, $new new, $bad torn)" test "$bad" = 0
  check "$name: some kill came before the rename" test "$old" -gt 0
}

# Long enough an export (a third of a second) that a kill lands before its
# rename on a loaded machine too, where finding the process takes a while.
run_status st "$WEFT" trace -q -o p8.wtr -- "$WEFT_FIXTURES/parallel8" 600 >/dev/null
check "setup: a trace of parallel8 (status $st)" test "$st" = 0
# timed VAR CMD...: run CMD (status in $st), its wall time in seconds in VAR.
timed() {
  local __var="$1" t0 t1; shift
  t0=$(date +%s.%N)
  run_status st "$@" >/dev/null
  t1=$(date +%s.%N)
  printf -v "$__var" '%s' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
}
timed secs "$WEFT" export -o ref.json p8.wtr
check "setup: its export ($(stat -c %s ref.json 2>/dev/null) bytes in ${secs}s)" test "$st" = 0 -a -s ref.json
kill_at "export, SIGKILL" KILL x.json ref.json "$secs" "$WEFT" export -o x.json p8.wtr
rm -f x.json.tmp.* # SIGKILL cannot clean up
kill_at "export, SIGINT" INT x.json ref.json "$secs" "$WEFT" export -o x.json p8.wtr
check "export, SIGINT: no temporary file left" test "$(ls | grep -c '^x\.json\.tmp')" = 0

cp "$WEFT_FIXTURES/lost_update" lu
run_status st "$WEFT" trace -q --mode exact -o lu.wtr -- ./lu >/dev/null
# The search: deterministic for a seed, a few seconds long.
plan=(optimize lu.wtr --algo rnd --seed 5 --runs 4)
timed secs "$WEFT" "${plan[@]}" -o ref.plan
check "setup: a reference plan (status $st, ${secs}s)" test "$st" = 0 -a -s ref.plan
kill_at "optimize, SIGKILL" KILL x.plan ref.plan "$secs" "$WEFT" "${plan[@]}" -o x.plan

# A trace path that already holds a trace: SIGINT at any moment leaves the
# old trace or a complete (possibly truncated) new one, never a torn file.
cp lu.wtr old.wtr
torn=0
for d in 0.05 0.2 0.4 0.8; do
  cp old.wtr cur.wtr
  start pid "$WEFT" trace --mode exact --timeout 100 -o cur.wtr -- "$WEFT_FIXTURES/parallel8" 30
  sleep "$d"
  kill -INT "$pid" 2>/dev/null || true
  finish_bg "$pid" "$pid_timer"
  "$WEFT" info cur.wtr >/dev/null 2>&1 || torn=$((torn + 1))
done
check "trace, SIGINT over an old trace: always a readable trace ($torn not)" test "$torn" = 0
check "trace, SIGINT: no spool or temporary file left" test "$(ls | grep -c '^cur\.wtr\.')" = 0

sleep 0.2
check "no qemu left behind" no_qemu
# weft ran in $work with relative paths: look for a process working there.
left=""
for p in $(pgrep -f "^$WEFT " || true); do
  [ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$work" ] && left+=" $p"
done
check "no weft left behind${left:+ (pids$left)}" test -z "$left"
cd /
finish
