/* What an atomic access synchronizes, from its instruction. The trace says
 * an access was atomic or exclusive, not whether it was an acquire, a
 * release or relaxed; the encoding of the instruction at its pc does. The
 * code comes from the executable segments (libelf) of the program and of
 * the shared objects the trace names, read once. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "races_state.h"

#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif

#define BIT(w, i) (((w) >> (i)) & 1u)

/* Load/store exclusive, load-acquire/store-release and CAS (ARMv8.1): the
 * fields o2 (bit 23), L (22), o1 (21) and o0 (15) tell them apart. */
static unsigned class_exclusive_ordered(uint32_t w)
{
    unsigned o2 = BIT(w, 23), L = BIT(w, 22), o1 = BIT(w, 21), o0 = BIT(w, 15);
    unsigned c = WEFT_INSN_KNOWN | WEFT_INSN_ATOMIC;
    if (o2 && o1) /* CAS, CASA, CASL, CASAL (and byte/half forms) */
        return c | WEFT_INSN_RMW | (L ? WEFT_INSN_ACQUIRE : 0) | (o0 ? WEFT_INSN_RELEASE : 0);
    if (o2) /* LDAR/LDLAR (L = 1), STLR/STLLR (L = 0): ordered, not exclusive */
        return c | (L ? WEFT_INSN_ACQUIRE : WEFT_INSN_RELEASE);
    if (o1 && !BIT(w, 31)) /* CASP family (pairs of 32- or 64-bit registers) */
        return c | WEFT_INSN_RMW | (L ? WEFT_INSN_ACQUIRE : 0) | (o0 ? WEFT_INSN_RELEASE : 0);
    /* LDXR/LDAXR/STXR/STLXR and their pair forms: o0 makes them ordered. */
    if (!o0)
        return c;
    return c | (L ? WEFT_INSN_ACQUIRE : WEFT_INSN_RELEASE);
}

unsigned weft_races_insn_class(uint32_t w)
{
    if ((w & 0x3f000000u) == 0x08000000u)
        return class_exclusive_ordered(w);
    if ((w & 0x3f200c00u) == 0x38200000u) { /* LSE atomics: A = bit 23, R = bit 22 */
        unsigned a = BIT(w, 23), r = BIT(w, 22), o3 = BIT(w, 15), opc = (w >> 12) & 7u;
        if (o3 && opc == 4) /* LDAPR: an RCpc acquire load */
            return WEFT_INSN_KNOWN | WEFT_INSN_ATOMIC | WEFT_INSN_ACQUIRE;
        return WEFT_INSN_KNOWN | WEFT_INSN_ATOMIC | WEFT_INSN_RMW | (a ? WEFT_INSN_ACQUIRE : 0) |
               (r ? WEFT_INSN_RELEASE : 0);
    }
    if ((w & 0x3f200c00u) == 0x19000000u) { /* LDAPUR* / STLUR (ARMv8.4 RCpc, unscaled) */
        unsigned opc = (w >> 22) & 3u;
        return WEFT_INSN_KNOWN | WEFT_INSN_ATOMIC |
               (opc == 0 ? WEFT_INSN_RELEASE : WEFT_INSN_ACQUIRE);
    }
    return WEFT_INSN_KNOWN;
}

typedef struct code_segment {
    uint64_t vaddr, size;
    uint64_t bias; /* run-time pc - link-time pc of its file */
    uint8_t *bytes;
} code_segment;

struct races_code {
    code_segment *segs;
    size_t nsegs;
    uint64_t bias; /* run-time pc - link-time pc */
    /* The .got and .got.plt of the program and its shared objects,
     * run-time: the dynamic loader fills a lazy-bound entry at a thread's
     * first call while other threads read it in their PLT stubs,
     * unsynchronized by design (an aligned 8-byte store of the same value
     * any reader would resolve). */
    uint64_t got_lo[2 * (WEFT_TRACE_MAX_OBJECTS + 1)], got_hi[2 * (WEFT_TRACE_MAX_OBJECTS + 1)];
    size_t ngot;
    /* The dynamic loader's code, run-time: after start-up it binds lazily
     * and sets up TLS, with bookkeeping of its own that it leaves unlocked
     * where threads cannot disagree; none of it is the program's race. */
    uint64_t ld_lo, ld_hi;
};

void races_code_close(races_code *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nsegs; i++)
        free(c->segs[i].bytes);
    free(c->segs);
    free(c);
}

static int read_segment(int fd, const GElf_Phdr *ph, code_segment *seg)
{
    seg->vaddr = ph->p_vaddr;
    seg->size = ph->p_filesz;
    seg->bytes = malloc(seg->size ? seg->size : 1);
    if (!seg->bytes)
        return -1;
    for (uint64_t done = 0; done < seg->size;) {
        ssize_t n = pread(fd, seg->bytes + done, seg->size - done, (off_t)(ph->p_offset + done));
        if (n <= 0)
            return -1;
        done += (uint64_t)n;
    }
    return 0;
}

