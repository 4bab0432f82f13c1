# OpenMP programs (libgomp, static): the team size from OMP_NUM_THREADS
# reaches the guest, and profiling an ordered loop whose waits spin
# (OMP_WAIT_POLICY=active) ends by itself. Its learning runs watched each library load for spinning, and
# libgomp's ordered wait re-reads a thread-local word, which a trace's
# nonstack filter leaves out: every learning run went to --timeout.
source "$(dirname "$0")/lib.sh"
cat >"$work/ordered.c" <<'EOF'
#include <omp.h>
#include <stdio.h>
#define N 24
int a[N];
int main(void)
{
    int team = 0;
#pragma omp parallel for ordered schedule(static, 1)
    for (int i = 1; i < N; i++) {
        if (i == 1)
            team = omp_get_num_threads();
#pragma omp ordered
        a[i] = a[i - 1] + i;
    }
    printf("threads=%d last=%d\n", team, a[N - 1]);
    return a[N - 1] != N * (N - 1) / 2;
}
EOF
if ! aarch64-linux-gnu-gcc -static -fopenmp -O1 -g -o "$work/ordered" "$work/ordered.c" 2>"$work/cc.log"; then
  fail "the cross compiler failed: $(head -3 "$work/cc.log")"
  finish
  exit 1
fi
run_status st env OMP_NUM_THREADS=3 timeout -s KILL 120 "$WEFT" trace -q -o "$work/t.wtr" \
  -- "$work/ordered" </dev/null >"$work/t.out" 2>"$work/t.err"
check "OMP_NUM_THREADS=3 reaches the guest (status $st)" grep -q "^threads=3 " "$work/t.out"

run_status st env OMP_NUM_THREADS=2 OMP_WAIT_POLICY=active timeout -s KILL 600 "$WEFT" replay \
  --sched random --runs 4 --jobs 2 --timeout 10 --output "$work/act" -- "$work/ordered" \
  </dev/null >"$work/act.log" 2>&1
check "active waits: the campaign passes (status $st)" test "$st" = 0
check "active waits: no profiling run was killed at --timeout" \
  bash -c "! grep -q 'killed at --timeout' '$work/act.log'"
check "active waits: k counted by the runs, not from a trace" \
  bash -c "! grep -q 'counted from a trace' '$work/act.log'"

finish
