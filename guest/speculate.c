/* Exact mode by speculation, weft's side: the tracer gates only atomics,
 * syscalls and the pcs learnt so far and checks the order of everything
 * else (tracer/plugin_spec.c). An attempt it blames nothing in is ordered
 * exactly like a fully gated run, and its trace is the same byte for byte;
 * otherwise the program runs again with the blamed pcs gated. The last
 * attempt gates every access, so the answer never depends on speculation.
 *
 * The guest must see the same kinds of streams as without speculation (the
 * C library buffers a terminal, a pipe, a file and /dev/null differently,
 * which changes the trace), and nothing may be lost or shown twice. Output
 * to a regular file is held in a file and written once, for the attempt that
 * counts; /dev/null is passed through; input from a regular file is rewound.
 * A terminal, pipe or socket can be neither held nor replayed without
 * changing what the guest sees, so then there is one fully gated run. A
 * guest with side effects (files it writes) repeats them per attempt. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/guest.h"
#include "weft/trace.h"

/* The last one gates every access. Each earlier attempt that is not
 * ordered gates at least one more pc, and costs about one run of the
 * program; the fully gated one costs many (pigz, 16 MB: a checked run
 * about 1 minute, the fully gated one over 18), so several are worth
 * trying first. */
#define SPEC_ATTEMPTS 8

/* Functions whose plain accesses are gated from the first run, because
 * nearly every program would otherwise need a second: glibc's join reads
 * the joined thread's tid, which the kernel clears at that thread's exit,
 * and main often gets there first on the host. */
static const char *const seeded_functions[] = {"__pthread_clockjoin_ex"};

typedef struct spec_run {
    char dir[4096];
    char learn[4200], gates[4200], out[4200], err[4200];
    uint64_t *pcs;
    size_t npcs, cap;
    uint64_t unordered; /* the last run's gated accesses found out of order */
    guest_run attempt;  /* the run as each attempt makes it */
    off_t rewind_to;    /* where each attempt reads stdin from, or -1 */
    char seeded[512];   /* the seeded functions' gate ranges */
    double wall;        /* of all attempts */
    int runs, last;     /* attempts made; the last gated every access */
} spec_run;

typedef enum stream_use { STREAM_NO, STREAM_PASS, STREAM_FILE } stream_use;

/* How a standard stream can take part in several attempts. */
static stream_use stream_plan(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return STREAM_PASS; /* closed */
    if (S_ISREG(st.st_mode))
        return STREAM_FILE;
    /* /dev/null and the like; not a terminal, which is read interactively. */
    return S_ISCHR(st.st_mode) && !isatty(fd) ? STREAM_PASS : STREAM_NO;
}

/* ",gaterange=LO-HI" for each seeded function of a fixed-address (ET_EXEC)
 * binary; others (PIE, shared libc) load elsewhere and get none. */
static void seed_ranges(const char *binary, char *out, size_t len)
{
    out[0] = 0;
    Elf64_Ehdr eh;
    FILE *f = fopen(binary, "rb");
    int fixed = f && fread(&eh, sizeof eh, 1, f) == 1 && eh.e_type == ET_EXEC;
    if (f)
        fclose(f);
    char err[256];
    weft_symbols *syms = fixed ? weft_symbols_open(binary, err, sizeof err) : NULL;
    size_t n = 0;
    for (size_t i = 0; syms && i < sizeof seeded_functions / sizeof *seeded_functions; i++) {
        uint64_t addr, size;
        if (weft_symbols_function(syms, seeded_functions[i], &addr, &size) == 0 && size && n < len)
            n += (size_t)snprintf(out + n, len - n, ",gaterange=0x%" PRIx64 "-0x%" PRIx64, addr,
                                  addr + size);
    }
    if (syms)
        weft_symbols_close(syms);
}

static int add_pc(spec_run *s, uint64_t pc)
{
    for (size_t i = 0; i < s->npcs; i++)
        if (s->pcs[i] == pc)
            return 0;
    if (s->npcs == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        uint64_t *p = realloc(s->pcs, cap * sizeof *p);
        if (!p)
            return -1;
        s->pcs = p;
        s->cap = cap;
    }
    s->pcs[s->npcs++] = pc;
    return 1;
}

/* Reads what the tracer blamed. Returns the number of new pcs, or -1 when
 * the attempt could not be checked at all (the next one gates everything). */
