/* Reading and validating injection plans. Every error is one line naming the
 * file and the JSON path of the offending value, e.g.
 *   plan.json: injections[2].delay_ns: must be a non-negative integer */
#include "model_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

typedef struct pctx {
    const char *name;
    char *err;
    size_t errlen;
} pctx;

static int perr(pctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int perr(pctx *c, const char *path, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return optimizer_fail(c->err, c->errlen, "%s: %s: %s", c->name, path, msg);
}

static void join(char *out, size_t n, const char *base, const char *key)
{
    if (*base)
        snprintf(out, n, "%s.%s", base, key);
    else
        snprintf(out, n, "%s", key);
}

/* Objects are closed: an unknown key is more likely a typo than an extension
 * (extensions bump the version). */
static int check_keys(pctx *c, json_t *o, const char *base, const char *const *allowed)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        int ok = 0;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = strcmp(k, allowed[i]) == 0;
        if (!ok) {
            char p[256];
            join(p, sizeof p, base, k);
            return perr(c, p, "unknown key");
        }
    }
    return 0;
}

static json_t *member(pctx *c, json_t *o, const char *base, const char *key, int optional,
                      char *path, size_t pathlen)
{
    join(path, pathlen, base, key);
    json_t *v = json_object_get(o, key);
    if (!v && !optional)
        perr(c, path, "missing");
    return v;
}

static int get_object(pctx *c, json_t *o, const char *base, const char *key, json_t **out)
{
    char p[256];
    json_t *v = member(c, o, base, key, 0, p, sizeof p);
    if (!v)
        return -1;
    if (!json_is_object(v))
        return perr(c, p, "must be an object");
    *out = v;
    return 0;
}

static int get_uint(pctx *c, json_t *o, const char *base, const char *key, uint64_t max,
                    uint64_t *out)
{
    char p[256];
    json_t *v = member(c, o, base, key, 0, p, sizeof p);
    if (!v)
        return -1;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return perr(c, p, "must be a non-negative integer");
    uint64_t x = (uint64_t)json_integer_value(v);
    if (x > max)
        return perr(c, p, "must be at most %" PRIu64, max);
    *out = x;
    return 0;
}

