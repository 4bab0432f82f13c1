# One option convention: every option a command's table declares is listed
# by its --help and accepted by its parser; a short letter means the same
# long option in every command; old spellings still work with a warning;
# weft help and the bash completion come from the same tables.
source "$(dirname "$0")/lib.sh"
: "${WEFT_SRC:?}"
cd "$work" # nothing a command might write lands elsewhere

cmds="trace info export races optimize inject replay merge report demo completion"
declare -A letter_of=() # letter -> long name, across commands
for cmd in $cmds; do
  src="$WEFT_SRC/cli/cmd_$cmd.c"
  help="$("$WEFT" "$cmd" --help)"
  check "$cmd: weft help $cmd is --help" test "$help" = "$("$WEFT" help "$cmd")"
  check "$cmd: help lists exit statuses" grep -qi "exit status" <<<"$help"
  # The table's entries as the source spells them: {"name", 'x', ... or 0,
  names="$(grep -oE '^\s*\{"[a-z-]+", ('"'"'.'"'"'|0), ' "$src" || true)"
  while IFS= read -r entry; do
    [ -n "$entry" ] || continue
    name="$(sed -E 's/^\s*\{"([a-z-]+)".*/\1/' <<<"$entry")"
    letter="$(sed -nE "s/.*'(.)'.*/\1/p" <<<"$entry")"
    # Deprecated spellings are the entries that end in a replacement.
    if grep -qE "\{\"$name\",.*\"--[a-z-]+\"\},?\s*$" "$src"; then
      run_status st "$WEFT" "$cmd" "--$name" x --help 2>"$work/err" >/dev/null
      check "$cmd --$name (old spelling): not unknown" \
        bash -c "! grep -q 'unknown option' '$work/err'"
      continue
    fi
    check "$cmd: --help lists --$name" grep -qE -- "--$name( |$)" <<<"$help"
    # Parsing must get past the option's name; --help after it stops the
    # command before it does anything (a value it rejects stops it sooner).
    if grep -qE "\{\"$name\", ('.'|0), NULL," "$src"; then
      run_status st "$WEFT" "$cmd" "--$name" --help 2>"$work/err" >/dev/null
    else
      run_status st "$WEFT" "$cmd" "--$name" "@@bad@@" --help 2>"$work/err" >/dev/null
    fi
    check "$cmd --$name: the parser knows it" bash -c "! grep -q 'unknown option' '$work/err'"
    if [ -n "$letter" ]; then
      check "$cmd: --help shows -$letter for --$name" grep -qE -- "-$letter, --$name" <<<"$help"
      if [ -n "${letter_of[$letter]:-}" ]; then
        check "-$letter means --${letter_of[$letter]} everywhere ($cmd: --$name)" \
          test "${letter_of[$letter]}" = "$name"
      fi
      letter_of[$letter]="$name"
    fi
  done <<<"$names"
done

# Usage errors: one line, naming the command and pointing at its help.
run_status st "$WEFT" replay --depth x -- /bin/true 2>"$work/err"
check "bad value exits 2" test "$st" = 2
check "bad value: one line" test "$(wc -l <"$work/err")" = 1
check "bad value: weft CMD: ... (see weft CMD --help)" \
  grep -q "^weft replay: --depth: expected a number .* (see weft replay --help)$" "$work/err"
run_status st "$WEFT" trace --bogus -- /bin/true 2>"$work/err"
check "unknown option names the command" \
  grep -q "^weft trace: unknown option '--bogus' (see weft trace --help)$" "$work/err"
run_status st "$WEFT" help nosuch 2>"$work/err"
check "help of an unknown command exits 2" test "$st" = 2

# Old spellings: the same effect, and a deprecation line.
run_status st "$WEFT" optimize -d 5 --help 2>"$work/err" >/dev/null
check "optimize -d: deprecated, says use --dmax" grep -q "use --dmax" "$work/err"
# (The warning comes once the command line is accepted: a missing program
# is found after that.)
run_status st "$WEFT" replay -s pct --runs 1 -- "$work/no-such-program" 2>"$work/err" >/dev/null
check "replay -s pct: deprecated, says use --sched" grep -q "use --sched pct" "$work/err"

# The bash completion script loads and offers each command's options.
"$WEFT" completion bash >"$work/comp.bash"
check "completion script is valid bash" bash -n "$work/comp.bash"
check "completion registers weft" bash -c "source '$work/comp.bash'; complete -p weft"
words="$(bash -c "source '$work/comp.bash'; COMP_WORDS=(weft replay --st); COMP_CWORD=2; _weft; echo \"\${COMPREPLY[*]}\"")"
check "completion: replay --st offers --steps and --starvation" \
  bash -c "grep -q -- --steps <<<'$words' && grep -q -- --starvation <<<'$words'"
finish
