#include "run/rd_plan.h"

#include "engine/rd_lanes.h"
#include "transport/rd_session.h"

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

uint32_t rd_plan_streams(uint64_t link_rate, int rdma, unsigned cores)
{
    uint64_t each = rdma ? RD_PLAN_QP_RATE : RD_PLAN_TCP_STREAM_RATE;
    uint64_t need = (link_rate + each - 1) / each;
    uint64_t most = rdma || cores > RD_MAX_STREAMS ? RD_MAX_STREAMS : cores;
    return clamp(need, 1, most ? most : 1);
}

uint32_t rd_plan_depth(uint32_t lanes, uint32_t streams, uint32_t depth)
{
    uint32_t want = lanes + 4 > 2 * streams ? lanes + 4 : 2 * streams;
    return want > depth ? want : depth;
}

unsigned rd_plan_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}
