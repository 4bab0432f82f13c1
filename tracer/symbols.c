/* Symbolization of guest addresses with elfutils: the ELF symbol table for
 * function and object names (PLT stubs named by their relocations), the
 * DWARF line table for file:line (symbols_source.c), at the run's
 * addresses (symbols_place.c).
 *
 * Traces hit the same few pcs millions of times, so pc lookups are cached;
 * data lookups are a binary search over the sorted objects. */
#include "symbols_internal.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *weft_elf_machine_name(unsigned m)
{
    switch (m) {
    case EM_X86_64:
        return "x86-64";
    case EM_386:
        return "i386";
    case EM_ARM:
        return "32-bit ARM";
    case EM_RISCV:
        return "RISC-V";
    case EM_PPC64:
        return "PowerPC64";
    default:
        return "another architecture";
    }
}

/* Aliases: prefer global names without leading underscores, so that
 * `malloc` wins over `__libc_malloc` and the user's name over internals. */
static int sym_rank(const GElf_Sym *s, const char *name)
{
    int bind = GELF_ST_BIND(s->st_info);
    int r = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
    if (name[0] == '_')
        r += 4;
    if (strchr(name, '@')) /* a versioned alias (cfree@GLIBC_2.17 of free) */
        r += 2;
    if (name[0] == '$' || name[0] == 0) /* mapping symbols $x/$d */
        r += 100;
    return r;
}

static int sym_cmp(const void *a, const void *b)
{
    const sym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    return strcmp(x->name, y->name);
}

/* Sort and keep the preferred symbol per address. */
static size_t sort_dedup(sym *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, sym_cmp);
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i].addr != v[k - 1].addr)
            v[k++] = v[i];
        else if (v[k - 1].size == 0 && v[i].size) /* keep a size from an alias */
            v[k - 1].size = v[i].size;
    return k;
}

/* Has elf a full symbol table, not only the dynamic one? */
static bool has_symtab(Elf *elf)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    while ((scn = elf_nextscn(elf, scn)))
        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
            return true;
    return false;
}

/* A stripped library's full symbol table is in its separate debug file
 * (Debian's -dbg packages: usr/lib/debug/.build-id/NN/REST.debug), found by
 * its build id in the trees above the library (a sysroot's, then the
 * host's): glibc's internal functions (malloc's _int_free) are then named,
 * and weft races' rule for the C library's own atomics knows them. */
static void open_debug_file(weft_symbols *s, const char *elf_path)
{
    const void *id = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(s->elf, &id);
    if (n < 2 || n > 64)
        return;
    char hex[129];
    for (ssize_t i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", ((const uint8_t *)id)[i]);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", elf_path);
    for (char *slash; (slash = strrchr(dir, '/'));) {
        *slash = 0;
        char path[4096 + 160];
        snprintf(path, sizeof path, "%s/usr/lib/debug/.build-id/%.2s/%s.debug", dir, hex, hex + 2);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        const void *id2 = NULL;
        if (e && elf_kind(e) == ELF_K_ELF && has_symtab(e) &&
            dwelf_elf_gnu_build_id(e, &id2) == n && !memcmp(id, id2, (size_t)n)) {
            s->dbg_fd = fd;
            s->dbg_elf = e;
            return;
        }
        if (e)
            elf_end(e);
        close(fd);
    }
}

