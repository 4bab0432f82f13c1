# weft replay's verdicts on guests that fail in each way: crash, abort,
# deadlock (with who waits on what), timeout (livelock), wrong output,
# unexpected exit status; and pass when output and status are as expected.
source "$(dirname "$0")/lib.sh"

one() { # name expected-status expected-verdict weft-replay-args...
  local name="$1" want_st="$2" want="$3"; shift 3
  run_status st "$WEFT" replay --seed 1 --jobs 1 --output "$work/$name" "$@" >"$work/$name.log" 2>&1
  check "$name: status $want_st (got $st)" test "$st" = "$want_st"
  check "$name: verdict $want" test "$(jq -r .verdict "$work/$name/runs.jsonl" 2>/dev/null)" = "$want"
  check "$name: printed" grep -q "^seed 1: $want" "$work/$name.log"
}

one segv 10 crash --sched pct --points none -- "$WEFT_FIXTURES/fail_segv"
check "segv: names the signal" grep -q "signal 11" "$work/segv.log"
# and the faulting access: the store through the null pointer (line 30).
check "segv: names the faulting access" \
  grep -q '^seed 1: crash: killed by signal 11 (Segmentation fault): T1 at worker (fail_segv.c:30), writing 0x0$' \
  "$work/segv.log"
check "segv: so does its JSON line" \
  test "$(jq -r .detail "$work/segv/runs.jsonl")" = "killed by signal 11 (Segmentation fault): T1 at worker (fail_segv.c:30), writing 0x0"
one abort 10 abort --sched pct --points none -- "$WEFT_FIXTURES/fail_abort"
check "abort: names the signal" grep -q "signal 6" "$work/abort.log"
# (the start of the last block of its own code with a callback: with no
# points, the one that reads fa_state before the abort)
check "abort: names who raised it and where it was in the program" \
  grep -Eq '^seed 1: abort: killed by signal 6 \(Aborted\): T1 raised it, last in the program at worker \(fail_abort.c:1[0-5]\)$' \
  "$work/abort.log"
# A guest killed by a signal writes no record; its policy kept its counts in
# a file mapping: the run's steps are known, and profiling (whose runs all
# abort here) took k from them, not from the trace's every library event.
check "abort: its steps are known" test "$(jq '.steps | type' "$work/abort/runs.jsonl")" = '"number"'
check "abort: printed with its steps" grep -Eq "^  steps [0-9]+, change points \[" "$work/abort.log"
check "abort: profiling counted its dying runs" grep -q "note: a profiling run died of signal 6" "$work/abort.log"
check "abort: not from a trace" test "$(grep -c 'counted from a trace' "$work/abort.log")" = 0
check "abort: no status file left" test -z "$(find "$work/abort" -name '*.status')"
check "segv: its steps are known" test "$(jq '.steps | type' "$work/segv/runs.jsonl")" = '"number"'

one deadlock 10 deadlock --sched random --points none -- "$WEFT_FIXTURES/fail_deadlock"
check "deadlock: two workers wait on fd_a and fd_b" \
  test "$(jq -c '[.waits[].object | select(. != null)] | sort' "$work/deadlock/runs.jsonl")" = '["fd_a","fd_b"]'
check "deadlock: each wait names thread, futex, function" \
  test "$(jq '[.waits[] | select(.thread >= 0 and (.futex | startswith("0x")) and .function != null)] | length' \
    "$work/deadlock/runs.jsonl")" -ge 2
check "deadlock: not a timeout" test "$(jq -r .verdict "$work/deadlock/runs.jsonl")" = deadlock
# With visible points, each wait names the program's own lock call: the
# second lock of each worker (fail_deadlock.c lines 18 and 27), not the
# last line of the program the thread ran.
one deadlock_call 10 deadlock --sched random -- "$WEFT_FIXTURES/fail_deadlock"
check "deadlock: each wait names the blocked lock call's line" \
  test "$(jq -c '[.waits[] | select(.call == "pthread_mutex_lock") | .line] | sort' \
    "$work/deadlock_call/runs.jsonl")" = '[18,27]'
check "deadlock: the line is printed" grep -q "called from .*fail_deadlock.c:18" "$work/deadlock_call.log"

# A thread spinning on a flag nobody sets while main waits to join it: the
# only thread that can run spins without progress, a livelock, found long
# before the time limit. Steps and threads given: no profiling run.
t0=$(date +%s)
one spin 10 livelock --sched pct --points none --steps 100 --threads 2 --timeout 60 \
  -- "$WEFT_FIXTURES/fail_spin"