/* nullable: JSON null (or absence) gives NULL. */
static int get_string(pctx *c, json_t *o, const char *base, const char *key, int nullable,
                      char **out)
{
    char p[256];
    json_t *v = member(c, o, base, key, nullable, p, sizeof p);
    *out = NULL;
    if (!v)
        return nullable ? 0 : -1;
    if (nullable && json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return perr(c, p, nullable ? "must be a string or null" : "must be a string");
    *out = strdup(json_string_value(v));
    return *out ? 0 : perr(c, p, "out of memory");
}

static int get_hex(pctx *c, json_t *o, const char *base, const char *key, uint64_t *out)
{
    char p[256];
    json_t *v = member(c, o, base, key, 0, p, sizeof p);
    if (!v)
        return -1;
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    size_t n = s ? strlen(s) : 0;
    if (!s || n < 3 || n > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') ||
        strspn(s + 2, "0123456789abcdefABCDEF") != n - 2)
        return perr(c, p, "must be a hex string like \"0x400a10\"");
    *out = strtoull(s + 2, NULL, 16);
    return 0;
}

static int parse_program(pctx *c, json_t *root, optimizer_plan *p)
{
    static const char *const keys[] = {"path", "build_id", "argv", NULL};
    json_t *o = NULL;
    if (get_object(c, root, "", "program", &o) < 0 || check_keys(c, o, "program", keys) < 0 ||
        get_string(c, o, "program", "path", 0, &p->program) < 0 ||
        get_string(c, o, "program", "build_id", 0, &p->build_id) < 0)
        return -1;
    size_t n = strlen(p->build_id);
    if (n % 2 || strspn(p->build_id, "0123456789abcdef") != n)
        return perr(c, "program.build_id", "must be lower-case hex digits (or \"\")");
    char path[64];
    json_t *a = member(c, o, "program", "argv", 0, path, sizeof path);
    if (!a)
        return -1;
    if (!json_is_array(a))
        return perr(c, path, "must be an array of strings");
    size_t na = json_array_size(a);
    if (na > UINT32_MAX)
        return perr(c, path, "too many arguments");
    p->argv = calloc(na ? na : 1, sizeof *p->argv);
    if (!p->argv)
        return perr(c, path, "out of memory");
    for (size_t i = 0; i < na; i++) {
        json_t *s = json_array_get(a, i);
        snprintf(path, sizeof path, "program.argv[%zu]", i);
        if (!json_is_string(s))
            return perr(c, path, "must be a string");
        if (!(p->argv[i] = strdup(json_string_value(s))))
            return perr(c, path, "out of memory");
        p->argc = (uint32_t)(i + 1);
    }
    return 0;
}

static int parse_settings(pctx *c, json_t *root, optimizer_plan *p)
{
    static const char *const pkeys[] = {"mode", "cpi", "ps_per_cycle", NULL};
    static const char *const skeys[] = {"algorithm", "seed", "dmax", "evaluations", NULL};
    static const char *const algorithms[] = {"rnd", "shc", "sa", "exact", "manual", NULL};
    json_t *o = NULL;
    uint64_t v;
    if (get_object(c, root, "", "platform", &o) < 0 || check_keys(c, o, "platform", pkeys) < 0 ||
        get_string(c, o, "platform", "mode", 0, &p->mode) < 0)
        return -1;
    if (strcmp(p->mode, "exact") != 0 && strcmp(p->mode, "free") != 0)
        return perr(c, "platform.mode", "must be \"exact\" or \"free\"");
    if (get_uint(c, o, "platform", "cpi", UINT32_MAX, &v) < 0)
        return -1;
    if (v == 0)
        return perr(c, "platform.cpi", "must be a positive integer");
    p->cpi = (uint32_t)v;
    if (get_uint(c, o, "platform", "ps_per_cycle", INT64_MAX, &p->ps_per_cycle) < 0)
        return -1;
    if (p->ps_per_cycle == 0)
        return perr(c, "platform.ps_per_cycle", "must be a positive integer");
    if (get_object(c, root, "", "search", &o) < 0 || check_keys(c, o, "search", skeys) < 0 ||
        get_string(c, o, "search", "algorithm", 0, &p->algorithm) < 0)
        return -1;
    int known = 0;
    for (size_t i = 0; algorithms[i] && !known; i++)
        known = strcmp(p->algorithm, algorithms[i]) == 0;
    if (!known)
        return perr(c, "search.algorithm", "must be one of rnd, shc, sa, exact, manual");
    return get_uint(c, o, "search", "seed", INT64_MAX, &p->seed) < 0 ||
                   get_uint(c, o, "search", "dmax", INT64_MAX, &p->dmax) < 0 ||
                   get_uint(c, o, "search", "evaluations", INT64_MAX, &p->evaluations) < 0
               ? -1
               : 0;
}

static int parse_predicted(pctx *c, json_t *o, const char *base, optimizer_predicted *q)
{
    static const char *const keys[] = {"thread_a", "seq_a", "thread_b", "seq_b",
                                       "address",  "time",  "nudge_ns", NULL};
    uint64_t ta, tb;
    if (check_keys(c, o, base, keys) < 0 || get_uint(c, o, base, "thread_a", UINT32_MAX, &ta) < 0 ||
        get_uint(c, o, base, "seq_a", INT64_MAX, &q->seq_a) < 0 ||
        get_uint(c, o, base, "thread_b", UINT32_MAX, &tb) < 0 ||
        get_uint(c, o, base, "seq_b", INT64_MAX, &q->seq_b) < 0 ||
        get_hex(c, o, base, "address", &q->address) < 0 ||
        get_uint(c, o, base, "time", INT64_MAX, &q->time) < 0)
        return -1;
    q->nudge = 0;
    if (json_object_get(o, "nudge_ns") &&
        get_uint(c, o, base, "nudge_ns", INT64_MAX, &q->nudge) < 0)
        return -1;
    q->thread_a = (uint32_t)ta;
    q->thread_b = (uint32_t)tb;
    return 0;
}

static int parse_injection(pctx *c, json_t *o, const char *base, const optimizer_plan *p,
                           const optimizer_plan_limits *lim, optimizer_injection *j)
{
    static const char *const keys[] = {"thread",   "seq",         "pc",        "function",
                                       "file",     "line",        "variable",  "offset",
                                       "delay_ns", "delay_insns", "predicted", NULL};
    char path[256];
    uint64_t v;
    if (!json_is_object(o))
        return perr(c, base, "must be an object");
    if (check_keys(c, o, base, keys) < 0 || get_uint(c, o, base, "thread", UINT32_MAX, &v) < 0)
        return -1;
    j->thread = (uint32_t)v;
    if (lim && lim->nthreads && j->thread >= lim->nthreads) {
        join(path, sizeof path, base, "thread");
        return perr(c, path, "thread %" PRIu32 " does not exist (the trace has %" PRIu32 ")",
                    j->thread, lim->nthreads);
    }
    if (get_uint(c, o, base, "seq", INT64_MAX, &j->seq) < 0)
        return -1;
    if (lim && lim->nthreads && lim->events && j->seq >= lim->events[j->thread]) {
        join(path, sizeof path, base, "seq");
        return perr(c, path,
                    "event %" PRIu64 " is out of range (thread %" PRIu32 " has %" PRIu64 " events)",
                    j->seq, j->thread, lim->events[j->thread]);
    }
    if (get_hex(c, o, base, "pc", &j->pc) < 0 ||
        get_string(c, o, base, "function", 1, &j->function) < 0 ||
        get_string(c, o, base, "file", 1, &j->file) < 0 ||
        get_string(c, o, base, "variable", 1, &j->variable) < 0)
        return -1;
    json_t *line = member(c, o, base, "line", 1, path, sizeof path);
    if (line && !json_is_null(line)) {
        if (!json_is_integer(line) || json_integer_value(line) < 1 ||
            json_integer_value(line) > UINT32_MAX)
            return perr(c, path, "must be a positive integer or null");
        j->line = (uint32_t)json_integer_value(line);
    }
    if (get_uint(c, o, base, "offset", INT64_MAX, &j->offset) < 0 ||
        get_uint(c, o, base, "delay_ns", INT64_MAX, &j->delay_ns) < 0 ||
        get_uint(c, o, base, "delay_insns", INT64_MAX, &j->delay_insns) < 0)
        return -1;
    uint64_t want = optimizer_delay_insns(j->delay_ns, p->cpi, p->ps_per_cycle);
    if (j->delay_insns != want) {
        join(path, sizeof path, base, "delay_insns");
        return perr(c, path, "is %" PRIu64 " but delay_ns*1000/(cpi*ps_per_cycle) = %" PRIu64,
                    j->delay_insns, want);
    }
    json_t *pr = member(c, o, base, "predicted", 1, path, sizeof path);
    if (pr && !json_is_null(pr)) {
        if (!json_is_object(pr))
            return perr(c, path, "must be an object or null");
        if (parse_predicted(c, pr, path, &j->predicted) < 0)
            return -1;
        j->has_predicted = 1;
    }
    return 0;
}

static int parse_root(pctx *c, json_t *root, const optimizer_plan_limits *lim, optimizer_plan *p)
{
    static const char *const keys[] = {"format", "version",    "program", "platform",
                                       "search", "injections", NULL};
    if (!json_is_object(root))
        return perr(c, "(top level)", "must be an object");
    json_t *f = json_object_get(root, "format");
    if (!f)
        return perr(c, "format", "missing (is this a weft plan?)");
    if (!json_is_string(f) || strcmp(json_string_value(f), "weft-plan") != 0)
        return perr(c, "format", "must be \"weft-plan\"");
    uint64_t version;
    if (get_uint(c, root, "", "version", INT64_MAX, &version) < 0)
        return -1;
    if (version != OPTIMIZER_PLAN_VERSION)
        return perr(c, "version", "unsupported version %" PRIu64 " (this weft reads %d)", version,
                    OPTIMIZER_PLAN_VERSION);
    if (check_keys(c, root, "", keys) < 0 || parse_program(c, root, p) < 0 ||
        parse_settings(c, root, p) < 0)
        return -1;
    char path[64];
    json_t *a = member(c, root, "", "injections", 0, path, sizeof path);
    if (!a)
        return -1;
    if (!json_is_array(a))
        return perr(c, path, "must be an array");
    size_t n = json_array_size(a);
    p->injections = calloc(n ? n : 1, sizeof *p->injections);
    if (!p->injections)
        return perr(c, path, "out of memory");
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "injections[%zu]", i);
        /* Counted before parsing so a half-filled entry is freed too. */
        p->ninjections = i + 1;
        if (parse_injection(c, json_array_get(a, i), path, p, lim, &p->injections[i]) < 0)
            return -1;
    }
    return 0;
}

