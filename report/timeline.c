/* The threads' timeline as an inline SVG: one lane per thread, the accesses
 * to shared addresses as ticks, the planned alignments marked in the traced
 * run and, below it on the same time axis, the injected run where the
 * planned writes (should) collide; or, for a failing replay, its thread
 * switches as arrows between lanes and its racing pair circled.
 * Hand-written rather than gnuplot: lanes, markers and arrows are easier
 * to place exactly. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define W 1100.0
#define LEFT 64.0
#define RIGHT 24.0
#define LANE 18.0
#define MAX_LANES 40
#define MAX_TICKS 4000

#define C_WW "#1f5fbf"    /* plain writes to an address two threads write */
#define C_WRITE "#2a9d8f" /* other writes to shared addresses */
#define C_READ "#9aa3ad"
#define C_ATOMIC "#e08a00"
#define C_PAIR "#d62828"
#define C_PREEMPT "#7b2cbf" /* a switch away from a thread that could have gone on */
#define C_FORCED "#8d99ae"  /* a switch forced by a block, an exit or a yield */

/* How a panel marks its pairs. */
enum pair_style { PAIRS_PLANNED, PAIRS_INJECTED, PAIRS_RACE };

typedef struct axis {
    uint64_t t0, t1;
} axis;

static double xpos(const axis *a, uint64_t t)
{
    double span = a->t1 > a->t0 ? (double)(a->t1 - a->t0) : 1;
    double f = ((double)t - (double)a->t0) / span;
    return LEFT + f * (W - LEFT - RIGHT);
}

static void window(const report_trace *rt, const report_pair *p, size_t np, axis *a)
{
    uint64_t lo = UINT64_MAX, hi = 0;
#define TAKE(t) (lo = (t) < lo ? (t) : lo, hi = (t) > hi ? (t) : hi)
    for (size_t i = 0; i < np; i++) {
        const weft_event *ea = report_trace_find(rt, p[i].ta, p[i].sa);
        const weft_event *eb = report_trace_find(rt, p[i].tb, p[i].sb);
        if (ea)
            TAKE(ea->time);
        if (eb)
            TAKE(eb->time);
        TAKE(p[i].predicted);
        if (p[i].measured)
            TAKE(p[i].achieved_a), TAKE(p[i].achieved_b);
    }
    if (lo <= hi) {
        /* Widen to the whole life of the (non-main) threads of the pairs
         * when that stays readable: the context of the collision. */
        uint64_t w = hi - lo > 100 ? hi - lo : 100, l2 = lo, h2 = hi;
        for (size_t i = 0; i < np; i++) {
            uint32_t th[2] = {p[i].ta, p[i].tb};
            for (int k = 0; k < 2; k++) {
                if (th[k] == 0 || th[k] >= rt->sum->nthreads)
                    continue;
                const weft_trace_thread *t = &rt->sum->threads[th[k]];
                l2 = t->start_time < l2 ? t->start_time : l2;
                h2 = t->end_time > h2 ? t->end_time : h2;
            }
        }
        if (h2 - l2 <= 20 * w)
            lo = l2, hi = h2;
    } else {
        for (int pass = 0; pass < 2 && lo > hi; pass++)
            for (size_t i = 0; i < rt->n; i++) {
                const weft_event *e = &rt->ev[i];
                unsigned c =
                    weft_event_is_access(e->kind) ? report_trace_addr_class(rt, e->addr) : 0;
                if (pass == 0 ? (c & REPORT_ADDR_WW) && weft_event_writes(e->kind)
                              : (c & REPORT_ADDR_SHARED) && e->thread != 0)
                    TAKE(e->time);
            }
        if (lo > hi)
            lo = 0, hi = rt->sum->makespan;
    }
#undef TAKE
    uint64_t pad = (hi - lo) / 30 + 5;
    a->t0 = lo > pad ? lo - pad : 0;
    a->t1 = hi + pad;
}

/* Lanes shown: every thread if few, else the pairs' threads and those with
 * the most shared accesses in the window. */
