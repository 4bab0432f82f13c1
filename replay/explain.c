/* Why a failing run failed: the thread switches its policy made (from the
 * plugin's switch log), the data races of its trace (weft races) with the
 * last accesses to their variables, and the verdict. weft replay --explain
 * and weft explain print it; weft report draws it on the run's timeline. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/replay.h"

#include "run_record.h"

/* Races shown; a run with more lists the first ones found. */
#define EXPLAIN_MAX_RACES 8

void replay_switch_reason(const replay_switch *w, const replay_switch_log *log, char *buf,
                          size_t len)
{
    const char *y = w->why;
    long long f = (long long)w->from, t = (long long)w->to;
    if (!strcmp(y, "blocked"))
        snprintf(buf, len, "T%lld blocked", f);
    else if (!strcmp(y, "exited"))
        snprintf(buf, len, "T%lld exited", f);
    else if (!strcmp(y, "yield") && w->timed_wait)
        snprintf(buf, len, "T%lld waits with a timeout: the others first, unless delayed", f);
    else if (!strcmp(y, "yield"))
        snprintf(buf, len,
                 w->stay ? "T%lld yielded or spun, and runs again"
                         : "T%lld yielded or spun: demoted",
                 f);
    else if (!strcmp(y, "change_point"))
        snprintf(buf, len, "change point k_%u: T%lld dropped to priority %lld", w->change_point, f,
                 (long long)log->depth - (long long)w->change_point);
    else if (!strcmp(y, "override"))
        snprintf(buf, len, "starvation override: any enabled thread, for one decision");
    else if (!strcmp(y, "priority"))
        snprintf(buf, len, "T%lld has a higher priority (created or woken)", t);
    else if (!strcmp(y, "random"))
        snprintf(buf, len, "random choice");
    else if (!strcmp(y, "pos"))
        snprintf(buf, len, "POS: T%lld's pending event has the highest priority", t);
    else if (!strcmp(y, "time"))
        snprintf(buf, len, "T%lld is earlier in virtual time", t);
    else if (!strcmp(y, "set"))
        snprintf(buf, len, "PPCT's set of allowed threads changed");
    else if (!strcmp(y, "deviation"))
        snprintf(buf, len, "a deviation of the bounded schedule");
    else if (!strcmp(y, "schedule"))
        snprintf(buf, len, "a switch of the schedule file");
    else
        snprintf(buf, len, "the base scheduler (%s)", y);
    size_t used = strlen(buf);
    if (w->timeout && used < len) /* docs/replay.md, "Timeouts" */
        snprintf(buf + used, len - used, "; T%lld's timed wait times out", t);
}

/* ---- loading ----------------------------------------------------------------- */

typedef struct query {
    uint64_t key; /* thread << 40 | seq */
    size_t sw;    /* the switch that asks */
} query;

static int cmp_query(const void *a, const void *b)
{
    uint64_t x = ((const query *)a)->key, y = ((const query *)b)->key;
    return x < y ? -1 : x > y;
}

/* A thread polling the variable (a spin on a counter) repeats one access:
 * it is folded into one line, so that the accesses before the spin, the
 * writes that made it, stay among the last. */
static void keep_access(replay_race_var *r, const weft_event *e)
{
    if (r->nlast > 0) {
        weft_event *l = &r->last[r->nlast - 1];
        if (l->thread == e->thread && l->pc == e->pc && l->kind == e->kind) {
            *l = *e;
            r->repeats[r->nlast - 1]++;
            return;
        }
    }
    if (r->nlast == REPLAY_EXPLAIN_LAST) {
        memmove(r->last, r->last + 1, (REPLAY_EXPLAIN_LAST - 1) * sizeof *r->last);
        memmove(r->repeats, r->repeats + 1, (REPLAY_EXPLAIN_LAST - 1) * sizeof *r->repeats);
        r->nlast--;
    }
    r->repeats[r->nlast] = 0;
    r->last[r->nlast++] = *e;
}

/* One pass: the time of each switch (the next event of the thread it
 * switched to) and the last accesses to each racing variable's byte. */
/* Each thread's last pcs (a ring) and whether its last event was a tgkill,
 * as abort sends SIGABRT to its own thread. */
#define SYS_TGKILL 131
typedef struct thread_end {
    uint64_t pcs[REPLAY_END_PCS], n, time, prog_pc, user_pc;
    int tgkill;
} thread_end;

