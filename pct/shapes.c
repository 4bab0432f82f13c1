/* The simulator's catalogue of bug shapes (see pct_sim.h). */
#include "pct_sim.h"

#include <string.h>

enum { VAR_T = 0, VAR_X = 0, LOCK_A = 0, LOCK_B = 1 };

static bool order_bug(const pct_sim_run *run)
{
    for (size_t i = 1; i < PCT_SIM_MAX_THREADS; i++) {
        if (run->exit_step[i] && run->reg[i][0] == 0)
            return true;
    }
    return false;
}

void pct_sim_shape_order(pct_sim_program *prog, size_t consumers, size_t pad)
{
    memset(prog, 0, sizeof *prog);
    prog->name = "order";
    prog->depth = 1;
    prog->bug = order_bug;
    prog->thread[0].at_start = true;
    for (size_t c = 1; c <= consumers; c++)
        pct_sim_add(prog, 0, PCT_SIM_SPAWN, (int)c, 0);
    pct_sim_pad(prog, 0, pad);
    pct_sim_add(prog, 0, PCT_SIM_STORE, VAR_T, 1);
    for (size_t c = 1; c <= consumers; c++) {
        pct_sim_pad(prog, c, pad);
        pct_sim_add(prog, c, PCT_SIM_LOAD, VAR_T, 0);
    }
    for (size_t c = 1; c <= consumers; c++)
        pct_sim_add(prog, 0, PCT_SIM_JOIN, (int)c, 0);
}

static bool atomicity_bug(const pct_sim_run *run)
{
    return run->reg[1][0] != 0 && run->reg[1][1] == 0;
}

void pct_sim_shape_atomicity(pct_sim_program *prog, size_t pad, size_t gap)
{
    memset(prog, 0, sizeof *prog);
    prog->name = "atomicity";
    prog->depth = 2;
    prog->bug = atomicity_bug;
    prog->init[VAR_X] = 1;
    prog->thread[0].at_start = prog->thread[1].at_start = true;
    pct_sim_pad(prog, 0, pad);
    pct_sim_add(prog, 0, PCT_SIM_STORE, VAR_X, 0);
    pct_sim_pad(prog, 0, pad);
    pct_sim_pad(prog, 1, pad);
    pct_sim_add(prog, 1, PCT_SIM_LOAD, VAR_X, 0);
    pct_sim_pad(prog, 1, gap);
    pct_sim_add(prog, 1, PCT_SIM_LOAD, VAR_X, 1);
    pct_sim_pad(prog, 1, pad);
}

void pct_sim_shape_deadlock(pct_sim_program *prog, size_t pad, size_t gap)
{
    memset(prog, 0, sizeof *prog);
    prog->name = "deadlock";
    prog->depth = 2;
    for (size_t t = 0; t < 2; t++) {
        int first = t == 0 ? LOCK_A : LOCK_B, second = t == 0 ? LOCK_B : LOCK_A;
        prog->thread[t].at_start = true;
        pct_sim_pad(prog, t, pad);
        pct_sim_add(prog, t, PCT_SIM_LOCK, first, 0);
        pct_sim_pad(prog, t, gap);
        pct_sim_add(prog, t, PCT_SIM_LOCK, second, 0);
        pct_sim_add(prog, t, PCT_SIM_UNLOCK, second, 0);
        pct_sim_add(prog, t, PCT_SIM_UNLOCK, first, 0);
        pct_sim_pad(prog, t, pad);
    }
}

static bool torn_bug(const pct_sim_run *run)
{
    return run->reg[1][0] == 0 && run->reg[1][1] == 1;
}

void pct_sim_shape_torn(pct_sim_program *prog, size_t lead, size_t gap, size_t tail)
{
    memset(prog, 0, sizeof *prog);
    prog->name = "torn";
    prog->depth = 3;
    prog->bug = torn_bug;
    prog->thread[0].at_start = prog->thread[1].at_start = true;
    pct_sim_pad(prog, 0, lead);
    pct_sim_add(prog, 0, PCT_SIM_STORE, VAR_X, 1);
    pct_sim_pad(prog, 0, gap);
    pct_sim_add(prog, 0, PCT_SIM_STORE, VAR_X, 2);
    pct_sim_pad(prog, 0, tail);
    pct_sim_pad(prog, 1, lead);
    pct_sim_add(prog, 1, PCT_SIM_LOAD, VAR_X, 0);
    pct_sim_pad(prog, 1, gap);
    pct_sim_add(prog, 1, PCT_SIM_LOAD, VAR_X, 1);
    pct_sim_pad(prog, 1, tail);
}

void pct_sim_shape_lock_cycle(pct_sim_program *prog, size_t m, size_t tail)
{
    memset(prog, 0, sizeof *prog);
    prog->name = "lock-cycle";
    prog->depth = m <= 3 ? 2 : 0;
    for (size_t t = 0; t < m && t < PCT_SIM_LOCKS; t++) {
        int first = (int)t, second = (int)((t + 1) % m);
        prog->thread[t].at_start = true;
        pct_sim_add(prog, t, PCT_SIM_LOCK, first, 0);
        pct_sim_add(prog, t, PCT_SIM_LOCK, second, 0);
        pct_sim_add(prog, t, PCT_SIM_UNLOCK, second, 0);
        pct_sim_add(prog, t, PCT_SIM_UNLOCK, first, 0);
        pct_sim_pad(prog, t, tail);
    }
}
