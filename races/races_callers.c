/* Where the program was: a race whose access is inside the C library (a
 * use after free races with _int_free, a copy with memcpy) named only the
 * library's function, not the program's line that freed or copied. One
 * more pass over the trace gives each such access its thread's last
 * recorded access with a source line before it: the call itself records
 * nothing, so that is the last access before the call, which may be some
 * lines up. */
#include <stdlib.h>

#include "races_state.h"

typedef struct query {
    uint32_t thread;
    uint64_t seq;
    weft_race_access *side;
} query;

static int cmp_query(const void *a, const void *b)
{
    const query *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int has_line(weft_symbols *syms, uint64_t pc)
{
    const char *fn = NULL, *file = NULL;
    int line = 0;
    return weft_symbols_pc(syms, pc, &fn, &file, &line) == 0 && file && line > 0;
}

int weft_races_find_callers(weft_races *d, weft_trace *t, weft_symbols *syms, char *err,
                            size_t errlen)
{
    if (!syms || !d->nraces)
        return 0;
    query *q = calloc(2 * d->nraces, sizeof *q);
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t n = 0;
    uint32_t nth = 0;
    for (size_t i = 0; i < d->nraces; i++) {
        weft_race_access *sides[2] = {&d->races[i].race.first, &d->races[i].race.second};
        for (int k = 0; k < 2; k++)
            if (!has_line(syms, sides[k]->pc)) {
                q[n++] = (query){sides[k]->thread, sides[k]->seq, sides[k]};
                if (sides[k]->thread + 1 > nth)
                    nth = sides[k]->thread + 1;
            }
    }
    if (!n) {
        free(q);
        return 0;
    }
    qsort(q, n, sizeof *q, cmp_query);
    /* Per thread: its first query's index and its last pc with a line. */
    size_t *next = calloc(nth, sizeof *next);
    uint64_t *last = calloc(nth, sizeof *last);
    if (!next || !last) {
        free(q);
        free(next);
        free(last);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (uint32_t th = 0; th < nth; th++)
        next[th] = n;
    for (size_t i = n; i-- > 0;)
        next[q[i].thread] = i;
    size_t open = n;
    weft_event ev;
    int rc = 0;
    weft_trace_rewind(t);
    while (open && (rc = weft_trace_next(t, &ev)) == 1) {
        uint32_t th = ev.thread;
        if (th >= nth || next[th] >= n || q[next[th]].thread != th)
            continue;
        /* Answered at the access itself: what came before it. */
        while (next[th] < n && q[next[th]].thread == th && q[next[th]].seq <= ev.seq) {
            q[next[th]].side->from_pc = last[th];
            next[th]++;
            open--;
        }
        if (ev.pc && has_line(syms, ev.pc))
            last[th] = ev.pc;
    }
    free(q);
    free(next);
    free(last);
    if (open && rc < 0) {
        snprintf(err, errlen, "%s", weft_trace_error(t));
        return -1;
    }
    return 0;
}
