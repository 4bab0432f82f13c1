# A campaign's runs watch the C library's plain loads for spinning only in
# the blocks that close a short loop re-reading one word (libaccess=loops,
# docs/replay.md "Spinning"): glibc's pthread_spin_lock, spinning on a
# preempted holder, is still seen and demoted; with no block taken for a
# wait loop (WEFT_WAIT_LOOP_BYTES=0, a test's knob) the count of library
# blocks run without a write catches it. Without either, the spinner keeps
# the token until --timeout. The library's stores count as progress by
# block: poll_ok's workers, re-reading a setting with a memset between two
# reads, are never taken for spinners. The flags in a lazy run's trace
# header say what it left out; profiling's counting runs leave them out
# too, its learning runs not.
source "$(dirname "$0")/lib.sh"

# spin NAME POINTS [ENV...]: a PCT campaign of spinlock_ok; every run passes
# (no timeout) and some runs demoted a spinner.
spin() {
  local name="$1" points="$2" out="$work/$1"
  shift 2
  run_status st env "$@" "$WEFT" replay --sched pct --depth 3 --runs 20 --jobs 2 --timeout 20 -q \
    --points "$points" --output "$out" -- "$WEFT_FIXTURES/spinlock_ok" >/dev/null 2>"$out.log"
  check "$name: every run passes (status $st: $(jq -r .verdict "$out/runs.jsonl" | sort | uniq -c | xargs))" \
    test "$st $(jq -r .verdict "$out/runs.jsonl" | sort -u | tr '\n' ' ')" = "0 pass "
  check "$name: some runs demoted a spinner ($(jq -s 'map(select(.overrides > 0)) | length' "$out/runs.jsonl") of 20)" \
    test "$(jq -s 'map(select(.overrides > 0)) | length' "$out/runs.jsonl")" -gt 0
}
spin loops visible
spin blocks visible WEFT_WAIT_LOOP_BYTES=0 WEFT_GUEST_ENV=WEFT_WAIT_LOOP_BYTES
# --points shared: the library's atomics are points, its other loads as above.
spin shared shared
# A store inside the library between two reads is progress: no demotion
# (no starvation overrides either, so that any override is one).
run_status st "$WEFT" replay --sched pct --depth 3 --runs 6 --jobs 2 --starvation 0 --timeout 60 -q \
  --output "$work/poll" -- "$WEFT_FIXTURES/poll_ok" >/dev/null 2>"$work/poll.log"
check "poll: every run passes (status $st)" \
  test "$st $(jq -r .verdict "$work/poll/runs.jsonl" | sort -u | tr '\n' ' ')" = "0 pass "
check "poll: no run demoted a worker (overrides $(jq -r .overrides "$work/poll/runs.jsonl" | xargs))" \
  test "$(jq -s 'map(.overrides) | add' "$work/poll/runs.jsonl")" = 0

# Which watch relieved the spinner shows in virtual time: 1000 loads of the
# loop are a few thousand cycles, 2^20 library blocks over two million.
longest() { jq -s 'map(.makespan_ns) | max' "$work/$1/runs.jsonl"; }
check "loops: seen by its loads (longest run $(longest loops) ns)" test "$(longest loops)" -lt 1000000
check "blocks: seen by the block count (longest run $(longest blocks) ns)" test "$(longest blocks)" -gt 2000000

# One run as weft starts it, lazy and not: the header of the lazy one says
# libraries' loads were left out, the other recorded them.
plugin="${WEFT_PLUGIN:-$(dirname "$WEFT")/../tracer/libweft-tracer.so}"
args="sched=pct,seed=3,depth=2,steps=200,nthreads=3,points=visible,sync=0,libaccess=loops,argi=3"
for mode in lazy full; do
  extra=""
  [ "$mode" = lazy ] && extra=",lazy=1"
  run_status st timeout -s KILL 120 "$QEMU_AARCH64" -plugin \
    "$plugin,$args$extra,out=$work/$mode.wtr" "$WEFT_FIXTURES/spinlock_ok" >/dev/null 2>"$work/$mode.err"
  check "$mode: the run passed and wrote its trace (status $st)" test "$st" = 0 -a -f "$work/$mode.wtr"
  "$WEFT" info --no-vars "$work/$mode.wtr" >"$work/$mode.info" 2>&1 || true
