# weft replay's command line: bad options give one line and status 2, bad
# programs one line and status 1; --help; --summary of a runs.jsonl.
source "$(dirname "$0")/lib.sh"
fx="$WEFT_FIXTURES/lost_update"

bad() { # name args...: status 2, exactly one line on stderr, nothing on stdout
  local name="$1"; shift
  run_status st "$WEFT" replay "$@" >"$work/out" 2>"$work/err"
  check "$name: status 2 (got $st)" test "$st" = 2
  check "$name: one line on stderr ($(head -1 "$work/err"))" test "$(wc -l <"$work/err")" = 1
  check "$name: line names weft or the command" grep -Eq '^weft( replay)?: ' "$work/err"
}
bad "depth 0" --depth 0 -- "$fx"
bad "negative runs" --runs -5 -- "$fx"
bad "zero runs" --runs 0 -- "$fx"
bad "unknown sched" --sched fifo -- "$fx"
bad "ideal is not a replay policy" --sched ideal -- "$fx"
bad "radius > k" --sched rpro --steps 10 --threads 2 --radius 11 -- "$fx"
bad "radius without rpro" --sched pct --radius 3 -- "$fx"
bad "unknown points" --points some -- "$fx"
bad "missing pcs file" --points pcs:/nonexistent/x.pcs -- "$fx"
bad "jobs 0" --jobs 0 -- "$fx"
bad "starvation 1" --starvation 1 -- "$fx"
bad "host-parallel without ppct" --host-parallel -- "$fx"
bad "unknown option" --frobnicate -- "$fx"
bad "no program" --sched pct
bad "depth beyond k" --sched pct --depth 12 --steps 10 --threads 2 --points none -- "$fx"
# --seed S --runs N: a campaign of seeds S..S+N-1.
run_status st "$WEFT" replay --sched pct --seed 3 --runs 2 --points none --jobs 1 --output "$work/s3" -- \
  "$WEFT_FIXTURES/lost_update_ok" >/dev/null 2>&1
check "--seed 3 --runs 2: seeds 3 and 4" \
  test "$(jq -r .seed "$work/s3/runs.jsonl" | sort -n | tr '\n' ' ')" = "3 4 "
bad "resume without a campaign" --sched pct --resume --output "$work/nothing" -- "$fx"

# The radius checked against the k a profiling run measured.
run_status st "$WEFT" replay --sched rpro --depth 2 --radius 100000000 --points none --output "$work/rk" \
  -- "$fx" >"$work/out" 2>"$work/err"
check "radius > measured k: status 2 (got $st)" test "$st" = 2
check "radius > measured k: says k was measured" grep -q "profiling run" "$work/err"

run_status st "$WEFT" replay -- /nonexistent/program >"$work/out" 2>"$work/err"
check "missing program: status 1 (got $st), one line" test "$st" = 1 -a "$(wc -l <"$work/err")" = 1
run_status st "$WEFT" replay -- /bin/sh >"$work/out" 2>"$work/err"
check "host binary: status 1 (got $st)" test "$st" = 1
check "host binary: says it is not AArch64" grep -q "AArch64" "$work/err"

run_status st "$WEFT" replay --help >"$work/out" 2>&1
check "--help: status 0" test "$st" = 0
check "--help: lists the options" grep -q -- "--stop-on-hit" "$work/out"

# Defaults are printed: policy, depth, k and n measured, points, seeds.
# The plain default is a search: 5 runs (one per policy) said "no bug" on a
# helper's programs whose bugs 8 to 38% of runs hit.
run_status st "$WEFT" replay --output "$work/def" -- "$WEFT_FIXTURES/lost_update_ok" >"$work/out" 2>&1
check "defaults: every run passes (status $st)" test "$st" = 0
check "defaults: the portfolio" grep -Eq "^weft: portfolio of 5 policies" "$work/out"
check "defaults: 100 runs, 20 of each policy, said as the default" \
  grep -q "^weft: portfolio of 5 policies (random, pct-d1..d3, pos), 100 runs (20 each: --runs 100 shared, the default)" "$work/out"
