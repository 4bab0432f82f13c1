/* The abstract-program simulator (see pct_sim.h): the platform's side of the
 * policy interface, serialised, for straight-line programs. */
#include "pct_sim.h"

#include <gsl/gsl_rng.h>
#include <string.h>

int pct_sim_add(pct_sim_program *prog, size_t thread, pct_sim_opcode code, int a, int64_t b)
{
    if (thread >= PCT_SIM_MAX_THREADS || prog->thread[thread].nops >= PCT_SIM_MAX_OPS)
        return -1;
    if (thread >= prog->nthreads)
        prog->nthreads = thread + 1;
    prog->thread[thread].ops[prog->thread[thread].nops++] = (pct_sim_op){code, a, b};
    return 0;
}

int pct_sim_pad(pct_sim_program *prog, size_t thread, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (pct_sim_add(prog, thread, PCT_SIM_WORK, 0, 0) != 0)
            return -1;
    }
    return 0;
}

uint64_t pct_sim_op_count(const pct_sim_program *prog)
{
    uint64_t n = 0;
    for (size_t i = 0; i < prog->nthreads; i++)
        n += prog->thread[i].nops;
    return n;
}

struct sim {
    const pct_sim_program *prog;
    pct_policy *p;
    pct_sim_report report;
    pct_sim_run *run;
    size_t pc[PCT_SIM_MAX_THREADS];
    bool started[PCT_SIM_MAX_THREADS], exited[PCT_SIM_MAX_THREADS];
    bool reported_enabled[PCT_SIM_MAX_THREADS]; /* what the policy was told last */
    uint64_t time[PCT_SIM_MAX_THREADS];         /* one cycle per step, for ideal */
    int owner[PCT_SIM_LOCKS];                   /* thread holding the mutex, or -1 */
    /* As the platform tells a sleep that waits from a first one: stores,
     * locks, unlocks and spawns are progress; a thread that yielded or
     * slept since the last progress sleeps again. */
    uint64_t progress;
    uint64_t sighted[PCT_SIM_MAX_THREADS]; /* progress + 1 at its last yield */
};

enum pause { PAUSE_NONE, PAUSE_YIELD, PAUSE_SLEEP };

static bool live(const struct sim *s, size_t i)
{
    return s->started[i] && !s->exited[i];
}

/* Whether thread i's next operation can execute now. Busy-waits count as
 * enabled: telling spinning from progressing is the policy's problem. */
static bool runnable(const struct sim *s, size_t i)
{
    if (!live(s, i))
        return false;
    if (s->pc[i] == s->prog->thread[i].nops)
        return true; /* about to exit, which the policy learns after its step */
    const pct_sim_op *op = &s->prog->thread[i].ops[s->pc[i]];
    switch (op->code) {
    case PCT_SIM_LOCK:
        return s->owner[op->a] < 0;
    case PCT_SIM_JOIN:
        return s->exited[op->a];
    default:
        return true;
    }
}

/* What operation op touches. */
static pct_access access_of(const pct_sim_op *op, uint64_t *object)
{
    switch (op->code) {
    case PCT_SIM_STORE:
        *object = PCT_SIM_VAR_OBJECT(op->a);
        return PCT_ACCESS_WRITE;
    case PCT_SIM_LOAD:
    case PCT_SIM_SPIN:
    case PCT_SIM_SPIN_YIELD:
    case PCT_SIM_SPIN_SLEEP:
        *object = PCT_SIM_VAR_OBJECT(op->a);
        return PCT_ACCESS_READ;
    case PCT_SIM_LOCK:
    case PCT_SIM_UNLOCK:
        *object = PCT_SIM_LOCK_OBJECT(op->a);
        return PCT_ACCESS_SYNC;
    case PCT_SIM_SPAWN:
    case PCT_SIM_JOIN:
        *object = PCT_SIM_THREAD_OBJECT(op->a);
        return PCT_ACCESS_SYNC;
    default:
        *object = 0;
        return PCT_ACCESS_NONE;
    }
}

/* Describes thread i's next operation, as much as the report mode says. */
static void describe_pending(struct sim *s, size_t i)
{
    if (s->report == PCT_SIM_REPORT_NOTHING || !live(s, i) || s->pc[i] == s->prog->thread[i].nops)
        return;
    uint64_t object;
    pct_access a = access_of(&s->prog->thread[i].ops[s->pc[i]], &object);
    if (s->report == PCT_SIM_REPORT_KINDS)
        object = 0;
    pct_thread_pending(s->p, PCT_SIM_TID(i), object, a);
}

static void start(struct sim *s, size_t i, pct_tid parent)
{
    s->started[i] = true;
    s->reported_enabled[i] = true;
    pct_thread_created(s->p, PCT_SIM_TID(i), parent);
    if (s->prog->thread[i].nops == 0) {
        s->exited[i] = true;
        pct_thread_exited(s->p, PCT_SIM_TID(i));
    }
    describe_pending(s, i);
}

/* Tell the policy about every enabled/blocked change; returns how many
 * threads are enabled. */
static size_t refresh(struct sim *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->prog->nthreads; i++) {
        if (!live(s, i))
            continue;
        bool en = runnable(s, i);
        if (en != s->reported_enabled[i]) {
            if (en)
                pct_thread_enabled(s->p, PCT_SIM_TID(i));
            else
                pct_thread_blocked(s->p, PCT_SIM_TID(i));
            s->reported_enabled[i] = en;
        }
        n += en;
    }
    return n;
}

