/* Policy semantics: validation, priorities and change points, PPCT's sets,
 * determinism, starvation freedom, deadlock detection, ideal and random. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pct_sim.h"

static pct_config config(pct_kind kind, uint32_t n, uint64_t k, uint32_t d, uint64_t r,
                         uint64_t seed)
{
    pct_config c;
    pct_config_init(&c, kind);
    c.n = n;
    c.k = k;
    c.d = d;
    c.r = r;
    c.seed = seed;
    return c;
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

/* The config is rejected with a one-line message containing `needle`. */
static void expect_reject(pct_config c, const char *needle)
{
    char err[256] = "";
    assert_int_equal(pct_config_check(&c, err, sizeof err), -1);
    assert_null(strchr(err, '\n'));
    if (!strstr(err, needle))
        print_message("message \"%s\" lacks \"%s\"\n", err, needle);
    assert_non_null(strstr(err, needle));
    char err2[256] = "";
    assert_null(pct_policy_create(&c, err2, sizeof err2));
    assert_string_equal(err, err2);
}

static void test_invalid_parameters(void **state)
{
    (void)state;
    const pct_kind prio[] = {PCT_KIND_PCT, PCT_KIND_PPCT, PCT_KIND_RPRO};
    for (size_t i = 0; i < 3; i++) {
        expect_reject(config(prio[i], 2, 0, 2, 1, 1), "k = 0 (unknown)");
        expect_reject(config(prio[i], 2, 10, 0, 1, 1), "depth d = 0");
        expect_reject(config(prio[i], 0, 10, 2, 1, 1), "n = 0");
        expect_reject(config(prio[i], 2, 3, 5, 3, 1), "distinct change points");
        pct_config c = config(prio[i], 2, 10, 2, 1, 1);
        c.starvation = -0.1;
        expect_reject(c, "starvation");
        c.starvation = 1.0;
        expect_reject(c, "starvation");
        c.starvation = NAN;
        expect_reject(c, "starvation");
    }
    expect_reject(config(PCT_KIND_RPRO, 2, 10, 3, 0, 1), "radius r = 0");
    expect_reject(config(PCT_KIND_RPRO, 2, 10, 3, 11, 1), "radius r = 11");
    expect_reject(config(PCT_KIND_RPRO, 2, 100, 6, 3, 1), "within radius");
    expect_reject(config((pct_kind)42, 2, 10, 2, 1, 1), "unknown policy kind");
    /* ideal and random need no step budget. */
    pct_config c = config(PCT_KIND_IDEAL, 1, 0, 1, 1, 1);
    assert_int_equal(pct_config_check(&c, NULL, 0), 0);
    c.kind = PCT_KIND_RANDOM;
    assert_int_equal(pct_config_check(&c, NULL, 0), 0);
    c = config(PCT_KIND_RPRO, 2, 100, 5, 3, 1);
    assert_int_equal(pct_config_check(&c, NULL, 0), 0);
    /* pb, db: the schedule (bound, schedule) must exist; pos needs no k. */
    c = config(PCT_KIND_DB, 2, 10, 1, 1, 1);
    c.bound = 1;
    c.schedule = 9;
    assert_int_equal(pct_config_check(&c, NULL, 0), 0);
    c.schedule = 10;
    expect_reject(c, "db: schedule 10 is past the end of bound 1");
    c.kind = PCT_KIND_PB;
    c.n = 1;
    expect_reject(c, "(0 schedules for k = 10, n = 1)");
    c.k = 0;
    expect_reject(c, "pb: k = 0 (unknown)");
    c.bound = 0; /* the base schedule needs no k, and is the only one */
    c.schedule = 0;
    assert_int_equal(pct_config_check(&c, NULL, 0), 0);
    c.schedule = 1;
    expect_reject(c, "bound 0 has only schedule 0");
    c.bound = PCT_MAX_BOUND + 1;
    expect_reject(c, "pb: bound 4097");
    c.kind = PCT_KIND_POS;
    assert_int_equal(pct_config_check(&c, NULL, 0), 0);
}

static void assert_close(double got, double want, double tol)
{
    if (fabs(got - want) > tol)
        print_message("got %.17g, want %.17g\n", got, want);
    assert_true(fabs(got - want) <= tol);
}

