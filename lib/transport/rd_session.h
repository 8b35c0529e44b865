/* rd_session.h - the protocol v1 handshake on a connected transport, and the small
 * control-frame helpers the engine shares with it. */
#ifndef RD_SESSION_H
#define RD_SESSION_H

#include <stdint.h>

#include "wire/rd_auth.h"
#include "wire/rd_proto.h"
#include "transport/rd_transport.h"

#define RD_HANDSHAKE_MS 5000   /* receiver: a peer that does not finish the handshake by then is dropped */
#define RD_HELLO_MS 3000       /* receiver: a connection that says nothing by then is dropped */
#define RD_SENDER_WAIT_MS 30000 /* sender: the receiver may first be busy turning away another peer */

#define RD_MAX_STREAMS 16u
#define RD_JOIN_WAIT_MS 10000   /* receiver: the extra connections of --streams must come by then */

struct rd_params {
    uint32_t chunk_size;   /* payload bytes per DATA frame */
    uint32_t depth;        /* frames in flight */
    uint32_t caps;         /* RD_FLAG_* in use */
    uint32_t streams;      /* TCP connections the stream is striped over (0 or 1 = just this one) */
    uint8_t join_key[32];  /* agreed only: admits the extra connections (rd_auth_join_key) */
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

/* With streams > 1 the session sets up no ring on tp: the caller joins the other
 * connections and sets the ring up on the striped transport made of all of them. */

/* Sender, on extra connection number index (1 .. streams-1): JOIN, wait for ACCEPT. */
int rd_session_join(struct rd_transport *tp, const struct rd_params *agreed, uint32_t index);
/* Receiver: the JOIN on a new connection; *index is the stripe it proved to be (not yet in
 * taken[], which has agreed->streams entries). Answers ACCEPT, or REJECT and fails. */
int rd_session_accept_join(struct rd_transport *tp, const struct rd_params *agreed,
                           const unsigned char *taken, uint32_t *index);

/* Send one control frame with the given payload (fits in a control frame). */
int rd_send_ctrl(struct rd_transport *tp, uint8_t type, const void *payload, uint32_t len);
/* Send REJECT or ABORT with a reason; best effort, errors ignored. */
void rd_send_reason(struct rd_transport *tp, uint8_t type, int code, const char *text);
/* Receive one frame and parse its header (checksum verified too: control frames are small).
 * The caller releases *b. */
int rd_recv_ctrl(struct rd_transport *tp, int timeout_ms, struct rd_buf **b, struct rd_frame *f);
/* The same, but it never answers (rd_recv_ctrl REJECTs a frame of another protocol version):
 * for a monitor thread during the stream, while another thread sends on tp, because a
 * transport takes one sender at a time (two would interleave frames on TCP). */
int rd_recv_ctrl_quiet(struct rd_transport *tp, int timeout_ms, struct rd_buf **b, struct rd_frame *f);
/* Turn a REJECT/ABORT frame from the peer into a recorded error; returns its code. */
int rd_fail_from_reason(const struct rd_frame *f, const char *who);

#endif
