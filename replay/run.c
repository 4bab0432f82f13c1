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

static const char *base_name(const char *file)
{
    const char *b = file ? strrchr(file, '/') : NULL;
    return b ? b + 1 : file;
}

/* The plugin's livelock report ("  T1 spins at pc 0x..." lines on the
 * guest's stderr) as one detail line, with each pc's function and line. */
static void spinners(const char *errf, const char *binary, char *detail, size_t len)
{
    size_t n = (size_t)snprintf(detail, len, "every thread that could run spun without progress:");
    FILE *f = fopen(errf, "r");
    char err[256], line[256];
    weft_symbols *syms = weft_symbols_open(binary, err, sizeof err);
    unsigned t;
    unsigned long long pc;
    while (f && fgets(line, sizeof line, f) && n < len)
        if (sscanf(line, "  T%u spins at pc 0x%llx", &t, &pc) == 2) {
            const char *fn = NULL, *file = NULL;
            int ln = 0;
            if (syms)
                weft_symbols_pc(syms, pc, &fn, &file, &ln);
            n += (size_t)snprintf(detail + n, len - n, " T%u at %s (%s:%d)", t, fn ? fn : "?",
                                  file ? base_name(file) : "?", ln);
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

/* Each live thread of a deadlocked run whose last event is a futex wait:
 * which word, which object, where. Appends to `waits` and `detail`. */
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

static void describe_waits(const char *trace_path, const char *binary, json_t *rec, json_t *waits,
                           char *detail, size_t len)
{
    char err[512];
    weft_trace *t = weft_trace_open(trace_path, err, sizeof err);
    if (!t)
        return;
    const weft_trace_summary *s = weft_trace_get_summary(t);
    uint32_t nt = s->nthreads;
    thread_tail *tails = calloc(nt ? nt : 1, sizeof *tails);
    weft_event ev;
    while (tails && weft_trace_next(t, &ev) == 1)
        if (ev.thread < nt)
            tail_add(&tails[ev.thread], &ev);
    weft_symbols *syms = weft_symbols_open(binary, err, sizeof err);
    size_t n = strlen(detail);
    for (uint32_t i = 0; tails && i < nt; i++) {
        const thread_tail *tt = &tails[i];
        if (s->threads[i].exited || !tt->seen || tt->last.kind != WEFT_EV_FUTEX_WAIT)
            continue;
        const char *obj = NULL, *fn = NULL, *file = NULL, *ufn = NULL, *ufile = NULL;
        const char *api = NULL; /* e.g. pthread_mutex_lock */
        int from_call = 0;      /* ufn:uline is the program's call of api */
        int line = 0, uline = 0;
        uint64_t off = 0, pc = tt->last.pc, upc = 0;
        if (syms) {
            weft_symbols_data(syms, tt->last.addr, &obj, &off);
            for (unsigned j = 0; j < tt->npcs; j++) {
                uint64_t p = tt->pcs[(tt->head + RECENT_PCS - 1 - j) % RECENT_PCS];
                const char *f = NULL, *fl = NULL;
                int l = 0;
                weft_symbols_pc(syms, p, &f, &fl, &l);
                if (j == 0 && !pc) {
                    pc = p;
                    fn = f;
                    file = fl;
                    line = l;
                }
                /* The call the thread is in: the first function going back
                 * that is not an atomic helper or the futex lock slow path. */
                if (!api && f && strncmp(f, "__aarch64_", 10) && strncmp(f, "__lll_", 6) &&
                    strncmp(f, "__futex", 7) && !strstr(f, "asynccancel"))
                    api = f;
                if (fl && l) {
                    ufn = f;
                    ufile = fl;
                    uline = l;
                    upc = p;
                    break;
                }
            }
            if (pc == tt->last.pc && pc)
                weft_symbols_pc(syms, pc, &fn, &file, &line);
            /* The call the program made, where it made it: better than the
             * last own-code access, which may be lines before the call. */
            const char *callee = NULL;
            uint64_t cpc = record_call(rec, i, &callee);
            const char *cf = NULL, *cfl = NULL;
            int cl = 0;
            if (cpc && weft_symbols_pc(syms, cpc, &cf, &cfl, &cl) == 0 && cfl && cl) {
                ufn = cf, ufile = cfl, uline = cl, upc = cpc;
                api = callee;
                from_call = 1;
            }
        }
        char futex[32], what[300], where[600];
        snprintf(futex, sizeof futex, "0x%" PRIx64, tt->last.addr);
        if (obj && off)
            snprintf(what, sizeof what, "%s (%s+%" PRIu64 ")", futex, obj, off);
        else if (obj)
            snprintf(what, sizeof what, "%s (%s)", futex, obj);
        else
            snprintf(what, sizeof what, "%s", futex);
        int w = 0;
        if (api && fn && strcmp(api, fn))
            w = snprintf(where, sizeof where, "in %s (%s)", api, fn);
        else if (fn)
            w = snprintf(where, sizeof where, "in %s", fn);
        else
            w = snprintf(where, sizeof where, "at pc 0x%" PRIx64, pc);
        if (ufn && from_call)
            snprintf(where + w, sizeof where - (size_t)w, ", called from %s (%s:%d)", ufn,
                     base_name(ufile), uline);
        else if (ufn && upc != pc)
            snprintf(where + w, sizeof where - (size_t)w, ", last own code %s (%s:%d)", ufn,
                     base_name(ufile), uline);
        else if (ufn)
            snprintf(where + w, sizeof where - (size_t)w, " (%s:%d)", base_name(ufile), uline);
        json_t *o = json_object();
        json_object_set_new(o, "thread", json_integer(i));
        json_object_set_new(o, "futex", json_string(futex));
        json_object_set_new(o, "object", obj ? json_string(obj) : json_null());
        json_object_set_new(o, "pc", json_integer((json_int_t)pc));
        json_object_set_new(o, "function", fn ? json_string(fn) : json_null());
        json_object_set_new(o, "call", api ? json_string(api) : json_null());
        json_object_set_new(o, "caller", ufn ? json_string(ufn) : json_null());
        json_object_set_new(o, "file", ufile ? json_string(base_name(ufile)) : json_null());
        json_object_set_new(o, "line", json_integer(uline));
        json_object_set_new(o, "since_ns", json_integer((json_int_t)tt->last.time));
        json_array_append_new(waits, o);
        if (n < len)
            n += (size_t)snprintf(detail + n, len - n, "%sT%u waits on futex %s %s", n ? "; " : "",
                                  i, what, where);
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
    if (replay_plugin_args(c, seed, args, sizeof args)) {
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

int replay_run_seed(const replay_config *c, uint64_t seed, const char *tmp_dir, char **line,
                    replay_verdict *verdict)
{
    char trace[PATH_MAX + 64], record[PATH_MAX + 64], out[PATH_MAX + 64], errf[PATH_MAX + 64];
    char switches[PATH_MAX + 64];
    snprintf(trace, sizeof trace, "%s/%" PRIu64 ".wtr", tmp_dir, seed);
    snprintf(record, sizeof record, "%s/%" PRIu64 ".json", tmp_dir, seed);
    snprintf(switches, sizeof switches, "%s/%" PRIu64 ".switches", tmp_dir, seed);
    snprintf(out, sizeof out, "%s/%" PRIu64 ".stdout", tmp_dir, seed);
    snprintf(errf, sizeof errf, "%s/%" PRIu64 ".stderr", tmp_dir, seed);
    unlink(record);
    guest_result r = {0};
    uint32_t flags = 0;
    /* A fork server's child if there is a server (it falls back here when
     * it fails before the run starts), else a qemu of its own. */
    const replay_run_files files = {trace, record, switches, out, errf};
    int rc = 1;
    if (c->server)
        rc = replay_server_run(c->server, c, seed, &files, &r, &flags);
    if (rc == 1)
        rc = run_plain(c, seed, &files, &r, &flags);
    if (rc == -2)
        return -1;
    if (r.end == GUEST_INTERRUPTED) {
        unlink(trace);
        unlink(record);
        unlink(switches);
        unlink(out);
        unlink(errf);
        return 1;
    }
    if (rc != 0) {
        char last[1024] = "";
        find_line(errf, NULL, 0, last, sizeof last);
        weft_error("seed %" PRIu64 ": the run produced no trace: %s", seed,
                   last[0] ? last : "(no message)");
        return -1;
    }

    char detail[2048] = "";
    replay_verdict v = REPLAY_PASS;
    json_t *waits = NULL;
    if (flags & WEFT_TRACE_DEADLOCK) {
        v = REPLAY_DEADLOCK;
        waits = json_array();
        json_t *rec = json_load_file(record, 0, NULL);
        describe_waits(trace, c->run.binary, rec, waits, detail, sizeof detail);
        json_decref(rec);
    } else if (flags & WEFT_TRACE_LIVELOCK) {
        v = REPLAY_LIVELOCK;
        spinners(errf, c->run.binary, detail, sizeof detail);
    } else if (r.end == GUEST_TIMED_OUT) {
        v = REPLAY_TIMEOUT;
        snprintf(detail, sizeof detail, "killed after %u s (livelock, or --timeout too short)",
                 c->timeout);
    } else if (r.end == GUEST_SIGNALED) {
        v = r.status == SIGABRT ? REPLAY_ABORT : REPLAY_CRASH;
        /* The guest's own last words (an assertion message) if any. */
        char last[1024] = "";
        find_line(errf, NULL, 1, last, sizeof last);
        snprintf(detail, sizeof detail, "killed by signal %d (%s)%s%s", r.status,
                 strsignal(r.status), last[0] ? ": " : "", last);
    } else if (r.status != c->expect_exit) {
        char bug[1024];
        if (find_line(out, "BUG:", 0, bug, sizeof bug) == 0) {
            v = REPLAY_BUG;
            snprintf(detail, sizeof detail, "%s", bug);
        } else {
            v = REPLAY_EXIT;
            snprintf(detail, sizeof detail, "exit status %d, expected %d", r.status,
                     c->expect_exit);
        }
    } else if (c->expect_output) {
        long l = first_difference(out, c->expect_output);
        if (l) {
            v = REPLAY_WRONG_OUTPUT;
            snprintf(detail, sizeof detail, "stdout differs from %s at line %ld", c->expect_output,
                     l);
        }
    }

    /* What the policy did, from the plugin's record and the trace. */
    json_t *rec = json_load_file(record, 0, NULL);
    uint64_t makespan = 0, nthreads = 0;
    char err[512];
    weft_trace *t = weft_trace_open(trace, err, sizeof err);
    if (t) {
        makespan = weft_trace_get_summary(t)->makespan;
        nthreads = weft_trace_get_summary(t)->nthreads;
        weft_trace_close(t);
    }
    char kept[PATH_MAX] = "";
    if ((v != REPLAY_PASS || c->seed_given) && c->save_trace) {
        keep(trace, c, seed, "wtr", kept, sizeof kept);
        keep(out, c, seed, "stdout", NULL, 0);
        keep(errf, c, seed, "stderr", NULL, 0);
        keep(record, c, seed, "sched.json", NULL, 0); /* the switches, for --explain */
        /* No record (the guest died of a signal), or one whose ring lost
         * the oldest switches: the whole log, as it went. */
        if (!rec || json_integer_value(json_object_get(rec, "switches_dropped")) > 0)
            keep(switches, c, seed, "switches.jsonl", NULL, 0);
    }
    unlink(trace);
    unlink(record);
    unlink(switches);
    unlink(out);
    unlink(errf);

    json_t *o = json_object();
    json_object_set_new(o, "seed", json_integer((json_int_t)seed));
    json_object_set_new(o, "verdict", json_string(replay_verdict_name(v)));
    json_object_set_new(o, "detail", json_string(detail));
    json_object_set_new(o, "policy", json_string(pct_kind_name(c->kind)));
    json_object_set_new(o, "depth", json_integer((json_int_t)c->depth));
    json_object_set_new(
        o, "radius", c->kind == PCT_KIND_RPRO ? json_integer((json_int_t)c->radius) : json_null());
    json_object_set_new(o, "n", json_integer((json_int_t)c->n));
    json_object_set_new(o, "k", json_integer((json_int_t)c->k));
    json_object_set_new(o, "points", json_string(replay_points_name(c->points)));
    json_object_set_new(o, "exit_status",
                        r.end == GUEST_EXITED ? json_integer(r.status) : json_null());
    json_object_set_new(o, "signal",
                        r.end == GUEST_SIGNALED ? json_integer(r.status) : json_null());
    json_t *steps = rec ? json_object_get(rec, "steps") : NULL;
    json_t *cps = rec ? json_object_get(rec, "change_points") : NULL;
    json_t *ovr = rec ? json_object_get(rec, "overrides") : NULL;
    json_object_set(o, "steps", steps ? steps : json_null());
    json_object_set(o, "change_points", cps ? cps : json_null());
    json_object_set(o, "overrides", ovr ? ovr : json_null());
    json_t *sched = rec ? json_object_get(rec, "schedule") : NULL;
    if (sched) /* pb, db: which schedule of the bounded search, and whether it was new */
        json_object_set(o, "schedule", sched);
    replay_line_add_switches(o, rec);
    json_object_set_new(o, "threads", json_integer((json_int_t)nthreads));
    json_object_set_new(o, "makespan_ns", json_integer((json_int_t)makespan));
    if (waits)
        json_object_set_new(o, "waits", waits);
    json_object_set_new(o, "trace", kept[0] ? json_string(kept) : json_null());
    json_object_set_new(o, "wall_s", json_real(r.wall_s));
    json_decref(rec);
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
    *verdict = v;
    return 0;
}