static thread_end *end_of(thread_end **v, size_t *n, uint32_t thread)
{
    if (thread >= *n) {
        size_t m = thread + 1 > 2 * *n ? thread + 1 : 2 * *n;
        thread_end *w = realloc(*v, m * sizeof *w);
        if (!w)
            return NULL;
        memset(w + *n, 0, (m - *n) * sizeof *w);
        *v = w;
        *n = m;
    }
    return &(*v)[thread];
}

/* The thread whose end killed the run (the fault's, else the last to
 * signal itself), and its last pcs. */
static void find_end(replay_explanation *x, const thread_end *ends, size_t n)
{
    for (size_t t = 0; t < n; t++) {
        const thread_end *e = &ends[t];
        int it = x->fault.have ? t == x->fault.thread
                               : e->tgkill && (!x->end.have || e->time >= x->end.time);
        if (!it)
            continue;
        x->end.have = 1;
        x->end.raised = !x->fault.have;
        x->end.thread = (uint32_t)t;
        x->end.time = e->time;
        uint64_t k = e->n < REPLAY_END_PCS ? e->n : REPLAY_END_PCS;
        for (uint64_t i = 0; i < k; i++)
            x->end.pcs[i] = e->pcs[(e->n - 1 - i) % REPLAY_END_PCS];
        x->end.npcs = (size_t)k;
        x->end.prog_pc = e->prog_pc;
        x->end.user_pc = e->user_pc;
    }
}

static int scan_trace(weft_trace *t, replay_explanation *x, char *err, size_t errlen)
{
    thread_end *ends = NULL;
    size_t nends = 0;
    query *q = calloc(x->log.n ? x->log.n : 1, sizeof *q);
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < x->log.n; i++)
        q[i] = (query){(uint64_t)x->log.v[i].to << 40 | x->log.v[i].to_seq, i};
    qsort(q, x->log.n, sizeof *q, cmp_query);
    weft_trace_rewind(t);
    weft_event e;
    int rc;
    while ((rc = weft_trace_next(t, &e)) == 1) {
        query k = {(uint64_t)e.thread << 40 | e.seq, 0};
        query *h = x->log.n ? bsearch(&k, q, x->log.n, sizeof *q, cmp_query) : NULL;
        while (h && h > q && h[-1].key == k.key)
            h--;
        for (; h && h < q + x->log.n && h->key == k.key; h++) {
            x->log.v[h->sw].time = e.time;
            x->log.v[h->sw].have_time = 1;
        }
        thread_end *te = end_of(&ends, &nends, e.thread);
        if (te) {
            te->tgkill = e.kind == WEFT_EV_SYSCALL && e.addr == SYS_TGKILL;
            te->time = e.time;
            if (e.pc)
                te->pcs[te->n++ % REPLAY_END_PCS] = e.pc;
            /* In the program, with a line (a long copy in the C library
             * can push it out of the ring); lookups are cached by pc. */
            const char *fn, *file = NULL;
            int line = 0;
            if (e.pc && x->syms && !weft_symbols_object_of(x->syms, e.pc) &&
                weft_symbols_pc(x->syms, e.pc, &fn, &file, &line) == 0 && file && line) {
                te->prog_pc = e.pc;
                if (!weft_source_is_system(file))
                    te->user_pc = e.pc;
            }
        }
        if (e.kind == WEFT_EV_FAULT) {
            x->fault.have = 1;
            x->fault.thread = e.thread;
            x->fault.addr = e.addr;
            x->fault.pc = e.pc;
            x->fault.time = e.time;
            x->fault.write = (e.flags & WEFT_EVF_FAULT_WRITE) != 0;
            x->fault.near = (e.flags & WEFT_EVF_FAULT_NEAR) != 0;
        }
        if (!weft_event_is_access(e.kind) || (e.flags & WEFT_EVF_STACK))
            continue;
        for (size_t r = 0; r < x->nraces; r++) {
            uint64_t a = x->races[r].race.addr;
            if (e.addr <= a && a < e.addr + (e.size ? e.size : 1))
                keep_access(&x->races[r], &e);
        }
    }
    free(q);
    find_end(x, ends, nends);
    free(ends);
    if (rc < 0)
        snprintf(err, errlen, "%s", weft_trace_error(t));
    return rc < 0 ? -1 : 0;
}

