/* The symbols object's layout, shared by symbols.c (names, lines) and
 * symbols_code.c (the program's own code, its synchronization calls).
 * Private to tracer/. */
#ifndef WEFT_TRACER_SYMBOLS_INTERNAL_H
#define WEFT_TRACER_SYMBOLS_INTERNAL_H

#include "trace_internal.h"

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>

typedef struct sym {
    uint64_t addr, size;
    const char *name; /* in the ELF string table */
    int rank;         /* lower is preferred among aliases at one address */
} sym;

typedef struct cu_range {
    uint64_t lo, hi;
    Dwarf_Die cu;
} cu_range;

typedef struct pc_info {
    const char *function, *file;
    int line;
    bool found;
} pc_info;

struct weft_symbols {
    int fd;
    Elf *elf;
    Dwarf *dw; /* NULL without debug info */
    sym *funcs, *objs;
    size_t nfuncs, nobjs;
    cu_range *cus;
    size_t ncus;
    trc_addrmap pc_cache; /* pc -> index + 1 in infos */
    pc_info *infos;
    size_t ninfos, cap_infos;
};

#endif
