# weft report: one self-contained HTML page from a demo folder and from a
# campaign folder. Headless Chromium renders it: the screenshot is a PNG of
# the asked size showing many colours, among them the timeline's and the
# plots'. The page holds the timeline SVG and the plots, each plot and table
# with a caption; the convergence plot says what its axes are and where each
# search aligned; intervals are named; each policy's failing seeds are
# listed, the first few in view and the rest under <details>, with one
# reproduction command; RPro at depth 2 is said to be PCT; nothing comes from
# the network. Nothing a user reads (the page, weft --help, weft help CMD)
# cites a paper by its file number ("seed 004") or by figure or section.
source "$(dirname "$0")/lib.sh"
fx="$WEFT_FIXTURES/lost_update"
chromium="$(command -v chromium || command -v chromium-browser || true)"
shown=5 # failing seeds per policy in view (report/page.c)

# The part of "Failing schedules" about one policy: from its heading to the
# next heading.
policy_part() { # html policy
  awk -v h="<h3>$2, depth" 'index($0, h) == 1 { on = 1; print; next }
    on && /^<h[23]>/ { exit } on { print }' "$1"
}

# Each policy's failing seeds: the first $shown in the table, the rest under
# <details>, exactly one reproduction command, for the first failing seed.
check_failures() { # html campaign-dir policy label
  local html="$1" dir="$2" p="$3" what="$4" part seeds n first
  part="$work/part-$what-$p.html"
  policy_part "$html" "$p" >"$part"
  seeds="$(jq -r 'select(.verdict != "pass") | .seed' "$dir/runs.jsonl")"
  n="$(echo "$seeds" | grep -c . || true)"
  check "$what: $p has a failing-schedules part" test -s "$part"
  [ "$n" -gt 0 ] || return 0
  first="$(echo "$seeds" | head -1)"
  for s in $seeds; do
    check "$what: $p failing seed $s listed" grep -q "<td class='seed'>$s</td>" "$part"
  done
  check "$what: $p has one reproduction command" test "$(count "<pre class='repro'>" "$part")" = 1
  check "$what: $p's command replays its first failing seed $first" \
    grep -q "<pre class='repro'>weft replay --sched $p .*--seed $first --save-trace" "$part"
  if [ "$n" -gt "$shown" ]; then
    check "$what: $p folds $((n - shown)) seeds under <details>" \
      grep -q "<details><summary>$((n - shown)) more failing seed" "$part"
    check "$what: $p shows $shown seeds before <details>" \
      test "$(sed -n '/<details>/q;p' "$part" | grep -c "<td class='seed'>")" = "$shown"
  else
    check "$what: $p has no <details> for $n seeds" test "$(count '<details>' "$part")" = 0
  fi
}

count() { # string file: occurrences, several on a line counted
  grep -o -- "$1" "$2" | wc -l || true
}

# Every plot and table (but the folded ones) is a figure with a caption.
check_captions() { # html label
  local svgs tables more caps
  svgs="$(count "<svg id='" "$1")"
  tables="$(count "<table" "$1")"
  more="$(count "<table class='fails more'" "$1")"
  caps="$(count "<figcaption>" "$1")"
  check "$2: a caption per plot and table ($svgs plots, $((tables - more)) tables, $caps captions)" \
    test "$caps" = "$((svgs + tables - more))"
  check "$2: as many figures as captions" test "$(count "<figure>" "$1")" = "$caps"
}

no_paper_numbers() { # file label
  check "$2: no paper cited by file number, figure or section" \
    test "$(grep -Eoi 'seed ?00[0-9]|Fig\. ?[0-9]|§' "$1" | wc -l || true)" = 0
}

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
check "read/write pattern of counter" grep -q "<code>counter</code>: T0 RR, T1 (RW)x50, T2 (RW)x50" "$html"
check "no network reference" test "$(grep -Eci 'https?://' "$html")" = 0
check "no script, stylesheet link or external image" test "$(grep -Eci '<script|<link|<img|src=' "$html")" = 0
check "no temporary file left" test -z "$(ls "$work"/r.html.tmp.* 2>/dev/null)"
check_captions "$html" demo

# The convergence plot: axes in words, the direction, each search's first
# alignment marked, and a caption saying that evaluations to it are the
# metric, not the final fitness.
sed -n "/<svg id='conv'/,/<\/svg>/p" "$html" >"$work/conv.svg"
check "convergence: x axis in words" grep -q "fitness evaluations so far (log scale)" "$work/conv.svg"
check "convergence: y axis says lower is better" grep -q "best fitness so far (lower is better)" "$work/conv.svg"
aligned="$(jq -r '.runs[] | select(.hit) | .algorithm | ascii_upcase' "$work/d/convergence.json")"
for a in $aligned; do
  check "convergence: $a's first alignment marked" grep -q "$a aligned" "$work/conv.svg"
done
check "convergence: some search aligned" test -n "$aligned"
check "convergence caption: no fitness value means aligned" \
  grep -q "no fitness value means &ldquo;aligned&rdquo;" "$html"
check "convergence caption: the metric is how far right" grep -q "the metric is how far right" "$html"