static size_t pick_lanes(const report_trace *rt, const axis *a, const report_pair *p, size_t np,
                         uint32_t *lanes)
{
    uint32_t nt = rt->sum->nthreads;
    if (nt <= MAX_LANES) {
        for (uint32_t t = 0; t < nt; t++)
            lanes[t] = t;
        return nt;
    }
    uint64_t *score = calloc(nt, sizeof *score);
    if (!score)
        return 0;
    for (size_t i = 0; i < rt->n; i++) {
        const weft_event *e = &rt->ev[i];
        if (e->time >= a->t0 && e->time <= a->t1 && e->thread < nt &&
            weft_event_is_access(e->kind) && report_trace_addr_class(rt, e->addr))
            score[e->thread]++;
    }
    for (size_t i = 0; i < np; i++) {
        if (p[i].ta < nt)
            score[p[i].ta] = UINT64_MAX;
        if (p[i].tb < nt)
            score[p[i].tb] = UINT64_MAX;
    }
    score[0] = UINT64_MAX; /* main */
    size_t n = 0;
    for (size_t k = 0; k < MAX_LANES; k++) {
        uint32_t best = UINT32_MAX;
        for (uint32_t t = 0; t < nt; t++)
            if (score[t] && (best == UINT32_MAX || score[t] > score[best]))
                best = t;
        if (best == UINT32_MAX)
            break;
        lanes[n++] = best;
        score[best] = 0;
    }
    free(score);
    /* in thread order */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && lanes[j] < lanes[j - 1]; j--) {
            uint32_t x = lanes[j];
            lanes[j] = lanes[j - 1];
            lanes[j - 1] = x;
        }
    return n;
}

static int lane_of(const uint32_t *lanes, size_t n, uint32_t t)
{
    for (size_t i = 0; i < n; i++)
        if (lanes[i] == t)
            return (int)i;
    return -1;
}

static void ticks(rbuf *b, const axis *a, double y)
{
    double span = (double)(a->t1 - a->t0);
    double step = pow(10, floor(log10(span > 1 ? span : 1)));
    while (span / step < 4)
        step /= 2;
    while (span / step > 9)
        step *= 2;
    double first = ceil((double)a->t0 / step) * step;
    rb_printf(b, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#444'/>\n", LEFT, y,
              W - RIGHT, y);
    for (double t = first; t <= (double)a->t1; t += step) {
        double x = xpos(a, (uint64_t)t);
        rb_printf(b,
                  "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#444'/>"
                  "<text x='%.1f' y='%.1f' font-size='10' text-anchor='middle'>%.0f</text>\n",
                  x, y, x, y + 4, x, y + 15, t);
    }
    rb_printf(b, "<text x='%.1f' y='%.1f' font-size='10' text-anchor='end'>virtual ns</text>\n",
              W - RIGHT, y + 28);
}

/* The switches in the window: an arrow from the lane of the thread that ran
 * to the lane of the one that runs next, at the time the latter goes on,
 * labelled with the step. */
static void switch_marks(rbuf *b, const axis *a, const uint32_t *lanes, size_t nl, double top,
                         const report_switch_mark *m, size_t nm, const char *id)
{
    for (size_t i = 0; i < nm; i++) {
        int lf = lane_of(lanes, nl, m[i].from), lt = lane_of(lanes, nl, m[i].to);
        if (lf < 0 || lt < 0 || lf == lt || m[i].time < a->t0 || m[i].time > a->t1)
            continue;
        double x = xpos(a, m[i].time), yf = top + lf * LANE + LANE / 2,
               yt = top + lt * LANE + LANE / 2;
        const char *col = m[i].preempt ? C_PREEMPT : C_FORCED;
        rb_printf(b,
                  "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='1.5' "
                  "marker-end='url(#%s-%s)'/><text x='%.1f' y='%.1f' font-size='9' "
                  "fill='%s'>%" PRIu64 "</text>\n",
                  x, yf, x, yt + (yt > yf ? -4 : 4), col, id, m[i].preempt ? "pre" : "forced",
                  x + 2, (yf < yt ? yf : yt) - 2, col, m[i].step);
    }
}

/* Each shown thread's lane: its name and a bar while it lived. */
static void lane_bars(rbuf *b, const report_trace *rt, const axis *a, const uint32_t *lanes,
                      size_t nl, double top)
{
    for (size_t i = 0; i < nl; i++) {
        const weft_trace_thread *t = &rt->sum->threads[lanes[i]];
        double y = top + (double)i * LANE + LANE / 2;
        uint64_t s = t->start_time > a->t0 ? t->start_time : a->t0;
        uint64_t e = t->end_time < a->t1 ? t->end_time : a->t1;
        rb_printf(b, "<text x='%.1f' y='%.1f' font-size='11' text-anchor='end'>T%u</text>\n",
                  LEFT - 8, y + 4, lanes[i]);
        if (s <= e)
            rb_printf(b,
                      "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#d5d9de' "
                      "stroke-width='6'/>\n",
                      xpos(a, s), y, xpos(a, e), y);
    }
}

