# weft races as a command: --help, exit statuses, text and JSON output
# (to stdout and atomically to a file), --binary, --plain-atomics, a trace
# whose program moved or that was cut short, and every bad-input line of
# docs/errors.md's `weft races` list (each checked here, and the list has
# no line this test does not check).
source "$(dirname "$0")/lib.sh"
: "${WEFT_SRC:?}"
command -v jq >/dev/null || { echo "races_cli: jq is missing"; exit 1; }
doc="$WEFT_SRC/docs/errors.md"
cd "$work"
: >checked

# expect NAME STATUS LINE CMD...: CMD exits STATUS with exactly LINE on
# stderr, and LINE is in docs/errors.md.
expect() {
  local name="$1" want="$2" line="$3"; shift 3
  run_status st "$@" >out 2>err
  check "$name: exit $want (got $st)" test "$st" = "$want"
  if [ "$(cat err)" = "$line" ]; then ok "$name: says '$line'"; else fail "$name: says '$(head -c 300 err)'"; fi
  check "$name: line in docs/errors.md" grep -qF -- "\`$line\`" "$doc"
  printf '%s\n' "$line" >>checked
}

cp "$WEFT_FIXTURES/lost_update" lu
cp "$WEFT_FIXTURES/paper_avn" avn
cp "$WEFT_FIXTURES/wsq_ok" wq
for p in lu wq; do
  run_status st "$WEFT" trace -q --mode exact -o "$p.wtr" -- "./$p"
  check "setup: traced $p" test -s "$p.wtr"
done

# ---- help and statuses -----------------------------------------------------------
run_status st "$WEFT" races --help >help.txt
check "--help: exit 0" test "$st" = 0
for opt in --json --output --binary --plain-atomics --help; do
  check "--help lists $opt" grep -q -- "$opt" help.txt
done
check "--help gives the exit statuses" \
  grep -q "Exit status: 0 when no race was found, 10 when races were found, 1 on bad" help.txt
check "--help: 2 on a bad command line" grep -q "2 on a bad command line" help.txt
check "weft --help lists races" grep -q "^  races " <("$WEFT" --help)
run_status st "$WEFT" races --bogus lu.wtr 2>/dev/null
check "unknown option: exit 2 (got $st)" test "$st" = 2

run_status st "$WEFT" races lu.wtr >lu.txt
check "races found: exit 10 (got $st)" test "$st" = 10
run_status st "$WEFT" races wq.wtr >wq.txt
check "no race: exit 0 (got $st)" test "$st" = 0

# ---- output ------------------------------------------------------------------------
mkdir o
run_status st "$WEFT" races --json lu.wtr >lu.json
check "--json to stdout: exit 10" test "$st" = 10
check "--json: format weft-races, version 1" \
  test "$(jq -c '[.format, .version, .decoded]' lu.json)" = '["weft-races",1,true]'
run_status st "$WEFT" races --json -o o/r.json lu.wtr >stdout.txt
check "-o: exit 10, nothing on stdout" test "$st" = 10 -a ! -s stdout.txt
check "-o: the same JSON as stdout" cmp -s lu.json o/r.json
run_status st "$WEFT" races -o o/r.txt lu.wtr
check "-o text: the same text as stdout" cmp -s lu.txt o/r.txt
echo old >o/r.txt
run_status st "$WEFT" races -o o/r.txt wq.wtr
check "-o replaces an old report" cmp -s wq.txt o/r.txt
check "-o: no temporary file left" test "$(ls o | tr '\n' ' ')" = "r.json r.txt "
check "JSON: pcs are the races' pcs, sorted and unique" test \
  "$(jq -c '[.races[] | .first.pc, .second.pc] | unique | sort_by([length, .])' lu.json)" \
  = "$(jq -c '.pcs' lu.json)"
check "JSON: both sides have thread, kind, pc, function, file, line, time, seq" test \
  "$(jq '[.races[] | .first, .second | select(.thread and .kind and .pc and .function and .file and .line and .time and (.seq | type == "number"))] | length' lu.json)" \
  = "$(jq '2 * (.races | length)' lu.json)"
