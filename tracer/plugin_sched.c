/* Replays under a priority policy (PCT, PPCT, RPro, random): the plugin's
 * side is parsing the policy's parameters, choosing schedule points, and
 * writing a record of the policy's run (steps, change points) that
 * `weft replay` reports and reproduces from. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "plugin_state.h"

int sched_parse_policy_arg(pct_config *cfg, const char *key, const char *val)
{
    uint64_t x = 0;
    int num = plugin_parse_u64(val, &x) == 0;
    if (!strcmp(key, "sched")) {
        pct_kind k;
        if (pct_kind_parse(val, &k) != 0)
            return -1;
        cfg->kind = k;
    } else if (!strcmp(key, "seed") && num)
        cfg->seed = x;
    else if (!strcmp(key, "depth") && num)
        cfg->d = (uint32_t)x;
    else if (!strcmp(key, "steps") && num)
        cfg->k = x;
    else if (!strcmp(key, "nthreads") && num)
        cfg->n = (uint32_t)x;
    else if (!strcmp(key, "radius") && num)
        cfg->r = x;
    else if (!strcmp(key, "starve")) {
        char *end;
        double p = strtod(val, &end);
        if (*end || p < 0 || p > 1)
            return -1;
        cfg->starvation = p;
    } else
        return 0;
    return 1;
}

int sched_parse_arg(const char *key, const char *val)
{
    sched_state *s = &g_plugin.sched;
    if (!s->requested)
        pct_config_init(&s->cfg, PCT_KIND_PCT);
    int taken = sched_parse_policy_arg(&s->cfg, key, val);
    if (taken == 1 && !strcmp(key, "sched"))
        s->requested = 1;
    if (taken != 0)
        return taken;
    uint64_t x = 0;
    int num = plugin_parse_u64(val, &x) == 0;
    if (!strcmp(key, "points")) {
        if (!strcmp(val, "none"))
            s->points = POINTS_NONE;
        else if (!strcmp(val, "all"))
            s->points = POINTS_ALL;
        else if (!strncmp(val, "pcs:", 4) && val[4]) {
            s->points = POINTS_PCS;
            s->pcs_path = val + 4;
        } else if (!strcmp(val, "visible")) {
            s->points = POINTS_VISIBLE;
        } else if (!strncmp(val, "visible:", 8) && val[8]) {
            s->points = POINTS_VISIBLE; /* and the shared-access pcs of the file */
            s->pcs_path = val + 8;
        } else
            return -1;
    } else if (!strcmp(key, "hostpar") && num)
        s->ppct_host_parallel = x != 0;
    else if (!strcmp(key, "record"))
        s->record_path = val;
    else
        return 0;
    return 1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One hex pc per line (`weft replay --points shared` writes the instructions
 * that touched shared data in a profiling trace; exact mode's speculation
 * the ones that need a gate). */
int plugin_load_pcs(const char *path, uint64_t **pcs, size_t *npcs, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 0;
    char line[64];
    while (fgets(line, sizeof line, f)) {
        char *end;
        uint64_t pc = strtoull(line, &end, 16);
        if (end == line)
            continue;
        if (*npcs == cap) {
            cap = cap ? cap * 2 : 256;
            uint64_t *n = realloc(*pcs, cap * sizeof *n);
            if (!n) {
                fclose(f);
                snprintf(err, errlen, "%s: out of memory", path);
                return -1;
            }
            *pcs = n;
        }
        (*pcs)[(*npcs)++] = pc;
    }
    fclose(f);
    qsort(*pcs, *npcs, sizeof **pcs, cmp_u64);
    return 0;
}

int plugin_pcs_contain(const uint64_t *pcs, size_t npcs, uint64_t pc)
{
    return npcs && bsearch(&pc, pcs, npcs, sizeof pc, cmp_u64) != NULL;
}

int sched_is_point_pc(uint64_t pc)
{
    return plugin_pcs_contain(g_plugin.sched.pcs, g_plugin.sched.npcs, pc);
}

/* How the platform runs the threads the policy allows at once. */
static weft_set_mode set_mode(const pct_config *cfg)
{
    if (cfg->kind != PCT_KIND_PPCT)
        return WEFT_SET_SINGLE;
    return g_plugin.sched.ppct_host_parallel ? WEFT_SET_PARALLEL : WEFT_SET_IN_ORDER;
}

/* The trace's header names the policy and its seed. */
static void name_policy(void)
{
    sched_state *s = &g_plugin.sched;
    snprintf(g_plugin.cfg.settings.policy, sizeof g_plugin.cfg.settings.policy, "%s",
             pct_kind_name(s->cfg.kind));
    g_plugin.cfg.settings.seed = s->cfg.seed;
}

int sched_setup(char *err, size_t errlen)
{
    sched_state *s = &g_plugin.sched;
    if (!s->requested)
        return 0;
    if ((s->points == POINTS_PCS || (s->points == POINTS_VISIBLE && s->pcs_path)) &&
        plugin_load_pcs(s->pcs_path, &s->pcs, &s->npcs, err, errlen))
        return -1;
    s->policy = pct_policy_create(&s->cfg, err, errlen);
    if (!s->policy)
        return -1;
    if (weft_platform_set_policy(g_plugin.platform, s->policy, set_mode(&s->cfg)) != 0) {
        snprintf(err, errlen, "platform: policy set after threads started");
        return -1;
    }
    name_policy();
    return 0;
}

