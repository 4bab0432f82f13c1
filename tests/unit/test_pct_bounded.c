/* Preemption and delay bounding: counting and numbering schedules, the
 * base scheduler, and exhaustiveness (config messages: test_pct.c): run every schedule of every
 * level on small programs and compare what the runs did with an independent enumeration of all
 * interleavings and their preemption and delay costs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pct_sim.h"

static uint64_t choose(uint64_t n, uint64_t r)
{
    uint64_t c = 1;
    for (uint64_t i = 1; i <= r; i++)
        c = c * (n - r + i) / i; /* exact: small arguments only */
    return r > n ? 0 : c;
}

static void test_counts(void **state)
{
    (void)state;
    assert_int_equal(pct_bounded_count(PCT_KIND_DB, 5, 2, 0), 1);
    assert_int_equal(pct_bounded_count(PCT_KIND_DB, 5, 2, 2), 15); /* C(6, 2) */
    assert_int_equal(pct_bounded_count(PCT_KIND_DB, 0, 2, 1), 0);
    assert_int_equal(pct_bounded_count(PCT_KIND_PB, 5, 3, 2), 40); /* C(5, 2) 2^2 */
    assert_int_equal(pct_bounded_count(PCT_KIND_PB, 5, 1, 1), 0);  /* nobody to preempt to */
    assert_int_equal(pct_bounded_count(PCT_KIND_PB, 3, 2, 4), 0);  /* 4 distinct of 3 */
    assert_int_equal(pct_bounded_count(PCT_KIND_PCT, 5, 2, 1), 0);
    /* C(60, 30) needs the exact step; C(2^40 + 3, 4) saturates. */
    assert_true(pct_bounded_count(PCT_KIND_DB, 31, 2, 30) == UINT64_C(118264581564861424));
    assert_true(pct_bounded_count(PCT_KIND_DB, UINT64_C(1) << 40, 2, 4) == UINT64_MAX);
    assert_true(pct_bounded_total(PCT_KIND_DB, 5, 2, 2) == 1 + 5 + 15);
    assert_true(pct_bounded_total(PCT_KIND_PB, 5, 3, 9) == 1 + 10 + 40 + 80 + 80 + 32);
    assert_true(pct_bounded_total(PCT_KIND_DB, UINT64_C(1) << 40, 2, 9) == UINT64_MAX);
}

/* Positions as a tuple, compared from the last element (colex). */
static int colex_cmp(const uint64_t *a, const uint64_t *b, uint32_t c)
{
    for (uint32_t i = c; i-- > 0;) {
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    }
    return 0;
}

/* Every index of a level names a valid, distinct schedule, in colex order of
 * the positions (pb: then the alternatives), and the same one whatever k. */
static void check_level(pct_kind kind, uint64_t k, uint32_t n, uint32_t c)
{
    uint64_t count = pct_bounded_count(kind, k, n, c);
    uint64_t prev[8], pos[8], pos2[8];
    uint32_t alt[8], prev_alt[8], alt2[8];
    uint64_t want = kind == PCT_KIND_DB ? choose(k + c - 1, c) : choose(k, c);
    for (uint32_t i = 0; i < c && kind == PCT_KIND_PB; i++)
        want *= n - 1;
    assert_true(count == (c == 0 ? 1 : want));
    for (uint64_t x = 0; x < count; x++) {
        assert_int_equal(pct_bounded_schedule(kind, k, n, c, x, pos, alt), 0);
        for (uint32_t i = 0; i < c; i++) {
            assert_true(pos[i] >= 1 && pos[i] <= k);
            assert_true(alt[i] >= 1 && alt[i] <= (kind == PCT_KIND_DB ? 1 : n - 1));
            if (i > 0)
                assert_true(kind == PCT_KIND_DB ? pos[i] >= pos[i - 1] : pos[i] > pos[i - 1]);
        }
        if (x > 0) {
            int o = colex_cmp(prev, pos, c);
            assert_true(o < 0 || (o == 0 && kind == PCT_KIND_PB &&
                                  memcmp(prev_alt, alt, c * sizeof *alt) < 0));
        }
        assert_int_equal(pct_bounded_schedule(kind, k + 7, n, c, x, pos2, alt2), 0);
        assert_memory_equal(pos, pos2, c * sizeof *pos);
        assert_memory_equal(alt, alt2, c * sizeof *alt);
        memcpy(prev, pos, sizeof pos);
        memcpy(prev_alt, alt, sizeof alt);
    }
    assert_int_equal(pct_bounded_schedule(kind, k, n, c, count, pos, alt), -1);
}

