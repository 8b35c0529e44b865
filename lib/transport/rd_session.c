#include "transport/rd_session.h"

#include "util/rd_error.h"

#include <stdio.h>
#include <string.h>

int rd_send_ctrl(struct rd_transport *tp, uint8_t type, const void *payload, uint32_t len)
{
    struct rd_buf *b;
    int rc = tp->ops->get_send_buf(tp, &b);
    if (rc)
        return rc;
    if (len)
        memcpy(b->data + RD_FRAME_HDR, payload, len);
    b->len = rd_frame_seal(b->data, type, 0, len, 0);
    return tp->ops->send(tp, b);
}

void rd_send_reason(struct rd_transport *tp, uint8_t type, int code, const char *text)
{
    struct rd_reason r = { .code = (uint32_t)code };
    uint8_t out[sizeof r.text + 4];
    snprintf(r.text, sizeof r.text, "%s", text);
    size_t n = rd_reason_encode(&r, out);
    int saved = rd_error_code();
    rd_send_ctrl(tp, type, out, (uint32_t)n);
    if (!saved)
        rd_error_clear();   /* a failure to say goodbye is not the error worth reporting */
}

static int recv_ctrl(struct rd_transport *tp, int timeout_ms, struct rd_buf **bp, struct rd_frame *f,
                     int answer)
{
    struct rd_buf *b;
    int rc = tp->ops->recv(tp, &b, timeout_ms);
    if (rc)
        return rc;
    int pe = rd_frame_parse(b->data, b->len, b->cap, f);
    if (pe == RD_P_OK)
        pe = rd_frame_verify(f);
    if (pe != RD_P_OK) {
        unsigned version = b->len > 4 ? b->data[4] : 0;
        tp->ops->release(tp, b);
        if (pe == RD_P_VERSION) {
            /* tell the peer in a frame it can still parse if it speaks version 1 too */
            char text[80];
            snprintf(text, sizeof text, "peer speaks rdpipe protocol version %u only", RD_PROTO_VERSION);
            if (answer)
                rd_send_reason(tp, RD_REJECT, RD_ESTREAM, text);
            return rd_fail(RD_ESTREAM, "peer %s speaks rdpipe protocol version %u, this is version %u",
                           tp->peer, version, RD_PROTO_VERSION);
        }
        return rd_fail(RD_ESTREAM, "bad frame from %s: %s", tp->peer, rd_proto_strerror(pe));
    }
    *bp = b;
    return RD_OK;
}

int rd_recv_ctrl(struct rd_transport *tp, int timeout_ms, struct rd_buf **bp, struct rd_frame *f)
{
    return recv_ctrl(tp, timeout_ms, bp, f, 1);
}

int rd_recv_ctrl_quiet(struct rd_transport *tp, int timeout_ms, struct rd_buf **bp, struct rd_frame *f)
{
    return recv_ctrl(tp, timeout_ms, bp, f, 0);
}

int rd_fail_from_reason(const struct rd_frame *f, const char *who)
{
    struct rd_reason r;
    if (rd_reason_decode(f->payload, f->length, &r) != RD_P_OK)
        return rd_fail(RD_ESTREAM, "%s sent a malformed %s", who, rd_frame_type_name(f->type));
    /* whatever went wrong over there, here it means the stream did not get through */
    int code = r.code == RD_EAUTH ? RD_EAUTH : RD_ESTREAM;
    return rd_fail(code, "%s: %s", who, r.text);
}

static int expect(struct rd_transport *tp, struct rd_buf **b, struct rd_frame *f, uint8_t type,
                  int timeout_ms, const char *who)
{
    int rc = rd_recv_ctrl(tp, timeout_ms, b, f);
    if (rc)
        return rc;
    if (f->type == type)
        return RD_OK;
    if (f->type == RD_REJECT || f->type == RD_ABORT) {
        char whom[200];
        snprintf(whom, sizeof whom, "%s %s", who, tp->peer);
        rc = rd_fail_from_reason(f, whom);
    }
    else
        rc = rd_fail(RD_ESTREAM, "protocol error: expected %s from %s, got %s", rd_frame_type_name(type),
                     tp->peer, rd_frame_type_name(f->type));
    tp->ops->release(tp, *b);
    return rc;
}

