/* `weft info`: a summary of a trace in the style of Bhattacharya et al.'s Table 1.
 *
 * Two passes over the events keep memory proportional to the shared
 * accesses rather than to the trace: the first finds the addresses touched
 * by two or more threads, the second records only their R/W patterns. */
#include "trace_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SHARED_BIT (1ull << 63)
#define PATTERN_RAW_MAX 12 /* longer patterns are run-length encoded */
#define PATTERN_OUT_MAX 96 /* and cut beyond this many characters */
/* Letters kept per variable and thread: no printed pattern needs more, and
 * it bounds memory on huge traces whatever one variable's access count. */
#define PATTERN_KEEP (1u << 16)

typedef struct thread_access {
    uint32_t thread;
    char *letters; /* one of R, W, M (read-modify-write) per access, the first PATTERN_KEEP */
    size_t n, cap;
    uint64_t total; /* accesses, kept or not */
    uint64_t writes;
} thread_access;

typedef struct var {
    uint64_t addr;
    thread_access *per; /* per accessing thread, in order of first access */
    size_t nper, capper;
    uint64_t writes;
    /* writes at the current time, for pairs that are exactly aligned */
    uint64_t cur_time;
    uint64_t aligned;
    struct {
        uint32_t thread;
        uint64_t n;
    } * at;
    size_t nat, capat;
} var;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Pairs of writes by different threads among counts per thread:
 * C(total, 2) minus the same-thread pairs. */
static uint64_t cross_pairs(uint64_t total, const uint64_t *per, size_t n, size_t stride)
{
    uint64_t p = total * (total - (total > 0)) / 2;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = *(const uint64_t *)((const char *)per + i * stride);
        p -= k * (k - (k > 0)) / 2;
    }
    return p;
}

static void close_time(var *v)
{
    uint64_t total = 0;
    for (size_t i = 0; i < v->nat; i++)
        total += v->at[i].n;
    if (v->nat > 1)
        v->aligned += cross_pairs(total, &v->at[0].n, v->nat, sizeof v->at[0]);
    v->nat = 0;
}

static int var_add(var *v, const weft_event *ev)
{
    thread_access *a = NULL;
    for (size_t i = 0; i < v->nper; i++)
        if (v->per[i].thread == ev->thread)
            a = &v->per[i];
    if (!a) {
        if (grow((void **)&v->per, &v->capper, v->nper + 1, sizeof *v->per) < 0)
            return -1;
        a = &v->per[v->nper++];
        memset(a, 0, sizeof *a);
        a->thread = ev->thread;
    }
    if (a->n < PATTERN_KEEP) {
        if (grow((void **)&a->letters, &a->cap, a->n + 1, 1) < 0)
            return -1;
        a->letters[a->n++] = ev->kind == WEFT_EV_READ ? 'R' : ev->kind == WEFT_EV_WRITE ? 'W' : 'M';
    }
    a->total++;
    if (!weft_event_writes(ev->kind))
        return 0;
    a->writes++;
    v->writes++;
    if (v->nat && ev->time != v->cur_time)
        close_time(v);
    v->cur_time = ev->time;
    for (size_t i = 0; i < v->nat; i++)
        if (v->at[i].thread == ev->thread) {
            v->at[i].n++;
            return 0;
        }
    if (grow((void **)&v->at, &v->capat, v->nat + 1, sizeof v->at[0]) < 0)
        return -1;
    v->at[v->nat].thread = ev->thread;
    v->at[v->nat++].n = 1;
    return 0;
}

/* Append to out (always NUL-terminated, silently cut). */
static void emit(char *out, size_t outlen, size_t *pos, const char *s, size_t n)
{
    if (*pos + 1 >= outlen)
        return;
    size_t room = outlen - 1 - *pos;
    if (n > room)
        n = room;
    memcpy(out + *pos, s, n);
    *pos += n;
    out[*pos] = 0;
}