/* Errors quote the plan (keys, strings, jansson's "near '...'"), which may
 * hold newlines or other control characters: keep the message on one line. */
static int one_line(char *err, size_t errlen)
{
    for (char *q = err; errlen && *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            *q = ' ';
    return -1;
}

int optimizer_plan_parse(const char *text, const char *name, const optimizer_plan_limits *lim,
                         optimizer_plan *out, char *err, size_t errlen)
{
    pctx c = {.name = name, .err = err, .errlen = errlen};
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        optimizer_fail(err, errlen, "%s: line %d column %d: %s", name, je.line, je.column, je.text);
        return one_line(err, errlen);
    }
    int rc = parse_root(&c, root, lim, out);
    json_decref(root);
    if (rc < 0) {
        optimizer_plan_free(out);
        one_line(err, errlen);
    }
    return rc;
}

int optimizer_plan_read(const char *path, const optimizer_plan_limits *lim, optimizer_plan *out,
                        char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) /* fopen would open it, fread fail */
        return optimizer_fail(err, errlen, "%s: is a directory", path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return optimizer_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *b = realloc(buf, 2 * cap);
        if (!b) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = b, cap *= 2;
    }
    int rd = ferror(f);
    fclose(f);
    if (!buf)
        return optimizer_fail(err, errlen, "%s: out of memory", path);
    if (rd) {
        free(buf);
        return optimizer_fail(err, errlen, "%s: read error", path);
    }
    buf[n] = 0;
    if (memchr(buf, 0, n)) {
        free(buf);
        return optimizer_fail(err, errlen, "%s: not a JSON text (contains NUL bytes)", path);
    }
    int rc = optimizer_plan_parse(buf, path, lim, out, err, errlen);
    free(buf);
    return rc;
}

int optimizer_plan_check_build_id(const optimizer_plan *p, const char *name, const uint8_t *id,
                                  size_t len, char *err, size_t errlen)
{
    char hexid[2 * 64 + 1];
    if (len > 64)
        len = 64;
    for (size_t i = 0; i < len; i++)
        snprintf(hexid + 2 * i, 3, "%02x", id[i]);
    hexid[2 * len] = 0;
    const char *want = p->build_id ? p->build_id : "";
    if (strcmp(want, hexid) == 0)
        return 0;
    optimizer_fail(err, errlen,
                   "%s: program.build_id: plan is for build-id \"%s\" but %s has \"%s\"", name,
                   want, p->program ? p->program : "the binary", hexid);
    return one_line(err, errlen);
}
