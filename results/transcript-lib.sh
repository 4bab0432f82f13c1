# Shared by results scripts whose output is a transcript (install.sh,
# slurm.sh; sourced, not run): every command is written to the Markdown file
# as typed, followed by its output, so the .md shows exactly what ran here.

# t_begin FILE TITLE: start the transcript.
t_begin() {
  t_file="$1"
  printf '# %s\n\n' "$2" >"$t_file"
}

# t_note TEXT...: a paragraph of prose.
t_note() {
  printf '%s\n\n' "$*" >>"$t_file"
}

# t_run COMMAND: run COMMAND (a shell string, evaluated in this shell so it
# sees the script's functions and variables and may cd) and record it with
# its output; also shown on stderr. Returns COMMAND's status: under set -e a
# failing step ends the script with the failure in the transcript. Put a
# time limit (timeout -s KILL) in any command that could hang.
t_run() {
  local out status
  out="$(mktemp)"
  echo "\$ $1" >&2
  set +e
  eval "$1" >"$out" 2>&1
  status=$?
  set -e
  cat "$out" >&2
  {
    echo '```console'
    echo "\$ $1"
    # carriage-return progress lines: keep what a terminal would show last
    sed 's/.*\r//' "$out"
    [ "$status" = 0 ] || echo "(exit status $status)"
    echo '```'
    echo
  } >>"$t_file"
  rm -f "$out"
  return "$status"
}