check "spin: ended well before the limit ($(($(date +%s) - t0)) s)" test $(($(date +%s) - t0)) -lt 50
check "spin: the detail names the spinner's line" grep -q "T1 at worker (fail_spin.c:13)" "$work/spin.log"
# A run that is simply too long: killed at the limit, verdict timeout, not
# counted as a bug found (status 0).
one slow 0 timeout --sched pct --points none --steps 100 --threads 8 --timeout 2 \
  -- "$WEFT_FIXTURES/parallel8" 100000000
check "slow: no qemu left behind" bash -c "! pgrep -f 'qemu-aarch6[4].*${work}/slow/' >/dev/null"

printf 'order_violation: user computed 42\n' >"$work/right.txt"
printf 'order_violation: user computed 43\n' >"$work/wrong.txt"
one output_ok 0 pass --sched pct --points none --expect-output "$work/right.txt" \
  -- "$WEFT_FIXTURES/order_violation_ok"
one output_wrong 10 wrong_output --sched pct --points none --expect-output "$work/wrong.txt" \
  -- "$WEFT_FIXTURES/order_violation_ok"
check "output_wrong: says where" grep -q "differs from .*wrong.txt at line 1" "$work/output_wrong.log"
one exit 10 exit --sched pct --points none --expect-exit 1 -- "$WEFT_FIXTURES/order_violation_ok"
check "exit: says which status" grep -q "exit status 0, expected 1" "$work/exit.log"
# Every profiling run ended with the same status, not the expected one, and
# without a BUG line: weft names the option, in case that is the normal end.
check "exit: profiling names --expect-exit" grep -q \
  "every run exited with status 0, a failing run's status (a passing run's is 1): if it is the program's normal status, --expect-exit 0" \
  "$work/exit.log"
# The oracle's BUG line makes the verdict "bug", with the line as detail.
one bug 10 bug --sched pct --points none -- "$WEFT_FIXTURES/order_violation"
check "bug: the oracle's line is the detail" \
  test "$(jq -r .detail "$work/bug/runs.jsonl")" = "BUG: order violation: ov_config read before main initialised it"
# lost_update's profiling runs all print its BUG line and exit 3: a bug
# found, no normal status, so no hint.
run_status st "$WEFT" replay --sched pct --seed 1 -o "$work/lu" -- "$WEFT_FIXTURES/lost_update" </dev/null \
  >"$work/lu.log" 2>&1
check "lost_update: its profiling runs found the bug" grep -q "note: a profiling run exited with status 3" "$work/lu.log"
check "lost_update: a BUG line is no normal status (no --expect-exit hint)" \
  test "$(grep -c "if it is the program's normal status" "$work/lu.log")" = 0

# PPCT with the high set running at once on the host: a bug-free 8-thread
# program always passes (no lost wake-up, no hang), a racy one still fails
# sometimes, and the reproduce command keeps the mode.
run_status st "$WEFT" replay --sched ppct --depth 2 --host-parallel --runs 20 --jobs 2 --timeout 60 \
  --output "$work/hp8" -- "$WEFT_FIXTURES/parallel8" 100 >"$work/hp8.log" 2>&1
check "host-parallel parallel8: 20 runs pass (status $st)" \
  test "$st:$(jq -c '[.runs, .verdicts.pass]' "$work/hp8/summary.json")" = "0:[20,20]"
check "host-parallel: recorded in campaign.json" test "$(jq .host_parallel "$work/hp8/campaign.json")" = true
run_status st "$WEFT" replay --sched ppct --depth 2 --host-parallel --runs 100 --jobs 2 --timeout 60 \
  --output "$work/hplu" -- "$WEFT_FIXTURES/lost_update" >"$work/hplu.log" 2>&1
check "host-parallel lost_update: some of 100 runs lose an update (status $st)" \
  test "$st:$(jq -r '[.verdicts | to_entries[] | select(.value > 0) | .key] | sort | join(",")' "$work/hplu/summary.json")" = "10:bug,pass"
check "host-parallel: the reproduce command keeps --host-parallel" grep -q "reproduce: .*--host-parallel" "$work/hplu.log"

# A run that starts more threads over its life than there are processing
# elements (each thread has its own, never reused) must not pass for a
# deadlock: the campaign stops and says what to give.
cat >"$work/churn.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
static void *work(void *arg) { return arg; }
int main(void)
{
    for (int i = 0; i < 12; i++) {
        pthread_t t;
        pthread_create(&t, NULL, work, NULL);
        pthread_join(t, NULL);
    }
    printf("churned\n");
    return 0;
}
EOF
cross_cc churn
run_status st "$WEFT" replay --sched pct --runs 4 --max-threads 8 -o "$work/churn8" -- "$work/churn" \
  </dev/null >"$work/churn8.log" 2>&1
