/* Printing the races: text for people, JSON for tools (docs/races.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "races_state.h"

static const char *kind_name(const weft_race_access *a)
{
    return weft_event_kind_name(a->kind);
}

/* "counter", "C.ready", "counter+8" or the address in hex. */
static void describe_addr(weft_symbols *syms, uint64_t addr, char *out, size_t len)
{
    weft_symbols_data_name(syms, addr, out, len);
}

/* "worker (lost_update.c:21)", "memcpy", "libc.so.6" (a library's pc
 * without a symbol), "plzip+0x8344" (a stripped program's, at its link
 * address, for objdump) or "?". */
static void describe_pc(weft_symbols *syms, const char *binary, uint64_t pc, char *out, size_t len)
{
    const char *fn = NULL, *file = NULL;
    int line = 0;
    if (syms && weft_symbols_pc(syms, pc, &fn, &file, &line) != 0)
        fn = weft_symbols_object_of(syms, pc);
    if (file && line > 0) {
        snprintf(out, len, "%s (%s:%d)", fn ? fn : "?", file, line);
    } else if (!fn && syms && binary) {
        const char *base = strrchr(binary, '/');
        snprintf(out, len, "%s+0x%" PRIx64, base ? base + 1 : binary,
                 pc - (uint64_t)weft_symbols_bias(syms));
    } else {
        snprintf(out, len, "%s", fn ? fn : "?");
    }
}

static void print_side(FILE *out, weft_symbols *syms, const char *binary, const weft_race_access *a)
{
    char where[1024], from[1024] = "";
    describe_pc(syms, binary, a->pc, where, sizeof where);
    if (a->from_pc) { /* in the library: where the program last was before it */
        static const char lead[] = ", last in the program at ";
        memcpy(from, lead, sizeof lead);
        describe_pc(syms, binary, a->from_pc, from + sizeof lead - 1,
                    sizeof from - sizeof lead + 1);
    }
    fprintf(out,
            "  T%-3" PRIu32 " %s%-5s %2u bytes at %" PRIu64 " ns (seq %" PRIu64 "), pc 0x%" PRIx64
            " in %s%s\n",
            a->thread, a->atomic ? "atomic " : "", kind_name(a), a->size, a->time, a->seq, a->pc,
            where, from);
}

static void print_header(FILE *out, weft_races *d, const weft_races_source *src)
{
    weft_races_stats st;
    weft_races_get_stats(d, &st);
    fprintf(out, "weft races: %s", src && src->trace ? src->trace : "(events)");
    if (src && src->meta && src->meta->binary_path)
        fprintf(out, " (%s)", src->meta->binary_path);
    fprintf(out,
            ": %u threads, %" PRIu64 " events, %" PRIu64 " accesses checked (%" PRIu64
            " atomic), %" PRIu64 " happens-before edges\n",
            st.threads, st.events, st.accesses, st.atomics, st.syncs);
    if (src && src->summary && (src->summary->flags & WEFT_TRACE_TRUNCATED))
        fprintf(out, "weft races: note: the trace is truncated: only its events are checked\n");
    if (src && !src->decoded)
        fprintf(out, "weft races: note: without the program's code every atomic access counts "
                     "as acquire and release, which may order (and hide) races: pass --binary\n");
}

int weft_races_print(weft_races *d, const weft_races_source *src, weft_symbols *syms, FILE *out)
{
    print_header(out, d, src);
    size_t n = weft_races_count(d);
    for (size_t i = 0; i < n; i++) {
        const weft_race *r = weft_races_get(d, i);
        char var[512];
        describe_addr(syms, r->addr, var, sizeof var);
        fprintf(out, "race %zu on %s", i + 1, var);
        if (var[0] != '0')
            fprintf(out, " (0x%" PRIx64 ")", r->addr);
        else if (r->stack_of != UINT32_MAX)
            fprintf(out, " (a local on T%" PRIu32 "'s stack)", r->stack_of);
        fprintf(out, ": %" PRIu64 " instance%s, the first:\n", r->count, r->count == 1 ? "" : "s");
        const char *binary = src && src->meta ? src->meta->binary_path : NULL;
        print_side(out, syms, binary, &r->first);
        print_side(out, syms, binary, &r->second);
    }
    const uint64_t *pcs;
    size_t npcs = weft_races_pcs(d, &pcs);
    if (n)
        fprintf(out, "weft races: %zu race%s (pairs of pcs) between %zu pcs\n", n,
                n == 1 ? "" : "s", npcs);
    else
        fprintf(out, "weft races: no data race in the traced schedule\n");
    return fflush(out) != 0 || ferror(out) ? -1 : 0;
}

/* ---- JSON ----------------------------------------------------------------------- */

