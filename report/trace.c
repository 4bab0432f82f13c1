/* A trace held in memory for the report: its events, which addresses are
 * shared, and the numbers of the summary as Bhattacharya et al. tabulate
 * their programs (threads, events, the per-thread read/write pattern of the
 * variables two threads write). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* A page cannot show more, and a spinning guest writes millions of events in
 * seconds: the report reads the first this many (40 MB) and says so. */
#define REPORT_MAX_EVENTS (1u << 20)

typedef struct addr_info {
    uint32_t first_acc, first_wr; /* UINT32_MAX: none yet */
    uint8_t cls;
} addr_info;

static size_t slot_of(const uint64_t *keys, size_t mask, uint64_t addr)
{
    size_t h = (size_t)((addr >> 3) * 0x9E3779B97F4A7C15ull) & mask;
    while (keys[h] != addr && keys[h] != UINT64_MAX)
        h = (h + 1) & mask;
    return h;
}

unsigned report_trace_addr_class(const report_trace *rt, uint64_t addr)
{
    if (!rt->keys)
        return 0;
    size_t h = slot_of(rt->keys, rt->mask, addr);
    return rt->keys[h] == addr ? rt->cls[h] : 0;
}

static int plain_write(const weft_event *e)
{
    return weft_event_writes(e->kind) && !(e->flags & (WEFT_EVF_ATOMIC | WEFT_EVF_EXCLUSIVE));
}

