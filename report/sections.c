/* The report's tables and their captions: the summary (the per-variable
 * read/write pattern as in Bhattacharya et al.'s table of programs), the
 * plans and searches, the injected runs, and the demo's commands. The
 * campaigns' tables are in campaigns.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define JI(o, k) json_integer_value(json_object_get((o), (k)))
#define JS(o, k) json_string_value(json_object_get((o), (k)))

static void verdict_text(rbuf *b, json_t *v)
{
    if (!v) {
        rb_puts(b, "&ndash;");
        return;
    }
    const char *end = JS(v, "end");
    if (json_is_true(json_object_get(v, "passes")))
        rb_puts(b, "<span class='pass'>passes</span> (exit 0)");
    else if (end && !strcmp(end, "exited"))
        rb_printf(b, "<span class='fail'>exit %lld</span>", (long long)JI(v, "status"));
    else if (end && !strcmp(end, "signaled"))
        rb_printf(b, "<span class='fail'>killed by signal %lld</span>", (long long)JI(v, "status"));
    else {
        rb_puts(b, "<span class='fail'>");
        rb_esc(b, end ? end : "?");
        rb_puts(b, "</span>");
    }
    if (JS(v, "bug")) {
        rb_puts(b, ": ");
        rb_esc(b, JS(v, "bug"));
    }
}

static void trace_end(rbuf *b, const report_trace *rt)
{
    uint32_t fl = rt->sum->flags;
    int32_t st = rt->sum->exit_status;
    if (fl & WEFT_TRACE_DEADLOCK)
        rb_puts(b, "<span class='fail'>deadlock</span>");
    else if (fl & WEFT_TRACE_TIMED_OUT)
        rb_puts(b, "<span class='fail'>timed out</span>");
    else if (st == WEFT_EXIT_STATUS_UNKNOWN)
        rb_puts(b, "<span class='fail'>unknown (salvaged afterwards)</span>");
    else if (st < 0)
        rb_printf(b, "<span class='fail'>killed by signal %d</span>", -st);
    else if (st)
        rb_printf(b, "<span class='fail'>exit %d</span>", st);
    else
        rb_puts(b, "<span class='pass'>exit 0</span>");
    if (fl & WEFT_TRACE_TRUNCATED)
        rb_puts(b, " (trace salvaged)");
}

/* The program's row: its command line, space-separated, as code. */
static void program_row(rbuf *b, char *const *argv, size_t argc)
{
    rb_puts(b, "<tr><th>program</th><td><code>");
    for (size_t i = 0; i < argc; i++) {
        rb_esc(b, argv[i]);
        rb_puts(b, i + 1 < argc ? " " : "");
    }
    rb_puts(b, "</code></td></tr>\n");
}

/* The traced run's rows: its size, shared addresses, their read/write
 * pattern and how the run ended. */
static void trace_rows(rbuf *b, const report_trace *rt)
{
    program_row(b, rt->meta->argv, rt->meta->argc);
    rb_printf(b,
              "<tr><th>threads</th><td>%u</td></tr>\n"
              "<tr><th>events</th><td>%zu: %" PRIu64 " reads, %" PRIu64 " writes, %" PRIu64
              " atomic read-modify-writes, %" PRIu64
              " other (threads, futexes, syscalls)</td></tr>\n"
              "<tr><th>virtual makespan</th><td>%" PRIu64 " ns</td></tr>\n"
              "<tr><th>shared addresses</th><td>%zu accessed by 2+ threads; %zu plainly "
              "written by 2+ threads (what the optimizer aligns)</td></tr>\n",
              rt->sum->nthreads, rt->n, rt->reads, rt->writes, rt->rmw, rt->sync, rt->sum->makespan,
              rt->shared_addrs, rt->ww_addrs);
    if (rt->total > rt->n)
        rb_printf(b,
                  "<tr><th>note</th><td>the trace has %" PRIu64 " events; this page "
                  "reads the first %zu</td></tr>\n",
                  rt->total, rt->n);
    rb_puts(b, "<tr><th>read/write pattern</th><td>");
    if (!rt->nvars)
        rb_puts(b, "no address is written by two threads");
    for (size_t i = 0; i < rt->nvars; i++) {
        rb_puts(b, i ? "<br>" : "");
        rb_puts(b, "<code>");
        rb_esc(b, rt->vars[i].name);
        rb_puts(b, "</code>: ");
        rb_esc(b, rt->vars[i].pattern);
    }
    if (rt->ww_addrs > rt->nvars)
        rb_printf(b, "<br>(and %zu more)", rt->ww_addrs - rt->nvars);
    rb_puts(b, "</td></tr>\n<tr><th>traced run</th><td>");
    trace_end(b, rt);
    rb_puts(b, "</td></tr>\n");
}

