/* What a failing run's verdict detail says beyond its status: the threads
 * a livelock left spinning (from the plugin's report on the guest's
 * stderr) and what each thread of a deadlock waits for, where, and who
 * holds it (from the run's trace and the plugin's record). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "run_record.h"
#include "weft/replay.h"
#include "weft/trace.h"

static const char *base_name(const char *file)
{
    const char *b = file ? strrchr(file, '/') : NULL;
    return b ? b + 1 : file;
}

/* The plugin's livelock report ("  T1 spins at pc 0x..." lines on the
 * guest's stderr) as one detail line, with each pc's function and line. */
void replay_spinners(const char *errf, const char *binary, uint64_t start_code, char *detail,
                     size_t len)
{
    size_t n = (size_t)snprintf(detail, len, "every thread that could run spun without progress:");
    FILE *f = fopen(errf, "r");
    char err[256], line[256];
    weft_symbols *syms = weft_symbols_open(binary, err, sizeof err);
    weft_symbols_relocate(syms, start_code);
    unsigned t;
    unsigned long long pc, times = 0;
    while (f && fgets(line, sizeof line, f) && n < len) {
        int alone =
            sscanf(line, "  T%u yields at pc 0x%llx alone %llu times", &t, &pc, &times) == 3;
        if (alone || sscanf(line, "  T%u spins at pc 0x%llx", &t, &pc) == 2) {
            const char *fn = NULL, *file = NULL;
            int ln = 0;
            if (syms)
                weft_symbols_pc(syms, pc, &fn, &file, &ln);
            n += (size_t)snprintf(detail + n, len - n, " T%u at %s (%s:%d)", t, fn ? fn : "?",
                                  file ? base_name(file) : "?", ln);
            if (alone && n < len)
                n += (size_t)snprintf(detail + n, len - n,
                                      ", yielding %llu times alone, the other threads waiting in "
                                      "futexes or gone",
                                      times);
        }
    }
    if (f)
        fclose(f);
    if (syms)
        weft_symbols_close(syms);
}

/* The plugin records a futex wait at syscall entry, where QEMU gives it no
 * pc; the wait's place is then told by the thread's last events: the last
 * instruction with a pc (inside the lock function, e.g.
 * __pthread_mutex_lock) and the last one with a source line (the caller's
 * code; a static glibc has no line information). */
#define RECENT_PCS 256

typedef struct thread_tail {
    weft_event last;
    int seen;
    uint64_t pcs[RECENT_PCS]; /* ring of the thread's last distinct non-zero pcs */
    unsigned npcs, head;
} thread_tail;

static void tail_add(thread_tail *t, const weft_event *ev)
{
    t->last = *ev;
    t->seen = 1;
    if (!ev->pc || (t->npcs && t->pcs[(t->head + RECENT_PCS - 1) % RECENT_PCS] == ev->pc))
        return;
    t->pcs[t->head] = ev->pc;
    t->head = (t->head + 1) % RECENT_PCS;
    if (t->npcs < RECENT_PCS)
        t->npcs++;
}

/* The program's last synchronization call of thread i, from the plugin's
 * record (visible points): 0 if none. */
static uint64_t record_call(json_t *rec, uint32_t i, const char **callee)
{
    size_t k;
    json_t *e;
    json_array_foreach(json_object_get(rec, "calls"), k, e)
    {
        if (json_integer_value(json_object_get(e, "thread")) == (json_int_t)i) {
            *callee = json_string_value(json_object_get(e, "call"));
            return (uint64_t)json_integer_value(json_object_get(e, "pc"));
        }
    }
    return 0;
}

/* Where a thread waits, in the words of the program's symbols. */
typedef struct wait_site {
    const char *obj, *fn, *file, *ufn, *ufile;
    const char *api; /* e.g. pthread_mutex_lock */
    const char *lib; /* the shared object of a pc without a symbol */
    int from_call;   /* ufn:uline is the program's call of api */
    int line, uline;
    uint64_t off, pc, upc;
    char name[160]; /* the futex word's object as the program names it, or "" */
} wait_site;

/* Back through the thread's last pcs, newest first: the wait's own place
 * when the wait event has no pc, the call the thread is in, and the last
 * of its own code that has a source line. */
