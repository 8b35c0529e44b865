/* rdb_io.h - rdbench --io: what the ends of a transfer can do on this host. A scratch file in
 * DIR is written from empty (buffered with fdatasync, as rdrecv does by default, and O_DIRECT) and read
 * (evicted from the page cache, cached, O_DIRECT), each with 1 lane and with N lanes
 * (threads on disjoint regions, 1 MiB per call); then bytes go through a pipe between two
 * threads (what `cmd | rdsend` costs). The file is removed on every path. */
#ifndef RDB_IO_H
#define RDB_IO_H

#include <stdint.h>

#include "bench/rdb_msg.h"

#define RDB_IO_MIN (16u << 20)
#define RDB_IO_BLOCK (1u << 20)

/* RD_OK, or RD_EIO with the reason recorded (DIR missing, not writable, disk full, a read or
 * write that failed, O_DIRECT's included). A measurement the filesystem does not offer
 * (O_DIRECT on tmpfs: EINVAL or EOPNOTSUPP; evicting a tmpfs file) is 0. */
int rdb_io_measure(const char *dir, uint64_t bytes, unsigned lanes, struct rdb_io *out);

#endif