/* The plan's first collision; "none" when a search found nothing. */
static void collision_row(rbuf *b, json_t *plan, int say_none)
{
    json_t *inj0 = json_array_get(json_object_get(plan, "injections"), 0);
    if (!inj0) {
        if (say_none)
            rb_puts(b, "<tr><th>collision found</th><td>none: no pair of writes can be aligned"
                       "</td></tr>\n");
        return;
    }
    json_t *p = json_object_get(inj0, "predicted");
    rb_printf(b, "<tr><th>collision found</th><td>%lld ns before T%lld seq %lld",
              (long long)JI(inj0, "delay_ns"), (long long)JI(inj0, "thread"),
              (long long)JI(inj0, "seq"));
    if (JS(inj0, "function")) {
        rb_puts(b, " (");
        rb_esc(b, JS(inj0, "function"));
        if (JS(inj0, "file"))
            rb_printf(b, ", %s:%lld", JS(inj0, "file"), (long long)JI(inj0, "line"));
        rb_puts(b, ")");
    }
    if (json_is_object(p))
        rb_printf(b, " makes its write meet T%lld seq %lld at %lld ns",
                  (long long)JI(p, "thread_b"), (long long)JI(p, "seq_b"),
                  (long long)JI(p, "time"));
    if (JS(inj0, "variable")) {
        rb_puts(b, " on <code>");
        rb_esc(b, JS(inj0, "variable"));
        rb_puts(b, "</code>");
    }
    size_t ni = json_array_size(json_object_get(plan, "injections"));
    if (ni > 1)
        rb_printf(b, " (and %zu more pairs in the plan)", ni - 1);
    rb_puts(b, "</td></tr>\n");
}

/* Each campaign's failures, by verdict. */
static void campaign_rows(rbuf *b, const report_campaign *camps, size_t ncamps)
{
    for (size_t i = 0; i < ncamps; i++) {
        const replay_summary *s = &camps[i].sum;
        if (!camps[i].have_sum)
            continue;
        rb_printf(b, "<tr><th>%s, depth %" PRIu64 "</th><td>%" PRIu64 "/%" PRIu64 " runs failed",
                  s->policy, s->depth, s->hits, s->runs);
        const char *sep = ": ";
        for (int v = 1; v < REPLAY_VERDICT_COUNT; v++)
            if (s->verdicts[v]) {
                rb_printf(b, "%s%s %" PRIu64, sep, replay_verdict_name((replay_verdict)v),
                          s->verdicts[v]);
                sep = ", ";
            }
        rb_puts(b, "</td></tr>\n");
    }
}

void report_section_table1(rbuf *b, const report_trace *rt, json_t *plan, json_t *inject,
                           int searched, const report_campaign *camps, size_t ncamps)
{
    rb_puts(b, "<table class='kv'>\n");
    if (rt) {
        trace_rows(b, rt);
    } else if (ncamps && camps[0].cfg.run.argc) {
        /* no trace: the program as the campaigns ran it */
        program_row(b, camps[0].cfg.run.argv, (size_t)camps[0].cfg.run.argc);
        rb_printf(b,
                  "<tr><th>threads n, steps k</th><td>%" PRIu64 ", %" PRIu64
                  " (measured by the campaign's profiling run)</td></tr>\n",
                  camps[0].cfg.n, camps[0].cfg.k);
    }
    collision_row(b, plan, rt && searched);
    if (inject) {
        json_t *runs = json_object_get(inject, "runs");
        json_t *last = json_array_get(runs, json_array_size(runs) - 1);
        rb_printf(b,
                  "<tr><th>injected run</th><td>%lld of %lld planned alignments collided; "
                  "program: ",
                  (long long)JI(inject, "achieved"), (long long)JI(inject, "planned"));
        verdict_text(b, json_object_get(last, "verdict"));
        rb_puts(b, " (without the delays: ");
        verdict_text(b, json_object_get(inject, "uninjected"));
        rb_puts(b, ")</td></tr>\n");
    }
    campaign_rows(b, camps, ncamps);
    rb_puts(b, "</table>\n");
}