/* Run-length encode a long pattern greedily: at each position take the
 * repeated unit (1..8 letters) that covers the most letters, if writing it
 * as "(unit)xN" is shorter than the letters themselves. */
static void pattern_format(const char *s, size_t n, uint64_t total, char *out, size_t outlen)
{
    size_t pos = 0;
    out[0] = 0;
    if (total <= PATTERN_RAW_MAX) {
        emit(out, outlen, &pos, s, n);
        return;
    }
    size_t i = 0;
    while (i < n && pos < PATTERN_OUT_MAX) {
        size_t best_l = 0, best_r = 0;
        for (size_t l = 1; l <= 8 && i + 2 * l <= n; l++) {
            size_t r = 1;
            while (i + (r + 1) * l <= n && memcmp(s + i, s + i + r * l, l) == 0)
                r++;
            char tok[32];
            int tl = snprintf(tok, sizeof tok, "%s%zu", l == 1 ? "x" : "()x", r);
            if (r >= 2 && (size_t)tl + l < r * l && r * l > best_r * best_l) {
                best_l = l;
                best_r = r;
            }
        }
        if (best_l) {
            char tok[32];
            if (best_l > 1)
                emit(out, outlen, &pos, "(", 1);
            emit(out, outlen, &pos, s + i, best_l);
            int tl = snprintf(tok, sizeof tok, "%sx%zu", best_l > 1 ? ")" : "", best_r);
            emit(out, outlen, &pos, tok, (size_t)tl);
            i += best_l * best_r;
        } else {
            emit(out, outlen, &pos, s + i, 1);
            i++;
        }
    }
    if (i < total) {
        char tail[48];
        int tl = snprintf(tail, sizeof tail, "...(%" PRIu64 " more)", total - i);
        emit(out, outlen, &pos, tail, (size_t)tl);
    }
}

