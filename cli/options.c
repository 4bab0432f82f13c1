/* The option tables of weft's subcommands: getopt, --help and errors from
 * one description (options.h). */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* One line even when it quotes an argument holding a newline. */
void cli_usage_error(const cli_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0) {
        weft_error("out of memory");
        return;
    }
    weft_one_line(msg);
    fprintf(stderr, "weft %s: %s (see weft %s --help)\n", cmd->name, msg, cmd->name);
    free(msg);
}

/* Warnings held until the whole command line has parsed: a bad one is one
 * line, its error, even after an old spelling. */
static char pending[1024];
static size_t npending;

void cli_warning(const cli_command *cmd, const char *fmt, ...)
{
    char line[512];
    int n = snprintf(line, sizeof line, "weft %s: warning: ", cmd->name);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    weft_one_line(line);
    size_t len = strlen(line);
    if (npending + len + 1 <= sizeof pending) {
        memcpy(pending + npending, line, len);
        npending += len;
        pending[npending++] = '\n';
    }
}

int cli_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-')
        return -1;
    unsigned shift = 0;
    if (*end && !end[1]) {
        const char *u = strchr("kKmMgGtT", *end);
        if (!u)
            return -1;
        shift = 10 * (unsigned)(1 + (u - "kKmMgGtT") / 2);
        end++;
    }
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

int cli_parse_u64(const cli_command *cmd, const char *opt, const char *s, uint64_t lo, uint64_t hi,
                  uint64_t *out)
{
    char *end;
    if (s && *s >= '0' && *s <= '9') {
        unsigned long long x = strtoull(s, &end, 10);
        if (!*end && x >= lo && x <= hi) {
            *out = x;
            return 0;
        }
    }
    cli_usage_error(cmd, "%s: expected a number from %llu to %llu, got '%s'", opt,
                    (unsigned long long)lo, (unsigned long long)hi, s ? s : "");
    return -1;
}

/* "-x, --name METAVAR" as the help shows it. */
static void option_label(const cli_option *o, char *buf, size_t len)
{
    int n = o->letter ? snprintf(buf, len, "-%c, --%s", o->letter, o->name)
                      : snprintf(buf, len, "    --%s", o->name);
    if (o->metavar && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " %s", o->metavar);
}

void cli_help(const cli_command *cmd, FILE *out)
{
    fprintf(out, "usage: weft %s %s\n\n%s\n", cmd->name, cmd->usage, cmd->about);
    fprintf(out, "options:\n");
    size_t width = strlen("-h, --help");
    char label[128];
    for (size_t i = 0; i < cmd->nopts; i++) {
        if (cmd->opts[i].deprecated)
            continue;
        option_label(&cmd->opts[i], label, sizeof label);
        width = strlen(label) > width ? strlen(label) : width;
    }
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_option *o = &cmd->opts[i];
        if (o->deprecated)
            continue;
        option_label(o, label, sizeof label);
        fprintf(out, "  %-*s  ", (int)width, label);
        for (const char *h = o->help; *h;) {
            size_t n = strcspn(h, "\n");
            fprintf(out, "%.*s\n", (int)n, h);
            h += n;
            if (*h == '\n' && *++h)
                fprintf(out, "  %-*s  ", (int)width, "");
        }
    }
    fprintf(out, "  %-*s  %s\n", (int)width, "-h, --help", "this help");
    if (cmd->footer && *cmd->footer)
        fprintf(out, "\n%s", cmd->footer);
}

/* An old spelling of an option fills the same field the same way. */
static int same_option(const cli_option *a, const cli_option *b)
{
    return a->type == b->type && a->off == b->off && a->parse == b->parse;
}

int cli_given(const cli_command *cmd, cli_seen seen, const char *name)
{
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_option *o = &cmd->opts[i];
        if (!o->name || strcmp(o->name, name))
            continue;
        for (size_t j = 0; j < cmd->nopts; j++)
            if ((seen >> j & 1) &&
                (j == i || (cmd->opts[j].deprecated && same_option(&cmd->opts[j], o))))
                return 1;
    }
    return 0;
}

/* The spelling the user typed, for messages: "--name" or "-x". */
static void spelled(const cli_option *o, int by_letter, char *buf, size_t len)
{
    if (by_letter || !o->name)
        snprintf(buf, len, "-%c", o->letter);
    else
        snprintf(buf, len, "--%s", o->name);
}

static int apply(const cli_command *cmd, const cli_option *o, int by_letter, const char *arg,
                 void *opts)
{
    char opt[80];
    spelled(o, by_letter, opt, sizeof opt);
    char *field = (char *)opts + o->off;
    int rc = -1;
    switch (o->type) {
    case CLI_FLAG:
        *(int *)(void *)field = 1;
        rc = 0;
        break;
    case CLI_U64:
        rc = cli_parse_u64(cmd, opt, arg, o->lo, o->hi, (uint64_t *)(void *)field);
        break;
    case CLI_STRING:
        if (!*arg) {
            cli_usage_error(cmd, "%s: expected %s, got nothing", opt,
                            o->metavar ? o->metavar : "a value");
            break;
        }
        *(const char **)(void *)field = arg;
        rc = 0;
        break;
    case CLI_CUSTOM:
        rc = o->parse(cmd, arg, opts);
        break;
    }
    if (rc == 0 && o->deprecated)
        cli_warning(cmd, "%s is deprecated, use %s", opt, o->deprecated);
    return rc;
}

