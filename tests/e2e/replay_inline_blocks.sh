# In a replay, blocks without callbacks (and in a library without stores or
# a loop's back jump) count their instructions by an inline add instead of
# a callback (docs/replay.md, "Spinning"). The count must be exact: the same
# seeds give the same runs.jsonl with it and without it (WEFT_INLINE_BLOCKS=0),
# lazy runs and kept ones alike, and the kept traces are the same bytes
# (every event's virtual time included). The variable is set in both runs,
# with values of one length, so the guest's environment is the same.
source "$(dirname "$0")/lib.sh"

export WEFT_GUEST_ENV="WEFT_INLINE_BLOCKS WEFT_PLUGIN_STATS"

# campaign DIR INLINE OPTIONS... -- PROGRAM ARGS
campaign() {
  local dir="$1" inline="$2"
  shift 2
  WEFT_INLINE_BLOCKS="$inline" run_status st "$WEFT" replay --jobs 2 --timeout 60 --output "$dir" \
    "$@" </dev/null >"$dir.log" 2>&1
  echo "$st" >"$dir.status"
}

# same NAME OPTIONS... -- PROGRAM ARGS: lazy runs, then kept ones, each
# with and without inline counting.
same() {
  local name="$1"
  shift
  local kind
  for kind in lazy kept; do
    local a="$work/$name-$kind-0" b="$work/$name-$kind-1" save=()
    [ "$kind" = kept ] && save=(--save-trace)
    campaign "$a" 0 "${save[@]}" "$@"
    campaign "$b" 1 "${save[@]}" "$@"
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

# Policies that run one thread at a time; passes, bugs, a deadlock, a crash,
# library spinlocks and polling workers (the spin watch's cases).
same lost_update --sched pct --depth 2 --runs 12 -- "$WEFT_FIXTURES/lost_update"
same paper_mm --sched ppct --depth 2 --runs 8 -- "$WEFT_FIXTURES/paper_mm"
same deadlock --sched random --depth 1 --points shared --runs 8 -- \
  "$WEFT_FIXTURES/deadlock_lock_order"
same wsq --sched rpro --depth 2 --runs 8 -- "$WEFT_FIXTURES/wsq"
same segv --sched pct --depth 1 --points none --runs 4 --expect-exit 139 -- \
  "$WEFT_FIXTURES/fail_segv"
same spinlock --sched pct --depth 3 --runs 8 -- "$WEFT_FIXTURES/spinlock_ok"
same poll --sched pct --depth 3 --starvation 0 --runs 6 -- "$WEFT_FIXTURES/poll_ok"
# Dynamically linked: the loader's entry runs before any callback.
if [ -x "$WEFT_SYSROOT/lib/ld-linux-aarch64.so.1" ]; then
  same dynamic --sched pct --depth 2 --runs 8 --sysroot "$WEFT_SYSROOT" -- \
    "$WEFT_FIXTURES/lost_update_dynamic"
else
  fail "no arm64 sysroot at $WEFT_SYSROOT (scripts/bootstrap makes it)"
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
