#!/usr/bin/env bash
# Every fixture of fixtures/manifest.tsv under plain qemu-aarch64 (no weft):
# its exit status must be the manifest's expect_exit, and a run that exits 0
# must not print a "BUG:" line. This is what "the bug is latent" means for a
# plain run. Each run is under `timeout -s KILL` (a hung qemu ignores
# SIGTERM). Prints one line per fixture, then "N passed, M failed".
set -euo pipefail
: "${QEMU_AARCH64:?}" "${WEFT_FIXTURES:?}" "${WEFT_SRC:?}"

manifest="$WEFT_SRC/fixtures/manifest.tsv"
[ -r "$manifest" ] || { echo "plain_fixtures: cannot read $manifest" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/plain_fixtures.XXXXXX")"
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

lineno=0
while IFS= read -r line || [ -n "$line" ]; do
  lineno=$((lineno + 1))
  case "$line" in '' | '#'*) continue ;; esac
  # Tabs are IFS whitespace and would merge empty fields: split on \x1f.
  IFS=$'\x1f' read -r name threads kind depth expect args <<<"${line//$'\t'/$'\x1f'}"
  if [ -z "$name" ] || ! [[ "$expect" =~ ^([0-9]+|hang)$ ]]; then
    fail "manifest.tsv:$lineno" "bad line (want name, threads, kind, depth, expect_exit, args)"
    continue
  fi
  exe="$WEFT_FIXTURES/$name"
  if [ ! -x "$exe" ]; then
    fail "$name" "$exe not built"
    continue
  fi
  read -r -a argv <<<"${args:-}"
  set +e
  # "hang": the fixture never ends by design (deadlock, livelock); it passes
  # if it is still running after 3 s.
  limit=20
  [ "$expect" = hang ] && limit=3
  timeout -s KILL "$limit" "$QEMU_AARCH64" "$exe" "${argv[@]}" >"$work/out" 2>"$work/err"
  st=$?
  set -e
  if [ "$expect" = hang ]; then
    if [ "$st" -eq 137 ]; then
      echo "ok $name (still running after ${limit} s, as designed)"
      passed=$((passed + 1))
    else
      fail "$name" "ended with status $st, but it should never end"
    fi
  elif [ "$st" -eq 137 ]; then
    fail "$name" "killed after 20 s (hang or deadlock)"
  elif [ "$st" -ne "$expect" ]; then
    why="$(grep -m1 '^BUG:' "$work/out" || head -n1 "$work/err" || true)"
    fail "$name" "exit status $st, expected $expect${why:+ ($why)}"
  elif [ "$st" -eq 0 ] && grep -q 'BUG:' "$work/out"; then
    fail "$name" "exit 0 but printed $(grep -m1 'BUG:' "$work/out")"
  else
    echo "ok $name"
    passed=$((passed + 1))
  fi
done <"$manifest"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