static void test_numbering(void **state)
{
    (void)state;
    for (uint32_t c = 0; c <= 4; c++) {
        check_level(PCT_KIND_DB, 6, 2, c);
        check_level(PCT_KIND_PB, 6, 3, c);
        check_level(PCT_KIND_PB, 5, 2, c);
    }
    /* Deep in a saturated level the numbering still works. */
    uint64_t pos[3];
    uint64_t k = UINT64_C(1) << 40;
    assert_int_equal(pct_bounded_schedule(PCT_KIND_DB, k, 2, 3, UINT64_C(1) << 62, pos, NULL), 0);
    assert_true(pos[0] <= pos[1] && pos[1] <= pos[2] && pos[2] <= k);
}

/* Iterative deepening: global numbers run through level 0, 1, 2, ... */
static void test_locate(void **state)
{
    (void)state;
    const pct_kind kinds[] = {PCT_KIND_PB, PCT_KIND_DB};
    for (size_t i = 0; i < 2; i++) {
        uint64_t total = pct_bounded_total(kinds[i], 6, 3, 3), g = 0;
        for (uint32_t c = 0; c <= 3; c++) {
            for (uint64_t x = 0; x < pct_bounded_count(kinds[i], 6, 3, c); x++, g++) {
                uint32_t bc;
                uint64_t bx;
                assert_int_equal(pct_bounded_locate(kinds[i], 6, 3, 3, g, &bc, &bx), 0);
                assert_int_equal(bc, c);
                assert_true(bx == x);
            }
        }
        assert_true(g == total);
        uint32_t bc;
        uint64_t bx;
        assert_int_equal(pct_bounded_locate(kinds[i], 6, 3, 3, total, &bc, &bx), -1);
    }
    uint32_t bc;
    uint64_t bx;
    assert_int_equal(pct_bounded_locate(PCT_KIND_POS, 6, 3, 3, 0, &bc, &bx), -1);
}

static pct_config bounded(pct_kind kind, uint32_t n, uint64_t k, uint32_t c, uint64_t x)
{
    pct_config cfg;
    pct_config_init(&cfg, kind);
    cfg.n = n;
    cfg.k = k;
    cfg.bound = c;
    cfg.schedule = x;
    return cfg;
}

#define MAXLEN 64

struct trace {
    size_t n;
    char seq[MAXLEN + 1]; /* thread indices as digits */
};

static void record(void *ctx, const pct_policy *p, const pct_tid *allowed, size_t n, pct_tid chosen)
{
    (void)p;
    (void)allowed;
    (void)n;
    struct trace *t = ctx;
    if (t->n < MAXLEN)
        t->seq[t->n++] = (char)('0' + (chosen - PCT_SIM_TID(0)));
}

static pct_schedule_status run_schedule(const pct_sim_program *prog, pct_config cfg,
                                        struct trace *t)
{
    memset(t, 0, sizeof *t);
    char err[256];
    pct_policy *p = pct_policy_create(&cfg, err, sizeof err);
    if (!p)
        print_message("%s\n", err);
    assert_non_null(p);
    pct_sim_options o = {.max_steps = MAXLEN, .hook = record, .ctx = t};
    pct_sim_run run;
    assert_int_equal(pct_sim_run_with(prog, p, &o, &run), 0);
    assert_true(run.completed);
    pct_schedule_status st = pct_policy_schedule_status(p);
    pct_policy_destroy(p);
    return st;
}

/* A program whose thread 0 starts threads 1 and 2, executes `op` on
 * variable 0, and joins both; the caller gives threads 1 and 2 their work. */
static void start_two(pct_sim_program *prog, pct_sim_opcode op)
{
    memset(prog, 0, sizeof *prog);
    prog->thread[0].at_start = true;
    pct_sim_add(prog, 0, PCT_SIM_SPAWN, 1, 0);
    pct_sim_add(prog, 0, PCT_SIM_SPAWN, 2, 0);
    pct_sim_add(prog, 0, op, 0, 1);
    pct_sim_add(prog, 0, PCT_SIM_JOIN, 1, 0);
    pct_sim_add(prog, 0, PCT_SIM_JOIN, 2, 0);
}

/* The base runs thread 0 until its join blocks, then the next threads in
 * creation order to the end. */
