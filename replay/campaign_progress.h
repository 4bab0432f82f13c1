/* A campaign's progress on stderr (campaign_progress.c), private to
 * replay/: a bar on a terminal, a line every tenth of the runs (or of the
 * --for budget) and at least every minute otherwise. */
#ifndef WEFT_REPLAY_CAMPAIGN_PROGRESS_H
#define WEFT_REPLAY_CAMPAIGN_PROGRESS_H

#include <stdint.h>

typedef struct progress {
    int tty;
    uint64_t total, done, hits;
    double t0, last_line;
    uint64_t next_line_at;
    double deadline; /* --for: the bar shows the time, not the runs */
} progress;

/* Clears the bar before another line is printed. */
void progress_clear(const progress *p);
/* After a run was counted. */
void progress_show(progress *p);

#endif
