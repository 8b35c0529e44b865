/* rd_aslimit.c - see rd_aslimit.h */
#include "util/rd_aslimit.h"

#include <malloc.h>
#include <sys/resource.h>

void rd_as_limit_adapt(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
        mallopt(M_ARENA_MAX, 1);
}
