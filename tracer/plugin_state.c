/* The plugin's one state (plugin_state.h says what it holds and who
 * writes what), and the parsing of its numeric arguments: what every part
 * of the plugin uses, and which uses no part. */
#include <errno.h>
#include <stdlib.h>

#include "plugin_state.h"

plugin g_plugin;

int plugin_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = x;
    return 0;
}
