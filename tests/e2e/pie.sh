# A position-independent program (what aarch64-linux-gnu-gcc builds by
# default) runs where qemu loads it, not at its link-time addresses: weft
# info, weft races, --explain and a deadlock's waits name its functions,
# lines and variables all the same, --filter var: records its variable, and a
# crashed run's salvaged trace knows where the program was.
source "$(dirname "$0")/lib.sh"
prog="$WEFT_FIXTURES/lost_update_dynamic"
sys=(--sysroot "$WEFT_SYSROOT")
check "lost_update_dynamic is position-independent" \
  bash -c "readelf -h '$prog' | grep -q 'Type:.*DYN'"

run_status st timeout -s KILL 120 "$WEFT" trace -q "${sys[@]}" -o "$work/t.wtr" -- "$prog" >/dev/null
check "trace: exits 0 (status $st)" test "$st" = 0
"$WEFT" info "$work/t.wtr" >"$work/info" 2>&1
check "info: says where the code was loaded" grep -Eq '^code at +0x[0-9a-f]+$' "$work/info"
check "info: names counter among the shared variables" grep -Eq '^  counter: ' "$work/info"
check "info: lists the shared objects and where they were" \
  grep -Eq '^objects +ld-linux-aarch64.so.1 at 0x[0-9a-f]+, libc.so.6 at 0x[0-9a-f]+' "$work/info"
run_status st "$WEFT" races "$work/t.wtr" >"$work/races" 2>&1
check "races: on counter" grep -q "^race 1 on counter (0x" "$work/races"
check "races: the accesses are in worker, with their lines" \
  grep -Eq "pc 0x[0-9a-f]+ in worker \(.*lost_update.c:[0-9]+\)" "$work/races"
# A pc in the C library or the loader is no function of the program's, even
# past the program's last symbol (it was named _fini).
check "races: no library pc named as the program's" bash -c "! grep -q '_fini' '$work/races'"

run_status st timeout -s KILL 120 "$WEFT" trace -q "${sys[@]}" --filter var:counter -o "$work/v.wtr" \
  -- "$prog" >/dev/null
"$WEFT" info "$work/v.wtr" >"$work/vinfo" 2>&1
check "--filter var:counter: the workers' accesses to counter are recorded" \
  grep -Eq '^  counter: .*T1 \(RW\)x50, T2 \(RW\)x50' "$work/vinfo"

# A campaign's failing seed explained: the switches and the race by name.
run_status st timeout -s KILL 300 "$WEFT" replay "${sys[@]}" --sched pct --depth 2 --runs 40 --jobs 2 \
  --timeout 30 -o "$work/c" -- "$prog" </dev/null >"$work/c.log" 2>&1
seed="$(jq -r 'select(.verdict != "pass") | .seed' "$work/c/runs.jsonl" 2>/dev/null | head -n 1)"
check "replay: a pct campaign finds the lost update (status $st)" test -n "$seed"
if [ -n "$seed" ]; then
  run_status st timeout -s KILL 120 "$WEFT" replay "${sys[@]}" --sched pct --depth 2 --seed "$seed" \
    --explain -o "$work/x" -- "$prog" </dev/null >"$work/x.log" 2>&1
  check "explain: a switch names where the thread was (worker, its line)" \
    grep -Eq "T[0-9] at worker \(lost_update.c:[0-9]+\)" "$work/x.log"
  check "explain: the race is on counter" grep -Eq "race 1 on counter \(0x" "$work/x.log"
fi

# A crash: the run dies by a signal, its trace is salvaged from the spool,
# whose header learnt the load address while the run went on.
cat >"$work/segv.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
static int *volatile p;
static void *clear(void *a) { (void)a; p = 0; return NULL; }
int main(void)
{
    static int v;
    p = &v;
    pthread_t t;
    pthread_create(&t, 0, clear, 0);
    pthread_join(t, 0);
    *p = 3;
    printf("%d\n", v);
    return 0;
}
EOF
if user_cc segv.c -g -O1; then
  run_status st timeout -s KILL 120 "$WEFT" trace -q -o "$work/s.wtr" -- "$work/segv" >/dev/null 2>&1
  check "crash: killed by SIGSEGV (status $st)" test "$st" = 139
  "$WEFT" info "$work/s.wtr" >"$work/sinfo" 2>&1
  check "crash: the salvaged trace knows the load address" grep -Eq '^code at +0x[0-9a-f]+$' "$work/sinfo"
  check "crash: and names p" grep -Eq '^  p: ' "$work/sinfo"
  check "crash: and knows the shared objects" grep -Eq '^objects +.*libc.so.6 at 0x' "$work/sinfo"
  # A campaign's crash names the faulting access where qemu loaded the program,
  # made by the main thread of a fork server's child (its tid is the child's pid).
  run_status st timeout -s KILL 120 "$WEFT" replay --sched pct --runs 2 --jobs 1 -o "$work/sc" -- \
    "$work/segv" </dev/null >"$work/sc.log" 2>&1
  check "crash: a campaign's crash (status $st)" test "$st" = 10
  check "crash: its verdict names the faulting store in main" \
    grep -q '^seed 1: crash: killed by signal 11 (Segmentation fault): T0 at main (segv.c:12), writing 0x0$' \
    "$work/sc.log"
