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
    const char *name;  /* in the ELF string table */
    int rank;          /* lower is preferred among aliases at one address */
    const char *shown; /* a data symbol's name as shown (demangled), made on first use */
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
    /* The separate debug file holding a stripped library's .symtab, or
     * -1 and NULL (open_debug_file). */
    int dbg_fd;
    Elf *dbg_elf;
    Dwarf *dw; /* NULL without debug info */
    sym *funcs, *objs;
    size_t nfuncs, nobjs;
    cu_range *cus;
    size_t ncus;
    trc_addrmap pc_cache; /* pc -> index + 1 in infos */
    pc_info *infos;
    size_t ninfos, cap_infos;
    char **plt_names; /* "name@plt" of the PLT stubs among funcs, owned */
    size_t nplt;
    char **demangled; /* C++ names as shown, owned */
    size_t ndemangled;
    /* The executable PT_LOAD segments, link-time: a pc outside them is not
     * this binary's, whatever symbol precedes it. */
    uint64_t exec_lo[8], exec_hi[8];
    size_t nexec;
    bool pie;                  /* ET_DYN: loaded wherever qemu chooses */
    int64_t bias;              /* run-time address - link-time address (weft_symbols_relocate) */
    uint64_t load_lo, load_hi; /* all its PT_LOAD segments, link-time */
    /* The run's shared objects (weft_symbols_place). */
    struct placed_object {
        struct weft_symbols *syms; /* biased to where the run had it */
        uint64_t lo, hi;           /* its mappings, run-time */
        char *path;                /* owned */
        const char *name;          /* its file name, in path */
    } * objects;
    size_t nobjects;
    /* symbols_member.c: the debug info's variables with a static address,
     * by link-time address, built at the first question */
    struct var_die *vars;
    size_t nvars;
    int vars_built;
};

/* symbols_place.c: is a link-time address in s's executable segments
 * (true when s has no program headers: it cannot tell)? */
bool trc_sym_in_exec(const weft_symbols *s, uint64_t addr);
/* The shared object whose code holds run-time pc a, or whose segments hold
 * a data address (code = false); NULL if none. */
weft_symbols *trc_sym_object_at(const weft_symbols *s, uint64_t a, bool code);
/* symbols_source.c: pc's (link-time) file and line into info. */
void trc_sym_lookup_line(weft_symbols *s, uint64_t pc, pc_info *info);
/* name as shown: C++ names demangled (owned by s); others as they are. */
const char *trc_sym_demangled(weft_symbols *s, const char *name);

/* Each stub of a dynamic binary's lazy PLT with the function it calls
 * (symbols_code.c), after the PLT's 32-byte header with name NULL; each's
 * non-zero return stops with -1. */
int weft_plt_stubs(weft_symbols *s, int (*each)(void *ctx, uint64_t stub, const char *name),
                   void *ctx);

#endif
