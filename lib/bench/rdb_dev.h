/* rdb_dev.h - what this host's RDMA devices look like (libibverbs and sysfs), what rdsend
 * will pin, and which device routes to an address (librdmacm). For rdcheck and for the
 * INFO a bench server gives. Nothing here opens a connection. */
#ifndef RDB_DEV_H
#define RDB_DEV_H

#include <stddef.h>
#include <stdint.h>

#define RDB_MAX_PORTS 16

struct rdb_port {
    char dev[32];             /* rxe_a */
    unsigned port;            /* 1 */
    int open_errno;           /* the device could not be opened (the rest is unknown) */
    int state;                /* enum ibv_port_state */
    char state_name[16];      /* "ACTIVE", "DOWN", "INIT", ... */
    int ethernet;             /* link layer: 1 Ethernet (RoCE), 0 InfiniBand */
    unsigned active_mtu;      /* bytes */
    unsigned max_mtu;
    char netdev[32];          /* RoCE: the Ethernet device under it ("" unknown) */
    unsigned netdev_mtu;
    int netdev_up;
    /* GIDs: the first usable one ("1: RoCE v2 ::ffff:10.0.0.1"), and how many there are */
    unsigned ngids;           /* non-zero GID entries */
    unsigned nroce2;          /* RoCE v2 entries with an IP address */
    char gid_desc[96];
};

/* Every port of every device; returns how many (0: no device; *ndev = devices found). */
size_t rdb_ports(struct rdb_port *out, size_t cap, unsigned *ndev);


/* The local ports range ("32768-60999") from /proc, or "" */
void rdb_port_range(char *out, size_t n);

/* Which RDMA device routes to host (from bind when not NULL)?
 * Returns 0 with dev/port set; -1 with why set ("no RDMA device routes to 10.1.2.3").
 * In every case *ifname is the network interface the kernel routes the address through
 * ("" unknown) and addr the numeric address host resolved to ("" if it did not). */
int rdb_rdma_route(const char *host, const char *bind_addr, int timeout_ms, char *dev, size_t devlen,
                   unsigned *port, char *ifname, size_t iflen, char *addr, size_t addrlen, char *why,
                   size_t whylen);

#endif