fi

# weft races reads the program's atomics from its code, at the pcs where it
# ran: a relaxed read-modify-write orders nothing, so the handoff of data
# below is a race; read as acquire and release (the instructions not found)
# it would be hidden.
cat >"$work/relaxed.c" <<'EOF'
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
static atomic_int flag;
static int data;
static void *producer(void *a)
{
    (void)a;
    data = 42;
    atomic_fetch_add_explicit(&flag, 1, memory_order_relaxed);
    return NULL;
}
int main(void)
{
    pthread_t t;
    pthread_create(&t, 0, producer, 0);
    while (atomic_fetch_add_explicit(&flag, 0, memory_order_relaxed) == 0)
        ;
    printf("%d\n", data);
    pthread_join(t, 0);
    return 0;
}
EOF
if user_cc relaxed.c -g -O1 -march=armv8.1-a; then
  run_status st "$WEFT" trace -q -o "$work/r.wtr" -- "$work/relaxed" >/dev/null 2>&1
  run_status st "$WEFT" races "$work/r.wtr" >"$work/rraces" 2>&1
  check "relaxed atomics: the race on data is found" grep -q "^race 1 on data (0x" "$work/rraces"
  check "relaxed atomics: no note that the code was not read" bash -c "! grep -q 'without the program' '$work/rraces'"
fi

