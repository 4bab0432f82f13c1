/* weft replay --minimize: the fewest preemptions of a failing run's
 * schedule that still fail the same way. The run's switch log is its
 * schedule; the switches that were not preemptions (the running thread
 * blocked, exited or yielded) are kept, and Zeller's delta debugging
 * (ddmin) searches the preemptions, each candidate replayed on the
 * platform under the script policy. The smallest failing one is saved as a
 * schedule file and replayed once more from that file. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/replay.h"

/* ---- ddmin ------------------------------------------------------------------ */

typedef struct memo {
    size_t **sets, *lens;
    int *results;
    size_t n, cap;
} memo;

typedef struct dd {
    replay_ddmin_test test;
    void *ctx;
    size_t max_tests, tests;
    memo m;
    int failed; /* a test could not be run */
} dd;

/* Each subset is tested once: ddmin asks for the same complement again
 * after a granularity change, and a test here is a whole run. */
static int run_test(dd *d, const size_t *idx, size_t n)
{
    for (size_t i = 0; i < d->m.n; i++)
        if (d->m.lens[i] == n && !memcmp(d->m.sets[i], idx, n * sizeof *idx))
            return d->m.results[i];
    if (d->max_tests && d->tests >= d->max_tests)
        return -2;
    d->tests++;
    int r = d->test(d->ctx, idx, n);
    if (r < 0) {
        d->failed = 1;
        return -1;
    }
    if (d->m.n == d->m.cap) {
        size_t cap = d->m.cap ? 2 * d->m.cap : 64;
        size_t **s = realloc(d->m.sets, cap * sizeof *s);
        if (s)
            d->m.sets = s;
        size_t *l = realloc(d->m.lens, cap * sizeof *l);
        if (l)
            d->m.lens = l;
        int *res = realloc(d->m.results, cap * sizeof *res);
        if (res)
            d->m.results = res;
        if (!s || !l || !res)
            return r; /* not remembered: at worst run again */
        d->m.cap = cap;
    }
    size_t *copy = malloc((n ? n : 1) * sizeof *copy);
    if (copy) {
        memcpy(copy, idx, n * sizeof *idx);
        d->m.sets[d->m.n] = copy;
        d->m.lens[d->m.n] = n;
        d->m.results[d->m.n++] = r;
    }
    return r;
}

static void memo_free(memo *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->sets[i]);
    free(m->sets);
    free(m->lens);
    free(m->results);
}

/* Chunk i of n of c (sizes differ by at most one) into out; its length. */
static size_t chunk(const size_t *c, size_t len, size_t n, size_t i, size_t *out)
{
    size_t lo = i * len / n, hi = (i + 1) * len / n;
    memcpy(out, c + lo, (hi - lo) * sizeof *c);
    return hi - lo;
}

static size_t complement(const size_t *c, size_t len, size_t n, size_t i, size_t *out)
{
    size_t lo = i * len / n, hi = (i + 1) * len / n;
    memcpy(out, c, lo * sizeof *c);
    memcpy(out + lo, c + hi, (len - hi) * sizeof *c);
    return len - (hi - lo);
}

/* Zeller and Hildebrandt's ddmin (TSE 2002), on c, which fails: try each of
 * n chunks, then each complement; on success restart from it, otherwise
 * refine n up to |c|. Returns 0, 1 when the budget ran out, -1 on error. */
static int ddmin_loop(dd *d, size_t *c, size_t *len, size_t *buf)
{
    size_t n = 2;
    while (*len >= 2) {
        int reduced = 0;
        for (size_t pass = 0; pass < 2 && !reduced; pass++) {
            /* With two chunks, the complements are the chunks again. */
            if (pass == 1 && n == 2)
                break;
            for (size_t i = 0; i < n && !reduced; i++) {
                size_t m = pass ? complement(c, *len, n, i, buf) : chunk(c, *len, n, i, buf);
                int r = run_test(d, buf, m);
                if (r == -1)
                    return -1;
                if (r == -2)
                    return 1;
                if (r == 1) {
                    memcpy(c, buf, m * sizeof *c);
                    *len = m;
                    n = pass ? (n - 1 > 2 ? n - 1 : 2) : 2;
                    reduced = 1;
                }
            }
        }
        if (reduced)
            continue;
        if (n >= *len)
            break;
        n = 2 * n < *len ? 2 * n : *len;
    }
    return 0;
}

