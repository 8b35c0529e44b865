/* rd_stripe.h - one stream over several TCP connections (--streams N). */
#ifndef RD_STRIPE_H
#define RD_STRIPE_H

#include "rd_transport.h"

/* A transport made of n >= 2 connected, authenticated TCP connections (conns[0] carried the
 * handshake; conns[i] joined as stripe i). Takes ownership of them, also on failure (NULL:
 * out of memory, the connections are closed). setup_ring() then starts one thread per
 * connection in the striped direction. */
struct rd_transport *rd_stripe_new(struct rd_transport **conns, unsigned n);

#endif
