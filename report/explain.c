/* Why the first failing schedule of each campaign failed: the run's
 * timeline with its thread switches and its racing pair, the switches
 * that led to the failure and the races of the run (replay_explanation,
 * as weft replay --explain prints it). Only campaigns that kept that run's
 * trace and switch log (--save-trace) have one. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* Rows of the switch table: the last ones, which lead to the failure. */
#define MAX_SWITCH_ROWS 30
/* Racing pairs circled on the timeline. */
#define MAX_RACE_MARKS 3

static void where(rbuf *b, weft_symbols *syms, int64_t thread, uint64_t pc)
{
    const char *fn = NULL, *file = NULL;
    int line = 0;
    rb_printf(b, "T%lld", (long long)thread);
    if (pc && syms && weft_symbols_pc(syms, pc, &fn, &file, &line) == 0 && fn) {
        const char *base = file && strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
        rb_puts(b, " at ");
        rb_esc(b, fn);
        if (base && line > 0) {
            rb_puts(b, " (");
            rb_esc(b, base);
            rb_printf(b, ":%d)", line);
        }
    }
}

static void switch_table(rbuf *b, const replay_explanation *x, weft_symbols *syms)
{
    const replay_switch_log *l = &x->log;
    size_t from = l->n > MAX_SWITCH_ROWS ? l->n - MAX_SWITCH_ROWS : 0;
    rb_puts(b, "<table><tr><th>step</th><th>switch</th><th>kind</th><th>why</th><th>where the "
               "thread that ran was</th><th>where the next one goes on</th><th>at (ns)</th>"
               "<th>enabled</th></tr>\n");
    if (from)
        rb_printf(b, "<tr><td colspan='8'>%zu earlier switches not shown</td></tr>\n", from);
    for (size_t i = from; i < l->n; i++) {
        const replay_switch *w = &l->v[i];
        char why[256];
        replay_switch_reason(w, l, why, sizeof why);
        rb_printf(b, "<tr><td>%" PRIu64 "</td><td>T%lld &rarr; T%lld</td><td%s>%s</td><td>",
                  w->step, (long long)w->from, (long long)w->to, w->preempt ? " class='fail'" : "",
                  w->stay      ? "stays"
                  : w->preempt ? "preemption"
                               : "forced");
        rb_esc(b, why);
        rb_puts(b, "</td><td>");
        where(b, syms, w->from, w->from_pc);
        rb_puts(b, "</td><td>");
        where(b, syms, w->to, w->to_pc);
        rb_puts(b, "</td><td>");
        if (w->have_time)
            rb_printf(b, "%" PRIu64, w->time);
        rb_puts(b, "</td><td>");
        for (size_t k = 0; k < w->nenabled && k < REPLAY_SWITCH_ENABLED; k++)
            rb_printf(b, "%sT%lld", k ? " " : "", (long long)w->enabled[k]);
        rb_puts(b, "</td></tr>\n");
    }
    rb_puts(b, "</table>\n");
}

static void race_list(rbuf *b, const replay_explanation *x, weft_symbols *syms)
{
    if (!x->nraces) {
        rb_puts(b, "<p class='note'>weft races finds no data race in this run: the failure "
                   "comes from the order of synchronized steps (a deadlock, or an ordering the "
                   "locks allow).</p>\n");
        return;
    }
    rb_printf(b, "<ul class='note'>");
    for (size_t i = 0; i < x->nraces; i++) {
        const replay_race_var *r = &x->races[i];
        rb_puts(b, "<li>race on <b>");
        rb_esc(b, r->variable);
        rb_printf(b, "</b> (%" PRIu64 " instance%s): %s by ", r->race.count,
                  r->race.count == 1 ? "" : "s", weft_event_kind_name(r->race.first.kind));
        where(b, syms, r->race.first.thread, r->race.first.pc);
        rb_printf(b, " at %" PRIu64 " ns, %s by ", r->race.first.time,
                  weft_event_kind_name(r->race.second.kind));
        where(b, syms, r->race.second.thread, r->race.second.pc);
        rb_printf(b, " at %" PRIu64 " ns</li>\n", r->race.second.time);
    }
    if (x->nraces_total > x->nraces)
        rb_printf(b, "<li>%zu more (weft races on the trace)</li>\n", x->nraces_total - x->nraces);
    rb_puts(b, "</ul>\n");
}

