/* rd_waiting.h - connections a receiver accepted but has not heard from yet.
 *
 * The receiver serves whichever connection speaks first, so silent ones (a port scanner, a
 * half-open client, anyone who can reach the port, no key needed) cannot hold up the real
 * sender. A silent connection is dropped after RD_HELLO_MS, or when the set is full and a
 * newer one arrives, with one line on stderr each.
 */
#ifndef RD_WAITING_H
#define RD_WAITING_H

#include "transport/rd_select.h"

#define RD_WAITING_MAX 8

struct rd_waiting {
    struct rd_transport *c[RD_WAITING_MAX];
    double since[RD_WAITING_MAX];
    unsigned n;
};

/* Wait up to timeout_ms (-1 = forever) for the next connection with something to say: *out.
 * RDMA connections, which cannot be watched, are handed out as soon as they are accepted.
 * watch_fd >= 0 is watched too: when it becomes readable, RD_OK with *out = NULL. Returns
 * RD_ECONNECT "timed out waiting for a sender" when timeout_ms passes. */
int rd_waiting_next(struct rd_waiting *w, struct rd_listener *lis, int watch_fd, int timeout_ms,
                    struct rd_transport **out);
void rd_waiting_close(struct rd_waiting *w);

#endif
