/* rd_session.h - the protocol v2 handshake on a connected transport, and the small
 * control-frame helpers the engine shares with it. */
#ifndef RD_SESSION_H
#define RD_SESSION_H

#include <stdatomic.h>
#include <stdint.h>

#include "wire/rd_auth.h"
#include "wire/rd_proto.h"
#include "transport/rd_transport.h"

#define RD_HANDSHAKE_MS 5000   /* receiver: a peer that does not finish the handshake by then is dropped */
#define RD_HELLO_MS 3000       /* receiver: a connection that says nothing by then is dropped */
#define RD_SENDER_WAIT_MS 30000 /* sender: the receiver may first be busy turning away another peer */
#define RD_MIN_ANSWER_MS 2000   /* sender: the least --timeout leaves the handshake for each answer */

#define RD_MAX_STREAMS 16u
#define RD_JOIN_WAIT_MS 10000   /* receiver: the extra connections of --streams must come by then */

struct rd_params {
    uint32_t chunk_size;   /* payload bytes per DATA frame */
    uint32_t depth;        /* frames in flight */
    uint32_t caps;         /* RD_FLAG_* in use (ENCRYPTED: the sender encrypts; AES_GCM: both
                            * ends have AES instructions) */
    uint32_t require_caps; /* receiver's limits only: caps a sender must use (--encrypt) */
    uint32_t relay;        /* receiver's limits only: this end relays the stream on, so over
                            * RDMA it pins more than one stream's rings (rd_verbs_pin_relay) */
    uint32_t streams;      /* TCP connections the stream is striped over (0 or 1 = just this one) */
    uint64_t max_inflight; /* receiver's limits only: chunk x depth granted at most this (the
                            * depth lowered, to 1 at least; 0 = no limit): the ring it allocates */
    uint8_t join_key[32];  /* agreed only: admits the extra connections (rd_auth_join_mac) */
    uint8_t stream_key[RD_KEY_LEN];   /* agreed only: tags DATA, END and CONFIRM (rd_tag.h) */
    struct rd_rails rails; /* receiver's limits: its RDMA ports' addresses, offered to a sender
                            * that asks (RD_CAP_RAILS; fewer than 2: none); agreed, sender's:
                            * the receiver's RAILS, connection 0's address first */
    uint32_t lanes;        /* local, never negotiated: threads for the per-chunk work (0 = 1) */
    uint64_t link_rate;    /* local: bytes/s of this end's link(s), as reported (0: unknown) */
    uint32_t depth_asked;  /* local, the receiver's: the depth the sender asked for, when
                            * ulimit -l let this end grant less (else 0) */
    int compress_mode;     /* local, the sender's: 0 off, 1 auto, 2 fixed at compress_level */
    int compress_level;
};

/* Sender: HELLO, check CHALLENGE, AUTH, wait for ACCEPT (and RAILS when RD_CAP_RAILS was
 * granted), set up the send ring.
 * want: what the sender asks for; *agreed: what the receiver granted.
 * RD_EAUTH if the receiver does not know the key or rejects ours. */
int rd_session_sender(struct rd_transport *tp, const struct rd_key *k, const struct rd_params *want,
                      struct rd_params *agreed);

/* Receiver: read HELLO, CHALLENGE, check AUTH, set up the receive ring, ACCEPT (then RAILS
 * to a sender that asked, over RDMA, when limits->rails has two or more addresses).
 * limits: the largest chunk and depth this receiver grants. On failure the connection
 * should be dropped and the receiver may keep listening. */
int rd_session_receiver(struct rd_transport *tp, const struct rd_key *k, const struct rd_params *limits,
                        struct rd_params *agreed);
/* rd_session_receiver as rd_waiting (transport/rd_waiting.h) runs it on each accepted
 * connection: cfg.handshake, with cfg.arg a struct rd_receiver_arg and cfg.result_size the
 * size of a struct rd_params */
struct rd_receiver_arg {
    const struct rd_key *key;
    struct rd_params limits;
    /* NULL, or one stream for all the set's handshakes (rdrecv): the first to prove the key
     * takes it before its ACCEPT, the others get a REJECT (RD_ECONNECT) */
    atomic_int *claim;
    /* the REJECT's text for those (NULL: "the receiver is serving another sender") */
    const char *busy;
    /* a claim taken: wait up to this long for it to be given back before turning the sender
     * away (rdbench --server gives it back after each client: the served client's next
     * connection may prove the key an instant before) */
    int claim_wait_ms;
};
int rd_session_receiver_arg(struct rd_transport *tp, void *arg, void *agreed);
/* rd_waiting_cfg.discarded for it: a session dropped after it took the claim gives it back */
void rd_session_receiver_discarded(void *arg);