static void test_names_and_guarantees(void **state)
{
    (void)state;
    for (int k = PCT_KIND_IDEAL; k <= PCT_KIND_DB; k++) {
        pct_kind back;
        assert_int_equal(pct_kind_parse(pct_kind_name((pct_kind)k), &back), 0);
        assert_int_equal(back, k);
    }
    pct_kind dummy;
    assert_int_equal(pct_kind_parse("pcts", &dummy), -1);
    assert_int_equal(pct_kind_parse(NULL, &dummy), -1);
    assert_close(pct_guarantee(PCT_KIND_PCT, 2, 10, 3, 1), 1.0 / 200, 1e-15);
    assert_close(pct_guarantee(PCT_KIND_PPCT, 4, 50, 1, 1), 0.25, 1e-15);
    assert_close(pct_guarantee(PCT_KIND_RPRO, 2, 100, 3, 5), 1.0 / 2000, 1e-15);
    assert_close(pct_guarantee(PCT_KIND_RPRO, 2, 100, 4, 5), 1.0 / 20000, 1e-15);
    assert_close(pct_guarantee(PCT_KIND_RPRO, 3, 100, 2, 5), 1.0 / 300, 1e-15);
    assert_close(pct_guarantee(PCT_KIND_RPRO, 3, 100, 1, 5), 1.0 / 3, 1e-15);
    assert_close(pct_guarantee(PCT_KIND_RANDOM, 3, 100, 1, 5), 0.0, 0.0);
    assert_close(pct_guarantee(PCT_KIND_IDEAL, 3, 100, 1, 5), 0.0, 0.0);
    for (int k = PCT_KIND_POS; k <= PCT_KIND_DB; k++)
        assert_close(pct_guarantee((pct_kind)k, 3, 100, 2, 5), 0.0, 0.0);
}

static int64_t prio_of(const pct_policy *p, pct_tid tid)
{
    pct_thread_info in;
    assert_int_equal(pct_policy_thread_info(p, tid, &in), 0);
    return in.priority;
}

/* PCT by hand: initial priorities are a permutation of d..d+n-1, the
 * highest enabled thread runs, and the thread executing step k_i drops to
 * d - i. */
static void test_pct_priorities_and_change_points(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        const uint32_t n = 4, d = 4;
        const uint64_t k = 30;
        pct_config c = config(PCT_KIND_PCT, n, k, d, 1, seed);
        c.starvation = 0.0;
        pct_policy *p = make(c);
        for (pct_tid t = 0; t < n; t++)
            assert_int_equal(pct_thread_created(p, 7 + t, t ? 7 : PCT_NO_PARENT), 0);
        bool seen[4] = {false};
        for (pct_tid t = 0; t < n; t++) {
            int64_t pr = prio_of(p, 7 + t);
            assert_true(pr >= d && pr < d + n && !seen[pr - d]);
            seen[pr - d] = true;
        }
        uint64_t cp[8];
        assert_int_equal(pct_policy_change_points(p, cp, 8), d - 1);
        for (uint32_t i = 0; i < d - 1; i++) {
            assert_true(cp[i] >= 1 && cp[i] <= k);
            for (uint32_t j = 0; j < i; j++)
                assert_true(cp[i] != cp[j]);
        }
        pct_thread_blocked(p, 8); /* a blocked thread never runs */
        for (uint64_t s = 1; s <= k; s++) {
            pct_tid out[4], best = -1;
            assert_int_equal(pct_policy_next(p, out, 4), 1);
            for (pct_tid t = 0; t < n; t++) {
                if (t != 1 && (best < 0 || prio_of(p, 7 + t) > prio_of(p, best)))
                    best = 7 + t;
            }
            assert_true(out[0] == best);
            assert_int_equal(pct_step(p, out[0]), 0);
            for (uint32_t i = 0; i < d - 1; i++) {
                if (cp[i] == s)
                    assert_true(prio_of(p, out[0]) == (int64_t)(d - 1 - i));
            }
        }
        assert_int_equal(pct_policy_steps(p), k);
        assert_int_equal(pct_policy_low_set_ever(p), 0);
        pct_policy_destroy(p);
    }
}

/* RPro: k_1 anywhere in [1, k]; the others distinct, in [1, k], within r of
 * k_1 and not k_1; every offset of the window turns up. */
