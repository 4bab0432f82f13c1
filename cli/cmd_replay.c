/* weft replay: run a program under PCT, PPCT, RPro or random scheduling on
 * the ideal platform, one seed or a campaign of many, and report verdicts,
 * hit rates and the policies' guaranteed bounds. See docs/replay.md. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "weft/replay.h"

#define DEFAULT_TIMEOUT 60
#define DEFAULT_RADIUS 10

static void replay_usage(FILE *out)
{
    fprintf(out,
            "usage: weft replay [options] -- PROGRAM [ARGS...]\n\n"
            "Replays PROGRAM (AArch64 Linux) on the ideal platform under a priority\n"
            "scheduler, one seed or a campaign of seeds, and reports each run's verdict:\n"
            "pass, bug (oracle's BUG: line), exit, wrong_output, abort, crash, deadlock\n"
            "(with who waits on what) or timeout (livelock).\n\n"
            "  -s, --sched KIND       pct (default), ppct, rpro or random\n"
            "  -d, --depth D          bug depth targeted: D-1 change points (default 1)\n"
            "      --steps K          step budget k (default: measured by a profiling run)\n"
            "      --threads N        thread count n (default: measured by a profiling run)\n"
            "  -r, --radius R         rpro: radius in steps (default min(%d, k))\n"
            "  -p, --points P         schedule points besides syscalls and atomics:\n"
            "                         shared (default: accesses to addresses a profiling\n"
            "                         trace shows shared, written), none, all, pcs:FILE\n"
            "      --starvation P     per-decision starvation override probability\n"
            "                         (default 0.001)\n"
            "      --host-parallel    ppct: run the high set in parallel on the host\n"
            "                         (faster, not reproducible)\n"
            "      --seed S           one run with seed S, described in detail\n"
            "  -n, --runs N           a campaign of N runs (default 1) ...\n"
            "      --first-seed S     ... with seeds S..S+N-1 (default 1)\n"
            "  -j, --jobs J           runs at once (default: online CPUs)\n"
            "  -t, --timeout SEC      kill a run after SEC s: verdict timeout (default %d)\n"
            "      --expect-exit N    the exit status of a passing run (default 0)\n"
            "      --expect-output F  a passing run's stdout must equal file F\n"
            "  -o, --out DIR          runs.jsonl, summary.json, timing.json (wall times),\n"
            "                         traces (default weft-replay, or weft-replay-seed-S\n"
            "                         with --seed)\n"
            "      --resume           continue the campaign in DIR: run only missing seeds\n"
            "      --save-trace       keep traces of failing runs in DIR/traces\n"
            "      --stop-on-hit      stop dispatching seeds after the first failing run\n"
            "      --sysroot DIR      AArch64 root filesystem for a dynamic PROGRAM\n"
            "  -q, --quiet            no per-hit lines or progress\n"
            "      --summary FILE     print the summary of a runs.jsonl and exit\n"
            "      --shard I/N        run only part I of N of the seeds (contiguous ranges),\n"
            "                         for 'weft merge' (docs/scale-out.md); default out\n"
            "                         weft-replay-shard-I-of-N\n"
            "  -h, --help             this help\n\n"
            "Exit status: 0 if no run failed, 10 if some run did, 130 if interrupted\n"
            "(--resume continues), 1 on errors, 2 on a bad command line.\n",
            DEFAULT_RADIUS, DEFAULT_TIMEOUT);
}

enum {
    OPT_STEPS = 256,
    OPT_THREADS,
    OPT_STARVATION,
    OPT_HOSTPAR,
    OPT_SEED,
    OPT_FIRST,
    OPT_EXPECT_EXIT,
    OPT_EXPECT_OUTPUT,
    OPT_RESUME,
    OPT_SAVE,
    OPT_STOP,
    OPT_SYSROOT,
    OPT_SUMMARY,
    OPT_SHARD,
};

/* --shard I/N: this invocation runs part I (1-based) of a campaign whose
 * whole seed range is first_seed..first_seed+runs-1 (docs/scale-out.md).
 * index 0: not a shard. */
typedef struct shard_spec {
    uint64_t index, count, first_seed, runs;
} shard_spec;

