/* test_numa.c - util/rd_numa: a thread moves onto a device's NUMA node only within the CPUs
 * it was already allowed (a user's taskset stays), and an unknown node changes nothing; the
 * lanes of an engine run where their node says. */
#include "check.h"

#include "engine/rd_lanes.h"
#include "util/rd_numa.h"

#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static int same_set(const cpu_set_t *a, const cpu_set_t *b)
{
    return CPU_EQUAL(a, b);
}

static int first_cpu(const cpu_set_t *s)
{
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, s))
            return i;
    return -1;
}

/* The node of a CPU we may run on (node 0 on machines without NUMA support). */
static int node_of(int cpu)
{
    int n = numa_available() < 0 ? -1 : numa_node_of_cpu(cpu);
    return n < 0 ? 0 : n;
}

static void t_unknown_node_changes_nothing(void)
{
    cpu_set_t before, after;
    CHECK_OR(sched_getaffinity(0, sizeof before, &before) == 0, return);
    CHECK(rd_numa_run_on(-1) == -1);
    CHECK(rd_numa_run_on(numa_available() < 0 ? 0 : numa_max_node() + 1) == -1);
    CHECK(rd_numa_run_on(1 << 20) == -1);
    CHECK_OR(sched_getaffinity(0, sizeof after, &after) == 0, return);
    CHECK(same_set(&before, &after));
}

/* Run on one CPU (as under `taskset`), then ask for that CPU's node: the thread stays on that
 * one CPU, it is not widened to the whole node. */
static void *narrowed(void *arg)
{
    int *ok = arg;
    cpu_set_t all, one, after;
    if (sched_getaffinity(0, sizeof all, &all))
        return NULL;
    int cpu = first_cpu(&all);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one))
        return NULL;
    int rc = rd_numa_run_on(node_of(cpu));
    if (numa_available() < 0)
        ok[0] = rc == -1;   /* no NUMA support: nothing to do, and nothing done */
    else
        ok[0] = rc == 0;
    ok[1] = sched_getaffinity(0, sizeof after, &after) == 0 && same_set(&after, &one);
    return NULL;
}

static void t_taskset_stays_in_force(void)
{
    int ok[2] = { 0, 0 };
    pthread_t th;
    CHECK_OR(pthread_create(&th, NULL, narrowed, ok) == 0, return);
    pthread_join(th, NULL);
    CHECK(ok[0]);
    CHECK(ok[1]);
}

/* Each lane reports the CPUs it may run on. */
struct where {
    pthread_mutex_t m;
    cpu_set_t seen;
    int jobs;
};

static int report(void *ctx, unsigned lane, void *job)
{
    struct where *w = ctx;
    cpu_set_t s;
    (void)lane;
    (void)job;
    if (sched_getaffinity(0, sizeof s, &s))
        return 1;
    pthread_mutex_lock(&w->m);
    CPU_OR(&w->seen, &w->seen, &s);
    w->jobs++;
    pthread_mutex_unlock(&w->m);
    return 0;
}

/* Lanes started for a node run on that node's CPUs only: every CPU any lane may use belongs
 * to the node. */
static void t_lanes_run_on_their_node(void)
{
    if (numa_available() < 0 || numa_max_node() == 0) {
        CHECK_SKIP("one NUMA node here, every CPU is on it");
        return;
    }
    cpu_set_t all;
    CHECK_OR(sched_getaffinity(0, sizeof all, &all) == 0, return);
    int node = node_of(first_cpu(&all));
    struct where w = { .m = PTHREAD_MUTEX_INITIALIZER };
    CPU_ZERO(&w.seen);
    struct rd_lanes *l = rd_lanes_new(3, 16, node, report, &w);
    CHECK_OR(l != NULL, return);
    int jobs[16];
    for (int i = 0; i < 16; i++)
        CHECK(rd_lanes_submit(l, &jobs[i]) == 0);
    rd_lanes_close(l);
    int rc, taken = 0;
    while (rd_lanes_take(l, &rc)) {
        CHECK_EQ_U(rc, 0);
        taken++;
    }
    rd_lanes_free(l);
    CHECK_EQ_U(taken, 16);
    CHECK(CPU_COUNT(&w.seen) > 0);
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &w.seen) && numa_available() >= 0 && numa_node_of_cpu(i) != node)
            check_fail_at(__FILE__, __LINE__, "a lane may run on CPU %d, which is not on node %d", i, node);
}

int main(void)
{
    RUN(t_unknown_node_changes_nothing);
    RUN(t_taskset_stays_in_force);
    RUN(t_lanes_run_on_their_node);
    return check_summary();
}