static int read_learnt(spec_run *s)
{
    FILE *f = fopen(s->learn, "r");
    if (!f)
        return -1;
    char line[256];
    int fresh = 0, unchecked = 0;
    s->unordered = 0;
    while (fgets(line, sizeof line, f)) {
        uint64_t pc;
        const char *u = strstr(line, " unordered=");
        if (!strncmp(line, "done:", 5) && u)
            s->unordered = strtoull(u + 11, NULL, 10);
        if (!strncmp(line, "abandon", 7)) {
            unchecked = 1;
        } else if (!strncmp(line, "0x", 2) && sscanf(line, "%" SCNx64, &pc) == 1) {
            int r = add_pc(s, pc);
            if (r < 0)
                unchecked = 1;
            fresh += r > 0;
        }
    }
    fclose(f);
    return unchecked ? -1 : fresh;
}

static int write_gates(const spec_run *s)
{
    FILE *f = fopen(s->gates, "w");
    if (!f)
        return -1;
    for (size_t i = 0; i < s->npcs; i++)
        fprintf(f, "0x%" PRIx64 "\n", s->pcs[i]);
    return fclose(f);
}

/* --gates FILE: what an earlier trace of the program learnt. 0, or -1
 * after one line. */
static int load_gates(spec_run *s, const char *file)
{
    if (access(file, F_OK) != 0)
        return 0; /* made at the end */
    uint64_t *pcs;
    size_t n;
    char err[512];
    if (weft_pcs_load(file, &pcs, &n, err, sizeof err)) {
        weft_error("--gates: %s", err);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = add_pc(s, pcs[i]) < 0 ? -1 : 0;
    free(pcs);
    if (rc == 0 && s->npcs)
        rc = write_gates(s);
    if (rc)
        weft_error("--gates: %s: cannot pass its pcs on: %s", file, strerror(errno));
    return rc;
}

/* The pcs the accepted run gated, for the next trace: only after a run
 * that was ordered (one that gated everything learnt nothing). */
static void save_gates(spec_run *s, const char *file)
{
    char err[512];
    if (!s->npcs || s->last)
        return;
    uint64_t *pcs = malloc(s->npcs * sizeof *pcs);
    if (!pcs) {
        weft_error("--gates: %s: out of memory", file);
        return;
    }
    memcpy(pcs, s->pcs, s->npcs * sizeof *pcs);
    size_t n = s->npcs;
    if (weft_pcs_write(file, pcs, &n, err, sizeof err))
        weft_error("--gates: %s", err);
    free(pcs);
}

/* The guest's output of the attempt that counts, to weft's own streams. */
static void show_output(const char *path, FILE *to)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (fwrite(buf, 1, n, to) != n)
            break;
    fclose(f);
    fflush(to);
}

static void cleanup(spec_run *s)
{
    unlink(s->learn);
    unlink(s->gates);
    unlink(s->out);
    unlink(s->err);
    rmdir(s->dir);
    free(s->pcs);
}

/* The folder of the tracer's verdicts, the gates and the held output. */
static int make_spec_dir(spec_run *s)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/weft-spec-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(s->dir)) {
        fprintf(stderr,
                "weft: %s: cannot create a temporary folder (%s); exact mode gates every "
                "access\n",
                tmp && *tmp ? tmp : "/tmp", strerror(errno));
        return -1;
    }
    snprintf(s->learn, sizeof s->learn, "%s/learnt", s->dir);
    snprintf(s->gates, sizeof s->gates, "%s/gates", s->dir);
    snprintf(s->out, sizeof s->out, "%s/stdout", s->dir);
    snprintf(s->err, sizeof s->err, "%s/stderr", s->dir);
    return 0;
}

/* Output to a regular file is held per attempt, shown once at the end. */
static void hold_output(spec_run *s, stream_use out, stream_use err)
{
    s->attempt.capture_out = out == STREAM_FILE ? s->out : NULL;
    s->attempt.capture_err = err == STREAM_FILE ? s->err : NULL;
    struct stat so, se;
    if (out == STREAM_FILE && err == STREAM_FILE && fstat(STDOUT_FILENO, &so) == 0 &&
        fstat(STDERR_FILENO, &se) == 0 && so.st_dev == se.st_dev && so.st_ino == se.st_ino)
        s->attempt.capture_err = s->attempt.capture_out; /* 2>&1: keep the guest's interleaving */
}

/* The attempts, each gating the pcs blamed so far, until one is blamed
 * nothing, fails, times out or is the last (which gates every access).
 * Returns the last attempt's status. */
