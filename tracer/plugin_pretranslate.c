/* A fork server's children run on the server's translations.
 *
 * A child translates every block it runs that the prefix did not: the
 * threads' code, the C library's thread start and exit, the program's end.
 * On a small program that was about 450 blocks per child and two fifths of
 * a child's CPU, the same blocks in every child. So each child notes what
 * it translated, in a table shared with the server (an anonymous shared
 * mapping made before the first fork), and the server, once the child has
 * exited, translates the same blocks itself before it forks the next: after
 * a few children, a child finds nearly everything it runs translated (AFL's
 * qemu mode and LibAFL do the same, in qemu's own source).
 *
 * What a block's translation is depends only on its guest code, its pc,
 * its translation flags and cflags, and the campaign-wide instrumentation
 * (docs/replay.md: the prefix's translations are every child's already), so
 * a child runs the same instructions with the same callbacks whichever
 * process translated them: runs, verdicts and traces are the same bytes
 * (tests/e2e/replay_pretranslate.sh compares campaigns with it and without).
 *
 * The plugin API has no call for this. qemu-user 7.2 exports what it takes:
 * tb_gen_code (under mmap_lock), the vCPU's translation state
 * (cpu_get_tb_cpu_state on its env, curr_cflags), page_get_flags and the
 * code buffer's fill. Where a CPUState keeps its env is found once, in the
 * server, by trying the pointers it holds into its own object until the
 * state they give has the pc of the block being translated; and each block
 * a child notes is checked again against its pc. A block is made only if its
 * page is mapped executable and not writable in the server and holds the
 * bytes the child translated (a child may have mapped other code there), and
 * while the code buffer is less than half full (a full buffer makes
 * tb_gen_code flush and jump back into a cpu_exec that is not running).
 * Anything unexpected turns it off for the campaign: children translate
 * for themselves, as before. WEFT_SERVER_PRETRANSLATE=0 turns it off. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "plugin_replay.h"

/* include/exec/cpu-all.h, qemu 7.x */
#define QEMU_PAGE_WRITE 0x0002
#define QEMU_PAGE_EXEC 0x0004
#define QEMU_PAGE_VALID 0x0008
/* AArch64 user mode: 4 KiB target pages, and an A64 block never crosses
 * one (the translator ends it at the page's end). */
#define GUEST_PAGE 4096u

/* Blocks a child notes (more are translated by the child alone). */
#define NOTE_MAX 8192u
/* Blocks the server makes in all, and its set of keys tried. */
#define MADE_MAX 65536u
#define TRIED_SLOTS (2 * MADE_MAX)

typedef void (*get_state_fn)(void *env, uint64_t *pc, uint64_t *cs_base, uint32_t *flags);
typedef uint32_t (*curr_cflags_fn)(void *cpu);
typedef void *(*tb_gen_code_fn)(void *cpu, uint64_t pc, uint64_t cs_base, uint32_t flags,
                                int cflags);
typedef int (*page_get_flags_fn)(uint64_t addr);
typedef size_t (*code_size_fn)(void);
typedef void (*void_fn)(void);
typedef void *(*qemu_get_cpu_fn)(int index);

typedef struct noted_block {
    uint64_t pc, cs_base, code_hash;
    uint32_t flags, cflags, n;
    uint32_t check; /* of the fields above: a child killed mid-note leaves a torn one */
} noted_block;

typedef struct note_table {
    _Atomic uint32_t count;
    noted_block b[NOTE_MAX];
} note_table;

static struct {
    int on;
    long env_off; /* of env_ptr in CPUState, or -1 */
    get_state_fn get_state;
    curr_cflags_fn cflags;
    tb_gen_code_fn gen;
    page_get_flags_fn page_flags;
    code_size_fn code_size, code_capacity;
    void_fn lock, unlock;
    qemu_get_cpu_fn get_cpu;
    note_table *notes; /* shared with the children */
    uint64_t *tried;   /* the server's: keys it tried (0: empty) */
    uint32_t made, ntried;
} pt = {.env_off = -1};

static __thread void **current_cpu_slot;