/* Executes one operation of thread i; returns how it paused, if it did. */
static enum pause execute(struct sim *s, size_t i)
{
    const pct_sim_op *op = &s->prog->thread[i].ops[s->pc[i]];
    bool advance = true;
    enum pause paused = PAUSE_NONE;
    switch (op->code) {
    case PCT_SIM_WORK:
    case PCT_SIM_JOIN:
        break;
    case PCT_SIM_SLEEP:
        paused = PAUSE_SLEEP;
        break;
    case PCT_SIM_STORE:
        s->run->var[op->a] = op->b;
        break;
    case PCT_SIM_LOAD:
        s->run->reg[i][op->b] = s->run->var[op->a];
        break;
    case PCT_SIM_LOCK:
        s->owner[op->a] = (int)i;
        break;
    case PCT_SIM_UNLOCK:
        s->owner[op->a] = -1;
        break;
    case PCT_SIM_SPAWN:
        if (!s->started[op->a]) {
            s->time[op->a] = s->time[i];
            start(s, (size_t)op->a, PCT_SIM_TID(i));
        }
        break;
    case PCT_SIM_SPIN:
    case PCT_SIM_SPIN_YIELD:
    case PCT_SIM_SPIN_SLEEP:
        advance = s->run->var[op->a] == op->b;
        if (!advance && op->code != PCT_SIM_SPIN)
            paused = op->code == PCT_SIM_SPIN_YIELD ? PAUSE_YIELD : PAUSE_SLEEP;
        break;
    }
    switch (op->code) {
    case PCT_SIM_STORE:
    case PCT_SIM_LOCK:
    case PCT_SIM_UNLOCK:
    case PCT_SIM_SPAWN:
        s->progress++;
        break;
    default:
        break;
    }
    if (advance)
        s->pc[i]++;
    return paused;
}

static void report_pause(struct sim *s, size_t i, enum pause how)
{
    if (how == PAUSE_NONE)
        return;
    bool again = s->sighted[i] == s->progress + 1;
    s->sighted[i] = s->progress + 1;
    if (how == PAUSE_SLEEP)
        pct_thread_slept(s->p, PCT_SIM_TID(i), again);
    else
        pct_thread_yielded(s->p, PCT_SIM_TID(i));
}

static size_t choose(pct_sim_adversary adv, gsl_rng *rng, size_t n)
{
    switch (adv) {
    case PCT_SIM_PICK_LAST:
        return n - 1;
    case PCT_SIM_PICK_RANDOM:
        return gsl_rng_uniform_int(rng, n);
    default:
        return 0;
    }
}

int pct_sim_run_with(const pct_sim_program *prog, pct_policy *p, const pct_sim_options *opt,
                     pct_sim_run *run)
{
    struct sim s = {.prog = prog, .p = p, .run = run, .report = opt->report};
    memset(run, 0, sizeof *run);
    memcpy(run->var, prog->init, sizeof run->var);
    memset(s.owner, -1, sizeof s.owner);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng)
        return -1;
    gsl_rng_set(rng, (unsigned long)(opt->adv_seed & 0xffffffffu));
    for (size_t i = 0; i < prog->nthreads; i++) {
        if (prog->thread[i].at_start)
            start(&s, i, PCT_NO_PARENT);
    }
    int rc = 0;
    pct_tid allowed[PCT_SIM_MAX_THREADS];
    while (run->steps < opt->max_steps) {
        if (refresh(&s) == 0)
            break;
        size_t n = pct_policy_next(p, allowed, PCT_SIM_MAX_THREADS);
        if (n == 0 || n > PCT_SIM_MAX_THREADS) {
            rc = -1;
            break;
        }
        if (n > run->max_allowed)
            run->max_allowed = n;
        pct_tid tid = allowed[choose(opt->adv, rng, n)];
        size_t i = (size_t)(tid - PCT_SIM_TID(0));
        if (tid < PCT_SIM_TID(0) || i >= prog->nthreads || !runnable(&s, i)) {
            rc = -1;
            break;
        }
        uint64_t object;
        pct_access a = access_of(&prog->thread[i].ops[s.pc[i]], &object);
        enum pause paused = execute(&s, i);
        run->steps++;
        refresh(&s);
        if (opt->report == PCT_SIM_REPORT_NOTHING)
            pct_step(p, tid);
        else
            pct_step_access(p, tid, object, a);
        pct_thread_time(p, tid, ++s.time[i]);
        report_pause(&s, i, paused);
        if (s.pc[i] == prog->thread[i].nops) {
            s.exited[i] = true;
            run->exit_step[i] = run->steps;
            pct_thread_exited(p, tid);
        }
        describe_pending(&s, i);
        if (opt->hook)
            opt->hook(opt->ctx, p, allowed, n, tid);
    }
    gsl_rng_free(rng);
    bool any_live = false;
    for (size_t i = 0; i < prog->nthreads; i++)
        any_live |= live(&s, i);
    run->completed = !any_live;
    run->deadlocked = any_live && refresh(&s) == 0;
    run->policy_agrees = pct_policy_deadlocked(p) == run->deadlocked;
    run->bug = prog->bug ? prog->bug(run) : run->deadlocked;
    return rc;
}

int pct_sim_execute(const pct_sim_program *prog, pct_policy *p, pct_sim_adversary adv,
                    uint64_t adv_seed, uint64_t max_steps, pct_sim_hook hook, void *ctx,
                    pct_sim_run *run)
{
    pct_sim_options opt = {.adv = adv,
                           .adv_seed = adv_seed,
                           .max_steps = max_steps,
                           .hook = hook,
                           .ctx = ctx,
                           .report = PCT_SIM_REPORT_NOTHING};
    return pct_sim_run_with(prog, p, &opt, run);
}