int replay_ddmin(size_t n, replay_ddmin_test test, void *ctx, size_t max_tests, size_t **out,
                 size_t *nout, size_t *tests_run)
{
    dd d = {.test = test, .ctx = ctx, .max_tests = max_tests};
    size_t *c = malloc((n ? n : 1) * sizeof *c), *buf = malloc((n ? n : 1) * sizeof *buf);
    size_t len = n;
    int rc = -1;
    if (c && buf) {
        for (size_t i = 0; i < n; i++)
            c[i] = i;
        /* Nothing at all may do: then no search. */
        int r = n ? run_test(&d, c, 0) : 0;
        if (r == 1)
            len = 0, rc = 0;
        else if (r == -2)
            rc = 1;
        else if (r == 0)
            rc = ddmin_loop(&d, c, &len, buf);
    }
    if (tests_run)
        *tests_run = d.tests;
    memo_free(&d.m);
    free(buf);
    if (rc < 0) {
        free(c);
        return -1;
    }
    *out = c;
    *nout = len;
    return rc;
}

/* ---- minimizing a run's schedule -------------------------------------------- */

typedef struct minimize {
    replay_config cc; /* the candidates' replays: script policy, DIR/minimize */
    const replay_switch_log *log;
    size_t *pre; /* indices of log entries that are preemptions */
    size_t npre;
    replay_schedule tmpl; /* program, n, k, points of every candidate */
    char want_verdict[32], want_detail[1024];
    char cand[PATH_MAX + 64], tmp[PATH_MAX + 32];
    uint64_t runs;
    int quiet, verdict_only;
} minimize;

static int is_preemption(const replay_switch *w)
{
    return w->preempt && !w->stay;
}

/* The log's entries, the preemptions only if chosen (sel ascending). */
static size_t candidate(const minimize *m, const size_t *sel, size_t nsel, pct_script_switch *out)
{
    size_t k = 0, s = 0, p = 0;
    for (size_t j = 0; j < m->log->n; j++) {
        const replay_switch *w = &m->log->v[j];
        if (is_preemption(w)) {
            int chosen = s < nsel && sel[s] == p;
            s += chosen;
            p++;
            if (!chosen)
                continue;
        }
        out[k++] = (pct_script_switch){w->step, (pct_tid)w->to, is_preemption(w)};
    }
    return k;
}

/* The same verdict and, for bug, the same BUG line (unless verdict_only). */
static int same_failure(const minimize *m, const char *verdict, const char *detail)
{
    return !strcmp(verdict, m->want_verdict) &&
           (m->verdict_only || strcmp(verdict, "bug") || !strcmp(detail, m->want_detail));
}

/* Replay one candidate: 1 if it fails as the original did, 0 if not, -1
 * if it could not run. Its verdict in v/detail. */
static int try_schedule(minimize *m, const pct_script_switch *sw, size_t nsw, int keep,
                        char *verdict, size_t vlen, char *detail, size_t dlen)
{
    char err[512];
    replay_schedule s = m->tmpl;
    s.sw = (pct_script_switch *)sw;
    s.nsw = nsw;
    if (replay_schedule_write(&s, m->cand, err, sizeof err)) {
        weft_error("%s", err);
        return -1;
    }
    m->cc.save_trace = keep;
    char *line = NULL;
    replay_verdict v;
    int rc = replay_run_seed(&m->cc, ++m->runs, m->tmp, &line, &v);
    if (rc)
        return -1;
    json_t *o = json_loads(line, 0, NULL);
    free(line);
    const char *vs = json_string_value(json_object_get(o, "verdict"));
    const char *ds = json_string_value(json_object_get(o, "detail"));
    snprintf(verdict, vlen, "%s", vs ? vs : "?");
    snprintf(detail, dlen, "%s", ds ? ds : "");
    json_decref(o);
    return same_failure(m, verdict, detail);
}

static int test_subset(void *ctx, const size_t *sel, size_t nsel)
{
    minimize *m = ctx;
    pct_script_switch *sw = malloc((m->log->n ? m->log->n : 1) * sizeof *sw);
    if (!sw)
        return -1;
    size_t n = candidate(m, sel, nsel, sw);
    char v[32], detail[1024];
    int r = try_schedule(m, sw, n, 0, v, sizeof v, detail, sizeof detail);
    free(sw);
    if (!m->quiet && r == 0 && !strcmp(v, m->want_verdict))
        /* Why a failure is not kept: --minimize-match verdict would keep it. */
        printf("  run %" PRIu64 ": %zu of %zu preemptions: %s, another BUG line (%.200s; "
               "--minimize-match verdict keeps it)\n",
               m->runs, nsel, m->npre, v, detail);
    else if (!m->quiet && r >= 0)
        printf("  run %" PRIu64 ": %zu of %zu preemptions: %s%s\n", m->runs, nsel, m->npre, v,
               r ? " (fails the same way)" : "");
    fflush(stdout);
    return r;
}

/* What every candidate shares: the program, n, k, the points, the verdict
 * to reproduce, where it came from. */
