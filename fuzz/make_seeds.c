/* Writes the synthetic part of the fuzz seed corpora with the real writer
 * and plan APIs: traces (every event kind and flag, more than one block,
 * more threads than the frame merge scans, no events, salvaged) in format
 * version 5 (zstd segments of spool chunks), again in versions 3 (frames)
 * and 1 (blocks), and versions 5 and 3 with their payloads uncompressed
 * (fuzz_frames.h: the seeds through which the fuzzer reaches the chunk and
 * frame decoders); spools (whole and torn) and
 * plans; and command lines for fuzz_options from every subcommand's option
 * table. The corpora in fuzz/corpus/ are this program's output plus a few
 * traces of fixtures recorded with `weft trace` (see fuzz/CMakeLists.txt).
 *   usage: fuzz_make_seeds OUTDIR   (creates OUTDIR/{trace,spool,plan,options})
 *          fuzz_make_seeds --raw TRACE OUT   (OUT: TRACE in raw form) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/optimizer.h"
#include "weft/trace.h"

#include "cli.h"
#include "fuzz_frames.h"

static char err[512];

static void die(const char *what)
{
    fprintf(stderr, "fuzz_make_seeds: %s: %s\n", what, err[0] ? err : strerror(errno));
    exit(1);
}

static weft_trace_meta meta(void)
{
    static char *argv[] = {"/b/x", "--threads", "3", "ümlaut,\"q\""};
    weft_trace_meta m;
    memset(&m, 0, sizeof m);
    m.settings.mode = WEFT_MODE_EXACT;
    m.settings.cpi = 2;
    m.settings.ps_per_cycle = 1000;
    m.settings.quantum = 100;
    m.settings.filter = WEFT_FILTER_RANGES;
    m.settings.nranges = 2;
    m.settings.range_lo[0] = 0x4a2000, m.settings.range_hi[0] = 0x4a3000;
    m.settings.range_lo[1] = 0x10, m.settings.range_hi[1] = 0x20;
    snprintf(m.settings.policy, sizeof m.settings.policy, "ideal");
    m.binary_path = "/b/x";
    for (int i = 0; i < 20; i++)
        m.build_id[i] = (uint8_t)(0xd0 + i);
    m.build_id_len = 20;
    m.argc = 4;
    m.argv = argv;
    return m;
}

static weft_event ev(uint64_t time, uint8_t kind, uint64_t addr, uint8_t size, uint16_t flags)
{
    return (weft_event){.time = time,
                        .kind = kind,
                        .addr = addr,
                        .size = size,
                        .flags = flags,
                        .pc = 0x400000 + 4 * (addr & 0xff)};
}

static void copy(const char *from, const char *to, long cut)
{
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    if (!f || !g)
        die(from);
    char buf[65536];
    size_t n;
    long total = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        if (cut >= 0 && total + (long)n > cut)
            n = (size_t)(cut - total);
        fwrite(buf, 1, n, g);
        total += (long)n;
        if (cut >= 0 && total >= cut)
            break;
    }
    fclose(f);
    if (fclose(g) != 0)
        die(to);
}

/* Three threads, every kind and flag, a delay and a deadlock-ish ending. */
static void kinds(const char *out, const char *spool_copy)
{
    weft_trace_meta m = meta();
    weft_trace_writer *w = weft_trace_writer_open(out, &m, err, sizeof err);
    if (!w)
        die(out);
    weft_event t0[] = {ev(0, WEFT_EV_THREAD_START, UINT32_MAX, 0, 0),
                       ev(1, WEFT_EV_WRITE, 0x4a2078, 8, 0),
                       ev(2, WEFT_EV_SYSCALL, 220, 0, 0),
                       ev(3, WEFT_EV_RMW, 0x4a2080, 4, 2),
                       ev(5, WEFT_EV_FUTEX_WAIT, 0x4a2080, 0, 0),
                       ev(9, WEFT_EV_READ, 0x4a2078, 8, 0),
                       ev(11, WEFT_EV_FAULT, 0x8, 0, 0),
                       ev(12, WEFT_EV_THREAD_EXIT, 0, 0, 0)};
    weft_event t1[] = {
        ev(2, WEFT_EV_THREAD_START, 0, 0, 0),   ev(3, WEFT_EV_READ, 0x4a2078, 8, 0),
        ev(4, WEFT_EV_DELAY, 500, 0, 0),        ev(4, WEFT_EV_WRITE, 0x4a2078, 8, 0),
        ev(6, WEFT_EV_RMW, 0x4a2080, 4, 1),     ev(7, WEFT_EV_FUTEX_WAKE, 0x4a2080, 0, 0),
        ev(8, WEFT_EV_WRITE, 0x7ffff000, 1, 4), ev(8, WEFT_EV_WRITE, 0x4a2078, 64, 0),
        ev(10, WEFT_EV_THREAD_EXIT, 3, 0, 0)};
    weft_event t2[] = {ev(3, WEFT_EV_THREAD_START, 1, 0, 0), ev(4, WEFT_EV_WRITE, 0x4a2078, 2, 0),
                       ev(8, WEFT_EV_WRITE, 0x4a2078, 8, 0),
                       ev(11, WEFT_EV_FUTEX_WAIT, 0x10, 0, 0)};
    if (weft_trace_writer_append(w, 0, t0, 8) || weft_trace_writer_append(w, 1, t1, 9) ||
        weft_trace_writer_append(w, 2, t2, 4))
        die("append");
    if (spool_copy) {
        char sp[600];
        snprintf(sp, sizeof sp, "%s.spool", out);
        copy(sp, spool_copy, -1);
    }
    weft_trace_thread th[3] = {
        {.id = 0,
         .parent = UINT32_MAX,
         .tid = 100,
         .start_time = 0,
         .end_time = 12,
         .insns = 12,
         .exited = 1},
        {.id = 1,
         .parent = 0,
         .tid = 101,
         .start_time = 2,
         .end_time = 10,
         .insns = 8,
         .exited = 1,
         .exit_code = 3},
        {.id = 2, .parent = 1, .tid = 102, .start_time = 3, .end_time = 13, .insns = 10}};
    weft_trace_summary s = {.flags = WEFT_TRACE_DEADLOCK,
                            .exit_status = 0,
                            .stall_escapes = 2,
                            .makespan = 13,
                            .nthreads = 3,
                            .threads = th};
    if (weft_trace_writer_finish(w, &s, err, sizeof err))
        die(out);
}

