/* weft completion bash: a bash completion script made from the same option
 * tables the commands parse with, so it never offers an option a command
 * does not take. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void bash_words(const cli_command *cmd, FILE *out)
{
    fputs("--help", out);
    for (size_t i = 0; i < cmd->nopts; i++) {
        const cli_option *o = &cmd->opts[i];
        if (o->deprecated)
            continue;
        fprintf(out, " --%s", o->name);
        if (o->letter)
            fprintf(out, " -%c", o->letter);
    }
}

/* Options whose value is a file or folder complete as paths; the others
 * take words the user types. */
static int takes_path(const cli_option *o)
{
    return o->metavar &&
           (strstr(o->metavar, "FILE") || strstr(o->metavar, "DIR") ||
            strstr(o->metavar, "TRACE") || strstr(o->metavar, "PLAN") || strstr(o->metavar, "OUT"));
}

static void bash_script(FILE *out)
{
    fputs("# bash completion for weft, made by 'weft completion bash'\n"
          "_weft() {\n"
          "  local cur prev cmd\n"
          "  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
          "  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
          "  cmd=\"${COMP_WORDS[1]}\"\n"
          "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
          "    COMPREPLY=($(compgen -W \"help",
          out);
    for (size_t i = 0; i < cli_ncommands; i++)
        fprintf(out, " %s", cli_commands[i]->name);
    fputs(" --help --version\" -- \"$cur\"))\n"
          "    return\n"
          "  fi\n"
          "  case \"$cmd\" in\n",
          out);
    for (size_t i = 0; i < cli_ncommands; i++) {
        const cli_command *cmd = cli_commands[i];
        fprintf(out, "  %s)\n    case \"$prev\" in\n", cmd->name);
        for (size_t k = 0; k < cmd->nopts; k++) {
            const cli_option *o = &cmd->opts[k];
            if (o->deprecated || !o->metavar)
                continue;
            fprintf(out, "    --%s", o->name);
            if (o->letter)
                fprintf(out, "|-%c", o->letter);
            fprintf(out, ") COMPREPLY=(%s); return ;;\n",
                    takes_path(o) ? "$(compgen -f -- \"$cur\")" : "");
        }
        fputs("    esac\n    if [[ \"$cur\" == -* ]]; then\n      COMPREPLY=($(compgen -W \"", out);
        bash_words(cmd, out);
        fputs("\" -- \"$cur\"))\n    else\n      COMPREPLY=($(compgen -f -- \"$cur\"))\n    fi\n"
              "    ;;\n",
              out);
    }
    fputs("  help) COMPREPLY=($(compgen -W \"", out);
    for (size_t i = 0; i < cli_ncommands; i++)
        fprintf(out, "%s%s", i ? " " : "", cli_commands[i]->name);
    fputs("\" -- \"$cur\")) ;;\n  esac\n}\ncomplete -F _weft weft\n", out);
}

static int run_completion(int argc, char **argv)
{
    int first;
    cli_seen seen;
    int rc = cli_parse(&cli_cmd_completion, argc, argv, NULL, &first, &seen);
    if (rc)
        return rc > 0 ? WEFT_EXIT_OK : WEFT_EXIT_USAGE;
    if (first + 1 != argc || strcmp(argv[first], "bash")) {
        cli_usage_error(&cli_cmd_completion, "expected the shell: weft completion bash");
        return WEFT_EXIT_USAGE;
    }
    bash_script(stdout);
    return fflush(stdout) == 0 ? WEFT_EXIT_OK : WEFT_EXIT_FAIL;
}

const cli_command cli_cmd_completion = {
    .name = "completion",
    .summary = "print a bash completion script: source <(weft completion bash)",
    .usage = "bash",
    .about = "Prints a bash completion script for weft, made from the same option tables\n"
             "the commands parse with. Use: source <(weft completion bash), or install it\n"
             "as /usr/share/bash-completion/completions/weft.\n",
    .footer = "Exit status: 0 printed, 2 on a bad command line.\n",
    .opts = NULL,
    .nopts = 0,
    .run = run_completion,
};