int rd_session_sender(struct rd_transport *tp, const struct rd_key *k, const struct rd_params *want,
                      struct rd_params *agreed)
{
    uint32_t streams = want->streams ? want->streams : 1;
    struct rd_hello h = { .version_min = RD_PROTO_VERSION, .version_max = RD_PROTO_VERSION,
                          .caps = want->caps, .chunk_size = want->chunk_size, .depth = want->depth,
                          .streams = streams };
    struct rd_challenge c;
    struct rd_buf *b;
    struct rd_frame f;
    uint8_t out[RD_CHALLENGE_LEN];
    if (rd_random(h.nonce, sizeof h.nonce))
        return rd_fail(RD_EIO, "no randomness available");
    int rc = rd_send_ctrl(tp, RD_HELLO, out, (uint32_t)rd_hello_encode(&h, out));
    if (rc)
        return rc;
    rc = expect(tp, &b, &f, RD_CHALLENGE, RD_SENDER_WAIT_MS, "receiver");
    if (rc)
        return rc;
    int pe = rd_challenge_decode(f.payload, f.length, &c);
    tp->ops->release(tp, b);
    if (pe)
        return rd_fail(RD_ESTREAM, "malformed CHALLENGE from %s", tp->peer);
    if (!rd_auth_check(k, RD_ROLE_RECEIVER, &h, &c, c.mac)) {
        rd_send_reason(tp, RD_REJECT, RD_EAUTH, "authentication failed (wrong key)");
        return rd_fail(RD_EAUTH, "authentication failed: receiver %s has another key", tp->peer);
    }
    if (c.chunk_size < RD_MIN_CHUNK || c.chunk_size > want->chunk_size || c.depth == 0 ||
        c.depth > want->depth || (c.caps & ~want->caps) || c.streams == 0 || c.streams > streams)
        return rd_fail(RD_ESTREAM, "receiver %s granted parameters we did not ask for", tp->peer);
    uint8_t mac[RD_MAC_LEN];
    rd_auth_mac(k, RD_ROLE_SENDER, &h, &c, mac);
    rc = rd_send_ctrl(tp, RD_AUTH, mac, sizeof mac);
    if (rc)
        return rc;
    rc = expect(tp, &b, &f, RD_ACCEPT, RD_SENDER_WAIT_MS, "receiver");
    if (rc)
        return rc;
    tp->ops->release(tp, b);
    agreed->chunk_size = c.chunk_size;
    agreed->depth = c.depth;
    agreed->caps = c.caps;
    agreed->streams = c.streams;
    rd_auth_join_key(k, &h, &c, agreed->join_key);
    if (c.streams > 1)
        return RD_OK;
    return tp->ops->setup_ring(tp, RD_DIR_SEND, RD_FRAME_HDR + (size_t)c.chunk_size, c.depth);
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

int rd_session_receiver(struct rd_transport *tp, const struct rd_key *k, const struct rd_params *limits,
                        struct rd_params *agreed)
{
    struct rd_hello h;
    struct rd_buf *b;
    struct rd_frame f;
    int rc = expect(tp, &b, &f, RD_HELLO, RD_HELLO_MS, "sender");
    if (rc)
        return rc;
    int pe = rd_hello_decode(f.payload, f.length, &h);
    tp->ops->release(tp, b);
    if (pe)
        return rd_fail(RD_ESTREAM, "malformed HELLO from %s", tp->peer);
    if (h.version_min > RD_PROTO_VERSION || h.version_max < RD_PROTO_VERSION) {
        char msg[120];
        snprintf(msg, sizeof msg, "receiver speaks protocol version %u only", RD_PROTO_VERSION);
        rd_send_reason(tp, RD_REJECT, RD_ESTREAM, msg);
        return rd_fail(RD_ESTREAM, "sender %s speaks protocol versions %u..%u, not %u", tp->peer,
                       h.version_min, h.version_max, RD_PROTO_VERSION);
    }
    if (h.chunk_size < RD_MIN_CHUNK || h.depth == 0) {
        rd_send_reason(tp, RD_REJECT, RD_ESTREAM, "chunk size or depth out of range");
        return rd_fail(RD_ESTREAM, "sender %s asked for chunk %u depth %u", tp->peer, h.chunk_size, h.depth);
    }
    /* striping is for TCP, where one connection is bound to one core; RDMA needs none */
    uint32_t max_streams = tp->ops == &rd_tcp_ops && limits->streams ? limits->streams : 1;
    struct rd_challenge c = {
        .caps = h.caps & limits->caps,
        .chunk_size = min_u32(h.chunk_size, limits->chunk_size),
        .depth = min_u32(h.depth, limits->depth),
        .streams = min_u32(h.streams ? h.streams : 1, min_u32(max_streams, RD_MAX_STREAMS)),
    };
    if (rd_random(c.nonce, sizeof c.nonce))
        return rd_fail(RD_EIO, "no randomness available");
    rd_auth_mac(k, RD_ROLE_RECEIVER, &h, &c, c.mac);
    uint8_t out[RD_CHALLENGE_LEN];
    rc = rd_send_ctrl(tp, RD_CHALLENGE, out, (uint32_t)rd_challenge_encode(&c, out));
    if (rc)
        return rc;
    rc = expect(tp, &b, &f, RD_AUTH, RD_HANDSHAKE_MS, "sender");
    if (rc)
        return rc;
    int ok = f.length == RD_AUTH_LEN && rd_auth_check(k, RD_ROLE_SENDER, &h, &c, f.payload);
    tp->ops->release(tp, b);
    if (!ok) {
        rd_send_reason(tp, RD_REJECT, RD_EAUTH, "authentication failed (wrong key)");
        return rd_fail(RD_EAUTH, "authentication failed for sender %s (wrong key?)", tp->peer);
    }
    if (c.streams == 1) {
        rc = tp->ops->setup_ring(tp, RD_DIR_RECV, RD_FRAME_HDR + (size_t)c.chunk_size, c.depth);
        if (rc)
            return rc;
    }
    agreed->chunk_size = c.chunk_size;
    agreed->depth = c.depth;
    agreed->caps = c.caps;
    agreed->streams = c.streams;
    rd_auth_join_key(k, &h, &c, agreed->join_key);
    return rd_send_ctrl(tp, RD_ACCEPT, NULL, 0);
}

int rd_session_join(struct rd_transport *tp, const struct rd_params *agreed, uint32_t index)
{
    struct rd_join j = { .index = index };
    uint8_t out[RD_JOIN_LEN];
    struct rd_buf *b;
    struct rd_frame f;
    rd_auth_join_mac(agreed->join_key, index, j.mac);
    int rc = rd_send_ctrl(tp, RD_JOIN, out, (uint32_t)rd_join_encode(&j, out));
    if (!rc)
        rc = expect(tp, &b, &f, RD_ACCEPT, RD_SENDER_WAIT_MS, "receiver");
    if (!rc)
        tp->ops->release(tp, b);
    return rc;
}

int rd_session_accept_join(struct rd_transport *tp, const struct rd_params *agreed,
                           const unsigned char *taken, uint32_t *index)
{
    struct rd_buf *b;
    struct rd_frame f;
    struct rd_join j;
    int rc = expect(tp, &b, &f, RD_JOIN, RD_HELLO_MS, "sender");
    if (rc)
        return rc;
    int pe = rd_join_decode(f.payload, f.length, &j);
    tp->ops->release(tp, b);
    if (pe)
        return rd_fail(RD_ESTREAM, "malformed JOIN from %s", tp->peer);
    if (j.index == 0 || j.index >= agreed->streams || taken[j.index] ||
        !rd_auth_join_check(agreed->join_key, j.index, j.mac)) {
        rd_send_reason(tp, RD_REJECT, RD_EAUTH, "not a stripe of this session");
        return rd_fail(RD_EAUTH, "connection from %s is not a stripe of this session", tp->peer);
    }
    *index = j.index;
    return rd_send_ctrl(tp, RD_ACCEPT, NULL, 0);
}