/* The races of the trace (both passes of weft races), the first few kept. */
static int find_races(weft_trace *t, replay_explanation *x, char *err, size_t errlen)
{
    weft_races_config cfg = weft_races_config_default();
    if (access(x->binary, R_OK) == 0)
        cfg.binary = x->binary;
    cfg.start_code = weft_trace_get_meta(t)->start_code;
    cfg.objects = weft_trace_get_meta(t)->objects;
    cfg.nobjects = weft_trace_get_meta(t)->nobjects;
    weft_races_config_library(&cfg, x->syms);
    weft_races *d = weft_races_create(&cfg, err, errlen);
    if (!d)
        return -1;
    x->decoded = cfg.binary != NULL;
    if (weft_races_analyze(d, t, err, errlen) ||
        weft_races_find_callers(d, t, x->syms, err, errlen)) {
        weft_races_free(d);
        return -1;
    }
    size_t n = weft_races_count(d);
    x->nraces_total = n;
    x->nraces = n < EXPLAIN_MAX_RACES ? n : EXPLAIN_MAX_RACES;
    x->races = calloc(x->nraces ? x->nraces : 1, sizeof *x->races);
    if (!x->races) {
        weft_races_free(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < x->nraces; i++) {
        x->races[i].race = *weft_races_get(d, i);
        weft_symbols_data_name(x->syms, x->races[i].race.addr, x->races[i].variable,
                               sizeof x->races[i].variable);
    }
    weft_races_free(d);
    return 0;
}

int replay_explanation_load(const char *dir, uint64_t seed, replay_explanation *x, char *err,
                            size_t errlen)
{
    memset(x, 0, sizeof *x);
    x->seed = seed;
    if (replay_seed_outcome(dir, seed, x->verdict, sizeof x->verdict, x->detail, sizeof x->detail))
        snprintf(x->verdict, sizeof x->verdict, "?");
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: %s", dir,
                 stat(dir, &st) != 0 ? strerror(errno) : "not a folder");
        return -1;
    }
    snprintf(x->trace_path, sizeof x->trace_path, "%s/traces/seed-%" PRIu64 ".wtr", dir, seed);
    if (replay_switch_log_load_kept(dir, seed, &x->log, err, errlen))
        return -1;
    if (access(x->trace_path, R_OK) != 0) {
        snprintf(err, errlen, "%s: %s", x->trace_path, strerror(errno));
        replay_explanation_free(x);
        return -1;
    }
    weft_trace *t = weft_trace_open(x->trace_path, err, errlen);
    if (!t) {
        replay_explanation_free(x);
        return -1;
    }
    const weft_trace_meta *meta = weft_trace_get_meta(t);
    if (meta->binary_path && !realpath(meta->binary_path, x->binary))
        x->binary[0] = 0;
    char serr[256];
    x->syms = x->binary[0] ? weft_symbols_open_run(x->binary, meta, serr, sizeof serr) : NULL;
    int rc = find_races(t, x, err, errlen);
    if (rc == 0)
        rc = scan_trace(t, x, err, errlen);
    weft_trace_close(t);
    if (rc)
        replay_explanation_free(x);
    return rc;
}

void replay_explanation_free(replay_explanation *x)
{
    replay_switch_log_free(&x->log);
    weft_symbols_close(x->syms);
    x->syms = NULL;
    free(x->races);
    x->races = NULL;
    x->nraces = 0;
}

/* ---- printing ---------------------------------------------------------------- */

static void place(weft_symbols *syms, int64_t thread, uint64_t pc, char *buf, size_t len);

/* "T1 at worker (lost_update.c:20)"; without a pc, what is known (seq:
 * events it had recorded; exited: it had). */
static void place_of(weft_symbols *syms, int64_t thread, uint64_t pc, uint64_t seq, int exited,
                     char *buf, size_t len)
{
    if (!pc && exited) {
        snprintf(buf, len, "T%lld (exited)", (long long)thread);
        return;
    }
    if (!pc && seq <= 1) {
        snprintf(buf, len, "T%lld (about to start)", (long long)thread);
        return;
    }
    place(syms, thread, pc, buf, len);
}