/* Two threads and more than one block's worth of events. */
static void blocks(const char *out, const char *spool_copy)
{
    weft_trace_meta m = meta();
    m.settings.mode = WEFT_MODE_FREE;
    m.settings.filter = WEFT_FILTER_NONSTACK;
    m.settings.nranges = 0;
    weft_trace_writer *w = weft_trace_writer_open(out, &m, err, sizeof err);
    if (!w)
        die(out);
    enum { N = 2100 };
    static weft_event a[N];
    for (int t = 0; t < 2; t++) {
        for (int i = 0; i < N; i++)
            a[i] =
                ev((uint64_t)i, i % 3 ? WEFT_EV_WRITE : WEFT_EV_READ, 0x4a2078 + 8 * (i % 2), 8, 0);
        if (weft_trace_writer_append(w, (uint32_t)t, a, N))
            die("append");
    }
    if (spool_copy) {
        char sp[600];
        snprintf(sp, sizeof sp, "%s.spool", out);
        copy(sp, spool_copy, 1000); /* torn inside the first chunk's payload */
    }
    if (weft_trace_writer_finish(w, NULL, err, sizeof err))
        die(out);
}

static void empty(const char *out)
{
    weft_trace_meta m = meta();
    m.argc = 0;
    m.build_id_len = 0;
    weft_trace_writer *w = weft_trace_writer_open(out, &m, err, sizeof err);
    if (!w || weft_trace_writer_finish(w, NULL, err, sizeof err))
        die(out);
}

/* A run that died: the spool salvaged into a trace. */
static void salvaged(const char *out)
{
    /* A child writes the spool and dies without finishing, like a killed qemu. */
    pid_t pid = fork();
    if (pid == 0) {
        weft_trace_meta m = meta();
        weft_trace_writer *w = weft_trace_writer_open(out, &m, err, sizeof err);
        weft_event e[] = {ev(0, WEFT_EV_THREAD_START, UINT32_MAX, 0, 0),
                          ev(4, WEFT_EV_WRITE, 0x4a2078, 8, 0)};
        weft_event f[] = {ev(1, WEFT_EV_THREAD_START, 0, 0, 0),
                          ev(4, WEFT_EV_WRITE, 0x4a2078, 8, 0)};
        _exit(!w || weft_trace_writer_append(w, 0, e, 2) || weft_trace_writer_append(w, 1, f, 2));
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || st != 0)
        die("spool writer");
    if (weft_trace_salvage(out, WEFT_TRACE_CRASHED, -11, err, sizeof err))
        die(out);
}

