/* The plugin's arguments (key=value, as weft passes them): the trace's
 * settings, this run's files and limits; the policy's, speculation's and
 * the fork server's keys are parsed where their state lives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_replay.h"

/* Defaults of what the arguments may change: the ideal platform's (1 cycle
 * per instruction, 1 ns per cycle), free mode, every event but the
 * threads' own stacks. */
static void config_defaults(plugin_config *c)
{
    c->settings.cpi = 1;
    c->settings.ps_per_cycle = 1000;
    c->settings.mode = WEFT_MODE_FREE;
    c->settings.filter = WEFT_FILTER_NONSTACK;
    c->settings.record = WEFT_RECORD_ALL;
    snprintf(c->settings.policy, sizeof c->settings.policy, "ideal");
    c->max_pes = 512;
    c->stall_ms = 2000;
    c->max_bytes = PLUGIN_MAX_BYTES;
    c->min_free = PLUGIN_MIN_FREE;
    const char *mf = getenv("WEFT_TRACE_MIN_FREE"); /* tests: a "nearly full" disk */
    if (mf && plugin_parse_u64(mf, &c->min_free) != 0)
        c->min_free = PLUGIN_MIN_FREE;
    /* Wait loops are short: a spin on a flag is a load and a branch (glibc's
     * pthread_spin_lock, two such blocks). Tests set 0 (no block closes
     * one), leaving library spins to SPIN_LIB_BLOCKS. */
    c->wait_loop_bytes = 64;
    const char *wl = getenv("WEFT_WAIT_LOOP_BYTES");
    if (wl && plugin_parse_u64(wl, &c->wait_loop_bytes) != 0)
        c->wait_loop_bytes = 64;
    c->argi = -1;
    c->errfd = -1;
}

/* An argument that goes into the trace's settings (its header records
 * them, so a reader knows how the trace was made): 1 taken, 0 not one of
 * these, -1 bad (said on stderr). */
static int parse_setting_arg(weft_trace_settings *s, const char *k, const char *val)
{
    uint64_t x = 0;
    int num = plugin_parse_u64(val, &x) == 0;
    if (!strcmp(k, "mode") && (!strcmp(val, "free") || !strcmp(val, "exact")))
        s->mode = !strcmp(val, "exact") ? WEFT_MODE_EXACT : WEFT_MODE_FREE;
    else if (!strcmp(k, "filter") && !strcmp(val, "all"))
        s->filter = WEFT_FILTER_ALL;
    else if (!strcmp(k, "filter") && !strcmp(val, "nonstack"))
        s->filter = WEFT_FILTER_NONSTACK;
    else if (!strcmp(k, "filter") && !strcmp(val, "shared"))
        s->filter = WEFT_FILTER_SHARED;
    else if (!strcmp(k, "range") && s->nranges < WEFT_TRACE_MAX_RANGES) {
        unsigned long long lo, hi;
        if (sscanf(val, "%llx-%llx", &lo, &hi) != 2 || hi <= lo) {
            fprintf(stderr, "weft-tracer: bad range '%s'\n", val);
            return -1;
        }
        s->filter = WEFT_FILTER_RANGES;
        s->range_lo[s->nranges] = lo;
        s->range_hi[s->nranges++] = hi;
    } else if (!strcmp(k, "cpi") && num && x >= 1 && x <= 1000000)
        s->cpi = (uint32_t)x;
    else if (!strcmp(k, "ps") && num && x >= 1)
        s->ps_per_cycle = x;
    else if (!strcmp(k, "quantum") && num)
        s->quantum = x;
    else if (!strcmp(k, "record") && !strcmp(val, "all"))
        s->record = WEFT_RECORD_ALL;
    else if (!strcmp(k, "record") && !strcmp(val, "sync"))
        s->record = WEFT_RECORD_SYNC;
    else if (!strcmp(k, "record") && !strcmp(val, "sync+writes"))
        s->record = WEFT_RECORD_SYNC | WEFT_RECORD_WRITES;
    else
        return 0;
    return 1;
}

/* An argument about this run only (files, limits), not recorded in the
 * trace: 1 taken, 0 not one of these. */
