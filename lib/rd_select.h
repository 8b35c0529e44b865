/* rd_select.h - pick the transport: --transport auto|tcp|rdma on both ends. */
#ifndef RD_SELECT_H
#define RD_SELECT_H

#include "rd_cli.h"
#include "rd_transport.h"

struct rd_listener {
    struct rd_transport *lis[2];   /* RDMA and/or TCP */
    int count;
};

/* Sender: rdma forced -> RDMA or RD_ENODEV; tcp -> TCP; auto -> RDMA when a device routes to
 * the peer and the peer listens on RDMA, else TCP (-v says which and why). */
int rd_connect_any(const struct rd_opts *o, struct rd_transport **out);

/* Receiver: auto listens on TCP and, when this host has an RDMA device, on RDMA too. */
int rd_listen_any(const struct rd_opts *o, struct rd_listener *l);
int rd_accept_any(struct rd_listener *l, struct rd_transport **out, int timeout_ms);
void rd_listener_close(struct rd_listener *l);

#endif