check "13 threads, --max-threads 8: exit 1 (got $st)" test "$st" = 1
check "13 threads, --max-threads 8: says what to give" \
  grep -q "churn started more than 8 threads in one run .*: give --max-threads 32" "$work/churn8.log"
check "13 threads, --max-threads 8: no deadlock reported" test ! -s "$work/churn8/runs.jsonl"
run_status st "$WEFT" replay --sched pct --runs 4 --max-threads 16 -o "$work/churn16" -- "$work/churn" \
  </dev/null >"$work/churn16.log" 2>&1
check "13 threads, --max-threads 16: 4 runs pass (status $st)" \
  test "$st:$(jq -c '[.runs, .verdicts.pass]' "$work/churn16/summary.json" 2>/dev/null)" = "0:[4,4]"
check "13 threads, --max-threads 16: campaign.json has it" \
  test "$(jq .max_threads "$work/churn16/campaign.json")" = 16
run_status st "$WEFT" replay --sched pct --runs 2 --max-threads 16 --expect-exit 1 -o "$work/churn16x" \
  -- "$work/churn" </dev/null >"$work/churn16x.log" 2>&1
check "13 threads, --max-threads 16: the reproduce command keeps it" \
  grep -q "reproduce: .*--max-threads 16" "$work/churn16x.log"
# ---- a mutex left locked by a thread that exited ------------------------------------
# The deadlock line said only that main waited; the mutex's owner field
# names the thread that holds it, gone (a helper's cancelled worker).
cat >"$work/leftlocked.c" <<'EOF'
#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int done;
static void *worker(void *a)
{
    pthread_mutex_lock(&m);
    done = 1;
    return a; /* forgets to unlock */
}
int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    pthread_mutex_lock(&m);
    return done != 1;
}
EOF
cross_cc leftlocked
run_status st timeout -s KILL 120 "$WEFT" replay --sched pct --seed 1 --timeout 30 \
  --output "$work/leftlocked-run" -- "$work/leftlocked" </dev/null >"$work/leftlocked.log" 2>&1
check "left locked: a deadlock (status $st)" test "$(jq -r .verdict "$work/leftlocked-run/runs.jsonl")" = deadlock
check "left locked: held by T1, which exited without unlocking it" \
  grep -q "held by T1, which exited without unlocking it" <<<"$(jq -r .detail "$work/leftlocked-run/runs.jsonl")"

# A join while holding the lock the joined thread needs: the join names the
# thread it waits for (it said only which futex), the lock its holder, and
# the lock by the program's name for it (acct+72 before).
cat >"$work/joinheld.c" <<'EOF'
#include <pthread.h>
static struct account {
    long balance;
    pthread_mutex_t mu;
} acct[2] = {{0, PTHREAD_MUTEX_INITIALIZER}, {0, PTHREAD_MUTEX_INITIALIZER}};
static void *worker(void *a)
{
    pthread_mutex_lock(&acct[1].mu);
    acct[1].balance++;
    pthread_mutex_unlock(&acct[1].mu);
    return a;
}
int main(void)
{
    pthread_t t;
    pthread_mutex_lock(&acct[1].mu);
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL); /* the bug: the lock is still held */
    pthread_mutex_unlock(&acct[1].mu);
    return acct[1].balance != 1;
}
EOF
# -g: the lock's name comes from the debug info.
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/joinheld" "$work/joinheld.c"
run_status st timeout -s KILL 120 "$WEFT" replay --sched pct --seed 1 --timeout 30 \
  --output "$work/joinheld-run" -- "$work/joinheld" </dev/null >"$work/joinheld.log" 2>&1
jdetail="$(jq -r .detail "$work/joinheld-run/runs.jsonl")"
check "join while holding: a deadlock" test "$(jq -r .verdict "$work/joinheld-run/runs.jsonl")" = deadlock
check "join while holding: T0 waits for T1 to exit" grep -q "T0 waits on futex .*, for T1 to exit" <<<"$jdetail"
check "join while holding: T1's lock held by T0" grep -q "T1 waits on futex .*, held by T0" <<<"$jdetail"
check "join while holding: the lock named acct[1].mu" grep -qF "(acct[1].mu) in pthread_mutex_lock" <<<"$jdetail"
check "join while holding: joins in the waits" \
  test "$(jq -c '[.waits[] | .joins]' "$work/joinheld-run/runs.jsonl")" = "[1,null]"

