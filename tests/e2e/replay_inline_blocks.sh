# In a replay, blocks without callbacks (and in a library without stores or
# a loop's back jump) count their instructions by an inline add instead of
# a callback (docs/replay.md, "Spinning"). The count must be exact: the same
# seeds give the same runs.jsonl with it and without it (WEFT_INLINE_BLOCKS=0),
# lazy runs and kept ones alike, and the kept traces are the same bytes
# (every event's virtual time included). The variable is set in both runs,
# with values of one length, so the guest's environment is the same; so is
# WEFT_HOST_DELAY below, which must change nothing either.
source "$(dirname "$0")/lib.sh"

export WEFT_GUEST_ENV="WEFT_INLINE_BLOCKS WEFT_PLUGIN_STATS WEFT_HOST_DELAY"

replay_cases_either_way WEFT_INLINE_BLOCKS

# The count is one thread's however the host schedules: WEFT_HOST_DELAY=1
# keeps a thread off the core for 2 ms after each syscall returns and before
# a new thread's first block, while the holder runs on. Those instructions
# were counted to the sleeper (a new thread, or one woken from a futex), and
# the campaigns differed in every case below; on a loaded machine it
# happened now and then by itself.
same_either_way WEFT_HOST_DELAY delayed-wsq --sched rpro --depth 2 --runs 8 -- "$WEFT_FIXTURES/wsq"
same_either_way WEFT_HOST_DELAY delayed-lost_update --sched pct --depth 2 --runs 12 -- \
  "$WEFT_FIXTURES/lost_update"
same_either_way WEFT_HOST_DELAY delayed-deadlock --sched random --depth 1 --points shared --runs 8 -- \
  "$WEFT_FIXTURES/deadlock_lock_order"
if [ -x "$WEFT_SYSROOT/lib/ld-linux-aarch64.so.1" ]; then
  same_either_way WEFT_HOST_DELAY delayed-dynamic --sched pct --depth 2 --runs 8 --sysroot "$WEFT_SYSROOT" -- \
    "$WEFT_FIXTURES/lost_update_dynamic"
fi

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