/* "T1 at worker (lost_update.c:20)" */
static void place(weft_symbols *syms, int64_t thread, uint64_t pc, char *buf, size_t len)
{
    const char *fn = NULL, *file = NULL;
    int line = 0;
    if (pc && syms && weft_symbols_pc(syms, pc, &fn, &file, &line) == 0 && fn) {
        const char *base = file && strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
        if (base && line > 0)
            snprintf(buf, len, "T%lld at %s (%s:%d)", (long long)thread, fn, base, line);
        else
            snprintf(buf, len, "T%lld in %s", (long long)thread, fn);
    } else if (pc && weft_symbols_object_of(syms, pc)) {
        snprintf(buf, len, "T%lld at pc 0x%" PRIx64 " in %s", (long long)thread, pc,
                 weft_symbols_object_of(syms, pc));
    } else if (pc) {
        snprintf(buf, len, "T%lld at pc 0x%" PRIx64, (long long)thread, pc);
    } else {
        snprintf(buf, len, "T%lld (place unknown)", (long long)thread);
    }
}

static void print_switch(const replay_explanation *x, const replay_switch *w, weft_symbols *syms,
                         FILE *out)
{
    char why[256], from[256], to[256];
    replay_switch_reason(w, &x->log, why, sizeof why);
    place_of(syms, w->from, w->from_pc, w->from_seq, !strcmp(w->why, "exited"), from, sizeof from);
    place_of(syms, w->to, w->to_pc, w->to_seq, 0, to, sizeof to);
    fprintf(out, "  step %5" PRIu64 "  T%lld -> T%lld  %-8s %s\n", w->step, (long long)w->from,
            (long long)w->to,
            w->stay      ? "(stays)"
            : w->preempt ? "preempt"
                         : "forced",
            why);
    fprintf(out, "              %s; %s", from, to);
    if (w->have_time)
        fprintf(out, ", from %" PRIu64 " ns", w->time);
    fprintf(out, "; enabled:");
    for (size_t i = 0; i < w->nenabled && i < REPLAY_SWITCH_ENABLED; i++)
        fprintf(out, " T%lld", (long long)w->enabled[i]);
    if (w->nenabled > REPLAY_SWITCH_ENABLED)
        fprintf(out, " (+%zu)", w->nenabled - REPLAY_SWITCH_ENABLED);
    fprintf(out, "\n");
}

/* Switches shown: all of a short log; of a long one the first few and the
 * last ones, which lead to the failure. */
#define SHOW_ALL 60
#define SHOW_HEAD 5
#define SHOW_TAIL 45

static void print_switches(const replay_explanation *x, weft_symbols *syms, FILE *out)
{
    const replay_switch_log *l = &x->log;
    fprintf(out, "schedule: %s", l->policy);
    if (!strcmp(l->policy, "pct") || !strcmp(l->policy, "ppct") || !strcmp(l->policy, "rpro"))
        fprintf(out, ", depth %" PRIu64, l->depth);
    fprintf(out, ", seed %" PRIu64 ": %" PRIu64 " steps, change points [", l->seed, l->steps);
    for (size_t i = 0; i < l->nchange_points; i++)
        fprintf(out, "%s%" PRIu64, i ? ", " : "", l->change_points[i]);
    if (l->partial && l->counted)
        fprintf(out,
                "], %" PRIu64 " starvation overrides; %" PRIu64 " switches, %" PRIu64
                " of them preemptions (the run died before the plugin wrote its record: the log "
                "it appended as it went, the counts its policy kept)\n",
                l->overrides, l->switches, l->preemptions);
    else if (l->partial)
        fprintf(out,
                "]; %" PRIu64 " switches, %" PRIu64 " of them preemptions (the run died before "
                "the plugin wrote its record: the log it appended as it went, steps up to the "
                "last switch)\n",
                l->switches, l->preemptions);
    else
        fprintf(out,
                "], %" PRIu64 " starvation overrides; %" PRIu64 " switches, %" PRIu64
                " of them preemptions\n",
                l->overrides, l->switches, l->preemptions);
    if (l->dropped)
        fprintf(out, "  (the log keeps the last %zu; %" PRIu64 " earlier ones are not shown)\n",
                l->n, l->dropped);
    fprintf(out, "switches: the step, who ran and who runs next, whether the first could have "
                 "gone on (preempt) or not (forced), why; where each thread was, when the next "
                 "ran, who was enabled\n");
    for (size_t i = 0; i < l->n; i++) {
        if (l->n > SHOW_ALL && i == SHOW_HEAD)
            fprintf(out, "  ... %zu more ...\n", l->n - SHOW_HEAD - SHOW_TAIL);
        if (l->n > SHOW_ALL && i >= SHOW_HEAD && i < l->n - SHOW_TAIL)
            continue;
        print_switch(x, &l->v[i], syms, out);
    }
}

