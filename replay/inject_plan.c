/* weft inject's engine: re-run a program on the ideal platform (exact mode)
 * with an injection plan's delays and show whether the planned writes really
 * collide, and what the program does then compared with an uninjected run. */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/optimizer.h"
#include "weft/replay.h"

/* One planned alignment and what became of it in the current run. */
typedef struct alignment {
    size_t inj;                    /* injection that carries the prediction */
    int found;                     /* both events found at the planned address */
    uint64_t untimed_a, untimed_b; /* uninjected times (0 if not found) */
    uint64_t at_a, at_b;           /* achieved times */
    const char *why;               /* when not found */
    int collided;      /* as planned: at one time, or a nudge after b (predicted.nudge) */
    int64_t last_miss; /* of the previous run, when have_last */
    int have_last, stuck;
} alignment;

/* The tracer's state of an injection; *why says why it missed (or NULL). */
static const char *inj_state(json_t *rep, const optimizer_injection *in, uint64_t *seen_pc,
                             const char **why)
{
    *why = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(rep, i, e)
    {
        if ((uint64_t)json_integer_value(json_object_get(e, "thread")) == in->thread &&
            (uint64_t)json_integer_value(json_object_get(e, "seq")) == in->seq) {
            *seen_pc = (uint64_t)json_integer_value(json_object_get(e, "seen_pc"));
            *why = json_string_value(json_object_get(e, "why"));
            const char *s = json_string_value(json_object_get(e, "state"));
            return s ? s : "?";
        }
    }
    return "not in report";
}

static void measure(const optimizer_plan *p, const inj_index *ix, alignment *al)
{
    const optimizer_predicted *pr = &p->injections[al->inj].predicted;
    const weft_event *a = inj_index_get(ix, pr->thread_a, pr->seq_a);
    const weft_event *b = inj_index_get(ix, pr->thread_b, pr->seq_b);
    al->found = 0, al->collided = 0, al->why = NULL;
    if (!a || !b)
        al->why = "an event of the pair was not reached";
    else if (!weft_event_is_access(a->kind) || a->addr != pr->address)
        al->why = "the delayed thread took another path (event at its number is elsewhere)";
    else if (!weft_event_is_access(b->kind) || b->addr != pr->address)
        al->why = "the other thread took another path (event at its number is elsewhere)";
    if (al->why)
        return;
    al->found = 1;
    al->at_a = a->time, al->at_b = b->time;
    /* A nudged (write-read) pair is achieved when a lands that much after
     * b: b's access then ran first, the order the plan is for. */
    al->collided = a->time == b->time + pr->nudge;
}

