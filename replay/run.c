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
        replay_describe_waits(sr->files.trace, c->run.binary, rec, sr->waits, sr->detail,
                              sizeof sr->detail);
        json_decref(rec);
    } else if (sr->flags & WEFT_TRACE_LIVELOCK) {
        sr->v = REPLAY_LIVELOCK;
        json_t *rec = json_load_file(sr->files.record, 0, NULL);
        replay_spinners(sr->files.err, c->run.binary,
                        (uint64_t)json_integer_value(json_object_get(rec, "start_code")),
                        sr->detail, sizeof sr->detail);
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