check "defaults: the table counts the runs made" grep -q "^portfolio: 100 runs over 5 policies" "$work/out"
check "defaults: no bug, and what that bounds" grep -q "^  no bug    no run failed; each interval bounds" "$work/out"
run_status st "$WEFT" replay --output "$work/defbug" -- "$WEFT_FIXTURES/lost_update" >"$work/outbug" 2>&1
check "defaults on a bug: two failing runs printed per policy (status $st)" \
  test "$(grep -c '^  reproduce: weft replay ' "$work/outbug")" -le 10
check "defaults on a bug: the rest said to be in runs.jsonl" \
  grep -q "^($work/defbug/[a-z0-9-]*: more failing runs are not printed: its runs.jsonl lists every run)$" "$work/outbug"
check "defaults on a bug: no 'no bug' line" bash -c "! grep -q '^  no bug ' '$work/outbug'"
check "defaults: a table row per policy" \
  test "$(grep -cE '^  (random|pct-d1|pct-d2|pct-d3|pos) ' "$work/out")" = 5
check "defaults: visible points" grep -q "points visible" "$work/out"
check "defaults: k and n from profiling runs" grep -q "profiling: 3 runs (random, seed 0; pct depth 1, seeds 1..2" "$work/out"
check "defaults: a campaign folder per policy" test -s "$work/def/pct-d3/runs.jsonl"
run_status st "$WEFT" replay --depth 2 -- "$WEFT_FIXTURES/lost_update_ok" >"$work/out" 2>"$work/err"
check "--depth without --sched: refused (status $st)" test "$st" = 2
check "--depth without --sched: says so" grep -q "needs --sched" "$work/err"
run_status st "$WEFT" replay --sched pct --output "$work/d3" -- "$WEFT_FIXTURES/lost_update_ok" \
  >"$work/out" 2>&1
check "--sched pct: depth 3 by default" grep -Eq "^weft: pct, depth 3, k = [0-9]+ \(the largest of 3 profiling runs. steps\), n = 3, points visible" "$work/out"

# --for SEC: a time budget. Without --runs, seeds 1, 2, ... until no run may
# start; the runs under way finish and count. (How many fit is the host's
# business: only that there were some, in order, is checked.)
run_status st "$WEFT" replay --sched pct --steps 100 --threads 3 --jobs 2 --for 5 --output "$work/for" -- \
  "$WEFT_FIXTURES/lost_update_ok" >"$work/out" 2>&1
nfor="$(wc -l <"$work/for/runs.jsonl" 2>/dev/null || echo 0)"
check "--for 5: a passing campaign (status $st)" test "$st" = 0
check "--for 5: says it runs what fits" grep -q "^weft: seeds from 1, as many as --for 5 s allows" "$work/out"
check "--for 5: several runs ($nfor)" test "$nfor" -ge 2
check "--for 5: seeds 1..$nfor, each once" \
  test "$(jq -s -c '[.[].seed] == [range(1; length + 1)]' "$work/for/runs.jsonl")" = true
check "--for 5: says why it stopped" grep -q "^weft: no run started after 5 s (--for): $nfor runs this time$" "$work/out"
check "--for 5: the summary counts them" grep -Eq "^  runs +$nfor$" "$work/out"
# Its campaign.json says it ran by time: --resume needs to be told how much more.
bad "--resume of a --for campaign, with neither --for nor --runs" --sched pct --steps 100 --threads 3 \
  --resume --output "$work/for" -- "$WEFT_FIXTURES/lost_update_ok"
check "--resume of a --for campaign: says what to give" \
  grep -q "ran as long as --for 5 s allowed: give --for SEC or --runs N to say how much more" "$work/err"
run_status st "$WEFT" replay --sched pct --steps 100 --threads 3 --runs "$((nfor + 3))" --resume \
  --output "$work/for" -- "$WEFT_FIXTURES/lost_update_ok" >"$work/out" 2>&1
check "--resume --runs $((nfor + 3)): the 3 seeds after it (status $st)" \
  test "$(jq -s -c '[.[].seed] == [range(1; length + 1)] and length == '"$((nfor + 3))" "$work/for/runs.jsonl")" = true
# With --runs, whichever ends first.
run_status st "$WEFT" replay --sched pct --steps 100 --threads 3 --runs 4 --for 600 --output "$work/for4" -- \
  "$WEFT_FIXTURES/lost_update_ok" >"$work/out" 2>&1