static json_t *hex(uint64_t x)
{
    char s[24];
    snprintf(s, sizeof s, "0x%" PRIx64, x);
    return json_string(s);
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *side_json(weft_symbols *syms, const weft_race_access *a)
{
    const char *fn = NULL, *file = NULL;
    int line = 0;
    if (syms)
        weft_symbols_pc(syms, a->pc, &fn, &file, &line);
    json_t *from = json_null();
    const char *ffn = NULL, *ffile = NULL;
    int fline = 0;
    if (syms && a->from_pc && weft_symbols_pc(syms, a->from_pc, &ffn, &ffile, &fline) == 0)
        from = json_pack("{s:o, s:o, s:o, s:o}", "pc", hex(a->from_pc), "function",
                         str_or_null(ffn), "file", str_or_null(ffile), "line",
                         fline > 0 ? json_integer(fline) : json_null());
    return json_pack("{s:I, s:s, s:b, s:i, s:o, s:o, s:o, s:o, s:I, s:I, s:o}", "thread",
                     (json_int_t)a->thread, "kind", kind_name(a), "atomic", a->atomic, "size",
                     (int)a->size, "pc", hex(a->pc), "function", str_or_null(fn), "file",
                     str_or_null(file), "line", line > 0 ? json_integer(line) : json_null(), "time",
                     (json_int_t)a->time, "seq", (json_int_t)a->seq, "last_in_program",
                     from ? from : json_null());
}

static json_t *race_json(weft_symbols *syms, const weft_race *r)
{
    const char *name = NULL;
    uint64_t off = 0;
    if (!syms || weft_symbols_data(syms, r->addr, &name, &off) != 0)
        name = NULL, off = 0;
    char shown[256];
    weft_symbols_data_name(syms, r->addr, shown, sizeof shown);
    return json_pack("{s:o, s:I, s:s, s:o, s:o, s:I, s:o, s:o}", "variable", str_or_null(name),
                     "offset", (json_int_t)off, "shown", shown, "address", hex(r->addr), "stack_of",
                     r->stack_of == UINT32_MAX ? json_null() : json_integer(r->stack_of), "count",
                     (json_int_t)r->count, "first", side_json(syms, &r->first), "second",
                     side_json(syms, &r->second));
}

static json_t *report_json(weft_races *d, const weft_races_source *src, weft_symbols *syms)
{
    weft_races_stats st;
    weft_races_get_stats(d, &st);
    const weft_trace_meta *m = src ? src->meta : NULL;
    char id[2 * 64 + 1] = "";
    for (uint32_t i = 0; m && i < m->build_id_len && i < 64; i++)
        snprintf(id + 2 * i, 3, "%02x", m->build_id[i]);
    json_t *races = json_array(), *pcs = json_array();
    const uint64_t *pc;
    size_t npcs = weft_races_pcs(d, &pc);
    for (size_t i = 0; races && i < weft_races_count(d); i++)
        json_array_append_new(races, race_json(syms, weft_races_get(d, i)));
    for (size_t i = 0; pcs && i < npcs; i++)
        json_array_append_new(pcs, hex(pc[i]));
    return json_pack("{s:s, s:i, s:o, s:{s:o, s:s}, s:b, s:{s:I, s:I, s:I, s:I, s:I}, s:o, s:o}",
                     "format", "weft-races", "version", 1, "trace",
                     str_or_null(src ? src->trace : NULL), "program", "path",
                     str_or_null(m ? m->binary_path : NULL), "build_id", id, "decoded",
                     src ? src->decoded : 0, "stats", "threads", (json_int_t)st.threads, "events",
                     (json_int_t)st.events, "accesses", (json_int_t)st.accesses, "atomics",
                     (json_int_t)st.atomics, "happens_before_edges", (json_int_t)st.syncs, "races",
                     races, "pcs", pcs);
}

static char *json_text(weft_races *d, const weft_races_source *src, weft_symbols *syms)
{
    json_t *root = report_json(d, src, syms);
    char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *t = realloc(text, n + 2);
    if (!t) {
        free(text);
        return NULL;
    }
    t[n] = '\n', t[n + 1] = 0;
    return t;
}

static char *plain_text(weft_races *d, const weft_races_source *src, weft_symbols *syms)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return NULL;
    int rc = weft_races_print(d, src, syms, m);
    if (fclose(m) != 0 || rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int weft_races_write(weft_races *d, const weft_races_source *src, weft_symbols *syms,
                     weft_races_format fmt, const char *path, char *err, size_t errlen)
{
    /* Whole in memory first, so that a file appears complete or not at all. */
    char *t = fmt == WEFT_RACES_JSON ? json_text(d, src, syms) : plain_text(d, src, syms);
    if (!t)
        return races_fail(err, errlen, "%s: out of memory", path ? path : "stdout");
    int rc = 0;
    if (path)
        rc = weft_write_atomic(path, t, strlen(t), err, errlen);
    else if (fputs(t, stdout) < 0 || fflush(stdout) != 0)
        rc = races_fail(err, errlen, "stdout: write failed: %s", strerror(errno));
    free(t);
    return rc;
}