static int make_template(minimize *m, const replay_config *c, uint64_t seed, char *binary)
{
    replay_schedule *t = &m->tmpl;
    t->program = binary;
    t->argv = c->run.argv;
    t->argc = c->run.argc;
    t->sysroot = (char *)c->run.sysroot;
    t->n = c->n;
    t->k = c->k;
    t->points = c->points == POINTS_SHARED ? POINTS_PCS : c->points;
    t->races = c->points == POINTS_VISIBLE && c->race_points;
    t->expect_exit = c->expect_exit;
    t->timeout = c->timeout;
    snprintf(t->verdict, sizeof t->verdict, "%s", m->want_verdict);
    snprintf(t->detail, sizeof t->detail, "%s", m->want_detail);
    snprintf(t->from_policy, sizeof t->from_policy, "%s", pct_kind_name(c->kind));
    t->from_seed = seed;
    t->from_depth = c->depth;
    t->from_switches = m->log->switches;
    t->from_preemptions = m->log->preemptions;
    char err[512];
    if ((t->points == POINTS_VISIBLE || t->points == POINTS_PCS) && c->pcs_path[0] &&
        weft_pcs_load(c->pcs_path, &t->pcs, &t->npcs, err, sizeof err)) {
        weft_error("cannot read the campaign's points: %s", err);
        return -1;
    }
    return 0;
}

/* The log of a kept candidate as a schedule: every entry, in order. */
static int schedule_of(const replay_switch_log *log, replay_schedule *s)
{
    s->sw = calloc(log->n ? log->n : 1, sizeof *s->sw);
    if (!s->sw)
        return -1;
    for (size_t j = 0; j < log->n; j++)
        s->sw[j] =
            (pct_script_switch){log->v[j].step, (pct_tid)log->v[j].to, is_preemption(&log->v[j])};
    s->nsw = log->n;
    return 0;
}

/* The minimal candidate once more, kept, its own log saved as the
 * schedule, and that file replayed. Returns weft's exit status. */
static int save_minimal(minimize *m, const size_t *sel, size_t nsel, const char *dir)
{
    char v[32], detail[1024], err[512], out[PATH_MAX + 32];
    pct_script_switch *sw = malloc((m->log->n ? m->log->n : 1) * sizeof *sw);
    if (!sw)
        return WEFT_EXIT_FAIL;
    size_t n = candidate(m, sel, nsel, sw);
    int r = try_schedule(m, sw, n, 1, v, sizeof v, detail, sizeof detail);
    free(sw);
    /* A run that died by a signal (an abort, a crash) left no record, only
     * its switch log. */
    replay_switch_log log;
    if (r != 1 || replay_switch_log_load_kept(m->cc.out_dir, m->runs, &log, err, sizeof err)) {
        weft_error("the minimal schedule did not fail again (%s): not saved", r == 1 ? err : v);
        return WEFT_EXIT_FAIL;
    }
    replay_schedule s = m->tmpl;
    snprintf(s.verdict, sizeof s.verdict, "%s", v); /* what a replay of the file must give */
    snprintf(s.detail, sizeof s.detail, "%s", detail);
    int rc = schedule_of(&log, &s);
    snprintf(out, sizeof out, "%s/schedule.json", dir);
    if (rc == 0)
        rc = replay_schedule_write(&s, out, err, sizeof err);
    if (rc)
        weft_error("%s", s.sw ? err : "out of memory");
    free(s.sw);
    /* The file itself, replayed: what --schedule will do. */
    if (rc == 0) {
        snprintf(m->cc.schedule_path, sizeof m->cc.schedule_path, "%s", out);
        m->cc.save_trace = 0;
        char *line = NULL;
        replay_verdict vv = REPLAY_PASS;
        rc = replay_run_seed(&m->cc, ++m->runs, m->tmp, &line, &vv);
        json_t *o = rc ? NULL : json_loads(line, 0, NULL);
        free(line);
        const char *ds = json_string_value(json_object_get(o, "detail"));
        int same = o && !strcmp(replay_verdict_name(vv), s.verdict) &&
                   (strcmp(s.verdict, "bug") || (ds && !strcmp(ds, s.detail)));
        printf("weft: minimal schedule: %" PRIu64 " preemption%s of %zu, %" PRIu64
               " switches of %" PRIu64 " -> %s\n",
               log.preemptions, log.preemptions == 1 ? "" : "s", m->npre, log.switches,
               m->log->switches, out);
        printf("weft: replayed from the file: %s%s%s (%s)\n", replay_verdict_name(vv),
               ds && *ds ? ": " : "", ds ? ds : "", same ? "the same failure" : "NOT the same");
        printf("  reproduce: weft replay --schedule %s\n", out);
        json_decref(o);
        rc = same ? 10 : WEFT_EXIT_FAIL;
    } else {
        rc = WEFT_EXIT_FAIL;
    }
    replay_switch_log_free(&log);
    return rc;
}

