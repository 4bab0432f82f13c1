#!/usr/bin/env bash
# The bug-finding benchmark: every non-control program of
# fixtures/bench/manifest.tsv under every policy of a list, at one or more
# budgets (runs per program and policy). A cell is one `weft replay`
# campaign, seeds 1..budget, with --stop-on-hit: it records whether the
# bug was found, in how many runs, with which verdict, the campaign's n and
# k (summary.json), and the wall time it took. A larger budget resumes the
# smaller one's campaign (same seeds), so a budget of 1000 costs only what
# the first 100 runs did not settle. Writes results/bug-finding.md (a table
# per budget, totals per policy, the commands) and keeps each campaign
# under results/bug-finding/NAME/POLICY/ with results/bug-finding/cells.tsv.
#
# Usage: results/bug-finding.sh [--budget N]... [--jobs J] [--timeout SEC]
#                               [--only NAME[,NAME...]] [--out DIR] [POLICY...]
# POLICY is NAME[:DEPTH[:RADIUS]], NAME any `weft replay --sched` name (random,
# pct, ppct, rpro, pos, ...), or `portfolio`: weft replay without --sched.
# Default policies: random pct:1 pct:2 pct:3 ppct:3 rpro:3:10. Default
# budgets: 100 and 1000 (--budget replaces them; give it more than once for
# several). --out DIR (default results/bug-finding) also moves the table
# to DIR.md.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$here/build}"
sysroot="${WEFT_SYSROOT:-$here/build/arm64-sysroot}"
manifest="$here/fixtures/bench/manifest.tsv"
weft="$build/cli/weft"
me="${0##*/}"
die() { echo "$me: $*" >&2; exit 2; }