static int parse_shard(const char *s, shard_spec *sh)
{
    char *slash = strchr(s, '/');
    char index[32];
    if (slash && (size_t)(slash - s) < sizeof index) {
        memcpy(index, s, (size_t)(slash - s));
        index[slash - s] = 0;
        if (index[0] && strspn(index, "0123456789") == strlen(index) && slash[1] &&
            strspn(slash + 1, "0123456789") == strlen(slash + 1)) {
            sh->index = strtoull(index, NULL, 10);
            sh->count = strtoull(slash + 1, NULL, 10);
            if (sh->index >= 1 && sh->index <= sh->count && sh->count <= (1u << 20))
                return 0;
        }
    }
    cli_error("--shard: expected I/N with 1 <= I <= N <= %u (e.g. 2/4), got '%s'", 1u << 20, s);
    return -1;
}

/* Contiguous seed ranges: shard I of N runs offsets floor((I-1)R/N) up to
 * floor(IR/N) of the campaign's R seeds, so each shard is itself an ordinary
 * campaign over one range (see docs/scale-out.md for why not seed mod N). */
static int apply_shard(replay_config *c, shard_spec *sh)
{
    sh->first_seed = c->first_seed;
    sh->runs = c->runs;
    uint64_t lo = (sh->index - 1) * c->runs / sh->count, hi = sh->index * c->runs / sh->count;
    if (hi == lo) {
        cli_error("--shard %" PRIu64 "/%" PRIu64 ": %" PRIu64 " runs split %" PRIu64
                  " ways leave this shard no seed",
                  sh->index, sh->count, c->runs, sh->count);
        return -1;
    }
    c->first_seed += lo;
    c->runs = hi - lo;
    return 0;
}

/* campaign.json: what a campaign in DIR was run with, for --resume. */
static int write_campaign(const replay_config *c, const shard_spec *sh)
{
    json_t *argv = json_array();
    for (int i = 0; i < c->run.argc; i++)
        json_array_append_new(argv, json_string(c->run.argv[i]));
    json_t *o = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:s, s:s, s:I, s:f, s:b, s:I, s:I, s:i, s:s?, s:o}", "policy",
        pct_kind_name(c->kind), "depth", (json_int_t)c->depth, "radius", (json_int_t)c->radius, "k",
        (json_int_t)c->k, "n", (json_int_t)c->n, "points", replay_points_name(c->points),
        "pcs_file", c->points == POINTS_SHARED || c->points == POINTS_PCS ? c->pcs_path : "",
        "pcs_count", (json_int_t)c->npcs, "starvation", c->starvation, "host_parallel",
        c->host_parallel, "first_seed", (json_int_t)c->first_seed, "runs", (json_int_t)c->runs,
        "expect_exit", c->expect_exit, "expect_output", c->expect_output, "argv", argv);
    /* What weft report and weft merge need to rebuild reproduction commands
     * and to tell shards of one campaign apart. */
    json_object_set_new(o, "timeout", json_integer(c->timeout));
    json_object_set_new(o, "sysroot", c->run.sysroot ? json_string(c->run.sysroot) : json_null());
    json_object_set_new(o, "shard",
                        sh->index
                            ? json_pack("{s:I, s:I, s:I, s:I}", "index", (json_int_t)sh->index,
                                        "count", (json_int_t)sh->count, "first_seed",
                                        (json_int_t)sh->first_seed, "runs", (json_int_t)sh->runs)
                            : json_null());
    char *text = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
    json_decref(o);
    char path[PATH_MAX + 32], err[512];
    snprintf(path, sizeof path, "%s/campaign.json", c->out_dir);
    int rc = text ? weft_write_atomic(path, text, strlen(text), err, sizeof err) : -1;
    if (rc)
        cli_error("%s", text ? err : "out of memory");
    free(text);
    return rc;
}

/* --resume: take k, n, points and the seed range from campaign.json unless
 * given, and refuse a different configuration. */