static void test_rpro_change_points(void **state)
{
    (void)state;
    const uint64_t k = 200, r = 4;
    bool offset_seen[2 * 4 + 1] = {false}, k1_low = false, k1_high = false;
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        pct_policy *p = make(config(PCT_KIND_RPRO, 3, k, 5, r, seed));
        uint64_t cp[4];
        assert_int_equal(pct_policy_change_points(p, cp, 4), 4);
        k1_low |= cp[0] <= 10;
        k1_high |= cp[0] >= k - 10;
        for (int i = 1; i < 4; i++) {
            int64_t off = (int64_t)cp[i] - (int64_t)cp[0];
            assert_true(cp[i] >= 1 && cp[i] <= k && off != 0 && llabs(off) <= (int64_t)r);
            for (int j = 1; j < i; j++)
                assert_true(cp[i] != cp[j]);
            offset_seen[off + (int64_t)r] = true;
        }
        pct_policy_destroy(p);
    }
    assert_true(k1_low && k1_high);
    for (int o = 0; o <= 8; o++)
        assert_true(o == 4 || offset_seen[o]);
}

/* More threads than n: PCT gives every newcomer a distinct initial-band
 * priority; PPCT keeps its single initial L thread. */
static void test_threads_beyond_n(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        pct_policy *p = make(config(PCT_KIND_PCT, 2, 100, 3, 1, seed));
        for (pct_tid t = 0; t < 6; t++)
            assert_int_equal(pct_thread_created(p, 100 + t, PCT_NO_PARENT), 0);
        bool seen[6] = {false};
        for (pct_tid t = 0; t < 6; t++) {
            int64_t pr = prio_of(p, 100 + t);
            assert_true(pr >= 3 && pr < 9 && !seen[pr - 3]);
            seen[pr - 3] = true;
        }
        pct_policy_destroy(p);
        p = make(config(PCT_KIND_PPCT, 2, 100, 3, 1, seed));
        for (pct_tid t = 0; t < 6; t++)
            pct_thread_created(p, 100 + t, PCT_NO_PARENT);
        size_t low = 0;
        for (size_t i = 0; i < 6; i++) {
            pct_thread_info in;
            pct_policy_thread_at(p, i, &in);
            low += in.in_low_set;
            assert_true(in.in_low_set == (i < 2 && in.priority == 3));
        }
        assert_int_equal(low, 1);
        pct_policy_destroy(p);
    }
}

/* PPCT decisions: all enabled H threads at once, else the best of L. */
static void test_ppct_sets(void **state)
{
    (void)state;
    pct_config c = config(PCT_KIND_PPCT, 4, 100, 2, 1, 5);
    c.starvation = 0.0;
    pct_policy *p = make(c);
    for (pct_tid t = 1; t <= 4; t++)
        pct_thread_created(p, t, PCT_NO_PARENT);
    pct_tid low = -1, out[4];
    for (pct_tid t = 1; t <= 4; t++) {
        pct_thread_info in;
        pct_policy_thread_info(p, t, &in);
        if (in.in_low_set)
            low = t;
    }
    assert_true(low > 0);
    assert_int_equal(pct_policy_next(p, out, 4), 3);
    for (int i = 0; i < 3; i++)
        assert_true(out[i] != low);
    assert_int_equal(pct_policy_next(p, out, 1), 3); /* count even if cap is short */
    for (pct_tid t = 1; t <= 4; t++) {
        if (t != low)
            pct_thread_blocked(p, t);
    }
    assert_int_equal(pct_policy_next(p, out, 4), 1);
    assert_true(out[0] == low);
    pct_thread_blocked(p, low);
    assert_int_equal(pct_policy_next(p, out, 4), 0);
    assert_true(pct_policy_deadlocked(p));
    pct_policy_destroy(p);
}

struct low_watch {
    uint32_t d;
    size_t violations, max_low, parallel;
};

