/* A campaign's runs.jsonl (runs_file.c), private to replay/: what campaign.c
 * needs of the file beside the lines replay.h declares. */
#ifndef WEFT_REPLAY_RUNS_FILE_H
#define WEFT_REPLAY_RUNS_FILE_H

#include <stddef.h>
#include <stdint.h>

/* qsort / bsearch comparator of uint64_t. */
int replay_u64_cmp(const void *a, const void *b);
/* Seeds already in runs.jsonl at path (sorted, malloc'd); a last line cut
 * short by a kill is removed so that appends start on a fresh line. 0, or
 * -1 after one line. */
int replay_runs_done(const char *path, uint64_t **seeds, size_t *n);
/* runs.jsonl in seed order (a seed once), so two campaigns with the same
 * arguments give the same file apart from wall times. */
void replay_runs_sort(const char *path);

#endif
