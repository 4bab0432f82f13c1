# A relaxed atomic load or store compiles to a plain LDR or STR: a global
# that no atomic instruction touches in the trace (a seqlock's data, only
# ever stored and loaded relaxed) was checked as plain memory, a race on
# every correct use (a helper's seqlock: races on x and y). The program's
# debug info says which globals are atomic (C11 _Atomic, std::atomic), an
# array of them whole; the same program with plain ints still races.
source "$(dirname "$0")/lib.sh"
cat >"$work/seq.c" <<'C'
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
static atomic_uint seq;
#ifdef PLAIN
static int x[64];
#define SET(v) (x[40] = (v))
#define GET() (x[40])
#else
static atomic_int x[64]; /* 256 bytes and more: the whole array */
#define SET(v) atomic_store_explicit(&x[40], (v), memory_order_relaxed)
#define GET() atomic_load_explicit(&x[40], memory_order_relaxed)
#endif
static void *writer(void *a)
{
    (void)a;
    for (int i = 1; i <= 3; i++) {
        unsigned s = atomic_load_explicit(&seq, memory_order_relaxed);
        atomic_store_explicit(&seq, s + 1, memory_order_release);
        SET(i);
        atomic_store_explicit(&seq, s + 2, memory_order_release);
    }
    return NULL;
}
static void *reader(void *a)
{
    (void)a;
    int v;
    unsigned s1, s2;
    do {
        s1 = atomic_load_explicit(&seq, memory_order_acquire);
        v = GET();
        s2 = atomic_load_explicit(&seq, memory_order_acquire);
    } while ((s1 & 1) || s1 != s2);
    return (void *)(long)v;
}
int main(void)
{
    pthread_t w, r;
    pthread_create(&r, NULL, reader, NULL);
    pthread_create(&w, NULL, writer, NULL);
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    puts("ok");
    return 0;
}
C
cp "$work/seq.c" "$work/seq_plain.c"
if ! aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/seq" "$work/seq.c" ||
  ! aarch64-linux-gnu-gcc -static -pthread -O1 -g -DPLAIN -o "$work/seq_plain" "$work/seq_plain.c"; then
  fail "the cross compiler failed"
  finish
fi
for p in seq seq_plain; do
  run_status st "$WEFT" trace -q --mode exact -o "$work/$p.wtr" -- "$work/$p" </dev/null >/dev/null 2>&1
  check "$p: traced (status $st)" test "$st" = 0
  run_status st "$WEFT" races "$work/$p.wtr" >"$work/$p.races" 2>&1
done
check "relaxed atomics of an _Atomic global: no race" grep -q 'no data race' "$work/seq.races"
check "the same with a plain int: the race on x[40] (its element, named)" grep -q '^race 1 on x\[40\] ' "$work/seq_plain.races"
finish
