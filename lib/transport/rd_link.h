/* rd_link.h - how fast the link under a connection is: the line rate its NIC or RDMA port
 * reports, so an end can plan enough lanes for it (run/rd_plan.h). */
#ifndef RD_LINK_H
#define RD_LINK_H

#include <stddef.h>
#include <stdint.h>

/* The speed (bytes per second) of the network interface that holds the local address of
 * the connected socket fd, as ethtool reports it, asked through fd itself so that it is the
 * interface of the socket's network namespace; its name in name. 0 when the interface
 * reports no speed (loopback, most virtual NICs) or none holds the address. */
uint64_t rd_netdev_rate(int fd, char *name, size_t n);

/* The data rate (bytes per second) of an InfiniBand or RoCE port from its ibv_port_attr
 * active_speed and active_width codes (after line encoding: QDR's 10 Gb/s lane carries 8);
 * 0 for codes this build does not know. */
uint64_t rd_ib_port_rate(unsigned active_speed, unsigned active_width);

#endif
