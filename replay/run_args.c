/* What a run is told and what it is called: the verdicts' names, the
 * plugin arguments of a seed (its policy, its points), and the command that
 * reproduces it. Shared by a qemu of its own (run.c) and a fork server's
 * child (server.c). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "weft/replay.h"

static const char *const verdict_names[REPLAY_VERDICT_COUNT] = {
    "pass", "bug", "exit", "wrong_output", "abort", "crash", "deadlock", "timeout", "livelock"};

const char *replay_verdict_name(replay_verdict v)
{
    return v < REPLAY_VERDICT_COUNT ? verdict_names[v] : "?";
}

int replay_verdict_is_hit(replay_verdict v)
{
    return v != REPLAY_PASS && v != REPLAY_TIMEOUT && v < REPLAY_VERDICT_COUNT;
}

int replay_verdict_parse(const char *name, replay_verdict *out)
{
    for (int i = 0; i < REPLAY_VERDICT_COUNT; i++)
        if (name && !strcmp(name, verdict_names[i])) {
            *out = (replay_verdict)i;
            return 0;
        }
    return -1;
}

const char *replay_points_name(replay_points p)
{
    static const char *const names[] = {"none", "shared", "all", "pcs", "visible"};
    return names[p];
}

int replay_bounded_schedule(const replay_config *c, uint64_t seed, uint32_t *bound, uint64_t *index)
{
    if (seed == 0)
        return -1;
    return pct_bounded_locate(c->kind, c->k, (uint32_t)c->n, (uint32_t)c->max_bound, seed - 1,
                              bound, index);
}

int replay_policy_args(const replay_config *c, uint64_t seed, char *buf, size_t len)
{
    int n = snprintf(buf, len, "sched=%s,seed=%" PRIu64 ",depth=%" PRIu64, pct_kind_name(c->kind),
                     seed, c->depth);
    if (c->k)
        n += snprintf(buf + n, len - (size_t)n, ",steps=%" PRIu64, c->k);
    if (c->n)
        n += snprintf(buf + n, len - (size_t)n, ",nthreads=%" PRIu64, c->n);
    if (c->kind == PCT_KIND_RPRO)
        n += snprintf(buf + n, len - (size_t)n, ",radius=%" PRIu64, c->radius);
    if (c->starvation >= 0)
        n += snprintf(buf + n, len - (size_t)n, ",starve=%.17g", c->starvation);
    uint32_t bound;
    uint64_t index;
    if ((c->kind == PCT_KIND_PB || c->kind == PCT_KIND_DB) &&
        replay_bounded_schedule(c, seed, &bound, &index) == 0)
        n += snprintf(buf + n, len - (size_t)n, ",bound=%" PRIu32 ",schedule=%" PRIu64, bound,
                      index);
    return n < (int)len ? 0 : -1;
}

int replay_plugin_args(const replay_config *c, uint64_t seed, char *buf, size_t len)
{
    if (replay_policy_args(c, seed, buf, len))
        return -1;
    int n = (int)strlen(buf);
    if (c->points == POINTS_NONE || c->points == POINTS_ALL)
        n += snprintf(buf + n, len - (size_t)n, ",points=%s", replay_points_name(c->points));
    else if (c->points == POINTS_VISIBLE)
        n += snprintf(buf + n, len - (size_t)n, ",points=%s%s%s",
                      c->race_points && c->pcs_path[0] ? "races" : "visible",
                      c->pcs_path[0] ? ":" : "", c->pcs_path);
    else
        n += snprintf(buf + n, len - (size_t)n, ",points=pcs:%s", c->pcs_path);
    if (c->host_parallel)
        n += snprintf(buf + n, len - (size_t)n, ",hostpar=1");
    if (c->real_sleeps)
        n += snprintf(buf + n, len - (size_t)n, ",realsleep=1");
    if (c->real_random)
        n += snprintf(buf + n, len - (size_t)n, ",realrandom=1");
    if (c->max_threads)
        n += snprintf(buf + n, len - (size_t)n, ",maxpes=%u", c->max_threads);
    if (c->schedule_path[0])
        n += snprintf(buf + n, len - (size_t)n, ",schedule=%s", c->schedule_path);
    return n < (int)len ? 0 : -1;
}

int replay_run_args(const replay_config *c, char *buf, size_t len)
{
    size_t n = strlen(buf);
    n += (size_t)snprintf(buf + n, len - n, ",sync=0,maxsize=0,maxev=%llu,libaccess=loops%s",
                          REPLAY_RUN_MAX_EVENTS, c->save_trace ? "" : ",lazy=1");
    return n < len ? 0 : -1;
}

/* Single-quote an argument for a shell when it needs it. */
static size_t shell_word(char *buf, size_t len, const char *s)
{
    if (len == 0)
        return 0;
    if (*s &&
        strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=+,@%") ==
            strlen(s))
        return (size_t)snprintf(buf, len, " %s", s);
    size_t n = (size_t)snprintf(buf, len, " '");
    for (; *s && n + 5 < len; s++)
        n += *s == '\'' ? (size_t)snprintf(buf + n, len - n, "'\\''")
                        : (size_t)snprintf(buf + n, len - n, "%c", *s);
    if (n + 1 < len)
        n += (size_t)snprintf(buf + n, len - n, "'");
    return n;
}

