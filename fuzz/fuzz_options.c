/* libFuzzer harness for weft's command lines: cli_parse (cli/options.c)
 * with the option table of every subcommand, as `weft CMD ARGS...` would
 * call it, without running the command.
 *
 * Input: the first byte picks the command (cli_commands, modulo their
 * number); the rest is its arguments, separated by NUL bytes (at most
 * MAX_ARGS). Checks, besides no crash: cli_parse returns 0, 1 or -1; -1
 * comes with exactly one line on stderr, "weft CMD: ..." or "weft: ...",
 * and nothing else; 1 (the help) prints to stdout; 0 leaves the operands,
 * each an argument that was given, once, in order, from *first to argc,
 * none of them an option unless it came after "--" (or, for a command that
 * stops at its first operand, after that operand), every given CLI_U64
 * option's value in its range and every given CLI_STRING option's value
 * non-empty. On success stderr may only hold deprecation warnings. */
#include "fuzz_common.h"

#include "cli.h"

#define MAX_ARGS 64
/* Larger than every command's options struct (the biggest, replay's,
 * holds two PATH_MAX buffers): cli_parse writes through the table's
 * offsets and the custom parsers into the struct. */
#define OPTS_SIZE 65536

static _Alignas(64) unsigned char opts[OPTS_SIZE];

/* A deprecation warning: "weft CMD: warning: X is deprecated, use Y". */
static int is_warning(const char *line, size_t len)
{
    const char *w = memmem(line, len, ": warning: ", 11);
    return w && memmem(line, len, " is deprecated, use ", 20);
}

/* Lines on stderr that are not deprecation warnings. */
static size_t error_lines(const char *s, size_t len, const char **first, size_t *first_len)
{
    size_t n = 0;
    *first = NULL;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(s + i, '\n', len - i);
        size_t l = nl ? (size_t)(nl - (s + i)) + 1 : len - i;
        if (!is_warning(s + i, l)) {
            if (!n++) {
                *first = s + i;
                *first_len = l;
            }
        }
        i += l;
    }
    return n;
}

static int looks_like_option(const char *a)
{
    return a[0] == '-' && a[1] != 0;
}

static void check_accepted(const cli_command *cmd, int argc, char **given, char **argv, int first,
                           cli_seen seen)
{
    FUZZ_CHECK(first >= 1 && first <= argc, "first operand %d of %d", first, argc);
    /* The end of the options: "--", or for stop_at_operand the first operand. */
    int dashdash = argc;
    for (int i = 1; i < argc; i++)
        if (!strcmp(given[i], "--")) {
            dashdash = i;
            break;
        }
    int prev = 0;
    for (int k = first; k < argc; k++) {
        int at = -1;
        for (int i = prev + 1; i < argc && at < 0; i++)
            if (argv[k] == given[i])
                at = i;
        FUZZ_CHECK(at > 0, "operand %d is not an argument given after the previous one", k);
        int options_over = at > dashdash || (cmd->stop_at_operand && k > first);
        FUZZ_CHECK(options_over || !looks_like_option(given[at]), "option '%s' taken as an operand",
                   given[at]);
        FUZZ_CHECK(strcmp(given[at], "--") || at != dashdash || options_over,
                   "the \"--\" that ends the options is an operand");
        prev = at;
    }
    for (size_t i = 0; i < cmd->nopts; i++) {
        if (!(seen >> i & 1))
            continue;
        const cli_option *o = &cmd->opts[i];
        const unsigned char *field = opts + o->off;
        if (o->type == CLI_U64) {
            uint64_t v;
            memcpy(&v, field, sizeof v);
            FUZZ_CHECK(v >= o->lo && v <= o->hi, "--%s: %llu outside [%llu, %llu]",
                       o->name ? o->name : "?", (unsigned long long)v, (unsigned long long)o->lo,
                       (unsigned long long)o->hi);
        } else if (o->type == CLI_STRING) {
            const char *v;
            memcpy(&v, field, sizeof v);
            FUZZ_CHECK(v && *v, "--%s: empty value accepted", o->name ? o->name : "?");
        } else if (o->type == CLI_FLAG) {
            int v;
            memcpy(&v, field, sizeof v);
            FUZZ_CHECK(v == 1, "flag --%s not set", o->name ? o->name : "?");
        }
    }
    FUZZ_CHECK(cmd->nopts >= 64 || (seen >> cmd->nopts) == 0, "seen bits beyond the table");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const cli_command *cmd = cli_commands[data[0] % cli_ncommands];
    for (size_t i = 0; i < cmd->nopts; i++)
        FUZZ_CHECK(cmd->opts[i].off + 8 <= OPTS_SIZE, "options struct larger than the harness's");

    /* argv as main gets it: NUL-terminated strings, argv[argc] = NULL. */
    char *text = malloc(size);
    FUZZ_CHECK(text, "out of memory");
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    char *given[MAX_ARGS + 2], *argv[MAX_ARGS + 2];
    int argc = 0;
    given[argc++] = (char *)cmd->name;
    for (size_t i = 0; i < size - 1 && argc <= MAX_ARGS;) {
        given[argc++] = text + i;
        i += strlen(text + i) + 1;
    }
    given[argc] = NULL;
    memcpy(argv, given, sizeof argv[0] * (size_t)(argc + 1));

    memset(opts, 0, sizeof opts);
    int first = -1;
    cli_seen seen = 0;
    fz_capture cap;
    fz_capture_begin(&cap);
    int rc = cli_parse(cmd, argc, argv, opts, &first, &seen);
    fz_capture_end(&cap);

    const char *line;
    size_t line_len = 0;
    size_t errors = error_lines(cap.err, cap.err_len, &line, &line_len);
    if (rc == -1) {
        FUZZ_CHECK(fz_count_lines(cap.err, cap.err_len) == 1, "%zu lines on a bad command line: %s",
                   fz_count_lines(cap.err, cap.err_len), cap.err);
        FUZZ_CHECK(fz_is_one_line(cap.err, cap.err_len), "error not one line: '%s'", cap.err);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "weft %s: ", cmd->name);
        FUZZ_CHECK(!strncmp(cap.err, prefix, strlen(prefix)) || !strncmp(cap.err, "weft: ", 6),
                   "error does not start with weft: '%s'", cap.err);
        FUZZ_CHECK(cap.out_len == 0, "a bad command line printed to stdout");
    } else if (rc == 1) {
        FUZZ_CHECK(errors == 0, "help with an error: %s", cap.err);
        FUZZ_CHECK(cap.out_len > 0, "help printed nothing");
    } else {
        FUZZ_CHECK(rc == 0, "cli_parse returned %d", rc);
        FUZZ_CHECK(errors == 0, "accepted with an error: %.*s", (int)line_len, line);
        FUZZ_CHECK(cap.out_len == 0, "an accepted command line printed to stdout");
        check_accepted(cmd, argc, given, argv, first, seen);
    }
    fz_capture_free(&cap);
    free(text);
    return 0;
}
