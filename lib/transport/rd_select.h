/* rd_select.h - pick the transport: --transport auto|tcp|rdma on both ends. */
#ifndef RD_SELECT_H
#define RD_SELECT_H

#include "transport/rd_transport.h"

enum rd_transport_choice { RD_T_AUTO, RD_T_TCP, RD_T_RDMA };   /* --transport */

/* What picking and reaching a transport needs of the command line, and no more (the
 * transport layer never sees the CLI's options). */
struct rd_reach {
    const char *host, *port;      /* host: NULL when listening */
    const char *bind, *device;    /* --bind, -d; NULL = any */
    int timeout_s;                /* -1 = none */
    int verbose;
    enum rd_transport_choice transport;
};

/* Several rails (multi-rail, --streams over several devices): HOST, --bind and -d may each
 * be a comma list, and connection i of a stream uses entry i mod the list's length of each
 * (a list of one is the same for all). rd_reach_rail gives rail i, its strings in *r. */
struct rd_rail {
    char host[256], bind[256], device[64];
};
struct rd_reach rd_reach_rail(const struct rd_reach *o, unsigned i, struct rd_rail *r);
/* How many entries a comma list has (0 for NULL). */
unsigned rd_list_len(const char *list);

struct rd_listener {
    struct rd_transport *lis[2];   /* RDMA and/or TCP */
    int count;
};

/* Sender: rdma forced -> RDMA or RD_ENODEV; tcp -> TCP; auto -> RDMA when a device routes to
 * the peer and the peer listens on RDMA, else TCP (-v says which and why). Rail 0. */
int rd_connect_any(const struct rd_reach *o, struct rd_transport **out);

/* Receiver: auto listens on TCP and, when this host has an RDMA device, on RDMA too. One
 * --bind address (or all); -d may name several devices, whose connections are all taken. */
int rd_listen_any(const struct rd_reach *o, struct rd_listener *l);
int rd_accept_any(struct rd_listener *l, struct rd_transport **out, int timeout_ms);
/* Once a sender is served and its stripes are in: stop listening on TCP, so that another
 * sender is refused at once (and retries, or says so) instead of waiting unanswered in the
 * backlog until this stream ends. */
void rd_listener_close_tcp(struct rd_listener *l);
void rd_listener_close(struct rd_listener *l);

#endif
