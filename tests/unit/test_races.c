/* races/: the vector-clock engine on hand-built event sequences
 * (thread creation and join, futex wake -> wait, release/acquire atomics,
 * read-shared state, same-epoch accesses, locks on one side only, atomics
 * against atomics, byte ranges), the instruction classifier, and output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include <weft/races.h>

/* Instruction words (assembled with aarch64-linux-gnu-as -march=armv8.4-a). */
enum {
    I_LDAR = 0xc8dffc20,
    I_STLR = 0xc89ffc20,
    I_LDXR = 0xc85f7c20,
    I_LDAXR = 0xc85ffc20,
    I_STXR = 0xc8027c20,
    I_STLXR = 0xc802fc20,
    I_CAS = 0x88a07c41,
    I_CASA = 0x88e07c41,
    I_CASL = 0x88a0fc41,
    I_CASAL = 0xc8e0fc41,
    I_LDADD = 0xf8200041,
    I_LDADDA = 0xf8a00041,
    I_LDADDL = 0xf8600041,
    I_LDADDAL = 0xb8e00041,
    I_SWPAL = 0xb8e08041,
    I_SWPL = 0xb8608041,
    I_LDAPR = 0xf8bfc020,
    I_LDR = 0xf9400020,
    I_STR = 0xf9000020,
    I_LDP = 0xa9400440,
    I_CASP = 0x48207c82,
    I_CASPAL = 0x4860fc82,
    I_LDAXP = 0xc87f8440,
    I_STLURB = 0x19000020,
    I_LDAPUR = 0xd9400020,
    I_ADD = 0x8b020020,
    I_STADD = 0xf820005f,
};

#define K WEFT_INSN_KNOWN
#define AT WEFT_INSN_ATOMIC
#define AQ WEFT_INSN_ACQUIRE
#define RL WEFT_INSN_RELEASE
#define RMW WEFT_INSN_RMW

static void test_insn_class(void **state)
{
    (void)state;
    static const struct {
        uint32_t w;
        unsigned want;
    } cases[] = {
        {I_LDAR, K | AT | AQ},
        {I_STLR, K | AT | RL},
        {I_LDXR, K | AT},
        {I_LDAXR, K | AT | AQ},
        {I_STXR, K | AT},
        {I_STLXR, K | AT | RL},
        {I_CAS, K | AT | RMW},
        {I_CASA, K | AT | RMW | AQ},
        {I_CASL, K | AT | RMW | RL},
        {I_CASAL, K | AT | RMW | AQ | RL},
        {I_LDADD, K | AT | RMW},
        {I_LDADDA, K | AT | RMW | AQ},
        {I_LDADDL, K | AT | RMW | RL},
        {I_LDADDAL, K | AT | RMW | AQ | RL},
        {I_SWPAL, K | AT | RMW | AQ | RL},
        {I_SWPL, K | AT | RMW | RL},
        {I_LDAPR, K | AT | AQ},
        {I_LDR, K},
        {I_STR, K},
        {I_LDP, K},
        {I_CASP, K | AT | RMW},
        {I_CASPAL, K | AT | RMW | AQ | RL},
        {I_LDAXP, K | AT | AQ},
        {I_STLURB, K | AT | RL},
        {I_LDAPUR, K | AT | AQ},
        {I_ADD, K},
        {I_STADD, K | AT | RMW},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (weft_races_insn_class(cases[i].w) != cases[i].want)
            fail_msg("word %#x: class %#x, expected %#x", cases[i].w,
                     weft_races_insn_class(cases[i].w), cases[i].want);
    }
}

/* ---- building event sequences ------------------------------------------------ */

/* pcs of the instructions the classifier knows; every other pc is a plain
 * access that is never looked up. */
#define PC_INSN 0x10000u
#define PC(word_index) (PC_INSN + 4u * (word_index))
static const uint32_t insn_words[] = {I_LDAR, I_STLR, I_LDXR,  I_STXR,
                                      I_CASA, I_SWPL, I_LDADD, I_LDADDAL};
enum { P_LDAR, P_STLR, P_LDXR, P_STXR, P_CASA, P_SWPL, P_LDADD, P_LDADDAL };