/* The seed's verdict and switch log; 0, 1 (nothing to minimize, said) or -1. */
static int load_run(minimize *m, const replay_config *c, uint64_t seed, replay_switch_log *log)
{
    char err[PATH_MAX + 512];
    if (replay_seed_outcome(c->out_dir, seed, m->want_verdict, sizeof m->want_verdict,
                            m->want_detail, sizeof m->want_detail)) {
        weft_error("--minimize: seed %" PRIu64 " has no finished run in %s", seed, c->out_dir);
        return -1;
    }
    replay_verdict v;
    if (replay_verdict_parse(m->want_verdict, &v) || !replay_verdict_is_hit(v)) {
        printf("weft: seed %" PRIu64 ": %s: nothing to minimize\n", seed, m->want_verdict);
        return 1;
    }
    if (c->kind == PCT_KIND_PPCT) {
        weft_error("--minimize: ppct's log holds changes of its allowed set, not the thread that "
                   "ran: minimize a schedule of pct, rpro, random, pos, pb or db");
        return -1;
    }
    if (replay_switch_log_load_kept(c->out_dir, seed, log, err, sizeof err)) {
        weft_error("--minimize: %s", err);
        return -1;
    }
    if (log->dropped) {
        weft_error("--minimize: seed %" PRIu64 " made %" PRIu64 " switches; its record keeps "
                   "the last %zu and the whole log was not kept",
                   seed, log->switches + log->stays, log->n);
        replay_switch_log_free(log);
        return -1;
    }
    return 0;
}

int replay_minimize(const replay_config *c, uint64_t seed, size_t max_runs, int verdict_only)
{
    minimize m = {.quiet = c->quiet, .verdict_only = verdict_only};
    replay_switch_log log;
    int lr = load_run(&m, c, seed, &log);
    if (lr)
        return lr > 0 ? WEFT_EXIT_OK : WEFT_EXIT_FAIL;
    m.log = &log;
    char binary[PATH_MAX];
    if (!realpath(c->run.binary, binary))
        snprintf(binary, sizeof binary, "%s", c->run.binary);
    m.pre = malloc((log.n ? log.n : 1) * sizeof *m.pre);
    int rc = WEFT_EXIT_FAIL;
    if (!m.pre || make_template(&m, c, seed, binary))
        goto out;
    for (size_t j = 0; j < log.n; j++)
        if (is_preemption(&log.v[j]))
            m.pre[m.npre++] = j;
    m.cc = *c;
    m.cc.kind = PCT_KIND_SCRIPT;
    m.cc.seed_given = 1;
    /* Paths weft builds from the output folder: too long is one error. */
    if (snprintf(m.cc.out_dir, sizeof m.cc.out_dir, "%s/minimize", c->out_dir) >=
            (int)sizeof m.cc.out_dir ||
        snprintf(m.tmp, sizeof m.tmp, "%s/tmp", m.cc.out_dir) >= (int)sizeof m.tmp ||
        snprintf(m.cand, sizeof m.cand, "%s/candidate.json", m.cc.out_dir) >= (int)sizeof m.cand ||
        snprintf(m.cc.schedule_path, sizeof m.cc.schedule_path, "%s", m.cand) >=
            (int)sizeof m.cc.schedule_path) {
        weft_error("%s: the output folder's path is too long", c->out_dir);
        goto out;
    }
    if (weft_mkdirs(m.tmp))
        goto out;
    printf("weft: minimizing seed %" PRIu64 " (%s: %s): %" PRIu64 " switches, %zu of them "
           "preemptions; each candidate is one replay under the script policy, kept if it %s\n",
           seed, m.want_verdict, m.want_detail, log.switches, m.npre,
           verdict_only ? "has the same verdict" : "fails the same way (verdict and BUG line)");
    size_t *all = malloc((m.npre ? m.npre : 1) * sizeof *all), *sel = NULL, nsel = 0, tests = 0;
    for (size_t i = 0; all && i < m.npre; i++)
        all[i] = i;
    int full = all ? test_subset(&m, all, m.npre) : -1;
    free(all);
    if (full != 1) {
        if (full == 0)
            weft_error("the schedule of seed %" PRIu64 " replayed under the script policy does "
                       "not fail the same way: nothing to minimize from",
                       seed);
        goto out;
    }
    int dr = replay_ddmin(m.npre, test_subset, &m, max_runs, &sel, &nsel, &tests);
    if (dr < 0)
        goto out;
    if (dr > 0)
        printf("weft: --minimize-runs %zu reached: the schedule below is the smallest found, "
               "maybe not 1-minimal\n",
               max_runs);
    rc = save_minimal(&m, sel, nsel, c->out_dir);
    free(sel);
out:
    unlink(m.cand);
    rmdir(m.tmp);
    free(m.pre);
    free(m.tmpl.pcs);
    replay_switch_log_free(&log);
    return rc;
}