# A robust mutex whose owner exited: on Linux the next lock returns
# EOWNERDEAD; qemu-user answers set_robust_list with ENOSYS, so the lock is
# never handed on (plain qemu hangs too). The verdict says why.
cat >"$work/robust.c" <<'EOF'
#include <errno.h>
#include <pthread.h>
static pthread_mutex_t m;
static void *worker(void *a)
{
    pthread_mutex_lock(&m);
    return a; /* dies holding it */
}
int main(void)
{
    pthread_mutexattr_t at;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&m, &at);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    if (pthread_mutex_lock(&m) == EOWNERDEAD)
        pthread_mutex_consistent(&m);
    pthread_mutex_unlock(&m);
    return 0;
}
EOF
cross_cc robust
run_status st timeout -s KILL 120 "$WEFT" replay --sched pct --seed 1 --timeout 30 \
  --output "$work/robust-run" -- "$work/robust" </dev/null >"$work/robust.log" 2>&1
check "a robust mutex left by a dead owner: the deadlock says qemu-user keeps no robust list" \
  grep -q "held by T1, which exited without unlocking it (a robust mutex: qemu-user keeps no robust list, so no EOWNERDEAD)" <<<"$(jq -r .detail "$work/robust-run/runs.jsonl")"

# A deadlock of two threads with forty bystanders queued on one of its
# locks: the detail is cut at its length, and in thread order the cycle's
# second thread came past the cut (a helper's striped lock table: 6 of 9
# verdicts never named it). The cycle comes first, the rest is counted.
cat >"$work/crowd.c" <<'EOF'
#include <pthread.h>
#include <semaphore.h>
#define BYSTANDERS 40
static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static sem_t b_taken;
static void *bystander(void *arg)
{
    pthread_mutex_lock(&a);
    pthread_mutex_unlock(&a);
    return arg;
}
static void *partner(void *arg)
{
    pthread_mutex_lock(&b);
    sem_post(&b_taken);
    pthread_mutex_lock(&a); /* held by main: the cycle */
    return arg;
}
int main(void)
{
    pthread_t t[BYSTANDERS + 1];
    sem_init(&b_taken, 0, 0);
    pthread_mutex_lock(&a);
    for (int i = 0; i < BYSTANDERS; i++)
        pthread_create(&t[i], NULL, bystander, NULL);
    pthread_create(&t[BYSTANDERS], NULL, partner, NULL);
    sem_wait(&b_taken);
    pthread_mutex_lock(&b); /* held by the partner */
    return 0;
}
EOF
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/crowd" "$work/crowd.c"
run_status st timeout -s KILL 120 "$WEFT" replay --sched pct --seed 1 --timeout 30 \
  --output "$work/crowd-run" -- "$work/crowd" </dev/null >"$work/crowd.log" 2>&1
cdetail="$(jq -r .detail "$work/crowd-run/runs.jsonl")"
check "a cycle among bystanders: a deadlock" test "$(jq -r .verdict "$work/crowd-run/runs.jsonl")" = deadlock
check "a cycle among bystanders: the cycle first" \
  grep -q "^T0 waits on futex [^;]* (b) in pthread_mutex_lock, called from main (crowd.c:[0-9]*), held by T41; T41 waits on futex [^;]* (a) in pthread_mutex_lock, called from partner (crowd.c:[0-9]*), held by T0;" <<<"$cdetail"
check "a cycle among bystanders: the rest counted" grep -q "; and [0-9]* more waiting (runs.jsonl's waits lists every one)$" <<<"$cdetail"
check "a cycle among bystanders: every waiter in the JSON" test "$(jq '.waits | length' "$work/crowd-run/runs.jsonl")" = 42