/* Ticks for accesses to shared addresses, thinned to MAX_TICKS so that a
 * busy window stays a readable (and small) picture. */
static void access_ticks(rbuf *b, const report_trace *rt, const axis *a, const uint32_t *lanes,
                         size_t nl, double top)
{
    size_t inwin = 0;
    for (size_t i = 0; i < rt->n; i++) {
        const weft_event *e = &rt->ev[i];
        if (e->time >= a->t0 && e->time <= a->t1 && weft_event_is_access(e->kind) &&
            report_trace_addr_class(rt, e->addr))
            inwin++;
    }
    size_t every = inwin > MAX_TICKS ? (inwin + MAX_TICKS - 1) / MAX_TICKS : 1, k = 0;
    for (size_t i = 0; i < rt->n; i++) {
        const weft_event *e = &rt->ev[i];
        if (e->time < a->t0 || e->time > a->t1 || !weft_event_is_access(e->kind))
            continue;
        unsigned c = report_trace_addr_class(rt, e->addr);
        int l = c ? lane_of(lanes, nl, e->thread) : -1;
        if (l < 0 || k++ % every)
            continue;
        int atomic = e->kind == WEFT_EV_RMW || (e->flags & (WEFT_EVF_ATOMIC | WEFT_EVF_EXCLUSIVE));
        const char *col = atomic                    ? C_ATOMIC
                          : e->kind == WEFT_EV_READ ? C_READ
                          : (c & REPORT_ADDR_WW)    ? C_WW
                                                    : C_WRITE;
        double h = e->kind == WEFT_EV_READ ? 4 : 7;
        double x = xpos(a, e->time), y = top + l * LANE + LANE / 2;
        rb_printf(b, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s'/>\n", x, y - h, x,
                  y + h, col);
    }
}

/* What a pair's two circles are about: a race's variable, a planned
 * delay's predicted collision, or, after injection, whether it hit. */
static void pair_label(rbuf *b, const axis *a, const report_pair *p, enum pair_style style,
                       const weft_event *ea, const weft_event *eb, double xa, double ya, double xb,
                       double yb)
{
    double ylo = ya < yb ? ya : yb, yhi = ya < yb ? yb : ya;
    if (style == PAIRS_RACE) {
        rb_printf(b,
                  "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='" C_PAIR
                  "' stroke-width='2'/><text x='%.1f' y='%.1f' font-size='10' fill='" C_PAIR
                  "'>race on ",
                  xa, ya, xb, yb, (xa < xb ? xa : xb) + 6, ylo - 8);
        rb_esc(b, p->variable);
        rb_puts(b, "</text>\n");
    } else if (style != PAIRS_INJECTED) {
        double xp = xpos(a, p->predicted);
        rb_printf(b,
                  "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='" C_PAIR
                  "' stroke-dasharray='4 3' marker-end='url(#tl-arrow)'/>\n"
                  "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='" C_PAIR
                  "' stroke-dasharray='2 2'/>\n",
                  xa, ya, xp - 3, ya, xp, ylo - 8, xp, yhi + 8);
        rb_printf(b,
                  "<text x='%.1f' y='%.1f' font-size='10' fill='" C_PAIR "'>delay %" PRIu64
                  " ns: planned collision at %" PRIu64 " ns</text>\n",
                  xp + 4, ylo - 9, p->delay_ns, p->predicted);
    } else if (ea->time == eb->time) {
        rb_printf(b,
                  "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='" C_PAIR
                  "' stroke-width='2'/>\n"
                  "<text x='%.1f' y='%.1f' font-size='10' fill='" C_PAIR "'>collision at %" PRIu64
                  " ns</text>\n",
                  xa, ylo - 8, xa, yhi + 8, xa + 4, ylo - 9, ea->time);
    } else {
        rb_printf(b,
                  "<text x='%.1f' y='%.1f' font-size='10' fill='" C_PAIR "'>missed by %" PRId64
                  " ns</text>\n",
                  xa + 4, ylo - 9, (int64_t)eb->time - (int64_t)ea->time);
    }
}

