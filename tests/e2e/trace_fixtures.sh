# weft trace on every fixture of the manifest (failure-mode fixtures have
# their own test): the guest behaves as under plain qemu, traces are
# reproducible (exact mode always; free mode on race-free fixtures), and the
# shared variables show the read/write patterns the fixtures document.
source "$(dirname "$0")/lib.sh"


# Patterns of Bhattacharya et al. Table 1 as the fixtures realize them (each fixture's
# header explains the mapping; T0 also reads the result at the end).
declare -A pattern=(
  [lost_update]='counter: T0 RR, T1 (RW)x50, T2 (RW)x50; write-write pairs: 2500 cross-thread'
  [paper_avn]='avn_sum: T0 WR, T1 RW, T2 RW; write-write pairs: 3 cross-thread'
  [paper_csd]='csd_count: T0 WWWR, T1 RW, T2 RWRW, T3 RRW; write-write pairs: 17 cross-thread'
  [paper_mm]='mm_sum: T0 WWWR, T2 RRWW, T3 RW; write-write pairs: 11 cross-thread'
  [paper_ac]='ac_area: T0 RWR, T1 RWWR, T2 RWRW, T3 RRW, T4 RW; write-write pairs: 19 cross-thread'
  [paper_cfft]='cfft_scale: T0 WR, T1 WRWR, T2 WR; write-write pairs: 5 cross-thread'
  [paper_cfft6]='cfft6_scale: T0 WRWRWRWRWR, T1 WRWRWR, T2 WR; write-write pairs: 23 cross-thread'
)

while IFS=$'\x1f' read -r fx threads kind depth expect args; do
  case "$fx" in '' | '#'*) continue ;; esac
  [ "$kind" = failure ] && continue
  bin="$WEFT_FIXTURES/$fx"
  read -r -a argv <<<"${args:-}"
  run_status plain_st "$QEMU_AARCH64" "$bin" "${argv[@]}" >"$work/plain.out" 2>/dev/null
  race_free=no
  [ "$kind" = control ] || [[ "$fx" == *_ok ]] && race_free=yes
  # wsq_ok is race-free in C11's sense, but its relaxed atomics compile to
  # plain loads and stores, which free mode does not order (README); so does
  # glibc's pthread_spin_lock wait in spinlock_ok (how long depends on the host).
  case "$fx" in wsq_ok | spinlock_ok) race_free=no ;; esac
  for mode in free exact; do
    run_status st "$WEFT" trace --mode "$mode" -o "$work/a.wtr" -- "$bin" "${argv[@]}" >"$work/a.out" 2>"$work/a.err"
    # Race-free fixtures must behave as a plain run in both modes. A racy
    # fixture's plain run races on the host (wsq's split of the items
    # depends on it), so in exact mode it must instead end as the ideal
    # platform makes it: the manifest's status (its output is checked for
    # reproducibility below).
    if [ "$race_free" = yes ]; then
      check "$fx/$mode: exit status equals plain qemu ($plain_st)" test "$st" = "$plain_st"
      check "$fx/$mode: output equals plain qemu" cmp -s "$work/a.out" "$work/plain.out"
    elif [ "$mode" = exact ]; then
      check "$fx/$mode: exit status is the manifest's ($expect, got $st)" test "$st" = "$expect"
    fi
    check "$fx/$mode: no stall escapes" grep -q "stall escapes 0;" "$work/a.err"
    if [ "$mode" = exact ] || [ "$race_free" = yes ]; then
      # stdout must go to the same kind of file: glibc buffers a pipe, a file
      # and /dev/null differently, and that is part of what the guest executes.
      run_status st2 "$WEFT" trace --mode "$mode" -o "$work/b.wtr" -- "$bin" "${argv[@]}" >"$work/b.out" 2>"$work/b.err"
      # A wait its timeout ended (sleep_ok's select and poll) or a read that
      # blocked (pipe_ok's reader) is the host's timing: the trace is flagged
      # unordered and weft says it may not repeat (docs/platform.md).
      if grep -q "flagged unordered" "$work/a.err" "$work/b.err"; then
        ok "$fx/$mode: flagged unordered, and said so: not compared byte for byte"
      else
        check "$fx/$mode: second trace byte-identical" cmp -s "$work/a.wtr" "$work/b.wtr"
      fi
      check "$fx/$mode: second run's output identical" \
        cmp -s "$work/a.out" "$work/b.out"
    fi
    "$WEFT" info "$work/a.wtr" >"$work/info.txt"
    n="$(grep -Ec '^  T[0-9]+ ' "$work/info.txt")"
    check "$fx/$mode: $threads threads (saw $n)" test "$n" = "$threads"
    if [ -n "${pattern[$fx]:-}" ] && [ "$mode" = exact ]; then
      check "$fx/$mode: ${pattern[$fx]%%;*}" grep -qF "  ${pattern[$fx]}" "$work/info.txt"
    fi
  done
done < <(sed 's/\t/\x1f/g' "$WEFT_SRC/fixtures/manifest.tsv")

# CSV export agrees with info on the lost update's accesses.
"$WEFT" trace --mode exact -o "$work/lu.wtr" -- "$WEFT_FIXTURES/lost_update" >/dev/null
"$WEFT" export --format csv -o "$work/lu.csv" "$work/lu.wtr"
for t in 1 2; do
  n="$(awk -F, -v t="$t" '$2 == t && $4 == "write" && $8 ~ /^counter(\+0)?$/' "$work/lu.csv" | wc -l)"
  check "csv: T$t writes counter 50 times (saw $n)" test "$n" = 50