void replay_repro_command(const replay_config *c, uint64_t seed, char *buf, size_t len)
{
    char tmp[PATH_MAX + 64];
    size_t n = (size_t)snprintf(buf, len, "weft replay --sched %s --depth %" PRIu64,
                                pct_kind_name(c->kind), c->depth);
#define ADD(...) n += (n < len ? (size_t)snprintf(buf + n, len - n, __VA_ARGS__) : 0)
    if (c->kind == PCT_KIND_RPRO)
        ADD(" --radius %" PRIu64, c->radius);
    if (c->kind == PCT_KIND_PB || c->kind == PCT_KIND_DB)
        ADD(" --bound %" PRIu64, c->max_bound);
    ADD(" --steps %" PRIu64 " --threads %" PRIu64, c->k, c->n);
    if (c->points == POINTS_NONE || c->points == POINTS_ALL) {
        ADD(" --points %s", replay_points_name(c->points));
    } else {
        /* The shared points of the campaign, as a file: no profiling. */
        snprintf(tmp, sizeof tmp, "%s:%s",
                 c->points != POINTS_VISIBLE ? "pcs"
                 : c->race_points            ? "races"
                                             : "visible",
                 c->pcs_path);
        ADD(" --points");
        if (n < len)
            n += shell_word(buf + n, len - n, tmp);
    }
    if (c->starvation >= 0)
        ADD(" --starvation %.17g", c->starvation);
    if (c->host_parallel)
        ADD(" --host-parallel");
    if (c->real_sleeps)
        ADD(" --real-sleeps");
    if (c->real_random)
        ADD(" --real-random");
    if (c->timeout != 60)
        ADD(" --timeout %u", c->timeout);
    if (c->max_threads)
        ADD(" --max-threads %u", c->max_threads);
    if (c->expect_exit != 0)
        ADD(" --expect-exit %d", c->expect_exit);
    if (c->expect_output) {
        ADD(" --expect-output");
        if (n < len)
            n += shell_word(buf + n, len - n, c->expect_output);
    }
    if (c->run.sysroot) {
        ADD(" --sysroot");
        if (n < len)
            n += shell_word(buf + n, len - n, c->run.sysroot);
    }
    snprintf(tmp, sizeof tmp, "%s-seed-%" PRIu64, c->out_dir, seed);
    ADD(" --seed %" PRIu64 " --save-trace --output", seed);
    if (n < len)
        n += shell_word(buf + n, len - n, tmp);
    ADD(" --");
    for (int i = 0; i < c->run.argc && n < len; i++)
        n += shell_word(buf + n, len - n, c->run.argv[i]);
#undef ADD
}