/* Each pair's two accesses circled on their lanes, with its label; a pair
 * whose events or threads are not shown is left out. */
static void pair_marks(rbuf *b, const report_trace *rt, const axis *a, const uint32_t *lanes,
                       size_t nl, double top, const report_pair *p, size_t np,
                       enum pair_style style)
{
    for (size_t i = 0; i < np; i++) {
        const weft_event *ea = report_trace_find(rt, p[i].ta, p[i].sa);
        const weft_event *eb = report_trace_find(rt, p[i].tb, p[i].sb);
        int la = lane_of(lanes, nl, p[i].ta), lb = lane_of(lanes, nl, p[i].tb);
        if (!ea || !eb || la < 0 || lb < 0)
            continue;
        double ya = top + la * LANE + LANE / 2, yb = top + lb * LANE + LANE / 2;
        double xa = xpos(a, ea->time), xb = xpos(a, eb->time);
        rb_printf(b,
                  "<circle cx='%.1f' cy='%.1f' r='5' fill='none' stroke='" C_PAIR
                  "' stroke-width='2'/><circle cx='%.1f' cy='%.1f' r='5' fill='none' "
                  "stroke='" C_PAIR "' stroke-width='2'/>\n",
                  xa, ya, xb, yb);
        pair_label(b, a, &p[i], style, ea, eb, xa, ya, xb, yb);
    }
}

/* One panel: lanes, ticks, pair markers, switches. Returns its height. */
static double panel(rbuf *b, const report_trace *rt, const axis *a, double y0, const char *title,
                    const report_pair *p, size_t np, enum pair_style style,
                    const report_switch_mark *m, size_t nm, const char *id)
{
    uint32_t lanes[MAX_LANES];
    size_t nl = pick_lanes(rt, a, p, np, lanes);
    rb_printf(b, "<text x='4' y='%.1f' font-size='12' font-weight='bold'>", y0 + 12);
    rb_esc(b, title);
    if (nl < rt->sum->nthreads)
        rb_printf(b, " (%zu of %u threads shown)", nl, rt->sum->nthreads);
    rb_puts(b, "</text>\n");
    double top = y0 + 20;
    lane_bars(b, rt, a, lanes, nl, top);
    access_ticks(b, rt, a, lanes, nl, top);
    double bottom = top + (double)nl * LANE;
    pair_marks(b, rt, a, lanes, nl, top, p, np, style);
    switch_marks(b, a, lanes, nl, top, m, nm, id);
    ticks(b, a, bottom + 4);
    return bottom + 36 - y0;
}

/* The whole-run strip with the window shown; returns its height. */
static double whole_run(rbuf *b, const report_trace *rt, const axis *a, double y)
{
    uint64_t mk = rt->sum->makespan ? rt->sum->makespan : 1;
    double x0 = LEFT + (double)a->t0 / (double)mk * (W - LEFT - RIGHT);
    double x1 = LEFT + (double)(a->t1 < mk ? a->t1 : mk) / (double)mk * (W - LEFT - RIGHT);
    rb_printf(b,
              "<text x='4' y='%.1f' font-size='11'>whole run</text>"
              "<rect x='%.1f' y='%.1f' width='%.1f' height='8' fill='#e9ecef'/>"
              "<rect x='%.1f' y='%.1f' width='%.1f' height='8' fill='#5c7cfa'/>"
              "<text x='%.1f' y='%.1f' font-size='10' text-anchor='end'>0 .. %" PRIu64
              " ns; shown: %" PRIu64 " .. %" PRIu64 " ns</text>\n",
              y + 9, LEFT, y + 2, W - LEFT - RIGHT, x0, y + 2, x1 - x0 > 2 ? x1 - x0 : 2, W - RIGHT,
              y + 22, rt->sum->makespan, a->t0, a->t1);
    return 30;
}