static int var_cmp(const void *a, const void *b)
{
    const var *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int per_cmp(const void *a, const void *b)
{
    const thread_access *x = a, *y = b;
    return x->thread < y->thread ? -1 : x->thread > y->thread;
}

/* Endings print_end explains. */
#define ODD_END                                                                                    \
    (WEFT_TRACE_TRUNCATED | WEFT_TRACE_CRASHED | WEFT_TRACE_TIMED_OUT | WEFT_TRACE_DEADLOCK |      \
     WEFT_TRACE_STOPPED)

/* Where a run that did not end normally ended: how, when, and its last
 * event (the faulting access if there is one). */
static void print_end(const weft_trace_summary *s, const weft_event *last, weft_symbols *syms,
                      FILE *out)
{
    if (!(s->flags & ODD_END))
        return;
    fprintf(out, "ended          ");
    if (s->flags & WEFT_TRACE_STOPPED)
        fprintf(out, "stopped by weft at a trace limit (size or free disk)");
    else if (s->exit_status == WEFT_EXIT_STATUS_UNKNOWN)
        fprintf(out, "as nobody saw (salvaged afterwards)");
    else if (s->exit_status < 0 && (s->flags & WEFT_TRACE_TIMED_OUT))
        fprintf(out, "timed out, killed by signal %d", -s->exit_status);
    else if (s->exit_status < 0)
        fprintf(out, "by signal %d (%s)", -s->exit_status, strsignal(-s->exit_status));
    else if (s->flags & WEFT_TRACE_DEADLOCK)
        fprintf(out, "in a deadlock");
    else
        fprintf(out, "recording cut short (--max-events)");
    if (!last) {
        fprintf(out, ", before any event\n");
        return;
    }
    fprintf(out, " at %" PRIu64 " ns; last event: T%u ", last->time, last->thread);
    if (last->kind == WEFT_EV_FAULT)
        fprintf(out, "faulting %s of 0x%" PRIx64 "%s",
                last->flags & WEFT_EVF_FAULT_WRITE ? "write" : "read", last->addr,
                last->flags & WEFT_EVF_FAULT_NEAR
                    ? " (or a later access of its block: not every access was observed)"
                    : "");
    else if (last->kind == WEFT_EV_SYSCALL)
        fprintf(out, "syscall %" PRIu64, last->addr);
    else
        fprintf(out, "%s 0x%" PRIx64, weft_event_kind_name(last->kind), last->addr);
    const char *fn = NULL, *file = NULL;
    int line = 0;
    if (last->pc)
        fprintf(out, " at pc 0x%" PRIx64, last->pc);
    if (last->pc && syms && weft_symbols_pc(syms, last->pc, &fn, &file, &line) == 0 && fn) {
        if (file)
            fprintf(out, " (%s, %s:%d)", fn, file, line);
        else
            fprintf(out, " (%s)", fn);
    }
    fputc('\n', out);
}

static void print_header(weft_trace *t, FILE *out)
{
    const weft_trace_meta *m = weft_trace_get_meta(t);
    const weft_trace_summary *s = weft_trace_get_summary(t);
    const weft_trace_settings *st = &m->settings;
    fprintf(out, "trace          %s (format %d, %" PRIu64 " events)\n", weft_trace_path(t),
            (int)m->version, weft_trace_event_count(t));
    if (s->flags & WEFT_TRACE_SUMMARY_ONLY)
        fprintf(out, "events         not kept: a campaign's run, summary only (run it alone with "
                     "--save-trace for its events)\n");
    struct stat sb;
    uint64_t n = weft_trace_event_count(t);
    if (stat(weft_trace_path(t), &sb) == 0) {
        fprintf(out, "size           %lld bytes, %.3f bytes/event", (long long)sb.st_size,
                n ? (double)sb.st_size / (double)n : 0.0);
        if (m->zstd_level)
            fprintf(out, " (zstd level %u)", m->zstd_level);
        fputc('\n', out);
    }
    fprintf(out, "binary         %s", m->binary_path);
    if (m->build_id_len) {
        fprintf(out, " (build-id ");
        for (uint32_t i = 0; i < m->build_id_len; i++)
            fprintf(out, "%02x", m->build_id[i]);
        fprintf(out, ")");
    }
    if (m->start_code) /* names the pcs of a position-independent program */
        fprintf(out, "\ncode at        0x%" PRIx64, m->start_code);
    for (uint32_t i = 0; i < m->nobjects; i++) { /* and those of its libraries */
        const char *base = strrchr(m->objects[i].path, '/');
        fprintf(out, "%s%s at 0x%" PRIx64, i ? ", " : "\nobjects        ",
                base ? base + 1 : m->objects[i].path, m->objects[i].lo);
    }
    fprintf(out, "\nargv          ");
    for (uint32_t i = 0; i < m->argc; i++) {
        /* Quote arguments that would not read back as one word. */
        const char *a = m->argv[i];
        if (*a && !strpbrk(a, " \t\n'\"\\")) {
            fprintf(out, " %s", a);
            continue;
        }
        fputs(" '", out);
        for (; *a; a++) {
            if (*a == '\'')
                fputs("'\\''", out);
            else
                fputc(*a, out);
        }
        fputc('\'', out);
    }
    static const char *const filters[] = {"nonstack", "all", "ranges", "shared"};
    fprintf(out,
            "\nmode           %s, cpi %u, %" PRIu64 " ps/cycle, quantum %" PRIu64 " ns, filter %s",
            st->mode == WEFT_MODE_EXACT ? "exact" : "free", st->cpi, st->ps_per_cycle, st->quantum,
            st->filter < 4 ? filters[st->filter] : "?");
    for (uint32_t i = 0; i < st->nranges; i++)
        fprintf(out, " [0x%" PRIx64 ",0x%" PRIx64 ")", st->range_lo[i], st->range_hi[i]);
    fprintf(out, ", policy %s seed %" PRIu64 "\n", st->policy, st->seed);
    uint32_t kinds = st->record & WEFT_RECORD_ALL;
    if (kinds != WEFT_RECORD_ALL)
        fprintf(out, "recorded       %s%s%s (plain %s%s%s not recorded)\n",
                kinds & WEFT_RECORD_SYNC ? "sync" : "", kinds & WEFT_RECORD_WRITES ? "+writes" : "",
                kinds & WEFT_RECORD_READS ? "+reads" : "", kinds & WEFT_RECORD_READS ? "" : "reads",
                !(kinds & (WEFT_RECORD_READS | WEFT_RECORD_WRITES)) ? " and " : "",
                kinds & WEFT_RECORD_WRITES ? "" : "writes");
    if (st->record & WEFT_RECORD_FEW_LIB_READS)
        fprintf(out, "recorded       libraries' plain loads only in blocks closing a wait loop "
                     "(a replay run's)\n");
    if (st->record & WEFT_RECORD_NO_LIB_WRITES)
        fprintf(out, "recorded       no plain stores of the libraries (a replay run's)\n");
    static const char *const flag_names[] = {"complete",  "truncated", "crashed",
                                             "timed-out", "deadlock",  "stopped",
                                             "livelock",  "unordered", "summary-only"};
    enum { NFLAGS = sizeof flag_names / sizeof flag_names[0] };
    fprintf(out, "flags         ");
    if (!s->flags)
        fprintf(out, " none");
    for (int i = 0; i < NFLAGS; i++)
        if (s->flags & (1u << i))
            fprintf(out, " %s", flag_names[i]);
    if (s->exit_status == WEFT_EXIT_STATUS_UNKNOWN)
        fprintf(out, "\nexit status    unknown (salvaged afterwards)");
    else if (s->exit_status < 0)
        fprintf(out, "\nexit status    killed by signal %d", -s->exit_status);
    else
        fprintf(out, "\nexit status    %d", s->exit_status);
    fprintf(out, "\nmakespan       %" PRIu64 " ns\nstall escapes  %" PRIu64 "\n", s->makespan,
            s->stall_escapes);
}

static void print_threads(const weft_trace_summary *s, const uint64_t (*rw)[3], FILE *out)
{
    fprintf(out, "\nthreads\n  %-7s %-8s %-7s %12s %12s %12s %10s %10s %10s %10s\n", "id", "tid",
            "parent", "start", "end", "insns", "events", "reads", "writes", "rmw");
    for (uint32_t i = 0; i < s->nthreads; i++) {
        const weft_trace_thread *th = &s->threads[i];
        fprintf(out,
                "  %-7s %-8s %-7s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10" PRIu64
                " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n",
                trc_thread_label(th->id).s, trc_tid_label(th->tid).s,
                trc_thread_label(th->parent).s, th->start_time, th->end_time, th->insns, th->events,
                rw[i][0], rw[i][1], rw[i][2]);
    }
}

static void print_vars(var *vars, size_t nvars, weft_symbols *syms, FILE *out)
{
    if (nvars) /* vars is NULL when there are none, and qsort wants a pointer */
        qsort(vars, nvars, sizeof *vars, var_cmp);
    fprintf(out,
            "\nshared variables (%zu addresses accessed by 2 or more threads; R read, "
            "W write, M read-modify-write)\n",
            nvars);
    for (size_t i = 0; i < nvars; i++) {
        var *v = &vars[i];
        close_time(v);
        char name[256];
        weft_symbols_data_name(syms, v->addr, name, sizeof name);
        fprintf(out, "  %s:", name);
        qsort(v->per, v->nper, sizeof *v->per, per_cmp);
        for (size_t k = 0; k < v->nper; k++) {
            char pat[PATTERN_OUT_MAX + 64];
            pattern_format(v->per[k].letters, v->per[k].n, v->per[k].total, pat, sizeof pat);
            fprintf(out, "%s T%u %s", k ? "," : "", v->per[k].thread, pat);
        }
        uint64_t pairs = cross_pairs(v->writes, &v->per[0].writes, v->nper, sizeof v->per[0]);
        fprintf(out, "; write-write pairs: %" PRIu64 " cross-thread, %" PRIu64 " aligned\n", pairs,
                v->aligned);
    }
}

/* The shared addresses' patterns, built in the second pass. */
typedef struct var_list {
    var *v;
    size_t n, cap;
} var_list;

static void var_list_free(var_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        for (size_t k = 0; k < l->v[i].nper; k++)
            free(l->v[i].per[k].letters);
        free(l->v[i].per);
        free(l->v[i].at);
    }
    free(l->v);
}

