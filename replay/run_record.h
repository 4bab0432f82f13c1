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
/* How the run died, from path.status (the tracer's weft_run_end, parts
 * not filled zeroed); 0, or -1 if it says nothing. */
int replay_record_end(const char *path, weft_run_end *out);
/* What the run end says, named with binary's symbols where qemu loaded it
 * (explain.c): "T1 at worker (segv.c:30), writing 0x0" for a fault; "T1
 * raised it, last in the program at work(int) (vec.cpp:5)" for a signal a
 * thread sent itself; "" if neither. */
void replay_end_words(const char *binary, const weft_run_end *e, char *buf, size_t len);
/* Removes path.status. */
void replay_record_remove_status(const char *path);

/* run_detail.c: a livelock's detail from the plugin's report on the
 * guest's stderr (errf), each spinner's pc named with binary's symbols. */
void replay_spinners(const char *errf, const char *binary, uint64_t start_code, char *detail,
                     size_t len);
/* A deadlock's: each live thread whose last event in the trace is a futex
 * wait, which word and object, where, and who holds a mutex (rec's
 * holders); appends an entry per thread to waits and words to detail. */
void replay_describe_waits(const char *trace_path, const char *binary, json_t *rec, json_t *waits,
                           char *detail, size_t len);

#endif
