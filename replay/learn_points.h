/* Schedule points learnt from profiling schedules (learn_points.c),
 * private to replay/: profile.c feeds it the traces of each round of
 * profiling runs until a round adds no pc. */
#ifndef WEFT_REPLAY_LEARN_POINTS_H
#define WEFT_REPLAY_LEARN_POINTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct learn_points learn_points;

/* races: learn the racy pcs (--points races) instead of the pcs touching
 * shared addresses; binary: the program (races read its instructions).
 * NULL after one line. */
learn_points *learn_points_new(int races, const char *binary);
/* Learn from one round's traces; *added: pcs not known before. 0, or -1
 * after one line. */
int learn_points_add(learn_points *p, const char *const *traces, size_t n, size_t *added);
/* The pcs learnt so far. */
uint64_t learn_points_pcs(const learn_points *p);
/* Shared granules (races: race reports, summed over the traces) so far. */
uint64_t learn_points_found(const learn_points *p);
/* The pcs as a points file at path (atomically). 0, or -1 after one line. */
int learn_points_write(const learn_points *p, const char *path);
void learn_points_free(learn_points *p);

#endif
