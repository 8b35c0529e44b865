/* mem_transport.h - an in-memory rd_transport for unit tests: two connected endpoints inside
 * one process, with fault injection.
 *
 * mem_pair() makes a connected pair, like connect() on one side and accept() on the other.
 * Each endpoint starts with a control pool (MEM_CTRL_FRAMES frames of RD_CTRL_FRAME bytes)
 * in each direction; setup_ring() replaces a direction's pool, as TCP does. Buffers come
 * from rd_pool, so every queue is bounded: send() copies the frame into a free buffer of the
 * peer's receive pool and blocks while there is none (credit-based flow control, as on RDMA).
 *
 * Semantics that mirror TCP:
 *   - shutdown(ep) from any thread: blocked and later calls on ep fail with RD_ESTREAM, and
 *     the peer sees the connection closed (after it received what was already queued).
 *   - close(ep) is shutdown + free; the shared state goes when both ends are closed.
 *   - recv(timeout_ms >= 0) returns RD_ECONNECT on timeout.
 *   - a frame larger than the peer's receive buffers fails the peer's recv with RD_ESTREAM.
 *
 * Faults apply to frames SENT by the endpoint they are set on, counted from 0 in send order
 * (control frames included). With the session + engine, the sender's frames are
 *   0 HELLO, 1 AUTH, 2 + i DATA seq i, 2 + n END (seq n)
 * and the receiver's frames are 0 CHALLENGE, 1 ACCEPT, 2 CONFIRM (or ABORT). Offsets of the
 * v2 header (rd_proto.h): RD_HDR_SEQ, RD_HDR_TAG (16 tag bytes), RD_FRAME_HDR + i payload.
 * A fault field set to -1 is off. Set faults before the endpoint sends anything.
 */
#ifndef MEM_TRANSPORT_H
#define MEM_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "transport/rd_transport.h"

#define MEM_CTRL_FRAMES 4

struct mem_faults {
    long corrupt_frame;       /* XOR corrupt_xor into byte corrupt_offset of this frame */
    size_t corrupt_offset;    /* from the frame start: RD_FRAME_HDR + i is payload byte i */
    uint8_t corrupt_xor;
    long drop_frame;          /* this frame is silently lost (send still returns RD_OK) */
    long dup_frame;           /* this frame arrives twice */
    long reorder_frame;       /* this frame arrives after the next one */
    long kill_after;          /* the link dies when this many frames were sent: frame
                                 number kill_after and later fail, both ends see RD_ESTREAM */
    int drain_fails;          /* drain() fails although every frame arrived: RDMA's send
                                 completion flushed by the peer's disconnect, which overtook
                                 the acknowledgement */
};

/* All faults off. */
void mem_faults_none(struct mem_faults *f);

extern const struct rd_transport_ops mem_ops;

/* A connected pair: *a is the connecting side (names itself "mem:a", its peer is "mem:b"),
 * *b the accepting side. RD_OK or RD_EIO (out of memory). */
int mem_pair(struct rd_transport **a, struct rd_transport **b);

/* Install faults on frames sent by ep. */
void mem_set_faults(struct rd_transport *ep, const struct mem_faults *f);

/* Kill the link now, from any thread: like a cable pulled. Frames already queued can still
 * be received; everything else fails with RD_ESTREAM on both ends. */
void mem_kill(struct rd_transport *ep);

/* Frames ep has passed to send() so far (dropped ones included, failed ones not). */
unsigned long mem_frames_sent(struct rd_transport *ep);
/* ep gets send_ref, as TCP has it. */
void mem_use_send_ref(struct rd_transport *ep);
/* Frames ep has sent with send_ref so far. */
unsigned long mem_frames_by_ref(struct rd_transport *ep);
/* Frames ep has taken out with recv() so far. */
unsigned long mem_frames_received(struct rd_transport *ep);

#endif