check "--runs 4 --for 600: 4 runs (status $st)" test "$(wc -l <"$work/for4/runs.jsonl")" = 4
check "--runs 4 --for 600: no word of the budget at the end" bash -c "! grep -q 'no run started after' '$work/out'"
# The portfolio: its policies take turns until the time is up.
run_status st "$WEFT" replay --steps 100 --threads 3 --jobs 2 --for 5 --output "$work/forp" -- \
  "$WEFT_FIXTURES/lost_update_ok" >"$work/out" 2>&1
check "portfolio --for 5: as many runs as fit" \
  grep -q "^weft: portfolio of 5 policies (random, pct-d1..d3, pos), as many runs as --for 5 s allows" "$work/out"
check "portfolio --for 5: its random member ran (status $st)" test -s "$work/forp/random/runs.jsonl"
check "portfolio --for 5: says why it stopped" grep -q "^weft: no run started after 5 s (--for)$" "$work/out"

# --summary of a hand-written runs.jsonl: 10 seeds (one of them twice), 3 hits.
line() { # seed verdict
  printf '{"seed":%d,"verdict":"%s","policy":"pct","depth":2,"radius":null,"n":2,"k":100,"points":"none","steps":90,"overrides":0,"threads":2,"makespan_ns":1000,"wall_s":0.5}\n' "$1" "$2"
}
{ for s in 1 2 3 4 5 6 7 8 9 10; do
    case $s in 3) v=deadlock ;; 6) v=bug ;; 9) v=crash ;; *) v=pass ;; esac
    line "$s" "$v"
  done
  line 4 pass
} >"$work/hand.jsonl"
run_status st "$WEFT" replay --summary "$work/hand.jsonl" >"$work/out" 2>&1
check "--summary: status 0" test "$st" = 0
check "--summary: 10 runs (a repeated seed counts once)" grep -q "runs      10$" "$work/out"
# Clopper-Pearson 95% for 3/10: 6.674% .. 65.25%.
check "--summary: 3 hits, 30%, Clopper-Pearson interval" \
  grep -q "hits      3 = 30% (95% Clopper-Pearson interval 6.674% .. 65.25%" "$work/out"
check "--summary: bound 1/(n k) = 0.5%" grep -q "bound     0.5% per run = 1/(n k^(d-1))" "$work/out"
check "--summary: first hit seed 3 after 3 runs" grep -q "first hit seed 3 (run 3 of" "$work/out"
check "--summary: no departed line when no run departed" bash -c "! grep -q departed '$work/out'"
# A run whose gates gave up waiting (a host stall) is said not to repeat by seed.
sed 's/^{"seed":5,/{"seed":5,"departures":2,/' "$work/hand.jsonl" >"$work/dep.jsonl"
"$WEFT" replay --summary "$work/dep.jsonl" >"$work/out" 2>&1 || true
check "--summary: a run that left the policy's order is counted" \
  grep -q "departed  1 run left the policy's order" "$work/out"
# A damaged line, and a last line cut short: left out, and said.
{ line 1 pass; echo '{garbage'; line 2 bug; printf '{"seed":3,"verd'; } >"$work/damaged.jsonl"
run_status st "$WEFT" replay --summary "$work/damaged.jsonl" >"$work/out" 2>"$work/err"
check "--summary, damaged lines: status 0, 2 runs" \
  bash -c "test $st = 0 && grep -q 'runs      2$' '$work/out'"
check "--summary, damaged lines: the damaged one named" \
  grep -qx "weft: $work/damaged.jsonl:2: not a run's line (damaged), left out" "$work/err"
check "--summary, damaged lines: the cut one named" \
  grep -q "^weft: $work/damaged.jsonl:4: a line cut short, left out" "$work/err"
printf '{"seed":11,"verdict":"pass","policy":"rpro","depth":2,"radius":3,"n":2,"k":100,"points":"none"}\n' \
  >>"$work/hand.jsonl"
run_status st "$WEFT" replay --summary "$work/hand.jsonl" >"$work/out" 2>"$work/err"
check "--summary of mixed configurations: refused (status $st)" test "$st" = 1
check "--summary of mixed configurations: one line" test "$(wc -l <"$work/err")" = 1
# random draws nothing from k: its plan line and summary leave k out.
run_status st timeout -s KILL 120 "$WEFT" replay --sched random --runs 2 --jobs 1 \
  --output "$work/rnd" -- "$fx" >"$work/rnd.out" 2>&1
