# A fork server translates what its children translated, so that the next
# children run on its translations (docs/replay.md, "The fork server"). A
# block's translation depends on its code, pc, flags and the campaign's
# instrumentation only, so which process made it must not show: the same
# seeds give the same runs.jsonl with it and without it
# (WEFT_SERVER_PRETRANSLATE=0), lazy runs and kept ones alike, and the kept
# traces are the same bytes.
source "$(dirname "$0")/lib.sh"

export WEFT_GUEST_ENV="WEFT_SERVER_PRETRANSLATE WEFT_PLUGIN_STATS"

# Each of the two servers serves half of each campaign's runs: all but its
# first on what the runs before them translated.
replay_cases_either_way WEFT_SERVER_PRETRANSLATE

# It was in use: the last run of one server (--jobs 1; every run kept, as
# none exits 99) translated a fraction of what it translates without it
# (statistics in its stderr).
translated() {
  WEFT_PLUGIN_STATS=1 WEFT_SERVER_PRETRANSLATE="$2" timeout -s KILL 120 "$WEFT" replay \
    --sched pct --depth 2 --runs 8 --jobs 1 --expect-exit 99 --save-trace --output "$work/$1" \
    -- "$WEFT_FIXTURES/lost_update" </dev/null >/dev/null 2>&1 || true
  grep -ho 'translated=[0-9]*' "$work/$1/traces/seed-8.stderr" 2>/dev/null | tail -1 | cut -d= -f2
}
on="$(translated stats-1 1)"
off="$(translated stats-0 0)"
check "the 8th run translated ${on:-?} blocks with it, ${off:-?} without" \
  test -n "$on" -a -n "$off" -a "$((${on:-1} * 4))" -lt "${off:-0}"

finish