static void print_access(const weft_event *e, uint64_t repeats, weft_symbols *syms, FILE *out)
{
    char where[256];
    place(syms, e->thread, e->pc, where, sizeof where);
    fprintf(out, "    %-5s %s, %" PRIu64 " ns (seq %" PRIu64 ")", weft_event_kind_name(e->kind),
            where, e->time, e->seq);
    if (repeats)
        fprintf(out, ", the last of %" PRIu64 " in a row", repeats + 1);
    fputc('\n', out);
}

/* A racing access's place; in the library, where the program last was
 * before it: "T0 in _int_free, last in the program at main (jw.c:41)". */
static void side_place(weft_symbols *syms, const weft_race_access *a, char *buf, size_t len)
{
    place(syms, a->thread, a->pc, buf, len);
    const char *fn = NULL, *file = NULL;
    int line = 0;
    size_t used = strlen(buf);
    if (a->from_pc && weft_symbols_pc(syms, a->from_pc, &fn, &file, &line) == 0 && fn && file &&
        line > 0) {
        const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
        snprintf(buf + used, len - used, ", last in the program at %s (%s:%d)", fn, base, line);
    }
}

/* One race's line after its number: two races on pcs of the same lines
 * (the two stores of one line's if/else) read the same and are shown once. */
static void race_text(const replay_race_var *r, uint64_t count, weft_symbols *syms, char *buf,
                      size_t len)
{
    char a[600], b[600];
    side_place(syms, &r->race.first, a, sizeof a);
    side_place(syms, &r->race.second, b, sizeof b);
    char addr[32] = ""; /* an unnamed variable is its address already */
    if (strncmp(r->variable, "0x", 2))
        snprintf(addr, sizeof addr, " (0x%" PRIx64 ")", r->race.addr);
    snprintf(buf, len, "on %s%s, %" PRIu64 " instance%s: %s %s / %s %s", r->variable, addr, count,
             count == 1 ? "" : "s", weft_event_kind_name(r->race.first.kind), a,
             weft_event_kind_name(r->race.second.kind), b);
}

static void print_races(const replay_explanation *x, weft_symbols *syms, FILE *out)
{
    fprintf(out, "races in this run (weft races %s): %zu%s\n", x->trace_path, x->nraces_total,
            x->decoded ? ""
                       : " (the program was not readable: every atomic counted as acquire "
                         "and release)");
    char text[1600], other[1600];
    size_t shown = 0;
    for (size_t i = 0; i < x->nraces; i++) {
        const replay_race_var *r = &x->races[i];
        race_text(r, 0, syms, text, sizeof text);
        uint64_t count = 0;
        int again = 0;
        for (size_t j = 0; j < x->nraces; j++) {
            race_text(&x->races[j], 0, syms, other, sizeof other);
            if (strcmp(other, text))
                continue;
            again |= j < i;
            count += x->races[j].race.count;
        }
        if (again)
            continue;
        race_text(r, count, syms, text, sizeof text);
        fprintf(out, "  race %zu %s\n", ++shown, text);
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= x->races[j].race.addr == r->race.addr;
        if (seen)
            continue;
        fprintf(out, "  last accesses to %s:\n", r->variable);
        for (size_t j = 0; j < r->nlast; j++)
            print_access(&r->last[j], r->repeats[j], syms, out);
    }
    if (x->nraces_total > x->nraces)
        fprintf(out, "  ... %zu more (weft races %s)\n", x->nraces_total - x->nraces,
                x->trace_path);
}

/* The first of pcs[0..n) (newest first; 0 ends them) on a line of the
 * user's own source, or 0; *system gets the first on a system header's
 * line (a template of the C++ library instantiated in the program), or 0. */
static uint64_t first_user_pc(weft_symbols *syms, const uint64_t *pcs, size_t n, uint64_t *system)
{
    *system = 0;
    for (size_t i = 0; syms && i < n && pcs[i]; i++) {
        const char *fn = NULL, *file = NULL;
        int line = 0;
        if (weft_symbols_pc(syms, pcs[i], &fn, &file, &line) != 0 || !file || !line)
            continue;
        if (!weft_source_is_system(file))
            return pcs[i];
        if (!*system)
            *system = pcs[i];
    }
    return 0;
}

