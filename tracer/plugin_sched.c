/* Replays under a priority policy (PCT, PPCT, RPro, random) or a script:
 * the plugin's side is parsing the policy's parameters, choosing schedule
 * points and handing the policy to the platform (a fork server's child
 * adopts a new one); what the run leaves for `weft replay` is in
 * plugin_record.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "plugin_replay.h"

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
    else if (!strcmp(key, "bound") && num && x <= PCT_MAX_BOUND)
        cfg->bound = (uint32_t)x;
    else if (!strcmp(key, "schedule") && num)
        cfg->schedule = x;
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
        } else if (!strncmp(val, "races:", 6) && val[6]) {
            s->points = POINTS_VISIBLE; /* and the racing pcs of the file, the library's too */
            s->pcs_path = val + 6;
            s->lib_points = 1;
        } else
            return -1;
    } else if (!strcmp(key, "hostpar") && num)
        s->ppct_host_parallel = x != 0;
    else if (!strcmp(key, "realsleep") && num)
        s->real_sleeps = x != 0;
    else if (!strcmp(key, "realrandom") && num)
        s->real_random = x != 0;
    else if (!strcmp(key, "record"))
        s->record_path = val;
    else if (!strcmp(key, "schedule"))
        s->schedule_path = val;
    else if (!strcmp(key, "switchlog"))
        s->switchlog_path = val;
    else
        return 0;
    return 1;
}

int sched_is_point_pc(uint64_t pc)
{
    return weft_pcs_contain(g_plugin.sched.pcs, g_plugin.sched.npcs, pc);
}

/* sched=script: the "switches" of a schedule file (docs/replay.md), each
 * {step, thread, preempt}, in the order given. */
static int load_script(const char *path, char *err, size_t errlen)
{
    sched_state *s = &g_plugin.sched;
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    json_t *sw = json_object_get(o, "switches");
    if (!json_is_array(sw)) {
        snprintf(err, errlen, "%s: %s", path, o ? "no \"switches\" array" : je.text);
        json_decref(o);
        return -1;
    }
    size_t n = json_array_size(sw), i;
    s->script = calloc(n ? n : 1, sizeof *s->script);
    json_t *e;
    json_array_foreach(sw, i, e)
    {
        json_t *step = json_object_get(e, "step"), *th = json_object_get(e, "thread");
        if (!s->script || !json_is_integer(step) || !json_is_integer(th)) {
            snprintf(err, errlen, "%s: switch %zu: %s", path, i + 1,
                     s->script ? "needs integer step and thread" : "out of memory");
            json_decref(o);
            return -1;
        }
        s->script[i] =
            (pct_script_switch){(uint64_t)json_integer_value(step), (pct_tid)json_integer_value(th),
                                json_is_true(json_object_get(e, "preempt"))};
    }
    json_decref(o);
    s->cfg.script = s->script;
    s->cfg.script_len = n;
    return 0;
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
        weft_pcs_load(s->pcs_path, &s->pcs, &s->npcs, err, errlen))
        return -1;
    if (s->cfg.kind == PCT_KIND_SCRIPT && s->schedule_path &&
        load_script(s->schedule_path, err, errlen))
        return -1;
    s->policy = pct_policy_create(&s->cfg, err, errlen);
    if (!s->policy)
        return -1;
    if (record_open(err, errlen))
        return -1;
    name_policy();
    if (weft_platform_set_policy(g_plugin.platform, s->policy, set_mode(&s->cfg)) != 0) {
        snprintf(err, errlen, "platform: policy set after threads started");
        return -1;
    }
    return 0;
}

void sched_serve(void)
{
    weft_platform_journal_where(g_plugin.platform, record_where);
}

int sched_adopt(const pct_config *cfg, pct_policy *policy, const char *record,
                const char *switchlog, char *err, size_t errlen)
{
    sched_state *s = &g_plugin.sched;
    pct_policy *old = s->policy;
    if (old)
        pct_policy_mirror(old, NULL); /* its page is the server's */
    s->cfg = *cfg;
    s->policy = policy;
    /* The child's record and switch log start as a fresh run's: empty, then
     * the prefix's decisions as the catch-up makes them again. */
    s->record_path = record;
    s->switchlog_path = switchlog;
    s->log_total = s->log_preemptions = s->log_stays = 0;
    if (record_open(err, errlen))
        return -1;
    int rc =
        weft_platform_policy_catch_up(g_plugin.platform, policy, record_decided_at, err, errlen);
    record_decided_at(-1, 0, 0);
    if (rc)
        return -1;
    if (weft_platform_adopt_policy(g_plugin.platform, policy, set_mode(cfg), (uint64_t)gettid())) {
        snprintf(err, errlen, "platform: the policy cannot take over the main thread");
        return -1;
    }
    pct_policy_destroy(old);
    name_policy();
    return 0;
}

int sched_load_code(const char *binary, char *err, size_t errlen)
{
    sched_state *s = &g_plugin.sched;
    atomic_store(&s->bias, INT64_MIN);
    /* Visible points need the map; libaccess= and the rule for the program's
     * own accesses to its stack (INSN_PROGRAM) only use it to tell the
     * program's code from the C library's, and do without when it cannot
     * be built. */
    int visible = s->requested && s->points == POINTS_VISIBLE;
    weft_symbols *syms = weft_symbols_open(binary, err, errlen);
    if (!syms)
        return visible ? -1 : 0;
    int rc = weft_code_map_build(syms, &s->code, err, errlen);
    /* The map's names point into static storage, not into the symbols. */
    weft_symbols_close(syms);
    if (rc)
        return visible ? -1 : 0;
    s->have_code = 1;
    if (visible && s->code.how == WEFT_CODE_ALL)
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

int sched_in_plt(uint64_t pc)
{
    return weft_code_map_plt(&g_plugin.sched.code, pc - (uint64_t)load_bias());
}

const char *sched_sync_target(uint64_t target)
{
    return weft_code_map_sync(&g_plugin.sched.code, target - (uint64_t)load_bias());
}
