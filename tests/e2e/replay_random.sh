# The guest's randomness under a replay policy (docs/replay.md, "Randomness"):
# getrandom, /dev/urandom and AT_RANDOM give the same bytes in every run, with
# a fork server or without, for every seed; --real-random gives the host's.
source "$(dirname "$0")/lib.sh"

cat >"$work/rnd.c" <<'EOF2'
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <unistd.h>
static unsigned char dev[16];
static void *reader(void *arg)
{
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0 || read(fd, dev, sizeof dev) != (ssize_t)sizeof dev)
        return (void *)1;
    close(fd);
    return arg;
}
int main(void)
{
    unsigned char g[16], *at = (unsigned char *)getauxval(AT_RANDOM);
    pthread_t t;
    void *bad;
    pthread_create(&t, NULL, reader, NULL);
    pthread_join(t, &bad);
    if (bad || getrandom(g, sizeof g, 0) != (ssize_t)sizeof g)
        return 1;
    printf("BUG: always, to keep the files\nat_random");
    for (int i = 0; i < 16; i++)
        printf(" %02x", at[i]);
    printf("\ngetrandom");
    for (int i = 0; i < 16; i++)
        printf(" %02x", g[i]);
    printf("\nurandom");
    for (int i = 0; i < 16; i++)
        printf(" %02x", dev[i]);
    printf("\n");
    return 3;
}
EOF2
cross_cc rnd

# campaign NAME OPTIONS...: seeds 1..3, kept; $st its status.
campaign() {
  local name="$1"
  shift
  run_status st "$WEFT" replay --sched pct --depth 2 --steps 10 --threads 2 --points none --runs 3 \
    --jobs 2 --save-trace --timeout 60 --output "$work/$name" "$@" -- "$work/rnd" </dev/null \
    >"$work/$name.log" 2>&1
}
out() { cat "$work/$1/traces/seed-$2.stdout"; }

campaign a
check "3 runs, each a bug (status $st)" \
  test "$(jq -r .verdict "$work/a/runs.jsonl" | sort | uniq -c | xargs)" = "3 bug"
campaign b
campaign plain --no-fork-server
for s in 1 2 3; do
  check "seed $s: the same bytes in two campaigns" test "$(out a $s)" = "$(out b $s)"
  check "seed $s: the same bytes without a fork server" test "$(out a $s)" = "$(out plain $s)"
done
check "seeds 1 and 3: one stream (a fixed input, not the seed's)" test "$(out a 1)" = "$(out a 3)"
check "the stream is not the host's zeros" bash -c "! grep -q 'getrandom 00 00 00 00 00 00 00 00' '$work/a/traces/seed-1.stdout'"
campaign real1 --real-random
campaign real2 --real-random
check "--real-random: runs still end (status $st)" \
  test "$(jq -r .verdict "$work/real2/runs.jsonl" | sort | uniq -c | xargs)" = "3 bug"
check "--real-random: getrandom gives the host's bytes" \
  test "$(grep getrandom "$work/real1/traces/seed-1.stdout")" != "$(grep getrandom "$work/real2/traces/seed-1.stdout")"
check "--real-random: /dev/urandom too" \
  test "$(grep urandom "$work/real1/traces/seed-1.stdout")" != "$(grep urandom "$work/real2/traces/seed-1.stdout")"
check "--real-random: AT_RANDOM stays qemu's seeded bytes" \
  test "$(grep at_random "$work/real1/traces/seed-1.stdout")" = "$(grep at_random "$work/a/traces/seed-1.stdout")"
check "--real-random: in campaign.json" test "$(jq .real_random "$work/real1/campaign.json")" = true
check "--real-random: in the reproduction commands" grep -Eq "reproduce: .* --real-random " "$work/real1.log"
finish
