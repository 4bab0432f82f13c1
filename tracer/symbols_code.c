/* The program's own code, told from the C library's, and where it calls the
 * library's synchronization: what systematic testers count as visible
 * operations (a pthread_mutex_lock is one step, not its CAS, its futex and
 * its bookkeeping; docs/replay.md).
 *
 * A static binary carries glibc inside it. Debian's libc.a has no DWARF, so
 * the compile units of the debug info are the program's own code. A dynamic
 * binary's own code is its executable segments: the library lives in the
 * shared objects. A static binary without debug info gives no way to tell,
 * and the whole text counts as the program's (WEFT_CODE_ALL says so). */
#include "symbols_internal.h"

#include <stdlib.h>
#include <string.h>

/* What a program calls to synchronize, at the level it calls it: the C
 * library's functions, and the C++ library's that are not inline (a
 * std::mutex's lock is pthread_mutex_lock in the program's own code; a
 * std::condition_variable's wait and a std::thread's start and join are
 * calls into libstdc++), by their linkage name and the name shown. */
static const struct sync_function {
    const char *symbol, *shown;
} sync_functions[] = {
    {"pthread_mutex_lock", NULL},
    {"pthread_mutex_trylock", NULL},
    {"pthread_mutex_timedlock", NULL},
    {"pthread_mutex_clocklock", NULL},
    {"pthread_mutex_unlock", NULL},
    {"pthread_cond_wait", NULL},
    {"pthread_cond_timedwait", NULL},
    {"pthread_cond_clockwait", NULL},
    {"pthread_cond_signal", NULL},
    {"pthread_cond_broadcast", NULL},
    {"pthread_rwlock_rdlock", NULL},
    {"pthread_rwlock_wrlock", NULL},
    {"pthread_rwlock_tryrdlock", NULL},
    {"pthread_rwlock_trywrlock", NULL},
    {"pthread_rwlock_timedrdlock", NULL},
    {"pthread_rwlock_timedwrlock", NULL},
    {"pthread_rwlock_clockrdlock", NULL},
    {"pthread_rwlock_clockwrlock", NULL},
    {"pthread_rwlock_unlock", NULL},
    {"pthread_spin_lock", NULL},
    {"pthread_spin_trylock", NULL},
    {"pthread_spin_unlock", NULL},
    {"pthread_barrier_wait", NULL},
    {"pthread_create", NULL},
    {"pthread_join", NULL},
    {"pthread_timedjoin_np", NULL},
    {"pthread_clockjoin_np", NULL},
    {"pthread_exit", NULL},
    {"pthread_once", NULL},
    {"sem_wait", NULL},
    {"sem_trywait", NULL},
    {"sem_timedwait", NULL},
    {"sem_clockwait", NULL},
    {"sem_post", NULL},
    {"mtx_lock", NULL},
    {"mtx_trylock", NULL},
    {"mtx_timedlock", NULL},
    {"mtx_unlock", NULL},
    {"cnd_wait", NULL},
    {"cnd_timedwait", NULL},
    {"cnd_signal", NULL},
    {"cnd_broadcast", NULL},
    {"thrd_create", NULL},
    {"thrd_join", NULL},
    {"thrd_exit", NULL},
    {"exit", NULL},
    {"abort", NULL},
    /* Signals between threads: a handler installed late against a
     * pthread_kill was out of every priority policy's reach while the
     * sigaction was no step of its own (0 of 200 runs; random 104). */
    {"pthread_kill", NULL},
    {"kill", NULL},
    {"sigaction", NULL},
    {"signal", NULL},
    {"pthread_sigmask", NULL},
    {"sigprocmask", NULL},
    {"sigwait", NULL},
    {"sigwaitinfo", NULL},
    {"sigtimedwait", NULL},
    {"sigsuspend", NULL},
    {"pause", NULL},
    {"_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
     "std::thread::thread"},
    {"_ZNSt6thread4joinEv", "std::thread::join"},
    {"_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE", "std::condition_variable::wait"},
    {"_ZNSt18condition_variable10notify_oneEv", "std::condition_variable::notify_one"},
    {"_ZNSt18condition_variable10notify_allEv", "std::condition_variable::notify_all"},
};
#define NSYNC (sizeof sync_functions / sizeof *sync_functions)

/* The C library's own synchronization and allocator, by function name
 * (glibc 2.36, static or the shared object's exported names), and the
 * OpenMP runtime's (libgomp: its team and task bookkeeping): a condition
 * variable's sequence counters, a rwlock's reader count, an arena's flags
 * are read and written with atomic_load_relaxed / atomic_store_relaxed,
 * which are plain LDR and STR on AArch64. */
