/* A run's record (run_record.c), private to replay/: the plugin's JSON
 * record, or for a run whose guest died of a signal before it wrote one,
 * the counts its policy kept in the record's .status file. */
#ifndef WEFT_REPLAY_RUN_RECORD_H
#define WEFT_REPLAY_RUN_RECORD_H

#include <jansson.h>
#include <stddef.h>

#include "weft/trace.h"

/* The record at path; else, from path.status, an object with the record's
 * steps, threads, overrides, low_set_ever and change_points and "died":
 * true (no switches: the run's switch log has them); else NULL. */
json_t *replay_record_load(const char *path);
/* Did the plugin die before writing rec (replay_record_load's "died")? */
int replay_record_died(const json_t *rec);
/* The fault the run died of, from path.status (the tracer's
 * weft_run_fault); 0, or -1 if it has none. */
int replay_record_fault(const char *path, weft_run_fault *out);
/* "T1 at worker (segv.c:30), writing 0x0": the fault's place, named with
 * binary's symbols where qemu loaded it (explain.c). */
void replay_fault_words(const char *binary, const weft_run_fault *f, char *buf, size_t len);
/* Removes path.status. */
void replay_record_remove_status(const char *path);

#endif
