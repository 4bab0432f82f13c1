/* A run's switch log, as the plugin records it (tracer/plugin_sched.c), and
 * schedule files: a program and the switches that make it fail, which the
 * script policy replays (docs/replay.md, "Schedule files"). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "run_record.h"
#include "weft/guest.h"
#include "weft/replay.h"

#define JI(o, k) json_integer_value(json_object_get((o), (k)))
#define JS(o, k) json_string_value(json_object_get((o), (k)))

static int fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    snprintf(err, errlen, fmt, a, b);
    return -1;
}

static void read_switch(json_t *e, replay_switch *w)
{
    memset(w, 0, sizeof *w);
    w->step = (uint64_t)JI(e, "step");
    w->from = JI(e, "from");
    w->to = JI(e, "to");
    snprintf(w->why, sizeof w->why, "%s", JS(e, "why") ? JS(e, "why") : "?");
    w->change_point = (uint32_t)JI(e, "change_point");
    w->preempt = json_is_true(json_object_get(e, "preempt"));
    w->stay = json_is_true(json_object_get(e, "stay"));
    w->timeout = json_is_true(json_object_get(e, "timeout"));
    w->timed_wait = json_is_true(json_object_get(e, "timed_wait"));
    w->from_pc = (uint64_t)JI(e, "from_pc");
    w->to_pc = (uint64_t)JI(e, "to_pc");
    w->from_seq = (uint64_t)JI(e, "from_seq");
    w->to_seq = (uint64_t)JI(e, "to_seq");
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(e, "enabled"), i, t)
    {
        if (i < REPLAY_SWITCH_ENABLED)
            w->enabled[i] = json_integer_value(t);
    }
    json_t *cnt = json_object_get(e, "enabled_count");
    w->nenabled = json_is_integer(cnt) ? (size_t)json_integer_value(cnt)
                                       : json_array_size(json_object_get(e, "enabled"));
}

/* What a record, or the switch-log file's first line, says of the run. */
static void read_header(json_t *o, replay_switch_log *log)
{
    snprintf(log->policy, sizeof log->policy, "%s", JS(o, "policy") ? JS(o, "policy") : "?");
    log->seed = (uint64_t)JI(o, "seed");
    log->depth = (uint64_t)JI(o, "depth");
    log->k = (uint64_t)JI(o, "k");
    log->n_threads = (uint64_t)JI(o, "n");
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(o, "change_points"), i, e)
    {
        if (log->nchange_points < 16)
            log->change_points[log->nchange_points++] = (uint64_t)json_integer_value(e);
    }
}

int replay_switch_log_load(const char *record_path, replay_switch_log *log, char *err,
                           size_t errlen)
{
    memset(log, 0, sizeof *log);
    json_error_t je;
    json_t *rec = json_load_file(record_path, 0, &je);
    if (!rec)
        return fail(err, errlen, "%s: %s", record_path, je.text);
    json_t *sw = json_object_get(rec, "switches");
    if (!json_is_array(sw)) {
        json_decref(rec);
        return fail(err, errlen, "%s: %s", record_path,
                    "no switch log (recorded by a weft older than the log)");
    }
    log->n = json_array_size(sw);
    log->v = calloc(log->n ? log->n : 1, sizeof *log->v);
    if (!log->v) {
        json_decref(rec);
        return fail(err, errlen, "%s: %s", record_path, "out of memory");
    }
    size_t i;
    json_t *e;
    json_array_foreach(sw, i, e) read_switch(e, &log->v[i]);
    log->switches = (uint64_t)JI(rec, "switches_total");
    log->stays = (uint64_t)JI(rec, "stays");
    log->preemptions = (uint64_t)JI(rec, "preemptions");
    log->dropped = (uint64_t)JI(rec, "switches_dropped");
    read_header(rec, log);
    log->steps = (uint64_t)JI(rec, "steps");
    log->overrides = (uint64_t)JI(rec, "overrides");
    json_decref(rec);
    return 0;
}

/* The switch-log file a run appends as it goes (the plugin's switchlog=):
 * a header line, then one switch a line. For a run that died before the
 * plugin wrote its record. */
