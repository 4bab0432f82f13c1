/* The decision log (why each switch happened) and the scripted policy: its
 * non-preemptive base, its switches and misses, and that replaying the
 * switches a PCT, random or POS run logged makes the same decisions, one
 * for one. All randomness from the printed seeds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pct_sim.h"

#define MAX_LOG 4096

/* What the decision callback and the simulator's hook saw. */
typedef struct log {
    pct_decision d[MAX_LOG];
    size_t n;
    pct_tid chosen[MAX_LOG]; /* the thread that ran each step */
    size_t nchosen;
} log;

static void on_decision(void *ctx, const pct_policy *p, const pct_decision *d)
{
    (void)p;
    log *l = ctx;
    if (l->n < MAX_LOG) {
        l->d[l->n] = *d;
        l->d[l->n].allowed = NULL; /* valid only during the call */
        l->n++;
    }
}

static void on_step(void *ctx, const pct_policy *p, const pct_tid *allowed, size_t n,
                    pct_tid chosen)
{
    (void)p, (void)allowed, (void)n;
    log *l = ctx;
    if (l->nchosen < MAX_LOG)
        l->chosen[l->nchosen++] = chosen;
}

static pct_policy *make(pct_config c)
{
    char err[256] = "";
    pct_policy *p = pct_policy_create(&c, err, sizeof err);
    if (!p)
        print_message("unexpected: %s\n", err);
    assert_non_null(p);
    return p;
}

static pct_config script_config(const pct_script_switch *s, size_t n, uint32_t threads)
{
    pct_config c;
    pct_config_init(&c, PCT_KIND_SCRIPT);
    c.n = threads;
    c.script = s;
    c.script_len = n;
    return c;
}

static void run(const pct_sim_program *prog, pct_policy *p, log *l, pct_sim_run *r)
{
    memset(l, 0, sizeof *l);
    pct_policy_on_decision(p, on_decision, l);
    assert_int_equal(pct_sim_execute(prog, p, PCT_SIM_PICK_FIRST, 1, 100000, on_step, l, r), 0);
}

static void test_config(void **state)
{
    (void)state;
    pct_kind k;
    assert_int_equal(pct_kind_parse("script", &k), 0);
    assert_int_equal(k, PCT_KIND_SCRIPT);
    assert_string_equal(pct_kind_name(PCT_KIND_SCRIPT), "script");
    pct_script_switch s[2] = {{5, PCT_SIM_TID(1), true}, {3, PCT_SIM_TID(0), true}};
    char err[256] = "";
    pct_config c = script_config(s, 2, 2);
    assert_int_equal(pct_config_check(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "step order"));
    s[1] = (pct_script_switch){7, -3, false};
    assert_int_equal(pct_config_check(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "names thread -3"));
    c = script_config(NULL, 0, 2); /* no switch: the base alone */
    assert_int_equal(pct_config_check(&c, err, sizeof err), 0);
    assert_string_equal(pct_why_name(PCT_WHY_CHANGE_POINT), "change_point");
    assert_string_equal(pct_why_name(PCT_WHY_BLOCKED), "blocked");
    assert_string_equal(pct_why_name((pct_why)99), "?");
}

/* Two threads of `len` steps of work each. */
static void two_workers(pct_sim_program *prog, size_t len)
{
    memset(prog, 0, sizeof *prog);
    prog->name = "two";
    prog->thread[0].at_start = prog->thread[1].at_start = true;
    pct_sim_pad(prog, 0, len);
    pct_sim_pad(prog, 1, len);
}

/* No switch: thread 0 runs to its end, then thread 1; the only switch is
 * the exit's, and it is no preemption. */
static void test_base_is_non_preemptive(void **state)
{
    (void)state;
    pct_sim_program prog;
    two_workers(&prog, 6);
    static log l;
    pct_sim_run r;
    pct_config c = script_config(NULL, 0, 2);
    pct_policy *p = make(c);
    run(&prog, p, &l, &r);
    assert_true(r.completed);
    assert_int_equal(l.nchosen, 12);
    for (size_t i = 0; i < 12; i++)
        assert_int_equal(l.chosen[i], PCT_SIM_TID(i < 6 ? 0 : 1));
    assert_int_equal(l.n, 1);
    assert_int_equal(l.d[0].why, PCT_WHY_EXITED);
    assert_false(l.d[0].preempt);
    assert_int_equal(l.d[0].from, PCT_SIM_TID(0));
    assert_int_equal(l.d[0].to, PCT_SIM_TID(1));
    pct_policy_destroy(p);
}

/* A preempting switch at step 2 runs thread 1 from there to its end; a
 * second one names a thread that has exited by then: missed, and the base
 * goes on. */