static int run_attempts(spec_run *s, const guest_run *run, const char *trace_path, guest_result *r,
                        uint32_t *final_flags)
{
    size_t base_len = strlen(run->plugin_args);
    char *args = malloc(base_len + sizeof s->seeded + 2 * sizeof s->learn + 32);
    int rc = -1;
    for (int n = 1;; n++) {
        s->last = n >= SPEC_ATTEMPTS;
        if (s->last)
            strcpy(args, run->plugin_args);
        else
            sprintf(args, "%s,spec=%s%s%s%s", run->plugin_args, s->learn, s->seeded,
                    s->npcs ? ",gates=" : "", s->npcs ? s->gates : "");
        s->attempt.plugin_args = args;
        if (run->timeout_s) {
            double left = run->timeout_s - s->wall;
            s->attempt.timeout_s = left < 1 ? 1 : (unsigned)(left + 0.5);
        }
        int fd = open(s->learn, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
        if (s->rewind_to >= 0)
            lseek(STDIN_FILENO, s->rewind_to, SEEK_SET);
        rc = guest_trace_run_once(&s->attempt, trace_path, r, final_flags);
        s->wall += r->wall_s;
        s->runs++;
        if (rc != 0 || s->last || r->end == GUEST_INTERRUPTED)
            break;
        int fresh = read_learnt(s);
        if (fresh == 0)
            break; /* nothing blamed: ordered like a fully gated run */
        if (run->progress && fresh > 0 && n + 1 < SPEC_ATTEMPTS)
            fprintf(stderr,
                    "weft: exact mode: run %d (%.1f s) was not ordered: %d more instructions "
                    "need a gate, %zu in all; running again\n",
                    s->runs, r->wall_s, fresh, s->npcs);
        if (run->timeout_s && s->wall >= run->timeout_s) {
            weft_error("%s: timed out after %d runs, the last not ordered exactly", trace_path,
                       s->runs);
            break;
        }
        if (fresh < 0)
            n = SPEC_ATTEMPTS - 1; /* could not check: gate everything next */
        else if (write_gates(s) != 0)
            n = SPEC_ATTEMPTS - 1;
        if (run->progress && n + 1 >= SPEC_ATTEMPTS)
            fprintf(stderr,
                    "weft: exact mode: run %d was not ordered%s; the last run gates every "
                    "access (much slower)\n",
                    s->runs, fresh < 0 ? " and could not be checked" : "");
    }
    free(args);
    return rc;
}

int guest_trace_run_speculative(const guest_run *run, const char *trace_path, guest_result *r,
                                uint32_t *final_flags)
{
    stream_use in = stream_plan(STDIN_FILENO), out = stream_plan(STDOUT_FILENO),
               err = stream_plan(STDERR_FILENO);
    off_t rewind_to = in == STREAM_FILE ? lseek(STDIN_FILENO, 0, SEEK_CUR) : -1;
    if (in == STREAM_NO || out == STREAM_NO || err == STREAM_NO ||
        (in == STREAM_FILE && rewind_to < 0)) {
        int rc = guest_trace_run_once(run, trace_path, r, final_flags);
        r->unspeculated = 1;
        return rc;
    }
    spec_run s = {.rewind_to = rewind_to};
    if (make_spec_dir(&s)) {
        int rc = guest_trace_run_once(run, trace_path, r, final_flags);
        r->unspeculated = 2; /* said why */
        return rc;
    }
    s.attempt = *run;
    hold_output(&s, out, err);
    seed_ranges(run->binary, s.seeded, sizeof s.seeded);
    if (run->gates_file && load_gates(&s, run->gates_file)) {
        cleanup(&s);
        return -1;
    }
    int rc = run_attempts(&s, run, trace_path, r, final_flags);
    if (run->gates_file && rc == 0 && r->end != GUEST_INTERRUPTED)
        save_gates(&s, run->gates_file);
    if (s.attempt.capture_out)
        show_output(s.out, stdout);
    if (s.attempt.capture_err && s.attempt.capture_err != s.attempt.capture_out)
        show_output(s.err, stderr);
    r->wall_s = s.wall;
    r->attempts = s.runs;
    r->fully_gated = s.last;
    r->gates_learnt = s.npcs;
    r->unordered = s.last ? 0 : s.unordered;
    r->unspeculated = 0;
    cleanup(&s);
    return rc;
}

int guest_trace_run(const guest_run *run, const char *trace_path, guest_result *r,
                    uint32_t *final_flags)
{
    if (run->speculate)
        return guest_trace_run_speculative(run, trace_path, r, final_flags);
    return guest_trace_run_once(run, trace_path, r, final_flags);
}