static void watch_low(void *ctx, const pct_policy *p, const pct_tid *allowed, size_t n,
                      pct_tid chosen)
{
    (void)allowed;
    (void)chosen;
    struct low_watch *w = ctx;
    size_t now = 0;
    for (size_t i = 0; i < pct_policy_thread_count(p); i++) {
        pct_thread_info in;
        pct_policy_thread_at(p, i, &in);
        now += in.in_low_set && in.state != PCT_THREAD_EXITED;
    }
    size_t ever = pct_policy_low_set_ever(p);
    if (ever > w->d || now > ever)
        w->violations++;
    if (ever > w->max_low)
        w->max_low = ever;
    w->parallel += n > 1;
}

/* Over many runs of an 8-thread program (more threads than n, so some are
 * created beyond n) no more than d threads ever enter L. */
static void test_ppct_low_set_bound(void **state)
{
    (void)state;
    static pct_sim_program prog;
    memset(&prog, 0, sizeof prog);
    prog.thread[0].at_start = true;
    for (int t = 1; t < 8; t++) {
        pct_sim_add(&prog, 0, PCT_SIM_SPAWN, t, 0);
        for (int i = 0; i < 6; i++) {
            pct_sim_add(&prog, (size_t)t, PCT_SIM_LOCK, t % 3, 0);
            pct_sim_add(&prog, (size_t)t, PCT_SIM_STORE, t % 4, i);
            pct_sim_add(&prog, (size_t)t, PCT_SIM_UNLOCK, t % 3, 0);
        }
    }
    for (int t = 1; t < 8; t++)
        pct_sim_add(&prog, 0, PCT_SIM_JOIN, t, 0);
    uint64_t k = pct_sim_op_count(&prog);
    for (uint32_t d = 1; d <= 5; d++) {
        struct low_watch w = {.d = d};
        for (uint64_t seed = 1; seed <= 300; seed++) {
            pct_config c = config(PCT_KIND_PPCT, 5, k, d, 1, seed);
            c.starvation = 0.01;
            pct_policy *p = make(c);
            pct_sim_run run;
            assert_int_equal(
                pct_sim_execute(&prog, p, PCT_SIM_PICK_RANDOM, seed, 10 * k, watch_low, &w, &run),
                0);
            assert_true(run.completed);
            pct_policy_destroy(p);
        }
        print_message("d=%u: max |L ever| %zu, parallel decisions %zu\n", d, w.max_low, w.parallel);
        assert_int_equal(w.violations, 0);
        assert_true(w.max_low <= d);
        assert_true(w.parallel > 0);
    }
}

#define NDEC 500

struct recorder {
    size_t n;
    pct_tid chosen[NDEC];
    size_t nallowed[NDEC];
    pct_tid allowed[NDEC][PCT_SIM_MAX_THREADS];
};

static void record(void *ctx, const pct_policy *p, const pct_tid *allowed, size_t n, pct_tid chosen)
{
    (void)p;
    struct recorder *r = ctx;
    if (r->n == NDEC)
        return;
    r->chosen[r->n] = chosen;
    r->nallowed[r->n] = n;
    memcpy(r->allowed[r->n], allowed, n * sizeof *allowed);
    r->n++;
}

static void record_run(const pct_sim_program *prog, pct_config c, struct recorder *r)
{
    memset(r, 0, sizeof *r);
    pct_policy *p = make(c);
    pct_sim_run run;
    assert_int_equal(pct_sim_execute(prog, p, PCT_SIM_PICK_RANDOM, 99, NDEC, record, r, &run), 0);
    assert_int_equal(r->n, NDEC);
    pct_policy_destroy(p);
}

/* Same seed and the same events: the same 500 decisions; another seed
 * changes them, except for the kinds that draw nothing. */
static void test_determinism(void **state)
{
    (void)state;
    static pct_sim_program prog;
    memset(&prog, 0, sizeof prog);
    for (size_t t = 0; t < 4; t++) {
        prog.thread[t].at_start = true;
        for (int i = 0; i < 40; i++) {
            pct_sim_add(&prog, t, PCT_SIM_LOCK, 0, 0);
            pct_sim_add(&prog, t, PCT_SIM_LOAD, (int)t, 0);
            pct_sim_add(&prog, t, PCT_SIM_STORE, (int)t, i);
            pct_sim_add(&prog, t, PCT_SIM_UNLOCK, 0, 0);
        }
    }
    static struct recorder a, b;
    for (int kind = PCT_KIND_IDEAL; kind <= PCT_KIND_DB; kind++) {
        pct_config c = config((pct_kind)kind, 4, pct_sim_op_count(&prog), 3, 20, 1234);
        c.starvation = 0.05; /* overrides draw random numbers too */
        c.bound = 2;
        c.schedule = 17;
        record_run(&prog, c, &a);
        record_run(&prog, c, &b);
        assert_memory_equal(&a, &b, sizeof a);
        c.seed = 4321;
        record_run(&prog, c, &b);
        bool drawless = kind == PCT_KIND_IDEAL || kind == PCT_KIND_PB || kind == PCT_KIND_DB;
        assert_true(drawless == (memcmp(a.chosen, b.chosen, sizeof a.chosen) == 0));
    }
}