/* qemu's current_cpu is thread-local: dlsym gives this thread's. */
void *plugin_current_cpu(void)
{
    if (!current_cpu_slot)
        current_cpu_slot = dlsym(RTLD_DEFAULT, "current_cpu");
    return current_cpu_slot ? *current_cpu_slot : NULL;
}

#define FNV_START 0xcbf29ce484222325ull

/* FNV-1a, continued from h: a child hashes its block one instruction at a
 * time, the server the same bytes at once. */
static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const uint8_t *d = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ d[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t code_hash(struct qemu_plugin_tb *tb, size_t n)
{
    uint64_t h = FNV_START;
    for (size_t i = 0; i < n; i++)
        h = fnv(h, qemu_plugin_insn_data(qemu_plugin_tb_get_insn(tb, i)), 4);
    return h;
}

static uint32_t note_check(const noted_block *b)
{
    uint64_t f[5] = {b->pc, b->cs_base, b->code_hash, (uint64_t)b->flags << 32 | b->cflags, b->n};
    uint64_t h = fnv(FNV_START, f, sizeof f);
    return (uint32_t)(h ^ h >> 32) | 1; /* never 0, what an unwritten slot holds */
}

/* Whether [p, p + len) is mapped (reading a wrong guess of env must not
 * fault). */
static int mapped(uintptr_t p, size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t a = p & ~(uintptr_t)(page - 1);
    size_t l = ((p + len + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1)) - a;
    unsigned char vec[64];
    if (l / (size_t)page > sizeof vec)
        return 0;
    return mincore((void *)a, l, vec) == 0;
}

/* env_ptr's offset: the pointer into the CPU's own object whose state has
 * the pc of the block being translated. */
static void find_env(void *cpu, uint64_t want_pc)
{
    uintptr_t base = (uintptr_t)cpu;
    for (long off = 0; off < 4096; off += 8) {
        uintptr_t p;
        memcpy(&p, (const char *)cpu + off, sizeof p);
        if (p <= base + (uintptr_t)off + 8 || p >= base + 65536 || (p & 7) || !mapped(p, 131072))
            continue;
        uint64_t pc = 0, cs_base = 0;
        uint32_t flags = 0;
        pt.get_state((void *)p, &pc, &cs_base, &flags);
        if (pc == want_pc) {
            pt.env_off = off;
            return;
        }
    }
}

/* In the server, at its first translation: everything it needs, or off. */
static void setup(struct qemu_plugin_tb *tb)
{
    const char *e = getenv("WEFT_SERVER_PRETRANSLATE");
    if ((e && !strcmp(e, "0")) || plugin_qemu_api_version() != 1)
        return;
    pt.get_state = (get_state_fn)dlsym(RTLD_DEFAULT, "cpu_get_tb_cpu_state");
    pt.cflags = (curr_cflags_fn)dlsym(RTLD_DEFAULT, "curr_cflags");
    pt.gen = (tb_gen_code_fn)dlsym(RTLD_DEFAULT, "tb_gen_code");
    pt.page_flags = (page_get_flags_fn)dlsym(RTLD_DEFAULT, "page_get_flags");
    pt.code_size = (code_size_fn)dlsym(RTLD_DEFAULT, "tcg_code_size");
    pt.code_capacity = (code_size_fn)dlsym(RTLD_DEFAULT, "tcg_code_capacity");
    pt.lock = (void_fn)dlsym(RTLD_DEFAULT, "mmap_lock");
    pt.unlock = (void_fn)dlsym(RTLD_DEFAULT, "mmap_unlock");
    pt.get_cpu = (qemu_get_cpu_fn)dlsym(RTLD_DEFAULT, "qemu_get_cpu");
    void *cpu = plugin_current_cpu();
    if (!pt.get_state || !pt.cflags || !pt.gen || !pt.page_flags || !pt.code_size ||
        !pt.code_capacity || !pt.lock || !pt.unlock || !pt.get_cpu || !cpu)
        return;
    find_env(cpu, qemu_plugin_tb_vaddr(tb));
    if (pt.env_off < 0)
        return;
    void *m =
        mmap(NULL, sizeof(note_table), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pt.tried = calloc(TRIED_SLOTS, sizeof *pt.tried);
    if (m == MAP_FAILED || !pt.tried) {
        if (m != MAP_FAILED)
            munmap(m, sizeof(note_table));
        free(pt.tried);
        pt.tried = NULL;
        return;
    }
    pt.notes = m;
    pt.on = 1;
}

void pretranslate_note(struct qemu_plugin_tb *tb, size_t n)
{
    server_state *s = &g_plugin.server;
    if (!s->on && !s->child)
        return;
    if (s->in_prefix) {
        static int tried;
        if (!tried) {
            tried = 1;
            setup(tb);
        }
        return;
    }
    /* Not from a process the guest forked: it may outlive its run and
     * write while the server reads. */
    if (!s->child || !pt.on || !n || atomic_load(&g_plugin.forked_child))
        return;
    void *cpu = plugin_current_cpu();
    if (!cpu)
        return;
    void *env;
    memcpy(&env, (const char *)cpu + pt.env_off, sizeof env);
    noted_block b = {.n = (uint32_t)n};
    pt.get_state(env, &b.pc, &b.cs_base, &b.flags);
    if (b.pc != qemu_plugin_tb_vaddr(tb))
        return; /* not the state this block was made for: say nothing */
    b.cflags = pt.cflags(cpu);
    b.code_hash = code_hash(tb, n);
    b.check = note_check(&b);
    uint32_t i = atomic_fetch_add(&pt.notes->count, 1);
    if (i < NOTE_MAX)
        pt.notes->b[i] = b;
}

/* 1 if the key is new (and now tried), 0 if tried before or the set is full. */
static int first_try(const noted_block *b)
{
    uint64_t k = (b->pc * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)b->flags << 32 | b->cflags) ^
                 (b->cs_base * 0xc2b2ae3d27d4eb4full);
    k |= 1; /* 0 marks an empty slot */
    if (pt.ntried >= MADE_MAX)
        return 0;
    for (uint32_t i = (uint32_t)(k >> 17) % TRIED_SLOTS;; i = (i + 1) % TRIED_SLOTS) {
        if (pt.tried[i] == k)
            return 0;
        if (!pt.tried[i]) {
            pt.tried[i] = k;
            pt.ntried++;
            return 1;
        }
    }
}

/* May the server translate this block? Its page must be mapped, executable
 * and read-only here, and hold the child's bytes. */
static int translatable(const noted_block *b)
{
    if (!b->n || b->n > GUEST_PAGE / 4 || (b->pc & 3) ||
        b->pc / GUEST_PAGE != (b->pc + 4 * (uint64_t)b->n - 1) / GUEST_PAGE)
        return 0;
    int f = pt.page_flags(b->pc);
    if (!(f & QEMU_PAGE_VALID) || !(f & QEMU_PAGE_EXEC) || (f & QEMU_PAGE_WRITE))
        return 0;
    uintptr_t base;
    if (!plugin_guest_base(&base))
        return 0;
    return fnv(FNV_START, (const void *)(base + (uintptr_t)b->pc), 4 * (size_t)b->n) ==
           b->code_hash;
}

void pretranslate_absorb(void)
{
    if (!pt.on)
        return;
    uint32_t n = atomic_load(&pt.notes->count);
    if (n > NOTE_MAX)
        n = NOTE_MAX;
    void *cpu = pt.get_cpu(0);
    for (uint32_t i = 0; cpu && i < n && pt.made < MADE_MAX; i++) {
        noted_block b = pt.notes->b[i];
        pt.notes->b[i].check = 0;
        if (b.check != note_check(&b) || !first_try(&b) || !translatable(&b))
            continue;
        if (pt.code_size() > pt.code_capacity() / 2) {
            pt.on = 0; /* the buffer stays for the children's own */
            break;
        }
        pt.lock();
        pt.gen(cpu, b.pc, b.cs_base, b.flags, (int)b.cflags);
        pt.unlock();
        pt.made++;
    }
    atomic_store(&pt.notes->count, 0);
}