done
check "lazy: the header says libraries' loads were left out" \
  grep -q "^recorded *libraries' plain loads only in blocks closing a wait loop" "$work/lazy.info"
check "lazy: ... and their stores" grep -q "^recorded *no plain stores of the libraries" "$work/lazy.info"
check "full: every load recorded" test -z "$(grep '^recorded' "$work/full.info")"

# Profiling: a learning run records every load (its races choose the
# points), a run that only counts steps (a points file given) does not.
run_status st "$WEFT" replay --sched pct --runs 1 --profile-runs 1 --save-trace --timeout 60 \
  --output "$work/learn" -- "$WEFT_FIXTURES/spinlock_ok" >/dev/null 2>&1
run_status st2 "$WEFT" replay --sched pct --runs 1 --profile-runs 1 --save-trace --timeout 60 \
  --points "visible:$work/learn/points.pcs" --output "$work/count" -- "$WEFT_FIXTURES/spinlock_ok" \
  >/dev/null 2>&1
"$WEFT" info --no-vars "$work/learn/profile-0-0.wtr" >"$work/learn.info" 2>&1 || true
"$WEFT" info --no-vars "$work/count/profile-0-0.wtr" >"$work/count.info" 2>&1 || true
check "profiling: both campaigns ran ($st, $st2)" test "$st $st2" = "0 0"
check "profiling: a learning run recorded every load" \
  test -s "$work/learn.info" -a -z "$(grep '^recorded' "$work/learn.info")"
check "profiling: a counting run left the libraries' loads out" \
  grep -q "^recorded *libraries' plain loads only" "$work/count.info"

# With a points file (--points shared, pcs:FILE) the rule holds as well.
run_status st timeout -s KILL 120 "$QEMU_AARCH64" -plugin \
  "$plugin,${args/points=visible/points=pcs:$work/learn/points.pcs},lazy=1,out=$work/pcs.wtr" \
  "$WEFT_FIXTURES/spinlock_ok" >/dev/null 2>"$work/pcs.err"
"$WEFT" info --no-vars "$work/pcs.wtr" >"$work/pcs.info" 2>&1 || true
check "points=pcs: the run passed (status $st)" test "$st" = 0
check "points=pcs: the libraries' loads left out" \
  grep -q "^recorded *libraries' plain loads only" "$work/pcs.info"

# k leaves out the steps a thread takes right after it yielded or was seen
# spinning: random schedules preempt the lock's holder at most of their
# steps, and the other worker spins far more than under PCT.
run_status st timeout -s KILL 120 "$WEFT" replay --sched random --runs 5 --jobs 2 \
  --output "$work/k" -- "$WEFT_FIXTURES/spinlock_ok" >"$work/k.log" 2>&1
k="$(jq -s '.[0].k' "$work/k/runs.jsonl" 2>/dev/null || echo 0)"
most="$(jq -s 'map(.steps) | max' "$work/k/runs.jsonl" 2>/dev/null || echo 0)"
check "k without spins: the campaign passes (status $st)" test "$st" = 0
# (random draws nothing from k and its plan line names none: campaign.json says where k came from.)
check "k without spins: campaign.json says so" \
  test "$(jq -r .k_source "$work/k/campaign.json")" = "the largest of 3 profiling runs' steps, without the steps of spinning or yielding threads"
check "k without spins: below the random runs' steps (k $k, most $most)" test "$k" -gt 0 -a "$k" -lt "$most"
# The profiling runs again (random, seeds 0..2, the learnt points): k is
# their largest count of steps less the steps after a yield or a spin.
for s in 0 1 2; do
  run_status st timeout -s KILL 120 "$WEFT" replay --sched random --seed "$s" --steps 1 --threads 3 \
    --points "visible:$work/k/points.pcs" --output "$work/k$s" -- "$WEFT_FIXTURES/spinlock_ok" \
    >/dev/null 2>&1
done
own="$(cat "$work"/k[012]/runs.jsonl | jq -s 'map(.steps - .yield_steps) | max')"
spun="$(cat "$work"/k[012]/runs.jsonl | jq -s 'map(.yield_steps) | min')"
check "k without spins: the profiling runs' largest own steps ($own)" test "$own" = "$k"
check "k without spins: each profiling run had steps after spins (fewest $spun)" test "$spun" -gt 0

finish
