/* weft inject's runs: the guest under the tracer in exact mode, with or
 * without a plan's delays, its verdict, and its trace indexed by the
 * uninjected event numbers. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/replay.h"

int inj_verdict_passes(const inj_verdict *v)
{
    return v->end == INJ_EXITED && v->status == 0 && !v->bug[0];
}

void inj_verdict_describe(const inj_verdict *v, char *buf, size_t len)
{
    char what[160];
    switch (v->end) {
    case INJ_EXITED:
        snprintf(what, sizeof what, "exit %d", v->status);
        break;
    case INJ_SIGNALED:
        snprintf(what, sizeof what, "killed by signal %d (%s)", v->status, strsignal(v->status));
        break;
    case INJ_TIMED_OUT:
        snprintf(what, sizeof what, "timed out");
        break;
    case INJ_DEADLOCK:
        snprintf(what, sizeof what, "deadlock");
        break;
    default:
        snprintf(what, sizeof what, "no trace");
        break;
    }
    if (v->bug[0])
        snprintf(buf, len, "%s, %s", what, v->bug);
    else
        snprintf(buf, len, "%s%s", what, inj_verdict_passes(v) ? " (passes)" : "");
}

static void find_bug_line(const char *path, char *bug, size_t len)
{
    bug[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "BUG:", 4) == 0) {
            line[strcspn(line, "\r\n")] = 0;
            snprintf(bug, len, "%.*s", (int)(len - 1), line);
            break;
        }
    }
    fclose(f);
}

static int no_comma(const char *s)
{
    if (!s || !strchr(s, ','))
        return 0;
    weft_error("'%s': commas are not allowed in paths weft passes to the tracer", s);
    return -1;
}

int inj_run_guest(const guest_run *base, uint32_t cpi, uint64_t ps_per_cycle,
                  const char *trace_path, const char *stdout_path, const char *inject_path,
                  const char *report_path, inj_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->end = INJ_NO_TRACE;
    if (no_comma(trace_path) || no_comma(inject_path) || no_comma(report_path))
        return -1;
    char args[8192];
    int n = snprintf(args, sizeof args, "mode=exact,cpi=%" PRIu32 ",ps=%" PRIu64 ",out=%s", cpi,
                     ps_per_cycle, trace_path);
    if (inject_path)
        n += snprintf(args + n, sizeof args - (size_t)n, ",inject=%s,injected=%s", inject_path,
                      report_path);
    if ((size_t)n >= sizeof args) {
        weft_error("paths too long");
        return -1;
    }
    guest_run run = *base;
    run.plugin_args = args;
    unlink(trace_path);
    if (report_path)
        unlink(report_path);
    /* The guest's stdout goes to a file: the oracle's BUG line is read back. */
    fflush(stdout);
    int out = open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) {
        weft_error("%s: %s", stdout_path, strerror(errno));
        return -1;
    }
    int saved = dup(1);
    dup2(out, 1);
    close(out);
    guest_result gr;
    uint32_t final_flags = 0;
    (void)guest_trace_run(&run, trace_path, &gr, &final_flags);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);

    char err[512];
    weft_trace *t = weft_trace_open(trace_path, err, sizeof err);
    if (!t) {
        weft_error("%s", err);
        return -1;
    }
    const weft_trace_summary *s = weft_trace_get_summary(t);
    if (s->flags & WEFT_TRACE_DEADLOCK) {
        v->end = INJ_DEADLOCK;
    } else if (s->flags & WEFT_TRACE_TIMED_OUT) {
        v->end = INJ_TIMED_OUT;
    } else if ((s->flags & WEFT_TRACE_CRASHED) || s->exit_status < 0) {
        v->end = INJ_SIGNALED;
        v->status = -s->exit_status;
    } else {
        v->end = INJ_EXITED;
        v->status = s->exit_status;
    }
    weft_trace_close(t);
    find_bug_line(stdout_path, v->bug, sizeof v->bug);
    return 0;
}

/* ---- index ------------------------------------------------------------------ */

static int push(weft_event **arr, size_t *n, size_t *cap, const weft_event *e)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        weft_event *p = realloc(*arr, c * sizeof *p);
        if (!p)
            return -1;
        *arr = p, *cap = c;
    }
    (*arr)[(*n)++] = *e;
    return 0;
}

static int by_addr_time(const void *x, const void *y)
{
    const weft_event *a = x, *b = y;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    return (a->thread > b->thread) - (a->thread < b->thread);
}

/* Pairs of plain writes of different threads to one address at one time. */
static size_t count_collisions(weft_event *w, size_t n)
{
    qsort(w, n, sizeof *w, by_addr_time);
    size_t pairs = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && w[j].addr == w[i].addr && w[j].time == w[i].time)
            j++;
        for (size_t a = i; a < j; a++)
            for (size_t b = a + 1; b < j; b++)
                pairs += w[a].thread != w[b].thread;
        i = j;
    }
    return pairs;
}

int inj_index_load(const char *trace_path, inj_index *ix, char *err, size_t errlen)
{
    memset(ix, 0, sizeof *ix);
    weft_trace *t = weft_trace_open(trace_path, err, errlen);
    if (!t)
        return -1;
    uint32_t nt = weft_trace_get_summary(t)->nthreads;
    size_t *cap = calloc(nt ? nt : 1, sizeof *cap);
    ix->nthreads = nt;
    ix->count = calloc(nt ? nt : 1, sizeof *ix->count);
    ix->events = calloc(nt ? nt : 1, sizeof *ix->events);
    ix->delays = calloc(nt ? nt : 1, sizeof *ix->delays);
    weft_event *acc = NULL, e;
    size_t nacc = 0, capacc = 0;
    int rc;
    if (!cap || !ix->count || !ix->events || !ix->delays)
        goto oom;
    while ((rc = weft_trace_next(t, &e)) == 1) {
        if (e.thread >= nt)
            continue;
        if (e.kind == WEFT_EV_DELAY) {
            ix->delays[e.thread]++;
            continue;
        }
        e.seq = ix->count[e.thread]; /* the uninjected numbering */
        if (push(&ix->events[e.thread], &ix->count[e.thread], &cap[e.thread], &e))
            goto oom;
        if (weft_event_writes(e.kind) && !(e.flags & (WEFT_EVF_ATOMIC | WEFT_EVF_EXCLUSIVE)))
            if (push(&acc, &nacc, &capacc, &e))
                goto oom;
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", weft_trace_error(t));
        goto fail;
    }
    ix->aligned = count_collisions(acc, nacc);
    free(acc), free(cap);
    weft_trace_close(t);
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", trace_path);
fail:
    free(acc), free(cap);
    weft_trace_close(t);
    inj_index_free(ix);
    return -1;
}

const weft_event *inj_index_get(const inj_index *ix, uint32_t thread, uint64_t seq)
{
    if (thread >= ix->nthreads || seq >= ix->count[thread])
        return NULL;
    return &ix->events[thread][seq];
}

void inj_index_free(inj_index *ix)
{
    for (uint32_t i = 0; ix->events && i < ix->nthreads; i++)
        free(ix->events[i]);
    free(ix->events), free(ix->count), free(ix->delays);
    memset(ix, 0, sizeof *ix);
}