/* A plan's injections, and how to apply them. */
static void plan_table(rbuf *b, const char *dir, json_t *plan, const char *name)
{
    json_t *injs = json_object_get(plan, "injections");
    json_t *srch = json_object_get(plan, "search");
    rb_printf(b, "<h3>plan %s: %zu injection%s", name, json_array_size(injs),
              json_array_size(injs) == 1 ? "" : "s");
    if (srch && JI(srch, "evaluations"))
        rb_printf(b, " (seed %lld, found after %lld evaluations)", (long long)JI(srch, "seed"),
                  (long long)JI(srch, "evaluations"));
    rb_puts(b, "</h3>\n<figure><table><tr><th>delay</th><th>before</th><th>at</th>"
               "<th>variable</th><th>meets</th><th>predicted time</th></tr>\n");
    size_t k;
    json_t *in;
    json_array_foreach(injs, k, in)
    {
        if (k == 30) {
            rb_printf(b, "<tr><td colspan='6'>... %zu more</td></tr>\n",
                      json_array_size(injs) - 30);
            break;
        }
        json_t *p = json_object_get(in, "predicted");
        rb_printf(b, "<tr><td>%lld ns</td><td>T%lld seq %lld</td><td>",
                  (long long)JI(in, "delay_ns"), (long long)JI(in, "thread"),
                  (long long)JI(in, "seq"));
        rb_esc(b, JS(in, "function") ? JS(in, "function") : JS(in, "pc"));
        if (JS(in, "file"))
            rb_printf(b, " %s:%lld", JS(in, "file"), (long long)JI(in, "line"));
        rb_puts(b, "</td><td>");
        rb_esc(b, JS(in, "variable") ? JS(in, "variable") : "");
        if (json_is_object(p))
            rb_printf(b, "</td><td>T%lld seq %lld</td><td>%lld ns</td></tr>\n",
                      (long long)JI(p, "thread_b"), (long long)JI(p, "seq_b"),
                      (long long)JI(p, "time"));
        else
            rb_puts(b, "</td><td></td><td></td></tr>\n");
    }
    rb_puts(b, "</table>\n<figcaption>Each row is one delay of the plan: inserted just before "
               "thread T's event number <i>seq</i> (at that source line), it makes that write "
               "meet the event under &ldquo;meets&rdquo; at the predicted virtual time. Try it: "
               "<code>weft inject ");
    rb_esc(b, dir);
    rb_printf(b,
              "/plan-%s.json</code> reruns the program with these delays and checks each "
              "meeting (the next section shows what it measured).</figcaption></figure>\n",
              name);
}

static void searches_table(rbuf *b, json_t *const stats[], const char *const names[], size_t n)
{
    rb_puts(b, "<h3>searches: random search (RND), stochastic hill climbing (SHC), simulated "
               "annealing (SA)</h3>\n<figure><table><tr><th>algorithm</th><th>runs</th>"
               "<th>aligned</th><th>aligned: 95% Clopper&ndash;Pearson interval</th>"
               "<th>evaluations to the first alignment: quartiles</th><th>budget</th>"
               "<th>D<sub>max</sub></th><th>wall</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        json_t *s = stats[i], *ci = json_object_get(s, "ci95"),
               *q = json_object_get(s, "quartiles");
        rb_printf(b, "<tr><td>%s</td><td>%lld</td><td>%lld</td><td>%.1f%% .. %.1f%%</td><td>",
                  names[i], (long long)JI(s, "runs"), (long long)JI(s, "hits"),
                  100 * json_number_value(json_array_get(ci, 0)),
                  100 * json_number_value(json_array_get(ci, 1)));
        if (json_is_array(q))
            rb_printf(b, "%.0f / <b>%.0f</b> / %.0f", json_number_value(json_array_get(q, 0)),
                      json_number_value(json_array_get(q, 1)),
                      json_number_value(json_array_get(q, 2)));
        else
            rb_puts(b, "none aligned");
        rb_printf(b, "</td><td>%lld</td><td>%lld ns</td><td>%.2f s</td></tr>\n",
                  (long long)JI(s, "budget"), (long long)JI(s, "dmax"),
                  json_number_value(json_object_get(s, "wall_seconds")));
    }
    rb_puts(b, "</table>\n<figcaption>Each algorithm searched from several seeds, each run "
               "stopping at its first alignment or after <i>budget</i> evaluations, every delay "
               "at most D<sub>max</sub>. <i>aligned</i>: runs that found an alignment, and the "
               "95% Clopper&ndash;Pearson interval of that rate; quartiles of their evaluations "
               "(median in bold) are the box plot's; <i>wall</i> is the time of all runs. A "
               "search's best plan is the one above; <code>weft optimize --help</code> lists "
               "the settings.</figcaption></figure>\n");
}

