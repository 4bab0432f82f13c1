/* weft report internals: one self-contained HTML page from the outputs of
 * weft demo or of replay campaigns (docs/report.md).
 *
 *   cmd_report.c       options, what a folder holds, the page, atomic write
 *   report_trace.c     a trace in memory: shared addresses, Table-1 numbers
 *   report_timeline.c  the threads' timeline (hand-written SVG)
 *   report_plots.c     gnuplot plots as inline SVG: convergence, box plots,
 *                      hit rates against bounds
 *   report_sections.c  the tables: summary, plans, injections, campaigns,
 *                      failing seeds with their reproduction commands */
#ifndef WEFT_CLI_REPORT_H
#define WEFT_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "replay.h"
#include "weft/trace.h"

/* ---- a growing string ------------------------------------------------------ */

typedef struct rbuf {
    char *s;
    size_t len, cap;
    int oom;
} rbuf;

void rb_add(rbuf *b, const char *s, size_t n);
void rb_puts(rbuf *b, const char *s);
void rb_printf(rbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s with & < > " ' escaped for HTML text and attributes. */
void rb_esc(rbuf *b, const char *s);
void rb_free(rbuf *b);

/* ---- a trace in memory (report_trace.c) ------------------------------------ */

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

/* ---- timeline (report_timeline.c) ------------------------------------------- */

/* One planned alignment: event (ta, sa) delayed by delay_ns to meet (tb, sb)
 * at `predicted`; in the injected run both were measured at achieved_a/b. */
typedef struct report_pair {
    uint32_t ta, tb;
    uint64_t sa, sb, delay_ns, predicted;
    int measured, collided;
    uint64_t achieved_a, achieved_b;
    char variable[128];
} report_pair;

/* An SVG of the threads in `traced` (and, if not NULL, in `injected`, the
 * same time window below it) with the pairs marked. */
int report_timeline_svg(rbuf *out, const report_trace *traced, const report_trace *injected,
                        const report_pair *pairs, size_t npairs);

/* ---- plots (report_plots.c) -------------------------------------------------- */

/* 1 if gnuplot can be run. */
int report_have_gnuplot(void);
/* Each appends an inline <svg> (ids prefixed by `id`) or a note saying why
 * there is none. Returns 0 if a plot was appended. */
int report_plot_convergence(rbuf *out, json_t *convergence, const char *id);
int report_plot_boxes(rbuf *out, json_t *const stats[], const char *const names[], size_t n,
                      const char *id);
int report_plot_rates(rbuf *out, const replay_summary *s, size_t n, const char *id);

/* ---- sections (report_sections.c) ------------------------------------------- */

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

void report_section_table1(rbuf *b, const report_trace *rt, json_t *plan, json_t *inject,
                           const report_campaign *camps, size_t ncamps);
void report_section_plans(rbuf *b, json_t *const plans[], const char *const names[], size_t n,
                          json_t *const stats[], const char *const snames[], size_t ns);
void report_section_inject(rbuf *b, json_t *const injects[], const char *const names[], size_t n);
void report_section_campaigns(rbuf *b, const report_campaign *camps, size_t n);
void report_section_failures(rbuf *b, const report_campaign *camps, size_t n, size_t max_each);
void report_section_commands(rbuf *b, json_t *demo);

/* Write the report of folder `dir` to `out` (atomically). 0, or -1 after
 * printing an error. */
int report_generate(const char *dir, const char *out, int quiet);

#endif