check "--sched random: the plan line names no k" grep -Eq "^weft: random, n = [0-9]+, points visible" "$work/rnd.out"
check "--sched random: the summary names no k" grep -Eq "^summary: random, n = [0-9]+, points visible; seeds" "$work/rnd.out"

# A profiling run that hits the bug may run far longer than the program
# does: a lost update on a parallel for's work counter rewinds it, and the
# items run again (a helper's program: 8094 steps against 1044 and 1019).
# k from it spread PCT's change points over steps only a failed run
# reaches (8 hits in 100; with the passing runs' count, 48): k is then the
# passing runs' most steps, and the plan line says so.
cat >"$work/pfor.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
#define NTHREADS 32
#define NITEMS 256
static int next_item, processed[NITEMS];
static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        int i = *(volatile int *)&next_item; /* the bug: a claim in two steps */
        *(volatile int *)&next_item = i + 1;
        if (i >= NITEMS)
            return NULL;
        __atomic_fetch_add(&processed[i], 1, __ATOMIC_RELAXED);
    }
}
int main(void)
{
    pthread_t t[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NITEMS; i++)
        if (processed[i] != 1) {
            printf("BUG: item %d processed %d times\n", i, processed[i]);
            return 1;
        }
    return 0;
}
EOF
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/pfor" "$work/pfor.c"
run_status st timeout -s KILL 300 "$WEFT" replay --sched pct --runs 4 --jobs 2 --timeout 60 \
  --output "$work/pfor-camp" -- "$work/pfor" >"$work/pfor.out" 2>&1
pk="$(jq -r .k "$work/pfor-camp/campaign.json")"
check "a failing profiling run far longer: k is the passing runs' most steps ($pk)" \
  grep -q "^weft: pct, depth 3, k = $pk (the passing profiling runs' most steps (a failing one: [0-9]*))" "$work/pfor.out"
fk="$(sed -n "s/.*(a failing one: \([0-9]*\)).*/\1/p" "$work/pfor.out" | head -1)"
check "a failing profiling run far longer: more than twice k (${fk:-none} > 2 x $pk)" \
  test "${fk:-0}" -gt "$((2 * pk))"

# An option of weft's after the program goes to the program: a note says so
# (a helper appended --explain to a reproduce line and got no explanation).
run_status st timeout -s KILL 120 "$WEFT" replay --sched pct --seed 1 --steps 10 --threads 2 \
  --points none --output "$work/after" -- "$fx" --explain >"$work/after.out" 2>"$work/after.err"
check "--explain after the program: a note names it" \
  grep -q "^weft: note: --explain after the program is the program's argument; weft replay's options go before --" "$work/after.err"
check "--explain after the program: no explanation" bash -c "! grep -q '^schedule:' '$work/after.out'"

# Two threads stream through one shared table: every access is a visible
# point, k is in the tens of thousands, and every PCT run draws starvation
# overrides. weft names --points races after profiling, and the summary
# says the bound covers none of the runs instead of counting those beyond k.
cat >"$work/crowded.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
#define N 6000
static int table[N];
static void *writer(void *a)
{
    (void)a;
    for (int i = 0; i < N; i++)
        table[i] = i;
    return NULL;
}
int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    long sum = 0;
    for (int i = 0; i < N; i++)
        sum += table[i];
    pthread_join(t, NULL);
    printf("%ld\n", sum >= 0);
    return 0;
}
EOF
cross_cc crowded
run_status st timeout -s KILL 300 "$WEFT" replay --sched pct --runs 4 --jobs 2 --timeout 60 \
  --output "$work/crowded-camp" -- "$work/crowded" >"$work/crowded.out" 2>&1
check "a crowded program: k above 10,000 names --points races" \
  grep -q "^weft: profiling: k = [0-9]*: most steps are plain accesses.*--points races" "$work/crowded.out"
check "a crowded program: every run overridden, the bound covers none" \
  grep -q "^  overrides every run had a starvation override.*the bound covers none of them" "$work/crowded.out"
check "a crowded program: no line about the runs beyond k" \
  bash -c "! grep -q '^  beyond k' '$work/crowded.out'"

finish