static int libc_sync_name(const char *f)
{
    static const char *const prefixes[] = {
        "pthread_",      "__pthread_",  "___pthread_",   "__GI___pthread_", "__nptl_",
        "sem_",          "__new_sem",   "__old_sem",     "__sem_",          "__lll_",
        "__condvar_",    "__futex",     "futex_",        "__libc_lock",     "__libc_rwlock",
        "mtx_",          "cnd_",        "call_once",     "__call_once",     "_int_",
        "__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc",  "__libc_memalign",
        "__malloc_",     "malloc_",     "arena_",        "tcache_",         "__cxa_guard_",
        "gomp_",         "GOMP_"};
    static const char *const names[] = {"malloc",   "free",          "cfree",          "calloc",
                                        "realloc",  "sysmalloc",     "start_thread",   "__free_tcb",
                                        "memalign", "aligned_alloc", "posix_memalign", "valloc",
                                        "pvalloc"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (!strncmp(f, prefixes[i], strlen(prefixes[i])))
            return 1;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(f, names[i]))
            return 1;
    return 0;
}

int weft_symbols_in_libc_sync(weft_symbols *s, uint64_t pc)
{
    const char *f = NULL;
    if (weft_symbols_pc(s, pc, &f, NULL, NULL) == 0 && f)
        return libc_sync_name(f);
    /* A stripped shared C library or OpenMP runtime without its debug file
     * (Debian's cross root has none) names only its exported functions:
     * the unnamed rest is its internals, the allocator's _int_free and
     * libgomp's team bookkeeping among them, and a memcpy's
     * implementation with them. */
    const char *obj = weft_symbols_object_of(s, pc);
    return obj && (!strncmp(obj, "libc.so", 7) || !strncmp(obj, "libgomp.so", 10));
}

static const char *shown(const struct sync_function *f)
{
    return f->shown ? f->shown : f->symbol;
}

static int push_range(weft_code_map *m, uint64_t lo, uint64_t hi)
{
    uint64_t *l = realloc(m->own_lo, (m->nown + 1) * sizeof *l);
    if (!l)
        return -1;
    m->own_lo = l;
    uint64_t *h = realloc(m->own_hi, (m->nown + 1) * sizeof *h);
    if (!h)
        return -1;
    m->own_hi = h;
    m->own_lo[m->nown] = lo;
    m->own_hi[m->nown++] = hi;
    return 0;
}

static int push_sync(weft_code_map *m, uint64_t addr, const char *name)
{
    weft_sync_entry *v = realloc(m->sync, (m->nsync + 1) * sizeof *v);
    if (!v)
        return -1;
    m->sync = v;
    m->sync[m->nsync++] = (weft_sync_entry){addr, name};
    return 0;
}

/* The executable PT_LOAD segments; whether the binary names a loader. */
static int load_segments(weft_symbols *s, weft_code_map *m, int own, int *dynamic)
{
    size_t n;
    if (elf_getphdrnum(s->elf, &n) != 0)
        return -1;
    m->text_lo = UINT64_MAX;
    *dynamic = 0;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(s->elf, (int)i, &ph))
            continue;
        if (ph.p_type == PT_INTERP)
            *dynamic = 1;
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
            continue;
        if (ph.p_vaddr < m->text_lo)
            m->text_lo = ph.p_vaddr;
        if (own && push_range(m, ph.p_vaddr, ph.p_vaddr + ph.p_memsz))
            return -1;
    }
    return m->text_lo == UINT64_MAX ? -1 : 0;
}

static Elf_Scn *section(weft_symbols *s, const char *name, GElf_Shdr *sh)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(s->elf, &shstrndx) != 0)
        return NULL;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(s->elf, scn));) {
        const char *n;
        if (gelf_getshdr(scn, sh) && (n = elf_strptr(s->elf, shstrndx, sh->sh_name)) &&
            !strcmp(n, name))
            return scn;
    }
    return NULL;
}

/* A dynamic binary reaches the library's functions through its PLT: the
 * i-th R_AARCH64_JUMP_SLOT relocation is the i-th 16-byte stub after the
 * 32-byte PLT header (the AArch64 ELF ABI's lazy PLT). */
