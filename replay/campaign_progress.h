/* What a campaign says as it goes (campaign_progress.c), private to
 * replay/: its progress on stderr, a bar on a terminal, a line every tenth
 * of the runs (or of the --for budget) and at least every minute
 * otherwise; its failing runs on stdout, in seed order. */
#ifndef WEFT_REPLAY_CAMPAIGN_PROGRESS_H
#define WEFT_REPLAY_CAMPAIGN_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "weft/replay.h"

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

/* Failing runs finished but not said yet (seeds ascending): a run is said
 * once every lower seed is done, so that the lines come in seed order
 * whatever the jobs and the host's timing. Each line is read from the
 * worker's tmp_dir/SEED.line. */
typedef struct unsaid_runs {
    uint64_t *seeds;
    size_t n, cap;
} unsaid_runs;
void unsaid_add(unsaid_runs *u, const replay_config *c, uint64_t seed, const char *tmp_dir,
                const progress *pg);
/* Says those below `below` (UINT64_MAX: all). */
void unsaid_say(unsaid_runs *u, uint64_t below, const replay_config *c, const char *tmp_dir,
                const progress *pg);

#endif
