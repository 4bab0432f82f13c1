# Races drive the other tools: weft replay --points races makes exactly the
# racy pcs of the profiling runs' traces its plain-access points (none for a
# race-free program; fewer for paper_mm, and no larger k), and weft
# optimize --from-races keeps only racy accesses in its model and ranks the
# racing pairs first (a lock-ordered pair is no longer aligned).
source "$(dirname "$0")/lib.sh"

# racy_pcs FOLDER: the pcs weft races reports on any of the campaign's
# profiling runs (their traces kept by --save-trace), hex, sorted, once each.
racy_pcs() {
  local t
  for t in "$1"/profile-*-*.wtr; do
    { timeout -s KILL 60 "$WEFT" races --json "$t" || true; } | jq -r '.pcs[]'
  done | sed 's/^0x//' | sort -u
}

# exact_racy_pcs FIXTURE: the pcs weft races reports on an exact trace
# ($work/FIXTURE.wtr), hex, sorted.
exact_racy_pcs() {
  timeout -s KILL 120 "$WEFT" trace -q --mode exact -o "$work/$1.wtr" -- "$WEFT_FIXTURES/$1" \
    >/dev/null 2>&1 || true
  { timeout -s KILL 60 "$WEFT" races --json "$work/$1.wtr" || true; } |
    jq -r '.pcs[]' | sed 's/^0x//' | sort
}

# points FIXTURE MODE: one seed with --points MODE; its folder is $work/FIXTURE-MODE.
points() {
  local d="$work/$1-$2"
  run_status st timeout -s KILL 300 "$WEFT" replay --sched pct --depth 2 --points "$2" --seed 1 \
    --timeout 30 --save-trace -o "$d" -- "$WEFT_FIXTURES/$1" >"$d.log" 2>&1
}

for fx in lost_update paper_mm lost_update_ok; do
  points "$fx" races
  want="$(racy_pcs "$work/$fx-races")"
  check "$fx --points races: ran (status $st)" test "$st" = 0 -o "$st" = 10
  check "$fx --points races: says it took the races' pcs" \
    grep -q "^weft: profiling: [0-9]* race reports\? (weft races on each run)" "$work/$fx-races.log"
  check "$fx --points races: kept the profiling runs' traces" test -s "$work/$fx-races/profile-0-0.wtr"
  got="$(sed 's/^0x//' "$work/$fx-races/points.pcs" | sort)"
  check "$fx: points.pcs holds exactly weft races's pcs ($(wc -w <<<"$want"))" test "$got" = "$want"
  check "$fx: the campaign is a visible one on that file" \
    test "$(jq -r '"\(.points) \(.pcs_count)"' "$work/$fx-races/campaign.json")" = "visible $(wc -w <<<"$want")"
  points "$fx" visible
  kv="$(jq .k "$work/$fx-visible/campaign.json")" kr="$(jq .k "$work/$fx-races/campaign.json")"
  nv="$(jq .pcs_count "$work/$fx-visible/campaign.json")" nr="$(jq .pcs_count "$work/$fx-races/campaign.json")"
  check "$fx: no more race pcs ($nr) than shared-access pcs ($nv)" test "$nr" -le "$nv"
  # Fewer points, fewer steps; but a profiling run under priorities with
  # other points may order the threads otherwise: a step or two more.
  check "$fx: no larger k with races ($kr) than visible ($kv), but for a step or two" \
    test "$kr" -le "$((kv + 2))"
done
check "lost_update_ok (race-free): no plain-access point at all" test ! -s "$work/lost_update_ok-races/points.pcs"
check "lost_update_ok: its locked accesses were visible points" test "$(jq .pcs_count "$work/lost_update_ok-visible/campaign.json")" -gt 0
check "paper_mm: races pick fewer pcs than visible" \
  test "$(jq .pcs_count "$work/paper_mm-races/campaign.json")" -lt "$(jq .pcs_count "$work/paper_mm-visible/campaign.json")"