/* Thread 0 yields forever (spins on a flag nobody sets), threads 1 and 2
 * have 40 steps of work each; every policy lets them finish. */
static void test_yielding_thread_cannot_starve_others(void **state)
{
    (void)state;
    static pct_sim_program prog;
    memset(&prog, 0, sizeof prog);
    for (size_t t = 0; t < 3; t++)
        prog.thread[t].at_start = true;
    pct_sim_add(&prog, 0, PCT_SIM_SPIN_YIELD, 7, 1);
    pct_sim_pad(&prog, 1, 40);
    pct_sim_pad(&prog, 2, 40);
    const uint64_t bound = 3 * 80 + 10;
    for (int kind = PCT_KIND_IDEAL; kind <= PCT_KIND_DB; kind++) {
        for (int adv = PCT_SIM_PICK_FIRST; adv <= PCT_SIM_PICK_RANDOM; adv++) {
            uint64_t worst = 0;
            for (uint64_t seed = 1; seed <= 100; seed++) {
                pct_config c = config((pct_kind)kind, 3, 81, 3, 3, seed);
                c.starvation = 0.0; /* the yield mechanism alone */
                pct_policy *p = make(c);
                pct_sim_run run;
                pct_sim_execute(&prog, p, (pct_sim_adversary)adv, seed, 5000, NULL, NULL, &run);
                for (int t = 1; t <= 2; t++) {
                    assert_true(run.exit_step[t] != 0 && run.exit_step[t] <= bound);
                    if (run.exit_step[t] > worst)
                        worst = run.exit_step[t];
                }
                pct_policy_destroy(p);
            }
            if (adv == PCT_SIM_PICK_FIRST)
                print_message("%-6s: workers done by step %llu (bound %llu)\n",
                              pct_kind_name((pct_kind)kind), (unsigned long long)worst,
                              (unsigned long long)bound);
        }
    }
}

/* A spin loop that never yields starves a lower-priority thread under PCT
 * unless the per-decision override is on. */
static void test_override_breaks_silent_spin(void **state)
{
    (void)state;
    static pct_sim_program prog;
    memset(&prog, 0, sizeof prog);
    prog.thread[0].at_start = prog.thread[1].at_start = true;
    pct_sim_add(&prog, 0, PCT_SIM_SPIN, 3, 1); /* waits for thread 1 */
    pct_sim_pad(&prog, 1, 20);
    pct_sim_add(&prog, 1, PCT_SIM_STORE, 3, 1);
    unsigned starved_without = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        for (int on = 0; on <= 1; on++) {
            pct_config c = config(PCT_KIND_PCT, 2, 22, 1, 1, seed);
            c.starvation = on ? 0.05 : 0.0;
            pct_policy *p = make(c);
            pct_sim_run run;
            pct_sim_execute(&prog, p, PCT_SIM_PICK_FIRST, seed, 20000, NULL, NULL, &run);
            if (on)
                assert_true(run.completed);
            else
                starved_without += !run.completed;
            pct_policy_destroy(p);
        }
    }
    print_message("without override %u/40 runs livelocked\n", starved_without);
    assert_true(starved_without > 0);
}

/* Fig. 3(c) under PCT: when the run deadlocks the policy says so and both
 * threads are blocked; a completed run is not a deadlock. */
