# weft races on every fixture of fixtures/manifest.tsv, traced in exact
# mode: each documented data race is reported on its variable with both
# source lines (file:line of the two racing accesses, in the JSON and in
# the text), every race-free fixture (the *_ok twins, the controls, the
# deadlock programs, whose data the locks guard) gets none, and the
# failure fixtures' traces (crashed, killed, truncated) are read without
# error.
source "$(dirname "$0")/lib.sh"
: "${WEFT_SRC:?}"
command -v jq >/dev/null || { echo "races_fixtures: jq is missing"; exit 1; }

# fixture -> "variable|pattern A|pattern B": some race on the variable is
# between a line holding pattern A and a line holding pattern B (either
# order) of the fixture's source: the race its header documents.
declare -A race=(
  [lost_update]='counter|long v = counter;|counter = v + 1;'
  [paper_avn]='avn_sum|avn_sum = avn_sum + p;|avn_sum = avn_sum + p;'
  [paper_cfft]='cfft_scale|cfft_scale = cfft_gain(frame);|double g = cfft_scale;'
  [paper_cfft6]='cfft6_scale|cfft6_scale = cfft6_gain(frame);|double g = cfft6_scale;'
  [paper_ac]='ac_area|ac_area = ac_area + c;|if (ac_area + c <= AC_R * AC_R)'
  [paper_csd]='csd_count|csd_count = csd_count + c;|csd_count = csd_count + h1;'
  [paper_mm]='mm_sum|mm_sum = mm_sum + r1;|mm_sum = v + h2;'
  [order_violation]='ov_config|struct ov_config *c = ov_config;|ov_config = &ov_storage;'
  [atomicity_violation]='av_item|av_item = NULL;|struct av_record *it = av_item;'
  [wsq]='wsq_top|wsq_top = t + 1; /* BUG: must be CAS|long t = wsq_top;'
  [lock_one_side]='lo_balance|lo_balance = lo_balance + 1; /* BUG|lo_balance = lo_balance + 1;'
)
# A second documented race of the same fixture.
declare -A race2=(
  [paper_mm]='mm_dot|mm_dot = c11;|mm_dot = c00;'
  [wsq]='wsq_bottom|long b = wsq_bottom;|wsq_bottom = b;'
)

# lines FIXTURE PATTERN: the source lines holding PATTERN, as a JSON array.
lines() {
  grep -nF -- "$2" "$WEFT_SRC/fixtures/$1.c" | cut -d: -f1 | jq -s -c .
}

# expect_race FIXTURE SPEC JSON TEXT
expect_race() {
  local fx="$1" var a b la lb hit
  IFS='|' read -r var a b <<<"$2"
  la="$(lines "$fx" "$a")" lb="$(lines "$fx" "$b")"
  hit="$(jq -c --arg v "$var" --arg f "$fx.c" --argjson la "$la" --argjson lb "$lb" '
    [.races[] | select(.variable == $v and .offset == 0)
     | select((.first.file // "" | split("/") | last) == $f and (.second.file // "" | split("/") | last) == $f)
     | select(([.first.line] | inside($la)) and ([.second.line] | inside($lb))
           or ([.first.line] | inside($lb)) and ([.second.line] | inside($la)))
     | [.first.line, .second.line]] | first // empty' "$3")"
  if [ -n "$hit" ]; then
    ok "$fx: race on $var between lines $la and $lb (found $hit)"
    local l1 l2
    read -r l1 l2 < <(jq -r '"\(.[0]) \(.[1])"' <<<"$hit")
    check "$fx: the text names $fx.c:$l1" grep -qF "$fx.c:$l1)" "$4"
    check "$fx: the text names $fx.c:$l2" grep -qF "$fx.c:$l2)" "$4"
  else
    fail "$fx: no race on $var between lines $la and $lb; found: $(jq -c '[.races[] | [.variable, .first.line, .second.line]]' "$3")"
  fi
}

racy=0 clean=0
while IFS=$'\x1f' read -r fx threads kind depth expect args; do
  case "$fx" in '' | '#'*) continue ;; esac
  bin="$WEFT_FIXTURES/$fx"
  read -r -a argv <<<"${args:-}"
  # (the failure fixtures that never end are stopped after 5 s)
  run_status st "$WEFT" trace -q --mode exact --timeout 5 -o "$work/$fx.wtr" -- "$bin" "${argv[@]}" \
    >"$work/$fx.trace.out" 2>&1
  if [ ! -s "$work/$fx.wtr" ]; then
    fail "$fx: no trace (weft trace status $st)"
    continue
  fi
  run_status rs "$WEFT" races --json -o "$work/$fx.json" "$work/$fx.wtr" 2>"$work/$fx.err"
  run_status ts "$WEFT" races "$work/$fx.wtr" >"$work/$fx.txt" 2>>"$work/$fx.err"
  check "$fx: no error from weft races" test ! -s "$work/$fx.err"
  check "$fx: text and JSON agree on the status ($rs, $ts)" test "$rs" = "$ts"
  n="$(jq '.races | length' "$work/$fx.json" 2>/dev/null || echo none)"
  if [ "$kind" = failure ]; then
    check "$fx: read whatever the run did (status $rs: 0 or 10, $n races)" test "$rs" = 0 -o "$rs" = 10
  elif [ -n "${race[$fx]:-}" ]; then
    racy=$((racy + 1))
    check "$fx: races found, status 10 (got $rs)" test "$rs" = 10
    expect_race "$fx" "${race[$fx]}" "$work/$fx.json" "$work/$fx.txt"
    [ -z "${race2[$fx]:-}" ] || expect_race "$fx" "${race2[$fx]}" "$work/$fx.json" "$work/$fx.txt"
    check "$fx: a race per pc pair" \
      test "$(jq '[.races[] | [.first.pc, .second.pc] | sort] | unique | length' "$work/$fx.json")" = "$n"
  else
    clean=$((clean + 1))
    check "$fx: race-free, status 0 and no race (got $rs, $n races)" test "$rs" = 0 -a "$n" = 0
    check "$fx: the text says so" grep -q "^weft races: no data race in the traced schedule$" "$work/$fx.txt"
  fi
done < <(sed 's/\t/\x1f/g' "$WEFT_SRC/fixtures/manifest.tsv")
check "every documented race has a fixture that ran ($racy of ${#race[@]})" test "$racy" = "${#race[@]}"
check "race-free fixtures ran ($clean)" test "$clean" -ge 10
finish
