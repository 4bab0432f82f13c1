/* A campaign's progress on stderr: done and hits against the runs to go,
 * or against the time left under --for. */
#include "campaign_progress.h"

#include <inttypes.h>
#include <stdio.h>

#include "weft/trace.h"

void progress_clear(const progress *p)
{
    if (p->tty)
        fputs("\r\033[K", stderr);
}

/* Under --for: the time is the budget, the runs are what fit. */
static void progress_show_timed(progress *p)
{
    double now = weft_now_s(), el = now - p->t0, span = p->deadline - p->t0;
    double left = p->deadline > now ? p->deadline - now : 0;
    double per = p->done ? el / (double)p->done : 0;
    if (p->tty) {
        int width = 30, fill = span > 0 && el < span ? (int)(width * el / span) : width;
        fprintf(stderr,
                "\r\033[K[%.*s%*s] %" PRIu64 " runs, %" PRIu64 " hit%s, %.2f s/run, %.0f s left",
                fill, "##############################", width - fill, "", p->done, p->hits,
                p->hits == 1 ? "" : "s", per, left);
        fflush(stderr);
    } else if (now - p->last_line > (span / 10 < 60 ? span / 10 : 60)) {
        fprintf(stderr, "weft: %" PRIu64 " runs, %" PRIu64 " hit%s, %.2f s/run, %.0f s left\n",
                p->done, p->hits, p->hits == 1 ? "" : "s", per, left);
        p->last_line = now;
    }
}

void progress_show(progress *p)
{
    if (p->deadline) {
        progress_show_timed(p);
        return;
    }
    double el = weft_now_s() - p->t0;
    double per = p->done ? el / (double)p->done : 0;
    double eta = per * (double)(p->total - p->done);
    if (p->tty) {
        int width = 30, fill = p->total ? (int)(width * p->done / p->total) : width;
        fprintf(stderr,
                "\r\033[K[%.*s%*s] %" PRIu64 "/%" PRIu64 " runs, %" PRIu64
                " hit%s, %.2f s/run, ETA %.0f s",
                fill, "##############################", width - fill, "", p->done, p->total,
                p->hits, p->hits == 1 ? "" : "s", per, eta);
        fflush(stderr);
    } else if (p->done >= p->next_line_at || weft_now_s() - p->last_line > 60) {
        fprintf(stderr, "weft: %" PRIu64 "/%" PRIu64 " runs, %" PRIu64 " hit%s, %.2f s/run\n",
                p->done, p->total, p->hits, p->hits == 1 ? "" : "s", per);
        p->last_line = weft_now_s();
        uint64_t step = p->total / 10 ? p->total / 10 : 1;
        while (p->next_line_at <= p->done)
            p->next_line_at += step;
    }
}
