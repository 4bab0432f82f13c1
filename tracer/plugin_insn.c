/* What translation learns about a block and its memory instructions, kept
 * for the block's lifetime (qemu-user never frees translations while it
 * runs, and neither do we); the decoding itself is insn_decode.c's. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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
    return insn_closes_wait_loop(w, n, qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, n - 1)),
                                 g_plugin.cfg.wait_loop_bytes);
}
