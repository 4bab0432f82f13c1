/* A pc's source line and name as the user wrote them: DWARF's line, or the
 * user's line that a system header's code was inlined into, and C++ names
 * demangled. */
#include "symbols_internal.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>

/* A header of the toolchain's or the C library's (libstdc++'s
 * <mutex>, gthr-default.h): a line there says less than the user's line
 * that the code was inlined into. */
static bool system_file(const char *f)
{
    return f && (!strncmp(f, "/usr/include/", 13) || !strncmp(f, "/usr/lib/", 9) ||
                 !strncmp(f, "/usr/aarch64-linux-gnu/", 23));
}

int weft_source_is_system(const char *f)
{
    return system_file(f);
}

/* The inlined instances that hold pc, outermost first, under die: libdw's
 * dwarf_getscopes leaves the concrete chain at the first inlined
 * instance (for its abstract origin's scopes). */
static int inlined_chain(Dwarf_Die *die, uint64_t pc, Dwarf_Die *chain, int n, int max)
{
    Dwarf_Die child;
    if (dwarf_child(die, &child) != 0)
        return n;
    do {
        int tag = dwarf_tag(&child);
        if ((tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
             tag == DW_TAG_inlined_subroutine) &&
            dwarf_haspc(&child, pc) == 1) {
            if (tag == DW_TAG_inlined_subroutine && n < max)
                chain[n++] = child;
            return inlined_chain(&child, pc, chain, n, max);
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return n;
}

/* pc's line is in a system header: the innermost place in the user's
 * source that the header's code was inlined into (a call site of an
 * inlined instance that is not in a system header itself). */
static void inlined_from(Dwarf_Die *cu, uint64_t pc, pc_info *info)
{
    Dwarf_Die chain[32];
    Dwarf_Files *files;
    size_t nfiles;
    int n = inlined_chain(cu, pc, chain, 0, 32);
    if (n == 0 || dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
        return;
    for (int i = n; i-- > 0;) {
        Dwarf_Attribute a;
        Dwarf_Word file, line;
        if (dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_file, &a), &file) != 0 ||
            dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_line, &a), &line) != 0)
            continue;
        const char *f = dwarf_filesrc(files, file, NULL, NULL);
        if (f && !system_file(f)) {
            info->file = f;
            info->line = (int)line;
            return;
        }
    }
}

/* The C++ runtime's demangler (the Itanium ABI's, C linkage; weft links
 * libstdc++ for SystemC anyway). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* t1() for _Z2t1v; the name itself when it is not a C++ one. The strings
 * live as long as the symbols. */
/* A long C++ name (std::vector<int, std::allocator<int> >::_M_realloc_insert
 * <int>(__gnu_cxx::__normal_iterator<int*, std::vector<...> >, int&&)) with
 * its template arguments left out, in place: std::vector<>::
 * _M_realloc_insert<>(__gnu_cxx::__normal_iterator<>, int&&). An operator's
 * own characters (operator<<, operator->) are kept. */
#define SHORT_NAME 80
static char *shorten(char *d)
{
    if (strlen(d) <= SHORT_NAME)
        return d;
    char *w = d;
    int depth = 0;
    for (const char *r = d; *r;) {
        if (!strncmp(r, "operator", 8)) {
            size_t n = 8 + strcspn(r + 8, "(");
            if (depth == 0)
                memmove(w, r, n), w += n;
            r += n;
            continue;
        }
        if (*r == '<' && depth++ == 0)
            *w++ = '<';
        else if (*r == '>' && depth > 0 && --depth == 0)
            *w++ = '>';
        else if (depth == 0)
            *w++ = *r;
        r++;
    }
    *w = 0;
    return d;
}

const char *trc_sym_demangled(weft_symbols *s, const char *name)
{
    if (strncmp(name, "_Z", 2))
        return name;
    /* A PLT stub's NAME@plt: NAME's C++ name and the suffix. */
    size_t n = strlen(name);
    bool plt = n > 4 && !strcmp(name + n - 4, "@plt");
    char *base = plt ? strndup(name, n - 4) : NULL;
    int status = -1;
    char *d = (!plt || base) ? __cxa_demangle(plt ? base : name, NULL, NULL, &status) : NULL;
    free(base);
    char *full = d && status == 0 ? realloc(d, strlen(d) + (plt ? 5 : 1)) : NULL;
    char **v = full ? realloc(s->demangled, (s->ndemangled + 1) * sizeof *v) : NULL;
    if (!v) {
        free(full ? full : d);
        return name;
    }
    shorten(full);
    if (plt)
        strcat(full, "@plt");
    s->demangled = v;
    s->demangled[s->ndemangled++] = full;
    return full;
}

void trc_sym_lookup_line(weft_symbols *s, uint64_t pc, pc_info *info)
{
    size_t lo = 0, hi = s->ncus;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->cus[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0;) {
        if (pc >= s->cus[i].hi)
            continue;
        Dwarf_Line *line = dwarf_getsrc_die(&s->cus[i].cu, pc);
        if (!line)
            continue;
        int ln = 0;
        info->file = dwarf_linesrc(line, NULL, NULL);
        dwarf_lineno(line, &ln);
        info->line = ln;
        if (system_file(info->file))
            inlined_from(&s->cus[i].cu, pc, info);
        return;
    }
}
