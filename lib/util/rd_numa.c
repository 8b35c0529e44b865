#include "util/rd_numa.h"

#include <numa.h>
#include <sched.h>

int rd_numa_run_on(int node)
{
    if (node < 0 || numa_available() < 0 || node > numa_max_node())
        return -1;
    struct bitmask *cpus = numa_allocate_cpumask();
    if (!cpus)
        return -1;
    cpu_set_t allowed, want;
    CPU_ZERO(&want);
    int rc = -1;
    if (numa_node_to_cpus(node, cpus) == 0 && sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
        for (unsigned i = 0; i < cpus->size && i < CPU_SETSIZE; i++)
            if (numa_bitmask_isbitset(cpus, i) && CPU_ISSET(i, &allowed))
                CPU_SET(i, &want);
        if (CPU_COUNT(&want) > 0 && sched_setaffinity(0, sizeof want, &want) == 0)
            rc = 0;
    }
    numa_free_cpumask(cpus);
    return rc;
}
