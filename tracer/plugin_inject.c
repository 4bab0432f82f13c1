/* Delay injection (weft inject): the plan's delays are applied just before
 * the planned event of the planned thread, by adding to the thread's time
 * offset, so that event and everything after it in that thread shift (seed
 * 004 Eq. 2). Events are matched by the thread's sequence number among
 * recorded events (as in the uninjected trace) and, as a check, by pc. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "plugin_state.h"

typedef struct injection {
    uint32_t thread;
    uint64_t seq, pc, delay_cycles;
    int state;          /* 0 pending, 1 applied, 2 missed: the thread went elsewhere */
    uint64_t at_cycles; /* thread time when applied */
    uint64_t trace_seq; /* seq of the delayed event in the injected trace */
    uint64_t seen_pc;   /* pc of the event found at seq */
} injection;

static injection *injections;
static size_t ninjections;
static size_t *next_of; /* per PE: index of its next pending injection */

static int by_thread_seq(const void *a, const void *b)
{
    const injection *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Text file written by weft inject: "thread seq pc delay_cycles" per line. */
int inject_load(const char *path, uint32_t max_pes, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[256];
    size_t cap = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        injection in = {0};
        unsigned long long seq, pc, d;
        unsigned t;
        if (sscanf(line, "%u %llu %llx %llu", &t, &seq, &pc, &d) != 4 || t >= max_pes) {
            snprintf(err, errlen, "%s:%zu: expected 'thread seq pc delay_cycles'", path, lineno);
            fclose(f);
            return -1;
        }
        in.thread = t;
        in.seq = seq;
        in.pc = pc;
        in.delay_cycles = d;
        if (ninjections == cap) {
            cap = cap ? cap * 2 : 16;
            injection *n = realloc(injections, cap * sizeof *n);
            if (!n) {
                fclose(f);
                snprintf(err, errlen, "%s: out of memory", path);
                return -1;
            }
            injections = n;
        }
        injections[ninjections++] = in;
    }
    fclose(f);
    qsort(injections, ninjections, sizeof *injections, by_thread_seq);
    next_of = calloc(max_pes, sizeof *next_of);
    if (!next_of) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (uint32_t pe = 0; pe < max_pes; pe++) {
        size_t i = 0;
        while (i < ninjections && injections[i].thread < pe)
            i++;
        next_of[pe] = i;
    }
    return 0;
}

uint64_t inject_due(vcpu_state *v, uint64_t pc)
{
    if (!ninjections || v->pe < 0)
        return 0;
    thread_record *tr = &g_plugin.threads[v->pe];
    uint64_t seq_now = tr->events - tr->delays; /* as numbered without injections */
    size_t *i = &next_of[v->pe];
    while (*i < ninjections && injections[*i].thread == (uint32_t)v->pe &&
           injections[*i].seq < seq_now)
        injections[(*i)++].state = 2; /* passed without the planned pc */
    if (*i >= ninjections || injections[*i].thread != (uint32_t)v->pe ||
        injections[*i].seq != seq_now)
        return 0;
    injection *in = &injections[*i];
    in->seen_pc = pc;
    if (in->pc && in->pc != pc) {
        in->state = 2;
        (*i)++;
        return 0;
    }
    in->state = 1;
    (*i)++;
    return in->delay_cycles;
}

/* Apply a due injection: a DELAY event at the current time, then the shift. */
uint64_t inject_apply(vcpu_state *v, uint64_t cycles, uint64_t pc)
{
    uint64_t d = inject_due(v, pc);
    if (!d)
        return 0;
    injection *in = &injections[next_of[v->pe] - 1];
    in->at_cycles = cycles;
    thread_record *tr = &g_plugin.threads[v->pe];
    tr->delays++;
    plugin_record(v, WEFT_EV_DELAY, cycles, cycles_to_ns(d), pc, 0, 0);
    in->trace_seq = tr->events; /* the delayed event comes next */
    v->offset += d;
    return d;
}

void inject_write_report(const char *path)
{
    if (!path || !ninjections)
        return;
    json_t *arr = json_array();
    for (size_t i = 0; i < ninjections; i++) {
        const injection *in = &injections[i];
        json_array_append_new(arr, json_pack("{s:I, s:I, s:I, s:I, s:s, s:I, s:I, s:I}", "thread",
                                             (json_int_t)in->thread, "seq", (json_int_t)in->seq,
                                             "pc", (json_int_t)in->pc, "delay_cycles",
                                             (json_int_t)in->delay_cycles, "state",
                                             in->state == 1   ? "applied"
                                             : in->state == 2 ? "missed"
                                                              : "not reached",
                                             "at_ns", (json_int_t)cycles_to_ns(in->at_cycles),
                                             "trace_seq", (json_int_t)in->trace_seq, "seen_pc",
                                             (json_int_t)in->seen_pc));
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    if (json_dump_file(arr, tmp, JSON_INDENT(1)) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "weft: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
    json_decref(arr);
}