/* What killed the run and where, in --explain's words. */
static void end_note(rbuf *b, const replay_explanation *x)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    replay_explanation_print_end(x, f);
    fclose(f);
    if (len) {
        rb_puts(b, "<pre class='end'>");
        rb_esc(b, text);
        rb_puts(b, "</pre>\n");
    }
    free(text);
}

/* One campaign's first failing run, if its files were kept. */
static void explain_one(rbuf *b, const report_campaign *c, size_t index)
{
    uint64_t seed;
    char v[64], detail[1024], err[PATH_MAX + 512];
    if (!c->have_sum || report_campaign_first_failure(c, &seed, v, sizeof v, detail, sizeof detail))
        return;
    rb_printf(b, "<h3>%s, depth %" PRIu64 ": seed %" PRIu64 "</h3>\n", c->sum.policy, c->sum.depth,
              seed);
    replay_explanation x;
    report_trace rt;
    if (replay_explanation_load(c->dir, seed, &x, err, sizeof err)) {
        rb_puts(b, "<p class='note'>");
        rb_esc(b, err);
        rb_puts(b, "</p>\n");
        return;
    }
    if (report_trace_load(x.trace_path, &rt, err, sizeof err)) {
        rb_puts(b, "<p class='note'>");
        rb_esc(b, err);
        rb_puts(b, "</p>\n");
        replay_explanation_free(&x);
        return;
    }
    report_switch_mark *m = calloc(x.log.n ? x.log.n : 1, sizeof *m);
    size_t nm = 0;
    for (size_t i = 0; m && i < x.log.n; i++)
        if (x.log.v[i].have_time && !x.log.v[i].stay)
            m[nm++] =
                (report_switch_mark){x.log.v[i].time, x.log.v[i].step, (uint32_t)x.log.v[i].from,
                                     (uint32_t)x.log.v[i].to, x.log.v[i].preempt};
    report_pair race[MAX_RACE_MARKS];
    size_t nr = 0;
    for (size_t i = 0; i < x.nraces && nr < MAX_RACE_MARKS; i++) {
        const weft_race *r = &x.races[i].race;
        race[nr] = (report_pair){
            .ta = r->first.thread, .sa = r->first.seq, .tb = r->second.thread, .sb = r->second.seq};
        snprintf(race[nr].variable, sizeof race[nr].variable, "%.*s",
                 (int)sizeof race[nr].variable - 1, x.races[i].variable);
        nr++;
    }
    char id[32];
    snprintf(id, sizeof id, "why%zu", index);
    rb_puts(b, "<figure>");
    report_timeline_schedule_svg(b, &rt, race, nr, m, nm, id);
    rb_printf(b, "<figcaption><span class='fail'>%s</span>", v);
    if (detail[0]) {
        rb_puts(b, ": ");
        rb_esc(b, detail);
    }
    rb_printf(b,
              ". The run's %" PRIu64 " switches (%" PRIu64 " of them preemptions) as arrows "
              "from the thread that ran to the one that runs next, at the time the latter "
              "goes on, with the step; the racing pair circled. Below, the last switches: "
              "whether the running thread could have gone on (a preemption) or not, why the "
              "policy switched, where each thread was. <code>weft replay ... --seed %" PRIu64
              " --minimize</code> cuts the preemptions down to the fewest that still fail "
              "(docs/replay.md).</figcaption></figure>\n",
              x.log.switches, x.log.preemptions, seed);
    switch_table(b, &x, rt.syms);
    race_list(b, &x, rt.syms);
    end_note(b, &x);
    free(m);
    report_trace_free(&rt);
    replay_explanation_free(&x);
}

void report_section_explain(rbuf *b, const report_campaign *camps, size_t n)
{
    size_t failing = 0;
    for (size_t i = 0; i < n; i++)
        failing += camps[i].have_sum && camps[i].sum.hits;
    if (!failing)
        return;
    rb_puts(b, "<h2>Why the first failing schedule failed</h2>\n"
               "<p class='note'>For each campaign, its first failing run as <code>weft replay "
               "--explain</code> tells it: the thread switches its policy made and the data "
               "races of its trace. It needs the run's trace and switch log, which "
               "<code>--save-trace</code> keeps.</p>\n");
    for (size_t i = 0; i < n; i++)
        if (camps[i].have_sum && camps[i].sum.hits)
            explain_one(b, &camps[i], i);
}
