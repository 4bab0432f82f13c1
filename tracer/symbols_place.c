/* Where the run had the program and its shared objects: a position-
 * independent program's bias from qemu's start_code, and each shared
 * object's symbols, placed at its mapping (weft_trace_meta's objects). */
#include "symbols_internal.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>

void weft_symbols_relocate(weft_symbols *s, uint64_t start_code)
{
    if (s && s->pie && start_code && s->nexec) {
        uint64_t lo = s->exec_lo[0];
        for (size_t i = 1; i < s->nexec; i++)
            if (s->exec_lo[i] < lo)
                lo = s->exec_lo[i];
        s->bias = (int64_t)(start_code - lo);
    }
}

int weft_elf_offset_vaddr(void *elf, uint64_t offset, uint64_t *vaddr)
{
    size_t n;
    if (elf_getphdrnum(elf, &n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && offset + 4096 > ph.p_offset &&
            offset < ph.p_offset + ph.p_filesz) {
            *vaddr = ph.p_vaddr - ph.p_offset + offset;
            return 0;
        }
    }
    return -1;
}

void weft_symbols_place(weft_symbols *s, uint64_t start_code, const weft_trace_object *objects,
                        uint32_t n)
{
    if (!s)
        return;
    weft_symbols_relocate(s, start_code);
    if (s->objects || !n || !(s->objects = calloc(n, sizeof *s->objects)))
        return; /* placed already, nothing to place, or no memory: unnamed */
    for (uint32_t i = 0; i < n; i++) {
        char err[256];
        weft_symbols *o = weft_symbols_open(objects[i].path, err, sizeof err);
        char *path = o ? strdup(objects[i].path) : NULL;
        uint64_t v;
        if (!path || weft_elf_offset_vaddr(o->elf, objects[i].offset, &v) < 0) {
            weft_symbols_close(o); /* stripped of every symbol, or gone: its pcs stay unnamed */
            free(path);
            continue;
        }
        o->bias = (int64_t)(objects[i].lo - v);
        const char *base = strrchr(path, '/');
        s->objects[s->nobjects++] = (struct placed_object){.syms = o,
                                                           .lo = objects[i].lo,
                                                           .hi = objects[i].hi,
                                                           .path = path,
                                                           .name = base ? base + 1 : path};
    }
}

const char *weft_symbols_object_of(weft_symbols *s, uint64_t pc)
{
    for (size_t i = 0; s && i < s->nobjects; i++)
        if (pc >= s->objects[i].lo && pc < s->objects[i].hi)
            return s->objects[i].name;
    return NULL;
}

weft_symbols *weft_symbols_open_run(const char *binary, const weft_trace_meta *meta, char *err,
                                    size_t errlen)
{
    weft_symbols *s = weft_symbols_open(binary, err, errlen);
    if (s && meta)
        weft_symbols_place(s, meta->start_code, meta->objects, meta->nobjects);
    return s;
}

bool trc_sym_in_exec(const weft_symbols *s, uint64_t addr)
{
    for (size_t i = 0; i < s->nexec; i++)
        if (addr >= s->exec_lo[i] && addr < s->exec_hi[i])
            return true;
    return s->nexec == 0; /* no program headers: cannot tell */
}

weft_symbols *trc_sym_object_at(const weft_symbols *s, uint64_t a, bool code)
{
    for (size_t i = 0; i < s->nobjects; i++) {
        weft_symbols *o = s->objects[i].syms;
        uint64_t link = a - (uint64_t)o->bias;
        if (code ? a >= s->objects[i].lo && a < s->objects[i].hi && trc_sym_in_exec(o, link)
                 : link >= o->load_lo && link < o->load_hi)
            return o;
    }
    return NULL;
}

int64_t weft_symbols_bias(const weft_symbols *s)
{
    return s ? s->bias : 0;
}
