# Helpers for end-to-end tests. Every guest run goes through `timeout -s KILL`
# because a hung qemu ignores SIGTERM.
set -euo pipefail
: "${WEFT:?}" "${WEFT_FIXTURES:?}" "${QEMU_AARCH64:?}"
WEFT_TMP="${WEFT_TMP:-/tmp}"
mkdir -p "$WEFT_TMP"
# weft's own temporary folders (weft inject's runs) go there too, so that
# leftovers.sh can tell the suite's processes from anyone else's.
export TMPDIR="$WEFT_TMP"
# The guest's stdin must not depend on how the suite was started: a terminal
# or pipe rules out exact mode's speculation (and may be read).
exec </dev/null
work="$(mktemp -d "$WEFT_TMP/e2e.XXXXXX")"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# check NAME CMD...: run CMD, record pass/fail
# departed_seeds RUNS.JSONL...: the seeds whose runs report departures (a
# gate gave up waiting under a host stall: such a run left the policy's order
# and may not repeat by its seed, docs/replay.md).
departed_seeds() {
  jq -s -r '[.[] | select((.departures // 0) > 0) | .seed] | unique | join(" ")' "$@"
}
# runs_but "SEEDS" RUNS.JSONL: its lines without wall_s, the runs of SEEDS left out.
runs_but() {
  jq -c --arg d " $1 " 'select(.seed as $s | $d | contains(" \($s) ") | not) | del(.wall_s)' "$2"
}

check() {
  local name="$1"; shift
  if "$@"; then ok "$name"; else fail "$name"; fi
}

# run_status VAR CMD...: run CMD under a 120 s kill timer, store its status in VAR
run_status() {
  local __var="$1"; shift
  set +e
  timeout -s KILL 120 "$@"
  local __status=$?
  set -e
  printf -v "$__var" '%s' "$__status"
}

# same_either_way VAR NAME OPTIONS... -- PROGRAM ARGS: `weft replay` campaigns
# (--jobs 2) with VAR=0 and with VAR=1, lazy and then kept (--save-trace),
# give the same status, the same runs.jsonl (but for wall_s, trace and the
# runs of seeds that departed) and the same kept traces, byte for byte. VAR
# must be in WEFT_GUEST_ENV (both values have one length: the guest's
# environment is the same).
same_either_way() {
  local var="$1" name="$2"
  shift 2
  local kind
  for kind in lazy kept; do
    local a="$work/$name-$kind-0" b="$work/$name-$kind-1" save=() v
    [ "$kind" = kept ] && save=(--save-trace)
    for v in 0 1; do
      local dir="$work/$name-$kind-$v" st
      env "$var=$v" timeout -s KILL 120 "$WEFT" replay --jobs 2 --timeout 60 --output "$dir" \
        "${save[@]}" "$@" </dev/null >"$dir.log" 2>&1 && st=0 || st=$?
      echo "$st" >"$dir.status"
    done
    check "$name ($kind): same status ($(cat "$a.status"), $(cat "$b.status"))" \
      cmp -s "$a.status" "$b.status"
    local dep x y
    dep="$(departed_seeds "$a/runs.jsonl" "$b/runs.jsonl")"
    x="$(runs_but "$dep" "$a/runs.jsonl" | jq -c 'del(.trace)')"
    y="$(runs_but "$dep" "$b/runs.jsonl" | jq -c 'del(.trace)')"
    if [ -n "$x" ] && [ "$x" = "$y" ]; then
      ok "$name ($kind): the same $(wc -l <"$b/runs.jsonl") runs ($(jq -r .verdict "$b/runs.jsonl" | sort | uniq -c | xargs))"
    else
      fail "$name ($kind): runs.jsonl differs: $(diff <(echo "$x") <(echo "$y") | head -4)"
    fi
    if [ "$kind" = kept ]; then
      local t n=0 differ=""
      for t in "$a"/traces/*.wtr; do
        [ -e "$t" ] || continue
        n=$((n + 1))
        cmp -s "$t" "$b/traces/$(basename "$t")" || differ="$differ $(basename "$t")"
      done
      check "$name: the $n kept traces are the same bytes${differ:+ (not:$differ)}" test -z "$differ"
    fi
  done
}

# replay_cases_either_way VAR: same_either_way on campaigns of policies that
# run one thread at a time; passes, bugs, a deadlock, a crash, library
# spinlocks, polling workers (the spin watch's cases) and a dynamically
# linked program (the loader's entry runs before any callback).
replay_cases_either_way() {
  local var="$1"
  same_either_way "$var" lost_update --sched pct --depth 2 --runs 12 -- "$WEFT_FIXTURES/lost_update"
  same_either_way "$var" paper_mm --sched ppct --depth 2 --runs 8 -- "$WEFT_FIXTURES/paper_mm"
  same_either_way "$var" deadlock --sched random --depth 1 --points shared --runs 8 -- \
    "$WEFT_FIXTURES/deadlock_lock_order"
  same_either_way "$var" wsq --sched rpro --depth 2 --runs 8 -- "$WEFT_FIXTURES/wsq"
  same_either_way "$var" segv --sched pct --depth 1 --points none --runs 4 --expect-exit 139 -- \
    "$WEFT_FIXTURES/fail_segv"
  same_either_way "$var" spinlock --sched pct --depth 3 --runs 8 -- "$WEFT_FIXTURES/spinlock_ok"
  same_either_way "$var" poll --sched pct --depth 3 --starvation 0 --runs 6 -- \
    "$WEFT_FIXTURES/poll_ok"
  if [ -x "$WEFT_SYSROOT/lib/ld-linux-aarch64.so.1" ]; then
    same_either_way "$var" dynamic --sched pct --depth 2 --runs 8 --sysroot "$WEFT_SYSROOT" -- \
      "$WEFT_FIXTURES/lost_update_dynamic"
  else
    fail "no arm64 sysroot at $WEFT_SYSROOT (scripts/bootstrap makes it)"
  fi
}

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# user_cc FILE FLAGS...: build $work/FILE (NAME.c or NAME.cpp, a test's own
# probe) into $work/NAME as a user would, dynamic and position-independent,
# with gcc or g++ for AArch64; false, and a failure counted, if it cannot.
user_cc() {
  local src="$1" cc=aarch64-linux-gnu-gcc
  shift
  [ "${src##*.}" = cpp ] && cc=aarch64-linux-gnu-g++
  "$cc" "$@" -pthread -o "$work/${src%.*}" "$work/$src" 2>"$work/cc.log" && return 0
  fail "$cc cannot build $src: $(head -3 "$work/cc.log")"
  return 1
}

# cross_cc NAME: build $work/NAME.c (a test's own probe program, written
# there by the test) into a static AArch64 $work/NAME; a test that cannot
# fails and ends here.
cross_cc() {
  if ! aarch64-linux-gnu-gcc -static -pthread -O1 -o "$work/$1" "$work/$1.c" 2>"$work/cc.log"; then
    fail "the cross compiler failed: $(head -3 "$work/cc.log")"
    finish
    exit 1
  fi
}
