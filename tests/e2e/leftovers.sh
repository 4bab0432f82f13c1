# The process table after the suite: no qemu-aarch64 and no weft started by
# a test may still run. ctest runs this test last (FIXTURES_CLEANUP of a
# fixture every other test requires, see leftovers.cmake). A process is the
# suite's when its command line names the build's test-tmp folder ($WEFT_TMP;
# lib.sh also points TMPDIR there, so weft inject's run folders are in it)
# or it runs in that folder. Leftovers are listed, killed by pid (so the next
# run starts clean) and fail the test.
source "$(dirname "$0")/lib.sh"
tmp_root="$(cd "$WEFT_TMP" && pwd -P)"

# suite_procs: "PID COMMAND LINE" of every qemu-aarch64 or weft process
# whose command line or working folder is under $tmp_root.
suite_procs() {
  local d pid exe cmd cwd
  for d in /proc/[0-9]*; do
    pid="${d#/proc/}"
    [ "$pid" = $$ ] && continue
    exe="$(readlink "$d/exe" 2>/dev/null || true)"
    cmd="$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null || true)"
    [ -n "$cmd" ] || continue # gone, or a zombie
    case "${exe##*/} ${cmd%% *}" in
      qemu-aarch64* | weft* | *"/qemu-aarch64" | *"/weft") ;;
      *) continue ;;
    esac
    cwd="$(readlink "$d/cwd" 2>/dev/null || true)"
    case "$cmd $cwd/" in
      *"$tmp_root/"* | *"$WEFT_TMP/"*) echo "$pid $cmd" ;;
    esac
  done
}

# The check can see a leftover: a qemu running in a folder under test-tmp.
(cd "$work" && exec timeout -s KILL 60 "$QEMU_AARCH64" "$WEFT_FIXTURES/fail_spin") &
decoy_timer=$!
decoy=""
for _ in $(seq 100); do
  decoy="$(pgrep -P "$decoy_timer" || true)"
  [ -n "$decoy" ] && break
  sleep 0.05
done
seen="$(suite_procs)"
check "self-check: a qemu running in test-tmp is seen (pid ${decoy:-?})" grep -q "^${decoy:-none} " <<<"$seen"
kill -KILL "$decoy" "$decoy_timer" 2>/dev/null || true
{ wait "$decoy_timer"; } 2>/dev/null || true

# The real check. A test that just ended may still be reaping its qemu:
# give stragglers a moment before calling them leftovers.
for _ in $(seq 20); do
  left="$(suite_procs)"
  [ -z "$left" ] && break
  sleep 0.25
done
if [ -z "$left" ]; then
  ok "no qemu-aarch64 or weft of the suite left running"
else
  fail "processes of the suite still running:"$'\n'"$left"
  while read -r pid _; do kill -KILL "$pid" 2>/dev/null || true; done <<<"$left"
fi
finish