# The program's GOT: the dynamic loader binds a library function at its
# first call while other threads read the entry in their PLT stubs,
# unsynchronized by design; weft races leaves those accesses out. Three
# workers call pthread_spin_lock for the first time at once.
cat >"$work/spin.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
static pthread_spinlock_t sl;
static long counter;
static void *worker(void *a)
{
    long id = (long)a;
    for (int i = 0; i < 20; i++) {
        if ((i + id) % 7 == 0) {
            long c = counter;
            counter = c + 1;
        } else {
            pthread_spin_lock(&sl);
            counter++;
            pthread_spin_unlock(&sl);
        }
    }
    return NULL;
}
int main(void)
{
    pthread_spin_init(&sl, 0);
    pthread_t t[3];
    for (long i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("counter %ld\n", counter);
    return 0;
}
EOF
if user_cc spin.c -g -O2; then
  run_status st "$WEFT" replay --sched random --seed 3 --save-trace -o "$work/sp" -- "$work/spin" >/dev/null 2>&1
  tr="$(ls "$work"/sp/traces/seed-3.wtr 2>/dev/null || true)"
  check "spin: a random run's trace is kept" test -n "$tr"
  run_status st "$WEFT" races "$tr" >"$work/spraces" 2>&1
  check "spin: the race on counter is found" grep -q "^race .* on counter (0x" "$work/spraces"
  check "spin: no race in a PLT stub (the GOT's lazy binding)" bash -c "! grep -q '@plt' '$work/spraces'"
  check "spin: no race inside the dynamic loader" bash -c "! grep -q '_rtld_global' '$work/spraces'"
  check "spin: the spinning in the C library is named (pthread_spin_lock)" \
    bash -c "'$WEFT' export --format csv -o '$work/sp.csv' '$tr' && grep -q ',pthread_spin_lock,' '$work/sp.csv'"
  check "spin: the stubs' accesses are in the trace, by the stub's name" \
    bash -c "'$WEFT' export --format csv -o '$work/sp.csv' '$tr' && grep -q ',pthread_spin_lock@plt,' '$work/sp.csv'"
fi

# C++: names demangled, and a wait called through libstdc++'s inline
# wrappers (std::lock_guard, std::mutex::lock, __gthread_mutex_lock, all in
# system headers) placed at the user's line they were inlined into.
cat >"$work/abba.cpp" <<'EOF'
#include <cstdio>
#include <mutex>
#include <thread>
std::mutex a, b;
long total;
void t1() { for (int i = 0; i < 3; i++) { std::lock_guard<std::mutex> la(a); std::lock_guard<std::mutex> lb(b); total++; } }
void t2() { for (int i = 0; i < 3; i++) { std::lock_guard<std::mutex> lb(b); std::lock_guard<std::mutex> la(a); total++; } }
int main() { std::thread x(t1), y(t2); x.join(); y.join(); std::printf("%ld\n", total); return 0; }
EOF
if user_cc abba.cpp -g -O1; then
  run_status st "$WEFT" replay --sched pos --runs 10 --jobs 2 -o "$work/ab" -- "$work/abba" >/dev/null 2>&1
  d="$(jq -r 'select(.verdict == "deadlock") | .detail' "$work/ab/runs.jsonl" 2>/dev/null | head -n 1)"
  check "C++: a deadlock found (status $st)" test -n "$d"
  check "C++: each worker's wait called from its own line, by its C++ name ($d)" \
    bash -c "grep -q 'called from t1() (abba.cpp:6)' <<<'$d' && grep -q 'called from t2() (abba.cpp:7)' <<<'$d'"
  check "C++: a wait inside the C library (no symbols there) by the call and the library" \
    grep -q 'in pthread_mutex_lock (waiting in libc.so.6), called from t[12]()' <<<"$d"
  check "C++: main waits in std::thread::join, a call into libstdc++" \
    grep -q 'T0 waits on futex 0x[0-9a-f]* in std::thread::join (waiting in libc.so.6), called from main (abba.cpp:8)' <<<"$d"
fi

# Two std::async tasks push into one std::vector: a corrupted heap. The
# explanation's long template names come without their template arguments.
cat >"$work/vec.cpp" <<'EOF'
#include <cstdio>
#include <future>
#include <vector>
std::vector<int> v;
int work(int base) { for (int i = 0; i < 20; i++) v.push_back(base + i); return 0; }
int main() {
    auto a = std::async(std::launch::async, work, 0);
    auto b = std::async(std::launch::async, work, 100);
    a.get();
    b.get();
    if (v.size() != 40) { std::printf("BUG: %zu elements\n", v.size()); return 1; }
    return 0;
}
EOF
if user_cc vec.cpp -g -O1; then
  run_status st "$WEFT" replay --sched random --runs 12 --jobs 2 -o "$work/vc" -- "$work/vec" >/dev/null 2>&1
  # A worker's failure (not main's rethrown std::bad_alloc, below).
  seed="$(jq -r 'select(.verdict != "pass" and (.detail | test("T0 raised") | not)) | .seed' \
    "$work/vc/runs.jsonl" 2>/dev/null | head -n 1)"
  check "vector: a random run fails (status $st)" test -n "$seed"
  # Its verdict: a fault's place, or for an abort (glibc's heap checks) the
  # thread that raised it and its last line of the program's own source.
  # (the main thread's rethrown std::bad_alloc names std::future::get)
  jq -r 'select(.verdict == "abort" or .verdict == "crash") | .detail' "$work/vc/runs.jsonl" >"$work/vc.details"
  # std::terminate's two lines as one: "what(): std::bad_alloc" alone did
  # not say that nobody caught it.
  check "vector: main's uncaught exception says terminate was called" \
    grep -q "terminate called after throwing an instance of 'std::bad_alloc' (what():  std::bad_alloc); T0 raised it" "$work/vc.details"
  check "vector: a worker's abort names its last line in the program" \
    grep -Eq 'T[12] raised it, last in the program at work\(int\) \(vec.cpp:5\)$' "$work/vc.details"
  # A fault in the C library's blocks counted inline cannot be placed: whose
  # it was and where its program was. One in the vector's own code (its
  # template, compiled into the program: a store through a pointer, which
  # has a callback since the program's own accesses to its stack do) is
  # placed there.
  check "vector: every crash says whose fault and where its program was" \
    test "$(jq -r 'select(.verdict == "crash") | .detail' "$work/vc/runs.jsonl" |
      grep -Evc '(T[12] at work\(int\) \(vec.cpp:5\), |T[12] at .*_M_realloc_insert.* \(new_allocator.h:[0-9]+\), |T[12] faulted in library code, last in the program at work\(int\) \(vec.cpp:5\)$)')" = 0
  check "vector: no verdict names a PLT stub or the vector's template" \
    bash -c "! grep -Eq '@plt|\.plt|vector\.tcc' '$work/vc.details'"
  run_status st "$WEFT" replay --sched random --seed "${seed:-1}" --explain -o "$work/vx" -- "$work/vec" \
    >"$work/vx.log" 2>&1
  check "vector: the explanation names the vector's reallocation, its template arguments left out" \
    grep -q 'at void std::vector<>::_M_realloc_insert<>(__gnu_cxx::__normal_iterator<>, int&&) (' "$work/vx.log"
  check "vector: and the user's push_back (vec.cpp:5)" grep -q 'at work(int) (vec.cpp:5)' "$work/vx.log"
  check "vector: what killed it, and where the program was (a fault in its code, or in the C library)" \
    bash -c "grep -Eq '^(fault|raised): T[12] ' '$work/vx.log' && (grep -q '^  its last code in the program: at work(int) (vec.cpp:5)$' '$work/vx.log' || grep -Eq '^fault: T[12] at work\\(int\\) \\(vec.cpp:5\\)' '$work/vx.log')"
fi
finish
