/* rd_numa.h - running a thread near a device.
 *
 * An RDMA transfer's lanes read and write the device's registered rings, which are placed on
 * the device's NUMA node; lanes on that node's CPUs keep those bytes off the socket
 * interconnect. libnuma names the node's CPUs.
 */
#ifndef RD_NUMA_H
#define RD_NUMA_H

/* Restrict the calling thread to the CPUs of NUMA node `node` among those it may already use:
 * a user's taskset stays in force, only narrowed, and when it has none of the node's CPUs
 * the thread is left as it was. 0 if the thread now runs on the node; -1 if node < 0, the
 * machine has no NUMA support or no such node, or no allowed CPU is on it. */
int rd_numa_run_on(int node);

#endif