static void test_base_schedule(void **state)
{
    (void)state;
    static pct_sim_program prog;
    start_two(&prog, PCT_SIM_WORK);
    pct_sim_pad(&prog, 1, 2);
    pct_sim_pad(&prog, 2, 2);
    const pct_kind kinds[] = {PCT_KIND_PB, PCT_KIND_DB};
    for (size_t i = 0; i < 2; i++) {
        struct trace t;
        assert_int_equal(run_schedule(&prog, bounded(kinds[i], 3, 0, 0, 0), &t), PCT_SCHEDULE_DONE);
        assert_string_equal(t.seq, "000112200");
    }
    /* A yielding spinner gives way: the base is live on it. */
    memset(&prog, 0, sizeof prog);
    prog.thread[0].at_start = true;
    pct_sim_add(&prog, 0, PCT_SIM_SPAWN, 1, 0);
    pct_sim_add(&prog, 0, PCT_SIM_SPIN_YIELD, 0, 1);
    pct_sim_pad(&prog, 1, 3);
    pct_sim_add(&prog, 1, PCT_SIM_STORE, 0, 1);
    struct trace t;
    assert_int_equal(run_schedule(&prog, bounded(PCT_KIND_DB, 2, 0, 0, 0), &t), PCT_SCHEDULE_DONE);
    assert_string_equal(t.seq, "0011110");
}

/* The reference: a separate interpreter of programs made of WORK, STORE,
 * LOAD, SPAWN and JOIN, which enumerates every interleaving and prices it
 * by replaying the base scheduler's definition along it. */
struct ref {
    const pct_sim_program *prog;
    size_t pc[PCT_SIM_MAX_THREADS];
    bool started[PCT_SIM_MAX_THREADS], exited[PCT_SIM_MAX_THREADS];
};

static bool ref_enabled(const struct ref *r, size_t i)
{
    if (!r->started[i] || r->exited[i])
        return false;
    if (r->pc[i] == r->prog->thread[i].nops)
        return true;
    const pct_sim_op *op = &r->prog->thread[i].ops[r->pc[i]];
    return op->code != PCT_SIM_JOIN || r->exited[op->a];
}

/* Executes thread i's next operation; returns whether the step was a
 * choice (another thread enabled after it, before i's exit). */
static bool ref_step(struct ref *r, size_t i)
{
    const pct_sim_op *op = &r->prog->thread[i].ops[r->pc[i]++];
    if (op->code == PCT_SIM_SPAWN)
        r->started[op->a] = true;
    bool choice = false;
    for (size_t j = 0; j < r->prog->nthreads; j++)
        choice |= j != i && ref_enabled(r, j);
    if (r->pc[i] == r->prog->thread[i].nops)
        r->exited[i] = true;
    return choice;
}

static void ref_init(struct ref *r, const pct_sim_program *prog)
{
    memset(r, 0, sizeof *r);
    r->prog = prog;
    for (size_t i = 0; i < prog->nthreads; i++)
        r->started[i] = prog->thread[i].at_start;
}

/* The delays and preemptions that produce seq from the non-preemptive
 * round-robin base; -1 if no deviation placed after a step can (the first
 * decision, or a switch after a step that was no choice; for pb, a switch
 * where the stepping thread could not go on). Also the choice count. */
static void ref_cost(const pct_sim_program *prog, const char *seq, int *db, int *pb,
                     uint64_t *choices)
{
    struct ref r;
    ref_init(&r, prog);
    size_t n = prog->nthreads, current = SIZE_MAX, stepper = SIZE_MAX;
    bool choice = false;
    *db = *pb = 0;
    *choices = 0;
    for (size_t d = 0; seq[d]; d++) {
        size_t first = current == SIZE_MAX ? 0 : ref_enabled(&r, current) ? current : current + 1;
        size_t list[PCT_SIM_MAX_THREADS], m = 0, j = SIZE_MAX;
        for (size_t q = 0; q < n; q++) {
            size_t i = (first + q) % n;
            if (ref_enabled(&r, i))
                list[m++] = i;
        }
        for (size_t q = 0; q < m; q++) {
            if (list[q] == (size_t)(seq[d] - '0'))
                j = q;
        }
        assert_true(j != SIZE_MAX);
        if (j > 0 && !choice)
            *db = *pb = -1;
        if (*db >= 0)
            *db += (int)j;
        if (*pb >= 0 && j > 0)
            *pb = list[0] == stepper ? *pb + 1 : -1;
        current = stepper = list[j];
        choice = ref_step(&r, current);
        *choices += choice;
    }
}

struct all {
    size_t n;
    struct trace t[4096];
};

