/* Points files, and --points races: CHESS drives its schedule points from
 * its race detector; here the plain accesses that are schedule points are
 * the ones at the pcs weft races reports in the profiling trace, instead of
 * every access to a shared address. The visible points' synchronization
 * calls, atomics and exits stay points. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "weft/replay.h"

int replay_race_pcs(const char *trace_path, const char *binary, const char *path, uint64_t *npcs,
                    uint64_t *nraces)
{
    char err[512];
    weft_races_config cfg = weft_races_config_default();
    cfg.binary = binary && access(binary, R_OK) == 0 ? binary : NULL;
    weft_races *d = weft_races_create(&cfg, err, sizeof err);
    weft_trace *t = d ? weft_trace_open(trace_path, err, sizeof err) : NULL;
    if (!t || weft_races_analyze(d, t, err, sizeof err)) {
        weft_error("profiling: races: %s", err);
        if (t)
            weft_trace_close(t);
        weft_races_free(d);
        return -1;
    }
    weft_trace_close(t);
    const uint64_t *pcs;
    size_t n = weft_races_pcs(d, &pcs);
    size_t cap = n * 20 + 1, len = 0;
    char *buf = malloc(cap);
    for (size_t i = 0; buf && i < n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%" PRIx64 "\n", pcs[i]);
    *npcs = n;
    *nraces = weft_races_count(d);
    weft_races_free(d);
    int rc = buf ? weft_write_atomic(path, buf, len, err, sizeof err) : -1;
    if (rc)
        weft_error("%s", buf ? err : "out of memory");
    free(buf);
    return rc;
}

static int cmp_pc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int replay_pcs_load(const char *path, uint64_t **pcs, size_t *n)
{
    *pcs = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t cap = 0;
    char line[64];
    while (fgets(line, sizeof line, f)) {
        char *end;
        uint64_t pc = strtoull(line, &end, 16);
        if (end == line)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            uint64_t *p = realloc(*pcs, cap * sizeof *p);
            if (!p) {
                fclose(f);
                free(*pcs);
                *pcs = NULL;
                *n = 0;
                return -1;
            }
            *pcs = p;
        }
        (*pcs)[(*n)++] = pc;
    }
    fclose(f);
    if (*n)
        qsort(*pcs, *n, sizeof **pcs, cmp_pc);
    return 0;
}
