/* A runs.jsonl: its lines in seed order, which a campaign sorts its own by
 * at the end and weft merge its shards' by (merge.c), and the seeds it holds,
 * which --resume skips. Out of campaign.c, which runs the seeds. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/replay.h"

#include "runs_file.h"

int replay_line_cmp(const void *a, const void *b)
{
    const replay_line *x = a, *y = b;
    if (x->seed != y->seed)
        return x->seed < y->seed ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

int replay_lines_read(FILE *f, size_t tag, replay_line **lines, size_t *n, size_t *cap)
{
    char *buf = NULL;
    size_t blen = 0;
    ssize_t got;
    int rc = 0;
    while ((got = getline(&buf, &blen, f)) > 0) {
        if (buf[got - 1] != '\n')
            break;
        /* NUL bytes (zeros a crash left in the file) would cut the line's
         * text short, and its newline with it: they become spaces. */
        for (char *z = memchr(buf, 0, (size_t)got); z; z = memchr(z, 0, (size_t)(buf + got - z)))
            *z = ' ';
        json_t *o = json_loads(buf, 0, NULL);
        json_t *s = o ? json_object_get(o, "seed") : NULL;
        uint64_t seed = json_is_integer(s) ? (uint64_t)json_integer_value(s) : UINT64_MAX;
        json_decref(o);
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 256;
            replay_line *m = realloc(*lines, c * sizeof *m);
            if (!m) {
                rc = -1;
                break;
            }
            *lines = m;
            *cap = c;
        }
        (*lines)[*n] = (replay_line){seed, *n, tag, strdup(buf)};
        (*n)++;
    }
    free(buf);
    return rc;
}

int replay_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Seeds already in runs.jsonl (sorted); a last line cut short by a kill is
 * removed so that appends start on a fresh line. */
int replay_runs_done(const char *path, uint64_t **seeds, size_t *n)
{
    *seeds = NULL;
    *n = 0;
    FILE *f = fopen(path, "r+");
    if (!f)
        return errno == ENOENT ? 0 : (weft_error("%s: %s", path, strerror(errno)), -1);
    size_t cap = 0;
    char *buf = NULL;
    size_t blen = 0;
    ssize_t got;
    off_t good = 0;
    while ((got = getline(&buf, &blen, f)) > 0) {
        if (buf[got - 1] != '\n')
            break;
        good += got;
        json_t *o = json_loads(buf, 0, NULL);
        json_t *s = o ? json_object_get(o, "seed") : NULL;
        if (json_is_integer(s)) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 256;
                uint64_t *m = realloc(*seeds, cap * sizeof *m);
                if (!m) {
                    json_decref(o);
                    break;
                }
                *seeds = m;
            }
            (*seeds)[(*n)++] = (uint64_t)json_integer_value(s);
        }
        json_decref(o);
    }
    free(buf);
    if (ftruncate(fileno(f), good) != 0)
        weft_error("%s: %s", path, strerror(errno));
    fclose(f);
    if (*n)
        qsort(*seeds, *n, sizeof **seeds, replay_u64_cmp);
    return 0;
}

/* At the end: runs.jsonl in seed order (a seed once), so two campaigns with
 * the same arguments give the same file apart from wall times. */
void replay_runs_sort(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    replay_line *lines = NULL;
    size_t n = 0, cap = 0, total = 0;
    if (replay_lines_read(f, 0, &lines, &n, &cap) == 0) {
        qsort(lines, n, sizeof *lines, replay_line_cmp);
        for (size_t i = 0; i < n; i++)
            total += lines[i].text ? strlen(lines[i].text) : 0;
        char *all = malloc(total + 1);
        size_t len = 0;
        for (size_t i = 0; all && i < n; i++) {
            if (!lines[i].text || (i && lines[i].seed == lines[i - 1].seed))
                continue;
            size_t l = strlen(lines[i].text);
            memcpy(all + len, lines[i].text, l);
            len += l;
        }
        char err[512];
        if (all && weft_write_atomic(path, all, len, err, sizeof err))
            weft_error("%s", err);
        free(all);
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i].text);
    free(lines);
    fclose(f);
}