static int load_jsonl(const char *path, replay_switch_log *log, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return fail(err, errlen, "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0, vcap = 0;
    int rc = 0, first = 1;
    while (rc == 0 && getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        if (!o) /* a last line cut short by the kill */
            break;
        if (first) {
            read_header(o, log);
            first = 0;
        } else if (log->n == vcap) {
            vcap = vcap ? 2 * vcap : 256;
            replay_switch *v = realloc(log->v, vcap * sizeof *v);
            if (!v)
                rc = fail(err, errlen, "%s: %s", path, "out of memory");
            else
                log->v = v;
        }
        if (!first && rc == 0 && json_object_get(o, "step")) {
            replay_switch *w = &log->v[log->n++];
            read_switch(o, w);
            log->stays += w->stay;
            log->switches += !w->stay;
            log->preemptions += w->preempt && !w->stay;
            log->steps = w->step;
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    log->partial = 1;
    return rc;
}

int replay_switch_log_load_kept(const char *dir, uint64_t seed, replay_switch_log *log, char *err,
                                size_t errlen)
{
    char rec[PATH_MAX + 64], all[PATH_MAX + 64];
    snprintf(rec, sizeof rec, "%s/traces/seed-%" PRIu64 ".sched.json", dir, seed);
    snprintf(all, sizeof all, "%s/traces/seed-%" PRIu64 ".switches.jsonl", dir, seed);
    int have_all = access(all, R_OK) == 0;
    if (access(rec, R_OK) == 0) {
        if (replay_switch_log_load(rec, log, err, errlen))
            return -1;
        if (!log->dropped || !have_all)
            return 0;
        /* The record's ring lost the oldest switches: the whole log's,
         * with the record's counts. */
        replay_switch_log whole;
        memset(&whole, 0, sizeof whole);
        if (load_jsonl(all, &whole, err, errlen)) {
            replay_switch_log_free(&whole);
            replay_switch_log_free(log);
            return -1;
        }
        free(log->v);
        log->v = whole.v;
        log->n = whole.n;
        log->dropped = 0;
        return 0;
    }
    memset(log, 0, sizeof *log);
    if (!have_all)
        goto missing;
    if (load_jsonl(all, log, err, errlen))
        return -1;
    /* A dead run's counts, kept as seed-S.status: its exact steps. */
    snprintf(rec, sizeof rec, "%s/traces/seed-%" PRIu64, dir, seed);
    json_t *counts = replay_record_load(rec);
    if (replay_record_died(counts)) {
        log->steps = (uint64_t)JI(counts, "steps");
        log->overrides = (uint64_t)JI(counts, "overrides");
        log->counted = 1;
    }
    json_decref(counts);
    return 0;
missing:
    snprintf(err, errlen,
             "%s/traces: seed %" PRIu64 "'s trace and switch log were not kept (replay it with "
             "--seed %" PRIu64 " --save-trace, or --explain)",
             dir, seed, seed);
    return -1;
}

void replay_switch_log_free(replay_switch_log *log)
{
    free(log->v);
    memset(log, 0, sizeof *log);
}

void replay_line_add_switches(json_t *line, json_t *record)
{
    static const char *const keys[] = {"switches_total", "preemptions", "script_missed",
                                       "departures"};
    static const char *const as[] = {"switches", "preemptions", "script_missed", "departures"};
    for (size_t i = 0; i < 4; i++) {
        json_t *v = record ? json_object_get(record, keys[i]) : NULL;
        if (v || i < 2)
            json_object_set(line, as[i], v ? v : json_null());
    }
}

/* ---- schedule files ---------------------------------------------------------- */

static const char *points_word(replay_points p, int races)
{
    return p == POINTS_NONE      ? "none"
           : p == POINTS_ALL     ? "all"
           : p == POINTS_VISIBLE ? (races ? "races" : "visible")
                                 : "pcs";
}

int replay_schedule_write(const replay_schedule *s, const char *path, char *err, size_t errlen)
{
    json_t *argv = json_array(), *pcs = json_array(), *sw = json_array(), *env = json_array();
    for (int i = 0; argv && i < s->argc; i++)
        json_array_append_new(argv, json_string(s->argv[i]));
    char **here = s->env ? NULL : guest_environment();
    for (size_t i = 0; env && s->env && i < s->nenv; i++)
        json_array_append_new(env, json_string(s->env[i]));
    for (size_t i = 0; env && here && here[i]; i++)
        json_array_append_new(env, json_string(here[i]));
    free(here);
    char hex[24];
    for (size_t i = 0; pcs && i < s->npcs; i++) {
        snprintf(hex, sizeof hex, "%" PRIx64, s->pcs[i]);
        json_array_append_new(pcs, json_string(hex));
    }
    for (size_t i = 0; sw && i < s->nsw; i++)
        json_array_append_new(sw, json_pack("{s:I, s:I, s:b}", "step", (json_int_t)s->sw[i].step,
                                            "thread", (json_int_t)s->sw[i].thread, "preempt",
                                            s->sw[i].preempt));
    json_t *o = json_pack(
        "{s:s, s:i, s:s, s:o, s:s?, s:I, s:I, s:s, s:o, s:i, s:i, s:s, s:s, s:{s:s, s:I, s:I, "
        "s:I, s:I}, s:o}",
        "format", "weft-schedule", "version", 1, "program", s->program, "argv",
        argv ? argv : json_array(), "sysroot", s->sysroot, "n", (json_int_t)s->n, "k",
        (json_int_t)s->k, "points", points_word(s->points, s->races), "point_pcs",
        pcs ? pcs : json_array(), "expect_exit", s->expect_exit, "timeout", (int)s->timeout,
        "verdict", s->verdict, "detail", s->detail, "from", "policy", s->from_policy, "seed",
        (json_int_t)s->from_seed, "depth", (json_int_t)s->from_depth, "switches",
        (json_int_t)s->from_switches, "preemptions", (json_int_t)s->from_preemptions, "switches",
        sw ? sw : json_array());
    if (o)
        json_object_set_new(o, "env", env ? env : json_array());
    else
        json_decref(env);
    char *text = o ? json_dumps(o, JSON_INDENT(1)) : NULL;
    json_decref(o);
    if (!text)
        return fail(err, errlen, "%s: %s", path, "out of memory");
    size_t len = strlen(text);
    int rc = weft_write_atomic(path, text, len, err, errlen);
    free(text);
    return rc;
}

void replay_schedule_free(replay_schedule *s)
{
    free(s->program);
    for (int i = 0; s->argv && i < s->argc; i++)
        free(s->argv[i]);
    free(s->argv);
    free(s->sysroot);
    free(s->pcs);
    free(s->sw);
    for (size_t i = 0; s->env && i < s->nenv; i++)
        free(s->env[i]);
    free(s->env);
    memset(s, 0, sizeof *s);
}

static char *dup_or_null(const char *x)
{
    return x ? strdup(x) : NULL;
}

/* The switches: each {step, thread, preempt}, in step order. */
static int read_switches(json_t *o, replay_schedule *s, const char *path, char *err, size_t errlen)
{
    json_t *sw = json_object_get(o, "switches");
    if (!json_is_array(sw))
        return fail(err, errlen, "%s: %s", path, "no \"switches\" array");
    s->nsw = json_array_size(sw);
    s->sw = calloc(s->nsw ? s->nsw : 1, sizeof *s->sw);
    if (!s->sw)
        return fail(err, errlen, "%s: %s", path, "out of memory");
    size_t i;
    json_t *e;
    json_array_foreach(sw, i, e)
    {
        json_t *step = json_object_get(e, "step"), *th = json_object_get(e, "thread");
        if (!json_is_integer(step) || !json_is_integer(th) || json_integer_value(step) < 0 ||
            json_integer_value(th) < 0) {
            snprintf(err, errlen, "%s: switch %zu: expected non-negative integers step and thread",
                     path, i + 1);
            return -1;
        }
        s->sw[i] =
            (pct_script_switch){(uint64_t)json_integer_value(step), (pct_tid)json_integer_value(th),
                                json_is_true(json_object_get(e, "preempt"))};
        if (i && s->sw[i].step < s->sw[i - 1].step) {
            snprintf(err, errlen, "%s: switch %zu: step %" PRIu64 " before the previous one's",
                     path, i + 1, s->sw[i].step);
            return -1;
        }
    }
    return 0;
}

/* argv, points and point pcs. */
static int read_program(json_t *o, replay_schedule *s, const char *path, char *err, size_t errlen)
{
    json_t *argv = json_object_get(o, "argv");
    s->argc = (int)json_array_size(argv);
    if (!JS(o, "program") || s->argc < 1)
        return fail(err, errlen, "%s: %s", path, "no \"program\" and \"argv\"");
    s->program = strdup(JS(o, "program"));
    s->argv = calloc((size_t)s->argc + 1, sizeof *s->argv);
    for (int i = 0; s->argv && i < s->argc; i++)
        s->argv[i] = dup_or_null(json_string_value(json_array_get(argv, (size_t)i)));
    const char *pts = JS(o, "points");
    if (!pts || (strcmp(pts, "none") && strcmp(pts, "all") && strcmp(pts, "visible") &&
                 strcmp(pts, "races") && strcmp(pts, "pcs")))
        return fail(err, errlen, "%s: points \"%s\": expected none, all, visible, races or pcs",
                    path, pts ? pts : "");
    s->races = !strcmp(pts, "races");
    s->points = !strcmp(pts, "none")                  ? POINTS_NONE
                : !strcmp(pts, "all")                 ? POINTS_ALL
                : !strcmp(pts, "visible") || s->races ? POINTS_VISIBLE
                                                      : POINTS_PCS;
    json_t *env = json_object_get(o, "env"); /* absent in older files */
    s->nenv = json_array_size(env);
    s->env = env ? calloc(s->nenv + 1, sizeof *s->env) : NULL;
    for (size_t i = 0; s->env && i < s->nenv; i++)
        s->env[i] = dup_or_null(json_string_value(json_array_get(env, i)));
    json_t *pcs = json_object_get(o, "point_pcs");
    s->npcs = json_array_size(pcs);
    s->pcs = calloc(s->npcs ? s->npcs : 1, sizeof *s->pcs);
    if (!s->program || !s->argv || !s->pcs)
        return fail(err, errlen, "%s: %s", path, "out of memory");
    for (size_t i = 0; i < s->npcs; i++) {
        const char *h = json_string_value(json_array_get(pcs, i));
        char *end;
        s->pcs[i] = h ? strtoull(h, &end, 16) : 0;
        if (!h || !*h || *end)
            return fail(err, errlen, "%s: %s", path, "point_pcs: expected hex strings");
    }
    return 0;
}

int replay_schedule_read(const char *path, replay_schedule *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    if (!o)
        return fail(err, errlen, "%s: %s", path, je.text);
    int rc = -1;
    if (!JS(o, "format") || strcmp(JS(o, "format"), "weft-schedule"))
        fail(err, errlen, "%s: %s", path, "not a weft schedule (format \"weft-schedule\")");
    else if (JI(o, "version") != 1)
        fail(err, errlen, "%s: %s", path, "schedule version is not 1");
    else if (JI(o, "n") < 1)
        fail(err, errlen, "%s: %s", path, "n (threads) must be at least 1");
    else if (read_program(o, s, path, err, errlen) == 0 &&
             read_switches(o, s, path, err, errlen) == 0)
        rc = 0;
    if (rc == 0) {
        s->sysroot = dup_or_null(JS(o, "sysroot"));
        s->n = (uint64_t)JI(o, "n");
        s->k = (uint64_t)JI(o, "k");
        s->expect_exit = (int)JI(o, "expect_exit");
        json_t *to = json_object_get(o, "timeout");
        s->timeout = json_is_integer(to) && json_integer_value(to) > 0
                         ? (unsigned)json_integer_value(to)
                         : REPLAY_DEFAULT_TIMEOUT;
        snprintf(s->verdict, sizeof s->verdict, "%s", JS(o, "verdict") ? JS(o, "verdict") : "");
        snprintf(s->detail, sizeof s->detail, "%s", JS(o, "detail") ? JS(o, "detail") : "");
        json_t *from = json_object_get(o, "from");
        snprintf(s->from_policy, sizeof s->from_policy, "%s",
                 JS(from, "policy") ? JS(from, "policy") : "");
        s->from_seed = (uint64_t)JI(from, "seed");
        s->from_depth = (uint64_t)JI(from, "depth");
        s->from_switches = (uint64_t)JI(from, "switches");
        s->from_preemptions = (uint64_t)JI(from, "preemptions");
    } else {
        replay_schedule_free(s);
    }
    json_decref(o);
    return rc;
}

/* The value of NAME in env ("NAME=value" strings), or NULL. */
static const char *env_value(char *const *env, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; env && i < n && env[i]; i++)
        if (!strncmp(env[i], name, len) && env[i][len] == '=')
            return env[i] + len + 1;
    return NULL;
}

/* The guest's environment is its input too (OpenMP's team size, and the
 * stack it sits on): a schedule minimized with OMP_NUM_THREADS=3 replayed
 * without it ran 2 threads, left the schedule and said only "NOT
 * reproduced". Names the variables that differ from the file's, once. */
static void say_env_differences(const replay_schedule *s, const char *path)
{
    char **here = s->env ? guest_environment() : NULL;
    if (!here)
        return;
    size_t nhere = 0;
    while (here[nhere])
        nhere++;
    char list[512] = "";
    size_t used = 0, count = 0;
    for (int pass = 0; pass < 2; pass++) {
        char *const *from = pass ? here : s->env, *const *other = pass ? s->env : here;
        size_t nfrom = pass ? nhere : s->nenv, nother = pass ? s->nenv : nhere;
        for (size_t i = 0; i < nfrom; i++) {
            const char *eq = from[i] ? strchr(from[i], '=') : NULL;
            if (!eq)
                continue;
            size_t len = (size_t)(eq - from[i]);
            const char *there = env_value(other, nother, from[i], len);
            if (there && (pass || !strcmp(there, eq + 1)))
                continue; /* the same, or a difference the first pass named */
            const char *was = pass ? NULL : eq + 1, *is = pass ? eq + 1 : there;
            count++;
            if (used < sizeof list - 1)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%.*s (%s%s%s here)",
                                         used ? ", " : "", (int)len, from[i], was ? was : "unset",
                                         " there, ", is ? is : "unset");
        }
    }
    free(here);
    if (count)
        printf("weft: note: the guest's environment differs from the one %s was found with "
               "(%zu variable%s: %s): the run may not follow it\n",
               path, count, count == 1 ? "" : "s", list);
}

int replay_schedule_apply(replay_config *c, const replay_schedule *s, const char *path,
                          const char *out_dir)
{
    say_env_differences(s, path);
    if (!realpath(path, c->schedule_path)) {
        weft_error("%s: %s", path, strerror(errno));
        return -1;
    }
    if (strchr(c->schedule_path, ',')) {
        weft_error("%s: commas are not allowed in the paths weft hands to the tracer",
                   c->schedule_path);
        return -1;
    }
    c->kind = PCT_KIND_SCRIPT;
    c->n = s->n;
    c->k = s->k ? s->k : 1;
    c->n_given = c->k_given = 1;
    c->depth = 1;
    c->points = s->points;
    c->race_points = s->races; /* its library pcs are points too */
    if (!c->run.argc) {
        c->run.binary = s->program;
        c->run.argv = s->argv;
        c->run.argc = s->argc;
    }
    if (!c->run.sysroot)
        c->run.sysroot = s->sysroot;
    if (s->points != POINTS_VISIBLE && s->points != POINTS_PCS)
        return 0;
    /* The points go with the schedule: its switches count these steps. */
    size_t cap = s->npcs * 20 + 1, len = 0;
    char *buf = malloc(cap), err[512], dir[PATH_MAX];
    if (!buf) {
        weft_error("out of memory");
        return -1;
    }
    for (size_t i = 0; i < s->npcs; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%" PRIx64 "\n", s->pcs[i]);
    if (weft_mkdirs(out_dir) || !realpath(out_dir, dir)) {
        free(buf);
        return -1;
    }
    snprintf(c->pcs_path, sizeof c->pcs_path, "%s/points.pcs", dir);
    int rc = weft_write_atomic(c->pcs_path, buf, len, err, sizeof err);
    free(buf);
    if (rc) {
        weft_error("%s", err);
        return -1;
    }
    c->npcs = s->npcs;
    return 0;
}

/* The runs.jsonl line of seed in dir (the last one), or NULL. */
static json_t *seed_line(const char *dir, uint64_t seed)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/runs.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *line = NULL;
    size_t cap = 0;
    json_t *found = NULL;
    while (getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        if (o && json_is_integer(json_object_get(o, "seed")) && (uint64_t)JI(o, "seed") == seed &&
            JS(o, "verdict")) {
            json_decref(found);
            found = o;
        } else {
            json_decref(o);
        }
    }
    free(line);
    fclose(f);
    return found;
}

int replay_seed_outcome(const char *dir, uint64_t seed, char *verdict, size_t vlen, char *detail,
                        size_t dlen)
{
    json_t *o = seed_line(dir, seed);
    if (!o)
        return -1;
    snprintf(verdict, vlen, "%s", JS(o, "verdict"));
    snprintf(detail, dlen, "%s", JS(o, "detail") ? JS(o, "detail") : "");
    json_decref(o);
    return 0;
}

int replay_schedule_verify(const char *dir, uint64_t seed, const replay_schedule *s)
{
    json_t *o = seed_line(dir, seed);
    if (!o)
        return -1;
    const char *v = JS(o, "verdict"), *d = JS(o, "detail") ? JS(o, "detail") : "";
    int same = !strcmp(v, s->verdict) && (strcmp(v, "bug") || !strcmp(d, s->detail));
    if (!s->verdict[0])
        printf("weft: the schedule file names no verdict to compare with\n");
    else
        printf("weft: the schedule file's failure (%s%s%s): %s\n", s->verdict,
               s->detail[0] ? ": " : "", s->detail, same ? "reproduced" : "NOT reproduced");
    json_int_t missed = JI(o, "script_missed");
    if (missed > 0)
        printf("weft: note: %lld switch%s of the schedule did not apply (its thread could not "
               "run at its step, or the run never reached it): the run left the schedule\n",
               (long long)missed, missed == 1 ? "" : "es");
    json_decref(o);
    return s->verdict[0] ? same : -1;
}
