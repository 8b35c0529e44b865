#include "run/rd_plan.h"

#include "engine/rd_lanes.h"

#include <sched.h>
#include <unistd.h>

static uint32_t clamp(uint64_t n, uint64_t lo, uint64_t hi)
{
    return (uint32_t)(n < lo ? lo : n > hi ? hi : n);
}

uint32_t rd_plan_lanes(const struct rd_plan_in *in)
{
    unsigned cores = in->cores ? in->cores : 1;
    if (in->compress)
        return clamp(cores, 1, 8);
    if (!in->link_rate)
        return clamp(cores / 2, 1, 8);
    uint64_t rate = in->slow_cipher ? RD_PLAN_LANE_RATE / 3 : RD_PLAN_LANE_RATE;
    uint64_t need = (in->link_rate + rate - 1) / rate;
    uint64_t spare = cores > 2 ? cores - 2 : 1;
    return clamp(need, 1, spare < RD_MAX_LANES ? spare : RD_MAX_LANES);
}

uint32_t rd_plan_depth(uint32_t lanes, uint32_t depth)
{
    return lanes + 4 > depth ? lanes + 4 : depth;
}

unsigned rd_plan_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}
