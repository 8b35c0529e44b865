#include "transport/rd_session.h"

#include "transport/rd_rails.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"
#include "util/rd_memlock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Tag b's sealed frame (payload in place) under key. */
static int tag_frame(struct rd_transport *tp, struct rd_buf *b, const uint8_t key[RD_KEY_LEN], int dir)
{
    struct rd_tagger *t = rd_tagger_new(key);
    int rc = !t || rd_frame_tag(t, (enum rd_tag_dir)dir, b->data, b->data + RD_FRAME_HDR);
    rd_tagger_free(t);
    return rc ? rd_fail(RD_EIO, "libcrypto cannot compute a frame tag") : RD_OK;
}

static int send_frame(struct rd_transport *tp, uint8_t type, const void *payload, uint32_t len,
                      const uint8_t *key, int dir, uint64_t seq)
{
    struct rd_buf *b;
    int rc = tp->ops->get_send_buf(tp, &b);
    if (rc)
        return rc;
    if (len)
        memcpy(b->data + RD_FRAME_HDR, payload, len);
    b->len = rd_frame_seal(b->data, type, 0, len, seq);
    if (key && (rc = tag_frame(tp, b, key, dir))) {
        /* the buffer goes back empty: a zero-length frame nobody will trust */
        b->len = rd_frame_seal(b->data, RD_ABORT, 0, 0, 0);
    }
    int src = tp->ops->send(tp, b);
    return rc ? rc : src;
}

/* The nonce of a hop-keyed frame: random, as the hop key tags a handful of frames from
 * several threads, and their nonces must differ. 0 on success. */
static int hop_seq(uint64_t *seq)
{
    return rd_random(seq, sizeof *seq) ? rd_fail(RD_EIO, "no randomness available") : RD_OK;
}

/* The frames that, once a connection is authenticated, carry its hop key's tag. */
static int hop_tagged(uint8_t type)
{
    return type == RD_ABORT || type == RD_REJECT || type == RD_RAILS;
}

int rd_send_ctrl(struct rd_transport *tp, uint8_t type, const void *payload, uint32_t len)
{
    if (tp->hop_dir && hop_tagged(type)) {
        uint64_t seq;
        int rc = hop_seq(&seq);
        return rc ? rc : send_frame(tp, type, payload, len, tp->hop_key, tp->hop_dir, seq);
    }
    return send_frame(tp, type, payload, len, NULL, 0, 0);
}

void rd_seal_hop(struct rd_transport *tp, struct rd_buf *b, uint8_t type, uint32_t len)
{
    uint64_t seq = 0;
    if (tp->hop_dir && hop_seq(&seq) == RD_OK) {
        b->len = rd_frame_seal(b->data, type, 0, len, seq);
        tag_frame(tp, b, tp->hop_key, tp->hop_dir);
    } else {
        b->len = rd_frame_seal(b->data, type, 0, len, 0);
    }
}

int rd_send_raw(struct rd_transport *tp, const uint8_t *frame, size_t len)
{
    struct rd_buf *b;
    int rc = tp->ops->get_send_buf(tp, &b);
    if (rc)
        return rc;
    if (len > b->cap) {
        b->len = rd_frame_seal(b->data, RD_ABORT, 0, 0, 0);
        tp->ops->send(tp, b);
        return rd_fail(RD_ESTREAM, "a %zu-byte frame does not fit a control frame", len);
    }
    memcpy(b->data, frame, len);
    b->len = len;
    return tp->ops->send(tp, b);
}

int rd_send_tagged(struct rd_transport *tp, uint8_t type, const void *payload, uint32_t len,
                   const uint8_t key[RD_KEY_LEN], enum rd_tag_dir dir, uint64_t seq)
{
    return send_frame(tp, type, payload, len, key, dir, seq);
}

