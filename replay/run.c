/* One seed of a replay: run the program under the policy, decide the
 * verdict, and describe the run as one JSON line. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "run_record.h"
#include "weft/replay.h"
#include "weft/trace.h"

/* The first line of `path` starting with `prefix` (newline stripped), or
 * the last non-empty line that is not qemu's or weft's when prefix is NULL. */
static int find_line(const char *path, const char *prefix, int skip_tools, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (prefix ? !strncmp(line, prefix, strlen(prefix))
                   : line[0] != 0 &&
                         (!skip_tools || (strncmp(line, "qemu:", 5) && strncmp(line, "weft", 4)))) {
            snprintf(out, len, "%s", line);
            found = 0;
            if (prefix)
                break;
        }
    }
    fclose(f);
    return found;
}

/* std::terminate's two lines as one: its last ("  what():  std::bad_alloc")
 * alone did not say that an exception nobody caught ended the program. */
static void terminate_words(const char *errf, char *last, size_t len)
{
    char first[1024], what[256];
    if (strncmp(last, "  what():", 9) ||
        find_line(errf, "terminate called", 0, first, sizeof first) != 0)
        return;
    snprintf(what, sizeof what, "%.200s", last + 2);
    snprintf(last, len, "%.300s (%s)", first, what);
}

static const char *base_name(const char *file)
{
    const char *b = file ? strrchr(file, '/') : NULL;
    return b ? b + 1 : file;
}

/* The plugin's livelock report ("  T1 spins at pc 0x..." lines on the
 * guest's stderr) as one detail line, with each pc's function and line. */
