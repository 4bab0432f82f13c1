/* A global's member at an offset, from the debug info: races on the fields
 * of a struct were "C+96" and "C+88" where the program says C.ready and
 * C.cv, and an array's element "slots+24" where it says slots[3]. */
#include "symbols_internal.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct var_die {
    uint64_t addr; /* link-time */
    Dwarf_Off die;
} var_die;

static int cmp_var(const void *a, const void *b)
{
    uint64_t x = ((const var_die *)a)->addr, y = ((const var_die *)b)->addr;
    return x < y ? -1 : x > y;
}

/* Variables with a static address (DW_OP_addr) and a type, anywhere a
 * global, a namespace's or class's static or a static local can be. */
static void collect(weft_symbols *s, Dwarf_Die *die, size_t *cap, int depth)
{
    Dwarf_Die c;
    if (depth > 32 || dwarf_child(die, &c) != 0)
        return;
    do {
        int tag = dwarf_tag(&c);
        Dwarf_Attribute a;
        Dwarf_Op *ops;
        size_t n;
        if (tag == DW_TAG_variable && dwarf_attr(&c, DW_AT_location, &a) &&
            dwarf_getlocation(&a, &ops, &n) == 0 && n == 1 && ops[0].atom == DW_OP_addr &&
            dwarf_hasattr_integrate(&c, DW_AT_type)) {
            if (s->nvars == *cap) {
                size_t m = *cap ? *cap * 2 : 256;
                var_die *v = realloc(s->vars, m * sizeof *v);
                if (!v)
                    return;
                s->vars = v;
                *cap = m;
            }
            s->vars[s->nvars++] = (var_die){ops[0].number, dwarf_dieoffset(&c)};
        } else if (tag == DW_TAG_namespace || tag == DW_TAG_subprogram ||
                   tag == DW_TAG_lexical_block || tag == DW_TAG_structure_type ||
                   tag == DW_TAG_class_type) {
            collect(s, &c, cap, depth + 1);
        }
    } while (dwarf_siblingof(&c, &c) == 0);
}

static const var_die *find_var(weft_symbols *s, uint64_t addr)
{
    if (!s->vars_built) {
        s->vars_built = 1;
        size_t cap = 0;
        Dwarf_CU *cu = NULL;
        Dwarf_Die cudie;
        uint8_t unit_type;
        while (s->dw && dwarf_get_units(s->dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0)
            if (unit_type == DW_UT_compile || unit_type == DW_UT_partial)
                collect(s, &cudie, &cap, 0);
        if (s->nvars)
            qsort(s->vars, s->nvars, sizeof *s->vars, cmp_var);
    }
    var_die key = {addr, 0};
    return s->nvars ? bsearch(&key, s->vars, s->nvars, sizeof *s->vars, cmp_var) : NULL;
}

/* t's type, through typedefs and qualifiers; 0, or -1 if it has none. */
static int type_of(Dwarf_Die *t)
{
    Dwarf_Attribute a;
    if (!dwarf_attr_integrate(t, DW_AT_type, &a) || !dwarf_formref_die(&a, t))
        return -1;
    for (int depth = 0; depth < 16; depth++) {
        int tag = dwarf_tag(t);
        if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
            tag != DW_TAG_atomic_type && tag != DW_TAG_restrict_type)
            return 0;
        if (!dwarf_attr_integrate(t, DW_AT_type, &a) || !dwarf_formref_die(&a, t))
            return -1;
    }
    return -1;
}

/* The member of struct/union/class t holding byte *off: its DIE in *m,
 * *off made relative to it; 0, or -1 if none (padding). */
static int member_at(Dwarf_Die *t, uint64_t *off, Dwarf_Die *m)
{
    Dwarf_Die c;
    if (dwarf_child(t, &c) != 0)
        return -1;
    do {
        int tag = dwarf_tag(&c);
        Dwarf_Attribute a;
        Dwarf_Word loc = 0, size = 0;
        if (tag != DW_TAG_member && tag != DW_TAG_inheritance)
            continue;
        if (dwarf_attr(&c, DW_AT_data_member_location, &a) && dwarf_formudata(&a, &loc) != 0)
            continue; /* a location expression: a virtual base */
        Dwarf_Die mt = c;
        if (type_of(&mt) != 0 || dwarf_aggregate_size(&mt, &size) != 0)
            continue;
        if (*off >= loc && *off < loc + size) {
            *m = c;
            *off -= loc;
            return 0;
        }
    } while (dwarf_siblingof(&c, &c) == 0);
    return -1;
}

/* Appends to buf the path from type t to byte off: ".ready", "[3].x". */
static void member_path(Dwarf_Die t, uint64_t off, char *buf, size_t len)
{
    size_t used = strlen(buf);
    for (int depth = 0; depth < 16 && used < len; depth++) {
        int tag = dwarf_tag(&t);
        if (tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type) {
            Dwarf_Die m;
            if (member_at(&t, &off, &m) != 0)
                break;
            const char *name = dwarf_diename(&m); /* a base class has none */
            if (name)
                used += (size_t)snprintf(buf + used, len - used, ".%s", name);
            t = m;
        } else if (tag == DW_TAG_array_type) {
            Dwarf_Die elem = t;
            Dwarf_Word size = 0;
            if (type_of(&elem) != 0 || dwarf_aggregate_size(&elem, &size) != 0 || size == 0)
                break;
            /* One index over all dimensions: their bounds are not needed. */
            used += (size_t)snprintf(buf + used, len - used, "[%" PRIu64 "]", off / size);
            off %= size;
            t = elem;
            continue;
        } else {
            break; /* a scalar, a pointer, an enum */
        }
        if (type_of(&t) != 0)
            break;
    }
    if (off && used < len)
        snprintf(buf + used, len - used, "+%" PRIu64, off);
}

int weft_symbols_data_name(weft_symbols *s, uint64_t addr, char *buf, size_t len)
{
    const char *name = NULL;
    uint64_t off = 0;
    if (!s || weft_symbols_data(s, addr, &name, &off) != 0 || !name) {
        snprintf(buf, len, "0x%" PRIx64, addr);
        return -1;
    }
    snprintf(buf, len, "%s", name);
    /* The program's own globals: a shared object's come without their
     * debug info (Debian's), and keep the offset. */
    const var_die *v = NULL;
    Dwarf_Die die, type;
    if (s->dw && !trc_sym_object_at(s, addr, false))
        v = find_var(s, addr - off - (uint64_t)s->bias);
    if (v && dwarf_offdie(s->dw, v->die, &die)) {
        type = die;
        if (type_of(&type) == 0) {
            member_path(type, off, buf, len);
            return 0;
        }
    }
    if (off) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "+%" PRIu64, off);
    }
    return 0;
}
