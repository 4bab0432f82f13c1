/* weft report: one self-contained HTML page from the outputs of weft demo
 * or of replay campaigns (docs/report.md), and the two readers it is built
 * on, which weft demo uses for its printed summary too.
 *
 *   page.c      what a folder holds, the page, atomic write
 *   trace.c     a trace in memory: shared addresses, the summary's numbers
 *   timeline.c  the threads' timeline (hand-written SVG)
 *   plots.c     gnuplot plots as inline SVG: convergence, box plots,
 *               hit rates against bounds; their captions
 *   sections.c  the tables: summary, plans, searches, injections, commands
 *   campaigns.c a campaign folder; its table against the bounds, failing
 *               seeds with one reproduction command per policy
 *   strbuf.c    the growing string the page is built in */
#ifndef WEFT_REPORT_H
#define WEFT_REPORT_H

#include <stddef.h>
#include <limits.h>
#include <stdint.h>

#include <jansson.h>

#include "weft/replay.h"
#include "weft/trace.h"

/* ---- a trace in memory (trace.c) ------------------------------------ */

#define REPORT_MAX_VARS 8

typedef struct report_var {
    uint64_t addr;
    char name[128];    /* variable+offset, or hex */
    char pattern[512]; /* per thread, e.g. "T0 RR, T1 (RW)x50, T2 (RW)x50" */
} report_var;

typedef struct report_trace {
    weft_trace *t;
    weft_symbols *syms; /* NULL without the binary */
    const weft_trace_meta *meta;
    const weft_trace_summary *sum;
    weft_event *ev; /* the events, canonical order (time, thread, seq) */
    size_t n;       /* events read: all of them, or the first REPORT_MAX_EVENTS */
    uint64_t total; /* events in the trace */
    uint64_t reads, writes, rmw, sync;
    size_t shared_addrs;              /* accessed by 2+ threads */
    size_t ww_addrs;                  /* plain writes from 2+ threads: what the optimizer aligns */
    report_var vars[REPORT_MAX_VARS]; /* the first ww addresses, by address */
    size_t nvars;
    /* address table (open addressing) */
    uint64_t *keys;
    uint8_t *cls; /* REPORT_ADDR_* bits */
    size_t mask;
} report_trace;

#define REPORT_ADDR_SHARED 1u /* accessed by 2+ threads */
#define REPORT_ADDR_WW 2u     /* plainly written by 2+ threads */

int report_trace_load(const char *path, report_trace *rt, char *err, size_t errlen);
unsigned report_trace_addr_class(const report_trace *rt, uint64_t addr);
/* The event (thread, seq), or NULL. seq counts recorded events, DELAY events
 * of an injected trace excluded (weft inject's numbering). */
const weft_event *report_trace_find(const report_trace *rt, uint32_t thread, uint64_t seq);
void report_trace_free(report_trace *rt);

/* ---- a campaign folder (campaigns.c) ------------------------------------------ */

/* A campaign folder: its campaign.json, summary and failing runs. */
typedef struct report_campaign {
    char dir[PATH_MAX];
    json_t *campaign;
    replay_summary sum;
    int have_sum;
    replay_config cfg; /* enough of it for replay_repro_command */
} report_campaign;

int report_campaign_load(const char *dir, report_campaign *c, char *err, size_t errlen);
void report_campaign_free(report_campaign *c);
/* The reproduction command of one seed. */
void report_campaign_repro(const report_campaign *c, uint64_t seed, char *buf, size_t len);
/* The first failing run (lowest seed) of the campaign: 0 and its verdict and
 * detail, or -1 if none. */
int report_campaign_first_failure(const report_campaign *c, uint64_t *seed, char *verdict,
                                  size_t vlen, char *detail, size_t dlen);

/* Write the report of folder `dir` to `out` (atomically). 0, or -1 after
 * printing an error. */
int report_generate(const char *dir, const char *out, int quiet);

#endif
