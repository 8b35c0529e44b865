/* rd_rails.h - multi-rail by default: a stream over RDMA uses every active port that routes
 * to the peer. The receiver names its ports' addresses (RD_RAILS, after the handshake); the
 * sender pairs each with a port of its own on the same subnet and opens one connection per
 * pair (rd_stripe_join). Two-subnet rails (10.0.0.x and 10.0.1.x) are the usual layout, so
 * only the receiver can say where its other ports are.
 *
 * When: rdsend without --streams and without a list in HOST, --bind or -d beyond what it
 * pins (one -d device pins one device; --streams 1 pins one connection), connection 0 over
 * RDMA, and a receiver listening on all addresses with two or more active ports. */
#ifndef RD_RAILS_H
#define RD_RAILS_H

#include "transport/rd_select.h"
#include "wire/rd_proto.h"

#include <sys/socket.h>

/* An address of an active RDMA port of this host. */
struct rd_port_addr {
    struct rd_rail_addr a;   /* family 4|6 and the address */
    unsigned prefix;         /* its interface's netmask, in bits */
    char dev[64];
    unsigned port;
};

/* This host's addresses on active RDMA ports, of the devices in the comma list `devices`
 * (NULL or "" for all): at most max into out; the count. Loopback and link-local IPv6
 * addresses are left out (a link-local one needs its scope, which a peer cannot use). */
unsigned rd_rails_local(const char *devices, struct rd_port_addr *out, unsigned max);

/* sa as a rail address; 0, or -1 when it is neither IPv4 nor IPv6. */
int rd_rail_addr_of(const struct sockaddr *sa, struct rd_rail_addr *out);
int rd_rail_addr_eq(const struct rd_rail_addr *x, const struct rd_rail_addr *y);

/* Port addresses as a RAILS list, each numbered by its port (at most RD_MAX_RAILS
 * addresses); and how many ports such a list names. */
void rd_rails_of_ports(const struct rd_port_addr *p, unsigned n, struct rd_rails *out);
unsigned rd_rails_distinct(const struct rd_rails *r);

/* Receiver: the RAILS to send for a connection that reached it at `first`: that address
 * (numbered as its port, or as a port of its own when it is not in ports), then every other
 * port address (at most RD_MAX_RAILS in all). */
void rd_rails_advert(const struct rd_rails *ports, const struct rd_rail_addr *first, struct rd_rails *out);

/* Sender: one extra rail per receiver port other than the first address's (which connection
 * 0 already uses): from the first of its addresses that a local address shares a subnet with
 * (by the local interface's netmask), from a local port that carries no rail yet, else from
 * any; a receiver port no local address reaches is left out, and so is a local address the
 * receiver names as its own (both ends on one host). local0 is connection 0's local address
 * (its port is taken). The count, at most max; each pair as strings for rd_reach's lists. */
struct rd_rail_pair {
    char host[48], bind[48], dev[64];
};
unsigned rd_rails_pair(const struct rd_port_addr *local, unsigned nl, const struct rd_rails *remote,
                       const struct rd_rail_addr *local0, struct rd_rail_pair *out, unsigned max);

/* Sender, once connection 0 is up: the addresses of the local ports a stream may spread
 * over, into local (room for RD_MAX_RAILS), their count in *nl; returns how many ports they
 * are on, 0 when the stream should not spread (the rules above; RDPIPE_RAILS=0 turns it off). */
unsigned rd_rails_offer(const struct rd_reach *o, int streams_set, const struct rd_transport *tp,
                        struct rd_port_addr *local, unsigned *nl);

/* Sender, after the handshake: *out is o with HOST, --bind and -d as lists, entry i for
 * connection i mod their length (rd_reach_rail): entry 0 connection 0's own, then one per
 * pair rd_rails_pair found for the receiver's rails. The number of rails; 1 when nothing
 * paired (then *out is o). The strings live in *l. */
struct rd_rail_lists {
    char host[256 + RD_MAX_RAILS * 48], bind[RD_MAX_RAILS * 48], dev[RD_MAX_RAILS * 64];
};
unsigned rd_rails_reach(const struct rd_reach *o, const struct rd_transport *tp, const struct rd_rails *remote,
                        const struct rd_port_addr *local, unsigned nl, struct rd_rail_lists *l,
                        struct rd_reach *out);

/* For -v: the receiver's list ("10.0.0.1 (port 0), 10.0.1.1 (port 1)") and ours
 * ("10.0.0.2/24 rxe_b:1, ..."), truncated to n - 1 characters. */
void rd_rails_str(const struct rd_rails *r, char *out, size_t n);
void rd_ports_str(const struct rd_port_addr *p, unsigned np, char *out, size_t n);

#endif
