/* rd_loop.h - a transport between two endpoints of one process that hands frames over by
 * pointer: the machine's memory is the only wire (bench/engine measures the engines on it,
 * an "infinitely fast NIC").
 *
 * Each direction has one pool of frames, owned by the end that sends on it. send() puts the
 * very buffer on the peer's queue, the peer's recv() returns it, and its release() gives it
 * back to the sender's free list; get_send_buf blocks while none is free, which is all the
 * flow control there is. Nothing is copied, so there is no send_ref (the engine reads files
 * straight into the buffers).
 *
 *   setup_ring(SEND, size, depth)   replaces this end's outgoing pool (the control pool)
 *   setup_ring(RECV, size, depth)   sets the largest frame this end accepts; it owns no
 *                                   buffers of its own (depth is the sender's business)
 *   shutdown(ep), any thread        blocked and later calls on ep fail with RD_ESTREAM; the
 *                                   peer's sends fail too, and its recv fails once it has
 *                                   taken what was already queued (as a closed TCP connection)
 *   drain                           RD_OK: a sent frame is already in the peer's hands
 *   close(ep)                       shutdown; the memory goes when both ends are closed, so
 *                                   a frame one end still holds stays valid after the other
 *                                   end closed
 */
#ifndef RD_LOOP_H
#define RD_LOOP_H

#include "transport/rd_transport.h"

extern const struct rd_transport_ops rd_loop_ops;

/* A connected pair, as connect() on *a and accept() on *b would give (peers "loop:b" and
 * "loop:a"), each with its control pool. RD_OK or RD_EIO (out of memory). */
int rd_loop_pair(struct rd_transport **a, struct rd_transport **b);

#endif
