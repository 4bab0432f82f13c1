# weft optimize / weft inject on bad input: one line naming the input, exit 1.
source "$(dirname "$0")/lib.sh"

# one_line NAME WANT-STATUS TEXT CMD...: CMD fails with one stderr line holding TEXT
one_line() {
  local name="$1" want="$2" text="$3"; shift 3
  run_status st "$@" >"$work/out" 2>"$work/err"
  check "$name: exit $want (got $st)" test "$st" = "$want"
  check "$name: one line" test "$(wc -l <"$work/err")" = 1
  check "$name: says '$text'" grep -qF -- "$text" "$work/err"
}

run_status st "$WEFT" trace -q --mode exact -o "$work/lu.wtr" -- "$WEFT_FIXTURES/lost_update"
"$WEFT" optimize "$work/lu.wtr" -o "$work/lu.json" >/dev/null

# Build-id mismatch: a plan for lost_update refused for paper_avn.
one_line "build-id mismatch" 1 "build-id" "$WEFT" inject "$work/lu.json" -- "$WEFT_FIXTURES/paper_avn"
check "build-id mismatch: nothing ran" test ! -s "$work/out"

# Malformed plans: the parser's one line, naming the file and the problem.
printf '{"format": "weft-plan", "version": 1,\n' >"$work/trunc.json"
one_line "truncated JSON" 1 "trunc.json: line" "$WEFT" inject "$work/trunc.json"
sed 's/"delay_insns": [0-9]*/"delay_insns": 7/' "$work/lu.json" >"$work/insns.json"
one_line "inconsistent delay_insns" 1 "insns.json: injections[0].delay_insns:" "$WEFT" inject "$work/insns.json"
sed 's/"version": 1/"version": 2/' "$work/lu.json" >"$work/v2.json"
one_line "future version" 1 "v2.json: version:" "$WEFT" inject "$work/v2.json"
one_line "missing plan" 1 "nosuch.json" "$WEFT" inject "$work/nosuch.json"

# Traces: missing, truncated, corrupt.
one_line "missing trace" 1 "nosuch.wtr: cannot open" "$WEFT" optimize "$work/nosuch.wtr"
sz=$(stat -c %s "$work/lu.wtr")
head -c $((sz / 2)) "$work/lu.wtr" >"$work/half.wtr"
one_line "truncated trace" 1 "half.wtr: truncated" "$WEFT" optimize "$work/half.wtr" -o "$work/p.json"
cp "$work/lu.wtr" "$work/flip.wtr"
printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$work/flip.wtr" bs=1 seek=$((sz / 3)) conv=notrunc 2>/dev/null
one_line "corrupt trace" 1 "flip.wtr: corrupt" "$WEFT" optimize "$work/flip.wtr" -o "$work/p.json"
check "corrupt trace: no plan" test ! -e "$work/p.json"
one_line "not a trace" 1 "optimize_errors.sh" "$WEFT" optimize "$0"

# Output that cannot be written: refused before any work.
one_line "unwritable -o" 1 "cannot write there" "$WEFT" optimize "$work/lu.wtr" -o "$work/no/such/dir/p.json"
one_line "unwritable --stats-json" 1 "cannot write there" "$WEFT" optimize "$work/lu.wtr" --algo sa --stats-json "$work/no/dir/s.json"

# Usage errors: exit 2, one line.
one_line "bad --algo" 2 "--algo: expected exact, sa, shc or rnd" "$WEFT" optimize "$work/lu.wtr" --algo ga
one_line "bad --dmax" 2 "--dmax: expected a number" "$WEFT" optimize "$work/lu.wtr" --dmax -3
one_line "no trace" 2 "no trace given" "$WEFT" optimize
one_line "no plan" 2 "no plan given" "$WEFT" inject
one_line "bad --refine" 2 "--refine: expected a number" "$WEFT" inject "$work/lu.json" --refine x
check "optimize --help" "$WEFT" optimize --help
check "inject --help" "$WEFT" inject --help
finish