static unsigned classify(void *ctx, uint64_t pc)
{
    (void)ctx;
    if (pc < PC_INSN || (pc - PC_INSN) / 4 >= sizeof insn_words / sizeof *insn_words)
        return 0;
    return weft_races_insn_class(insn_words[(pc - PC_INSN) / 4]);
}

typedef struct seqb {
    weft_event ev[256];
    size_t n;
    uint64_t time;
    uint64_t seq[8];
} seqb;

/* Events get increasing times, so list order is canonical order. */
static void add(seqb *b, uint32_t t, uint8_t kind, uint64_t addr, uint8_t size, uint64_t pc,
                uint16_t flags)
{
    assert_true(b->n < 256);
    b->time += 10;
    b->ev[b->n++] = (weft_event){.time = b->time,
                                 .seq = b->seq[t]++,
                                 .addr = addr,
                                 .pc = pc,
                                 .thread = t,
                                 .kind = kind,
                                 .size = size,
                                 .flags = flags};
}
static void rd(seqb *b, uint32_t t, uint64_t addr, uint8_t size, uint64_t pc)
{
    add(b, t, WEFT_EV_READ, addr, size, pc, 0);
}
static void wr(seqb *b, uint32_t t, uint64_t addr, uint8_t size, uint64_t pc)
{
    add(b, t, WEFT_EV_WRITE, addr, size, pc, 0);
}
/* An atomic access the way the tracer records it: exclusive and ordered
 * loads and stores (and CAS) as reads or writes flagged exclusive, LSE
 * atomics as rmw flagged atomic. */
static void atom(seqb *b, uint32_t t, uint64_t addr, int which)
{
    switch (which) {
    case P_LDAR:
    case P_LDXR:
        add(b, t, WEFT_EV_READ, addr, 8, PC(which), WEFT_EVF_EXCLUSIVE);
        break;
    case P_STLR:
    case P_STXR:
    case P_CASA:
        add(b, t, WEFT_EV_WRITE, addr, 4, PC(which), WEFT_EVF_EXCLUSIVE);
        break;
    default:
        add(b, t, WEFT_EV_RMW, addr, 8, PC(which), WEFT_EVF_ATOMIC);
    }
}
static void spawn(seqb *b, uint32_t parent, uint32_t child)
{
    add(b, parent, WEFT_EV_SYSCALL, 220, 0, 0, 0);
    add(b, child, WEFT_EV_THREAD_START, parent, 0, 0, 0);
}
static void start_main(seqb *b)
{
    add(b, 0, WEFT_EV_THREAD_START, UINT32_MAX, 0, 0, 0);
}

static weft_races *run_cfg(const seqb *b, const weft_races_config *cfg)
{
    char err[256];
    weft_races *d = weft_races_create(cfg, err, sizeof err);
    assert_non_null(d);
    for (size_t i = 0; i < b->n; i++)
        assert_int_equal(weft_races_prescan(d, &b->ev[i]), 0);
    for (size_t i = 0; i < b->n; i++)
        assert_int_equal(weft_races_feed(d, &b->ev[i]), 0);
    return d;
}

static weft_races *run(const seqb *b)
{
    weft_races_config cfg = weft_races_config_default();
    cfg.classify = classify;
    return run_cfg(b, &cfg);
}

static size_t count_races(const seqb *b)
{
    weft_races *d = run(b);
    size_t n = weft_races_count(d);
    weft_races_free(d);
    return n;
}

/* Does some race pair pcs a and b? */
static int has_pair(weft_races *d, uint64_t a, uint64_t b)
{
    for (size_t i = 0; i < weft_races_count(d); i++) {
        const weft_race *r = weft_races_get(d, i);
        if ((r->first.pc == a && r->second.pc == b) || (r->first.pc == b && r->second.pc == a))
            return 1;
    }
    return 0;
}

#define X 0x500000u /* a shared variable */
#define Y 0x500100u
#define PD 0x7f0000u /* where the creator sets up a thread's descriptor */

/* ---- happens-before edges ------------------------------------------------------ */

