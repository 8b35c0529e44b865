/* rd_memlock.h - how much memory this process may pin (register for RDMA). */
#ifndef RD_MEMLOCK_H
#define RD_MEMLOCK_H

#include <stdint.h>

/* RLIMIT_MEMLOCK now (UINT64_MAX: unlimited), and whether CAP_IPC_LOCK lifts it (the
 * kernel lets such a process pin past the limit; root in a container may lack it). */
uint64_t rd_memlock_limit(int *cap_ipc_lock);

#endif