/* getopt's short-option string and long table from the command's options;
 * long option i has val 256 + i, so a long name maps back to its entry. */
static void build_getopt(const cli_command *cmd, char *shorts, struct option *longs)
{
    size_t k = 0, nl = 0;
    shorts[k++] = cmd->stop_at_operand ? '+' : '-';
    shorts[k++] = ':'; /* a missing argument comes back as ':', not '?' */
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_option *o = &cmd->opts[i];
        if (o->name)
            longs[nl++] = (struct option){
                o->name, o->type == CLI_FLAG ? no_argument : required_argument, NULL, 256 + (int)i};
        if (o->letter) {
            shorts[k++] = o->letter;
            if (o->type != CLI_FLAG)
                shorts[k++] = ':';
        }
    }
    shorts[k++] = 'h';
    shorts[k] = 0;
    longs[nl++] = (struct option){"help", no_argument, NULL, 'h'};
    longs[nl] = (struct option){0, 0, 0, 0};
}

static int by_letter(const cli_command *cmd, int c)
{
    for (size_t i = 0; i < cmd->nopts; i++)
        if (cmd->opts[i].letter == c)
            return (int)i;
    return -1;
}

/* One option character from getopt_long: 0 to go on, 1 after the help, -1
 * after an error. */
static int one_option(const cli_command *cmd, int c, char **argv, void *opts, cli_seen *seen)
{
    if (c == 'h') {
        cli_help(cmd, stdout);
        return 1;
    }
    if (c == ':') {
        cli_usage_error(cmd, "%s needs a value", argv[optind - 1]);
        return -1;
    }
    int i = c >= 256 ? c - 256 : by_letter(cmd, c);
    if (c == '?' || i < 0) {
        if (optopt > 0 && optopt < 256)
            cli_usage_error(cmd, "unknown option '-%c'", optopt);
        else
            cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        return -1;
    }
    *seen |= (cli_seen)1 << i;
    return apply(cmd, &cmd->opts[i], c < 256, optarg, opts) ? -1 : 0;
}

/* A program's argument spelled as one of the command's own options: a
 * reproduce line with --explain appended ran the program with --explain
 * and said nothing (a helper's run). The program may take it: a note. */
static void note_own_option_after(const cli_command *cmd, int argc, char **argv, int from)
{
    for (int j = from; j < argc; j++) {
        if (strncmp(argv[j], "--", 2) || !argv[j][2])
            continue;
        size_t len = strcspn(argv[j] + 2, "=");
        for (size_t i = 0; i < cmd->nopts; i++) {
            const char *name = cmd->opts[i].name;
            if (name && strlen(name) == len && !strncmp(argv[j] + 2, name, len)) {
                fprintf(stderr,
                        "weft: note: %s after the program is the program's argument; weft %s's "
                        "options go before --\n",
                        argv[j], cmd->name);
                return;
            }
        }
    }
}

int cli_parse(const cli_command *cmd, int argc, char **argv, void *opts, int *first, cli_seen *seen)
{
    if (cmd->nopts > CLI_MAX_OPTIONS)
        abort(); /* the seen mask and the tables below are sized for this */
    char shorts[3 * CLI_MAX_OPTIONS + 8];
    struct option longs[CLI_MAX_OPTIONS + 2];
    build_getopt(cmd, shorts, longs);
    /* With '-' first, getopt hands operands back in order as option 1 and
     * leaves argv unpermuted; they are put back just before what follows
     * "--", where the options were. */
    char **ops = calloc((size_t)argc + 1, sizeof *ops);
    if (!ops) {
        weft_error("out of memory");
        return -1;
    }
    int nops = 0, c, rc = 0;
    *seen = 0;
    npending = 0;
    optind = 0;
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        if (c == 1)
            ops[nops++] = optarg;
        else
            rc = one_option(cmd, c, argv, opts, seen);
    }
    if (rc == 0) {
        int k = optind - nops; /* options and operands took at least this room */
        memcpy(argv + k, ops, (size_t)nops * sizeof *argv);
        *first = k;
        if (cmd->stop_at_operand) /* the program, then its arguments */
            note_own_option_after(cmd, argc, argv, k + 1);
    }
    if (rc >= 0)
        fwrite(pending, 1, npending, stderr);
    npending = 0;
    free(ops);
    return rc;
}

const cli_command *cli_find_command(const char *name)
{
    for (size_t i = 0; i < cli_ncommands; i++)
        if (!strcmp(cli_commands[i]->name, name))
            return cli_commands[i];
    return NULL;
}
