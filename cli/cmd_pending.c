/* Subcommands whose pipeline stage has not landed yet. They exist so the
 * command line is stable, and say plainly that they do nothing yet. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int pending(const char *name, const char *issue, int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("weft %s: not implemented yet (tracked in issue %s)\n", name, issue);
        return WEFT_EXIT_OK;
    }
    cli_error("%s: not implemented yet (tracked in issue %s)", name, issue);
    return WEFT_EXIT_USAGE;
}

int cmd_optimize(int argc, char **argv)
{
    return pending("optimize", "#3", argc, argv);
}
int cmd_inject(int argc, char **argv)
{
    return pending("inject", "#3", argc, argv);
}
int cmd_replay(int argc, char **argv)
{
    return pending("replay", "#4", argc, argv);
}