int report_timeline_svg(rbuf *out, const report_trace *traced, const report_trace *injected,
                        const report_pair *pairs, size_t npairs)
{
    axis a;
    window(traced, pairs, npairs, &a);
    rbuf body = {0};
    double y = 4;
    y += whole_run(&body, traced, &a, y);
    y += panel(&body, traced, &a, y, npairs || injected ? "traced run (no delay)" : "the run",
               pairs, npairs, PAIRS_PLANNED, NULL, 0, "");
    if (injected)
        y += panel(&body, injected, &a, y, "injected run (the plan's delays)", pairs, npairs,
                   PAIRS_INJECTED, NULL, 0, "");
    rb_printf(&body,
              "<g font-size='10'><line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='" C_WW
              "'/><text x='%.1f' y='%.1f'>write to an address two threads write</text>"
              "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='" C_WRITE
              "'/><text x='%.1f' y='%.1f'>other shared write</text>"
              "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='" C_READ
              "'/><text x='%.1f' y='%.1f'>shared read</text>"
              "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='" C_ATOMIC
              "'/><text x='%.1f' y='%.1f'>atomic</text>"
              "<circle cx='%.1f' cy='%.1f' r='5' fill='none' stroke='" C_PAIR
              "' stroke-width='2'/><text x='%.1f' y='%.1f'>planned pair</text></g>\n",
              LEFT, y, LEFT, y + 12, LEFT + 6, y + 10, LEFT + 250, y, LEFT + 250, y + 12,
              LEFT + 256, y + 10, LEFT + 380, y, LEFT + 380, y + 12, LEFT + 386, y + 10, LEFT + 470,
              y, LEFT + 470, y + 12, LEFT + 476, y + 10, LEFT + 540, y + 6, LEFT + 550, y + 10);
    y += 20;
    rb_printf(out,
              "<svg id='timeline' viewBox='0 0 %.0f %.0f' width='%.0f' height='%.0f' "
              "font-family='sans-serif' role='img'>\n"
              "<defs><marker id='tl-arrow' markerWidth='8' markerHeight='8' refX='6' refY='3' "
              "orient='auto'><path d='M0,0 L6,3 L0,6 z' fill='" C_PAIR "'/></marker></defs>\n",
              W, y, W, y);
    rb_add(out, body.s ? body.s : "", body.len);
    rb_puts(out, "</svg>\n");
    rb_free(&body);
    return 0;
}

int report_timeline_schedule_svg(rbuf *out, const report_trace *rt, const report_pair *race,
                                 size_t nrace, const report_switch_mark *m, size_t nm,
                                 const char *id)
{
    axis a;
    window(rt, race, nrace, &a);
    rbuf body = {0};
    double y = 4;
    y += whole_run(&body, rt, &a, y);
    y += panel(&body, rt, &a, y, "the failing run", race, nrace, PAIRS_RACE, m, nm, id);
    rb_printf(&body,
              "<g font-size='10'><line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='" C_PREEMPT
              "' stroke-width='1.5'/><text x='%.1f' y='%.1f'>switch: a preemption (the running "
              "thread could have gone on), with its step</text>"
              "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='" C_FORCED
              "' stroke-width='1.5'/><text x='%.1f' y='%.1f'>switch forced (block, exit, "
              "yield)</text><circle cx='%.1f' cy='%.1f' r='5' fill='none' stroke='" C_PAIR
              "' stroke-width='2'/><text x='%.1f' y='%.1f'>the racing pair</text></g>\n",
              LEFT, y, LEFT, y + 12, LEFT + 6, y + 10, LEFT + 430, y, LEFT + 430, y + 12,
              LEFT + 436, y + 10, LEFT + 650, y + 6, LEFT + 660, y + 10);
    y += 20;
    rb_printf(out,
              "<svg class='timeline' viewBox='0 0 %.0f %.0f' width='%.0f' height='%.0f' "
              "font-family='sans-serif' role='img'>\n<defs>"
              "<marker id='%s-pre' markerWidth='8' markerHeight='8' refX='6' refY='3' "
              "orient='auto'><path d='M0,0 L6,3 L0,6 z' fill='" C_PREEMPT "'/></marker>"
              "<marker id='%s-forced' markerWidth='8' markerHeight='8' refX='6' refY='3' "
              "orient='auto'><path d='M0,0 L6,3 L0,6 z' fill='" C_FORCED "'/></marker>"
              "</defs>\n",
              W, y, W, y, id, id);
    rb_add(out, body.s ? body.s : "", body.len);
    rb_puts(out, "</svg>\n");
    rb_free(&body);
    return 0;
}