/* Classify every accessed address in one pass. */
static int classify(report_trace *rt, char *err, size_t errlen)
{
    size_t cap = 1024;
    while (cap < 2 * rt->n + 16)
        cap *= 2;
    rt->keys = malloc(cap * sizeof *rt->keys);
    rt->cls = calloc(cap, 1);
    addr_info *info = malloc(cap * sizeof *info);
    if (!rt->keys || !rt->cls || !info) {
        free(info);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(rt->keys, 0xff, cap * sizeof *rt->keys);
    rt->mask = cap - 1;
    for (size_t i = 0; i < rt->n; i++) {
        const weft_event *e = &rt->ev[i];
        if (!weft_event_is_access(e->kind))
            continue;
        size_t h = slot_of(rt->keys, rt->mask, e->addr);
        if (rt->keys[h] == UINT64_MAX) {
            rt->keys[h] = e->addr;
            info[h] = (addr_info){e->thread, UINT32_MAX, 0};
        }
        addr_info *a = &info[h];
        if (a->first_acc != e->thread)
            a->cls |= REPORT_ADDR_SHARED;
        if (plain_write(e)) {
            if (a->first_wr == UINT32_MAX)
                a->first_wr = e->thread;
            else if (a->first_wr != e->thread)
                a->cls |= REPORT_ADDR_WW;
        }
    }
    for (size_t h = 0; h <= rt->mask; h++) {
        if (rt->keys[h] == UINT64_MAX)
            continue;
        rt->cls[h] = info[h].cls;
        rt->shared_addrs += (info[h].cls & REPORT_ADDR_SHARED) != 0;
        rt->ww_addrs += (info[h].cls & REPORT_ADDR_WW) != 0;
    }
    free(info);
    return 0;
}

/* "RWRWRW" -> "(RW)x3": the longest repetition of a unit of 1..4 letters
 * at each position. */
static void compress(const char *s, char *out, size_t len)
{
    size_t n = strlen(s), o = 0;
    for (size_t i = 0; i < n && o + 16 < len;) {
        size_t best_p = 1, best_r = 1;
        for (size_t p = 1; p <= 4 && i + p <= n; p++) {
            size_t r = 1;
            while (i + (r + 1) * p <= n && !memcmp(s + i, s + i + r * p, p))
                r++;
            if (r >= 2 && p * r > best_p * best_r && (p == 1 ? r >= 3 : 1))
                best_p = p, best_r = r;
        }
        if (best_r >= 2) {
            o += (size_t)snprintf(out + o, len - o, best_p > 1 ? "(%.*s)x%zu" : "%.*sx%zu",
                                  (int)best_p, s + i, best_r);
            i += best_p * best_r;
        } else {
            out[o++] = s[i++];
            out[o] = 0;
        }
        if (o + 16 >= len && i < n) {
            snprintf(out + o, len - o, "...");
            return;
        }
    }
    out[o < len ? o : len - 1] = 0;
}

static void describe_var(report_trace *rt, report_var *v)
{
    weft_symbols_data_name(rt->syms, v->addr, v->name, sizeof v->name);
    uint32_t nt = rt->sum->nthreads;
    size_t cap = 4096;
    char *seq = malloc((size_t)nt * cap);
    size_t *used = calloc(nt ? nt : 1, sizeof *used);
    if (!seq || !used) {
        free(seq), free(used);
        return;
    }
    for (size_t i = 0; i < rt->n; i++) {
        const weft_event *e = &rt->ev[i];
        if (e->addr != v->addr || !weft_event_is_access(e->kind) || e->thread >= nt)
            continue;
        if (used[e->thread] + 1 < cap)
            seq[(size_t)e->thread * cap + used[e->thread]++] = e->kind == WEFT_EV_READ    ? 'R'
                                                               : e->kind == WEFT_EV_WRITE ? 'W'
                                                                                          : 'M';
    }
    size_t o = 0;
    for (uint32_t t = 0; t < nt && o + 40 < sizeof v->pattern; t++) {
        if (!used[t])
            continue;
        char *s = seq + (size_t)t * cap, c[256];
        s[used[t]] = 0;
        compress(s, c, sizeof c);
        o += (size_t)snprintf(v->pattern + o, sizeof v->pattern - o, "%sT%u %s", o ? ", " : "", t,
                              c);
    }
    free(seq);
    free(used);
}

int report_trace_load(const char *path, report_trace *rt, char *err, size_t errlen)
{
    memset(rt, 0, sizeof *rt);
    rt->t = weft_trace_open(path, err, errlen);
    if (!rt->t)
        return -1;
    rt->meta = weft_trace_get_meta(rt->t);
    rt->sum = weft_trace_get_summary(rt->t);
    char serr[256];
    if (rt->meta->binary_path)
        rt->syms = weft_symbols_open_run(rt->meta->binary_path, rt->meta, serr, sizeof serr);
    uint64_t total = weft_trace_event_count(rt->t);
    rt->total = total;
    size_t cap = total < REPORT_MAX_EVENTS ? (size_t)total : REPORT_MAX_EVENTS;
    rt->ev = malloc((cap ? cap : 1) * sizeof *rt->ev);
    if (!rt->ev) {
        snprintf(err, errlen, "%s: out of memory for %llu events", path, (unsigned long long)total);
        report_trace_free(rt);
        return -1;
    }
    weft_event e;
    int rc;
    while (rt->n < cap && (rc = weft_trace_next(rt->t, &e)) == 1) {
        rt->ev[rt->n++] = e;
        if (e.kind == WEFT_EV_READ)
            rt->reads++;
        else if (e.kind == WEFT_EV_WRITE)
            rt->writes++;
        else if (e.kind == WEFT_EV_RMW)
            rt->rmw++;
        else if (e.kind != WEFT_EV_DELAY)
            rt->sync++;
    }
    if (classify(rt, err, errlen)) {
        report_trace_free(rt);
        return -1;
    }
    /* The variables of the pattern: plainly written by 2+ threads, by address. */
    for (size_t h = 0; h <= rt->mask; h++) {
        if (!(rt->cls[h] & REPORT_ADDR_WW))
            continue;
        size_t k = rt->nvars < REPORT_MAX_VARS ? rt->nvars++ : REPORT_MAX_VARS;
        if (k == REPORT_MAX_VARS) {
            /* keep the lowest addresses: replace the highest if lower */
            size_t hi = 0;
            for (size_t j = 1; j < REPORT_MAX_VARS; j++)
                if (rt->vars[j].addr > rt->vars[hi].addr)
                    hi = j;
            if (rt->keys[h] > rt->vars[hi].addr)
                continue;
            k = hi;
        }
        rt->vars[k].addr = rt->keys[h];
    }
    for (size_t i = 1; i < rt->nvars; i++)
        for (size_t j = i; j > 0 && rt->vars[j].addr < rt->vars[j - 1].addr; j--) {
            report_var tmp = rt->vars[j];
            rt->vars[j] = rt->vars[j - 1];
            rt->vars[j - 1] = tmp;
        }
    for (size_t i = 0; i < rt->nvars; i++)
        describe_var(rt, &rt->vars[i]);
    return 0;
}

const weft_event *report_trace_find(const report_trace *rt, uint32_t thread, uint64_t seq)
{
    uint64_t k = 0;
    for (size_t i = 0; i < rt->n; i++) {
        const weft_event *e = &rt->ev[i];
        if (e->thread != thread || e->kind == WEFT_EV_DELAY)
            continue;
        if (k++ == seq)
            return e;
    }
    return NULL;
}

void report_trace_free(report_trace *rt)
{
    if (rt->syms)
        weft_symbols_close(rt->syms);
    if (rt->t)
        weft_trace_close(rt->t);
    free(rt->ev);
    free(rt->keys);
    free(rt->cls);
    memset(rt, 0, sizeof *rt);
}
