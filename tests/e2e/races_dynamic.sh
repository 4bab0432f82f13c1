# A dynamically linked program's atomics are mostly the C library's, in
# shared objects: weft races decoded the main binary's code only, so each
# of them counted as acquire and release. glibc's acquire-only count of its
# threads at a thread's exit then ordered the exiting worker before main's
# next pthread_create, and a lost update between two short workers was no
# race, in free and exact traces alike (the static build: 2). The shared
# objects' code is decoded too now.
source "$(dirname "$0")/lib.sh"
cat >"$work/account.c" <<'C'
#include <pthread.h>
#include <stdio.h>
static int balance = 1000;
#ifdef FIX
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
#define LOCK() pthread_mutex_lock(&m)
#define UNLOCK() pthread_mutex_unlock(&m)
#else
#define LOCK()
#define UNLOCK()
#endif
static void *deposit(void *a)
{
    (void)a;
    LOCK();
    int t = balance;
    balance = t + 300;
    UNLOCK();
    return NULL;
}
static void *withdraw(void *a)
{
    (void)a;
    LOCK();
    int t = balance;
    balance = t - 200;
    UNLOCK();
    return NULL;
}
int main(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, deposit, NULL);
    pthread_create(&b, NULL, withdraw, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%d\n", balance);
    return 0;
}
C
cp "$work/account.c" "$work/account_ok.c"
user_cc account.c -O1 -g || finish
user_cc account_ok.c -O1 -g -DFIX || finish
for mode in free exact; do
  for p in account account_ok; do
    run_status st "$WEFT" trace -q --mode "$mode" -o "$work/$p-$mode.wtr" -- "$work/$p" \
      </dev/null >/dev/null 2>"$work/$p-$mode.err"
    check "$p, $mode: traced (status $st)" test "$st" = 0
    run_status st "$WEFT" races "$work/$p-$mode.wtr" >"$work/$p-$mode.races" 2>&1
  done
  check "$mode: the lost update on balance is a race" grep -q '^race 1 on balance' "$work/account-$mode.races"
  check "$mode: the locked twin has none" grep -q 'no data race' "$work/account_ok-$mode.races"
  check "$mode: no note that the code was not decoded" \
    bash -c "! grep -q 'without the program' '$work/account-$mode.races'"
done

# A C++ global's race and filter by the name a reader knows, not the
# mangled one (_ZN4acct7balanceE).
cat >"$work/acct.cpp" <<'C'
#include <cstdio>
#include <thread>
namespace acct {
long balance = 1000;
}
int main()
{
    std::thread a([] { acct::balance += 300; });
    std::thread b([] { acct::balance -= 200; });
    a.join();
    b.join();
    std::printf("%ld\n", acct::balance);
    return 0;
}
C
user_cc acct.cpp -O1 -g || finish
run_status st "$WEFT" trace -q -o "$work/acct.wtr" -- "$work/acct" </dev/null >/dev/null 2>&1
run_status st "$WEFT" races "$work/acct.wtr" >"$work/acct.races" 2>&1
check "C++: the race is on acct::balance" grep -q '^race 1 on acct::balance ' "$work/acct.races"
run_status st "$WEFT" trace -q --filter var:acct::balance -o "$work/acct-f.wtr" -- "$work/acct" \
  </dev/null >/dev/null 2>"$work/acct-f.err"
check "C++: --filter var: takes that name (status $st)" test "$st" = 0
finish
