#include "util/rd_memlock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

uint64_t rd_memlock_limit(int *cap_ipc_lock)
{
    struct rlimit rl;
    char line[256];
    *cap_ipc_lock = 0;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "CapEff:", 7)) {
            unsigned long long caps = strtoull(line + 7, NULL, 16);
            *cap_ipc_lock = (caps >> 14) & 1;   /* CAP_IPC_LOCK */
        }
    if (f)
        fclose(f);
    if (getrlimit(RLIMIT_MEMLOCK, &rl))
        return 0;
    return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}