static int load_campaign(replay_config *c, int runs_given, int first_given, int radius_given,
                         shard_spec *sh)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/campaign.json", c->out_dir);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    if (!o) {
        cli_error("--resume: %s: %s (no campaign to continue)", path, je.text);
        return -1;
    }
    const char *policy = json_string_value(json_object_get(o, "policy"));
    const char *points = json_string_value(json_object_get(o, "points"));
    uint64_t depth = (uint64_t)json_integer_value(json_object_get(o, "depth"));
    uint64_t radius = (uint64_t)json_integer_value(json_object_get(o, "radius"));
    uint64_t k = (uint64_t)json_integer_value(json_object_get(o, "k"));
    uint64_t n = (uint64_t)json_integer_value(json_object_get(o, "n"));
    json_t *argv = json_object_get(o, "argv");
    char what[128] = "";
    if (!policy || strcmp(policy, pct_kind_name(c->kind)))
        snprintf(what, sizeof what, "--sched %s", policy ? policy : "?");
    else if (depth != c->depth)
        snprintf(what, sizeof what, "--depth %" PRIu64, depth);
    else if (c->kind == PCT_KIND_RPRO && radius_given && radius != c->radius)
        snprintf(what, sizeof what, "--radius %" PRIu64, radius);
    else if (!points || strcmp(points, replay_points_name(c->points)))
        snprintf(what, sizeof what, "--points %s", points ? points : "?");
    else if ((c->k_given && k != c->k) || (c->n_given && n != c->n))
        snprintf(what, sizeof what, "--steps %" PRIu64 " --threads %" PRIu64, k, n);
    else if (json_number_value(json_object_get(o, "starvation")) != c->starvation)
        snprintf(what, sizeof what, "--starvation %g",
                 json_number_value(json_object_get(o, "starvation")));
    else if (json_integer_value(json_object_get(o, "expect_exit")) != c->expect_exit)
        snprintf(what, sizeof what, "--expect-exit %" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(o, "expect_exit")));
    else if (json_array_size(argv) != (size_t)c->run.argc)
        snprintf(what, sizeof what, "another program or arguments");
    for (int i = 0; !what[0] && i < c->run.argc; i++) {
        const char *a = json_string_value(json_array_get(argv, (size_t)i));
        if (!a || strcmp(a, c->run.argv[i]))
            snprintf(what, sizeof what, "another program or arguments");
    }
    if (what[0]) {
        cli_error("--resume: the campaign in %s was run with %s: resume it with the same "
                  "options",
                  c->out_dir, what);
        json_decref(o);
        return -1;
    }
    c->k = k;
    c->n = n;
    c->radius = radius;
    if (c->points == POINTS_SHARED) {
        snprintf(c->pcs_path, sizeof c->pcs_path, "%s",
                 json_string_value(json_object_get(o, "pcs_file")));
        c->npcs = (uint64_t)json_integer_value(json_object_get(o, "pcs_count"));
        if (access(c->pcs_path, R_OK) != 0) {
            cli_error("--resume: %s: %s", c->pcs_path, strerror(errno));
            json_decref(o);
            return -1;
        }
    }
    if (!runs_given)
        c->runs = (uint64_t)json_integer_value(json_object_get(o, "runs"));
    if (!first_given)
        c->first_seed = (uint64_t)json_integer_value(json_object_get(o, "first_seed"));
    json_t *js = json_object_get(o, "shard");
    shard_spec stored = {0};
    if (json_is_object(js))
        stored = (shard_spec){(uint64_t)json_integer_value(json_object_get(js, "index")),
                              (uint64_t)json_integer_value(json_object_get(js, "count")),
                              (uint64_t)json_integer_value(json_object_get(js, "first_seed")),
                              (uint64_t)json_integer_value(json_object_get(js, "runs"))};
    json_decref(o);
    if (sh->index && (stored.index != sh->index || stored.count != sh->count)) {
        if (stored.index)
            cli_error("--resume: the campaign in %s is shard %" PRIu64 "/%" PRIu64 ", not %" PRIu64
                      "/%" PRIu64,
                      c->out_dir, stored.index, stored.count, sh->index, sh->count);
        else
            cli_error("--resume: the campaign in %s is not a shard: resume it without --shard",
                      c->out_dir);
        return -1;
    }
    if (sh->index) {
        /* The shard's range is cut again from the whole campaign's. */
        if (!runs_given)
            c->runs = stored.runs;
        if (!first_given)
            c->first_seed = stored.first_seed;
    } else {
        *sh = stored; /* resumed without --shard: still that shard */
    }
    return 0;
}

