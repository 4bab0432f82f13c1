/* What translation learns about a block and its memory instructions, kept
 * for the block's lifetime (qemu-user never frees translations while it
 * runs, and neither do we); the decoding itself is insn_decode.c's. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin_state.h"

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;

/* Zeroed memory that lives as long as the process, from 64 KiB chunks. */
void *plugin_arena_alloc(size_t n)
{
    static uint8_t *chunk;
    static size_t left;
    enum { CHUNK = 64 << 10 };
    n = (n + 15) & ~(size_t)15;
    if (n > CHUNK)
        return NULL;
    pthread_mutex_lock(&arena_lock);
    if (left < n) {
        chunk = calloc(1, CHUNK);
        left = chunk ? CHUNK : 0;
    }
    void *p = NULL;
    if (left >= n) {
        p = chunk + (CHUNK - left);
        left -= n;
    }
    pthread_mutex_unlock(&arena_lock);
    return p;
}

/* Does the block close a loop that may wait (insn_closes_wait_loop)? */
static int lib_loop_may_wait(struct qemu_plugin_insn *last, uint64_t last_pc, uint32_t w,
                             uint64_t start);

int insn_tb_closes_wait_loop(struct qemu_plugin_tb *tb, size_t n)
{
    uint32_t w[512]; /* qemu's longest block (TCG_MAX_INSNS) */
    if (n == 0 || n > sizeof w / sizeof *w)
        return 0;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        if (qemu_plugin_insn_size(insn) != 4)
            return 0;
        memcpy(&w[i], qemu_plugin_insn_data(insn), 4);
    }
    struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
    uint64_t last_pc = qemu_plugin_insn_vaddr(last);
    /* The block alone cannot tell a pointer moved in another block of its
     * loop (bzip2's sort: 40 million calls in a PCT run of pbzip2); the
     * loop's whole body can. */
    return insn_closes_wait_loop(w, n, last_pc, g_plugin.cfg.wait_loop_bytes) &&
           lib_loop_may_wait(last, last_pc, w[n - 1],
                             qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0)));
}

void plugin_host_delay(void)
{
    struct timespec nap = {0, 2000000};
    if (g_plugin.host_delay)
        nanosleep(&nap, NULL);
}

void plugin_inline_setup(void)
{
    const char *d = getenv("WEFT_HOST_DELAY");
    g_plugin.host_delay = d && !strcmp(d, "1");
    const char *e = getenv("WEFT_INLINE_BLOCKS");
    g_plugin.count_inline = plugin_lib_rule() && !g_plugin.sched.ppct_host_parallel &&
                            !g_plugin.cfg.inject && !g_plugin.spec.on && !(e && !strcmp(e, "0"));
}

/* The pcs right after an SVC: a clone's child starts there, and every
 * syscall returns there (a thread whose syscall let others run must wait
 * for its turn again). Open addressing, grown under the lock; translation
 * is rare next to execution. */
static struct {
    pthread_mutex_t lock;
    uint64_t *v;
    size_t cap, n;
} after_svc = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t svc_slot(uint64_t pc, size_t cap)
{
    return (size_t)((pc >> 2) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

/* Under the lock: 1 if pc is in the set; with add, put it there (0 if out of memory). */
static int svc_set(uint64_t pc, int add)
{
    if (add && 2 * (after_svc.n + 1) > after_svc.cap) {
        size_t cap = after_svc.cap ? 2 * after_svc.cap : 1024;
        uint64_t *v = calloc(cap, sizeof *v);
        if (!v)
            return 0;
        for (size_t i = 0; i < after_svc.cap; i++)
            if (after_svc.v[i]) {
                size_t j = svc_slot(after_svc.v[i], cap);
                while (v[j])
                    j = (j + 1) & (cap - 1);
                v[j] = after_svc.v[i];
            }
        free(after_svc.v);
        after_svc.v = v;
        after_svc.cap = cap;
    }
    if (!after_svc.cap)
        return 0;
    size_t j = svc_slot(pc, after_svc.cap);
    while (after_svc.v[j] && after_svc.v[j] != pc)
        j = (j + 1) & (after_svc.cap - 1);
    if (after_svc.v[j] == pc)
        return 1;
    if (add) {
        after_svc.v[j] = pc;
        after_svc.n++;
    }
    return add;
}

/* Does the block, in a library, close a loop that may wait (its jump back
 * over a body insn_loop_may_wait cannot clear)? qemu-user keeps guest code
 * at one host offset from its address, so the body is read where the
 * block's last instruction is, if it starts on a page the block's start is
 * on or within the block (pages before may not be mapped). */
static size_t loop_body(struct qemu_plugin_insn *last, uint64_t last_pc, uint32_t w, uint64_t start,
                        uint32_t body[128])
{
    uint64_t target;
    if (!insn_jump_target(w, last_pc, &target) || target > last_pc)
        return 0; /* no loop closes here */
    const uint8_t *h = qemu_plugin_insn_haddr(last);
    size_t n = (size_t)((last_pc - target) / 4) + 1;
    if (!h || n > 128 || (target < start && (target >> 12) != (start >> 12)))
        return SIZE_MAX; /* a body that cannot be read */
    memcpy(body, h - (last_pc - target), n * 4);
    return n;
}

static int lib_loop_may_wait(struct qemu_plugin_insn *last, uint64_t last_pc, uint32_t w,
                             uint64_t start)
{
    uint32_t body[128];
    size_t n = loop_body(last, last_pc, w, start, body);
    return n == SIZE_MAX || (n && insn_loop_may_wait(body, n));
}

int plugin_tb_rereads_stack(struct qemu_plugin_tb *tb, size_t n, uint64_t start)
{
    if (n == 0)
        return 0;
    struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
    uint32_t w = 0, body[128];
    if (qemu_plugin_insn_size(last) == 4)
        memcpy(&w, qemu_plugin_insn_data(last), 4);
    size_t k = loop_body(last, qemu_plugin_insn_vaddr(last), w, start, body);
    return k && k != SIZE_MAX && insn_loop_rereads_stack(body, k);
}

int plugin_block_inline(struct qemu_plugin_tb *tb, const tb_info *ti, size_t n, int any_cb)
{
    if (!g_plugin.count_inline || n == 0)
        return 0;
    struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
    uint64_t last_pc = qemu_plugin_insn_vaddr(last);
    uint32_t w = 0;
    if (qemu_plugin_insn_size(last) == 4)
        memcpy(&w, qemu_plugin_insn_data(last), 4);
    pthread_mutex_lock(&after_svc.lock);
    int svc = insn_is_svc(w);
    int after = svc_set(ti->pc, 0);
    /* Unless it is remembered, the block after it cannot tell: keep
     * callbacks everywhere from then on. */
    if (svc && !svc_set(last_pc + 4, 1))
        g_plugin.count_inline = 0;
    pthread_mutex_unlock(&after_svc.lock);
    /* The program's own blocks have a callback for every access that matters
     * (or a gate): one without any cannot wait, even in a loop. The closing
     * block of a library loop that may wait keeps its call, for the spin rule
     * and the token. */
    int in = g_plugin.count_inline && !any_cb && !after && !ti->stack_wait &&
             (!ti->lib || ti->lib_store || !lib_loop_may_wait(last, last_pc, w, ti->pc));
    if (in)
        __atomic_fetch_add(&g_plugin.inline_blocks, 1, __ATOMIC_RELAXED);
    if (in && ti->lib_store)
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
                                                 &g_plugin.inline_lib_stores, 1);
    return in;
}
