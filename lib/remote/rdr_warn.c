/* rdr_warn.c - see rdr_warn.h. */
#include "remote/rdr_warn.h"

#include <stdarg.h>
#include <stdio.h>

void rdr_warnx(const char *tool, const char *fmt, ...)
{
    va_list ap;
    char buf[4096];
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", tool, buf);
}
