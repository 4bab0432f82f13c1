# A real multithreaded program from Debian's arm64 packages (pigz, dynamically
# linked) traced with --sysroot: same output as the plain qemu run, several
# threads in the trace.
source "$(dirname "$0")/lib.sh"
: "${WEFT_SYSROOT:?}"
pigz="$WEFT_SYSROOT/usr/bin/pigz"
if [ ! -x "$pigz" ]; then
  fail "no arm64 sysroot at $WEFT_SYSROOT (scripts/bootstrap makes it)"
  finish
fi
head -c 60000 /dev/urandom | base64 >"$work/in.txt"
run_status st "$QEMU_AARCH64" -L "$WEFT_SYSROOT" "$pigz" -p 4 -c "$work/in.txt" >"$work/plain.gz"
check "plain pigz runs (status $st)" test "$st" = 0
run_status st "$WEFT" trace -q --sysroot "$WEFT_SYSROOT" -o "$work/p.wtr" -- "$pigz" -p 4 -c "$work/in.txt" >"$work/traced.gz"
check "traced pigz exits 0 (status $st)" test "$st" = 0
check "traced output equals plain output" cmp -s "$work/plain.gz" "$work/traced.gz"
check "output decompresses to the input" cmp -s <(gunzip -c "$work/traced.gz") "$work/in.txt"
"$WEFT" info "$work/p.wtr" >"$work/info"
n="$(grep -Ec '^  T[0-9]+ ' "$work/info")"
check "pigz -p 4 ran several threads (saw $n)" test "$n" -ge 3
check "trace names the binary" grep -q "binary .*usr/bin/pigz (build-id" "$work/info"
# Exact mode speculates on a real program too: its output (held in a file
# per run) is the plain one, written once.
run_status st "$WEFT" trace -q --mode exact --sysroot "$WEFT_SYSROOT" -o "$work/e.wtr" -- "$pigz" -p 4 -c "$work/in.txt" >"$work/exact.gz"
check "exact pigz exits 0 (status $st)" test "$st" = 0
check "exact output equals plain output" cmp -s "$work/plain.gz" "$work/exact.gz"
# A campaign under the fork server: pigz opens its input before its first
# thread, and an open file's offset is shared across fork; each child must
# read the whole input, not find it at the end where the last child left it.
# (pigz reads its first blocks before its first thread: the input must be
# larger than those.)
head -c 450000 /dev/urandom | base64 >"$work/big.txt"
run_status st "$WEFT" replay --sched pct --runs 3 --jobs 1 --timeout 120 --sysroot "$WEFT_SYSROOT" \
  -o "$work/camp" -- "$pigz" -p 4 -c "$work/big.txt" </dev/null >"$work/camp.log" 2>&1
check "pigz campaign: 3 runs, all pass (status $st)" \
  test "$(jq -r .verdict "$work/camp/runs.jsonl" | sort | uniq -c | tr -s ' ')" = " 3 pass"
check "pigz campaign: ran under a fork server" bash -c "! grep -q 'one qemu per run' '$work/camp.log'"
lo="$(jq -s 'map(.steps) | min' "$work/camp/runs.jsonl")" hi="$(jq -s 'map(.steps) | max' "$work/camp/runs.jsonl")"
check "pigz campaign: every child compressed the whole input (steps $lo..$hi)" test "$((lo * 2))" -ge "$hi"
check "pigz campaign: no hint about library synchronization (its own code synchronizes)" \
  bash -c "! grep -q 'synchronize inside a library' '$work/camp.log'"
# xz's own code shares with liblzma's threads only what its main thread set
# up before their first one (its filter options), which they read: no point
# (docs/replay.md, visible points), and weft says the threads synchronize
# inside a library. (The points those reads made, 530 pcs, hid that.)
xz="$WEFT_SYSROOT/usr/bin/xz"
run_status st "$WEFT" replay --sched pct --runs 1 --timeout 120 --sysroot "$WEFT_SYSROOT" \
  -o "$work/xz" -- "$xz" -T4 -1 --block-size=64k -c "$work/big.txt" </dev/null >"$work/xz.log" 2>&1
check "xz campaign: passes (status $st)" test "$st $(jq -r .verdict "$work/xz/runs.jsonl")" = "0 pass"
check "xz campaign: its own code has no points ($(jq -r '"k \(.k), n \(.n)"' "$work/xz/runs.jsonl"))" \
  test "$(jq -r '.k < .n' "$work/xz/runs.jsonl")" = true