budgets=()
jobs="$(nproc)"
timeout=20
only=""
out="$here/results/bug-finding"
policies=()
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) [ $# -ge 2 ] || die "--budget needs a number"; budgets+=("$2"); shift 2 ;;
    --jobs) [ $# -ge 2 ] || die "--jobs needs a number"; jobs="$2"; shift 2 ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs seconds"; timeout="$2"; shift 2 ;;
    --only) [ $# -ge 2 ] || die "--only needs program names"; only=",$2,"; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a folder"; out="$(realpath -m "$2")"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) policies+=("$1"); shift ;;
  esac
done
[ ${#budgets[@]} -gt 0 ] || budgets=(100 1000)
[ ${#policies[@]} -gt 0 ] || policies=(random pct:1 pct:2 pct:3 ppct:3 rpro:3:10)
for n in "${budgets[@]}" "$jobs" "$timeout"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "bad number '$n': expected a positive integer"
done
mapfile -t budgets < <(printf '%s\n' "${budgets[@]}" | sort -n -u)
for p in "${policies[@]}"; do
  [[ "$p" =~ ^[a-z][a-z0-9_-]*(:[1-9][0-9]*(:[1-9][0-9]*)?)?$ ]] ||
    die "bad policy '$p': expected NAME[:DEPTH[:RADIUS]], e.g. pct:2 or rpro:3:10"
done
[ -r "$manifest" ] || die "cannot read $manifest"
[ -n "${WEFT_NO_BUILD:-}" ] || "$here/scripts/build" >/dev/null
[ -x "$weft" ] || die "no weft at $weft (build first)"
stop=()
"$weft" replay --help 2>&1 | grep -q -- --stop-on-hit && stop=(--stop-on-hit)

# The manifest's benchmark programs (controls are for testing weft itself).
names=()
declare -A prog_line
while IFS= read -r line; do
  case "$line" in '' | '#'*) continue ;; esac
  IFS=$'\x1f' read -r name _ kind _ <<<"${line//$'\t'/$'\x1f'}"
  [ "$kind" = control ] && continue
  [ -z "$only" ] || [[ "$only" == *",$name,"* ]] || continue
  names+=("$name")
  prog_line[$name]="$line"
done <"$manifest"
[ ${#names[@]} -gt 0 ] || die "no program selected (--only '${only//,/ }')"
field() { # field NAME INDEX: a manifest column (0 = name)
  local f
  IFS=$'\x1f' read -r -a f <<<"${prog_line[$1]//$'\t'/$'\x1f'}"
  printf '%s' "${f[$2]:-}"
}

# policy_args SPEC: the weft replay options of a policy spec.
policy_args() {
  local name="${1%%:*}" rest depth radius
  [ "$name" = portfolio ] && return
  printf '%s\n' --sched "$name"
  [[ "$1" == *:* ]] || return 0
  rest="${1#*:}"
  depth="${rest%%:*}"
  printf '%s\n' --depth "$depth"
  if [[ "$rest" == *:* ]]; then
    radius="${rest#*:}"
    printf '%s\n' --radius "$radius"
  fi
}
tag() { printf '%s' "${1//:/-}"; } # a policy spec as a folder name

# The verdict that means the program's own bug was found.
wanted_verdict() { case "$1" in bug | abort | crash | deadlock) echo "$1" ;; *) echo "?" ;; esac; }

# cell NAME POLICY BUDGET: run or extend the campaign up to BUDGET runs,
# unless an earlier (smaller) budget already found the bug or ran as far.
cell() {
  local name="$1" pol="$2" budget="$3" dir="$out/$1/$(tag "$2")" prog="$build/fixtures/bench/$1"
  local s="$dir/summary.json" resume=() extra=() args=()
  mkdir -p "$out/$name"
  if [ -f "$s" ]; then
    local first ran
    first="$(jq -r '.runs_to_first_hit // empty' "$s")"
    ran="$(jq -r .runs "$s")"
    { [ -n "$first" ] || [ "$ran" -ge "$budget" ]; } && return 0
    # A portfolio cannot resume (its members' chunks interleave): rerun it.
    if [ "${pol%%:*}" = portfolio ]; then rm -rf "$dir"; else resume=(--resume); fi
  else
    rm -rf "$dir"
  fi
  [ "$(field "$name" 5)" = dynamic ] && extra=(--sysroot "$sysroot")
  read -r -a args <<<"$(field "$name" 8)"
  local -a cmd
  mapfile -t cmd < <(policy_args "$pol")
  cmd=("$weft" replay "${cmd[@]}" --runs "$budget" --jobs "$jobs" --timeout "$timeout" "${stop[@]}"
    --quiet "${extra[@]}" --output "$dir" "${resume[@]}" -- "$prog" "${args[@]}")
  local t0 t1 st
  t0="$(date +%s.%N)"
  set +e
  # weft kills each run at --timeout; this bounds the whole campaign.
  timeout -s KILL $((budget * (timeout + 5) / jobs + 600)) "${cmd[@]}" >>"$dir.log" 2>&1
  st=$?
  set -e
  t1="$(date +%s.%N)"
  echo "${cmd[*]}" >>"$dir.commands"
  awk -v a="$t0" -v b="$t1" -v n="$budget" 'BEGIN { printf "%s %.1f\n", n, b - a }' >>"$dir.wall"
  if [ ! -f "$s" ] || [ "$st" -eq 1 ] || [ "$st" -eq 2 ]; then
    echo "$me: $name, $pol: weft replay failed (status $st):" >&2
    tail -n 3 "$dir.log" >&2
    [ "$st" -eq 2 ] && exit 1 # a bad command line: every other cell would fail the same way
  fi
}

# row NAME POLICY BUDGET: one line of cells.tsv.
row() {
  local name="$1" pol="$2" budget="$3" dir="$out/$1/$(tag "$2")"
  local s="$dir/summary.json" want
  want="$(wanted_verdict "$(field "$name" 7)")"
  if [ ! -f "$s" ]; then
    printf '%s\t%s\t%s\terror\t\t\t\t\t%s\t\n' "$budget" "$name" "$pol" "$(field "$name" 6)"
    return
  fi
  jq -r --arg b "$budget" --arg name "$name" --arg pol "$pol" --arg want "$want" \
    --arg ops "$(field "$name" 6)" \
    --arg wall "$(awk -v b="$budget" '$1 <= b { w += $2 } END { printf "%.1f", w }' "$dir.wall" 2>/dev/null)" \
    --slurpfile runs <(cat "$dir"/runs.jsonl "$dir"/*/runs.jsonl 2>/dev/null | jq -c 'select(.verdict != "pass") | {seed, verdict}') '
    (.first_hit_seed) as $fs
    | (.first_hit_verdict // ([$runs[] | select(.seed == $fs) | .verdict] | first) // "") as $v
    | (if .runs_to_first_hit != null and .runs_to_first_hit <= ($b | tonumber) then
         (if $v == $want then "found" else "other" end) else "no" end) as $found
    | [$b, $name, $pol, $found,
       (if $found == "no" then "" else .runs_to_first_hit end), (if $found == "no" then "" else $v end),
       .n, .k, $ops, $wall] | @tsv' "$s"
}

# table: the markdown page, from cells.tsv.
table() {
  local pol_cmd budget
  echo "# Bug-finding benchmark: programs × policies"
  echo
  echo "Generated by \`results/bug-finding.sh$(printf ' --budget %s' "${budgets[@]}") --jobs $jobs --timeout $timeout$([ -n "$only" ] && printf ' --only %s' "${only:1:-1}") ${policies[*]}\`"
  echo "on $(date -u +%Y-%m-%d) ($(nproc) cores, shared with other work; the campaigns took $(awk -F'\t' -v b="${budgets[-1]}" \
    '$1 == b { w += $10 } END { printf "%.0f", w }' "$out/cells.tsv") s of wall time, $jobs runs at a time)."
  echo "Programs: the $(printf '%s\n' "${names[@]}" | wc -l) non-control programs of fixtures/bench/manifest.tsv"
  echo "(docs/bug-benchmark.md). A cell is one \`weft replay\` campaign, seeds 1..budget,"
  echo "${stop[*]:-without --stop-on-hit}; it shows the runs to the first bug (= its seed), \`–\` if"
  echo "no run found it, \`≠V\` if the first failing run had verdict V rather than the"
  echo "program's oracle. d: the bug's depth; ops: visible operations counted by hand"
  echo "(synchronization calls and shared accesses of the program's own code); n, k: the"
  echo "campaign's threads and schedule points, measured by weft's profiling run."
  for budget in "${budgets[@]}"; do
    echo
    echo "## Budget $budget"
    echo
    awk -F'\t' -v B="$budget" -v pols="${policies[*]}" '
      BEGIN { np = split(pols, P, " ") }
      FNR == 1 { next }
      FILENAME == ARGV[1] && $1 == B {
        key = $2 SUBSEP $3
        cellv[key] = ($4 == "found" ? $5 : ($4 == "other" ? "≠" $6 : ($4 == "error" ? "error" : "–")))
        if ($4 == "found") { found[$3]++; runs[$3] += $5 }
        wall[$3] += $10
        if (!($2 in nk)) nk[$2] = $7 " | " $8
        if (!($2 in seen)) { seen[$2] = 1; order[++nn] = $2 }
        next
      }
      FILENAME == ARGV[2] && $0 !~ /^#/ { man[$1] = $4 " | " $3 " | " $2 " | " $7 }
      END {
        h = "| program | d | kind | threads | ops | n | k |"; sep = "|---|---|---|---|---|---|---|"
        for (i = 1; i <= np; i++) { h = h " " P[i] " |"; sep = sep "---|" }
        print h; print sep
        for (j = 1; j <= nn; j++) {
          r = "| " order[j] " | " man[order[j]] " | " nk[order[j]] " |"
          for (i = 1; i <= np; i++) r = r " " cellv[order[j], P[i]] " |"
          print r
        }
        r = "| **found** ||||||| "
        for (i = 1; i <= np; i++) r = r sprintf("**%d/%d** | ", found[P[i]], nn)
        print r
        r = "| wall time (s) ||||||| "
        for (i = 1; i <= np; i++) r = r sprintf("%.0f | ", wall[P[i]])
        print r
      }' "$out/cells.tsv" "$manifest"
  done
  echo
  echo "## Commands"
  echo
  echo "Each cell ran (its exact command lines are in results/bug-finding/NAME/POLICY.commands;"
  echo "a larger budget adds \`--resume\`; dynamically linked programs add"
  echo "\`--sysroot build/arm64-sysroot\`; ARGS is the manifest's args column):"
  echo
  echo '```sh'
  for pol in "${policies[@]}"; do
    pol_cmd="$(policy_args "$pol" | tr '\n' ' ')"
    echo "weft replay ${pol_cmd}--runs BUDGET --jobs $jobs --timeout $timeout ${stop[*]:-}${stop:+ }--quiet --output results/bug-finding/NAME/$(tag "$pol") -- build/fixtures/bench/NAME ARGS"
  done
  echo '```'
}

start=$(date +%s)
for budget in "${budgets[@]}"; do
  for name in "${names[@]}"; do
    for pol in "${policies[@]}"; do cell "$name" "$pol" "$budget"; done
  done
  echo "$me: budget $budget done ($(($(date +%s) - start)) s so far)" >&2
done

{
  printf 'budget\tprogram\tpolicy\tfound\truns_to_bug\tverdict\tn\tk\tops\twall_s\n'
  for budget in "${budgets[@]}"; do
    for name in "${names[@]}"; do
      for pol in "${policies[@]}"; do row "$name" "$pol" "$budget"; done
    done
  done
} >"$out/cells.tsv.tmp"
mv "$out/cells.tsv.tmp" "$out/cells.tsv"
table >"$out.md.tmp"
mv "$out.md.tmp" "$out.md"
echo "$me: wrote ${out#$here/}.md and ${out#$here/}/cells.tsv ($(($(date +%s) - start)) s)" >&2
