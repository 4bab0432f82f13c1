/* Policy parameters: defaults, validation, names and the claimed guarantees. */
#include "weft/pct.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* k is drawn from with 64-bit arithmetic (k_1 + r must not overflow). */
#define PCT_MAX_K (UINT64_C(1) << 62)

static const char *const kind_names[] = {"ideal", "random", "pct", "ppct",  "rpro",
                                         "pos",   "pb",     "db",  "script"};
#define NKINDS (sizeof kind_names / sizeof kind_names[0])

void pct_config_init(pct_config *cfg, pct_kind kind)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    cfg->n = 1;
    cfg->k = 0;
    cfg->d = 1;
    cfg->r = 1;
    cfg->seed = 1;
    cfg->starvation = PCT_DEFAULT_STARVATION;
}

const char *pct_kind_name(pct_kind kind)
{
    if ((unsigned)kind >= NKINDS)
        return "?";
    return kind_names[kind];
}

int pct_kind_parse(const char *name, pct_kind *out)
{
    for (size_t i = 0; name && i < NKINDS; i++) {
        if (strcmp(name, kind_names[i]) == 0) {
            *out = (pct_kind)i;
            return 0;
        }
    }
    return -1;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static bool uses_priorities(pct_kind kind)
{
    return kind == PCT_KIND_PCT || kind == PCT_KIND_PPCT || kind == PCT_KIND_RPRO;
}

/* pb, db: the schedule named by (bound, schedule) must exist. */
static int check_bounded(const pct_config *cfg, char *err, size_t errlen)
{
    const char *name = kind_names[cfg->kind];
    if (cfg->bound > PCT_MAX_BOUND)
        return fail(err, errlen, "%s: bound %u, expected at most %u", name, cfg->bound,
                    PCT_MAX_BOUND);
    if (cfg->bound == 0) {
        if (cfg->schedule != 0)
            return fail(err, errlen, "%s: schedule %llu, but bound 0 has only schedule 0", name,
                        (unsigned long long)cfg->schedule);
        return 0;
    }
    if (cfg->k == 0)
        return fail(err, errlen,
                    "%s: k = 0 (unknown): set k to the step count of a profiling run to place "
                    "%u deviations",
                    name, cfg->bound);
    if (cfg->k > PCT_MAX_K)
        return fail(err, errlen, "%s: k = %llu steps, expected at most 2^62", name,
                    (unsigned long long)cfg->k);
    uint64_t count = pct_bounded_count(cfg->kind, cfg->k, cfg->n, cfg->bound);
    if (cfg->schedule >= count)
        return fail(err, errlen,
                    "%s: schedule %llu is past the end of bound %u (%llu schedules for k = %llu, "
                    "n = %u)",
                    name, (unsigned long long)cfg->schedule, cfg->bound, (unsigned long long)count,
                    (unsigned long long)cfg->k, cfg->n);
    return 0;
}

/* script: switches in step order, each naming a thread. */
static int check_script(const pct_config *cfg, char *err, size_t errlen)
{
    if (cfg->script_len && !cfg->script)
        return fail(err, errlen, "script: %zu switches but no list", cfg->script_len);
    for (size_t i = 0; i < cfg->script_len; i++) {
        const pct_script_switch *s = &cfg->script[i];
        if (s->thread < 0)
            return fail(err, errlen, "script: switch %zu names thread %lld", i + 1,
                        (long long)s->thread);
        if (i && s->step < cfg->script[i - 1].step)
            return fail(err, errlen,
                        "script: switch %zu at step %llu comes after one at step %llu: switches "
                        "must be in step order",
                        i + 1, (unsigned long long)s->step,
                        (unsigned long long)cfg->script[i - 1].step);
    }
    return 0;
}

int pct_config_check(const pct_config *cfg, char *err, size_t errlen)
{
    if (!cfg)
        return fail(err, errlen, "pct: no configuration");
    if ((unsigned)cfg->kind >= NKINDS)
        return fail(err, errlen, "pct: unknown policy kind %d", (int)cfg->kind);
    const char *name = kind_names[cfg->kind];
    if (cfg->n < 1 || cfg->n > PCT_MAX_THREADS)
        return fail(err, errlen, "%s: n = %u threads, expected 1..%u", name, cfg->n,
                    PCT_MAX_THREADS);
    if (!(cfg->starvation >= 0.0 && cfg->starvation < 1.0))
        return fail(err, errlen, "%s: starvation probability %g, expected 0 <= p < 1", name,
                    cfg->starvation);
    if (cfg->kind == PCT_KIND_PB || cfg->kind == PCT_KIND_DB)
        return check_bounded(cfg, err, errlen);
    if (cfg->kind == PCT_KIND_SCRIPT)
        return check_script(cfg, err, errlen);
    if (!uses_priorities(cfg->kind))
        return 0;
    if (cfg->k == 0)
        return fail(err, errlen, "%s: k = 0 (unknown): set k to the step count of a profiling run",
                    name);
    if (cfg->k > PCT_MAX_K)
        return fail(err, errlen, "%s: k = %llu steps, expected at most 2^62", name,
                    (unsigned long long)cfg->k);
    if (cfg->d < 1 || cfg->d > PCT_MAX_DEPTH)
        return fail(err, errlen, "%s: depth d = %u, expected 1..%u", name, cfg->d, PCT_MAX_DEPTH);
    /* Change points are distinct steps, so d - 1 of them need k >= d - 1. */
    if ((uint64_t)cfg->d - 1 > cfg->k)
        return fail(err, errlen, "%s: depth d = %u needs %u distinct change points but k = %llu",
                    name, cfg->d, cfg->d - 1, (unsigned long long)cfg->k);
    if (cfg->kind != PCT_KIND_RPRO)
        return 0;
    if (cfg->r < 1 || cfg->r > cfg->k)
        return fail(err, errlen, "rpro: radius r = %llu, expected 1 <= r <= k = %llu",
                    (unsigned long long)cfg->r, (unsigned long long)cfg->k);
    /* k_2..k_{d-1} are distinct points of the window around k_1 without k_1;
     * at k_1 = 1 that window holds only min(r, k - 1) points. */
    if (cfg->d >= 3) {
        uint64_t room = cfg->r < cfg->k - 1 ? cfg->r : cfg->k - 1;
        if ((uint64_t)cfg->d - 2 > room)
            return fail(err, errlen,
                        "rpro: depth d = %u needs %u distinct change points within radius "
                        "r = %llu of k_1, but only %llu fit",
                        cfg->d, cfg->d - 2, (unsigned long long)cfg->r, (unsigned long long)room);
    }
    return 0;
}

double pct_guarantee(pct_kind kind, uint64_t n, uint64_t k, uint64_t d, uint64_t r)
{
    if (n == 0 || k == 0 || d == 0)
        return 0.0;
    double nd = (double)n, kd = (double)k;
    switch (kind) {
    case PCT_KIND_PCT:
    case PCT_KIND_PPCT:
        return 1.0 / (nd * pow(kd, (double)(d - 1)));
    case PCT_KIND_RPRO:
        if (r == 0)
            return 0.0;
        if (d == 1)
            return 1.0 / nd;
        /* Cai and Yang's Theorem 1 claims 1/(n k r^(d-2)); one point out of a
         * window of width 2r is hit with probability 1/(2r), so the bound
         * that actually follows from its proof is the one below. */
        return 1.0 / (nd * kd * pow(2.0 * (double)r, (double)(d - 2)));
    default:
        return 0.0;
    }
}
