# In a replay, blocks without callbacks (and in a library without stores or
# a loop's back jump) count their instructions by an inline add instead of
# a callback (docs/replay.md, "Spinning"). The count must be exact: the same
# seeds give the same runs.jsonl with it and without it (WEFT_INLINE_BLOCKS=0),
# lazy runs and kept ones alike, and the kept traces are the same bytes
# (every event's virtual time included). The variable is set in both runs,
# with values of one length, so the guest's environment is the same.
source "$(dirname "$0")/lib.sh"

export WEFT_GUEST_ENV="WEFT_INLINE_BLOCKS WEFT_PLUGIN_STATS"

replay_cases_either_way WEFT_INLINE_BLOCKS

# It was in use: a run's statistics count the blocks translated so.
blocks() {
  WEFT_PLUGIN_STATS=1 WEFT_INLINE_BLOCKS="$2" "$WEFT" replay --sched pct --seed 3 --save-trace \
    --output "$work/$1" -- "$WEFT_FIXTURES/lost_update" </dev/null >/dev/null 2>&1 || true
  grep -ho 'inline_blocks=[0-9]*' "$work/$1"/traces/seed-3.stderr 2>/dev/null | tail -1 | cut -d= -f2
}
on="$(blocks stats-1 1)"
off="$(blocks stats-0 0)"
check "blocks counted inline: ${on:-none} with it, ${off:-none} without" \
  test -n "$on" -a -n "$off" -a "${on:-0}" -gt 0 -a "${off:-1}" -eq 0

finish
