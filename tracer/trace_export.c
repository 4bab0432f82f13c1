/* `weft export`: the trace as Chrome/Perfetto trace-event JSON, as a VCD
 * for GTKWave, or as CSV. Each is a single streaming pass over the events,
 * written to a temporary file that is renamed into place only when
 * complete (or straight to an existing device or FIFO). */
#include "trace_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- atomic output ---- */

typedef struct atomic_file {
    FILE *f;
    char *tmp; /* NULL: writing to path itself */
    const char *path;
} atomic_file;

static int atomic_open(atomic_file *a, const char *path, char *err, size_t errlen)
{
    size_t n = strlen(path) + 32;
    a->path = path;
    a->f = NULL;
    a->tmp = NULL;
    if (weft_output_in_place(path)) { /* -o /dev/stdout, /dev/null, a FIFO */
        int fd = weft_output_open_in_place(path);
        if (fd < 0 || !(a->f = fdopen(fd, "w"))) {
            trc_seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno));
            if (fd >= 0)
                close(fd);
            return -1;
        }
        return 0;
    }
    if (!(a->tmp = malloc(n))) {
        trc_seterr(err, errlen, "%s: out of memory", path);
        return -1;
    }
    snprintf(a->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    if (!(a->f = fopen(a->tmp, "w"))) {
        trc_seterr(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        free(a->tmp);
        return -1;
    }
    return 0;
}

static void atomic_discard(atomic_file *a)
{
    if (a->f)
        fclose(a->f);
    if (a->tmp)
        unlink(a->tmp);
    free(a->tmp);
}

static int atomic_commit(atomic_file *a, char *err, size_t errlen)
{
    int e = 0;
    if (fflush(a->f) != 0 || ferror(a->f))
        e = errno ? errno : EIO;
    else if (a->tmp && fsync(fileno(a->f)) < 0)
        e = errno;
    if (fclose(a->f) != 0 && !e)
        e = errno;
    a->f = NULL;
    if (!e && a->tmp && rename(a->tmp, a->path) < 0)
        e = errno;
    if (e) {
        trc_seterr(err, errlen, "%s: write failed: %s", a->path, strerror(e));
        if (a->tmp)
            unlink(a->tmp);
    }
    free(a->tmp);
    return e ? -1 : 0;
}

/* ---- shared helpers ---- */

/* "name", "name+off" or the hex address. */
static void data_label(weft_symbols *syms, uint64_t addr, char *out, size_t n)
{
    const char *name;
    uint64_t off;
    if (syms && weft_symbols_data(syms, addr, &name, &off) == 0 && name) {
        if (off)
            snprintf(out, n, "%s+%" PRIu64, name, off);
        else
            snprintf(out, n, "%s", name);
    } else {
        snprintf(out, n, "0x%" PRIx64, addr);
    }
}

static void pc_info(weft_symbols *syms, uint64_t pc, const char **fn, const char **file, int *line)
{
    *fn = *file = NULL;
    *line = 0;
    if (syms && pc)
        weft_symbols_pc(syms, pc, fn, file, line);
}

/* Length of a valid UTF-8 sequence at s, 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
    if (s[0] >= 0xf5 || (s[0] >= 0xc0 && s[0] < 0xc2))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* JSON string with escapes; bytes that are not UTF-8 (paths, argv) are
 * written as the Latin-1 code point so the output always parses. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p++);
        } else if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p++);
        } else if (*p < 0x80) {
            fputc(*p++, f);
        } else {
            size_t n = utf8_len(p);
            if (n) {
                fwrite(p, 1, n, f);
                p += n;
            } else {
                fprintf(f, "\\u%04x", *p++);
            }
        }
    }
    fputc('"', f);
}

static void ts_us(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* ---- Chrome / Perfetto ---- */

/* Name of a non-access event, with its argument (see weft_event_kind). */
static void other_label(const weft_event *ev, char *out, size_t n)
{
    const char *k = weft_event_kind_name(ev->kind);
    switch (ev->kind) {
    case WEFT_EV_THREAD_START:
        snprintf(out, n, "%s (by %s)", k, trc_thread_label(ev->addr).s);
        break;
    case WEFT_EV_THREAD_EXIT:
        snprintf(out, n, "%s (code %" PRId64 ")", k, (int64_t)ev->addr);
        break;
    case WEFT_EV_SYSCALL:
        snprintf(out, n, "%s %" PRIu64, k, ev->addr);
        break;
    case WEFT_EV_DELAY:
        snprintf(out, n, "%s %" PRIu64 " ns", k, ev->addr);
        break;
    default:
        snprintf(out, n, "%s 0x%" PRIx64, k, ev->addr);
    }
}

typedef struct last_write {
    uint64_t time;
    uint32_t thread;
} last_write;

/* Every write's predecessor at its address, to find conflicts in one pass. */
typedef struct last_writes {
    trc_addrmap index; /* address -> position in lw */
    last_write *lw;
    size_t n, cap;
    uint64_t flow_id; /* the last flow's id: a viewer pairs a flow's ends by it */
} last_writes;

static void last_writes_free(last_writes *w)
{
    trc_addrmap_free(&w->index);
    free(w->lw);
}

/* The process's and every track's name, and their order: without a sort
 * index viewers order tracks by first event, which moves them around from
 * trace to trace. The last track (tid nthreads) holds the conflicts. */
static void chrome_metadata(FILE *f, const weft_trace_summary *s, const weft_trace_meta *m)
{
    fprintf(f, "{\"traceEvents\":[\n");
    fprintf(f, "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":");
    json_str(f, m->binary_path);
    fprintf(f, "}}");
    for (uint32_t i = 0; i <= s->nthreads; i++) {
        char name[64];
        if (i < s->nthreads && s->threads[i].tid)
            snprintf(name, sizeof name, "T%u (tid %" PRIu64 ")", i, s->threads[i].tid);
        else if (i < s->nthreads)
            snprintf(name, sizeof name, "T%u", i);
        else
            snprintf(name, sizeof name, "conflicts");
        fprintf(f,
                ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"name\":\"thread_name\",\"args\":{"
                "\"name\":\"%s\"}}",
                i, name);
        fprintf(f,
                ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"name\":\"thread_sort_index\","
                "\"args\":{\"sort_index\":%u}}",
                i, i);
    }
}

/* A complete event per thread spanning its life, so a track shows when the
 * thread existed even where it recorded nothing. */
static void chrome_lifetimes(FILE *f, const weft_trace_summary *s)
{
    for (uint32_t i = 0; i < s->nthreads; i++) {
        const weft_trace_thread *th = &s->threads[i];
        uint64_t end = th->end_time > th->start_time ? th->end_time : th->start_time;
        fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"cat\":\"thread\",\"name\":\"T%u\",", i,
                i);
        fprintf(f, "\"ts\":");
        ts_us(f, th->start_time);
        fprintf(f, ",\"dur\":");
        ts_us(f, end - th->start_time);
        fprintf(f,
                ",\"args\":{\"tid\":\"%s\",\"parent\":\"%s\",\"insns\":%" PRIu64
                ",\"events\":%" PRIu64 "}}",
                trc_tid_label(th->tid).s, trc_thread_label(th->parent).s, th->insns, th->events);
    }
}

/* An event's details, shown when it is selected: the raw values beside the
 * symbolized ones, since a label may be cut or a symbol ambiguous. */
static void chrome_event_args(FILE *f, weft_symbols *syms, const weft_event *ev)
{
    const char *fn, *file;
    int line;
    fprintf(f, ",\"args\":{\"seq\":%" PRIu64 ",", ev->seq);
    if (ev->kind == WEFT_EV_THREAD_START) /* addr is the creator: T<i> or "-" */
        fprintf(f, "\"creator\":\"%s\"", trc_thread_label(ev->addr).s);
    else
        fprintf(f, "\"addr\":\"0x%" PRIx64 "\"", ev->addr);
    fprintf(f, ",\"size\":%u", ev->size);
    if (ev->pc)
        fprintf(f, ",\"pc\":\"0x%" PRIx64 "\"", ev->pc);
    if (ev->flags)
        fprintf(f, ",\"flags\":%u", ev->flags);
    pc_info(syms, ev->pc, &fn, &file, &line);
    if (fn) {
        fprintf(f, ",\"function\":");
        json_str(f, fn);
    }
    if (file) {
        fprintf(f, ",\"file\":");
        json_str(f, file);
        fprintf(f, ",\"line\":%d", line);
    }
    fprintf(f, "}}");
}

/* One event as an instant on its thread's track; its label (the variable
 * or the event's argument) is left in label for the conflict it may start. */
static void chrome_event(FILE *f, weft_symbols *syms, const weft_event *ev, char *label,
                         size_t labellen)
{
    if (weft_event_is_access(ev->kind))
        data_label(syms, ev->addr, label, labellen);
    else
        other_label(ev, label, labellen);
    const char *cat = ev->kind == WEFT_EV_READ      ? "read"
                      : weft_event_writes(ev->kind) ? "write"
                                                    : weft_event_kind_name(ev->kind);
    const char *letter = ev->kind == WEFT_EV_READ    ? "R "
                         : ev->kind == WEFT_EV_WRITE ? "W "
                         : ev->kind == WEFT_EV_RMW   ? "M "
                                                     : "";
    fprintf(f, ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":%u,\"ts\":", ev->thread);
    ts_us(f, ev->time);
    fprintf(f, ",\"cat\":\"%s\",\"name\":", cat);
    char name[300];
    snprintf(name, sizeof name, "%s%s", letter, label);
    json_str(f, name);
    chrome_event_args(f, syms, ev);
}

/* A conflict: an instant on the conflicts track, and a flow arrow from the
 * first write to the second, which is what a viewer makes easy to follow. */
static void chrome_conflict(FILE *f, uint32_t ctid, const last_write *p, const weft_event *ev,
                            const char *label, uint64_t flow_id)
{
    uint64_t gap = ev->time - p->time;
    char name[300];
    fprintf(f, ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":%u,\"ts\":", ctid);
    ts_us(f, ev->time);
    snprintf(name, sizeof name, "%s W-W %s", gap ? "near" : "aligned", label);
    fprintf(f, ",\"cat\":\"conflict\",\"name\":");
    json_str(f, name);
    fprintf(f,
            ",\"args\":{\"addr\":\"0x%" PRIx64 "\",\"first\":\"T%u\",\"second\":"
            "\"T%u\",\"gap_ns\":%" PRIu64 "}}",
            ev->addr, p->thread, ev->thread, gap);
    fprintf(f,
            ",\n{\"ph\":\"s\",\"pid\":1,\"tid\":%u,\"id\":%" PRIu64
            ",\"cat\":\"conflict\",\"name\":\"W-W\",\"ts\":",
            p->thread, flow_id);
    ts_us(f, p->time);
    fprintf(f,
            "},\n{\"ph\":\"f\",\"bp\":\"e\",\"pid\":1,\"tid\":%u,\"id\":%" PRIu64
            ",\"cat\":\"conflict\",\"name\":\"W-W\",\"ts\":",
            ev->thread, flow_id);
    ts_us(f, ev->time);
    fprintf(f, "}");
}

/* Conflict: this write and the previous write to the address came from
 * different threads within the window. -1: out of memory. */
static int chrome_write(FILE *f, last_writes *w, uint32_t ctid, const weft_event *ev,
                        const char *label)
{
    bool ins;
    uint64_t *ix = trc_addrmap_get(&w->index, ev->addr, &ins);
    if (!ix)
        return -1;
    if (ins) {
        if (w->n == w->cap) {
            size_t cap = w->cap ? w->cap * 2 : 256;
            last_write *v = realloc(w->lw, cap * sizeof *v);
            if (!v)
                return -1;
            w->lw = v;
            w->cap = cap;
        }
        *ix = w->n++;
    } else {
        const last_write *p = &w->lw[*ix];
        if (p->thread != ev->thread && ev->time - p->time <= WEFT_CONFLICT_WINDOW_NS)
            chrome_conflict(f, ctid, p, ev, label, ++w->flow_id);
    }
    w->lw[*ix] = (last_write){ev->time, ev->thread};
    return 0;
}

static int export_chrome(weft_trace *t, weft_symbols *syms, FILE *f)
{
    const weft_trace_summary *s = weft_trace_get_summary(t);
    const weft_trace_meta *m = weft_trace_get_meta(t);
    chrome_metadata(f, s, m);
    chrome_lifetimes(f, s);
    last_writes w = {0};
    weft_event ev;
    int r;
    while ((r = weft_trace_next(t, &ev)) == 1) {
        char label[256];
        chrome_event(f, syms, &ev, label, sizeof label);
        if (weft_event_writes(ev.kind) && chrome_write(f, &w, s->nthreads, &ev, label) < 0) {
            last_writes_free(&w);
            return -2;
        }
    }
    fprintf(f, "\n],\n\"displayTimeUnit\":\"ns\",\"otherData\":{\"binary\":");
    json_str(f, m->binary_path);
    fprintf(f, ",\"conflict_window_ns\":%d}}\n", WEFT_CONFLICT_WINDOW_NS);
    last_writes_free(&w);
    return r < 0 ? -1 : 0;
}

/* ---- VCD ---- */

/* VCD identifiers: printable ASCII from '!' in base 94. */
static void vcd_id(uint32_t n, char *out)
{
    size_t k = 0;
    do {
        out[k++] = (char)('!' + n % 94);
        n /= 94;
    } while (n);
    out[k] = 0;
}

static void vcd_bits(FILE *f, uint64_t v, const char *id)
{
    fputc('b', f);
    int top = 63;
    while (top > 0 && !(v >> top))
        top--;
    for (int i = top; i >= 0; i--)
        fputc('0' + (int)((v >> i) & 1), f);
    fprintf(f, " %s\n", id);
}

typedef struct edge {
    uint64_t time;
    uint32_t thread;
    int up;
} edge;

static int edge_cmp(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    if (x->up != y->up) /* a thread that ends as another starts: down first */
        return x->up - y->up;
    return x->thread < y->thread ? -1 : x->thread > y->thread;
}

static void vcd_time(FILE *f, uint64_t t, uint64_t *cur, bool *any)
{
    if (!*any || t != *cur)
        fprintf(f, "#%" PRIu64 "\n", t);
    *cur = t;
    *any = true;
}

static int export_vcd(weft_trace *t, FILE *f)
{
    const weft_trace_summary *s = weft_trace_get_summary(t);
    const weft_trace_meta *m = weft_trace_get_meta(t);
    uint32_t n = s->nthreads;
    /* Four signals per thread: alive, raddr, waddr, writes. */
    char(*ids)[4][8] = calloc(n ? n : 1, sizeof *ids);
    edge *edges = calloc(2 * (size_t)(n ? n : 1), sizeof *edges);
    uint32_t *writes = calloc(n ? n : 1, sizeof *writes);
    if (!ids || !edges || !writes) {
        free(ids);
        free(edges);
        free(writes);
        return -2;
    }
    fprintf(f, "$comment weft trace of %s $end\n$version weft trace format %d $end\n",
            m->binary_path, (int)m->version);
    fprintf(f, "$timescale 1ns $end\n$scope module weft $end\n");
    static const char *const names[4] = {"alive", "raddr", "waddr", "writes"};
    static const int widths[4] = {1, 64, 64, 32};
    for (uint32_t i = 0; i < n; i++) {
        fprintf(f, "$scope module T%u $end\n", i);
        for (int k = 0; k < 4; k++) {
            vcd_id(i * 4 + (uint32_t)k, ids[i][k]);
            fprintf(f, "$var %s %d %s %s $end\n", k == 3 ? "integer" : "wire", widths[k], ids[i][k],
                    names[k]);
        }
        fprintf(f, "$upscope $end\n");
        edges[2 * i] = (edge){s->threads[i].start_time, i, 1};
        edges[2 * i + 1] =
            (edge){s->threads[i].end_time > s->threads[i].start_time ? s->threads[i].end_time
                                                                     : s->threads[i].start_time,
                   i, 0};
    }
    fprintf(f, "$upscope $end\n$enddefinitions $end\n#0\n$dumpvars\n");
    for (uint32_t i = 0; i < n; i++)
        fprintf(f, "0%s\nbx %s\nbx %s\nb0 %s\n", ids[i][0], ids[i][1], ids[i][2], ids[i][3]);
    fprintf(f, "$end\n");
    qsort(edges, 2 * (size_t)n, sizeof *edges, edge_cmp);

    size_t e = 0;
    uint64_t cur = 0;
    bool any = true; /* #0 already written */
    weft_event ev;
    int r;
    for (;;) {
        r = weft_trace_next(t, &ev);
        if (r < 0)
            break;
        /* Lifetime edges up to this event's time (or all of them at the end). */
        while (e < 2 * (size_t)n && (r == 0 || edges[e].time <= ev.time)) {
            vcd_time(f, edges[e].time, &cur, &any);
            fprintf(f, "%d%s\n", edges[e].up, ids[edges[e].thread][0]);
            e++;
        }
        if (r == 0)
            break;
        if (!weft_event_is_access(ev.kind))
            continue;
        vcd_time(f, ev.time, &cur, &any);
        if (ev.kind != WEFT_EV_WRITE)
            vcd_bits(f, ev.addr, ids[ev.thread][1]);
        if (weft_event_writes(ev.kind)) {
            vcd_bits(f, ev.addr, ids[ev.thread][2]);
            vcd_bits(f, ++writes[ev.thread], ids[ev.thread][3]);
        }
    }
    free(ids);
    free(edges);
    free(writes);
    return r < 0 ? -1 : 0;
}

/* ---- CSV ---- */

static void csv_field(FILE *f, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int export_csv(weft_trace *t, weft_symbols *syms, FILE *f)
{
    fprintf(f, "time,thread,seq,kind,addr,size,pc,symbol,function,file,line\n");
    weft_event ev;
    int r;
    while ((r = weft_trace_next(t, &ev)) == 1) {
        fprintf(f, "%" PRIu64 ",%u,%" PRIu64 ",%s,", ev.time, ev.thread, ev.seq,
                weft_event_kind_name(ev.kind));
        if (ev.kind == WEFT_EV_THREAD_START && ev.addr >= UINT32_MAX)
            fputs("-", f);                        /* the main thread has no creator */
        else if (ev.kind == WEFT_EV_THREAD_START) /* the creator, a number like thread's */
            fprintf(f, "%" PRIu64, ev.addr);
        else
            fprintf(f, "0x%" PRIx64, ev.addr);
        fprintf(f, ",%u,0x%" PRIx64 ",", ev.size, ev.pc);
        if (syms && weft_event_is_access(ev.kind)) {
            const char *name;
            uint64_t off;
            if (weft_symbols_data(syms, ev.addr, &name, &off) == 0 && name) {
                char label[256];
                data_label(syms, ev.addr, label, sizeof label);
                csv_field(f, label);
            }
        }
        const char *fn, *file;
        int line;
        pc_info(syms, ev.pc, &fn, &file, &line);
        fputc(',', f);
        csv_field(f, fn);
        fputc(',', f);
        csv_field(f, file);
        if (file)
            fprintf(f, ",%d\n", line);
        else
            fputs(",\n", f);
    }
    return r < 0 ? -1 : 0;
}

int weft_trace_export(weft_trace *t, weft_symbols *syms, weft_export_format fmt,
                      const char *out_path, char *err, size_t errlen)
{
    if (!t || !out_path || !*out_path) {
        trc_seterr(err, errlen, "weft_trace_export: no trace or output path");
        return -1;
    }
    if (fmt != WEFT_EXPORT_CHROME && fmt != WEFT_EXPORT_VCD && fmt != WEFT_EXPORT_CSV) {
        trc_seterr(err, errlen, "%s: unknown export format %d", out_path, (int)fmt);
        return -1;
    }
    atomic_file a;
    if (atomic_open(&a, out_path, err, errlen) < 0)
        return -1;
    weft_trace_rewind(t);
    int r = fmt == WEFT_EXPORT_CHROME ? export_chrome(t, syms, a.f)
            : fmt == WEFT_EXPORT_VCD  ? export_vcd(t, a.f)
                                      : export_csv(t, syms, a.f);
    if (r < 0) {
        if (r == -1)
            trc_seterr(err, errlen, "%s", weft_trace_error(t));
        else
            trc_seterr(err, errlen, "%s: out of memory", out_path);
        atomic_discard(&a);
        return -1;
    }
    return atomic_commit(&a, err, errlen);
}