static void test_fork_orders_creator_before_child(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    wr(&b, 0, X, 8, 0x400);
    spawn(&b, 0, 1);
    rd(&b, 1, X, 8, 0x500);
    wr(&b, 1, X, 8, 0x504);
    assert_int_equal(count_races(&b), 0);
    /* The creator after the clone is not ordered with the child. */
    wr(&b, 0, X, 8, 0x404);
    weft_races *d = run(&b);
    assert_int_equal(weft_races_count(d), 2);
    assert_true(has_pair(d, 0x504, 0x404)); /* write-write */
    assert_true(has_pair(d, 0x500, 0x404)); /* read-write */
    const weft_race *r = weft_races_get(d, 0);
    assert_int_equal(r->first.thread, 1);
    assert_int_equal(r->second.thread, 0);
    assert_int_equal(r->addr, X);
    weft_races_free(d);
}

/* glibc's join: an acquire load of the child's tid word, close to where
 * the creator last wrote before the clone. */
static void test_join_by_acquire_near_descriptor(void **state)
{
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        seqb b = {0};
        start_main(&b);
        wr(&b, 0, PD + 0x400, 1, 0x400); /* pthread_create fills in the descriptor */
        spawn(&b, 0, 1);
        wr(&b, 1, X, 8, 0x500);
        add(&b, 1, WEFT_EV_THREAD_EXIT, 0, 0, 0, 0);
        if (variant == 1)
            atom(&b, 0, PD + 0xd0, P_LDAR); /* the tid word */
        if (variant == 2)
            atom(&b, 0, PD + (1u << 20), P_LDAR); /* another descriptor, far away */
        rd(&b, 0, X, 8, 0x404);
        assert_int_equal(count_races(&b), variant == 1 ? 0 : 1);
    }
}

/* A join that waited: the wait on the tid word has no traced wake; the
 * exit that cleared it resumes the joiner. */
static void test_join_by_futex_wait_resumed_at_exit(void **state)
{
    (void)state;
    for (int exits = 0; exits < 2; exits++) {
        seqb b = {0};
        start_main(&b);
        spawn(&b, 0, 1);
        add(&b, 0, WEFT_EV_FUTEX_WAIT, 0x123450, 0, 0x410, 0);
        wr(&b, 1, X, 8, 0x500);
        if (exits)
            add(&b, 1, WEFT_EV_THREAD_EXIT, 0, 0, 0, 0);
        rd(&b, 0, X, 8, 0x404); /* main's first event after the wait */
        assert_int_equal(count_races(&b), exits ? 0 : 1);
    }
}

static void test_futex_wake_orders_the_waiting_thread(void **state)
{
    (void)state;
    /* variant 0: wake of the word T2 waits on; 1: of another word; 2: the
     * wake comes before T2 starts waiting. */
    for (int variant = 0; variant < 3; variant++) {
        seqb b = {0};
        start_main(&b);
        spawn(&b, 0, 1);
        spawn(&b, 0, 2);
        if (variant != 2)
            add(&b, 2, WEFT_EV_FUTEX_WAIT, 0xf00, 0, 0x600, 0);
        wr(&b, 1, X, 8, 0x500);
        add(&b, 1, WEFT_EV_FUTEX_WAKE, variant == 1 ? 0xf08 : 0xf00, 0, 0x504, 0);
        if (variant == 2)
            add(&b, 2, WEFT_EV_FUTEX_WAIT, 0xf00, 0, 0x600, 0);
        rd(&b, 2, X, 8, 0x604);
        assert_int_equal(count_races(&b), variant == 0 ? 0 : 1);
    }
}

/* Message passing through a flag: store-release then load-acquire orders
 * the payload; relaxed exclusives do not. */