# ---- a race inside the C library on the program's data ----------------------
# A logger's producers reserve room under the lock and copy their records in
# after it; the flusher swaps and writes out a buffer whose copies may still
# be going on (a helper's logger failed 43 of 50 plain runs and 0 of 400
# replays). No visible point falls between the unlock and memcpy's stores,
# so --points races makes the racing pcs of the library points too; the
# twin waits for the copies.
cat >"$work/copylog.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#define BUFSZ 2048
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t want = PTHREAD_COND_INITIALIZER, copied = PTHREAD_COND_INITIALIZER;
static char bufs[2][BUFSZ], sink[32 * BUFSZ];
static size_t used[2], sunk;
static int cur, writers[2], stopping;
static void log_record(const char *rec, size_t n)
{
    pthread_mutex_lock(&mu);
    while (used[cur] + n > BUFSZ)
        pthread_cond_wait(&copied, &mu);
    int b = cur;
    size_t at = used[b];
    used[b] += n;
    writers[b]++;
    if (used[b] >= BUFSZ / 2)
        pthread_cond_signal(&want);
    pthread_mutex_unlock(&mu);
    memcpy(bufs[b] + at, rec, n); /* outside the lock */
    pthread_mutex_lock(&mu);
    writers[b]--;
    pthread_cond_broadcast(&copied);
    pthread_mutex_unlock(&mu);
}
static void *producer(void *a)
{
    char rec[128];
    for (int i = 0; i < 60; i++)
        log_record(rec, (size_t)snprintf(rec, sizeof rec, "<%ld:%02d a record long enough that "
                                         "memcpy copies it in a loop>", (long)a, i));
    return NULL;
}
static void *flusher(void *a)
{
    (void)a;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (used[cur] < BUFSZ / 2 && !stopping)
            pthread_cond_wait(&want, &mu);
        int b = cur, last = stopping;
        cur = !cur;
#ifdef FIXED
        while (writers[b])
            pthread_cond_wait(&copied, &mu);
#endif
        size_t n = used[b];
        pthread_mutex_unlock(&mu);
        memcpy(sink + sunk, bufs[b], n);
        pthread_mutex_lock(&mu);
        sunk += n;
        memset(bufs[b], 0, n);
        used[b] = 0;
        pthread_cond_broadcast(&copied);
        pthread_mutex_unlock(&mu);
        if (last && !used[cur])
            return NULL;
    }
}
int main(void)
{
    pthread_t p[4], f;
    pthread_create(&f, NULL, flusher, NULL);
    for (long i = 0; i < 4; i++)
        pthread_create(&p[i], NULL, producer, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(p[i], NULL);
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_signal(&want);
    pthread_mutex_unlock(&mu);
    pthread_join(f, NULL);
    int records = 0;
    for (size_t i = 0; i < sunk; i++)
        records += sink[i] == '<';
    if (records != 240 || memchr(sink, 0, sunk)) {
        printf("BUG: %d of 240 records%s\n", records, memchr(sink, 0, sunk) ? ", holes" : "");
        return 1;
    }
    return 0;
}
EOF
# -g: the program's code told from the C library's (a static binary).
aarch64-linux-gnu-gcc -static -pthread -O1 -g -o "$work/copylog" "$work/copylog.c" &&
  aarch64-linux-gnu-gcc -static -pthread -O1 -g -DFIXED -o "$work/copylog_ok" "$work/copylog.c"
for p in copylog copylog_ok; do
  run_status st timeout -s KILL 600 "$WEFT" replay --sched pct --points races --runs 20 --jobs 2 \
    --timeout 60 --output "$work/$p-camp" -- "$work/$p" >"$work/$p.out" 2>&1
done
hits="$(jq -r .hits "$work/copylog-camp/summary.json")"
check "a race inside memcpy: --points races finds it ($hits of 20 runs)" test "${hits:-0}" -ge 1
check "a race inside memcpy: the points name the library's pcs" \
  grep -q "^weft: profiling: [1-9][0-9]* race reports" "$work/copylog.out"
check "a race inside memcpy: the reproduce line names races:FILE" \
  grep -q -- "--points races:$work/copylog-camp/points.pcs" "$work/copylog.out"
repro="$(sed -n 's/^  reproduce: weft //p' "$work/copylog.out" | head -1)"
if [ -n "$repro" ]; then
  repro="'$WEFT' $repro"
  run_status st timeout -s KILL 120 bash -c "$repro" >"$work/copylog-repro.out" 2>&1
  check "a race inside memcpy: the reproduce line fails the same way" \
    bash -c "grep -q '^seed [0-9]*: bug: BUG' '$work/copylog-repro.out'"
else
  check "a race inside memcpy: a reproduce line" false
fi
check "a race inside memcpy: the twin passes every run" \
  test "$(jq -r .hits "$work/copylog_ok-camp/summary.json")" = 0

# ---- weft optimize --from-races -------------------------------------------------
opt() { # TRACE OUT [OPTIONS]: status in $st, output in OUT.log
  local t="$1" o="$2"
  shift 2
  run_status st "$WEFT" optimize "$t" -o "$o" "$@" >"$o.log" 2>&1
}
candidates() { sed -nE 's/^weft: exact solver: ([0-9]+) candidate pairs.*/\1/p' "$1"; }

# paper_avn_ok: the only pairs are glibc's lock word, written under the lock.
exact_racy_pcs paper_avn_ok >/dev/null
opt "$work/paper_avn_ok.wtr" "$work/avnok.json"
check "paper_avn_ok: without --from-races a plan (status $st)" test "$st" = 0 -a -s "$work/avnok.json"
opt "$work/paper_avn_ok.wtr" "$work/avnok-races.json" --from-races
check "paper_avn_ok --from-races: nothing to align, exit 1 (got $st)" test "$st" = 1
check "paper_avn_ok --from-races: says there is no race" grep -q "no data race in this trace" "$work/avnok-races.json.log"
check "paper_avn_ok --from-races: no plan written" test ! -e "$work/avnok-races.json"

for fx in paper_avn paper_ac lost_update; do
  pcs="$(exact_racy_pcs "$fx")"
  opt "$work/$fx.wtr" "$work/$fx-plain.json"
  opt "$work/$fx.wtr" "$work/$fx-races.json" --from-races
  check "$fx --from-races: a plan (status $st)" test "$st" = 0 -a -s "$work/$fx-races.json"
  a="$(candidates "$work/$fx-plain.json.log")" b="$(candidates "$work/$fx-races.json.log")"
  check "$fx --from-races: no more candidates ($b) than without ($a)" test "$b" -le "$a"
  bad=0
  for pc in $(jq -r '.injections[].pc' "$work/$fx-races.json" | sed 's/^0x//'); do
    grep -qx "$pc" <<<"$pcs" || bad=$((bad + 1))
  done
  check "$fx --from-races: every delayed access is at a racy pc" test "$bad" = 0
  check "$fx --from-races: ranks the racing pairs first" \
    grep -Eq "[0-9]+ of them a race of the trace \(ranked first" "$work/$fx-races.json.log"
done
check "paper_avn: the racy model has fewer candidates" \
  test "$(candidates "$work/paper_avn-races.json.log")" -lt "$(candidates "$work/paper_avn-plain.json.log")"
finish