/* A spool of segments (the writer's default): two threads whose appends
 * close a segment each, then the pending chunks that a killed run leaves
 * in the buffer file (not copied: the spool alone is the seed). */
static void segments_spool(const char *out, const char *spool_copy)
{
    unsetenv("WEFT_TRACE_ONLINE");
    setenv("WEFT_TRACE_ZSTD_LEVEL", "1", 1);
    weft_trace_meta m = meta();
    weft_trace_writer *w = weft_trace_writer_open(out, &m, err, sizeof err);
    weft_event *e = malloc(4096 * sizeof *e);
    if (!w || !e)
        die(out);
    uint64_t x = 1;
    for (uint64_t round = 0; round < 24; round++)
        for (uint32_t t = 0; t < 2; t++) {
            for (uint64_t i = 0; i < 4096; i++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                e[i] = ev(round * 10000 + 2 * i + t, (x >> 62) ? WEFT_EV_READ : WEFT_EV_WRITE,
                          0x4a2000 + 8 * ((x >> 33) & 0x7), 8, 0);
            }
            if (weft_trace_writer_append(w, t, e, 4096))
                die("append");
        }
    free(e);
    char sp[600];
    snprintf(sp, sizeof sp, "%s.spool", out);
    copy(sp, spool_copy, -1);
    weft_trace_writer_abort(w);
    setenv("WEFT_TRACE_ONLINE", "0", 1);
}

/* The spool of a tail-keeping writer (a campaign's run without
 * --save-trace): skip records of three threads, no chunk. */
static void tail_spool(const char *out, const char *spool_copy)
{
    weft_trace_meta m = meta();
    weft_trace_writer *w = weft_trace_writer_open(out, &m, err, sizeof err);
    if (!w)
        die(out);
    weft_trace_writer_keep_tail(w, 4);
    for (uint64_t round = 0; round < 3; round++)
        for (uint32_t t = 0; t < 3; t++) {
            weft_event e[] = {ev(10 * round + t, WEFT_EV_WRITE, 0x4a2078, 8, 0),
                              ev(10 * round + t + 1, WEFT_EV_READ, 0x4a2080, 4, 0)};
            if (weft_trace_writer_append(w, t, e, 2))
                die("append");
        }
    char sp[600];
    snprintf(sp, sizeof sp, "%s.spool", out);
    copy(sp, spool_copy, -1);
    weft_trace_writer_abort(w);
}

/* More threads than a frame's merge scans (SCAN_RUNS in
 * trace_read_frames.c), so the reader's heap is used; plain writes and sync
 * only, as `weft trace --record sync+writes` records. */
static void many_threads(const char *out)
{
    weft_trace_meta m = meta();
    m.settings.record = WEFT_RECORD_SYNC | WEFT_RECORD_WRITES;
    weft_trace_writer *w = weft_trace_writer_open(out, &m, err, sizeof err);
    if (!w)
        die(out);
    for (uint32_t t = 0; t < 20; t++) {
        weft_event e[5];
        e[0] = ev(t, WEFT_EV_THREAD_START, t ? 0 : UINT32_MAX, 0, 0);
        for (int i = 1; i < 4; i++)
            e[i] = ev(t + 7 * (uint64_t)i, WEFT_EV_WRITE, 0x4a2078 + 8 * (t % 3), 8, 0);
        e[4] = ev(40 + t, WEFT_EV_THREAD_EXIT, 0, 0, 0);
        if (weft_trace_writer_append(w, t, e, 5))
            die("append");
    }
    if (weft_trace_writer_finish(w, NULL, err, sizeof err))
        die(out);
}

/* A version 2 trace with its frames' payloads decompressed in place. */
static void raw_form(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb");
    if (!f)
        die(from);
    static uint8_t buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf, f), rn;
    fclose(f);
    uint8_t *raw = fz_frames_map(buf, n, 0, &rn);
    FILE *g = fopen(to, "wb");
    if (!raw || !g || fwrite(raw, 1, rn, g) != rn || fclose(g) != 0)
        die(to);
    free(raw);
}

