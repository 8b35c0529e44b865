/* rd_engine.h - move one stream over an authenticated transport.
 *
 * Sender: a reader thread fills the transport's send buffers straight from the source and
 * seals them (checksum), while the calling thread posts them, so reading the next chunk
 * overlaps sending the previous one. Receiver: the calling thread receives frames and checks
 * their headers and order; a writer thread verifies each checksum and writes the payload out
 * of the buffer it arrived in, then hands the buffer back to the transport.
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
};

/* Returns RD_OK only once the receiver confirmed every byte. */
int rd_engine_send(struct rd_transport *tp, struct rd_source *src, const struct rd_params *p,
                   struct rd_counters *cnt);
/* Returns RD_OK only if the whole stream arrived, matched END, was written and CONFIRMed. */
int rd_engine_recv(struct rd_transport *tp, struct rd_sink *dst, const struct rd_params *p,
                   struct rd_counters *cnt);

#endif