/* Pass 1: per-thread counts; which addresses have two or more threads;
 * the last event (a fault is always its thread's last). Only the shared
 * addresses get patterns in pass 2, which keeps its memory to what the
 * report shows. -1: out of memory, or the trace's own error. */
/* Keep ev as the run's last event, unless a fault came first: a fault is
 * its thread's last event and what the run died of. */
static inline void note_last(weft_event *last, bool *any, const weft_event *ev)
{
    if (!*any || last->kind != WEFT_EV_FAULT)
        *last = *ev;
    *any = true;
}

static int count_pass(weft_trace *t, uint64_t (*rw)[3], trc_addrmap *owners, weft_event *last,
                      bool *any)
{
    weft_event ev;
    int r;
    weft_trace_rewind(t);
    while ((r = weft_trace_next(t, &ev)) == 1) {
        note_last(last, any, &ev);
        if (!weft_event_is_access(ev.kind))
            continue;
        rw[ev.thread][ev.kind == WEFT_EV_READ ? 0 : ev.kind == WEFT_EV_WRITE ? 1 : 2]++;
        bool ins;
        uint64_t *o = trc_addrmap_get(owners, ev.addr, &ins);
        if (!o)
            return -1;
        if (ins)
            *o = (uint64_t)ev.thread + 1;
        else if (!(*o & SHARED_BIT) && *o != (uint64_t)ev.thread + 1)
            *o |= SHARED_BIT;
    }
    return r < 0 ? -1 : 0;
}