static void test_switch_and_miss(void **state)
{
    (void)state;
    pct_sim_program prog;
    two_workers(&prog, 6);
    static log l;
    pct_sim_run r;
    const pct_script_switch s[] = {{2, PCT_SIM_TID(1), true}, {9, PCT_SIM_TID(1), true}};
    pct_policy *p = make(script_config(s, 2, 2));
    run(&prog, p, &l, &r);
    assert_true(r.completed);
    const int want[12] = {0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    for (size_t i = 0; i < 12; i++)
        assert_int_equal(l.chosen[i], PCT_SIM_TID(want[i]));
    uint64_t applied, missed;
    pct_policy_script_counts(p, &applied, &missed);
    assert_int_equal(applied, 1);
    assert_int_equal(missed, 1);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.d[0].why, PCT_WHY_SCHEDULE);
    assert_true(l.d[0].preempt);
    assert_int_equal(l.d[0].step, 2);
    assert_int_equal(l.d[1].why, PCT_WHY_EXITED);
    pct_policy_destroy(p);
}

/* A non-preempting switch applies where the current thread cannot go on
 * (here: it blocks on the lock another holds) and picks its thread over
 * the base's lowest id; where the current thread could go on, it does not
 * apply. */
static void test_non_preempting(void **state)
{
    (void)state;
    pct_sim_program prog;
    memset(&prog, 0, sizeof prog);
    for (int t = 0; t < 3; t++)
        prog.thread[t].at_start = true;
    pct_sim_add(&prog, 0, PCT_SIM_LOCK, 0, 0);
    pct_sim_pad(&prog, 0, 2);
    pct_sim_add(&prog, 0, PCT_SIM_UNLOCK, 0, 0);
    pct_sim_pad(&prog, 1, 1);
    pct_sim_add(&prog, 1, PCT_SIM_LOCK, 0, 0);
    pct_sim_add(&prog, 1, PCT_SIM_UNLOCK, 0, 0);
    pct_sim_pad(&prog, 2, 2);
    /* Step 1: thread 0 took the lock; preempted to thread 1, whose step 2
     * leaves it blocked on the lock: then thread 2, not thread 0. */
    const pct_script_switch s[] = {{1, PCT_SIM_TID(1), true}, {2, PCT_SIM_TID(2), false}};
    static log l;
    pct_sim_run r;
    pct_policy *p = make(script_config(s, 2, 3));
    run(&prog, p, &l, &r);
    assert_true(r.completed);
    const int want[5] = {0, 1, 2, 2, 0};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(l.chosen[i], PCT_SIM_TID(want[i]));
    uint64_t applied, missed;
    pct_policy_script_counts(p, &applied, &missed);
    assert_int_equal(applied, 2);
    assert_int_equal(missed, 0);
    assert_int_equal(l.d[1].why, PCT_WHY_BLOCKED);
    assert_int_equal(l.d[1].to, PCT_SIM_TID(2));
    assert_false(l.d[1].preempt);
    pct_policy_destroy(p);
    /* The same switch where thread 0 could go on: not applied. */
    const pct_script_switch s2[] = {{1, PCT_SIM_TID(2), false}};
    p = make(script_config(s2, 1, 3));
    run(&prog, p, &l, &r);
    pct_policy_script_counts(p, &applied, &missed);
    assert_int_equal(applied, 0);
    assert_int_equal(missed, 1);
    assert_int_equal(l.chosen[1], PCT_SIM_TID(0));
    pct_policy_destroy(p);
}

/* A thread that yields is left for another even without a switch, so a
 * spin-wait cannot hold the base for ever. */
static void test_yield_moves_on(void **state)
{
    (void)state;
    pct_sim_program prog;
    memset(&prog, 0, sizeof prog);
    prog.thread[0].at_start = prog.thread[1].at_start = true;
    pct_sim_add(&prog, 0, PCT_SIM_SPIN_YIELD, 0, 1);
    pct_sim_pad(&prog, 1, 3);
    pct_sim_add(&prog, 1, PCT_SIM_STORE, 0, 1);
    static log l;
    pct_sim_run r;
    pct_policy *p = make(script_config(NULL, 0, 2));
    run(&prog, p, &l, &r);
    assert_true(r.completed);
    assert_true(l.n >= 1);
    assert_int_equal(l.d[0].why, PCT_WHY_YIELD);
    assert_false(l.d[0].preempt);
    pct_policy_destroy(p);
}

/* The reasons PCT's switches are given: a change point at its step, a
 * blocked thread, an exit, a thread of higher priority; and a starvation
 * override when overrides are frequent. */
