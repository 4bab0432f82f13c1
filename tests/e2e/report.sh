# weft report: one self-contained HTML page from a demo folder and from a
# campaign folder. Headless Chromium renders it: the screenshot is a PNG of
# the asked size showing many colours, among them the timeline's and the
# plots'. The page holds the timeline SVG, the plots, every failing seed
# with its reproduction command, and nothing from the network.
source "$(dirname "$0")/lib.sh"
fx="$WEFT_FIXTURES/lost_update"
chromium="$(command -v chromium || command -v chromium-browser || true)"

set +e
timeout -s KILL 400 "$WEFT" demo --runs 20 --search-runs 4 --jobs 2 -o "$work/d" >"$work/d.log" 2>&1
st=$?
set -e
check "demo for the report: status 0 (got $st)" test "$st" = 0
run_status st "$WEFT" report -o "$work/r.html" "$work/d" >"$work/r.log" 2>&1
check "report: status 0 (got $st)" test "$st" = 0
check "report: says where" grep -q "report written: $work/r.html" "$work/r.log"
html="$work/r.html"
check "one HTML document" test "$(head -c 15 "$html")$(tail -n 1 "$html")" = "<!DOCTYPE html></html>"
for id in timeline conv boxes rates; do
  check "has the $id SVG inline" grep -q "<svg id='$id'" "$html"
done
check "timeline marks the planned pair and the collision" \
  test "$(grep -c 'planned collision at\|collision at [0-9]* ns' "$html")" -ge 2
check "Table 1 pattern of counter" grep -q "<code>counter</code>: T0 RR, T1 (RW)x50, T2 (RW)x50" "$html"
check "no network reference" test "$(grep -Eci 'https?://' "$html")" = 0
check "no script, stylesheet link or external image" test "$(grep -Eci '<script|<link|<img|src=' "$html")" = 0
check "no temporary file left" test -z "$(ls "$work"/r.html.tmp.* 2>/dev/null)"
for p in pct ppct rpro; do
  seeds="$(jq -r 'select(.verdict != "pass") | .seed' "$work/d/replay-$p/runs.jsonl" | head -25)"
  for s in $seeds; do
    check "$p failing seed $s listed with its command" \
      grep -q "<td class='seed'>$s</td>.*weft replay --sched $p --depth 2 .*--seed $s " <(tr -d '\n' <"$html" | sed 's/<tr>/\n<tr>/g')
  done
done
check "some failing seed listed" grep -q "<td class='seed'>" "$html"

# Rendered by headless Chromium.
if [ -z "$chromium" ]; then
  fail "chromium is not installed (scripts/bootstrap installs it)"
else
  shoot() { # html png height
    timeout -s KILL 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
      --user-data-dir="$work/chrome" --screenshot="$2" --window-size="1280,$3" "file://$1" \
      >"$work/chromium.log" 2>&1 || true
  }
  shoot "$html" "$work/shot.png" 3200
  check "screenshot written" test -s "$work/shot.png"
  check "screenshot: PNG of 1280x3200" test "$(identify -format '%m %w %h' "$work/shot.png")" = "PNG 1280 3200"
  colours="$(identify -format '%k' "$work/shot.png")"
  check "screenshot: not blank ($colours colours)" test "$colours" -ge 200
  convert "$work/shot.png" -format %c histogram:info:- >"$work/hist.txt"
  check "screenshot shows the timeline's shared writes (#1F5FBF)" grep -qi "#1F5FBF" "$work/hist.txt"
  check "screenshot shows the planned pair (#D62828)" grep -qi "#D62828" "$work/hist.txt"
  check "screenshot shows a plot's SHC series (#2A9D8F)" grep -qi "#2A9D8F" "$work/hist.txt"
fi

# A single campaign folder: its hit rate, its failing seeds, the timeline
# of its first failing schedule's saved trace.
run_status st "$WEFT" replay --sched pct --depth 2 --runs 20 --jobs 2 --save-trace -q -o "$work/c" -- "$fx" >/dev/null 2>&1
run_status st "$WEFT" report "$work/c" >/dev/null 2>"$work/c.err"
check "campaign report: status 0 (got $st)" test "$st" = 0
check "campaign report: rates plot" grep -q "<svg id='rates'" "$work/c/report.html"
first="$(jq -r 'select(.verdict != "pass") | .seed' "$work/c/runs.jsonl" | head -1)"
check "campaign report: the first failing schedule's timeline" \
  grep -q "failing schedule: pct seed $first (bug)" "$work/c/report.html"
check "campaign report: its reproduction command" grep -q -- "--seed $first --save-trace" "$work/c/report.html"

# Bad input: one line, status 1 (2 for the command line).
run_status st "$WEFT" report "$work/nonexistent" >/dev/null 2>"$work/e"
check "missing folder: status 1, one line" test "$st $(wc -l <"$work/e")" = "1 1"
mkdir -p "$work/empty"
run_status st "$WEFT" report "$work/empty" >/dev/null 2>"$work/e"
check "folder without outputs: status 1, one line" test "$st $(wc -l <"$work/e")" = "1 1"
run_status st "$WEFT" report >/dev/null 2>"$work/e"
check "no folder: status 2" test "$st" = 2
check "report --help" bash -c "'$WEFT' report --help | grep -q 'self-contained HTML'"
check "weft --help lists report and merge" \
  test "$("$WEFT" --help | grep -Ec '^  (report|merge) ')" = 2
finish
