/* rd_session.h - the protocol v1 handshake on a connected transport, and the small
 * control-frame helpers the engine shares with it. */
#ifndef RD_SESSION_H
#define RD_SESSION_H

#include <stdint.h>

#include "rd_auth.h"
#include "rd_proto.h"
#include "rd_transport.h"

#define RD_HANDSHAKE_MS 5000   /* receiver: a peer that does not finish the handshake by then is dropped */
#define RD_HELLO_MS 3000       /* receiver: a connection that says nothing by then is dropped */
#define RD_SENDER_WAIT_MS 30000 /* sender: the receiver may first be busy turning away another peer */

struct rd_params {
    uint32_t chunk_size;   /* payload bytes per DATA frame */
    uint32_t depth;        /* frames in flight */
    uint32_t caps;         /* RD_FLAG_* in use */
};

/* Sender: HELLO, check CHALLENGE, AUTH, wait for ACCEPT, set up the send ring.
 * want: what the sender asks for; *agreed: what the receiver granted.
 * RD_EAUTH if the receiver does not know the key or rejects ours. */
int rd_session_sender(struct rd_transport *tp, const struct rd_key *k, const struct rd_params *want,
                      struct rd_params *agreed);

/* Receiver: read HELLO, CHALLENGE, check AUTH, set up the receive ring, ACCEPT.
 * limits: the largest chunk and depth this receiver grants. On failure the connection
 * should be dropped and the receiver may keep listening. */
int rd_session_receiver(struct rd_transport *tp, const struct rd_key *k, const struct rd_params *limits,
                        struct rd_params *agreed);

/* Send one control frame with the given payload (fits in a control frame). */
int rd_send_ctrl(struct rd_transport *tp, uint8_t type, const void *payload, uint32_t len);
/* Send REJECT or ABORT with a reason; best effort, errors ignored. */
void rd_send_reason(struct rd_transport *tp, uint8_t type, int code, const char *text);
/* Receive one frame and parse its header (checksum verified too: control frames are small).
 * The caller releases *b. */
int rd_recv_ctrl(struct rd_transport *tp, int timeout_ms, struct rd_buf **b, struct rd_frame *f);
/* Turn a REJECT/ABORT frame from the peer into a recorded error; returns its code. */
int rd_fail_from_reason(const struct rd_frame *f, const char *who);

#endif