done
# A device or FIFO is written as it is, with no temporary beside it.
run_status st "$WEFT" export --format csv -o /dev/null "$work/lu.wtr"
check "export -o /dev/null: status 0 ($st), no temporary left in /dev" \
  bash -c "[ $st = 0 ] && ! ls /dev/null.tmp.* >/dev/null 2>&1"
mkfifo "$work/fifo"
cat "$work/fifo" >"$work/fifo.csv" &
"$WEFT" export --format csv -o "$work/fifo" "$work/lu.wtr"
wait
check "export to a FIFO: the same CSV as to a file" cmp -s "$work/fifo.csv" "$work/lu.csv"
check "export to a FIFO: it stays a FIFO" test -p "$work/fifo"
# Every output is written through a link (such as /dev/stdout), never
# replaced by a file renamed over it; a trace refuses one.
ln -s /proc/self/fd/1 "$work/stdout-link"
"$WEFT" export --format csv -o "$work/stdout-link" "$work/lu.wtr" >"$work/via-link.csv"
check "export -o a link to stdout: the CSV on stdout, the link kept" \
  bash -c "cmp -s '$work/via-link.csv' '$work/lu.csv' && test -L '$work/stdout-link'"
"$WEFT" optimize -q -o "$work/stdout-link" "$work/lu.wtr" >"$work/plan-out.txt" 2>/dev/null
check "optimize -o a link to stdout: the plan on stdout, the link kept" \
  bash -c "grep -q '\"weft-plan\"' '$work/plan-out.txt' && test -L '$work/stdout-link'"
ln -s "$work/target.json" "$work/plan-link.json"
"$WEFT" optimize -q -o "$work/plan-link.json" "$work/lu.wtr" >/dev/null 2>&1
check "optimize -o a link to a new file: the plan in its target, the link kept" \
  bash -c "grep -q '\"weft-plan\"' '$work/target.json' && test -L '$work/plan-link.json'"
cat "$work/fifo" >"$work/races-fifo.txt" &
run_status st "$WEFT" races -o "$work/fifo" "$work/lu.wtr"
wait
check "races -o a FIFO: the report through it (status $st), still a FIFO" \
  bash -c "grep -q '^race 1 on counter' '$work/races-fifo.txt' && test -p '$work/fifo'"
ln -s "$work/lu.csv" "$work/trace-link.wtr"
run_status st "$WEFT" trace -o "$work/trace-link.wtr" -- "$WEFT_FIXTURES/lost_update" \
  >/dev/null 2>"$work/trace-link.err"
check "trace -o a link: refused in one line (status $st)" \
  bash -c "[ $st = 1 ] && [ \$(wc -l <'$work/trace-link.err') = 1 ] && grep -q 'not a regular file' '$work/trace-link.err'"
check "trace -o a link: the link and its target untouched" \
  bash -c "test -L '$work/trace-link.wtr' && cmp -s '$work/lu.csv' '$work/via-link.csv'"
# info --no-vars: the thread table from the footer's per-kind counts is the
# one the full pass counts; the variables are said to be left out.
"$WEFT" info "$work/lu.wtr" >"$work/lu.info"
"$WEFT" info --no-vars "$work/lu.wtr" >"$work/lu.fast"
check "info --no-vars: same thread table as the full pass" \
  cmp -s <(grep -E '^  T[0-9]+ ' "$work/lu.info") <(grep -E '^  T[0-9]+ ' "$work/lu.fast")
check "info --no-vars: says the variables were not computed" grep -q '^shared variables: not computed' "$work/lu.fast"
check "info: variables computed by default on a small trace" grep -q '^shared variables (' "$work/lu.info"
run_status st "$WEFT" info --vars --no-vars "$work/lu.wtr" 2>"$work/vv.err" >/dev/null
check "info --vars --no-vars: usage error (status $st)" test "$st" = 2
# Filters: only the named variable's accesses are recorded.
"$WEFT" trace --mode exact --filter var:counter -o "$work/v.wtr" -- "$WEFT_FIXTURES/lost_update" >/dev/null
"$WEFT" export --format csv -o "$work/v.csv" "$work/v.wtr"
other="$(awk -F, 'NR > 1 && ($4 == "read" || $4 == "write") && $8 !~ /^counter/' "$work/v.csv" | wc -l)"
mine="$(awk -F, 'NR > 1 && ($4 == "read" || $4 == "write") && $8 ~ /^counter/' "$work/v.csv" | wc -l)"
check "--filter var:counter keeps only counter ($mine kept, $other others)" test "$other" = 0 -a "$mine" -ge 200
# --max-events: recording stops after about N events (a buffer of 4096 per
# thread may go over), the guest runs to its end, the trace says truncated.
run_status st "$WEFT" trace --mode free --max-events 20000 -o "$work/m.wtr" -- "$WEFT_FIXTURES/parallel8" 400 >"$work/m.out" 2>"$work/m.err"
n="$("$WEFT" info "$work/m.wtr" | sed -n '1s/.*, \([0-9]*\) events).*/\1/p')"
check "--max-events 20000: $n events recorded (of ~205000)" test "$n" -ge 20000 -a "$n" -le $((20000 + 8 * 4096))
check "--max-events: guest ran to its end (status $st)" grep -q 'parallel8: 8 threads x 400 passes' "$work/m.out"
check "--max-events: trace flagged truncated" grep -q 'TRUNCATED' "$work/m.err"
check "--max-events: info --no-vars names the same last event" \
  cmp -s <("$WEFT" info "$work/m.wtr" | grep '^ended') <("$WEFT" info --no-vars "$work/m.wtr" | grep '^ended')
finish