/* With streams > 1 the session sets up no ring on tp: the caller joins the other
 * connections and sets the ring up on the striped transport made of all of them. */

/* Sender, on extra connection number index (1 .. streams-1): JOIN, wait for ACCEPT. */
int rd_session_join(struct rd_transport *tp, const struct rd_params *agreed, uint32_t index);
/* Receiver: the JOIN on a new connection, checked (its MAC, its stripe number in range) but
 * not answered yet: *index is the stripe it proved to be. The caller claims the stripe, then
 * answers ACCEPT, or refuses it (rd_session_refuse_join: REJECT, and the error recorded). */
int rd_session_read_join(struct rd_transport *tp, const struct rd_params *agreed, uint32_t *index);
int rd_session_refuse_join(struct rd_transport *tp);
/* Receiver: the JOIN on a new connection; *index is the stripe it proved to be (not yet in
 * taken[], which has agreed->streams entries). Answers ACCEPT, or REJECT and fails. */
int rd_session_accept_join(struct rd_transport *tp, const struct rd_params *agreed,
                           const unsigned char *taken, uint32_t *index);

/* Send one control frame with the given payload (fits in a control frame). On an
 * authenticated connection ABORT, REJECT and RAILS are tagged under its hop key; the
 * handshake's frames carry no tag (their MACs cover them). */
int rd_send_ctrl(struct rd_transport *tp, uint8_t type, const void *payload, uint32_t len);
/* The same for a frame of the stream (CONFIRM): tagged under key, direction dir, seq. */
int rd_send_tagged(struct rd_transport *tp, uint8_t type, const void *payload, uint32_t len,
                   const uint8_t key[RD_KEY_LEN], enum rd_tag_dir dir, uint64_t seq);
/* Seal the frame of `len` payload bytes already in b as `type`, tagged under the hop key when
 * the connection is authenticated (as rd_send_ctrl does), for the caller to send. */
void rd_seal_hop(struct rd_transport *tp, struct rd_buf *b, uint8_t type, uint32_t len);
/* Send a whole frame as it came from elsewhere (a relay passing CONFIRM on, tag and all). */
int rd_send_raw(struct rd_transport *tp, const uint8_t *frame, size_t len);
/* Send REJECT or ABORT with a reason; best effort, errors ignored. */
void rd_send_reason(struct rd_transport *tp, uint8_t type, int code, const char *text);
/* Check the tag of a frame of the stream (END, CONFIRM) that rd_recv_ctrl returned: RD_OK,
 * or RD_ESTREAM recorded with who in the message. */
int rd_check_tagged(struct rd_transport *tp, const uint8_t *hdr, const struct rd_frame *f,
                    const uint8_t key[RD_KEY_LEN], enum rd_tag_dir dir, const char *who);
/* The tag of a frame the peer sent under this connection's hop key (its ABORT or REJECT):
 * RD_P_OK, or RD_P_TAG (also before the handshake agreed a key). */
int rd_check_hop(struct rd_transport *tp, const uint8_t *hdr, const struct rd_frame *f);
/* Receive one frame and parse its header. On an authenticated connection an ABORT, REJECT or
 * RAILS must carry the hop key's tag, or it is a forgery (RD_ESTREAM). Tags of the stream's frames
 * are the caller's to check (rd_check_tagged). The caller releases *b. */
int rd_recv_ctrl(struct rd_transport *tp, int timeout_ms, struct rd_buf **b, struct rd_frame *f);
/* The same, but it never answers (rd_recv_ctrl REJECTs a frame of another protocol version):
 * for a monitor thread during the stream, while another thread sends on tp, because a
 * transport takes one sender at a time (two would interleave frames on TCP). */
int rd_recv_ctrl_quiet(struct rd_transport *tp, int timeout_ms, struct rd_buf **b, struct rd_frame *f);
/* Turn a REJECT/ABORT frame from the peer into a recorded error; returns its code. */
int rd_fail_from_reason(const struct rd_frame *f, const char *who);

#endif