static void plan(const char *out, int with_symbols)
{
    weft_trace_meta m = meta();
    optimizer_plan p;
    if (optimizer_plan_init(&p, &m))
        die("plan");
    optimizer_plan_set_search(&p, with_symbols ? "sa" : "manual", with_symbols ? 7 : 0,
                              with_symbols ? 10000000 : 0, with_symbols ? 4711 : 0);
    optimizer_injection j = {.thread = 1, .seq = 3, .pc = 0x400a10, .delay_ns = 1500};
    if (with_symbols) {
        j.function = "worker", j.file = "x.c", j.line = 42, j.variable = "total", j.offset = 8;
        j.has_predicted = 1;
        j.predicted = (optimizer_predicted){.thread_a = 1,
                                            .seq_a = 3,
                                            .thread_b = 2,
                                            .seq_b = 1,
                                            .address = 0x4a2080,
                                            .time = 23000};
    }
    if (optimizer_plan_add(&p, &j))
        die("plan");
    j = (optimizer_injection){.thread = 0, .seq = 0, .pc = 0x400000, .delay_ns = 0};
    if (optimizer_plan_add(&p, &j) || optimizer_plan_write(&p, out, err, sizeof err))
        die(out);
    optimizer_plan_free(&p);
}

/* ---- command lines (fuzz_options: command index, then NUL-separated args) ---- */

/* A value the option accepts: the custom ones' from their help. */
static const char *good_value(const cli_option *o)
{
    static const char *const known[][2] = {{"mode", "exact"},
                                           {"filter", "range:4a2000-4a3000"},
                                           {"record", "sync+writes"},
                                           {"max-trace-size", "500M"},
                                           {"algo", "sa"},
                                           {"sa-temperature", "scaled"},
                                           {"sa-tmax", "2.5"},
                                           {"sa-p0", "0.5"},
                                           {"sched", "rpro"},
                                           {"points", "shared"},
                                           {"starvation", "0.25"},
                                           {"shard", "2/4"},
                                           {"expect-output", "/dev/null"}};
    static char num[32];
    for (size_t i = 0; o->name && i < sizeof known / sizeof *known; i++)
        if (!strcmp(o->name, known[i][0]))
            return known[i][1];
    if (o->type == CLI_U64) {
        snprintf(num, sizeof num, "%llu", (unsigned long long)(o->lo + (o->hi > o->lo)));
        return num;
    }
    return o->type == CLI_CUSTOM ? "3" : "out.x";
}

typedef struct cmdline {
    uint8_t buf[8192];
    size_t len;
} cmdline;

static void arg(cmdline *c, const char *a)
{
    size_t n = strlen(a) + 1;
    if (c->len + n <= sizeof c->buf) {
        memcpy(c->buf + c->len, a, n);
        c->len += n;
    }
}

static void write_cmdline(const char *dir, const char *cmd, const char *what, const cmdline *c)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s_%s", dir, cmd, what);
    FILE *f = fopen(path, "wb");
    /* The last argument's NUL is implied by the end of the input. */
    if (!f || fwrite(c->buf, 1, c->len - 1, f) != c->len - 1 || fclose(f) != 0)
        die(path);
}

/* Per command: every option spelled long, every letter, "--name=value",
 * and --help, each with operands as the command takes them. */
static void command_lines(const char *dir)
{
    for (size_t k = 0; k < cli_ncommands; k++) {
        const cli_command *cmd = cli_commands[k];
        cmdline lng = {{(uint8_t)k}, 1}, let = lng, eq = lng, help = lng;
        for (size_t i = 0; i < cmd->nopts; i++) {
            const cli_option *o = &cmd->opts[i];
            char buf[300];
            if (o->name) {
                snprintf(buf, sizeof buf, "--%s", o->name);
                arg(&lng, buf);
                if (o->type != CLI_FLAG)
                    arg(&lng, good_value(o));
                snprintf(buf, sizeof buf, o->type != CLI_FLAG ? "--%s=%s" : "--%s", o->name,
                         good_value(o));
                arg(&eq, buf);
            }
            if (o->letter) {
                snprintf(buf, sizeof buf, "-%c%s", o->letter,
                         o->type != CLI_FLAG ? good_value(o) : "");
                arg(&let, buf);
            }
        }
        arg(&help, "-h");
        cmdline *all[] = {&lng, &let, &eq, &help};
        for (size_t i = 0; i < 4; i++) {
            /* "--" ends the options before the program, or between operands. */
            arg(all[i], cmd->stop_at_operand ? "--" : "prog");
            arg(all[i], cmd->stop_at_operand ? "prog" : "--");
            arg(all[i], "-x");
        }
        write_cmdline(dir, cmd->name, "long", &lng);
        write_cmdline(dir, cmd->name, "letters", &let);
        write_cmdline(dir, cmd->name, "equals", &eq);
        write_cmdline(dir, cmd->name, "help", &help);
    }
}