static void test_release_acquire(void **state)
{
    (void)state;
    static const struct {
        int store, load;
        size_t races;
    } cases[] = {{P_STLR, P_LDAR, 0},
                 {P_STXR, P_LDAR, 1},
                 {P_STLR, P_LDXR, 1},
                 {P_LDADDAL, P_LDADDAL, 0},
                 {P_LDADD, P_LDAR, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        seqb b = {0};
        start_main(&b);
        spawn(&b, 0, 1);
        spawn(&b, 0, 2);
        wr(&b, 1, X, 8, 0x500);
        atom(&b, 1, Y, cases[i].store);
        atom(&b, 2, Y, cases[i].load);
        rd(&b, 2, X, 8, 0x600);
        if (count_races(&b) != cases[i].races)
            fail_msg("case %zu: %zu races, expected %zu", i, count_races(&b), cases[i].races);
        /* Without the program's code every atomic is acquire and release. */
        weft_races_config cfg = weft_races_config_default();
        weft_races *d = run_cfg(&b, &cfg);
        assert_int_equal(weft_races_count(d), 0);
        weft_races_free(d);
    }
}

/* A mutex (CAS-acquire to lock, swap-release to unlock, as glibc) orders
 * the accesses that take it, and only those. */
static void test_lock_taken_on_one_side_only(void **state)
{
    (void)state;
    for (int both = 0; both < 2; both++) {
        seqb b = {0};
        start_main(&b);
        spawn(&b, 0, 1);
        spawn(&b, 0, 2);
        atom(&b, 1, Y, P_CASA);
        rd(&b, 1, X, 8, 0x500);
        wr(&b, 1, X, 8, 0x504);
        atom(&b, 1, Y, P_SWPL);
        if (both)
            atom(&b, 2, Y, P_CASA);
        rd(&b, 2, X, 8, 0x600);
        wr(&b, 2, X, 8, 0x604);
        if (both)
            atom(&b, 2, Y, P_SWPL);
        weft_races *d = run(&b);
        if (both) {
            assert_int_equal(weft_races_count(d), 0);
        } else {
            assert_int_equal(weft_races_count(d), 3);
            assert_true(has_pair(d, 0x504, 0x600)); /* write, then the other's read */
            assert_true(has_pair(d, 0x500, 0x604));
            assert_true(has_pair(d, 0x504, 0x604));
        }
        weft_races_free(d);
    }
}

/* ---- FastTrack's states ---------------------------------------------------------- */

static void test_read_shared_then_write(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    wr(&b, 0, X, 8, 0x400);
    spawn(&b, 0, 1);
    spawn(&b, 0, 2);
    rd(&b, 1, X, 8, 0x500);
    rd(&b, 2, X, 8, 0x600); /* concurrent reads: read-shared, no race */
    assert_int_equal(count_races(&b), 0);
    wr(&b, 1, X, 8, 0x504); /* races with T2's read only */
    weft_races *d = run(&b);
    assert_int_equal(weft_races_count(d), 1);
    const weft_race *r = weft_races_get(d, 0);
    assert_int_equal(r->first.thread, 2);
    assert_int_equal(r->first.pc, 0x600);
    assert_int_equal(r->first.kind, WEFT_EV_READ);
    assert_int_equal(r->second.thread, 1);
    assert_int_equal(r->second.pc, 0x504);
    assert_int_equal(r->count, 1);
    weft_races_free(d);
    /* The write took the location back to an epoch: T2 reading again races
     * with the write, and T1's read is forgotten. */
    rd(&b, 2, X, 8, 0x608);
    d = run(&b);
    assert_int_equal(weft_races_count(d), 2);
    assert_true(has_pair(d, 0x504, 0x608));
    weft_races_free(d);
}

static void test_same_epoch_keeps_the_latest_access(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    spawn(&b, 0, 2);
    wr(&b, 1, X, 8, 0x500);
    wr(&b, 1, X, 8, 0x504); /* same epoch: not checked again, remembered */
    rd(&b, 2, X, 8, 0x600);
    rd(&b, 2, X, 8, 0x600); /* same epoch: no second instance */
    weft_races *d = run(&b);
    assert_int_equal(weft_races_count(d), 1);
    const weft_race *r = weft_races_get(d, 0);
    assert_int_equal(r->first.pc, 0x504);
    assert_int_equal(r->first.seq, 2);
    assert_int_equal(r->count, 1);
    weft_races_free(d);
    /* A release starts a new epoch: T2's next read is checked again. */
    atom(&b, 2, Y, P_SWPL);
    rd(&b, 2, X, 8, 0x600);
    d = run(&b);
    assert_int_equal(weft_races_count(d), 1);
    assert_int_equal(weft_races_get(d, 0)->count, 2);
    weft_races_free(d);
}

static void test_atomics_never_race_with_atomics(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    spawn(&b, 0, 2);
    atom(&b, 1, X, P_LDADD);
    atom(&b, 2, X, P_LDADD);
    atom(&b, 2, X, P_LDXR);
    assert_int_equal(count_races(&b), 0);
    wr(&b, 2, X, 8, 0x604); /* plain store to an atomic location */
    /* By default it is a relaxed atomic store (same instruction as plain). */
    assert_int_equal(count_races(&b), 0);
    weft_races_config cfg = weft_races_config_default();
    cfg.classify = classify;
    cfg.atomic_locations = 0;
    weft_races *d = run_cfg(&b, &cfg);
    assert_int_equal(weft_races_count(d), 0); /* T2's own atomics, same epoch */
    weft_races_free(d);
    wr(&b, 1, X, 8, 0x504); /* T1: unordered with T2's read and plain write */
    d = run_cfg(&b, &cfg);
    assert_int_equal(weft_races_count(d), 2);
    const weft_race *r = weft_races_get(d, 0); /* the write check looks at reads first */
    assert_int_equal(r->first.pc, PC(P_LDXR));
    assert_int_equal(r->first.atomic, 1);
    assert_int_equal(r->first.kind, WEFT_EV_READ);
    assert_int_equal(r->second.atomic, 0);
    /* T2's plain write replaced its atomic one of the same epoch as the
     * location's last write: it can race where the atomic one could not. */
    r = weft_races_get(d, 1);
    assert_int_equal(r->first.pc, 0x604);
    assert_int_equal(r->first.atomic, 0);
    weft_races_free(d);
    assert_int_equal(count_races(&b), 0); /* relaxed atomics by default */
}

static void test_byte_ranges(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    spawn(&b, 0, 2);
    wr(&b, 1, X, 4, 0x500);
    wr(&b, 2, X + 4, 4, 0x600); /* adjacent halves of one word: no race */
    rd(&b, 2, X + 4, 1, 0x604);
    assert_int_equal(count_races(&b), 0);
    wr(&b, 2, X + 2, 4, 0x608); /* overlaps T1's bytes 2..3 */
    weft_races *d = run(&b);
    assert_int_equal(weft_races_count(d), 1);
    assert_int_equal(weft_races_get(d, 0)->addr, X + 2);
    weft_races_free(d);
    /* Across a granule boundary, and one instance per access however many
     * granules it spans. */
    wr(&b, 1, Y, 16, 0x508);
    rd(&b, 2, Y + 4, 8, 0x60c);
    rd(&b, 2, Y, 16, 0x610);
    d = run(&b);
    assert_int_equal(weft_races_count(d), 3);
    assert_true(has_pair(d, 0x508, 0x60c));
    assert_true(has_pair(d, 0x508, 0x610));
    for (size_t i = 1; i < 3; i++) {
        assert_int_equal(weft_races_get(d, i)->count, 1);
        assert_int_equal(weft_races_get(d, i)->addr, Y + (i == 1 ? 4 : 0));
    }
    weft_races_free(d);
}

static void test_stack_accesses_are_ignored(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    add(&b, 1, WEFT_EV_WRITE, X, 8, 0x500, WEFT_EVF_STACK);
    add(&b, 0, WEFT_EV_WRITE, X, 8, 0x400, WEFT_EVF_STACK);
    assert_int_equal(count_races(&b), 0);
}

/* ---- API ---------------------------------------------------------------------------- */

static void test_pcs_and_errors(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    wr(&b, 1, X, 8, 0x900);
    wr(&b, 0, X, 8, 0x300);
    wr(&b, 1, Y, 8, 0x900);
    wr(&b, 0, Y, 8, 0x100);
    weft_races *d = run(&b);
    const uint64_t *pcs;
    assert_int_equal(weft_races_pcs(d, &pcs), 3);
    assert_int_equal(pcs[0], 0x100);
    assert_int_equal(pcs[1], 0x300);
    assert_int_equal(pcs[2], 0x900);
    weft_races_stats st;
    weft_races_get_stats(d, &st);
    assert_int_equal(st.threads, 2);
    assert_int_equal(st.accesses, 4);
    assert_int_equal(st.events, b.n);
    weft_event bad = {.thread = WEFT_TRACE_MAX_THREADS, .kind = WEFT_EV_READ, .size = 1};
    assert_int_equal(weft_races_feed(d, &bad), -1);
    assert_non_null(strstr(weft_races_error(d), "thread index"));
    weft_races_free(d);

    char err[256];
    weft_races_config cfg = weft_races_config_default();
    cfg.binary = "/nonexistent/prog";
    assert_null(weft_races_create(&cfg, err, sizeof err));
    assert_string_equal(err, "/nonexistent/prog: cannot open: No such file or directory");
}

static void test_output(void **state)
{
    (void)state;
    seqb b = {0};
    start_main(&b);
    spawn(&b, 0, 1);
    wr(&b, 1, X, 8, 0x900);
    rd(&b, 0, X + 2, 2, 0x300);
    weft_races *d = run(&b);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    weft_races_source src = {.trace = "t.wtr", .decoded = 1};
    assert_int_equal(weft_races_print(d, &src, NULL, m), 0);
    fclose(m);
    assert_non_null(strstr(text, "race 1 on 0x500002: 1 instance, the first:\n"));
    assert_non_null(strstr(text, "T1   write  8 bytes at 40 ns (seq 1), pc 0x900 in ?"));
    assert_non_null(strstr(text, "T0   read   2 bytes at 50 ns (seq 2), pc 0x300 in ?"));
    free(text);

    char dir[] = "/tmp/test_races.XXXXXX", path[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/r.json", dir);
    assert_int_equal(weft_races_write(d, &src, NULL, WEFT_RACES_JSON, path, err, sizeof err), 0);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "format")), "weft-races");
    json_t *r0 = json_array_get(json_object_get(root, "races"), 0);
    assert_string_equal(json_string_value(json_object_get(r0, "address")), "0x500002");
    assert_int_equal(json_integer_value(json_object_get(r0, "count")), 1);
    json_t *second = json_object_get(r0, "second");
    assert_string_equal(json_string_value(json_object_get(second, "kind")), "read");
    assert_string_equal(json_string_value(json_object_get(second, "pc")), "0x300");
    assert_int_equal(json_integer_value(json_object_get(second, "seq")), 2);
    assert_true(json_is_null(json_object_get(second, "line")));
    assert_int_equal(json_array_size(json_object_get(root, "pcs")), 2);
    json_decref(root);
    /* A folder that does not exist: one line, nothing left behind. */
    snprintf(path, sizeof path, "%s/no/r.json", dir);
    assert_int_equal(weft_races_write(d, &src, NULL, WEFT_RACES_JSON, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot create: No such file or directory"));
    snprintf(path, sizeof path, "%s/r.json", dir);
    unlink(path);
    assert_int_equal(rmdir(dir), 0); /* empty: no temporary file left */
    weft_races_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_insn_class),
        cmocka_unit_test(test_fork_orders_creator_before_child),
        cmocka_unit_test(test_join_by_acquire_near_descriptor),
        cmocka_unit_test(test_join_by_futex_wait_resumed_at_exit),
        cmocka_unit_test(test_futex_wake_orders_the_waiting_thread),
        cmocka_unit_test(test_release_acquire),
        cmocka_unit_test(test_lock_taken_on_one_side_only),
        cmocka_unit_test(test_read_shared_then_write),
        cmocka_unit_test(test_same_epoch_keeps_the_latest_access),
        cmocka_unit_test(test_atomics_never_race_with_atomics),
        cmocka_unit_test(test_byte_ranges),
        cmocka_unit_test(test_stack_accesses_are_ignored),
        cmocka_unit_test(test_pcs_and_errors),
        cmocka_unit_test(test_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