static int load_segments(races_code *c, Elf *elf, int fd, const char *path, uint64_t bias,
                         char *err, size_t errlen)
{
    GElf_Ehdr eh;
    if (!gelf_getehdr(elf, &eh))
        return races_fail(err, errlen, "%s: not an ELF executable", path);
    if (eh.e_machine != EM_AARCH64)
        return races_fail(err, errlen, "%s: not an AArch64 program", path);
    size_t nph;
    if (elf_getphdrnum(elf, &nph) != 0)
        return races_fail(err, errlen, "%s: unreadable program headers", path);
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
            continue;
        code_segment *v = realloc(c->segs, (c->nsegs + 1) * sizeof *v);
        if (!v)
            return races_fail(err, errlen, "%s: out of memory", path);
        c->segs = v;
        memset(&v[c->nsegs], 0, sizeof *v);
        v[c->nsegs].bias = bias;
        if (read_segment(fd, &ph, &v[c->nsegs++]) != 0)
            return races_fail(err, errlen, "%s: cannot read its code", path);
    }
    return 0;
}

static void find_got(races_code *c, Elf *elf, uint64_t bias)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return;
    for (Elf_Scn *scn = NULL;
         c->ngot < sizeof c->got_lo / sizeof c->got_lo[0] && (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr sh;
        const char *n;
        if (gelf_getshdr(scn, &sh) && (n = elf_strptr(elf, shstrndx, sh.sh_name)) &&
            (!strcmp(n, ".got") || !strcmp(n, ".got.plt")) && sh.sh_size) {
            c->got_lo[c->ngot] = sh.sh_addr + bias;
            c->got_hi[c->ngot++] = sh.sh_addr + bias + sh.sh_size;
        }
    }
}

int races_code_in_loader(const races_code *c, uint64_t pc)
{
    return pc >= c->ld_lo && pc < c->ld_hi;
}

int races_code_in_got(const races_code *c, uint64_t addr)
{
    for (size_t k = 0; k < c->ngot; k++)
        if (addr >= c->got_lo[k] && addr < c->got_hi[k])
            return 1;
    return 0;
}

/* A shared object's GOT and code, placed where the run had the object:
 * qemu mapped its file offset `offset` at lo. Its code: a dynamic
 * program's atomics are mostly the C library's, and undecoded each one
 * counted as acquire and release (glibc's acquire-only count of its
 * threads at a thread's exit then ordered the thread before the next
 * pthread_create, and a lost update between two workers went unreported).
 * An object it cannot read stays undecoded, as before. */
static void object_code(races_code *c, const weft_trace_object *o, int first)
{
    int fd = open(o->path, O_RDONLY | O_CLOEXEC);
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    uint64_t v;
    char err[8];
    if (elf && elf_kind(elf) == ELF_K_ELF && weft_elf_offset_vaddr(elf, o->offset, &v) == 0) {
        find_got(c, elf, o->lo - v);
        size_t before = c->nsegs;
        if (first && load_segments(c, elf, fd, o->path, o->lo - v, err, sizeof err) != 0) {
            for (size_t i = before; i < c->nsegs; i++) /* all of it, or none */
                free(c->segs[i].bytes);
            c->nsegs = before;
        }
    }
    if (elf)
        elf_end(elf);
    if (fd >= 0)
        close(fd);
}

/* A position-independent program's code is where qemu's start_code says,
 * which is its lowest executable segment's link address moved. */
static void place(races_code *c, Elf *elf, uint64_t start_code)
{
    GElf_Ehdr eh;
    if (!start_code || !c->nsegs || !gelf_getehdr(elf, &eh) || eh.e_type != ET_DYN)
        return;
    uint64_t lo = c->segs[0].vaddr;
    for (size_t i = 1; i < c->nsegs; i++)
        if (c->segs[i].vaddr < lo)
            lo = c->segs[i].vaddr;
    c->bias = start_code - lo;
}

races_code *races_code_open(const char *path, uint64_t start_code, const weft_trace_object *objects,
                            uint32_t nobjects, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        races_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    races_code *c = calloc(1, sizeof *c);
    Elf *elf = NULL;
    if (elf_version(EV_CURRENT) == EV_NONE || !c) {
        races_fail(err, errlen, "%s: %s", path, c ? "libelf is unusable" : "out of memory");
    } else if (!(elf = elf_begin(fd, ELF_C_READ, NULL)) || elf_kind(elf) != ELF_K_ELF) {
        races_fail(err, errlen, "%s: not an ELF executable", path);
    } else if (load_segments(c, elf, fd, path, 0, err, errlen) == 0) {
        place(c, elf, start_code);
        for (size_t i = 0; i < c->nsegs; i++)
            c->segs[i].bias = c->bias;
        find_got(c, elf, c->bias);
        for (uint32_t i = 0; i < nobjects; i++) {
            /* An object mapped more than once: its code once. */
            int first = 1;
            for (uint32_t j = 0; j < i && first; j++)
                first = strcmp(objects[j].path, objects[i].path) != 0;
            object_code(c, &objects[i], first);
            const char *base = strrchr(objects[i].path, '/');
            if (!strncmp(base ? base + 1 : objects[i].path, "ld-linux", 8))
                c->ld_lo = objects[i].lo, c->ld_hi = objects[i].hi;
        }
        elf_end(elf);
        close(fd);
        return c;
    }
    if (elf)
        elf_end(elf);
    close(fd);
    races_code_close(c);
    return NULL;
}

unsigned races_code_classify(void *code, uint64_t pc)
{
    const races_code *c = code;
    for (size_t i = 0; i < c->nsegs; i++) {
        const code_segment *s = &c->segs[i];
        uint64_t at = pc - s->bias;
        if (at >= s->vaddr && at - s->vaddr + 4 <= s->size) {
            const uint8_t *b = s->bytes + (at - s->vaddr);
            uint32_t w =
                (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            return weft_races_insn_class(w);
        }
    }
    return 0;
}