# Intervals are named where they are shown.
sed -n "/<svg id='rates'/,/<\/svg>/p" "$html" >"$work/rates.svg"
check "rates plot: 95% Clopper–Pearson interval" grep -q "95% Clopper–Pearson interval" "$work/rates.svg"
check "campaigns table: interval named" grep -q "<th>hit rate: 95% Clopper&ndash;Pearson interval</th>" "$html"
check "searches table: interval named" grep -q "<th>aligned: 95% Clopper&ndash;Pearson interval</th>" "$html"
check "no unnamed '95% CI' left" test "$(count '95% CI' "$html")" = 0

# Failing schedules, per policy; PCT and RPro ran at depth 2 in the demo.
for p in pct ppct rpro; do
  check_failures "$html" "$work/d/replay-$p" "$p" demo
done
check "demo: one reproduction command per policy with a failing run" \
  test "$(count "<pre class='repro'>" "$html")" = \
  "$(for p in pct ppct rpro; do jq -r 'select(.verdict != "pass") | .seed' "$work/d/replay-$p/runs.jsonl" | head -1; done | wc -l)"
check "demo: RPro at depth 2 is said to be PCT, once" \
  test "$(count "At depth 2, RPro is the same algorithm as PCT" "$html")" = 1
check "demo: the depth-2 line sits with RPro's failing seeds" \
  grep -q "At depth 2, RPro is the same algorithm as PCT" "$work/part-demo-rpro.html"

# Plain words: the page and every help text.
no_paper_numbers "$html" "report"
"$WEFT" --help >"$work/help.txt"
cmds="$("$WEFT" --help | awk '/^  [a-z]/ && $1 != "help" { print $1 }')"
check "weft --help lists at least 10 commands" test "$(echo "$cmds" | wc -l)" -ge 10
for c in $cmds; do
  "$WEFT" help "$c" >>"$work/help.txt"
done
check "help texts gathered" test "$(grep -c '^usage: weft' "$work/help.txt")" -ge 10
no_paper_numbers "$work/help.txt" "weft --help and weft help CMD"

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

# A single campaign folder: its hit rate, its failing seeds (more than shown:
# order_violation fails in about half the runs at depth 1), the timeline of
# its first failing schedule's saved trace; no RPro, so no depth-2 line.
run_status st "$WEFT" replay --sched pct --depth 1 --runs 20 --jobs 2 --save-trace -q -o "$work/c" \
  -- "$WEFT_FIXTURES/order_violation" >/dev/null 2>&1
run_status st "$WEFT" report "$work/c" >/dev/null 2>"$work/c.err"
check "campaign report: status 0 (got $st)" test "$st" = 0
chtml="$work/c/report.html"
check "campaign report: rates plot" grep -q "<svg id='rates'" "$chtml"
first="$(jq -r 'select(.verdict != "pass") | .seed' "$work/c/runs.jsonl" | head -1)"
check "campaign report: the first failing schedule's timeline" \
  grep -q "Failing schedule: pct seed $first (bug)" "$chtml"
check "campaign report: more failing seeds than shown" \
  test "$(jq -r 'select(.verdict != "pass") | .seed' "$work/c/runs.jsonl" | wc -l)" -gt "$shown"
check_failures "$chtml" "$work/c" pct campaign
check "campaign report: <details> present" grep -q "<details>" "$chtml"
check "campaign report: no depth-2 line without RPro" test "$(count "At depth 2, RPro" "$chtml")" = 0
check "campaign report: no 'collision found' without a search" test "$(count "collision found" "$chtml")" = 0
check_captions "$chtml" campaign
no_paper_numbers "$chtml" "campaign report"
# Why that schedule failed: its switches on its timeline, the racing pair.
why="$(sed -n '/<h2>Why the first failing schedule failed/,$p' "$chtml")"
check "campaign report: why the first failing schedule failed" grep -q "<h3>pct, depth 1: seed $first</h3>" <<<"$why"
check "campaign report: that run's timeline with its switches" grep -q "<svg class='timeline'" <<<"$why"
sched="$work/c/traces/seed-$first.sched.json"
nsw="$(jq '[.switches[] | select(.stay | not)] | length' "$sched")"
check "campaign report: one arrow per switch in the window (<= $nsw)" \
  test "$(grep -o "marker-end='url(#why0-" <<<"$why" | wc -l)" -le "$nsw"
check "campaign report: the switch table lists the log's entries" \
  test "$(grep -c '<td>T[0-9]* &rarr; T[0-9]*</td>' <<<"$why")" = "$(jq '[.switches[]] | if length > 30 then 30 else length end' "$sched")"
var="$({ "$WEFT" races --json "$work/c/traces/seed-$first.wtr" || true; } | jq -r '.races[0].variable')"
if [ "$var" = null ]; then # the run ended before the racing write
  check "campaign report: says the run has no race" grep -q "weft races finds no data race in this run" <<<"$why"
else
  check "campaign report: the racing pair named on the timeline ($var)" grep -q "race on $var</text>" <<<"$why"
fi

# A crash: why its first failing schedule failed ends with what killed it.
run_status st "$WEFT" replay --sched pct --depth 1 --runs 2 --save-trace -q -o "$work/crash" \
  -- "$WEFT_FIXTURES/fail_segv" >/dev/null 2>&1
run_status st "$WEFT" report "$work/crash" >/dev/null 2>&1
check "crash report: the faulting access, where (status $st)" \
  grep -q "^<pre class='end'>fault: T1 at worker (fail_segv.c:30), writing 0x0, [0-9]* ns" \
  "$work/crash/report.html"

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
