/* The part of weft optimize that weft inject shares: which trace events the
 * interference model sees, symbol lookups, and the order thread creation
 * imposes on events. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "weft/optimizer.h"

int opt_filter_add_var(opt_filter *f, weft_symbols *syms, const char *binary, const char *name)
{
    uint64_t addr = 0, size = 0;
    if (f->nranges >= OPT_MAX_VARS) {
        weft_error("--var: at most %d variables", OPT_MAX_VARS);
        return -1;
    }
    if (!syms) {
        weft_error("--var %s: cannot read the symbols of the traced binary %s", name, binary);
        return -1;
    }
    if (weft_symbols_lookup(syms, name, &addr, &size) != 0) {
        weft_error("--var %s: no global variable of that name in %s", name, binary);
        return -1;
    }
    f->lo[f->nranges] = addr;
    f->hi[f->nranges] = addr + (size ? size : 1);
    f->nranges++;
    return 0;
}

static int cmp_pc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int keep_event(const opt_filter *f, const weft_event *e)
{
    if (e->kind == WEFT_EV_THREAD_START)
        return 1; /* threads without accesses still count */
    if (!weft_event_is_access(e->kind))
        return 0;
    if (!f->atomics && (e->flags & (WEFT_EVF_ATOMIC | WEFT_EVF_EXCLUSIVE)))
        return 0;
    if (f->npcs && !bsearch(&e->pc, f->pcs, f->npcs, sizeof *f->pcs, cmp_pc))
        return 0;
    if (!f->nranges)
        return 1;
    for (size_t i = 0; i < f->nranges; i++)
        if (e->addr >= f->lo[i] && e->addr < f->hi[i])
            return 1;
    return 0;
}

optimizer_model *opt_model_load(weft_trace *t, const opt_filter *f, const optimizer_options *o,
                                char *err, size_t errlen)
{
    size_t cap = 4096, n = 0;
    weft_event *ev = malloc(cap * sizeof *ev), e;
    if (!ev) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    weft_trace_rewind(t);
    int rc;
    while ((rc = weft_trace_next(t, &e)) == 1) {
        if (!keep_event(f, &e))
            continue;
        if (n == cap) {
            weft_event *p = realloc(ev, 2 * cap * sizeof *ev);
            if (!p) {
                free(ev);
                snprintf(err, errlen, "out of memory");
                return NULL;
            }
            ev = p, cap *= 2;
        }
        ev[n++] = e;
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", weft_trace_error(t));
        free(ev);
        return NULL;
    }
    optimizer_model *m = optimizer_model_from_events(ev, n, o, err, errlen);
    free(ev);
    return m;
}

int opt_ordered_by_creation(const weft_trace_summary *s, uint32_t ta, uint64_t time_a, uint32_t tb,
                            uint64_t time_b)
{
    (void)time_b;
    if (ta == tb || tb >= s->nthreads)
        return 0;
    /* Walk up from tb: the child of ta on that path was cloned at its start
     * time, in ta's own time; an event of ta before it precedes the clone. */
    uint32_t x = tb;
    for (uint32_t hops = 0; hops < s->nthreads; hops++) {
        uint32_t p = s->threads[x].parent;
        if (p == UINT32_MAX || p >= s->nthreads)
            return 0;
        if (p == ta)
            return time_a <= s->threads[x].start_time;
        x = p;
    }
    return 0;
}

void opt_describe_pc(weft_symbols *syms, uint64_t pc, char *buf, size_t len)
{
    const char *fn = NULL, *file = NULL;
    int line = 0;
    if (syms && weft_symbols_pc(syms, pc, &fn, &file, &line) == 0 && fn) {
        if (file && line > 0)
            snprintf(buf, len, "%s (%s:%d)", fn, file, line);
        else
            snprintf(buf, len, "%s", fn);
    } else {
        snprintf(buf, len, "pc 0x%" PRIx64, pc);
    }
}

void opt_describe_addr(weft_symbols *syms, uint64_t addr, char *buf, size_t len)
{
    const char *name = NULL;
    uint64_t off = 0;
    if (syms && weft_symbols_data(syms, addr, &name, &off) == 0 && name) {
        if (off)
            snprintf(buf, len, "%s+%" PRIu64, name, off);
        else
            snprintf(buf, len, "%s", name);
    } else {
        snprintf(buf, len, "0x%" PRIx64, addr);
    }
}

void opt_symbolize_injection(weft_symbols *syms, uint64_t addr, optimizer_injection *inj)
{
    if (!syms)
        return;
    const char *fn = NULL, *file = NULL, *name = NULL;
    int line = 0;
    uint64_t off = 0;
    if (weft_symbols_pc(syms, inj->pc, &fn, &file, &line) == 0) {
        inj->function = (char *)fn;
        inj->file = (char *)file;
        inj->line = line > 0 ? (uint32_t)line : 0;
        if (!file)
            inj->line = 0;
    }
    if (weft_symbols_data(syms, addr, &name, &off) == 0 && name) {
        inj->variable = (char *)name;
        inj->offset = off;
    }
}