/* Where the dying thread's own code last was: the newest of its last pcs
 * with a line of the user's, else the last such pc before them, else the
 * same with a system header's line; 0 if none has a line. */
static uint64_t last_own_code(const replay_explanation *x, weft_symbols *syms)
{
    uint64_t system, user = first_user_pc(syms, x->end.pcs, x->end.npcs, &system);
    return user ? user : x->end.user_pc ? x->end.user_pc : system ? system : x->end.prog_pc;
}

/* "T0 at main (segv.c:5), writing 0x0" */
static void fault_words(weft_symbols *syms, uint32_t thread, uint64_t pc, uint64_t addr, int near,
                        int write, char *buf, size_t len)
{
    char where[256], what[128];
    place(syms, thread, pc, where, sizeof where);
    weft_symbols_data_name(syms, addr, what, sizeof what);
    snprintf(buf, len, "%s%s, %s %s", where,
             near ? " (or an access just after it in its block)" : "",
             write ? "writing" : "reading", what);
}

/* A fault the tracer could not place (a library's block counted inline)
 * comes as the thread's own signal. */
static const char *raised_how(const weft_run_end *e)
{
    return e->raised_signal == SIGSEGV || e->raised_signal == SIGBUS ? "faulted in library code"
                                                                     : "raised it";
}

void replay_end_words(const char *binary, const weft_run_end *e, char *buf, size_t len)
{
    weft_trace_meta meta = {.start_code = e->start_code};
    char err[256], where[256];
    weft_symbols *syms = weft_symbols_open_run(binary, &meta, err, sizeof err);
    const weft_event *f = &e->fault;
    if (f->kind == WEFT_EV_FAULT)
        fault_words(syms, f->thread, f->pc, f->addr, (f->flags & WEFT_EVF_FAULT_NEAR) != 0,
                    (f->flags & WEFT_EVF_FAULT_WRITE) != 0, buf, len);
    else if (e->raised_signal && e->raised_own_pcs[0]) {
        uint64_t system, pc = first_user_pc(syms, e->raised_own_pcs, WEFT_RUN_END_PCS, &system);
        place(syms, e->raised_thread, pc ? pc : e->raised_own_pcs[0], where, sizeof where);
        snprintf(buf, len, "T%u %s, last in the program %s", e->raised_thread, raised_how(e),
                 where + strcspn(where, " ") + 1);
    } else if (e->raised_signal)
        snprintf(buf, len, "T%u %s", e->raised_thread, raised_how(e));
    else if (len)
        buf[0] = 0;
    weft_symbols_close(syms);
}

/* "fault: T0 at main (segv.c:5), writing 0x0, ..." or "raised: T1 sent
 * itself a signal ..."; then where its own code last was, if that is
 * elsewhere (the fault or the abort inside the C library). */
static void print_end(const replay_explanation *x, weft_symbols *syms, FILE *out)
{
    char where[256];
    if (x->fault.have) {
        char words[512];
        fault_words(syms, x->fault.thread, x->fault.pc, x->fault.addr, x->fault.near,
                    x->fault.write, words, sizeof words);
        fprintf(out, "fault: %s, %" PRIu64 " ns\n", words, x->fault.time);
    } else if (x->end.raised) {
        fprintf(out,
                "raised: T%u sent itself a signal (abort: an assertion, the C library's "
                "checks), %" PRIu64 " ns\n",
                x->end.thread, x->end.time);
    }
    uint64_t own = x->end.have ? last_own_code(x, syms) : 0;
    if (own && !(x->fault.have && own == x->fault.pc)) {
        place(syms, x->end.thread, own, where, sizeof where);
        fprintf(out, "  its last code in the program: %s\n", where + strcspn(where, " ") + 1);
    }
}

void replay_explanation_print_end(const replay_explanation *x, FILE *out)
{
    print_end(x, x->syms, out);
}

void replay_explanation_print(const replay_explanation *x, FILE *out, int header)
{
    weft_symbols *syms = x->syms;
    if (header)
        fprintf(out, "seed %" PRIu64 ": %s%s%s\n", x->seed, x->verdict, x->detail[0] ? ": " : "",
                x->detail);
    print_switches(x, syms, out);
    print_races(x, syms, out);
    print_end(x, syms, out); /* what killed it, and where */
    fprintf(out, "verdict: %s%s%s\n", x->verdict, x->detail[0] ? ": " : "", x->detail);
}
