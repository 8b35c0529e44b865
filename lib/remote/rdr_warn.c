/* rdr_warn.c - see rdr_warn.h. */
#include "remote/rdr_warn.h"

#include "util/rd_error.h"

#include <stdarg.h>

void rdr_warnx(const char *tool, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rd_vwarn_as(tool, fmt, ap);
    va_end(ap);
}