static int write_inject_file(const char *path, const optimizer_plan *p, const uint64_t *delay)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        weft_error("%s: %s", path, strerror(errno));
        return -1;
    }
    /* The tracer applies a delay only before an event recorded at seq with
     * this pc (a gate at another pc, e.g. of a stack access its filter then
     * drops, leaves it pending), so a thread that took another path is not
     * delayed at a wrong place: the injection is reported missed. */
    fprintf(f, "# weft inject: thread seq pc delay_cycles\n");
    for (size_t i = 0; i < p->ninjections; i++) {
        const optimizer_injection *in = &p->injections[i];
        unsigned __int128 cyc = (unsigned __int128)delay[i] * 1000u / p->ps_per_cycle;
        fprintf(f, "%" PRIu32 " %" PRIu64 " 0x%" PRIx64 " %" PRIu64 "\n", in->thread, in->seq,
                in->pc, (uint64_t)cyc);
    }
    if (fclose(f) != 0) {
        weft_error("%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static json_t *verdict_json(const inj_verdict *v)
{
    static const char *ends[] = {"exited", "signaled", "timed out", "deadlock", "no trace"};
    return json_pack("{s:s, s:i, s:s?, s:b, s:f}", "end", ends[v->end], "status", v->status, "bug",
                     v->bug[0] ? v->bug : NULL, "passes", inj_verdict_passes(v), "wall_s",
                     v->wall_s);
}

typedef struct inject_ctx {
    const replay_inject_opts *o;
    optimizer_plan plan;
    guest_run run;
    char dir[PATH_MAX];
    int temp_dir;
    alignment *al;
    size_t nal;
    uint64_t *delay;
    json_t *json;
} inject_ctx;

static void path_in(const inject_ctx *c, char *buf, size_t len, const char *name, int k)
{
    if (k < 0)
        snprintf(buf, len, "%s/%s", c->dir, name);
    else
        snprintf(buf, len, "%s/injected-%d.%s", c->dir, k, name);
}

static int make_dir(inject_ctx *c)
{
    if (c->o->keep) {
        if (mkdir(c->o->keep, 0755) != 0 && errno != EEXIST) {
            weft_error("%s: %s", c->o->keep, strerror(errno));
            return -1;
        }
        snprintf(c->dir, sizeof c->dir, "%s", c->o->keep);
        return 0;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(c->dir, sizeof c->dir, "%s/weft-inject.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(c->dir)) {
        weft_error("%s: %s", c->dir, strerror(errno));
        return -1;
    }
    c->temp_dir = 1;
    return 0;
}

static void remove_dir(inject_ctx *c, int runs)
{
    if (!c->temp_dir)
        return;
    char p[PATH_MAX + 64];
    static const char *const names[] = {"wtr", "out", "txt", "json", "wtr.spool"};
    for (int k = -1; k < runs; k++)
        for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
            char n[32];
            snprintf(n, sizeof n, "uninjected.%s", names[i]);
            path_in(c, p, sizeof p, k < 0 ? n : names[i], k);
            unlink(p);
        }
    rmdir(c->dir);
}

/* The uninjected run: the baseline verdict and the events the plan names. */
static int run_uninjected(inject_ctx *c)
{
    char trace[PATH_MAX + 64], out[PATH_MAX + 64], err[512];
    path_in(c, trace, sizeof trace, "uninjected.wtr", -1);
    path_in(c, out, sizeof out, "uninjected.out", -1);
    inj_verdict v;
    if (inj_run_guest(&c->run, c->plan.cpi, c->plan.ps_per_cycle, trace, out, NULL, NULL, &v))
        return -1;
    inj_index ix;
    if (inj_index_load(trace, &ix, err, sizeof err)) {
        weft_error("%s", err);
        return -1;
    }
    char desc[512];
    inj_verdict_describe(&v, desc, sizeof desc);
    printf("weft: uninjected run: %s; %zu aligned write pair%s\n", desc, ix.aligned,
           ix.aligned == 1 ? "" : "s");
    /* inject has no trace to check the plan against when it reads it: the
     * uninjected run is that trace, so an injection before an event that run
     * never had is refused here, before any delay is applied, in the
     * parser's words (optimizer_plan_read with limits). */
    for (size_t i = 0; i < c->plan.ninjections; i++) {
        const optimizer_injection *in = &c->plan.injections[i];
        if (in->thread >= ix.nthreads) {
            weft_error("%s: injections[%zu].thread: thread %" PRIu32
                       " does not exist (the uninjected run has %" PRIu32 ")",
                       c->o->plan_path, i, in->thread, ix.nthreads);
            inj_index_free(&ix);
            return -1;
        }
        if (in->seq >= ix.count[in->thread]) {
            weft_error("%s: injections[%zu].seq: event %" PRIu64 " is out of range (thread %" PRIu32
                       " has %zu events in the uninjected run)",
                       c->o->plan_path, i, in->seq, in->thread, ix.count[in->thread]);
            inj_index_free(&ix);
            return -1;
        }
    }
    for (size_t i = 0; i < c->plan.ninjections; i++) {
        const optimizer_injection *in = &c->plan.injections[i];
        const weft_event *e = inj_index_get(&ix, in->thread, in->seq);
        if (in->pc && e->pc != in->pc)
            printf("weft: warning: T%" PRIu32 " seq %" PRIu64 " is at pc 0x%" PRIx64
                   " in this run, the plan says 0x%" PRIx64 " (injection %zu)\n",
                   in->thread, in->seq, e->pc, in->pc, i + 1);
    }
    for (size_t k = 0; k < c->nal; k++) {
        const optimizer_predicted *pr = &c->plan.injections[c->al[k].inj].predicted;
        const weft_event *a = inj_index_get(&ix, pr->thread_a, pr->seq_a);
        const weft_event *b = inj_index_get(&ix, pr->thread_b, pr->seq_b);
        c->al[k].untimed_a = a ? a->time : 0;
        c->al[k].untimed_b = b ? b->time : 0;
    }
    json_t *u = verdict_json(&v);
    json_object_set_new(u, "aligned_pairs", json_integer((json_int_t)ix.aligned));
    json_object_set_new(c->json, "uninjected", u);
    inj_index_free(&ix);
    return 0;
}

/* Prints the tracer's state of each injection (only those not applied when
 * quiet) and returns them as JSON. */
static json_t *injections_json(const inject_ctx *c, json_t *report, const inj_index *ix)
{
    json_t *ji = json_array();
    for (size_t i = 0; i < c->plan.ninjections; i++) {
        const optimizer_injection *in = &c->plan.injections[i];
        uint64_t seen = 0;
        const char *why;
        const char *st = inj_state(report, in, &seen, &why);
        const weft_event *e = inj_index_get(ix, in->thread, in->seq);
        /* Only with a plan pc of 0, which the tracer does not check. */
        if (!strcmp(st, "applied") && in->pc && (!e || e->pc != in->pc))
            st = "applied elsewhere";
        if (!strcmp(st, "applied elsewhere"))
            why = "the event at that number has another pc: the thread took another path";
        if (!c->o->quiet || strcmp(st, "applied"))
            printf("  injection %zu: %" PRIu64 " ns before T%" PRIu32 " seq %" PRIu64
                   " (pc 0x%" PRIx64 "): %s%s%s%s\n",
                   i + 1, c->delay[i], in->thread, in->seq, in->pc, st, why ? " (" : "",
                   why ? why : "", why ? ")" : "");
        json_array_append_new(ji, json_pack("{s:I, s:I, s:I, s:s, s:s?}", "thread",
                                            (json_int_t)in->thread, "seq", (json_int_t)in->seq,
                                            "delay_ns", (json_int_t)c->delay[i], "state", st, "why",
                                            why));
    }
    return ji;
}

/* The line of alignment j (counted from 0) as measured. */
static void print_alignment(size_t j, const optimizer_predicted *pr, const alignment *al)
{
    if (!al->found)
        printf("  alignment %zu (T%" PRIu32 " seq %" PRIu64 ", T%" PRIu32 " seq %" PRIu64
               "): not measured: %s\n",
               j + 1, pr->thread_a, pr->seq_a, pr->thread_b, pr->seq_b, al->why);
    else if (pr->nudge)
        printf("  alignment %zu at 0x%" PRIx64 ": T%" PRIu32 " seq %" PRIu64 " at %" PRIu64
               " ns, T%" PRIu32 " seq %" PRIu64 " at %" PRIu64 " ns (predicted %" PRIu64
               " and %" PRIu64 "): %s",
               j + 1, pr->address, pr->thread_a, pr->seq_a, al->at_a, pr->thread_b, pr->seq_b,
               al->at_b, pr->time + pr->nudge, pr->time,
               al->collided ? "ordered as planned" : "missed by ");
    else
        printf("  alignment %zu at 0x%" PRIx64 ": T%" PRIu32 " seq %" PRIu64 " at %" PRIu64
               " ns, T%" PRIu32 " seq %" PRIu64 " at %" PRIu64 " ns (predicted %" PRIu64
               " for both): %s",
               j + 1, pr->address, pr->thread_a, pr->seq_a, al->at_a, pr->thread_b, pr->seq_b,
               al->at_b, pr->time, al->collided ? "collided" : "missed by ");
    if (al->found && !al->collided)
        printf("%+" PRId64 " ns", (int64_t)(al->at_b + pr->nudge - al->at_a));
    if (al->found)
        printf("\n");
}

static json_t *alignment_json(const optimizer_predicted *pr, const alignment *al)
{
    json_t *x = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "thread_a",
                          (json_int_t)pr->thread_a, "seq_a", (json_int_t)pr->seq_a, "thread_b",
                          (json_int_t)pr->thread_b, "seq_b", (json_int_t)pr->seq_b, "address",
                          (json_int_t)pr->address, "predicted", (json_int_t)pr->time,
                          "uninjected_a", (json_int_t)al->untimed_a, "uninjected_b",
                          (json_int_t)al->untimed_b, "collided", al->found && al->at_a == al->at_b);
    if (pr->nudge) { /* achieved here means: in the planned order, nudge apart */
        json_object_set_new(x, "nudge_ns", json_integer((json_int_t)pr->nudge));
        json_object_set_new(x, "ordered", json_boolean(al->collided));
    }
    if (al->found) {
        json_object_set_new(x, "achieved_a", json_integer((json_int_t)al->at_a));
        json_object_set_new(x, "achieved_b", json_integer((json_int_t)al->at_b));
    } else {
        json_object_set_new(x, "why", json_string(al->why));
    }
    return x;
}

/* One injected run with the current delays. Returns achieved alignments, or
 * -1 on error. */
static int run_injected(inject_ctx *c, int k, inj_verdict *v, json_t **rep_out)
{
    char trace[PATH_MAX + 64], out[PATH_MAX + 64], txt[PATH_MAX + 64], rep[PATH_MAX + 64], err[512];
    path_in(c, trace, sizeof trace, "wtr", k);
    path_in(c, out, sizeof out, "out", k);
    path_in(c, txt, sizeof txt, "txt", k);
    path_in(c, rep, sizeof rep, "json", k);
    if (write_inject_file(txt, &c->plan, c->delay))
        return -1;
    if (inj_run_guest(&c->run, c->plan.cpi, c->plan.ps_per_cycle, trace, out, txt, rep, v))
        return -1;
    inj_index ix;
    if (inj_index_load(trace, &ix, err, sizeof err)) {
        weft_error("%s", err);
        return -1;
    }
    json_error_t jerr;
    json_t *report = json_load_file(rep, 0, &jerr);
    if (!report || !json_is_array(report)) {
        weft_error("%s: the tracer wrote no injection report", rep);
        json_decref(report);
        inj_index_free(&ix);
        return -1;
    }
    char desc[512];
    inj_verdict_describe(v, desc, sizeof desc);
    printf("weft: injected run %d: %s; %zu aligned write pair%s\n", k + 1, desc, ix.aligned,
           ix.aligned == 1 ? "" : "s");
    json_t *jr = json_object(), *ji = injections_json(c, report, &ix), *ja = json_array();
    int achieved = 0;
    for (size_t j = 0; j < c->nal; j++) {
        alignment *al = &c->al[j];
        const optimizer_predicted *pr = &c->plan.injections[al->inj].predicted;
        measure(&c->plan, &ix, al);
        achieved += al->collided;
        print_alignment(j, pr, al);
        json_array_append_new(ja, alignment_json(pr, al));
    }
    json_object_set_new(jr, "verdict", verdict_json(v));
    json_object_set_new(jr, "aligned_pairs", json_integer((json_int_t)ix.aligned));
    json_object_set_new(jr, "injections", ji);
    json_object_set_new(jr, "alignments", ja);
    json_array_append_new(json_object_get(c->json, "runs"), jr);
    inj_index_free(&ix);
    *rep_out = report;
    return achieved;
}

/* Correct each planned delay by the measured miss. Returns how many changed. */
static size_t refine(inject_ctx *c, json_t *report)
{
    size_t changed = 0;
    for (size_t j = 0; j < c->nal; j++) {
        alignment *al = &c->al[j];
        const optimizer_injection *in = &c->plan.injections[al->inj];
        const optimizer_predicted *pr = &in->predicted;
        uint64_t seen;
        const char *why;
        if (!al->found || al->collided || al->stuck ||
            strcmp(inj_state(report, in, &seen, &why), "applied"))
            continue;
        /* The delay moves its own thread's event: a if it is a's thread. */
        int64_t miss = (int64_t)(al->at_b + pr->nudge - al->at_a);
        if (in->thread == pr->thread_b)
            miss = -miss;
        else if (in->thread != pr->thread_a)
            continue;
        if (al->have_last && miss == al->last_miss) {
            /* The last correction moved the other event just as much. */
            printf("  alignment %zu: the changed delay moved both events alike: synchronization "
                   "or thread creation orders them; not refined further\n",
                   j + 1);
            al->stuck = 1;
            continue;
        }
        al->last_miss = miss, al->have_last = 1;
        if (miss < 0 && (uint64_t)-miss > c->delay[al->inj])
            continue; /* would need a negative delay */
        uint64_t nd = c->delay[al->inj] + (uint64_t)miss;
        printf("  refining injection %zu: %" PRIu64 " -> %" PRIu64 " ns\n", al->inj + 1,
               c->delay[al->inj], nd);
        c->delay[al->inj] = nd;
        changed++;
    }
    return changed;
}

static int inject_main(inject_ctx *c)
{
    const replay_inject_opts *o = c->o;
    printf("weft: plan %s: %zu injection%s, %zu planned alignment%s (%s); running %s in exact "
           "mode\n",
           o->plan_path, c->plan.ninjections, c->plan.ninjections == 1 ? "" : "s", c->nal,
           c->nal == 1 ? "" : "s", c->plan.algorithm, c->run.binary);
    fflush(stdout);
    if (run_uninjected(c))
        return -1;
    json_object_set_new(c->json, "runs", json_array());
    inj_verdict v = {0};
    int achieved = 0, k = 0;
    for (;; k++) {
        json_t *report = NULL;
        achieved = run_injected(c, k, &v, &report);
        if (achieved < 0)
            return -1;
        fflush(stdout);
        size_t changed = 0;
        if ((size_t)achieved < c->nal && (uint64_t)k < o->refine)
            changed = refine(c, report);
        json_decref(report);
        if (!changed)
            break;
    }
    json_t *u = json_object_get(c->json, "uninjected");
    char du[512], di[512];
    inj_verdict_describe(&v, di, sizeof di);
    snprintf(du, sizeof du, "%s%s",
             json_is_true(json_object_get(u, "passes")) ? "passes" : "fails: ",
             json_is_true(json_object_get(u, "passes"))
                 ? ""
                 : (json_string_value(json_object_get(u, "bug"))
                        ? json_string_value(json_object_get(u, "bug"))
                        : json_string_value(json_object_get(u, "end"))));
    printf("weft: verdict: uninjected %s; injected %s\n", du, di);
    printf("weft: %d/%zu planned alignment%s achieved in injected run %d (%d refinement%s)\n",
           achieved, c->nal, c->nal == 1 ? "" : "s", k + 1, k, k == 1 ? "" : "s");
    json_object_set_new(c->json, "planned", json_integer((json_int_t)c->nal));
    json_object_set_new(c->json, "achieved", json_integer(achieved));
    json_object_set_new(c->json, "refinements", json_integer(k));
    json_object_set_new(c->json, "injected", verdict_json(&v));
    if (o->keep)
        printf("weft: traces, outputs and reports kept in %s\n", o->keep);
    remove_dir(c, k + 1);
    return (size_t)achieved == c->nal ? 0 : 1;
}

/* The program to run: the one given, else the plan's with its arguments. */
static void choose_program(inject_ctx *c)
{
    const replay_inject_opts *o = c->o;
    if (o->argc > 0) {
        c->run.binary = o->argv[0];
        c->run.argv = o->argv;
        c->run.argc = o->argc;
    } else if (c->plan.argc > 0) {
        c->run.binary = c->plan.program;
        c->run.argv = c->plan.argv;
        c->run.argc = (int)c->plan.argc;
    } else {
        c->run.binary = c->plan.program;
        c->run.argv = &c->plan.program;
        c->run.argc = 1;
    }
    c->run.sysroot = o->sysroot;
    c->run.timeout_s = (unsigned)o->timeout;
    c->run.progress = !o->quiet; /* a run that lasts says so (its output is in files) */
}

/* The program must be the one the plan was made for: same build-id. */
static int check_build_id(const inject_ctx *c)
{
    char err[1024];
    uint8_t id[64];
    int idlen = weft_elf_build_id(c->run.binary, id, sizeof id);
    if (idlen < 0) {
        weft_error("%s: cannot read its build-id", c->run.binary);
        return -1;
    }
    if (optimizer_plan_check_build_id(&c->plan, c->o->plan_path, id, (size_t)idlen, err,
                                      sizeof err) != 0) {
        /* The parser's line names the plan's own program as the holder of
         * the other build-id; name the program given here instead. */
        char hex[2 * sizeof id + 1] = "";
        for (int i = 0; i < idlen; i++)
            snprintf(hex + 2 * i, 3, "%02x", id[i]);
        weft_error("%s: program.build_id: plan is for build-id \"%s\" but %s has \"%s\"",
                   c->o->plan_path, c->plan.build_id ? c->plan.build_id : "", c->run.binary, hex);
        return -1;
    }
    return 0;
}

/* Everything refused before any run: a missing program, an unwritable
 * report (rather than after every run has been made), another build. */
static int check_before_running(inject_ctx *c)
{
    const replay_inject_opts *o = c->o;
    if (guest_check_binary(c->run.binary, &c->run.sysroot))
        return -1;
    if (o->report && weft_check_output(o->report))
        return -1;
    if (check_build_id(c))
        return -1;
    int same_args = (uint32_t)c->run.argc == c->plan.argc;
    for (int i = 0; same_args && i < c->run.argc; i++)
        same_args = !strcmp(c->run.argv[i], c->plan.argv[i]);
    if (!same_args)
        printf("weft: note: program path or arguments differ from the traced run's (the\n"
               "weft: note: startup code reads them): the plan's event numbers may not match\n");
    return 0;
}

/* The delays start as planned; an alignment for each injection that
 * predicts one. */
static int start_delays(inject_ctx *c)
{
    c->al = calloc(c->plan.ninjections + 1, sizeof *c->al);
    c->delay = calloc(c->plan.ninjections + 1, sizeof *c->delay);
    c->json = json_pack("{s:s, s:s}", "plan", c->o->plan_path, "program", c->run.binary);
    if (!c->al || !c->delay || !c->json) {
        weft_error("out of memory");
        return -1;
    }
    for (size_t i = 0; i < c->plan.ninjections; i++) {
        c->delay[i] = c->plan.injections[i].delay_ns;
        if (c->plan.injections[i].has_predicted)
            c->al[c->nal++].inj = i;
    }
    return 0;
}

static int write_report(const inject_ctx *c)
{
    const char *path = c->o->report;
    char *text = json_dumps(c->json, JSON_INDENT(1)), err[512];
    int rc = text ? weft_write_atomic(path, text, strlen(text), err, sizeof err) : -1;
    if (rc)
        weft_error("%s", text ? err : "out of memory");
    free(text);
    return rc;
}

int replay_inject(const replay_inject_opts *o)
{
    inject_ctx c = {.o = o};
    char err[1024];
    if (optimizer_plan_read(o->plan_path, NULL, &c.plan, err, sizeof err) != 0) {
        weft_error("%s", err);
        return WEFT_EXIT_FAIL;
    }
    if (c.plan.ninjections == 0) {
        /* Said before anything runs: there is nothing to compare. */
        weft_error("%s: injections: the plan has none, nothing to inject", o->plan_path);
        optimizer_plan_free(&c.plan);
        return WEFT_EXIT_FAIL;
    }
    int rc = WEFT_EXIT_FAIL;
    choose_program(&c);
    if (check_before_running(&c) || start_delays(&c) || make_dir(&c))
        goto out;
    int r = inject_main(&c);
    if (r < 0) {
        remove_dir(&c, (int)o->refine + 1);
        goto out;
    }
    rc = r ? WEFT_EXIT_FAIL : WEFT_EXIT_OK;
    if (o->report && write_report(&c))
        rc = WEFT_EXIT_FAIL;
out:
    json_decref(c.json);
    free(c.al), free(c.delay);
    optimizer_plan_free(&c.plan);
    return rc;
}