/* The traces of one format version: WEFT_TRACE_ZSTD_LEVEL=0 makes the
 * writer write version 1, WEFT_TRACE_FRAMES=1 version 3 (v3_*), and the
 * current version otherwise. Spools are written with the current
 * version's header whatever the version (fuzz/corpus/spool/v1_* are older
 * ones, wchk_* spools of chunks before their records were predicted). */
static void traces(const char *tdir, const char *sdir, int version)
{
    setenv("WEFT_TRACE_ZSTD_LEVEL", version == 1 ? "0" : "1", 1);
    if (version == 3)
        setenv("WEFT_TRACE_FRAMES", "1", 1);
    else
        unsetenv("WEFT_TRACE_FRAMES");
    const char *v = version == 1 ? "v1_" : version == 3 ? "v3_" : "";
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/%skinds.wtr", tdir, v);
    snprintf(b, sizeof b, "%s/kinds.spool", sdir);
    kinds(a, version == WEFT_TRACE_VERSION ? b : NULL);
    snprintf(a, sizeof a, "%s/%sblocks.wtr", tdir, v);
    snprintf(b, sizeof b, "%s/torn.spool", sdir);
    blocks(a, version == WEFT_TRACE_VERSION ? b : NULL);
    snprintf(a, sizeof a, "%s/%sempty.wtr", tdir, v);
    empty(a);
    snprintf(a, sizeof a, "%s/%ssalvaged.wtr", tdir, v);
    salvaged(a);
    snprintf(a, sizeof a, "%s/%smany_threads.wtr", tdir, v);
    many_threads(a);
    if (version >= 3) {
        const char *names[] = {"kinds", "blocks", "salvaged", "many_threads"};
        for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
            snprintf(a, sizeof a, "%s/%s%s.wtr", tdir, v, names[i]);
            snprintf(b, sizeof b, "%s/%sraw_%s.wtr", tdir, v, names[i]);
            raw_form(a, b);
        }
    }
    unsetenv("WEFT_TRACE_FRAMES");
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--raw")) {
        raw_form(argv[2], argv[3]);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_make_seeds OUTDIR | --raw TRACE OUT\n");
        return 2;
    }
    /* The spools copied before finish hold raw chunks (the seeds of
     * before segments were written as threads append); segments_spool
     * makes the one of segments. */
    setenv("WEFT_TRACE_ONLINE", "0", 1);
    char p[4][512], a[600];
    const char *sub[4] = {"trace", "spool", "plan", "options"};
    mkdir(argv[1], 0755);
    for (int i = 0; i < 4; i++) {
        snprintf(p[i], sizeof p[i], "%s/%s", argv[1], sub[i]);
        mkdir(p[i], 0755);
    }
    traces(p[0], p[1], WEFT_TRACE_VERSION);
    traces(p[0], p[1], 3);
    traces(p[0], p[1], 1);
    snprintf(a, sizeof a, "%s/tail.wtr", p[0]);
    char b[600];
    snprintf(b, sizeof b, "%s/tail.spool", p[1]);
    tail_spool(a, b);
    snprintf(a, sizeof a, "%s/segments.wtr", p[0]);
    snprintf(b, sizeof b, "%s/segments.spool", p[1]);
    segments_spool(a, b);
    snprintf(a, sizeof a, "%s/sa.json", p[2]);
    plan(a, 1);
    snprintf(a, sizeof a, "%s/manual.json", p[2]);
    plan(a, 0);
    command_lines(p[3]);
    return 0;
}