static int summary_only(const char *path)
{
    replay_summary s;
    char err[512];
    if (replay_summary_read(path, &s, err, sizeof err)) {
        cli_error("%s", err);
        return WEFT_EXIT_FAIL;
    }
    replay_summary_print(&s, stdout);
    return WEFT_EXIT_OK;
}

int cmd_replay(int argc, char **argv)
{
    static const struct option opts[] = {{"sched", required_argument, 0, 's'},
                                         {"depth", required_argument, 0, 'd'},
                                         {"steps", required_argument, 0, OPT_STEPS},
                                         {"threads", required_argument, 0, OPT_THREADS},
                                         {"radius", required_argument, 0, 'r'},
                                         {"points", required_argument, 0, 'p'},
                                         {"starvation", required_argument, 0, OPT_STARVATION},
                                         {"host-parallel", no_argument, 0, OPT_HOSTPAR},
                                         {"seed", required_argument, 0, OPT_SEED},
                                         {"runs", required_argument, 0, 'n'},
                                         {"first-seed", required_argument, 0, OPT_FIRST},
                                         {"jobs", required_argument, 0, 'j'},
                                         {"timeout", required_argument, 0, 't'},
                                         {"expect-exit", required_argument, 0, OPT_EXPECT_EXIT},
                                         {"expect-output", required_argument, 0, OPT_EXPECT_OUTPUT},
                                         {"out", required_argument, 0, 'o'},
                                         {"resume", no_argument, 0, OPT_RESUME},
                                         {"save-trace", no_argument, 0, OPT_SAVE},
                                         {"stop-on-hit", no_argument, 0, OPT_STOP},
                                         {"sysroot", required_argument, 0, OPT_SYSROOT},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"summary", required_argument, 0, OPT_SUMMARY},
                                         {"shard", required_argument, 0, OPT_SHARD},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    replay_config c = {.kind = PCT_KIND_PCT,
                       .depth = 1,
                       .starvation = -1,
                       .points = POINTS_SHARED,
                       .first_seed = 1,
                       .runs = 1,
                       .timeout = DEFAULT_TIMEOUT};
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c.jobs = ncpu > 0 ? (unsigned)ncpu : 1;
    const char *out = NULL;
    int radius_given = 0, runs_given = 0, first_given = 0, jobs_given = 0, shard_given = 0;
    shard_spec shard = {0};
    uint64_t x;
    int ch;
    while ((ch = getopt_long(argc, argv, "+s:d:r:p:n:j:t:o:qh", opts, NULL)) != -1) {
        switch (ch) {
        case 's':
            if (pct_kind_parse(optarg, &c.kind) || c.kind == PCT_KIND_IDEAL) {
                cli_error("--sched: expected pct, ppct, rpro or random, got '%s'", optarg);
                return WEFT_EXIT_USAGE;
            }
            break;
        case 'd':
            if (cli_parse_u64("--depth", optarg, 1, PCT_MAX_DEPTH, &c.depth))
                return WEFT_EXIT_USAGE;
            break;
        case OPT_STEPS:
            if (cli_parse_u64("--steps", optarg, 1, UINT64_C(1) << 62, &c.k))
                return WEFT_EXIT_USAGE;
            c.k_given = 1;
            break;
        case OPT_THREADS:
            if (cli_parse_u64("--threads", optarg, 1, PCT_MAX_THREADS, &c.n))
                return WEFT_EXIT_USAGE;
            c.n_given = 1;
            break;
        case 'r':
            if (cli_parse_u64("--radius", optarg, 1, UINT64_C(1) << 62, &c.radius))
                return WEFT_EXIT_USAGE;
            radius_given = 1;
            break;
        case 'p':
            if (!strcmp(optarg, "none"))
                c.points = POINTS_NONE;
            else if (!strcmp(optarg, "shared"))
                c.points = POINTS_SHARED;
            else if (!strcmp(optarg, "all"))
                c.points = POINTS_ALL;
            else if (!strncmp(optarg, "pcs:", 4) && optarg[4]) {
                c.points = POINTS_PCS;
                if (!realpath(optarg + 4, c.pcs_path)) {
                    cli_error("--points %s: %s", optarg, strerror(errno));
                    return WEFT_EXIT_USAGE;
                }
            } else {
                cli_error("--points: expected none, shared, all or pcs:FILE, got '%s'", optarg);
                return WEFT_EXIT_USAGE;
            }
            break;
        case OPT_STARVATION: {
            char *end;
            errno = 0;
            c.starvation = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(c.starvation >= 0 && c.starvation < 1)) {
                cli_error("--starvation: expected a probability in [0, 1), got '%s'", optarg);
                return WEFT_EXIT_USAGE;
            }
            break;
        }
        case OPT_HOSTPAR:
            c.host_parallel = 1;
            break;
        case OPT_SEED:
            if (cli_parse_u64("--seed", optarg, 0, UINT64_MAX, &c.first_seed))
                return WEFT_EXIT_USAGE;
            c.seed_given = 1;
            break;
        case 'n':
            if (cli_parse_u64("--runs", optarg, 1, UINT64_C(1) << 40, &c.runs))
                return WEFT_EXIT_USAGE;
            runs_given = 1;
            break;
        case OPT_FIRST:
            if (cli_parse_u64("--first-seed", optarg, 0, UINT64_MAX / 2, &c.first_seed))
                return WEFT_EXIT_USAGE;
            first_given = 1;
            break;
        case 'j':
            if (cli_parse_u64("--jobs", optarg, 1, 1024, &x))
                return WEFT_EXIT_USAGE;
            c.jobs = (unsigned)x;
            jobs_given = 1;
            break;
        case 't':
            if (cli_parse_u64("--timeout", optarg, 1, 86400 * 7, &x))
                return WEFT_EXIT_USAGE;
            c.timeout = (unsigned)x;
            break;
        case OPT_EXPECT_EXIT:
            if (cli_parse_u64("--expect-exit", optarg, 0, 255, &x))
                return WEFT_EXIT_USAGE;
            c.expect_exit = (int)x;
            break;
        case OPT_EXPECT_OUTPUT:
            if (access(optarg, R_OK) != 0) {
                cli_error("--expect-output %s: %s", optarg, strerror(errno));
                return WEFT_EXIT_USAGE;
            }
            c.expect_output = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case OPT_RESUME:
            c.resume = 1;
            break;
        case OPT_SAVE:
            c.save_trace = 1;
            break;
        case OPT_STOP:
            c.stop_on_hit = 1;
            break;
        case OPT_SYSROOT:
            c.run.sysroot = optarg;
            break;
        case 'q':
            c.quiet = 1;
            break;
        case OPT_SUMMARY:
            return summary_only(optarg);
        case OPT_SHARD:
            if (parse_shard(optarg, &shard))
                return WEFT_EXIT_USAGE;
            shard_given = 1;
            break;
        case 'h':
            replay_usage(stdout);
            return WEFT_EXIT_OK;
        default:
            return WEFT_EXIT_USAGE; /* getopt printed the reason */
        }
    }
    if (optind >= argc) {
        cli_error("replay: no program given (weft replay [options] -- PROGRAM [ARGS])");
        return WEFT_EXIT_USAGE;
    }
    if (c.seed_given && (runs_given || first_given)) {
        cli_error("--seed runs one seed: use --runs N --first-seed S for a campaign");
        return WEFT_EXIT_USAGE;
    }
    if (c.seed_given && shard_given) {
        cli_error("--shard splits a campaign (--runs), not a --seed run");
        return WEFT_EXIT_USAGE;
    }
    if (c.seed_given && c.resume) {
        cli_error("--resume continues a campaign (--runs), not a --seed run");
        return WEFT_EXIT_USAGE;
    }
    if (radius_given && c.kind != PCT_KIND_RPRO) {
        cli_error("--radius: only for --sched rpro");
        return WEFT_EXIT_USAGE;
    }
    if (c.host_parallel && c.kind != PCT_KIND_PPCT) {
        cli_error("--host-parallel: only for --sched ppct");
        return WEFT_EXIT_USAGE;
    }
    if (c.k_given && radius_given && c.radius > c.k) {
        cli_error("--radius %" PRIu64 ": larger than the step budget k = %" PRIu64, c.radius, c.k);
        return WEFT_EXIT_USAGE;
    }
    if (c.seed_given)
        c.jobs = 1;
    char def_out[64];
    if (!out) {
        if (c.seed_given)
            snprintf(def_out, sizeof def_out, "weft-replay-seed-%" PRIu64, c.first_seed);
        else if (shard_given)
            snprintf(def_out, sizeof def_out, "weft-replay-shard-%" PRIu64 "-of-%" PRIu64,
                     shard.index, shard.count);
        else
            snprintf(def_out, sizeof def_out, "weft-replay");
        out = def_out;
    }
    c.run.binary = argv[optind];
    c.run.argv = argv + optind;
    c.run.argc = argc - optind;
    /* The program first: a bad one leaves no output folder behind. */
    if (guest_check_binary(c.run.binary, c.run.sysroot))
        return WEFT_EXIT_FAIL;
    if (weft_mkdirs(out) || !realpath(out, c.out_dir))
        return WEFT_EXIT_FAIL;
    if (strchr(c.out_dir, ',') || strchr(c.pcs_path, ',')) {
        cli_error("%s: commas are not allowed in the paths weft hands to the tracer",
                  strchr(c.out_dir, ',') ? c.out_dir : c.pcs_path);
        return WEFT_EXIT_USAGE;
    }
    if (c.resume && load_campaign(&c, runs_given, first_given, radius_given, &shard))
        return WEFT_EXIT_USAGE;
    if (shard_given && apply_shard(&c, &shard))
        return WEFT_EXIT_USAGE;
    if (!c.resume || (c.points == POINTS_SHARED && !c.pcs_path[0]))
        if (replay_profile(&c))
            return WEFT_EXIT_FAIL;
    if (c.kind == PCT_KIND_RPRO && !radius_given && !c.resume)
        c.radius = c.k < DEFAULT_RADIUS ? c.k : DEFAULT_RADIUS;
    if (c.kind != PCT_KIND_RPRO)
        c.radius = 1;
    /* The policy's own check (depth against k, radius against k and depth). */
    pct_config cfg;
    pct_config_init(&cfg, c.kind);
    cfg.n = (uint32_t)c.n;
    cfg.k = c.k;
    cfg.d = (uint32_t)c.depth;
    cfg.r = c.radius;
    if (c.starvation >= 0)
        cfg.starvation = c.starvation;
    char err[256];
    if (pct_config_check(&cfg, err, sizeof err)) {
        cli_error("%s%s", err, c.k_given ? "" : " (k measured by the profiling run)");
        return WEFT_EXIT_USAGE;
    }
    printf("weft: %s, depth %" PRIu64, pct_kind_name(c.kind), c.depth);
    if (c.kind == PCT_KIND_RPRO)
        printf(", radius %" PRIu64 "%s", c.radius, radius_given ? "" : " (default)");
    printf(", k = %" PRIu64 ", n = %" PRIu64 ", points %s", c.k, c.n, replay_points_name(c.points));
    if (c.points == POINTS_SHARED || c.points == POINTS_PCS)
        printf(" (%s)", c.pcs_path);
    printf(", starvation %g%s, timeout %u s", cfg.starvation, c.starvation < 0 ? " (default)" : "",
           c.timeout);
    if (c.seed_given)
        printf(", seed %" PRIu64 "\n", c.first_seed);
    else
        printf(", seeds %" PRIu64 "..%" PRIu64 "%s, %u job%s%s\n", c.first_seed,
               c.first_seed + c.runs - 1, runs_given ? "" : " (one run: --runs N for a campaign)",
               c.jobs, c.jobs == 1 ? "" : "s", jobs_given ? "" : " (default)");
    if (c.host_parallel)
        printf("weft: --host-parallel: runs are not reproducible by seed\n");
    if (shard.index)
        printf("weft: shard %" PRIu64 "/%" PRIu64 " of seeds %" PRIu64 "..%" PRIu64 "\n",
               shard.index, shard.count, shard.first_seed, shard.first_seed + shard.runs - 1);
    if (write_campaign(&c, &shard))
        return WEFT_EXIT_FAIL;
    return replay_campaign(&c);
}