# ---- a fault the program survives, then a crash ---------------------------------
# The first fault noted is the run's (a second thread crashing on the same
# NULL while qemu exits is not), so a fault the program's own handler
# survives must be forgotten: by its rt_sigreturn, or, when the handler
# siglongjmps, by the thread's next schedule point. Then main's own crash
# is the verdict, not the worker's survived probe.
cat >"$work/survive.c" <<'EOF'
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
static sigjmp_buf back;
static int *volatile nothing;
static char *page;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int probes;
static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_addr == (void *)0)
        siglongjmp(back, 1); /* the NULL probe: jump back */
    mprotect(page, 4096, PROT_READ | PROT_WRITE); /* the page: return and retry */
}
static void *worker(void *a)
{
    (void)a;
    page[8] = 1;
    if (!sigsetjmp(back, 1))
        probes += *nothing;
    pthread_mutex_lock(&m);
    probes++;
    pthread_mutex_unlock(&m);
    return NULL;
}
int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_mutex_lock(&m);
    probes++;
    pthread_mutex_unlock(&m);
    pthread_join(t, NULL);
    signal(SIGSEGV, SIG_DFL);
    printf("%d %d\n", probes, page[8]);
    return *nothing; /* the run's crash */
}
EOF
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/survive" "$work/survive.c"
for seed in 1 2 3; do
  run_status st timeout -s KILL 120 "$WEFT" replay --sched pct --seed "$seed" --timeout 30 \
    --output "$work/survive-$seed" -- "$work/survive" </dev/null >"$work/survive-$seed.log" 2>&1
  check "survived faults, then main's crash, seed $seed: the verdict names main" \
    grep -q "^crash: killed by signal 11 (Segmentation fault): T0 at main (survive.c:" \
    <<<"$(jq -r '"\(.verdict): \(.detail)"' "$work/survive-$seed/runs.jsonl")"
done

# ---- a deadlock while a thread sleeps in a read only the program can end ----------
# An ABBA deadlock between main and T2 while T1 reads a pipe T2 would write
# ran to --timeout (a timeout, no hit): a thread in a read counted as one
# the outside world may wake. A pipe whose write end the program holds, or
# an eventfd, cannot be: such a reader waits as a futex waiter does. A
# child process may write the pipe too: once the program forked, its
# readers are not counted so (the twin below passes).
cat >"$work/readlock.c" <<'EOF'
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static int pfd[2];
static void *reader(void *x)
{
    char c;
    if (read(pfd[0], &c, 1) != 1) /* READ_LINE */
        abort();
    return x;
}
static void *t2(void *x)
{
    pthread_mutex_lock(&b);
    pthread_mutex_lock(&a);
    pthread_mutex_unlock(&a);
    pthread_mutex_unlock(&b);
    if (write(pfd[1], "x", 1) != 1)
        abort();
    return x;
}
int main(int argc, char **argv)
{
    (void)argv;
    if (pipe(pfd))
        return 2;
    pthread_t r, t;
    pthread_create(&r, 0, reader, 0);
    if (argc > 1) { /* the twin: a child writes the byte, late; no t2 */
        pid_t c = fork();
        if (c == 0) {
            usleep(200000);
            _exit(write(pfd[1], "y", 1) != 1);
        }
        pthread_join(r, 0);
        waitpid(c, 0, 0);
        return 0;
    }
    pthread_create(&t, 0, t2, 0);
    pthread_mutex_lock(&a);
    pthread_mutex_lock(&b);
    pthread_mutex_unlock(&b);
    pthread_mutex_unlock(&a);
    pthread_join(t, 0);
    pthread_join(r, 0);
    return 0;
}
EOF
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/readlock" "$work/readlock.c" ||
  fail "the cross compiler failed on readlock.c"
readline="$(grep -n READ_LINE "$work/readlock.c" | cut -d: -f1)"
run_status st timeout -s KILL 300 "$WEFT" replay --sched pct --runs 30 --jobs 2 --timeout 10 \
  --output "$work/readlock-run" -- "$work/readlock" </dev/null >"$work/readlock.log" 2>&1
verdicts="$(jq -r .verdict "$work/readlock-run/runs.jsonl" | sort | uniq -c | xargs)"
check "a deadlock beside a reader of the program's own pipe: deadlock verdicts, no timeout ($verdicts)" \
  bash -c "grep -q deadlock <<<'$verdicts' && ! grep -q timeout <<<'$verdicts'"
check "the reader is named, at its read" \
  grep -q "T1 asleep in read, last in the program at reader (readlock.c:$readline)" \
  <<<"$(jq -r 'select(.verdict == "deadlock") | .detail' "$work/readlock-run/runs.jsonl" | head -1)"
run_status st timeout -s KILL 300 "$WEFT" replay --sched pct --runs 6 --jobs 2 --timeout 10 \
  --output "$work/readchild-run" -- "$work/readlock" child </dev/null >"$work/readchild.log" 2>&1
check "a reader of a pipe a child process writes late: every run passes (status $st; $(jq -r .verdict "$work/readchild-run/runs.jsonl" | sort | uniq -c | xargs))" \
  test "$st $(jq -r .verdict "$work/readchild-run/runs.jsonl" | sort | uniq -c | xargs)" = "0 6 pass"

finish
