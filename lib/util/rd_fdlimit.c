/* rd_fdlimit.c - see rd_fdlimit.h */
#include "util/rd_fdlimit.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

void rd_fd_limit_raise(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= RD_FDS_WANTED)
        return;
    rlim_t want = r.rlim_max == RLIM_INFINITY || r.rlim_max > RD_FDS_WANTED ? RD_FDS_WANTED : r.rlim_max;
    if (want > r.rlim_cur) {
        struct rlimit up = { .rlim_cur = want, .rlim_max = r.rlim_max };
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            r.rlim_cur = want;
    }
    if (r.rlim_cur >= RD_FDS_NEEDED)
        return;
    fprintf(stderr, "%s: ulimit -n is %llu (hard limit %llu): too few open files, at least %d are needed\n",
            program_invocation_short_name, (unsigned long long)r.rlim_cur, (unsigned long long)r.rlim_max,
            RD_FDS_NEEDED);
    _exit(5);
}

unsigned long long rd_fd_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return 0;
    return r.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (unsigned long long)r.rlim_cur;
}
