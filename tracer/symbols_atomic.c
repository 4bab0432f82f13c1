/* The program's atomic globals from its debug info: a relaxed atomic load
 * or store compiles to a plain LDR or STR, which the trace cannot tell
 * from a non-atomic access, and a variable no atomic instruction touches
 * in a trace (a flag only ever stored and loaded relaxed, a seqlock's
 * data read and written with relaxed atomics) was checked as plain memory
 * by weft races: a race on every correct use. Its type says it is atomic. */
#include "symbols_internal.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <string.h>

/* C11's _Atomic (atomic_int, atomic_flag), std::atomic<T> and its bases,
 * std::atomic_flag; through typedefs, qualifiers and arrays. */
static int atomic_type(Dwarf_Die *t)
{
    for (int depth = 0; depth < 16; depth++) {
        int tag = dwarf_tag(t);
        if (tag == DW_TAG_atomic_type)
            return 1;
        if (tag == DW_TAG_structure_type || tag == DW_TAG_class_type) {
            const char *n = dwarf_diename(t);
            return n && (!strncmp(n, "atomic<", 7) || !strncmp(n, "__atomic_base<", 14) ||
                         !strncmp(n, "__atomic_float<", 15) || !strcmp(n, "atomic_flag") ||
                         !strcmp(n, "__atomic_flag_base"));
        }
        if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
            tag != DW_TAG_array_type)
            return 0;
        Dwarf_Attribute a;
        if (!dwarf_attr_integrate(t, DW_AT_type, &a) || !dwarf_formref_die(&a, t))
            return 0;
    }
    return 0;
}

typedef struct walk {
    weft_symbols *s;
    int (*each)(void *ctx, uint64_t addr, uint64_t size);
    void *ctx;
    int rc;
} walk;

/* A variable with a static address (DW_OP_addr) of an atomic type. */
static void variable(walk *w, Dwarf_Die *v)
{
    Dwarf_Attribute a;
    Dwarf_Op *ops;
    size_t n;
    Dwarf_Die type, sized;
    Dwarf_Word size;
    if (!dwarf_attr(v, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &n) != 0 || n != 1 ||
        ops[0].atom != DW_OP_addr || !dwarf_attr_integrate(v, DW_AT_type, &a) ||
        !dwarf_formref_die(&a, &type))
        return;
    sized = type;
    if (!atomic_type(&type) || dwarf_aggregate_size(&sized, &size) != 0 || size == 0)
        return;
    if (w->each(w->ctx, ops[0].number + (uint64_t)w->s->bias, size) != 0)
        w->rc = -1;
}

/* Globals, namespaces' and classes' statics, and functions' static locals. */
static void walk_die(walk *w, Dwarf_Die *die, int depth)
{
    Dwarf_Die c;
    if (depth > 32 || dwarf_child(die, &c) != 0)
        return;
    do {
        int tag = dwarf_tag(&c);
        if (tag == DW_TAG_variable)
            variable(w, &c);
        else if (tag == DW_TAG_namespace || tag == DW_TAG_subprogram ||
                 tag == DW_TAG_lexical_block || tag == DW_TAG_structure_type ||
                 tag == DW_TAG_class_type)
            walk_die(w, &c, depth + 1);
    } while (w->rc == 0 && dwarf_siblingof(&c, &c) == 0);
}

int weft_symbols_atomic_globals(weft_symbols *s,
                                int (*each)(void *ctx, uint64_t addr, uint64_t size), void *ctx)
{
    walk w = {s, each, ctx, 0};
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    uint8_t unit_type;
    while (s && s->dw && w.rc == 0 &&
           dwarf_get_units(s->dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0)
        if (unit_type == DW_UT_compile || unit_type == DW_UT_partial)
            walk_die(&w, &cudie, 0);
    return w.rc;
}
