/* rd_opterr.c - see rd_opterr.h. */
#include "util/rd_opterr.h"

#include <stdio.h>
#include <string.h>

void rd_opt_refused(char *buf, size_t n, int c, char *const argv[], int optind, int optopt)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    int is_long = strncmp(arg, "--", 2) == 0;
    if (c == ':') {
        if (is_long)
            snprintf(buf, n, "option '%s' needs a value", arg);
        else
            snprintf(buf, n, "option '-%c' needs a value", optopt);
        return;
    }
    const char *eq = is_long ? strchr(arg, '=') : NULL;
    if (is_long && eq && optopt)   /* a known long option that takes no value */
        snprintf(buf, n, "option '%.*s' takes no value", (int)(eq - arg), arg);
    else if (!is_long && optopt)
        snprintf(buf, n, "unknown option '-%c'", optopt);
    else
        snprintf(buf, n, "unknown option '%s'", arg);
}