static int load_symtab(weft_symbols *s, Elf *elf)
{
    Elf_Scn *scn = NULL, *best = NULL;
    GElf_Shdr sh, best_sh = {0};
    while ((scn = elf_nextscn(elf, scn))) {
        if (!gelf_getshdr(scn, &sh))
            continue;
        if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !best)) {
            best = scn;
            best_sh = sh;
        }
    }
    if (!best || best_sh.sh_entsize == 0)
        return -1;
    Elf_Data *data = elf_getdata(best, NULL);
    size_t n = data ? best_sh.sh_size / best_sh.sh_entsize : 0;
    s->funcs = calloc(n ? n : 1, sizeof *s->funcs);
    s->objs = calloc(n ? n : 1, sizeof *s->objs);
    if (!s->funcs || !s->objs)
        return -1;
    for (size_t i = 0; i < n; i++) {
        GElf_Sym es;
        if (!gelf_getsym(data, (int)i, &es) || es.st_shndx == SHN_UNDEF)
            continue;
        const char *name = elf_strptr(elf, best_sh.sh_link, es.st_name);
        if (!name || !*name)
            continue;
        int type = GELF_ST_TYPE(es.st_info);
        sym v = {es.st_value, es.st_size, name, sym_rank(&es, name), NULL};
        if (type == STT_FUNC || type == STT_GNU_IFUNC)
            s->funcs[s->nfuncs++] = v;
        else if (type == STT_OBJECT)
            s->objs[s->nobjs++] = v;
    }
    s->nfuncs = sort_dedup(s->funcs, s->nfuncs);
    s->nobjs = sort_dedup(s->objs, s->nobjs);
    return 0;
}