static void spinners(const char *errf, const char *binary, uint64_t start_code, char *detail,
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

/* Line (1-based) where two files first differ, 0 if they are equal. */
static long first_difference(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    long line = 1, diff = 0;
    if (!fa || !fb) {
        diff = 1;
    } else {
        for (;;) {
            int x = getc(fa), y = getc(fb);
            if (x != y) {
                diff = line;
                break;
            }
            if (x == EOF)
                break;
            if (x == '\n')
                line++;
        }
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return diff;
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
    if (ws->obj && ws->off)
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
static int64_t mutex_holder(json_t *rec, uint32_t i, const wait_site *ws)
{
    if (!ws->api || !strstr(ws->api, "mutex_") || strstr(ws->api, "unlock"))
        return -1;
    json_t *h;
    size_t k;
    json_array_foreach(json_object_get(rec, "holders"), k, h)
    {
        if (json_integer_value(json_object_get(h, "thread")) == (json_int_t)i)
            return json_integer_value(json_object_get(h, "owner"));
    }
    return -1;
}

/* Each live thread of a deadlocked run whose last event is a futex wait:
 * which word, which object, where. Appends to `waits` and `detail`. */
static void describe_waits(const char *trace_path, const char *binary, json_t *rec, json_t *waits,
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
    for (uint32_t i = 0; tails && i < nt; i++) {
        const thread_tail *tt = &tails[i];
        if (s->threads[i].exited || !tt->seen || tt->last.kind != WEFT_EV_FUTEX_WAIT)
            continue;
        wait_site ws;
        locate_wait(syms, rec, i, tt, &ws);
        char futex[32], what[300], where[600];
        snprintf(futex, sizeof futex, "0x%" PRIx64, tt->last.addr);
        wait_words(&ws, futex, what, sizeof what, where, sizeof where);
        json_t *wj = wait_json(i, &ws, futex, tt->last.time);
        char held[96] = "";
        int64_t owner = mutex_holder(rec, i, &ws);
        json_object_set_new(wj, "held_by", owner >= 0 ? json_integer(owner) : json_null());
        json_array_append_new(waits, wj);
        if (owner >= 0 && (uint64_t)owner < nt)
            snprintf(held, sizeof held, ", held by T%" PRId64 "%s", owner,
                     owner == (int64_t)i        ? " itself"
                     : s->threads[owner].exited ? ", which exited without unlocking it"
                                                : "");
        if (n < len)
            n += (size_t)snprintf(detail + n, len - n, "%sT%u waits on futex %s %s%s",
                                  n ? "; " : "", i, what, where, held);
    }
    if (syms)
        weft_symbols_close(syms);
    free(tails);
    weft_trace_close(t);
}

/* Keep a file of a failing run in out_dir/traces under a seed's name. */
static void keep(const char *from, const replay_config *c, uint64_t seed, const char *ext,
                 char *kept, size_t len)
{
    char dir[PATH_MAX + 16], to[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/traces", c->out_dir);
    snprintf(to, sizeof to, "%s/seed-%" PRIu64 ".%s", dir, seed, ext);
    /* The run's files were not fsynced (sync=0): what stays is, before it
     * takes its name. */
    int fd = open(from, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    if (weft_mkdirs(dir) == 0 && rename(from, to) == 0 && kept)
        snprintf(kept, len, "traces/seed-%" PRIu64 ".%s", seed, ext);
}

/* One qemu for this seed: the guest's stdout and stderr go to files,
 * always the same kind of file, so glibc buffers the same way and the
 * schedule is the same. 0 or -1 as guest_trace_run; -2 after one line. */
static int run_plain(const replay_config *c, uint64_t seed, const replay_run_files *files,
                     guest_result *r, uint32_t *flags)
{
    char args[PATH_MAX * 4];
    /* sync=0: keep() fsyncs the traces that stay. */
    if (replay_plugin_args(c, seed, args, sizeof args) || replay_run_args(c, args, sizeof args)) {
        weft_error("plugin arguments too long");
        return -2;
    }
    size_t al = strlen(args);
    snprintf(args + al, sizeof args - al, ",out=%s,record=%s,switchlog=%s", files->trace,
             files->record, files->switches);
    guest_run run = c->run;
    run.plugin_args = args;
    run.timeout_s = c->timeout;
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int fo = open(files->out, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    int fe = open(files->err, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (saved_out < 0 || saved_err < 0 || fo < 0 || fe < 0) {
        weft_error("%s: %s", files->out, strerror(errno));
        return -2;
    }
    dup2(fo, 1);
    dup2(fe, 2);
    close(fo);
    close(fe);
    int rc = guest_trace_run(&run, files->trace, r, flags);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    return rc;
}

/* A run's files in tmp_dir, named by its seed: concurrent workers share the
 * folder, never a file. */
typedef struct seed_files {
    char trace[PATH_MAX + 64], record[PATH_MAX + 64], switches[PATH_MAX + 64];
    char out[PATH_MAX + 64], err[PATH_MAX + 64];
} seed_files;

static void seed_files_name(seed_files *f, const char *tmp_dir, uint64_t seed)
{
    snprintf(f->trace, sizeof f->trace, "%s/%" PRIu64 ".wtr", tmp_dir, seed);
    snprintf(f->record, sizeof f->record, "%s/%" PRIu64 ".json", tmp_dir, seed);
    snprintf(f->switches, sizeof f->switches, "%s/%" PRIu64 ".switches", tmp_dir, seed);
    snprintf(f->out, sizeof f->out, "%s/%" PRIu64 ".stdout", tmp_dir, seed);
    snprintf(f->err, sizeof f->err, "%s/%" PRIu64 ".stderr", tmp_dir, seed);
}

static void seed_files_remove(const seed_files *f)
{
    unlink(f->trace);
    unlink(f->record);
    replay_record_remove_status(f->record);
    unlink(f->switches);
    unlink(f->out);
    unlink(f->err);
}

/* One seed's run as it goes from the run to its JSON line. */
typedef struct seed_run {
    uint64_t seed;
    seed_files files;
    guest_result r;
    uint32_t flags; /* WEFT_TRACE_DEADLOCK, WEFT_TRACE_LIVELOCK */
    replay_verdict v;
    char detail[2048];
    json_t *waits;  /* a deadlock's, or NULL */
    json_t *record; /* the plugin's record, NULL if it wrote none */
    uint64_t makespan, nthreads;
    char kept[PATH_MAX]; /* the kept trace, relative to out_dir, or "" */
} seed_run;

/* A fork server's child if there is a server (it falls back here when it
 * fails before the run starts), else a qemu of its own. 0, -1 no trace,
 * -2 after one line. */
static int run_once(const replay_config *c, seed_run *sr)
{
    const seed_files *f = &sr->files;
    const replay_run_files files = {f->trace, f->record, f->switches, f->out, f->err};
    int rc = 1;
    if (c->server)
        rc = replay_server_run(c->server, c, sr->seed, &files, &sr->r, &sr->flags);
    if (rc == 1)
        rc = run_plain(c, sr->seed, &files, &sr->r, &sr->flags);
    return rc;
}

/* A run that exited: a BUG line makes it a bug, else a wrong status or a
 * wrong stdout; the tracer's and the signals' verdicts come first. */
static void judge_exit(const replay_config *c, seed_run *sr)
{
    if (sr->r.status != c->expect_exit) {
        char bug[1024];
        if (find_line(sr->files.out, "BUG:", 0, bug, sizeof bug) == 0) {
            sr->v = REPLAY_BUG;
            snprintf(sr->detail, sizeof sr->detail, "%s", bug);
        } else {
            sr->v = REPLAY_EXIT;
            snprintf(sr->detail, sizeof sr->detail, "exit status %d, expected %d", sr->r.status,
                     c->expect_exit);
        }
    } else if (c->expect_output) {
        long l = first_difference(sr->files.out, c->expect_output);
        if (l) {
            sr->v = REPLAY_WRONG_OUTPUT;
            snprintf(sr->detail, sizeof sr->detail, "stdout differs from %s at line %ld",
                     c->expect_output, l);
        }
    }
}

/* The verdict and its detail line. */
static void judge(const replay_config *c, seed_run *sr)
{
    sr->v = REPLAY_PASS;
    if (sr->flags & WEFT_TRACE_DEADLOCK) {
        sr->v = REPLAY_DEADLOCK;
        sr->waits = json_array();
        json_t *rec = json_load_file(sr->files.record, 0, NULL);
        describe_waits(sr->files.trace, c->run.binary, rec, sr->waits, sr->detail,
                       sizeof sr->detail);
        json_decref(rec);
    } else if (sr->flags & WEFT_TRACE_LIVELOCK) {
        sr->v = REPLAY_LIVELOCK;
        json_t *rec = json_load_file(sr->files.record, 0, NULL);
        spinners(sr->files.err, c->run.binary,
                 (uint64_t)json_integer_value(json_object_get(rec, "start_code")), sr->detail,
                 sizeof sr->detail);
        json_decref(rec);
    } else if (sr->r.end == GUEST_TIMED_OUT) {
        sr->v = REPLAY_TIMEOUT;
        snprintf(sr->detail, sizeof sr->detail,
                 "killed after %u s (livelock, or --timeout too short)", c->timeout);
    } else if (sr->r.end == GUEST_SIGNALED) {
        sr->v = sr->r.status == SIGABRT ? REPLAY_ABORT : REPLAY_CRASH;
        /* Where it faulted; else the guest's own last words (an assertion
         * message) if any, and who raised the signal from where. */
        char last[1024] = "", words[512] = "";
        weft_run_end e;
        int have = replay_record_end(sr->files.record, &e) == 0;
        int fault = have && e.fault.kind == WEFT_EV_FAULT &&
                    (sr->r.status == SIGSEGV || sr->r.status == SIGBUS);
        if (have && !fault && e.raised_signal != (uint32_t)sr->r.status)
            have = 0; /* not what the run died of */
        if (have)
            replay_end_words(c->run.binary, &e, words, sizeof words);
        if (fault && words[0])
            snprintf(last, sizeof last, "%s", words);
        else if (find_line(sr->files.err, NULL, 1, last, sizeof last) == 0 && last[0]) {
            terminate_words(sr->files.err, last, sizeof last);
            if (words[0])
                snprintf(last + strlen(last), sizeof last - strlen(last), "; %s", words);
        } else if (!last[0])
            snprintf(last, sizeof last, "%s", words);
        snprintf(sr->detail, sizeof sr->detail, "killed by signal %d (%s)%s%s", sr->r.status,
                 strsignal(sr->r.status), last[0] ? ": " : "", last);
    } else {
        judge_exit(c, sr);
    }
}

/* What the policy did, from the plugin's record and the trace. */
static void read_facts(seed_run *sr)
{
    sr->record = replay_record_load(sr->files.record);
    char err[512];
    weft_trace *t = weft_trace_open(sr->files.trace, err, sizeof err);
    if (t) {
        sr->makespan = weft_trace_get_summary(t)->makespan;
        sr->nthreads = weft_trace_get_summary(t)->nthreads;
        weft_trace_close(t);
    }
}

/* The switch log ends at its first NUL: the plugin appends it through a
 * mapping grown a window at a time, and never cuts the window's zeros. */
static void trim_switch_log(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[65536];
    off_t at = 0;
    ssize_t n;
    while ((n = pread(fd, buf, sizeof buf, at)) > 0) {
        const char *z = memchr(buf, 0, (size_t)n);
        if (z) {
            if (ftruncate(fd, at + (z - buf)) != 0)
                weft_error("%s: %s", path, strerror(errno));
            break;
        }
        at += n;
    }
    close(fd);
}

/* --save-trace: a failing run's (or the --seed run's) files, kept for weft
 * info, --explain and --minimize. */
static void keep_files(const replay_config *c, seed_run *sr)
{
    const seed_files *f = &sr->files;
    keep(f->trace, c, sr->seed, "wtr", sr->kept, sizeof sr->kept);
    keep(f->out, c, sr->seed, "stdout", NULL, 0);
    keep(f->err, c, sr->seed, "stderr", NULL, 0);
    keep(f->record, c, sr->seed, "sched.json", NULL, 0); /* the switches, for --explain */
    /* No record (the guest died of a signal), or one whose ring lost
     * the oldest switches: the whole log, as it went; a dead run's
     * counts too, for --explain's step count. */
    if (!sr->record || replay_record_died(sr->record) ||
        json_integer_value(json_object_get(sr->record, "switches_dropped")) > 0) {
        trim_switch_log(f->switches);
        keep(f->switches, c, sr->seed, "switches.jsonl", NULL, 0);
    }
    if (replay_record_died(sr->record)) {
        char st[PATH_MAX + 80];
        snprintf(st, sizeof st, "%s.status", f->record);
        keep(st, c, sr->seed, "status", NULL, 0);
    }
}

/* The record's counts as they are, null when the plugin wrote no record. */
static void set_from_record(json_t *o, json_t *rec, const char *key)
{
    json_t *v = rec ? json_object_get(rec, key) : NULL;
    json_object_set(o, key, v ? v : json_null());
}

/* The run's runs.jsonl line (docs/replay.md lists its fields). */
static json_t *run_line(const replay_config *c, seed_run *sr)
{
    json_t *o = json_object(), *rec = sr->record;
    json_object_set_new(o, "seed", json_integer((json_int_t)sr->seed));
    json_object_set_new(o, "verdict", json_string(replay_verdict_name(sr->v)));
    json_object_set_new(o, "detail", json_string(sr->detail));
    json_object_set_new(o, "policy", json_string(pct_kind_name(c->kind)));
    json_object_set_new(o, "depth", json_integer((json_int_t)c->depth));
    json_object_set_new(
        o, "radius", c->kind == PCT_KIND_RPRO ? json_integer((json_int_t)c->radius) : json_null());
    json_object_set_new(o, "n", json_integer((json_int_t)c->n));
    json_object_set_new(o, "k", json_integer((json_int_t)c->k));
    json_object_set_new(o, "points", json_string(replay_points_name(c->points)));
    json_object_set_new(o, "exit_status",
                        sr->r.end == GUEST_EXITED ? json_integer(sr->r.status) : json_null());
    json_object_set_new(o, "signal",
                        sr->r.end == GUEST_SIGNALED ? json_integer(sr->r.status) : json_null());
    set_from_record(o, rec, "steps");
    set_from_record(o, rec, "yield_steps");
    set_from_record(o, rec, "change_points");
    set_from_record(o, rec, "overrides");
    json_t *sched = rec ? json_object_get(rec, "schedule") : NULL;
    if (sched) /* pb, db: which schedule of the bounded search, and whether it was new */
        json_object_set(o, "schedule", sched);
    replay_line_add_switches(o, rec);
    json_object_set_new(o, "threads", json_integer((json_int_t)sr->nthreads));
    json_object_set_new(o, "makespan_ns", json_integer((json_int_t)sr->makespan));
    if (sr->waits)
        json_object_set_new(o, "waits", sr->waits);
    sr->waits = NULL;
    json_object_set_new(o, "trace", sr->kept[0] ? json_string(sr->kept) : json_null());
    json_object_set_new(o, "wall_s", json_real(sr->r.wall_s));
    return o;
}

/* The line as one text line: a worker appends it with a single write. 0,
 * or -1 (out of memory). Takes o. */
static int line_text(json_t *o, char **line)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(o);
    if (!s) {
        weft_error("out of memory");
        return -1;
    }
    size_t sl = strlen(s);
    char *l = realloc(s, sl + 2);
    if (!l) {
        free(s);
        return -1;
    }
    l[sl] = '\n';
    l[sl + 1] = 0;
    *line = l;
    return 0;
}

int replay_run_seed(const replay_config *c, uint64_t seed, const char *tmp_dir, char **line,
                    replay_verdict *verdict)
{
    seed_run sr = {.seed = seed};
    seed_files_name(&sr.files, tmp_dir, seed);
    unlink(sr.files.record);
    replay_record_remove_status(sr.files.record);
    int rc = run_once(c, &sr);
    if (rc == -2)
        return -1;
    if (sr.r.end == GUEST_INTERRUPTED) {
        seed_files_remove(&sr.files);
        return 1;
    }
    if (rc != 0) {
        char last[1024] = "";
        find_line(sr.files.err, NULL, 0, last, sizeof last);
        weft_error("seed %" PRIu64 ": the run produced no trace: %s", seed,
                   last[0] ? last : "(no message)");
        return -1;
    }
    /* --steps and --threads skip profiling, which would have said it. */
    if (guest_loader_failed(&c->run, &sr.r, sr.files.err, 0) ||
        guest_too_many_threads(&c->run, sr.files.err, 0)) {
        seed_files_remove(&sr.files);
        return -1;
    }
    judge(c, &sr);
    read_facts(&sr);
    if ((sr.v != REPLAY_PASS || c->seed_given) && c->save_trace)
        keep_files(c, &sr);
    seed_files_remove(&sr.files);
    json_t *o = run_line(c, &sr);
    json_decref(sr.record);
    if (line_text(o, line))
        return -1;
    *verdict = sr.v;
    return 0;
}
