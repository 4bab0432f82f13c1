/* Injection plans: building one in memory and writing it as JSON
 * (docs/plan-format.md). Reading and validation live in plan_parse.c. */
#include "model_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/trace.h"

uint64_t optimizer_delay_insns(uint64_t delay_ns, uint32_t cpi, uint64_t ps_per_cycle)
{
    if (cpi == 0 || ps_per_cycle == 0)
        return 0;
    /* 128-bit product: delay_ns * 1000 overflows 64 bits above ~1.8e16 ns. */
    unsigned __int128 ps = (unsigned __int128)delay_ns * 1000u;
    unsigned __int128 q = ps / ((unsigned __int128)cpi * ps_per_cycle);
    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int optimizer_plan_init(optimizer_plan *p, const weft_trace_meta *meta)
{
    memset(p, 0, sizeof *p);
    p->program = strdup(meta->binary_path ? meta->binary_path : "");
    size_t len = meta->build_id_len <= sizeof meta->build_id ? meta->build_id_len : 0;
    p->build_id = malloc(2 * len + 1);
    p->argv = calloc(meta->argc ? meta->argc : 1, sizeof *p->argv);
    p->mode = strdup(meta->settings.mode == WEFT_MODE_EXACT ? "exact" : "free");
    p->algorithm = strdup("manual");
    if (!p->program || !p->build_id || !p->argv || !p->mode || !p->algorithm)
        goto oom;
    for (size_t i = 0; i < len; i++)
        snprintf(p->build_id + 2 * i, 3, "%02x", meta->build_id[i]);
    p->build_id[2 * len] = 0;
    for (uint32_t i = 0; i < meta->argc; i++) {
        p->argv[i] = strdup(meta->argv[i] ? meta->argv[i] : "");
        if (!p->argv[i])
            goto oom;
        p->argc = i + 1;
    }
    p->cpi = meta->settings.cpi;
    p->ps_per_cycle = meta->settings.ps_per_cycle;
    return 0;
oom:
    optimizer_plan_free(p);
    return -1;
}

void optimizer_plan_set_search(optimizer_plan *p, const char *algorithm, uint64_t seed,
                               uint64_t dmax, uint64_t evaluations)
{
    char *a = strdup(algorithm);
    if (a) {
        free(p->algorithm);
        p->algorithm = a;
    }
    p->seed = seed;
    p->dmax = dmax;
    p->evaluations = evaluations;
}

void optimizer_injection_for_var(const optimizer_model *m, size_t v, uint64_t delay_ns,
                                 const optimizer_pair *pred, optimizer_injection *out)
{
    memset(out, 0, sizeof *out);
    if (v < m->nev) {
        out->thread = m->ev[v].thread;
        out->seq = m->ev[v].seq;
        out->pc = m->ev[v].pc;
    }
    out->delay_ns = delay_ns;
    if (pred) {
        out->has_predicted = 1;
        out->predicted = (optimizer_predicted){.thread_a = pred->thread_a,
                                               .seq_a = pred->seq_a,
                                               .thread_b = pred->thread_b,
                                               .seq_b = pred->seq_b,
                                               .address = pred->addr,
                                               .time = pred->aligned_time,
                                               .nudge = pred->nudge};
    }
}

int optimizer_plan_add(optimizer_plan *p, const optimizer_injection *inj)
{
    optimizer_injection *v = realloc(p->injections, (p->ninjections + 1) * sizeof *v);
    if (!v)
        return -1;
    p->injections = v;
    optimizer_injection c = *inj;
    c.function = dup_or_null(inj->function);
    c.file = dup_or_null(inj->file);
    c.variable = dup_or_null(inj->variable);
    if ((inj->function && !c.function) || (inj->file && !c.file) ||
        (inj->variable && !c.variable)) {
        free(c.function), free(c.file), free(c.variable);
        return -1;
    }
    c.delay_insns = optimizer_delay_insns(c.delay_ns, p->cpi, p->ps_per_cycle);
    p->injections[p->ninjections++] = c;
    return 0;
}

void optimizer_plan_free(optimizer_plan *p)
{
    free(p->program), free(p->build_id), free(p->mode), free(p->algorithm);
    for (uint32_t i = 0; p->argv && i < p->argc; i++)
        free(p->argv[i]);
    free(p->argv);
    for (size_t i = 0; i < p->ninjections; i++) {
        optimizer_injection *j = &p->injections[i];
        free(j->function), free(j->file), free(j->variable);
    }
    free(p->injections);
    memset(p, 0, sizeof *p);
}

/* ---- JSON --------------------------------------------------------------------- */

static json_t *hex(uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "0x%" PRIx64, v);
    return json_string(buf);
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static int set(json_t *o, const char *k, json_t *v)
{
    /* json_object_set_new takes ownership even on failure. */
    return v ? json_object_set_new(o, k, v) : -1;
}

/* JSON integers are signed 64-bit; anything larger cannot round-trip. */
static int set_uint(json_t *o, const char *k, uint64_t v)
{
    if (v > INT64_MAX)
        return -1;
    return set(o, k, json_integer((json_int_t)v));
}

static json_t *injection_json(const optimizer_injection *j)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= set_uint(o, "thread", j->thread);
    bad |= set_uint(o, "seq", j->seq);
    bad |= set(o, "pc", hex(j->pc));
    bad |= set(o, "function", str_or_null(j->function));
    bad |= set(o, "file", str_or_null(j->file));
    bad |= j->line ? set_uint(o, "line", j->line) : set(o, "line", json_null());
    bad |= set(o, "variable", str_or_null(j->variable));
    bad |= set_uint(o, "offset", j->offset);
    bad |= set_uint(o, "delay_ns", j->delay_ns);
    bad |= set_uint(o, "delay_insns", j->delay_insns);
    if (j->has_predicted) {
        const optimizer_predicted *q = &j->predicted;
        json_t *pr = json_object();
        bad |= set(o, "predicted", pr);
        if (pr) {
            bad |= set_uint(pr, "thread_a", q->thread_a);
            bad |= set_uint(pr, "seq_a", q->seq_a);
            bad |= set_uint(pr, "thread_b", q->thread_b);
            bad |= set_uint(pr, "seq_b", q->seq_b);
            bad |= set(pr, "address", hex(q->address));
            bad |= set_uint(pr, "time", q->time);
            if (q->nudge) /* absent for a collision, as in plans written before it existed */
                bad |= set_uint(pr, "nudge_ns", q->nudge);
        }
    } else {
        bad |= set(o, "predicted", json_null());
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *program_json(const optimizer_plan *p)
{
    json_t *prog = json_object(), *argv = json_array();
    int bad = !prog;
    bad |= set(prog, "path", json_string(p->program ? p->program : ""));
    bad |= set(prog, "build_id", json_string(p->build_id ? p->build_id : ""));
    bad |= set(prog, "argv", argv);
    for (uint32_t i = 0; !bad && i < p->argc; i++)
        bad |= json_array_append_new(argv, json_string(p->argv[i]));
    if (bad)
        return json_decref(prog), NULL;
    return prog;
}

static json_t *plan_json(const optimizer_plan *p)
{
    json_t *root = json_object(), *plat = json_object(), *srch = json_object();
    json_t *inj = json_array();
    /* set() consumes its value even on failure, so attaching each container
     * before filling it means one decref of root frees everything. */
    int bad = !root;
    bad |= set(root, "format", json_string("weft-plan"));
    bad |= set_uint(root, "version", OPTIMIZER_PLAN_VERSION);
    bad |= set(root, "program", program_json(p));
    bad |= set(root, "platform", plat);
    bad |= set(root, "search", srch);
    bad |= set(root, "injections", inj);
    if (bad)
        return json_decref(root), NULL;
    bad |= set(plat, "mode", json_string(p->mode ? p->mode : "exact"));
    bad |= set_uint(plat, "cpi", p->cpi);
    bad |= set_uint(plat, "ps_per_cycle", p->ps_per_cycle);
    bad |= set(srch, "algorithm", json_string(p->algorithm ? p->algorithm : "manual"));
    bad |= set_uint(srch, "seed", p->seed);
    bad |= set_uint(srch, "dmax", p->dmax);
    bad |= set_uint(srch, "evaluations", p->evaluations);
    for (size_t i = 0; !bad && i < p->ninjections; i++) {
        json_t *j = injection_json(&p->injections[i]);
        bad |= j ? json_array_append_new(inj, j) : -1;
    }
    if (bad)
        return json_decref(root), NULL;
    return root;
}

int optimizer_plan_write(const optimizer_plan *p, const char *path, char *err, size_t errlen)
{
    json_t *root = plan_json(p);
    if (!root)
        return optimizer_fail(err, errlen,
                              "%s: cannot encode plan (value above 2^63 or out of memory)", path);
    char *text = json_dumps(root, JSON_INDENT(2));
    json_decref(root);
    if (!text)
        return optimizer_fail(err, errlen, "%s: out of memory", path);
    size_t n = strlen(text);
    char *withnl = realloc(text, n + 2);
    if (!withnl) {
        free(text);
        return optimizer_fail(err, errlen, "%s: out of memory", path);
    }
    withnl[n] = '\n';
    withnl[n + 1] = 0;
    /* A crash leaves the old plan or the new one, never a torn file. */
    int rc = weft_write_atomic(path, withnl, n + 1, err, errlen);
    free(withnl);
    return rc;
}
