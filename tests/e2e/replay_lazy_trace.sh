# A campaign without --save-trace keeps no trace, so its runs write only the
# trace's footer (lazy=1, docs/replay.md "What a run costs"): the same seeds
# give the same runs.jsonl lines as with --save-trace but for wall_s and
# trace (outcome, threads, makespan, steps, a deadlock's waits), through the
# fork server and with a qemu each; the footer-only trace says so; no run
# leaves a file behind. Profiling's learning runs stopped at their limit are
# read from their spools without --save-trace and salvaged into the kept
# traces with it: the same points either way.
source "$(dirname "$0")/lib.sh"

# same NAME OPTIONS... -- PROGRAM ARGS: with and without --save-trace.
same() {
  local name="$1" k="$work/$1-kept" l="$work/$1-lazy"
  shift
  run_status sk "$WEFT" replay --jobs 2 --timeout 60 --save-trace --output "$k" "$@" \
    </dev/null >"$k.log" 2>&1
  run_status sl "$WEFT" replay --jobs 2 --timeout 60 --output "$l" "$@" </dev/null >"$l.log" 2>&1
  check "$name: same status ($sk, $sl)" test "$sk" = "$sl"
  check "$name: runs.jsonl has lines" test -s "$l/runs.jsonl"
  local dep lines
  dep="$(departed_seeds "$k/runs.jsonl" "$l/runs.jsonl")"
  lines="$(wc -l <"$l/runs.jsonl")"
  check "$name: at most a quarter of the runs departed (${dep:-none})" \
    test "$(($(wc -w <<<"$dep") * 4))" -le "$lines"
  local a b
  a="$(runs_but "$dep" "$k/runs.jsonl" | jq -c 'del(.trace)')"
  b="$(runs_but "$dep" "$l/runs.jsonl" | jq -c 'del(.trace)')"
  if [ "$a" = "$b" ]; then
    ok "$name: the same $lines lines but wall_s and trace ($(jq -r .verdict "$l/runs.jsonl" | sort | uniq -c | xargs))"
  else
    fail "$name: runs.jsonl differs: $(diff <(echo "$a") <(echo "$b") | head -4)"
  fi
  if [ -e "$k/points.pcs" ]; then
    check "$name: the same points learnt ($(wc -l <"$l/points.pcs") pcs)" cmp -s "$k/points.pcs" "$l/points.pcs"
  fi
  check "$name: no trace kept without --save-trace" test ! -e "$l/traces"
  check "$name: no run left a file in tmp ($(ls "$l/tmp" 2>/dev/null | grep -v '^points' | head -3 | xargs))" \
    test -z "$(ls "$l/tmp" 2>/dev/null | grep -v '^points')"
}

# Passes and bugs, a deadlock (its waits come from the events, which a
# deadlocked run keeps), a crash, a livelock, several threads.
same lost_update --sched pct --depth 2 --runs 16 -- "$WEFT_FIXTURES/lost_update"
same deadlock --sched random --depth 1 --points shared --runs 12 -- \
  "$WEFT_FIXTURES/deadlock_lock_order"
same segv --sched pct --depth 1 --points none --runs 6 --expect-exit 139 -- \
  "$WEFT_FIXTURES/fail_segv"
same spin --sched random --depth 1 --points none --runs 4 -- "$WEFT_FIXTURES/fail_spin"
same paper_mm --sched ppct --depth 2 --runs 12 -- "$WEFT_FIXTURES/paper_mm"
# A lazy run does not see the library's loads outside wait loops nor its
# stores at all, one with --save-trace sees them but does not watch them
# (the stores are progress by block): the same schedules.
same spinlock --sched pct --depth 3 --runs 12 -- "$WEFT_FIXTURES/spinlock_ok"
same poll --sched pct --depth 3 --runs 6 -- "$WEFT_FIXTURES/poll_ok"
same plain --no-fork-server --sched pct --depth 2 --runs 8 -- "$WEFT_FIXTURES/lost_update"
# Every learning run stopped at its 2 KiB limit, four rounds.
same learn --learn-size 2K --sched pct --depth 2 --runs 8 -- "$WEFT_FIXTURES/wsq"
check "learn: the learning runs were stopped at the limit" \
  grep -q "flags *truncated stopped" <("$WEFT" info --no-vars "$work/learn-kept/profile-0-0.wtr" 2>&1)
# --learn-size 0: whole learning runs; wsq's are whole at the default too.
"$WEFT" replay --sched pct --runs 2 --learn-size 0 --output "$work/whole" -- "$WEFT_FIXTURES/wsq" \
  >"$work/whole.log" 2>&1
"$WEFT" replay --sched pct --runs 2 --output "$work/dflt" -- "$WEFT_FIXTURES/wsq" >"$work/dflt.log" 2>&1
check "--learn-size 0: the default's points" cmp -s "$work/whole/points.pcs" "$work/dflt/points.pcs"
check "--learn-size 0: the default's rounds ($(grep -o '([0-9]* rounds' "$work/whole.log"))" \
  test "$(grep -o '([0-9]* rounds' "$work/whole.log")" = "$(grep -o '([0-9]* rounds' "$work/dflt.log")"

# The footer-only trace of one lazy run, as the tracer leaves it (the plugin
# of the build tree, given the arguments weft would give it).
plugin="${WEFT_PLUGIN:-$(dirname "$WEFT")/../tracer/libweft-tracer.so}"
lazy="$work/lazy.wtr"
run_status st timeout -s KILL 120 "$QEMU_AARCH64" -plugin \
  "$plugin,sched=pct,seed=3,depth=2,steps=200,nthreads=3,sync=0,lazy=1,out=$lazy,argi=3" \
  "$WEFT_FIXTURES/lost_update" >/dev/null 2>"$work/lazy.err"
full="$work/full.wtr"
run_status sf timeout -s KILL 120 "$QEMU_AARCH64" -plugin \
  "$plugin,sched=pct,seed=3,depth=2,steps=200,nthreads=3,sync=0,out=$full,argi=3" \
  "$WEFT_FIXTURES/lost_update" >/dev/null 2>"$work/full.err"
check "lazy=1: the run wrote its trace ($st, $sf)" test -f "$lazy" -a -f "$full"
"$WEFT" info --no-vars "$lazy" >"$work/lazy.info" 2>&1 || true
"$WEFT" info --no-vars "$full" >"$work/full.info" 2>&1 || true
check "lazy=1: weft info says the events were not kept" grep -q "^events *not kept" "$work/lazy.info"
check "lazy=1: no events in the trace" grep -Eq "format [0-9]+, 0 events" "$work/lazy.info"
mk() { grep -m1 '^makespan' "$1"; }
check "lazy=1: the makespan of the full trace ($(mk "$work/lazy.info") vs $(mk "$work/full.info"))" \
  test -n "$(mk "$work/full.info")" -a "$(mk "$work/lazy.info")" = "$(mk "$work/full.info")"
check "lazy=1: small ($(stat -c %s "$lazy") vs $(stat -c %s "$full") bytes)" \
  test "$(stat -c %s "$lazy")" -lt "$(stat -c %s "$full")"

finish