static void walk_back(weft_symbols *syms, const thread_tail *tt, wait_site *ws)
{
    for (unsigned j = 0; j < tt->npcs; j++) {
        uint64_t p = tt->pcs[(tt->head + RECENT_PCS - 1 - j) % RECENT_PCS];
        const char *f = NULL, *fl = NULL;
        int l = 0;
        weft_symbols_pc(syms, p, &f, &fl, &l);
        if (j == 0 && !ws->pc) {
            ws->pc = p;
            ws->fn = f;
            ws->file = fl;
            ws->line = l;
        }
        /* The call the thread is in: the first function going back
         * that is not an atomic helper or the futex lock slow path. */
        if (!ws->api && f && strncmp(f, "__aarch64_", 10) && strncmp(f, "__lll_", 6) &&
            strncmp(f, "__futex", 7) && !strstr(f, "asynccancel"))
            ws->api = f;
        /* The user's own line; a system header's (a template of the C++
         * library instantiated in the program) only if there is none. */
        int system = fl && weft_source_is_system(fl);
        if (fl && l && (!system || !ws->ufn)) {
            ws->ufn = f;
            ws->ufile = fl;
            ws->uline = l;
            ws->upc = p;
            if (!system)
                break;
        }
    }
}

/* Thread i's wait: its futex word's object and the code around the wait;
 * only the pc without symbols. */
static void locate_wait(weft_symbols *syms, json_t *rec, uint32_t i, const thread_tail *tt,
                        wait_site *ws)
{
    *ws = (wait_site){.pc = tt->last.pc};
    if (!syms)
        return;
    weft_symbols_data(syms, tt->last.addr, &ws->obj, &ws->off);
    /* A lock inside a struct or an array: acct[3].mu, not acct+312. The
     * word itself is the C library's (m.__data.__lock): cut there. */
    if (ws->obj && weft_symbols_data_name(syms, tt->last.addr, ws->name, sizeof ws->name) == 0) {
        char *lib = strstr(ws->name, ".__");
        if (lib && lib != ws->name)
            *lib = 0;
    } else {
        ws->name[0] = 0;
    }
    walk_back(syms, tt, ws);
    if (ws->pc == tt->last.pc && ws->pc)
        weft_symbols_pc(syms, ws->pc, &ws->fn, &ws->file, &ws->line);
    ws->lib = weft_symbols_object_of(syms, ws->pc);
    /* The call the program made, where it made it: better than the
     * last own-code access, which may be lines before the call. */
    const char *callee = NULL;
    uint64_t cpc = record_call(rec, i, &callee);
    const char *cf = NULL, *cfl = NULL;
    int cl = 0;
    if (cpc && weft_symbols_pc(syms, cpc, &cf, &cfl, &cl) == 0 && cfl && cl) {
        ws->ufn = cf, ws->ufile = cfl, ws->uline = cl, ws->upc = cpc;
        ws->api = callee;
        ws->from_call = 1;
    }
}

/* The wait as the verdict's detail says it: what (the futex word and its
 * object) and where (the call, and the program's line that led there). */
static void wait_words(const wait_site *ws, const char *futex, char *what, size_t wlen, char *where,
                       size_t welen)
{
    if (ws->name[0])
        snprintf(what, wlen, "%s (%s)", futex, ws->name);
    else if (ws->obj && ws->off)
        snprintf(what, wlen, "%s (%s+%" PRIu64 ")", futex, ws->obj, ws->off);
    else if (ws->obj)
        snprintf(what, wlen, "%s (%s)", futex, ws->obj);
    else
        snprintf(what, wlen, "%s", futex);
    int w = 0;
    /* Not "in pthread_join (__aarch64_cas4_acq)": the outline atomic the
     * library called last says nothing a reader needs. */
    if (ws->api && ws->fn && strcmp(ws->api, ws->fn) && !strncmp(ws->fn, "__aarch64_", 10))
        w = snprintf(where, welen, "in %s", ws->api);
    else if (ws->api && ws->fn && strcmp(ws->api, ws->fn))
        w = snprintf(where, welen, "in %s (%s)", ws->api, ws->fn);
    else if (ws->fn)
        w = snprintf(where, welen, "in %s", ws->fn);
    else if (ws->api && ws->from_call) /* inside a library without symbols, called as api */
        w = snprintf(where, welen, "in %s%s%s%s", ws->api, ws->lib ? " (waiting in " : "",
                     ws->lib ? ws->lib : "", ws->lib ? ")" : "");
    else if (ws->lib)
        w = snprintf(where, welen, "at pc 0x%" PRIx64 " in %s", ws->pc, ws->lib);
    else
        w = snprintf(where, welen, "at pc 0x%" PRIx64, ws->pc);
    if (ws->ufn && ws->from_call)
        snprintf(where + w, welen - (size_t)w, ", called from %s (%s:%d)", ws->ufn,
                 base_name(ws->ufile), ws->uline);
    else if (ws->ufn && ws->upc != ws->pc)
        snprintf(where + w, welen - (size_t)w, ", last own code %s (%s:%d)", ws->ufn,
                 base_name(ws->ufile), ws->uline);
    else if (ws->ufn)
        snprintf(where + w, welen - (size_t)w, " (%s:%d)", base_name(ws->ufile), ws->uline);
}

