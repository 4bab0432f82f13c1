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

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
