/* A run's record, from the plugin's JSON, or from the status page its policy
 * kept up to date when the guest died before the plugin could write one
 * (qemu-user re-raises a fatal signal with the default action: no exit
 * callback runs). An assertion's abort is the commonest end of a failing
 * run, and a profiling run that finds the bug is one: without its steps, k
 * was counted from the trace, every synchronization event of the C library
 * included, and came out tens of times too large. */
#include "run_record.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/pct.h"

static void status_path(const char *path, char *out, size_t len)
{
    snprintf(out, len, "%s.status", path);
}

/* The page as the policy left it; 0, or -1 (none, short, or never filled). */
static int read_status(const char *path, pct_status *st)
{
    char sp[PATH_MAX + 16];
    status_path(path, sp, sizeof sp);
    int fd = open(sp, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = pread(fd, st, sizeof *st, 0);
    close(fd);
    if (n != (ssize_t)sizeof *st || st->magic != PCT_STATUS_MAGIC)
        return -1;
    return 0;
}

json_t *replay_record_load(const char *path)
{
    json_t *rec = json_load_file(path, 0, NULL);
    if (rec)
        return rec;
    pct_status *st = malloc(sizeof *st); /* 32 KiB: not on a worker's stack */
    if (!st || read_status(path, st)) {
        free(st);
        return NULL;
    }
    json_t *cps = json_array();
    uint64_t ncp = st->nchange_points < PCT_MAX_DEPTH ? st->nchange_points : PCT_MAX_DEPTH;
    for (uint64_t i = 0; cps && i < ncp; i++)
        json_array_append_new(cps, json_integer((json_int_t)st->change_points[i]));
    rec = json_pack("{s:I, s:I, s:I, s:I, s:I, s:o, s:b}", "steps", (json_int_t)st->steps,
                    "yield_steps", (json_int_t)st->yield_steps, "threads", (json_int_t)st->threads,
                    "overrides", (json_int_t)st->overrides, "low_set_ever",
                    (json_int_t)st->low_set_ever, "change_points", cps ? cps : json_array(), "died",
                    1);
    free(st);
    return rec;
}

int replay_record_end(const char *path, weft_run_end *out)
{
    char sp[PATH_MAX + 16];
    status_path(path, sp, sizeof sp);
    int fd = open(sp, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = pread(fd, out, sizeof *out, (off_t)sizeof(pct_status));
    close(fd);
    if (n != (ssize_t)sizeof *out)
        return -1;
    if (out->fault_magic != WEFT_RUN_END_MAGIC)
        memset(&out->fault, 0, sizeof out->fault);
    if (out->raised_magic != WEFT_RUN_END_MAGIC)
        out->raised_signal = 0;
    return out->fault_magic == WEFT_RUN_END_MAGIC || out->raised_magic == WEFT_RUN_END_MAGIC ? 0
                                                                                             : -1;
}

int replay_record_died(const json_t *rec)
{
    return rec && json_is_true(json_object_get(rec, "died"));
}

void replay_record_remove_status(const char *path)
{
    char sp[PATH_MAX + 16];
    status_path(path, sp, sizeof sp);
    unlink(sp);
}
