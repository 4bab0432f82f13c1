/* What the report's files share (report/: page.c, trace.c, timeline.c,
 * plots.c, sections.c, campaigns.c); the public part is weft/report.h. */
#ifndef WEFT_REPORT_INTERNAL_H
#define WEFT_REPORT_INTERNAL_H

#include <jansson.h>

#include "strbuf.h"
#include "weft/report.h"

/* ---- timeline (timeline.c) ------------------------------------------- */

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

/* A thread switch of a replay, at the virtual time the thread switched to
 * went on. */
typedef struct report_switch_mark {
    uint64_t time, step;
    uint32_t from, to;
    int preempt;
} report_switch_mark;

/* An SVG of a failing replay: its switches as arrows between lanes, its
 * racing pairs (ta, sa) / (tb, sb) circled and named by `variable`; id
 * prefixes its ids (several live in one page). */
int report_timeline_schedule_svg(rbuf *out, const report_trace *rt, const report_pair *race,
                                 size_t nrace, const report_switch_mark *m, size_t nm,
                                 const char *id);
/* ---- why the first failing schedule of each campaign failed (explain.c) ---- */
void report_section_explain(rbuf *b, const report_campaign *camps, size_t n);

/* ---- plots (plots.c) -------------------------------------------------- */

/* 1 if gnuplot can be run. */
int report_have_gnuplot(void);
/* Each appends an inline <svg> (ids prefixed by `id`) or a note saying why
 * there is none. Returns 0 if a plot was appended. */
int report_plot_convergence(rbuf *out, json_t *convergence, const char *id);
int report_plot_boxes(rbuf *out, json_t *const stats[], const char *const names[], size_t n,
                      const char *id);
int report_plot_rates(rbuf *out, const replay_summary *s, size_t n, const char *id);
/* The captions under them: what the plot shows and what to do next. */
void report_caption_convergence(rbuf *out, json_t *convergence);
void report_caption_boxes(rbuf *out, json_t *const stats[], const char *const names[], size_t n);
void report_caption_rates(rbuf *out);

/* ---- sections (sections.c, campaigns.c) ----------------------------------- */

/* searched: the optimizer ran on this trace (a demo), so no plan means
 * nothing could be aligned. */
void report_section_table1(rbuf *b, const report_trace *rt, json_t *plan, json_t *inject,
                           int searched, const report_campaign *camps, size_t ncamps);
/* Tables are <figure>s with a <figcaption> saying what they show and what to
 * do next; plans are read from dir/plan-NAME.json. */
void report_section_plans(rbuf *b, const char *dir, json_t *const plans[],
                          const char *const names[], size_t n, json_t *const stats[],
                          const char *const snames[], size_t ns);
void report_section_inject(rbuf *b, json_t *const injects[], const char *const names[], size_t n);
void report_section_campaigns(rbuf *b, const report_campaign *camps, size_t n);
void report_section_failures(rbuf *b, const report_campaign *camps, size_t n, size_t max_each);
void report_section_commands(rbuf *b, json_t *demo);

#endif