int weft_plt_stubs(weft_symbols *s, int (*each)(void *ctx, uint64_t stub, const char *name),
                   void *ctx)
{
    GElf_Shdr rsh, psh, dsh;
    Elf_Scn *rela = section(s, ".rela.plt", &rsh), *plt = section(s, ".plt", &psh);
    if (!rela || !plt || rsh.sh_entsize == 0)
        return 0; /* no lazy PLT (-z now with -fno-plt, or nothing imported) */
    Elf_Scn *dynsym = elf_getscn(s->elf, rsh.sh_link);
    if (!dynsym || !gelf_getshdr(dynsym, &dsh))
        return 0;
    Elf_Data *rd = elf_getdata(rela, NULL), *sd = elf_getdata(dynsym, NULL);
    size_t n = rd ? rsh.sh_size / rsh.sh_entsize : 0;
    if (each(ctx, psh.sh_addr, NULL)) /* the header: the jump to the lazy binder */
        return -1;
    for (size_t i = 0; i < n; i++) {
        GElf_Rela r;
        GElf_Sym sym;
        if (!gelf_getrela(rd, (int)i, &r) || !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
            continue;
        const char *name = elf_strptr(s->elf, dsh.sh_link, sym.st_name);
        if (name && *name && each(ctx, psh.sh_addr + 32 + 16 * (uint64_t)i, name))
            return -1;
    }
    return 0;
}

static int sync_stub(void *ctx, uint64_t stub, const char *name)
{
    if (!name)
        return 0;
    for (size_t k = 0; k < NSYNC; k++)
        if (!strcmp(name, sync_functions[k].symbol))
            return push_sync(ctx, stub, shown(&sync_functions[k]));
    return 0;
}

static int sync_cmp(const void *a, const void *b)
{
    const weft_sync_entry *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* GCC's outline atomics (-moutline-atomics, its default on AArch64): a
 * C11 or std::atomic read-modify-write is a call to __aarch64_cas4_acq and
 * the like, linked from libgcc.a, which has no DWARF. A dynamic binary
 * holds them in its own text, where their atomic instruction is a visible
 * point. A static binary's count as the C library's code, whose own locks
 * call them too (every pthread_mutex_lock): a call to one from the
 * program's code is the visible operation, as a call to pthread_mutex_lock
 * is. Without it a spin lock's test-and-set was no point at all, and a
 * thread spinning on a lock another held spun on to --timeout. */
static const char *outline_atomic(const char *name)
{
    static const struct {
        const char *op, *shown;
    } ops[] = {{"cas", "atomic compare-and-swap"}, {"swp", "atomic exchange"},
               {"ldadd", "atomic fetch-add"},      {"ldclr", "atomic fetch-and-not"},
               {"ldeor", "atomic fetch-xor"},      {"ldset", "atomic fetch-or"}};
    if (!name || strncmp(name, "__aarch64_", 10))
        return NULL;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        size_t n = strlen(ops[i].op);
        if (!strncmp(name + 10, ops[i].op, n) && name[10 + n] >= '1' && name[10 + n] <= '9')
            return ops[i].shown;
    }
    return NULL;
}

int weft_code_map_build(weft_symbols *s, weft_code_map *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    int dynamic = 0;
    /* Static with DWARF: the compile units; otherwise the executable
     * segments (a dynamic binary's own, or everything). */
    int by_cus = 0;
    if (load_segments(s, m, 0, &dynamic) == 0 && !dynamic && s->ncus)
        by_cus = 1;
    if (!by_cus && load_segments(s, m, 1, &dynamic)) {
        trc_seterr(err, errlen, "no executable segment");
        weft_code_map_free(m);
        return -1;
    }
    for (size_t i = 0; by_cus && i < s->ncus; i++)
        if (push_range(m, s->cus[i].lo, s->cus[i].hi))
            goto oom;
    m->how = by_cus ? WEFT_CODE_DWARF : dynamic ? WEFT_CODE_DYNAMIC : WEFT_CODE_ALL;
    if (dynamic) {
        GElf_Shdr psh;
        if (section(s, ".plt", &psh)) {
            m->plt_lo = psh.sh_addr;
            m->plt_hi = psh.sh_addr + psh.sh_size;
        }
        if (weft_plt_stubs(s, sync_stub, m))
            goto oom;
    } else {
        for (size_t k = 0; k < NSYNC; k++) {
            uint64_t addr;
            if (weft_symbols_function(s, sync_functions[k].symbol, &addr, NULL) == 0 &&
                push_sync(m, addr, shown(&sync_functions[k])))
                goto oom;
        }
        for (size_t i = 0; i < s->nfuncs; i++) {
            const char *atomic = outline_atomic(s->funcs[i].name);
            if (atomic && push_sync(m, s->funcs[i].addr, atomic))
                goto oom;
        }
    }
    if (m->nsync)
        qsort(m->sync, m->nsync, sizeof *m->sync, sync_cmp);
    return 0;
oom:
    trc_seterr(err, errlen, "out of memory");
    weft_code_map_free(m);
    return -1;
}

int weft_code_map_own(const weft_code_map *m, uint64_t pc)
{
    for (size_t i = 0; i < m->nown; i++)
        if (pc >= m->own_lo[i] && pc < m->own_hi[i])
            return 1;
    return 0;
}

int weft_code_map_plt(const weft_code_map *m, uint64_t pc)
{
    return pc >= m->plt_lo && pc < m->plt_hi;
}

const char *weft_code_map_sync(const weft_code_map *m, uint64_t target)
{
    size_t lo = 0, hi = m->nsync;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->sync[mid].addr < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->nsync && m->sync[lo].addr == target ? m->sync[lo].name : NULL;
}

void weft_code_map_free(weft_code_map *m)
{
    free(m->own_lo);
    free(m->own_hi);
    free(m->sync);
    memset(m, 0, sizeof *m);
}