check "xz campaign: weft names --points shared" grep -q "synchronize inside a library.*--points shared" "$work/xz.log"
# A program whose threads are created and synchronize inside its library:
# profiling counts fewer steps than threads, and weft says where the points
# are. The library's data lies above the main thread's stack, after the
# loader: the main thread's write there is in the trace.
cat >"$work/libpool.c" <<'EOF'
#include <pthread.h>
int pool_hits;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static void *pool_worker(void *arg)
{
    for (int i = 0; i < 50; i++) {
        pthread_mutex_lock(&pool_lock);
        pool_hits++;
        pthread_mutex_unlock(&pool_lock);
    }
    return arg;
}
int pool_run(int n)
{
    pthread_t t[8];
    pool_hits = 0;
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], 0, pool_worker, 0);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], 0);
    return pool_hits;
}
EOF
printf '#include <stdio.h>\nint pool_run(int n);\nint main(void) { printf("%%d\\n", pool_run(3)); return 0; }\n' >"$work/pool.c"
if aarch64-linux-gnu-gcc -shared -fPIC -O1 -g -o "$work/libpool.so" "$work/libpool.c" &&
  aarch64-linux-gnu-gcc -O1 -g -o "$work/pool" "$work/pool.c" -L"$work" -lpool -Wl,-rpath,"$work"; then
  run_status st "$WEFT" trace -q --sysroot "$WEFT_SYSROOT" -o "$work/pool.wtr" -- "$work/pool" >"$work/pool.out"
  check "pool: traced (status $st), output $(cat "$work/pool.out")" test "$st $(cat "$work/pool.out")" = "0 150"
  "$WEFT" info "$work/pool.wtr" >"$work/pool.info" 2>&1
  check "pool: the main thread's write to the library's variable is in the trace" \
    grep -q "^ *pool_hits: T0 W" "$work/pool.info"
  run_status st "$WEFT" replay --sched pct --runs 1 --timeout 120 --sysroot "$WEFT_SYSROOT" \
    -o "$work/poolc" -- "$work/pool" </dev/null >"$work/poolc.log" 2>&1
  check "pool campaign: passes (status $st)" test "$st $(jq -r .verdict "$work/poolc/runs.jsonl")" = "0 pass"
  check "pool campaign: k below n ($(jq -r '"k \(.k), n \(.n)"' "$work/poolc/runs.jsonl"))" \
    test "$(jq -r '.k < .n' "$work/poolc/runs.jsonl")" = true
  check "pool campaign: says the threads synchronize inside a library, and what to do" \
    grep -q "synchronize inside a library.*--points shared" "$work/poolc.log"
else
  fail "pool: the cross compiler failed"
fi
# Without --sysroot pigz gets Debian's cross root, which has its loader but
# not its libz: the loader's complaint, and a replay refuses in one line
# rather than report every seed's exit 127 as a bug.
run_status st "$WEFT" trace -q -o "$work/x.wtr" -- "$pigz" -c "$work/in.txt" 2>"$work/err" >/dev/null
check "without --sysroot: the guest's loader fails (status $st)" test "$st" = 127
check "without --sysroot: its complaint" grep -q "libz.so.1: cannot open shared object file" "$work/err"
run_status st "$WEFT" replay --runs 4 -o "$work/noroot" -- "$pigz" -c "$work/in.txt" </dev/null >"$work/noroot.log" 2>&1
check "replay without --sysroot: exit 1 (got $st)" test "$st" = 1
check "replay without --sysroot: says the loader failed, once" \
  test "$(grep -c "pigz: error while loading shared libraries: libz.so.1: .*(--sysroot /usr/aarch64-linux-gnu: give a root with the program's libraries)" "$work/noroot.log")" = 1
check "replay without --sysroot: no campaign ran" test ! -e "$work/noroot/runs.jsonl"
check "replay without --sysroot: no profiling files left" test -z "$(find "$work/noroot" -type f)"
# Without profiling (--steps, --threads, --points none) the first run says it.
run_status st "$WEFT" replay --runs 4 --steps 10 --threads 2 --points none -o "$work/noroot2" \
  -- "$pigz" -c "$work/in.txt" </dev/null >"$work/noroot2.log" 2>&1
check "replay without profiling: exit 1 (got $st)" test "$st" = 1
check "replay without profiling: says the loader failed" \
  grep -q "pigz: error while loading shared libraries: libz.so.1" "$work/noroot2.log"
check "replay without profiling: no run judged" test ! -s "$work/noroot2/runs.jsonl"
finish