int rd_check_tagged(struct rd_transport *tp, const uint8_t *hdr, const struct rd_frame *f,
                    const uint8_t key[RD_KEY_LEN], enum rd_tag_dir dir, const char *who)
{
    struct rd_tagger *t = rd_tagger_new(key);
    if (!t)
        return rd_fail(RD_EIO, "out of memory");
    int pe = rd_frame_check(t, dir, hdr, f);
    rd_tagger_free(t);
    if (pe != RD_P_OK)
        return rd_fail(RD_ESTREAM, "stream corrupt: %s %s sent a %s that fails its authentication tag",
                       who, tp->peer, rd_frame_type_name(f->type));
    return RD_OK;
}

int rd_check_hop(struct rd_transport *tp, const uint8_t *hdr, const struct rd_frame *f)
{
    if (!tp->hop_dir)
        return RD_P_TAG;   /* no key agreed: nothing can carry its tag */
    struct rd_tagger *t = rd_tagger_new(tp->hop_key);
    int peer_dir = tp->hop_dir == RD_TAG_HOP_DOWN ? RD_TAG_HOP_UP : RD_TAG_HOP_DOWN;
    int pe = t ? rd_frame_check(t, (enum rd_tag_dir)peer_dir, hdr, f) : RD_P_TAG;
    rd_tagger_free(t);
    return pe;
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

/* A handshake frame carries no tag (its MACs cover the payload alone), so its seq is 0 and
 * its tag zero, as rd_proto.h says: anything else there is a forgery's room, refused. */
static int handshake_clean(const struct rd_frame *f)
{
    static const uint8_t zero[RD_TAG_LEN];
    int handshake = f->type == RD_HELLO || f->type == RD_CHALLENGE || f->type == RD_AUTH ||
                    f->type == RD_ACCEPT || f->type == RD_JOIN;
    return !handshake || (f->seq == 0 && memcmp(f->tag, zero, sizeof zero) == 0);
}

/* the sender's wait for each answer of the receiver */
static int answer_ms(const struct rd_transport *tp)
{
    return tp->answer_ms > 0 ? tp->answer_ms : RD_SENDER_WAIT_MS;
}

static int recv_ctrl(struct rd_transport *tp, int timeout_ms, struct rd_buf **bp, struct rd_frame *f,
                     int answer)
{
    struct rd_buf *b;
    int rc = tp->ops->recv(tp, &b, timeout_ms);
    if (rc) {
        /* bytes that are no frame from a peer still there: say so (a REJECT), so that its
         * sender does not take our close for a busy receiver's and try again (rd_run.c) */
        if (answer && rc == RD_ESTREAM && !tp->lost)
            rd_send_reason(tp, RD_REJECT, RD_ESTREAM, "the receiver could not read a frame of yours");
        else if (answer && rc == RD_ECONNECT)   /* a frame whose length lied waits here too */
            rd_send_reason(tp, RD_REJECT, RD_ESTREAM, "timed out waiting for a frame of yours");
        return rc;
    }
    int pe = rd_frame_parse(b->data, b->len, b->cap, f);
    if (pe == RD_P_OK && tp->hop_dir && hop_tagged(f->type))
        pe = rd_check_hop(tp, b->data, f);
    else if (pe == RD_P_OK && !handshake_clean(f))
        pe = RD_P_TAG;
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
        if (answer) {   /* as above: a bad frame is answered, never only a close */
            char text[120];
            snprintf(text, sizeof text, "bad frame: %s", rd_proto_strerror(pe));
            rd_send_reason(tp, RD_REJECT, RD_ESTREAM, text);
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
    /* whatever went wrong over there, here it means the stream did not get through; but a
     * receiver that turned us away for another sender (RD_ECONNECT) is one that refused
     * the connection, exit 2 as the README says */
    int code = r.code == RD_EAUTH ? RD_EAUTH : r.code == RD_ECONNECT && f->type == RD_REJECT ? RD_ECONNECT : RD_ESTREAM;
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

/* What the handshake leaves behind on both ends. */
static void keep_keys(struct rd_transport *tp, const struct rd_session_keys *keys, int we_send,
                      const struct rd_challenge *c, struct rd_params *agreed)
{
    memcpy(tp->hop_key, keys->hop, sizeof tp->hop_key);
    tp->hop_dir = we_send ? RD_TAG_HOP_DOWN : RD_TAG_HOP_UP;
    agreed->chunk_size = c->chunk_size;
    agreed->depth = c->depth;
    agreed->caps = c->caps;
    agreed->streams = c->streams;
    memcpy(agreed->join_key, keys->join, sizeof agreed->join_key);
    memcpy(agreed->stream_key, keys->stream, sizeof agreed->stream_key);
}

/* Sender: the receiver's RAILS, which follows its ACCEPT when RD_CAP_RAILS was granted
 * (hop-tagged: rd_recv_ctrl checks it). */
static int recv_rails(struct rd_transport *tp, struct rd_params *agreed)
{
    struct rd_buf *b;
    struct rd_frame f;
    int rc = expect(tp, &b, &f, RD_RAILS, answer_ms(tp), "receiver");
    if (rc)
        return rc;
    int pe = rd_rails_decode(f.payload, f.length, &agreed->rails);
    tp->ops->release(tp, b);
    return pe ? rd_fail(RD_ESTREAM, "malformed RAILS from %s", tp->peer) : RD_OK;
}

/* A relay pins both hops' rings, and the upstream's twice (rd_verbs_pin_relay). Where not even
 * its smallest rings fit in ulimit -l, its first registrations might still succeed and a later
 * one fail: so it fails before any, naming the limit it needs for the depth asked. */
static int relay_unpinnable(const struct rd_challenge *c)
{
    int cap = 0;
    unsigned long long have = (unsigned long long)rd_memlock_limit(&cap) / 1024,
                       need = (rd_verbs_pin_relay(c->chunk_size, c->depth, c->streams) + 1023) / 1024;
    return rd_fail(RD_EIO, "a relay cannot register its RDMA buffers (%llu KiB: both hops' rings, the "
                   "upstream's twice): locked-memory limit is %llu KiB; raise it (ulimit -l %llu or "
                   "unlimited) or lower --chunk-size/--depth", need, have, need);
}

/* Receiver: whether this sender gets RAILS, and the streams it is granted: as many as the
 * sender asked, up to our ports. A sender asks for rails only without --streams, so one
 * that gets none gets one connection. */
static int grant_rails(struct rd_transport *tp, const struct rd_hello *h, const struct rd_params *limits,
                       struct rd_challenge *c)
{
    if (!(h->caps & RD_CAP_RAILS))
        return 0;
    unsigned ports = rd_rails_distinct(&limits->rails);
    if (tp->ops != &rd_verbs_ops || ports < 2 || tp->local.ss_family == AF_UNSPEC) {
        c->streams = 1;
        return 0;
    }
    if (c->streams > ports)
        c->streams = ports;
    if (c->streams < 2)
        return 0;
    c->caps |= RD_CAP_RAILS;
    return 1;
}

static int send_rails(struct rd_transport *tp, const struct rd_params *limits)
{
    struct rd_rail_addr first;
    struct rd_rails r;
    uint8_t out[RD_RAILS_MAX_LEN];
    if (rd_rail_addr_of((const struct sockaddr *)&tp->local, &first))
        return rd_fail(RD_EIO, "connection from %s: no local address for RAILS", tp->peer);
    rd_rails_advert(&limits->rails, &first, &r);
    return rd_send_ctrl(tp, RD_RAILS, out, (uint32_t)rd_rails_encode(&r, out));
}

/* Sender: a receiver that closes the connection in the handshake without a word (no REJECT)
 * dropped it: busy with other handshakes (rd_waiting stops one when connections flood it)
 * or gone. That is RD_ECONNECT, which rdsend retries for its --timeout, not a
 * broken stream. */
static int dropped_is_busy(struct rd_transport *tp, int rc)
{
    if (rc == RD_ESTREAM && tp->lost)
        return rd_fail_instead(RD_ECONNECT, "receiver %s closed the connection during the handshake (busy with other "
                               "connections, or gone)", tp->peer);
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
    struct rd_proof proof;
    struct rd_session_keys keys;
    struct rd_buf *b;
    struct rd_frame f;
    uint8_t out[RD_CHALLENGE_LEN];
    if (rd_random(h.nonce, sizeof h.nonce))
        return rd_fail(RD_EIO, "no randomness available");
    int rc = rd_send_ctrl(tp, RD_HELLO, out, (uint32_t)rd_hello_encode(&h, out));
    if (rc)   /* reset before a word: a connection of the listen queue the receiver closed */
        return dropped_is_busy(tp, rc);
    rc = dropped_is_busy(tp, expect(tp, &b, &f, RD_CHALLENGE, answer_ms(tp), "receiver"));
    if (rc)
        return rc;
    int pe = rd_challenge_decode(f.payload, f.length, &c);
    tp->ops->release(tp, b);
    if (pe)
        return rd_fail(RD_ESTREAM, "malformed CHALLENGE from %s", tp->peer);
    if (c.chunk_size < RD_MIN_CHUNK || c.chunk_size > want->chunk_size || c.depth == 0 ||
        c.depth > want->depth || (c.caps & ~want->caps) || c.streams == 0 || c.streams > streams) {
        rd_send_reason(tp, RD_REJECT, RD_ESTREAM, "granted parameters the sender did not ask for");
        return rd_fail(RD_ESTREAM, "receiver %s granted parameters we did not ask for", tp->peer);
    }
    if ((want->caps & RD_FLAG_ENCRYPTED) && !(c.caps & RD_FLAG_ENCRYPTED)) {   /* --encrypt */
        rd_send_reason(tp, RD_REJECT, RD_EAUTH, "sender requires --encrypt, and this receiver cannot decrypt");
        return rd_fail(RD_EAUTH, "receiver %s cannot decrypt, and --encrypt was given", tp->peer);
    }
    if (rd_auth_sender_prove(k, &h, &c, &proof, &keys)) {
        rd_send_reason(tp, RD_REJECT, RD_EAUTH, "invalid key share");
        return rd_fail(RD_EAUTH, "authentication failed: receiver %s sent an invalid key share", tp->peer);
    }
    uint8_t auth[RD_AUTH_LEN];
    rc = rd_send_ctrl(tp, RD_AUTH, auth, (uint32_t)rd_proof_encode(&proof, auth));
    if (!rc)
        rc = dropped_is_busy(tp, expect(tp, &b, &f, RD_ACCEPT, answer_ms(tp), "receiver"));
    if (rc)
        goto wipe;
    int ok = f.length == RD_ACCEPT_LEN && rd_auth_sender_check(&keys, &h, &c, &proof, f.payload);
    tp->ops->release(tp, b);
    if (!ok) {
        /* only a receiver that knows the key gets this far with a right proof: a wrong one
         * is an impostor or a peer in the middle */
        rc = rd_fail(RD_EAUTH, "authentication failed: receiver %s did not prove the key", tp->peer);
        goto wipe;
    }
    keep_keys(tp, &keys, 1, &c, agreed);
    if (c.caps & RD_CAP_RAILS)
        rc = recv_rails(tp, agreed);
    if (!rc && c.streams == 1)
        rc = tp->ops->setup_ring(tp, RD_DIR_SEND, RD_FRAME_HDR + (size_t)c.chunk_size, c.depth);
wipe:
    rd_session_keys_wipe(&keys);
    return rc;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

/* Take the one stream (a->claim), waiting up to a->claim_wait_ms for it to be given back. */
static int take_claim(const struct rd_receiver_arg *a)
{
    double until = rd_now() + a->claim_wait_ms / 1000.0;
    for (;;) {
        int free_ = 0;
        if (atomic_compare_exchange_strong(a->claim, &free_, 1))
            return 1;
        if (rd_now() >= until)
            return 0;
        struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

/* a: NULL, or what rd_receiver_arg adds: the receiver's one stream (claim) that the first
 * sender to prove the key takes before its ACCEPT */
static int receiver(struct rd_transport *tp, const struct rd_key *k, const struct rd_params *limits,
                    struct rd_params *agreed, const struct rd_receiver_arg *a)
{
    atomic_int *claim = a ? a->claim : NULL;
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
    /* striping over TCP (a core per connection) and RDMA (a QP each, on one or more rails) */
    uint32_t max_streams = (tp->ops == &rd_tcp_ops || tp->ops == &rd_verbs_ops) && limits->streams ? limits->streams : 1;
    struct rd_challenge c = {
        .caps = h.caps & limits->caps & ~RD_CAP_RAILS,
        .chunk_size = min_u32(h.chunk_size, limits->chunk_size),
        .depth = min_u32(h.depth, limits->depth),
        .streams = min_u32(h.streams ? h.streams : 1, min_u32(max_streams, RD_MAX_STREAMS)),
    };
    int rails = grant_rails(tp, &h, limits, &c);
    if (limits->max_inflight && (uint64_t)c.chunk_size * c.depth > limits->max_inflight) {
        uint64_t fits = limits->max_inflight / c.chunk_size;   /* a sender's ask never sizes our memory */
        c.depth = fits ? (uint32_t)fits : 1;
    }
    /* over RDMA the ring is pinned: grant no more frames than ulimit -l lets this end pin
     * (the sender's limit may be higher); where none fit, registering says what is needed */
    uint32_t asked = c.depth, fit = c.depth;
    if (tp->ops == &rd_verbs_ops)
        fit = rd_verbs_pinnable_depth(c.chunk_size, c.depth, c.streams, limits->relay);
    if (fit)
        c.depth = fit;
    struct rd_pake st;
    struct rd_proof proof;
    struct rd_session_keys keys;
    uint8_t mac[RD_MAC_LEN];
    if (rd_random(c.nonce, sizeof c.nonce))
        return rd_fail(RD_EIO, "no randomness available");
    if (rd_auth_receiver_start(&st, k, &h, &c))
        return rd_fail(RD_EIO, "libsodium cannot start the key exchange");
    uint8_t out[RD_CHALLENGE_LEN];
    rc = rd_send_ctrl(tp, RD_CHALLENGE, out, (uint32_t)rd_challenge_encode(&c, out));
    if (!rc)
        rc = expect(tp, &b, &f, RD_AUTH, RD_HANDSHAKE_MS, "sender");
    if (rc) {
        rd_pake_wipe(&st);
        return rc;
    }
    int ok = rd_proof_decode(f.payload, f.length, &proof) == RD_P_OK &&
             rd_auth_receiver_check(&st, &h, &c, &proof, &keys, mac);
    rd_pake_wipe(&st);
    tp->ops->release(tp, b);
    if (!ok) {
        rd_send_reason(tp, RD_REJECT, RD_EAUTH, "authentication failed (wrong key)");
        return rd_fail(RD_EAUTH, "authentication failed for sender %s (wrong key?)", tp->peer);
    }
    tp->proved = 1;
    /* rdrecv --encrypt, told only to a sender that proved the key: a stranger learns no policy,
     * and a wrong key is named as such first */
    if ((h.caps & limits->require_caps) != limits->require_caps) {
        rd_session_keys_wipe(&keys);
        rd_send_reason(tp, RD_REJECT, RD_EAUTH, "receiver requires --encrypt, and this sender does not encrypt");
        return rd_fail(RD_EAUTH, "sender %s does not encrypt, and this receiver requires --encrypt", tp->peer);
    }
    if (!fit && limits->relay)   /* its first ring may fit, the rest would not: say it now */
        rc = relay_unpinnable(&c);
    if (!rc && c.streams == 1)
        rc = tp->ops->setup_ring(tp, RD_DIR_RECV, RD_FRAME_HDR + (size_t)c.chunk_size, c.depth);
    /* several senders with the key at once: one stream is served, the others are told so
     * (exit 2 there, as a sender that finds the port closed) rather than ACCEPTed and then
     * closed without a word, which read as a broken stream (exit 4) */
    int claimed = 0;
    if (!rc && claim) {
        if (!take_claim(a))
            rc = rd_fail(RD_ECONNECT, "sender %s turned away: %s", tp->peer,
                         a->busy ? a->busy : "another sender was served first");
        else
            claimed = 1;
    }
    if (rc)   /* the sender proved the key: it learns why this end cannot take its stream */
        rd_send_reason(tp, RD_REJECT, rd_error_code(), rc == RD_ECONNECT && claim && !claimed
                       ? (a->busy ? a->busy : "the receiver is serving another sender") : rd_error_msg());
    if (!rc) {
        keep_keys(tp, &keys, 0, &c, agreed);
        agreed->depth_asked = c.depth < asked ? asked : 0;
        rc = rd_send_ctrl(tp, RD_ACCEPT, mac, sizeof mac);
    }
    if (!rc && rails)
        rc = send_rails(tp, limits);
    if (rc && claimed)
        atomic_store(claim, 0);   /* it failed after all: the next sender may have the stream */
    rd_session_keys_wipe(&keys);
    return rc;
}

int rd_session_receiver(struct rd_transport *tp, const struct rd_key *k, const struct rd_params *limits,
                        struct rd_params *agreed)
{
    return receiver(tp, k, limits, agreed, NULL);
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
        rc = expect(tp, &b, &f, RD_ACCEPT, answer_ms(tp), "receiver");
    if (!rc)
        tp->ops->release(tp, b);
    return rc;
}

int rd_session_read_join(struct rd_transport *tp, const struct rd_params *agreed, uint32_t *index)
{
    struct rd_buf *b;
    struct rd_frame f;
    struct rd_join j;
    int rc = rd_recv_ctrl(tp, RD_HELLO_MS, &b, &f);
    if (rc)
        return rc;
    if (f.type == RD_HELLO) {   /* another sender, while this one's stripes join: it is told */
        tp->ops->release(tp, b);
        rd_send_reason(tp, RD_REJECT, RD_ECONNECT, "the receiver is serving another sender");
        return rd_fail(RD_ECONNECT, "sender %s turned away: another sender is being served", tp->peer);
    }
    if (f.type != RD_JOIN) {
        rc = f.type == RD_ABORT || f.type == RD_REJECT
                 ? rd_fail_from_reason(&f, "sender")
                 : rd_fail(RD_ESTREAM, "protocol error: expected JOIN from %s, got %s", tp->peer,
                           rd_frame_type_name(f.type));
        tp->ops->release(tp, b);
        return rc;
    }
    int pe = rd_join_decode(f.payload, f.length, &j);
    tp->ops->release(tp, b);
    if (pe)
        return rd_fail(RD_ESTREAM, "malformed JOIN from %s", tp->peer);
    if (j.index == 0 || j.index >= agreed->streams || !rd_auth_join_check(agreed->join_key, j.index, j.mac))
        return rd_session_refuse_join(tp);
    *index = j.index;
    return RD_OK;
}

int rd_session_refuse_join(struct rd_transport *tp)
{
    rd_send_reason(tp, RD_REJECT, RD_EAUTH, "not a stripe of this session");
    return rd_fail(RD_EAUTH, "connection from %s is not a stripe of this session", tp->peer);
}

int rd_session_accept_join(struct rd_transport *tp, const struct rd_params *agreed,
                           const unsigned char *taken, uint32_t *index)
{
    uint32_t idx;
    int rc = rd_session_read_join(tp, agreed, &idx);
    if (rc)
        return rc;
    if (taken[idx])
        return rd_session_refuse_join(tp);
    *index = idx;
    return rd_send_ctrl(tp, RD_ACCEPT, NULL, 0);
}

void rd_session_receiver_discarded(void *arg)
{
    const struct rd_receiver_arg *a = arg;
    if (a->claim)
        atomic_store(a->claim, 0);
}

int rd_session_receiver_arg(struct rd_transport *tp, void *arg, void *agreed)
{
    const struct rd_receiver_arg *a = arg;
    return receiver(tp, a->key, &a->limits, agreed, a);
}