int sched_adopt(const pct_config *cfg, pct_policy *policy, const char *record, char *err,
                size_t errlen)
{
    sched_state *s = &g_plugin.sched;
    if (weft_platform_adopt_policy(g_plugin.platform, policy, set_mode(cfg), (uint64_t)gettid())) {
        snprintf(err, errlen, "platform: the policy cannot take over the main thread");
        return -1;
    }
    pct_policy_destroy(s->policy);
    s->policy = policy;
    s->cfg = *cfg;
    s->record_path = record;
    name_policy();
    return 0;
}

int sched_load_code(const char *binary, char *err, size_t errlen)
{
    sched_state *s = &g_plugin.sched;
    atomic_store(&s->bias, INT64_MIN);
    if (!s->requested || s->points != POINTS_VISIBLE)
        return 0;
    weft_symbols *syms = weft_symbols_open(binary, err, errlen);
    if (!syms)
        return -1;
    int rc = weft_code_map_build(syms, &s->code, err, errlen);
    /* The map's names point into static storage, not into the symbols. */
    weft_symbols_close(syms);
    if (rc)
        return -1;
    s->have_code = 1;
    if (s->code.how == WEFT_CODE_ALL)
        fprintf(stderr,
                "weft: %s has no debug info: its code cannot be told from the C "
                "library's, so every instruction counts as the program's (build with -g)\n",
                binary);
    return 0;
}

int sched_visible(void)
{
    return g_plugin.sched.policy && g_plugin.sched.points == POINTS_VISIBLE &&
           g_plugin.sched.have_code;
}

/* qemu loads a position-independent binary at an address of its choosing:
 * the code map's link-time addresses move by start_code - text_lo. */
static int64_t load_bias(void)
{
    sched_state *s = &g_plugin.sched;
    int64_t b = atomic_load_explicit(&s->bias, memory_order_relaxed);
    if (b == INT64_MIN) {
        b = (int64_t)(qemu_plugin_start_code() - s->code.text_lo);
        atomic_store(&s->bias, b);
    }
    return b;
}

int sched_own_pc(uint64_t pc)
{
    return weft_code_map_own(&g_plugin.sched.code, pc - (uint64_t)load_bias());
}

const char *sched_sync_target(uint64_t target)
{
    return weft_code_map_sync(&g_plugin.sched.code, target - (uint64_t)load_bias());
}

void sched_write_record(void)
{
    sched_state *s = &g_plugin.sched;
    if (!s->policy || !s->record_path)
        return;
    uint64_t cps[PCT_MAX_DEPTH];
    size_t ncp = pct_policy_change_points(s->policy, cps, PCT_MAX_DEPTH);
    json_t *cp = json_array();
    for (size_t i = 0; i < ncp && i < PCT_MAX_DEPTH; i++)
        json_array_append_new(cp, json_integer((json_int_t)cps[i]));
    json_t *rec = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:o, s:I, s:I, s:I, s:I}", "policy",
        pct_kind_name(s->cfg.kind), "seed", (json_int_t)s->cfg.seed, "n", (json_int_t)s->cfg.n, "k",
        (json_int_t)s->cfg.k, "depth", (json_int_t)s->cfg.d, "radius", (json_int_t)s->cfg.r,
        "starvation", s->cfg.starvation, "steps", (json_int_t)pct_policy_steps(s->policy),
        "change_points", cp, "overrides", (json_int_t)pct_policy_overrides(s->policy), "handoffs",
        (json_int_t)weft_platform_handoffs(g_plugin.platform), "threads",
        (json_int_t)pct_policy_thread_count(s->policy), "low_set_ever",
        (json_int_t)pct_policy_low_set_ever(s->policy));
    /* Each thread's last synchronization call in the program's own code:
     * where a thread blocked in the C library was called from. */
    json_t *calls = json_array();
    for (unsigned i = 0; rec && calls && i < PLUGIN_MAX_VCPUS; i++) {
        vcpu_state *v = g_plugin.vcpus[i];
        if (v && v->pe >= 0 && v->last_call_pc)
            json_array_append_new(calls, json_pack("{s:i, s:I, s:s}", "thread", v->pe, "pc",
                                                   (json_int_t)v->last_call_pc, "call",
                                                   v->last_callee ? v->last_callee : "?"));
    }
    if (rec)
        json_object_set_new(rec, "calls", calls ? calls : json_array());
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", s->record_path, (int)getpid());
    if (!rec || json_dump_file(rec, tmp, JSON_COMPACT) != 0 || rename(tmp, s->record_path) != 0) {
        fprintf(stderr, "weft: cannot write %s: %s\n", s->record_path, strerror(errno));
        unlink(tmp);
    }
    json_decref(rec);
}