static int parse_run_arg(plugin_config *c, const char *k, const char *val)
{
    uint64_t x = 0;
    int num = plugin_parse_u64(val, &x) == 0;
    if (!strcmp(k, "out"))
        c->out = val;
    else if (!strcmp(k, "maxpes") && num && x >= 1 && x <= 65536)
        c->max_pes = (uint32_t)x;
    else if (!strcmp(k, "stall") && num && x >= 1)
        c->stall_ms = (uint32_t)x;
    else if (!strcmp(k, "argi") && num)
        c->argi = (int)x;
    else if (!strcmp(k, "maxev") && num)
        c->max_events = x;
    else if (!strcmp(k, "maxsize") && num)
        c->max_bytes = x;
    else if (!strcmp(k, "spool") && !strcmp(val, "raw"))
        c->raw_spool = 1;
    else if (!strcmp(k, "sync") && num && x <= 1)
        c->not_durable = !x;
    else if (!strcmp(k, "lazy") && num && x <= 1)
        c->summary_only = (int)x;
    else if (!strcmp(k, "libaccess") && !strcmp(val, "all"))
        c->lib_access = LIB_ACCESS_ALL;
    else if (!strcmp(k, "libaccess") && !strcmp(val, "loops"))
        c->lib_access = LIB_ACCESS_LOOPS;
    else if (!strcmp(k, "libaccess") && !strcmp(val, "skip"))
        c->lib_access = LIB_ACCESS_SKIP;
    else if (!strcmp(k, "errfd") && num && x >= 3 && x < 65536)
        c->errfd = (int)x;
    else if (!strcmp(k, "inject"))
        c->inject = val;
    else if (!strcmp(k, "injected"))
        c->injected = val;
    else
        return 0;
    return 1;
}

/* weft gives --filter var: ranges and speculation's seeded functions in
 * the ELF's link-time addresses; a position-independent program runs
 * elsewhere, known once qemu has loaded it. */
void plugin_args_relocate(uint64_t start_code)
{
    weft_trace_settings *s = &g_plugin.cfg.settings;
    spec_state *sp = &g_plugin.spec;
    if (!start_code || (!s->nranges && !sp->nranges))
        return;
    char err[256];
    weft_symbols *syms = weft_symbols_open(g_plugin.meta.binary_path, err, sizeof err);
    if (!syms)
        return;
    weft_symbols_relocate(syms, start_code);
    uint64_t at = (uint64_t)weft_symbols_bias(syms);
    weft_symbols_close(syms);
    if (!at)
        return;
    for (uint32_t i = 0; i < s->nranges; i++)
        s->range_lo[i] += at, s->range_hi[i] += at;
    for (unsigned i = 0; i < sp->nranges; i++)
        sp->range_lo[i] += at, sp->range_hi[i] += at;
    g_plugin.meta.settings.nranges = s->nranges;
    memcpy(g_plugin.meta.settings.range_lo, s->range_lo, sizeof s->range_lo);
    memcpy(g_plugin.meta.settings.range_hi, s->range_hi, sizeof s->range_hi);
}

int plugin_parse_args(int argc, char **argv)
{
    plugin_config *c = &g_plugin.cfg;
    config_defaults(c);
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "weft-tracer: bad plugin argument '%s'\n", argv[i]);
            return -1;
        }
        *eq = 0;
        const char *k = argv[i], *val = eq + 1;
        int r = parse_setting_arg(&c->settings, k, val);
        if (r < 0)
            return -1;
        /* Each key belongs to one parser, so the order they are asked in
         * does not matter; the policy's, speculation's and the fork
         * server's keys live with their state. */
        if (r == 0 && parse_run_arg(c, k, val) == 0 && sched_parse_arg(k, val) != 1 &&
            spec_parse_arg(k, val) != 1 && server_parse_arg(k, val) != 1) {
            fprintf(stderr, "weft-tracer: bad plugin argument '%s=%s'\n", k, val);
            return -1;
        }
    }
    if (!c->out && !g_plugin.server.on) {
        fprintf(stderr, "weft-tracer: missing out=PATH\n");
        return -1;
    }
    return 0;
}