/* Pass 2: patterns of the shared addresses only, in order of first access. */
static int pattern_pass(weft_trace *t, const trc_addrmap *owners, var_list *vars)
{
    trc_addrmap index = {0};
    weft_event ev;
    int r;
    weft_trace_rewind(t);
    while ((r = weft_trace_next(t, &ev)) == 1) {
        if (!weft_event_is_access(ev.kind))
            continue;
        uint64_t *o = trc_addrmap_find(owners, ev.addr);
        if (!o || !(*o & SHARED_BIT))
            continue;
        bool ins;
        uint64_t *ix = trc_addrmap_get(&index, ev.addr, &ins);
        if (!ix)
            break;
        if (ins) {
            if (grow((void **)&vars->v, &vars->cap, vars->n + 1, sizeof *vars->v) < 0)
                break;
            memset(&vars->v[vars->n], 0, sizeof *vars->v);
            vars->v[vars->n].addr = ev.addr;
            *ix = vars->n++;
        }
        if (var_add(&vars->v[*ix], &ev) < 0)
            break;
    }
    trc_addrmap_free(&index);
    return r == 0 ? 0 : -1;
}

/* The last event (for an odd ending) without the shared-address maps. */
static int last_pass(weft_trace *t, weft_event *last, bool *any)
{
    weft_event ev;
    int r;
    weft_trace_rewind(t);
    while ((r = weft_trace_next(t, &ev)) == 1)
        note_last(last, any, &ev);
    return r < 0 ? -1 : 0;
}