static void test_reasons(void **state)
{
    (void)state;
    pct_sim_program prog;
    pct_sim_shape_deadlock(&prog, 3, 2);
    uint64_t k = pct_sim_op_count(&prog);
    unsigned seen[PCT_WHY_BASE + 1] = {0};
    static log l;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        pct_config c;
        pct_config_init(&c, PCT_KIND_PCT);
        c.n = 2, c.k = k, c.d = 3, c.seed = seed, c.starvation = seed % 4 ? 0 : 0.3;
        pct_policy *p = make(c);
        pct_sim_run r;
        run(&prog, p, &l, &r);
        uint64_t cps[2];
        pct_policy_change_points(p, cps, 2);
        for (size_t i = 0; i < l.n; i++) {
            const pct_decision *d = &l.d[i];
            seen[d->why]++;
            assert_true(d->stay || d->from != d->to);
            /* Forced switches are never preemptions, the others always. */
            int forced =
                d->why == PCT_WHY_BLOCKED || d->why == PCT_WHY_EXITED || d->why == PCT_WHY_YIELD;
            assert_int_equal(d->preempt, !forced);
            if (d->why == PCT_WHY_CHANGE_POINT) {
                assert_true(d->change_point == 1 || d->change_point == 2);
                assert_int_equal(d->step, cps[d->change_point - 1]);
            }
        }
        pct_policy_destroy(p);
    }
    assert_true(seen[PCT_WHY_CHANGE_POINT] > 0);
    assert_true(seen[PCT_WHY_BLOCKED] > 0);
    assert_true(seen[PCT_WHY_EXITED] > 0);
    assert_true(seen[PCT_WHY_OVERRIDE] > 0);
    assert_int_equal(seen[PCT_WHY_SCHEDULE], 0);
}

/* Replaying a logged run's switches with the scripted policy makes the
 * same choices at every step, whatever policy made them. */
static void replay_matches(const pct_sim_program *prog, pct_config c)
{
    static log orig, again;
    pct_sim_run r1, r2;
    pct_policy *p = make(c);
    run(prog, p, &orig, &r1);
    pct_policy_destroy(p);
    assert_true(orig.n < MAX_LOG);
    pct_script_switch *s = calloc(orig.n + 1, sizeof *s);
    assert_non_null(s);
    for (size_t i = 0; i < orig.n; i++)
        s[i] = (pct_script_switch){orig.d[i].step, orig.d[i].to, orig.d[i].preempt};
    p = make(script_config(s, orig.n, c.n));
    free(s); /* the policy keeps its own copy */
    run(prog, p, &again, &r2);
    uint64_t applied, missed;
    pct_policy_script_counts(p, &applied, &missed);
    if (missed || again.nchosen != orig.nchosen)
        print_message("%s %s seed %llu: %llu missed, %zu vs %zu steps\n", prog->name,
                      pct_kind_name(c.kind), (unsigned long long)c.seed, (unsigned long long)missed,
                      again.nchosen, orig.nchosen);
    assert_int_equal(missed, 0);
    assert_int_equal(again.nchosen, orig.nchosen);
    assert_memory_equal(again.chosen, orig.chosen, orig.nchosen * sizeof *orig.chosen);
    assert_int_equal(r1.bug, r2.bug);
    assert_int_equal(r1.deadlocked, r2.deadlocked);
    /* The replay's own log is the same list of switches. */
    assert_int_equal(again.n, orig.n);
    for (size_t i = 0; i < orig.n; i++) {
        assert_int_equal(again.d[i].step, orig.d[i].step);
        assert_int_equal(again.d[i].to, orig.d[i].to);
        assert_int_equal(again.d[i].preempt, orig.d[i].preempt);
    }
    pct_policy_destroy(p);
}

static void test_replay_of_logged_runs(void **state)
{
    (void)state;
    pct_sim_program progs[5];
    pct_sim_shape_atomicity(&progs[0], 4, 3);
    pct_sim_shape_deadlock(&progs[1], 3, 2);
    pct_sim_shape_lock_cycle(&progs[2], 3, 2);
    pct_sim_shape_order(&progs[3], 3, 4);
    memset(&progs[4], 0, sizeof progs[4]); /* a spinner and its releaser */
    progs[4].name = "spin";
    progs[4].thread[0].at_start = progs[4].thread[1].at_start = true;
    pct_sim_add(&progs[4], 0, PCT_SIM_SPIN_YIELD, 0, 1);
    pct_sim_pad(&progs[4], 0, 2);
    pct_sim_pad(&progs[4], 1, 5);
    pct_sim_add(&progs[4], 1, PCT_SIM_STORE, 0, 1);
    const pct_kind kinds[] = {PCT_KIND_PCT, PCT_KIND_RPRO, PCT_KIND_RANDOM, PCT_KIND_POS};
    print_message("seeds 1..60 per program and policy\n");
    for (size_t i = 0; i < 5; i++) {
        uint32_t n = (uint32_t)progs[i].nthreads;
        for (size_t k = 0; k < 4; k++)
            for (uint64_t seed = 1; seed <= 60; seed++) {
                pct_config c;
                pct_config_init(&c, kinds[k]);
                c.n = n, c.k = pct_sim_op_count(&progs[i]) + 4, c.d = 3, c.r = 2;
                c.seed = seed, c.starvation = 0.05;
                replay_matches(&progs[i], c);
            }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_base_is_non_preemptive),
        cmocka_unit_test(test_switch_and_miss),
        cmocka_unit_test(test_non_preempting),
        cmocka_unit_test(test_yield_moves_on),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_replay_of_logged_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