check "text: one line per side, with file:line" \
  test "$(grep -c 'lost_update.c:2[01])$' lu.txt)" = "$(($(grep -c '^race ' lu.txt) * 2))"

# ---- atomics -------------------------------------------------------------------------
run_status st "$WEFT" races --plain-atomics --json wq.wtr >wqp.json
check "--plain-atomics: wsq_ok's relaxed accesses race with the atomics (exit $st)" test "$st" = 10
check "--plain-atomics: on wsq_top and wsq_bottom" \
  test "$(jq -c '[.races[].variable] | unique' wqp.json)" = '["wsq_bottom","wsq_top"]'

# ---- members and elements named from the debug info --------------------------------
# A race on a struct's field was "C+16" where the program says C.ready.
cat >member.c <<'EOF'
#include <pthread.h>
struct conn { int id; long bytes; int ready; int pad[3]; struct { int a, b; } st[4]; };
struct conn C;
struct conn table[3];
static void *w(void *x) { C.ready = 1; C.st[2].b = 5; table[1].bytes += 3; return x; }
int main(void)
{
    pthread_t t;
    pthread_create(&t, 0, w, 0);
    C.ready = 2; C.st[2].b = 6; table[1].bytes += 4;
    pthread_join(t, 0);
    return 0;
}
EOF
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o member member.c || fail "the cross compiler failed on member.c"
run_status st "$WEFT" trace -q -o member.wtr -- ./member </dev/null >/dev/null 2>&1
run_status st "$WEFT" races --json member.wtr >member.json
check "a struct's field, an array's element's member: named as the program does" \
  test "$(jq -c '[.races[].shown] | unique' member.json)" = '["C.ready","C.st[2].b","table[1].bytes"]'
check "JSON: variable and offset stay the global's" \
  test "$(jq -c '[.races[] | select(.shown == "C.ready") | .variable, .offset] | unique' member.json)" = '[16,"C"]'
run_status st "$WEFT" races member.wtr >member.txt
check "text: race on C.st[2].b" grep -q '^race [0-9]* on C.st\[2\].b (0x' member.txt

# ---- an access inside the C library: where the program last was ------------------
# A use after free raced with _int_free's write, and the report named only
# _int_free: the thread's last recorded access with a source line before it
# says where the program was (the call to free records nothing itself).
cat >uaf.c <<'EOF'
#include <pthread.h>
#include <stdlib.h>
struct job { long a, b; };
static void *reader(void *arg)
{
    struct job *j = arg;
    long s = 0;
    for (int i = 0; i < 100; i++)
        s += ((volatile struct job *)j)->a;
    return (void *)s;
}
int main(void)
{
    struct job *j = calloc(1, sizeof *j);
    pthread_t t;
    pthread_create(&t, 0, reader, j);
    ((volatile struct job *)j)->b = 2; /* LAST_LINE */
    free(j); /* before the join */
    pthread_join(t, 0);
    return 0;
}
EOF
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o uaf uaf.c || fail "the cross compiler failed on uaf.c"
lastline="$(grep -n LAST_LINE uaf.c | cut -d: -f1)"
run_status st "$WEFT" trace -q -o uaf.wtr -- ./uaf </dev/null >/dev/null 2>&1
run_status st "$WEFT" races --json uaf.wtr >uaf.json
check "use after free: the side in the library says where the program last was (line $lastline)" \
  test "$(jq --argjson l "$lastline" '[.races[] | .first, .second | select(.line == null and .last_in_program != null and .last_in_program.line == $l)] | length > 0' uaf.json)" = true
check "use after free: the program's own sides have none" \
  test "$(jq '[.races[] | .first, .second | select(.line != null and .last_in_program != null)] | length' uaf.json)" = 0
run_status st "$WEFT" races uaf.wtr >uaf.txt
check "text: ', last in the program at main (...uaf.c:$lastline)'" \
  grep -Eq ", last in the program at main \(.*uaf.c:$lastline\)$" uaf.txt

# ---- the program ---------------------------------------------------------------------
cp lu lu.keep
run_status st "$WEFT" races --binary lu.keep --json lu.wtr >keep.json
check "--binary: a copy of the traced program gives the same races" \
  cmp -s <(jq -c .races lu.json) <(jq -c .races keep.json)