/* The wait as runs.jsonl's "waits" entry, for tools that read the line. */
static json_t *wait_json(uint32_t i, const wait_site *ws, const char *futex, uint64_t since)
{
    json_t *o = json_object();
    json_object_set_new(o, "thread", json_integer(i));
    json_object_set_new(o, "futex", json_string(futex));
    json_object_set_new(o, "object", ws->obj ? json_string(ws->obj) : json_null());
    json_object_set_new(o, "shown", ws->name[0] ? json_string(ws->name) : json_null());
    json_object_set_new(o, "pc", json_integer((json_int_t)ws->pc));
    json_object_set_new(o, "function", ws->fn ? json_string(ws->fn) : json_null());
    json_object_set_new(o, "call", ws->api ? json_string(ws->api) : json_null());
    json_object_set_new(o, "caller", ws->ufn ? json_string(ws->ufn) : json_null());
    json_object_set_new(o, "file", ws->ufile ? json_string(base_name(ws->ufile)) : json_null());
    json_object_set_new(o, "line", json_integer(ws->uline));
    json_object_set_new(o, "since_ns", json_integer((json_int_t)since));
    return o;
}

/* Each thread's last event and recent pcs, through the whole trace (the
 * wait is the last event). NULL: out of memory. */
static thread_tail *read_tails(weft_trace *t, uint32_t nt)
{
    thread_tail *tails = calloc(nt ? nt : 1, sizeof *tails);
    weft_event ev;
    while (tails && weft_trace_next(t, &ev) == 1)
        if (ev.thread < nt)
            tail_add(&tails[ev.thread], &ev);
    return tails;
}

/* The thread holding the mutex thread i waits for in pthread_mutex_lock
 * (the plugin's record read the mutex's owner), or -1. */
static int64_t mutex_holder(json_t *rec, uint32_t i, const wait_site *ws, int *robust)
{
    if (!ws->api || !strstr(ws->api, "mutex_") || strstr(ws->api, "unlock"))
        return -1;
    json_t *h;
    size_t k;
    json_array_foreach(json_object_get(rec, "holders"), k, h)
    {
        if (json_integer_value(json_object_get(h, "thread")) == (json_int_t)i &&
            json_is_integer(json_object_get(h, "owner"))) {
            *robust = json_is_true(json_object_get(h, "robust"));
            return json_integer_value(json_object_get(h, "owner"));
        }
    }
    return -1;
}

/* The thread whose end thread i's futex wait is for (a join), or -1. */
static int64_t join_target(json_t *rec, uint32_t i)
{
    json_t *h;
    size_t k;
    json_array_foreach(json_object_get(rec, "holders"), k, h)
    {
        if (json_integer_value(json_object_get(h, "thread")) == (json_int_t)i &&
            json_is_integer(json_object_get(h, "joins")))
            return json_integer_value(json_object_get(h, "joins"));
    }
    return -1;
}

/* One waiter's words in a deadlock's detail, and the thread it waits for
 * (-1: none known). */
typedef struct wait_line {
    uint32_t tid;
    int64_t next;
    char text[1200];
} wait_line;

/* The waiters on a wait-for cycle first, then the others, as far as len
 * allows; what does not fit is counted ("and 31 more waiting"). */
static void append_waits(const wait_line *l, size_t nl, uint32_t nt, char *detail, size_t len,
                         size_t n)
{
    int64_t *at = malloc((nt ? nt : 1) * sizeof *at);
    char *cyc = calloc(nl ? nl : 1, 1);
    if (!at || !cyc) {
        free(at);
        free(cyc);
        return;
    }
    for (uint32_t t = 0; t < nt; t++)
        at[t] = -1;
    for (size_t j = 0; j < nl; j++)
        at[l[j].tid] = (int64_t)j;
    for (size_t j = 0; j < nl; j++) {
        int64_t t = l[j].next;
        for (uint32_t hop = 0; hop <= nt && t >= 0 && (uint64_t)t < nt && at[t] >= 0; hop++) {
            if ((size_t)at[t] == j) {
                cyc[j] = 1;
                break;
            }
            t = l[at[t]].next;
        }
    }
    const char *more = "; and %zu more waiting (runs.jsonl's waits lists every one)";
    size_t left = nl;
    for (int pass = 1; pass >= 0; pass--)
        for (size_t j = 0; j < nl; j++) {
            if (cyc[j] != pass)
                continue;
            size_t need = strlen(l[j].text) + 2;
            /* room for this one, and for the count after it unless it is the last */
            if (n + need + (left > 1 ? 64 : 0) >= len) {
                if (n + 64 < len)
                    snprintf(detail + n, len - n, more, left);
                goto done;
            }
            n += (size_t)snprintf(detail + n, len - n, "%s%s", n ? "; " : "", l[j].text);
            left--;
        }
done:
    free(at);
    free(cyc);
}