static void test_deadlock_query(void **state)
{
    (void)state;
    static pct_sim_program prog;
    pct_sim_shape_deadlock(&prog, 0, 0);
    unsigned deadlocks = 0, completions = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        pct_policy *p = make(config(PCT_KIND_PCT, 2, pct_sim_op_count(&prog), 2, 1, seed));
        pct_sim_run run;
        assert_int_equal(pct_sim_execute(&prog, p, PCT_SIM_PICK_FIRST, seed, 100, NULL, NULL, &run),
                         0);
        assert_true(run.policy_agrees);
        assert_true(pct_policy_deadlocked(p) == run.deadlocked);
        if (run.deadlocked) {
            deadlocks++;
            for (size_t i = 0; i < 2; i++) {
                pct_thread_info in;
                pct_policy_thread_at(p, i, &in);
                assert_int_equal(in.state, PCT_THREAD_BLOCKED);
            }
        } else {
            completions++;
        }
        pct_policy_destroy(p);
    }
    assert_true(deadlocks > 0 && completions > 0);
    /* By hand: all exited is not a deadlock, nor is no thread at all. */
    pct_policy *p = make(config(PCT_KIND_RANDOM, 2, 0, 1, 1, 1));
    assert_false(pct_policy_deadlocked(p));
    pct_thread_created(p, 1, PCT_NO_PARENT);
    pct_thread_blocked(p, 1);
    assert_true(pct_policy_deadlocked(p));
    pct_thread_exited(p, 1);
    assert_false(pct_policy_deadlocked(p));
    pct_policy_destroy(p);
}

static void test_ideal_and_events(void **state)
{
    (void)state;
    pct_policy *p = make(config(PCT_KIND_IDEAL, 3, 0, 1, 1, 1));
    pct_tid out[4];
    assert_int_equal(pct_thread_created(p, 30, PCT_NO_PARENT), 0);
    assert_int_equal(pct_thread_created(p, 30, PCT_NO_PARENT), -1); /* already live */
    pct_thread_time(p, 30, 50);
    assert_int_equal(pct_thread_created(p, 20, 30), 0); /* starts at its parent's time */
    pct_thread_info in;
    pct_policy_thread_info(p, 20, &in);
    assert_int_equal(in.time, 50);
    assert_int_equal(in.parent, 30);
    assert_int_equal(pct_policy_next(p, out, 4), 1);
    assert_true(out[0] == 20); /* tie at 50: smaller id */
    pct_thread_time(p, 20, 51);
    pct_policy_next(p, out, 4);
    assert_true(out[0] == 30);
    pct_thread_blocked(p, 30);
    pct_policy_next(p, out, 4);
    assert_true(out[0] == 20);
    assert_int_equal(pct_step(p, 99), -1); /* unknown thread */
    assert_int_equal(pct_thread_exited(p, 20), 0);
    assert_int_equal(pct_step(p, 20), -1);              /* exited */
    assert_int_equal(pct_thread_created(p, 20, 30), 0); /* id reused */
    assert_int_equal(pct_policy_thread_count(p), 3);
    pct_policy_destroy(p);
}

static void test_random_is_uniform(void **state)
{
    (void)state;
    pct_policy *p = make(config(PCT_KIND_RANDOM, 3, 0, 1, 1, 77));
    for (pct_tid t = 0; t < 4; t++)
        pct_thread_created(p, t, PCT_NO_PARENT);
    pct_thread_blocked(p, 2);
    unsigned count[4] = {0};
    const unsigned N = 30000;
    for (unsigned i = 0; i < N; i++) {
        pct_tid out[4];
        assert_int_equal(pct_policy_next(p, out, 4), 1);
        count[out[0]]++;
    }
    assert_int_equal(count[2], 0);
    for (int t = 0; t < 4; t++) {
        if (t != 2)
            assert_true(fabs(count[t] / (double)N - 1.0 / 3) < 0.015);
    }
    pct_policy_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_parameters),
        cmocka_unit_test(test_names_and_guarantees),
        cmocka_unit_test(test_pct_priorities_and_change_points),
        cmocka_unit_test(test_rpro_change_points),
        cmocka_unit_test(test_threads_beyond_n),
        cmocka_unit_test(test_ppct_sets),
        cmocka_unit_test(test_ppct_low_set_bound),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_yielding_thread_cannot_starve_others),
        cmocka_unit_test(test_override_breaks_silent_spin),
        cmocka_unit_test(test_deadlock_query),
        cmocka_unit_test(test_ideal_and_events),
        cmocka_unit_test(test_random_is_uniform),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