int weft_trace_print_info(weft_trace *t, weft_symbols *syms, int vars_wanted, FILE *out)
{
    const weft_trace_summary *s = weft_trace_get_summary(t);
    int rc = -1;
    uint64_t(*rw)[3] = calloc(s->nthreads ? s->nthreads : 1, sizeof *rw);
    trc_addrmap owners = {0};
    var_list vars = {0};
    weft_event last = {0};
    bool any = false;
    uint64_t n = weft_trace_event_count(t);
    /* Version 3 footers count every thread's events per kind: the table
     * needs no pass over the events, and only the variables do. */
    bool want =
        vars_wanted > 0 || (vars_wanted < 0 && n <= WEFT_INFO_VARS_AUTO_MAX) || !s->has_kinds;
    if (!rw)
        goto out;
    if (want) {
        if (count_pass(t, rw, &owners, &last, &any) < 0 || pattern_pass(t, &owners, &vars) < 0)
            goto out;
    } else {
        for (uint32_t i = 0; i < s->nthreads; i++) {
            rw[i][0] = s->threads[i].kinds[WEFT_EV_READ];
            rw[i][1] = s->threads[i].kinds[WEFT_EV_WRITE];
            rw[i][2] = s->threads[i].kinds[WEFT_EV_RMW];
        }
        if ((s->flags & ODD_END) && last_pass(t, &last, &any) < 0)
            goto out;
    }
    print_header(t, out);
    print_end(s, any ? &last : NULL, syms, out);
    print_threads(s, (const uint64_t(*)[3])rw, out);
    if (want)
        print_vars(vars.v, vars.n, syms, out);
    else
        fprintf(out,
                "\nshared variables: not computed (%" PRIu64 " events; weft info --vars reads "
                "them all)\n",
                n);
    rc = ferror(out) ? -1 : 0;
out:
    var_list_free(&vars);
    trc_addrmap_free(&owners);
    free(rw);
    return rc;
}

/* The line weft trace ends with. */
int weft_trace_print_summary(const char *path, double wall_s, FILE *out, char *err, size_t errlen)
{
    /* Counted by the writer (version 3 on): the footer is enough, and the
     * trace just written is not in the page cache (trace_merge.c). */
    weft_trace *t = weft_trace_open_footer(path, err, errlen);
    if (t && !weft_trace_get_summary(t)->has_kinds) {
        weft_trace_close(t);
        t = weft_trace_open(path, err, errlen);
    }
    if (!t)
        return -1;
    const weft_trace_summary *s = weft_trace_get_summary(t);
    uint64_t counts[WEFT_EV_KIND_COUNT] = {0};
    weft_event ev;
    int rc = 0;
    if (s->has_kinds) /* counted by the writer: no pass over a billion events */
        for (uint32_t i = 0; i < s->nthreads; i++)
            for (int k = 0; k < WEFT_EV_KIND_COUNT; k++)
                counts[k] += s->threads[i].kinds[k];
    else
        while ((rc = weft_trace_next(t, &ev)) == 1)
            if (ev.kind < WEFT_EV_KIND_COUNT)
                counts[ev.kind]++;
    struct stat st;
    long long size = stat(path, &st) == 0 ? (long long)st.st_size : -1;
    fprintf(out,
            "weft: traced %u thread%s, %" PRIu64 " events (%" PRIu64 " reads, %" PRIu64
            " writes, %" PRIu64 " atomics, %" PRIu64 " futex waits, %" PRIu64
            " syscalls); virtual makespan %" PRIu64 " ns; %.2f s wall; stall escapes %" PRIu64
            "%s%s%s; trace %s (%lld bytes)\n",
            s->nthreads, s->nthreads == 1 ? "" : "s", weft_trace_event_count(t),
            counts[WEFT_EV_READ], counts[WEFT_EV_WRITE], counts[WEFT_EV_RMW],
            counts[WEFT_EV_FUTEX_WAIT], counts[WEFT_EV_SYSCALL], s->makespan, wall_s,
            s->stall_escapes, (s->flags & WEFT_TRACE_TRUNCATED) ? "; TRUNCATED" : "",
            /* Said here too, from the trace itself: the tracer's own line
             * comes from inside the guest's process, whose fds the guest
             * owns (it keeps a copy of stderr, but a guest may close all). */
            (s->flags & WEFT_TRACE_UNORDERED) ? "; UNORDERED (may not repeat byte for byte)" : "",
            rc < 0 ? "; CORRUPT" : "", path, size);
    weft_trace_close(t);
    return 0;
}
