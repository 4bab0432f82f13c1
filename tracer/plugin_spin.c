/* Replays: spin loops and livelock. A thread that waits by spinning would
 * hold the token for ever under a priority policy: it is demoted as if it
 * had yielded, and a run where every thread that can run spins without
 * progress ends as a livelock (docs/replay.md, "Spinning"). */
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "plugin_replay.h"

/* A spinner re-reads a few addresses while nothing else runs: after this
 * many such loads in one turn, with no write to memory outside its stack, it
 * is demoted like a yield. A loop reading an array reads many addresses and
 * is not a spinner; a loop that re-reads one global this many times without
 * writing anything is taken for one (its demotion is counted as an override,
 * so the bound's claim leaves that run out). */
#define SPIN_LOADS 1000

static void livelock(void)
{
    /* One thread reports and ends the process; another that finds the same
     * livelock meanwhile must not exit under it while the trace is written. */
    static atomic_int claimed;
    if (atomic_exchange(&claimed, 1))
        for (;;)
            pause();
    char buf[4096];
    weft_platform_describe_spinners(g_plugin.platform, buf, sizeof buf);
    fprintf(stderr, "weft: livelock: every thread that can run spins without progress\n%s", buf);
    plugin_finish(WEFT_TRACE_LIVELOCK | PLUGIN_ENDS_RUN);
    _exit(87);
}

/* The thread spins: demoted, and a decision made here, so the demotion
 * takes effect even if the loop has no schedule point of its own (a flag
 * nobody ever writes is not a shared address). */
static void spin_demote(vcpu_state *v, uint64_t pc, uint64_t cycles)
{
    weft_platform *p = g_plugin.platform;
    if (weft_platform_spin(p, v->pe, pc))
        livelock();
    uint64_t resume;
    weft_platform_busy(p, v->pe, 1);
    weft_platform_gate(p, v->pe, cycles, pc, WEFT_SYNC_ACCESS, &resume);
    weft_platform_busy(p, v->pe, -1);
    v->offset += resume - cycles;
}

void plugin_spin_watch(vcpu_state *v, uint64_t pc, uint64_t addr, int write, uint64_t cycles)
{
    weft_platform *p = g_plugin.platform;
    v->last_gated_pc = pc;
    if (write) {
        plugin_spin_progress(v);
        return;
    }
    /* Another thread ran: did anyone write? Not "a handoff ends the count":
     * under random scheduling (or a spinner demoted at every load) a turn is
     * a step or two, and a loop all threads spin in was never seen. */
    uint64_t sw = weft_platform_handoffs(p);
    if (sw != v->spin_sw) {
        v->spin_sw = sw;
        uint64_t e = weft_platform_progress_epoch(p);
        if (e != v->spin_epoch) {
            v->spin_epoch = e;
            v->spin_loads = 0;
            v->nspin = 0;
        }
    }
    unsigned i = 0;
    while (i < v->nspin && v->spin_addr[i] != addr)
        i++;
    if (i == v->nspin) {
        if (v->nspin == 4) { /* more than a few addresses: reading, not spinning */
            v->nspin = 0;
            v->spin_loads = 0;
        }
        v->spin_addr[v->nspin++] = addr;
    }
    if (++v->spin_loads >= SPIN_LOADS) {
        v->spin_loads = 0;
        spin_demote(v, pc, cycles);
    }
}

void plugin_spin_progress(vcpu_state *v)
{
    v->spin_loads = 0;
    v->nspin = 0;
    v->lib_blocks = 0;
    weft_platform_progress(g_plugin.platform, v->pe);
    v->spin_epoch = v->lib_epoch = weft_platform_progress_epoch(g_plugin.platform);
}

void plugin_spin_lib_blocks(vcpu_state *v, const tb_info *ti, uint64_t cycles)
{
    v->lib_blocks = 0;
    uint64_t sw = weft_platform_handoffs(g_plugin.platform);
    if (sw != v->lib_sw) { /* another thread ran meanwhile: did anyone write? */
        v->lib_sw = sw;
        uint64_t e = weft_platform_progress_epoch(g_plugin.platform);
        if (e != v->lib_epoch) {
            v->lib_epoch = e;
            return;
        }
    }
    v->last_gated_pc = ti->pc;
    spin_demote(v, ti->pc, cycles);
}

void plugin_spin_yield(vcpu_state *v)
{
    /* Where the program yields: its last block of its own code (the last
     * gate may be a library's, a lock's release). */
    uint64_t pc = v->own_n ? v->own_pcs[(v->own_n - 1) % WEFT_RUN_END_PCS] : v->last_gated_pc;
    if (weft_platform_yielded(g_plugin.platform, v->pe, pc))
        livelock();
}

void plugin_spin_sleep(vcpu_state *v)
{
    weft_platform_sleep(g_plugin.platform, v->pe, v->last_gated_pc);
}
