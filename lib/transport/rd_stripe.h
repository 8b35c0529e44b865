/* rd_stripe.h - one stream over several connections (--streams N), TCP or RDMA. */
#ifndef RD_STRIPE_H
#define RD_STRIPE_H

#include "transport/rd_transport.h"

/* A transport made of n >= 2 connected, authenticated connections of one kind (conns[0]
 * carried the handshake; conns[i] joined as stripe i). Takes ownership of them, also on
 * failure (NULL: out of memory, the connections are closed). setup_ring() then starts one
 * thread per TCP connection in the striped direction, or sets up each RDMA connection's ring
 * (frame k uses connection k mod n's buffers). */
struct rd_transport *rd_stripe_new(struct rd_transport **conns, unsigned n);

/* After the handshake on connection *tp agreed on streams > 1: sender, open and JOIN the
 * other connections (same port and transport as connection 0; where HOST, --bind or -d is a
 * comma list, connection i takes entry i mod its length: one rail each); receiver, take them
 * from lis within RD_JOIN_WAIT_MS. Either way *tp then becomes the striped transport with its ring set up.
 * On failure the peer is told (ABORT on connection 0) and *tp is connection 0 (or NULL if
 * it was consumed). */
struct rd_reach;
struct rd_params;
struct rd_listener;
int rd_stripe_join(const struct rd_reach *o, struct rd_transport **tp, const struct rd_params *agreed);
int rd_stripe_accept(struct rd_listener *lis, struct rd_transport **tp, const struct rd_params *agreed);

#endif