void report_section_plans(rbuf *b, const char *dir, json_t *const plans[],
                          const char *const names[], size_t n, json_t *const stats[],
                          const char *const snames[], size_t ns)
{
    for (size_t i = 0; i < n; i++)
        plan_table(b, dir, plans[i], names[i]);
    if (ns)
        searches_table(b, stats, snames, ns);
}

void report_section_inject(rbuf *b, json_t *const injects[], const char *const names[], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_t *in = injects[i], *runs = json_object_get(in, "runs");
        rb_printf(b,
                  "<h3>plan %s replayed: %lld/%lld alignments collided</h3>\n<p>without the "
                  "delays the program ",
                  names[i], (long long)JI(in, "achieved"), (long long)JI(in, "planned"));
        verdict_text(b, json_object_get(in, "uninjected"));
        rb_puts(b, "</p>\n<figure><table><tr><th>injected run</th><th>program</th><th>pair</th>"
                   "<th>predicted</th><th>achieved</th><th>result</th></tr>\n");
        size_t k;
        json_t *r;
        json_array_foreach(runs, k, r)
        {
            size_t j;
            json_t *al;
            json_array_foreach(json_object_get(r, "alignments"), j, al)
            {
                if (j == 10)
                    break;
                rb_printf(b, "<tr><td>%zu</td><td>", k + 1);
                if (j == 0)
                    verdict_text(b, json_object_get(r, "verdict"));
                rb_printf(b, "</td><td>T%lld seq %lld / T%lld seq %lld</td><td>%lld ns</td>",
                          (long long)JI(al, "thread_a"), (long long)JI(al, "seq_a"),
                          (long long)JI(al, "thread_b"), (long long)JI(al, "seq_b"),
                          (long long)JI(al, "predicted"));
                if (json_object_get(al, "achieved_a"))
                    rb_printf(b, "<td>%lld / %lld ns</td>", (long long)JI(al, "achieved_a"),
                              (long long)JI(al, "achieved_b"));
                else
                    rb_puts(b, "<td>&ndash;</td>");
                if (json_is_true(json_object_get(al, "collided")))
                    rb_puts(b, "<td class='pass'>collided</td></tr>\n");
                else {
                    rb_puts(b, "<td class='fail'>missed");
                    if (JS(al, "why")) {
                        rb_puts(b, ": ");
                        rb_esc(b, JS(al, "why"));
                    }
                    rb_puts(b, "</td></tr>\n");
                }
            }
        }
        rb_puts(b, "</table>\n<figcaption>Each row is one run of the program with the plan's "
                   "delays and one planned pair: <i>predicted</i> is the virtual time the plan "
                   "promised, <i>achieved</i> the times the two writes happened; they collided "
                   "if the two are equal. A delay can shift other threads a little, so a missed "
                   "pair is retried with its delay corrected by the miss (the next run). "
                   "Reproduce: <code>weft inject ");
        rb_esc(b, JS(in, "plan") ? JS(in, "plan") : names[i]);
        rb_puts(b, "</code>; add <code>--keep DIR</code> to keep the runs' traces.</figcaption>"
                   "</figure>\n");
    }
}

void report_section_commands(rbuf *b, json_t *demo)
{
    json_t *steps = json_object_get(demo, "steps");
    rb_puts(b, "<figure><table class='cmds'><tr><th>step</th><th>exit</th><th>command</th>"
               "<th>log</th></tr>\n");
    size_t i;
    json_t *st;
    json_array_foreach(steps, i, st)
    {
        rb_puts(b, "<tr><td>");
        rb_esc(b, JS(st, "name"));
        rb_printf(b, "</td><td>%lld</td><td><code>", (long long)JI(st, "status"));
        rb_esc(b, JS(st, "command"));
        rb_puts(b, "</code></td><td>");
        rb_esc(b, JS(st, "log"));
        rb_puts(b, "</td></tr>\n");
    }
    rb_puts(b, "</table>\n<figcaption>Every step the demo ran, in order, with its exit status "
               "(<code>weft replay</code> exits 10 when some run failed: a finding, not an "
               "error): run a command again to reproduce its step. Each step's full output is "
               "in its log, in the demo's folder.</figcaption></figure>\n");
}
