/* Delay injection (weft inject): the plan's delays are applied just before
 * the planned event of the planned thread, by adding to the thread's time
 * offset, so that event and everything after it in that thread shift (seed
 * 004 Eq. 2). Events are matched by the thread's sequence number among
 * recorded events (as in the uninjected trace) and, as a check, by pc.
 *
 * The pc is checked where it proves something. A gate comes before the
 * access is known to be recorded: an access to the thread's own stack
 * through a register other than SP is gated like any other and then dropped
 * by the filter, so the gate after event seq-1 can be at another pc while
 * event seq is still ahead. Such a gate leaves the injection pending; it is
 * missed only when the event recorded at seq has another pc, or when the
 * thread ends before recording event seq. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "plugin_state.h"

struct injection {
    uint32_t thread;
    uint64_t seq, pc, delay_cycles;
    int state;          /* INJ_PENDING, INJ_APPLIED, INJ_MISSED */
    int why;            /* of a miss: INJ_WHY_* */
    uint64_t at_cycles; /* thread time when applied */
    uint64_t trace_seq; /* seq of the delayed event in the injected trace */
    uint64_t seen_pc;   /* pc of the event found at seq */
};

enum { INJ_PENDING, INJ_APPLIED, INJ_MISSED };
enum { INJ_WHY_NONE, INJ_WHY_PC, INJ_WHY_SKIPPED, INJ_WHY_ENDED, INJ_WHY_NEVER_RAN };

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

/* The thread's next injection if it is due now (and marked applied), else
 * NULL. `recorded`: called as an event is recorded, rather than at the gate
 * of an access the filter may still drop. */
injection *inject_due(vcpu_state *v, uint64_t pc, int recorded)
{
    if (!ninjections || v->pe < 0)
        return NULL;
    thread_record *tr = &g_plugin.threads[v->pe];
    uint64_t seq_now = plugin_thread_events(v) - tr->delays; /* as numbered without injections */
    size_t *i = &next_of[v->pe];
    /* Every recorded event passes here first, so nothing is skipped unless
     * the counting is broken; say so rather than apply a delay late. */
    while (*i < ninjections && injections[*i].thread == (uint32_t)v->pe &&
           injections[*i].seq < seq_now) {
        injections[*i].state = INJ_MISSED;
        injections[(*i)++].why = INJ_WHY_SKIPPED;
    }
    if (*i >= ninjections || injections[*i].thread != (uint32_t)v->pe ||
        injections[*i].seq != seq_now)
        return NULL;
    injection *in = &injections[*i];
    if (in->pc && in->pc != pc) {
        if (!recorded)
            return NULL; /* maybe a dropped stack access: wait for the event itself */
        in->seen_pc = pc;
        in->state = INJ_MISSED;
        in->why = INJ_WHY_PC;
        (*i)++;
        return NULL;
    }
    in->seen_pc = pc;
    in->state = INJ_APPLIED;
    (*i)++;
    return in;
}

uint64_t inject_delay_cycles(const injection *in)
{
    return in->delay_cycles;
}

void inject_applied(injection *in, uint64_t at_cycles, uint64_t trace_seq)
{
    in->at_cycles = at_cycles;
    in->trace_seq = trace_seq;
}

void inject_write_report(const char *path)
{
    if (!path || !ninjections)
        return;
    static const char *const whys[] = {
        [INJ_WHY_NONE] = NULL,
        [INJ_WHY_PC] = "the event at seq has another pc",
        [INJ_WHY_SKIPPED] = "event seq passed unchecked",
        [INJ_WHY_ENDED] = "the thread ended before event seq",
        [INJ_WHY_NEVER_RAN] = "the thread never ran",
    };
    json_t *arr = json_array();
    for (size_t i = 0; i < ninjections; i++) {
        injection *in = &injections[i];
        /* The report is written as the process ends: whatever is still
         * pending belongs to a thread that ended (or never started) first. */
        if (in->state == INJ_PENDING) {
            in->state = INJ_MISSED;
            in->why = g_plugin.threads[in->thread].events ? INJ_WHY_ENDED : INJ_WHY_NEVER_RAN;
        }
        json_array_append_new(
            arr,
            json_pack("{s:I, s:I, s:I, s:I, s:s, s:s?, s:I, s:I, s:I}", "thread",
                      (json_int_t)in->thread, "seq", (json_int_t)in->seq, "pc", (json_int_t)in->pc,
                      "delay_cycles", (json_int_t)in->delay_cycles, "state",
                      in->state == INJ_APPLIED ? "applied" : "missed", "why", whys[in->why],
                      "at_ns", (json_int_t)cycles_to_ns(in->at_cycles), "trace_seq",
                      (json_int_t)in->trace_seq, "seen_pc", (json_int_t)in->seen_pc));
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    if (json_dump_file(arr, tmp, JSON_INDENT(1)) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "weft: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
    json_decref(arr);
}