static void ref_enumerate(struct ref *r, char *seq, size_t len, struct all *out)
{
    bool any = false;
    for (size_t i = 0; i < r->prog->nthreads; i++) {
        if (!ref_enabled(r, i))
            continue;
        any = true;
        struct ref saved = *r;
        ref_step(r, i);
        seq[len] = (char)('0' + i);
        ref_enumerate(r, seq, len + 1, out);
        *r = saved;
    }
    if (!any) {
        assert_true(out->n < 4096);
        seq[len] = 0;
        out->t[out->n].n = len;
        memcpy(out->t[out->n].seq, seq, len + 1);
        out->n++;
    }
}

static int cost_of(const pct_sim_program *prog, pct_kind kind, const char *seq)
{
    int db, pb;
    uint64_t choices;
    ref_cost(prog, seq, &db, &pb, &choices);
    return kind == PCT_KIND_DB ? db : pb;
}

/* Runs every schedule of levels 0..max under kind with k = the most
 * choices of any interleaving: at each level the runs the policy calls
 * DONE are exactly the interleavings of that cost, each once; every other
 * run repeats an interleaving of a lower level. */
static void check_exhaustive(const pct_sim_program *prog, pct_kind kind, const struct all *all)
{
    uint64_t k = 0;
    int max = 0;
    for (size_t i = 0; i < all->n; i++) {
        int db, pb;
        uint64_t choices;
        ref_cost(prog, all->t[i].seq, &db, &pb, &choices);
        k = choices > k ? choices : k;
        int c = kind == PCT_KIND_DB ? db : pb;
        max = c > max ? c : max;
    }
    static struct trace seen[4096];
    size_t nseen = 0, reached = 0, dup = 0, pending = 0;
    for (uint32_t c = 0; c <= (uint32_t)max; c++) {
        size_t done_here = 0, want_here = 0;
        uint64_t count = pct_bounded_count(kind, k, (uint32_t)prog->nthreads, c);
        for (uint64_t x = 0; x < count; x++) {
            struct trace t;
            pct_schedule_status st =
                run_schedule(prog, bounded(kind, (uint32_t)prog->nthreads, k, c, x), &t);
            int cost = cost_of(prog, kind, t.seq);
            if (st != PCT_SCHEDULE_DONE) {
                assert_true(cost >= 0 && cost < (int)c);
                dup += st == PCT_SCHEDULE_DUPLICATE;
                pending += st == PCT_SCHEDULE_PENDING;
                continue;
            }
            assert_int_equal(cost, c);
            for (size_t i = 0; i < nseen; i++)
                assert_string_not_equal(seen[i].seq, t.seq);
            seen[nseen++] = t;
            done_here++;
        }
        for (size_t i = 0; i < all->n; i++)
            want_here += cost_of(prog, kind, all->t[i].seq) == (int)c;
        assert_int_equal(done_here, want_here);
        reached += done_here;
    }
    size_t reachable = 0;
    for (size_t i = 0; i < all->n; i++)
        reachable += cost_of(prog, kind, all->t[i].seq) >= 0;
    print_message("%s: %zu interleavings, %zu reachable, k = %llu, levels 0..%d: %zu distinct "
                  "runs, %zu duplicates, %zu with positions past the run\n",
                  pct_kind_name(kind), all->n, reachable, (unsigned long long)k, max, reached, dup,
                  pending);
    assert_int_equal(reached, reachable);
    assert_true(dup > 0 && pending > 0);
}

/* Three threads: T0 starts T1 and T2, writes x, joins both; T1 writes x and
 * works; T2 reads x and works. Delay bounding reaches every interleaving;
 * preemption bounding every one whose switches at steps that block or end
 * a thread follow the base. */
static void test_exhaustive(void **state)
{
    (void)state;
    static pct_sim_program prog;
    start_two(&prog, PCT_SIM_STORE);
    pct_sim_add(&prog, 1, PCT_SIM_STORE, 0, 2);
    pct_sim_pad(&prog, 1, 1);
    pct_sim_add(&prog, 2, PCT_SIM_LOAD, 0, 0);
    pct_sim_pad(&prog, 2, 1);
    static struct all all;
    struct ref r;
    char seq[MAXLEN + 1];
    ref_init(&r, &prog);
    all.n = 0;
    ref_enumerate(&r, seq, 0, &all);
    check_exhaustive(&prog, PCT_KIND_DB, &all);
    check_exhaustive(&prog, PCT_KIND_PB, &all);
    size_t unreachable = 0;
    for (size_t i = 0; i < all.n; i++)
        unreachable += cost_of(&prog, PCT_KIND_DB, all.t[i].seq) < 0;
    assert_int_equal(unreachable, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),     cmocka_unit_test(test_numbering),
        cmocka_unit_test(test_locate),     cmocka_unit_test(test_base_schedule),
        cmocka_unit_test(test_exhaustive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
