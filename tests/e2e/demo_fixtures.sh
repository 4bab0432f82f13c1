# weft demo -- FIXTURE works for every fixture of fixtures/manifest.tsv: it
# runs to its summary and report whatever the program does (crash, deadlock,
# hang, nothing shared), and says so when a step has nothing to do.
# Usage: demo_fixtures.sh PART PARTS (fixture i runs in part i mod PARTS).
source "$(dirname "$0")/lib.sh"
part="${1:-0}" parts="${2:-1}"

i=0 ran=0
while IFS=$'\t' read -r name threads kind depth status args; do
  i=$((i + 1))
  [ $((i % parts)) = "$part" ] || continue
  ran=$((ran + 1))
  out="$work/$name"
  # A hanging fixture gets the demo's own choice of runs (4, with a note).
  runs=(--runs 4)
  [ "$status" = hang ] && runs=()
  # shellcheck disable=SC2086 # args are words
  set +e
  timeout -s KILL 400 "$WEFT" demo "${runs[@]}" --search-runs 3 --budget 100000 --timeout 5 --jobs 2 \
    -o "$out" -- "$WEFT_FIXTURES/$name" $args >"$out.log" 2>"$out.err"
  st=$?
  set -e
  check "$name: status 0 (got $st)" test "$st" = 0
  check "$name: summary printed" grep -q "^== summary (seed 1)" "$out.log"
  check "$name: report written" test -s "$out/report.html"
  check "$name: a line per policy" test "$(grep -Ec '^(pct |ppct|rpro) ' "$out.log")" = 3
  check "$name: no weft error" test "$(grep -c '^weft: ' "$out.err" || true)" = 0
  ww="$(jq -r 'if .runs then "yes" else "no" end' "$out/convergence.json" 2>/dev/null || echo no)"
  if [ "$ww" = no ]; then
    check "$name: says there is nothing to align" grep -q "nothing to align" "$out.log"
  else
    check "$name: searched and planned" test -s "$out/search-sa.json"
  fi
  # (a "hang" fixture may instead deadlock, which the platform detects)
  if [ "${#runs[@]}" = 0 ] && grep -q "guest timed out" "$out.log"; then
    check "$name: the hang noted, fewer runs" grep -q "did not end within 5 s.*4 runs per policy" "$out.log"
  fi
  check "$name: each policy ran or says why not" \
    test "$(grep -Ec '^(pct|ppct|rpro) +(d2 .* runs failed|no campaign: .+)' "$out.log")" = 3
done < <(grep -v '^#' "$WEFT_SRC/fixtures/manifest.tsv")
check "part $part/$parts ran some fixtures ($ran)" test "$ran" -ge 1
finish
