/* Points files: one hex pc per line. weft replay's profiling writes the
 * instructions that are schedule points (--points visible, shared, races);
 * the plugin reads them, and exact mode's speculation the pcs that need a
 * gate. Lines that do not start with a hex number are skipped. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/trace.h"

static int cmp_pc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int weft_pcs_load(const char *path, uint64_t **pcs, size_t *n, char *err, size_t errlen)
{
    *pcs = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
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
                snprintf(err, errlen, "%s: out of memory", path);
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

int weft_pcs_contain(const uint64_t *pcs, size_t n, uint64_t pc)
{
    return n && bsearch(&pc, pcs, n, sizeof *pcs, cmp_pc) != NULL;
}

int weft_pcs_write(const char *path, uint64_t *pcs, size_t *n, char *err, size_t errlen)
{
    if (*n)
        qsort(pcs, *n, sizeof *pcs, cmp_pc);
    size_t m = 0;
    for (size_t i = 0; i < *n; i++)
        if (!m || pcs[m - 1] != pcs[i])
            pcs[m++] = pcs[i];
    *n = m;
    size_t cap = m * 20 + 1, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (size_t i = 0; i < m; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%" PRIx64 "\n", pcs[i]);
    int rc = weft_write_atomic(path, buf, len, err, errlen);
    free(buf);
    return rc;
}
