/* Where the guest's shared objects (the loader, the C library, what the
 * program links or dlopens) are, so that readers can name their pcs: qemu
 * maps a guest file at host address guest_base + its guest address, so the
 * host's /proc/self/maps lists them, among qemu's own (x86-64) objects. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_state.h"

static int is_aarch64_elf(const char *path)
{
    unsigned char h[20];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = pread(fd, h, sizeof h, 0);
    close(fd);
    /* e_machine, little-endian at offset 18: EM_AARCH64 (183) */
    return n == (ssize_t)sizeof h &&
           !memcmp(h,
                   "\x7f"
                   "ELF",
                   4) &&
           h[18] == 183 && h[19] == 0;
}

/* A file mapping of the guest's: its range and offset, its path in line.
 * qemu maps guest code without the host's exec permission, so every file
 * mapping counts; one object's mappings follow each other. */
static int guest_mapping(char *line, uintptr_t base, weft_trace_object *o)
{
    unsigned long long lo, hi, off;
    int at = 0;
    if (sscanf(line, "%llx-%llx %*s %llx %*s %*s%n", &lo, &hi, &off, &at) < 3 || !at || lo < base)
        return 0;
    char *path = line + at;
    path += strspn(path, " ");
    path[strcspn(path, "\n")] = 0;
    *o = (weft_trace_object){.lo = lo - base, .hi = hi - base, .offset = off, .path = path};
    return path[0] == '/';
}

void plugin_note_objects(void)
{
    uintptr_t base;
    FILE *f;
    if (!plugin_guest_base(&base) || !(f = fopen("/proc/self/maps", "r")))
        return;
    weft_trace_object *v = calloc(WEFT_TRACE_MAX_OBJECTS, sizeof *v), cur;
    uint32_t n = 0;
    char line[PATH_MAX + 128];
    uint64_t start = g_plugin.meta.start_code;
    char rejected[PATH_MAX] = ""; /* the last path that was not the guest's */
    while (v && fgets(line, sizeof line, f)) {
        if (!guest_mapping(line, base, &cur))
            continue;
        weft_trace_object *last = n ? &v[n - 1] : NULL;
        if (last && !strcmp(last->path, cur.path)) { /* the same object, further on */
            last->hi = cur.hi > last->hi ? cur.hi : last->hi;
            continue;
        }
        if (n == WEFT_TRACE_MAX_OBJECTS || !strcmp(cur.path, rejected))
            continue;
        if (!is_aarch64_elf(cur.path)) { /* one of qemu's own */
            snprintf(rejected, sizeof rejected, "%s", cur.path);
            continue;
        }
        v[n] = cur;
        if (!(v[n].path = strdup(cur.path)))
            break;
        n++;
    }
    fclose(f);
    if (!v)
        return;
    /* The program itself is placed by start_code. */
    for (uint32_t i = 0; i < n; i++)
        if (start >= v[i].lo && start < v[i].hi) {
            free(v[i].path);
            memmove(&v[i], &v[i + 1], (n - i - 1) * sizeof *v);
            n--;
            break;
        }

    weft_trace_meta *m = &g_plugin.meta;
    for (uint32_t i = 0; i < m->nobjects; i++)
        free(m->objects[i].path);
    free(m->objects);
    m->objects = v;
    m->nobjects = n;
    if (g_plugin.writer)
        weft_trace_writer_set_loaded(g_plugin.writer, m);
}