/* Each live thread of a deadlocked run whose last event is a futex wait:
 * which word, which object, where; one asleep in a read, where. Appends to
 * `waits` and `detail`. */
void replay_describe_waits(const char *trace_path, const char *binary, json_t *rec, json_t *waits,
                           char *detail, size_t len)
{
    char err[512];
    weft_trace *t = weft_trace_open(trace_path, err, sizeof err);
    if (!t)
        return;
    const weft_trace_summary *s = weft_trace_get_summary(t);
    uint32_t nt = s->nthreads;
    thread_tail *tails = read_tails(t, nt);
    weft_symbols *syms = weft_symbols_open_run(binary, weft_trace_get_meta(t), err, sizeof err);
    size_t n = strlen(detail);
    /* Each waiter's words, and whom it waits for (the mutex's holder or the
     * joined thread), so that the threads of a wait-for cycle come first:
     * with dozens of bystanders queued on the cycle's locks the detail is
     * cut at its length, and the cycle was often past the cut. */
    wait_line *lines = calloc(nt ? nt : 1, sizeof *lines);
    size_t nlines = 0;
    for (uint32_t i = 0; tails && lines && i < nt; i++) {
        const thread_tail *tt = &tails[i];
        if (!s->threads[i].exited && tt->seen && tt->last.kind == WEFT_EV_SYSCALL) {
            /* Asleep in a read only the program could end (the platform
             * counted it as waiting): where, by its last own line. */
            wait_site ws;
            memset(&ws, 0, sizeof ws);
            walk_back(syms, tt, &ws);
            uint64_t nr = tt->last.addr;
            const char *call = nr == 63    ? "read"
                               : nr == 65  ? "readv"
                               : nr == 207 ? "recvfrom"
                               : nr == 212 ? "recvmsg"
                                           : "a system call";
            wait_line *l = &lines[nlines++];
            l->tid = i;
            l->next = -1;
            int m = snprintf(l->text, sizeof l->text, "T%u asleep in %s", i, call);
            if (ws.ufn && m > 0 && (size_t)m < sizeof l->text)
                snprintf(l->text + m, sizeof l->text - (size_t)m,
                         ", last in the program at %s (%s:%d)", ws.ufn, base_name(ws.ufile),
                         ws.uline);
            continue;
        }
        if (s->threads[i].exited || !tt->seen || tt->last.kind != WEFT_EV_FUTEX_WAIT)
            continue;
        wait_site ws;
        locate_wait(syms, rec, i, tt, &ws);
        char futex[32], what[300], where[600];
        snprintf(futex, sizeof futex, "0x%" PRIx64, tt->last.addr);
        wait_words(&ws, futex, what, sizeof what, where, sizeof where);
        json_t *wj = wait_json(i, &ws, futex, tt->last.time);
        char held[200] = "";
        int robust = 0;
        int64_t owner = mutex_holder(rec, i, &ws, &robust);
        json_object_set_new(wj, "held_by", owner >= 0 ? json_integer(owner) : json_null());
        json_array_append_new(waits, wj);
        int64_t joins = join_target(rec, i);
        json_object_set_new(wj, "joins", joins >= 0 ? json_integer(joins) : json_null());
        if (owner >= 0 && (uint64_t)owner < nt)
            snprintf(held, sizeof held, ", held by T%" PRId64 "%s%s", owner,
                     owner == (int64_t)i        ? " itself"
                     : s->threads[owner].exited ? ", which exited without unlocking it"
                                                : "",
                     robust && s->threads[owner].exited
                         ? " (a robust mutex: qemu-user keeps no robust list, so no "
                           "EOWNERDEAD)"
                         : "");
        else if (joins >= 0)
            snprintf(held, sizeof held, ", for T%" PRId64 " to exit", joins);
        wait_line *l = &lines[nlines++];
        l->tid = i;
        l->next = owner >= 0 ? owner : joins;
        snprintf(l->text, sizeof l->text, "T%u waits on futex %s %s%s", i, what, where, held);
    }
    append_waits(lines, nlines, nt, detail, len, n);
    free(lines);
    if (syms)
        weft_symbols_close(syms);
    free(tails);
    weft_trace_close(t);
}
