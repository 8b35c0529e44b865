/* rd_engine.h - move one stream over an authenticated transport.
 *
 * Sender: a reader thread fills the transport's send buffers straight from the source and
 * seals them (checksum), while the calling thread posts them, so reading the next chunk
 * overlaps sending the previous one. Receiver: the calling thread receives frames and checks
 * their headers and order; lanes check each frame's tag, and into a regular file write its
 * payload with pwrite at its offset, all lanes at once, out of the buffer it arrived in; the
 * writer thread takes the frames back in order, writes the payload itself where the output
 * needs the order (pipes, sockets, terminals, O_APPEND), and hands the buffer back.
 */
#ifndef RD_ENGINE_H
#define RD_ENGINE_H

#include <stdatomic.h>
#include <stdint.h>

#include "engine/rd_io.h"
#include "transport/rd_session.h"
#include "transport/rd_transport.h"

struct rd_counters {
    _Atomic uint64_t bytes;    /* stream bytes read (sender) or written (receiver) so far */
    _Atomic uint64_t frames;
    _Atomic uint64_t wire_bytes;   /* DATA payload bytes on the wire (compressed or not) */
};

/* Returns RD_OK only once the receiver confirmed every byte. */
int rd_engine_send(struct rd_transport *tp, struct rd_source *src, const struct rd_params *p,
                   struct rd_counters *cnt);
/* Returns RD_OK only if the whole stream arrived, matched END, was written (and flushed) and
 * CONFIRM was sent; whether CONFIRM arrived is the sender's to judge. */
int rd_engine_recv(struct rd_transport *tp, struct rd_sink *dst, const struct rd_params *p,
                   struct rd_counters *cnt);

#endif