static int cu_cmp(const void *a, const void *b)
{
    const cu_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Address ranges of every compile unit, for pc -> CU. Built from the CU
 * DIEs rather than .debug_aranges, which recent GCCs may omit. */
static void load_cus(weft_symbols *s)
{
    s->dw = dwarf_begin_elf(s->elf, DWARF_C_READ, NULL);
    if (!s->dw)
        return;
    size_t cap = 0;
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    uint8_t unit_type;
    while (dwarf_get_units(s->dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
        if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
            continue;
        Dwarf_Addr base, lo, hi;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
            if (hi <= lo)
                continue;
            if (s->ncus == cap) {
                cap = cap ? cap * 2 : 64;
                cu_range *v = realloc(s->cus, cap * sizeof *v);
                if (!v)
                    return;
                s->cus = v;
            }
            s->cus[s->ncus++] = (cu_range){lo, hi, cudie};
        }
    }
    if (s->ncus)
        qsort(s->cus, s->ncus, sizeof *s->cus, cu_cmp);
}

/* A PLT stub has no symbol: the one before it (_init, say) would claim
 * it. NAME@plt, and .plt for the header, as objdump says. */
static int add_plt_name(void *ctx, uint64_t stub, const char *name)
{
    weft_symbols *s = ctx;
    size_t len = name ? strlen(name) + 5 : 5;
    char *n = malloc(len), **v = realloc(s->plt_names, (s->nplt + 1) * sizeof *v);
    sym *f = realloc(s->funcs, (s->nfuncs + 1) * sizeof *f);
    if (v)
        s->plt_names = v;
    if (f)
        s->funcs = f;
    if (!n || !v || !f) {
        free(n);
        return -1;
    }
    snprintf(n, len, name ? "%s@plt" : ".plt", name ? name : "");
    s->plt_names[s->nplt++] = n;
    s->funcs[s->nfuncs++] = (sym){stub, name ? 16 : 32, n, 0, NULL};
    return 0;
}

static void load_plt_names(weft_symbols *s)
{
    size_t before = s->nfuncs;
    if (weft_plt_stubs(s, add_plt_name, s) != 0 || s->nfuncs != before)
        s->nfuncs = sort_dedup(s->funcs, s->nfuncs); /* what was added, even after a failure */
}

/* qemu's start_code is the lowest of these plus the load bias. */
static void load_exec_segments(weft_symbols *s, const GElf_Ehdr *eh)
{
    size_t n;
    s->pie = eh->e_type == ET_DYN;
    if (elf_getphdrnum(s->elf, &n) != 0)
        return;
    s->load_lo = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(s->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (ph.p_vaddr < s->load_lo)
            s->load_lo = ph.p_vaddr;
        if (ph.p_vaddr + ph.p_memsz > s->load_hi)
            s->load_hi = ph.p_vaddr + ph.p_memsz;
        if ((ph.p_flags & PF_X) && s->nexec < sizeof s->exec_lo / sizeof s->exec_lo[0]) {
            s->exec_lo[s->nexec] = ph.p_vaddr;
            s->exec_hi[s->nexec++] = ph.p_vaddr + ph.p_memsz;
        }
    }
}

weft_symbols *weft_symbols_open(const char *elf_path, char *err, size_t errlen)
{
    if (!elf_path) {
        trc_seterr(err, errlen, "weft_symbols_open: no path");
        return NULL;
    }
    elf_version(EV_CURRENT);
    weft_symbols *s = calloc(1, sizeof *s);
    if (!s) {
        trc_seterr(err, errlen, "%s: out of memory", elf_path);
        return NULL;
    }
    s->dbg_fd = -1;
    s->fd = open(elf_path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0) {
        trc_seterr(err, errlen, "%s: cannot open: %s", elf_path, strerror(errno));
        weft_symbols_close(s);
        return NULL;
    }
    s->elf = elf_begin(s->fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    if (!s->elf || elf_kind(s->elf) != ELF_K_ELF || !gelf_getehdr(s->elf, &eh)) {
        trc_seterr(err, errlen, "%s: not an ELF file", elf_path);
        weft_symbols_close(s);
        return NULL;
    }
    if (eh.e_machine != EM_AARCH64) {
        trc_seterr(err, errlen, "%s: ELF for %s (machine %u), expected AArch64", elf_path,
                   weft_elf_machine_name(eh.e_machine), eh.e_machine);
        weft_symbols_close(s);
        return NULL;
    }
    if (!has_symtab(s->elf))
        open_debug_file(s, elf_path);
    if (load_symtab(s, s->dbg_elf ? s->dbg_elf : s->elf) < 0) {
        trc_seterr(err, errlen, "%s: no symbol table (stripped binary?)", elf_path);
        weft_symbols_close(s);
        return NULL;
    }
    load_cus(s);
    load_exec_segments(s, &eh);
    load_plt_names(s);
    return s;
}

/* The symbol containing addr, if any. Sized symbols contain
 * [addr, addr+size); a zero-sized one only its own address, except that a
 * zero-sized function extends to the next function (hand-written asm). */
static const sym *find_sym(const sym *v, size_t n, uint64_t addr, bool extend)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* lo = first symbol above addr; look back a few for an enclosing one. */
    for (size_t i = lo, k = 0; i-- > 0 && k < 8; k++) {
        const sym *c = &v[i];
        if (c->size ? addr - c->addr < c->size : addr == c->addr)
            return c;
        if (extend && k == 0 && !c->size && (i + 1 == n || addr < v[i + 1].addr))
            return c;
    }
    return NULL;
}

int weft_symbols_pc(weft_symbols *s, uint64_t pc, const char **function, const char **file,
                    int *line)
{
    pc_info tmp = {0}, *info = &tmp;
    bool inserted = false;
    weft_symbols *o = s->nobjects && !trc_sym_in_exec(s, pc - (uint64_t)s->bias)
                          ? trc_sym_object_at(s, pc, true)
                          : NULL;
    if (o)
        return weft_symbols_pc(o, pc, function, file, line);
    pc -= (uint64_t)s->bias;
    uint64_t *slot = trc_addrmap_get(&s->pc_cache, pc, &inserted);
    if (slot && !inserted && *slot) {
        info = &s->infos[*slot - 1];
    } else {
        const sym *f = trc_sym_in_exec(s, pc) ? find_sym(s->funcs, s->nfuncs, pc, true) : NULL;
        tmp.function = f ? trc_sym_demangled(s, f->name) : NULL;
        tmp.found = f != NULL;
        trc_sym_lookup_line(s, pc, &tmp);
        if (slot) {
            if (s->ninfos == s->cap_infos) {
                size_t cap = s->cap_infos ? s->cap_infos * 2 : 256;
                pc_info *v = realloc(s->infos, cap * sizeof *v);
                if (v) {
                    s->infos = v;
                    s->cap_infos = cap;
                }
            }
            /* Without room the slot stays 0, which means "not cached". */
            if (s->ninfos < s->cap_infos) {
                s->infos[s->ninfos++] = tmp;
                *slot = s->ninfos;
            }
        }
    }
    if (function)
        *function = info->function;
    if (file)
        *file = info->file;
    if (line)
        *line = info->line;
    return info->found ? 0 : -1;
}

/* A C++ global's name as a reader knows it (acct::balance, not
 * _ZN4acct7balanceE), demangled once per symbol: weft export asks for
 * every event's. */
static const char *data_shown(weft_symbols *s, sym *o)
{
    if (!o->shown)
        o->shown = trc_sym_demangled(s, o->name);
    return o->shown;
}

int weft_symbols_data(weft_symbols *s, uint64_t addr, const char **name, uint64_t *offset)
{
    const sym *o = find_sym(s->objs, s->nobjs, addr - (uint64_t)s->bias, false);
    weft_symbols *in = !o && s->nobjects ? trc_sym_object_at(s, addr, false) : NULL;
    if (in)
        return weft_symbols_data(in, addr, name, offset);
    addr -= (uint64_t)s->bias;
    if (name)
        *name = o ? data_shown(s, (sym *)o) : NULL;
    if (offset)
        *offset = o ? addr - o->addr : 0;
    return o ? 0 : -1;
}

/* Exact-name search; the tables are sorted by address, and a linear scan is
 * fine for the few name lookups a command makes. */
static const sym *find_name(const sym *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    return NULL;
}

static int name_result(const weft_symbols *s, const sym *f, uint64_t *addr, uint64_t *size)
{
    if (addr)
        *addr = f ? f->addr + (uint64_t)s->bias : 0;
    if (size)
        *size = f ? f->size : 0;
    return f ? 0 : -1;
}

int weft_symbols_lookup(weft_symbols *s, const char *name, uint64_t *addr, uint64_t *size)
{
    const sym *o = find_name(s->objs, s->nobjs, name);
    /* The name weft shows too (a C++ global's demangled one). */
    for (size_t i = 0; !o && i < s->nobjs; i++)
        if (!strncmp(s->objs[i].name, "_Z", 2) && !strcmp(data_shown(s, &s->objs[i]), name))
            o = &s->objs[i];
    return name_result(s, o, addr, size);
}

int weft_symbols_function(weft_symbols *s, const char *name, uint64_t *addr, uint64_t *size)
{
    return name_result(s, find_name(s->funcs, s->nfuncs, name), addr, size);
}

int weft_elf_build_id(const char *elf_path, uint8_t *out, size_t outlen)
{
    elf_version(EV_CURRENT);
    int fd = open(elf_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int rc = -1;
    if (elf && elf_kind(elf) == ELF_K_ELF) {
        const void *id = NULL;
        ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
        if (n >= 0) { /* 0: a valid ELF without the note */
            size_t k = (size_t)n < outlen ? (size_t)n : outlen;
            if (k)
                memcpy(out, id, k);
            rc = (int)k;
        }
    }
    if (elf)
        elf_end(elf);
    close(fd);
    return rc;
}

void weft_symbols_close(weft_symbols *s)
{
    if (!s)
        return;
    if (s->dw)
        dwarf_end(s->dw);
    if (s->elf)
        elf_end(s->elf);
    if (s->fd >= 0)
        close(s->fd);
    if (s->dbg_elf)
        elf_end(s->dbg_elf);
    if (s->dbg_fd >= 0)
        close(s->dbg_fd);
    for (size_t i = 0; i < s->nobjects; i++) {
        weft_symbols_close(s->objects[i].syms);
        free(s->objects[i].path);
    }
    free(s->objects);
    free(s->vars);
    for (size_t i = 0; i < s->nplt; i++)
        free(s->plt_names[i]);
    for (size_t i = 0; i < s->ndemangled; i++)
        free(s->demangled[i]);
    free(s->demangled);
    free(s->plt_names);
    free(s->funcs);
    free(s->objs);
    free(s->cus);
    free(s->infos);
    trc_addrmap_free(&s->pc_cache);
    free(s);
}