# Traced as ./lu: read from another folder, the trace still names it (a
# relative path named nothing there, and a helper's correct OpenMP program
# got a false race).
mkdir -p elsewhere
(cd elsewhere && "$WEFT" races --json ../lu.wtr >../elsewhere.json 2>../elsewhere.err) || true
check "traced as ./lu, read from another folder: the same races, decoded" \
  test "$(jq -c '[.decoded, .races]' elsewhere.json)" = "$(jq -c '[true, .races]' lu.json)"
mv lu lu.moved
run_status st "$WEFT" races lu.wtr >moved.txt 2>moved.err
check "program moved: still analyses (exit $st)" test "$st" = 0 -o "$st" = 10
check "program moved: says so" grep -q "note: without the program's code every atomic access" moved.txt
check "program moved: names it on stderr" \
  grep -q "^weft races: note: $PWD/lu, the traced program, is not readable here: .*pass --binary PATH$" moved.err
run_status st "$WEFT" races --json lu.wtr >moved.json
check "program moved: not decoded, no source lines" \
  test "$(jq -c '[.decoded, ([.races[] | .first.line, .second.line] | all(. == null))]' moved.json)" \
  = '[false,true]'
run_status st "$WEFT" races --binary lu.moved --json lu.wtr >back.json
check "--binary finds the moved program again" cmp -s <(jq -c .races lu.json) <(jq -c .races back.json)
mv lu.moved lu

run_status st "$WEFT" trace -q --mode exact --max-events 1500 -o cut.wtr -- ./lu
run_status st "$WEFT" races cut.wtr >cut.txt
check "a trace cut by --max-events: analysed, noted (exit $st)" \
  grep -q "note: the trace is truncated: only its events are checked" cut.txt

# ---- bad input -------------------------------------------------------------------------
mkdir adir
printf 'hello\n' >text
head -c 1000 lu.wtr >cut1000.wtr
expect "no trace" 2 "weft races: expected exactly one trace file (weft races [options] TRACE) (see weft races --help)" \
  "$WEFT" races
expect "two traces" 2 "weft races: expected exactly one trace file (weft races [options] TRACE) (see weft races --help)" \
  "$WEFT" races lu.wtr wq.wtr
expect "missing trace" 1 "weft: nosuch.wtr: cannot open: No such file or directory" \
  "$WEFT" races nosuch.wtr
expect "truncated trace" 1 "weft: cut1000.wtr: truncated (no trailer at the end of its 1000 bytes)" \
  "$WEFT" races cut1000.wtr
expect "--binary missing" 1 "weft: nosuch: cannot read the program: No such file or directory" \
  "$WEFT" races --binary nosuch lu.wtr
expect "--binary a folder" 1 "weft: adir: cannot read the program: is a directory" \
  "$WEFT" races --binary adir lu.wtr
expect "--binary another program" 1 \
  "weft: avn: not the traced program (its build-id differs from the trace's)" \
  "$WEFT" races --binary avn lu.wtr
expect "--binary not an ELF" 1 "weft: text: not an ELF executable" "$WEFT" races --binary text lu.wtr
expect "-o in a missing folder" 1 "weft: nodir/r.json: cannot write there: No such file or directory" \
  "$WEFT" races --json -o nodir/r.json lu.wtr
expect "-o a folder" 1 "weft: adir: is a directory" "$WEFT" races -o adir lu.wtr
expect "stdout full" 1 "weft: stdout: write failed: No space left on device" \
  sh -c "exec \"\$0\" races lu.wtr >/dev/full" "$WEFT"
check "bad input: no file left behind" test -z "$(ls adir)" -a ! -e nodir

# Every `weft: ...` line of the doc's `weft races` list was checked above.
awk '/^## `weft races`/ { on = 1; next } /^## / { on = 0 } on && /^- / ' "$doc" |
  grep -o '`weft: [^`]*`' | tr -d '`' | sort -u >documented
check "docs/errors.md lists weft races' lines ($(wc -l <documented))" test -s documented
unchecked="$(comm -23 documented <(sort -u checked))"
check "every weft races line in docs/errors.md is checked${unchecked:+: $unchecked}" test -z "$unchecked"
finish
