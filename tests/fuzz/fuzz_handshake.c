/* fuzz_handshake.c - the protocol v2 handshake (rd_session.c, rd_auth.c: CPace and key
 * confirmation) against a hostile peer whose messages are the fuzz input, both roles, over
 * the scripted transport; and the control frames of an authenticated connection.
 *
 * Input: mode:u8, then chunk:u32 depth:u16 streams:u8 caps:u8 fail_send:u8 taken:u16
 * (the local side's limits or wishes), then messages (fz_input.h). caps: bits 0-1 are
 * RD_FLAG_COMPRESSED and _ENCRYPTED; bit 7 adds RD_CAP_RAILS (the sender offers rails; the
 * receiver's limits get a rails list of 2 + (bits 2-4 % 7) ports, and the connection a
 * local address, so only the transport (not RDMA) keeps it from granting them). Modes:
 *   0  rd_session_receiver fed a hostile sender's HELLO, AUTH, ...
 *   1  rd_session_sender fed a hostile receiver's CHALLENGE, ACCEPT, RAILS, ...
 *   2  rd_session_accept_join fed a hostile extra connection's JOIN
 *   3  rd_session_join fed the answer to its JOIN
 *   4  rd_recv_ctrl / rd_check_tagged on a connection the handshake authenticated (hop key
 *      set; taken's low bit picks our end), fed any frames
 * The fuzzer cannot compute a CPace proof, a confirmation MAC, a JOIN MAC or a tag: the
 * target does it for a message that asks (FZ_FIXMAC), as a peer that knows the key (or, with
 * FZ_WRONGKEY, another key) would, from what it sent and saw. Those bytes never appear in the
 * input and the shares are fresh each run, so the fuzzer cannot replay them either.
 * Mode 1: a RAILS, ABORT or REJECT that asks gets the hop tag of the keys the target derived
 * as receiver, in the receiver's direction (FZ_SEQ: the sender's, reflected; FZ_WRONGKEY:
 * under the stream key instead).
 * Checked after each run:
 *   - a side succeeds only if the peer proved the key: the proof (or MAC) it got is the one
 *     the target computed for this very session with the right key;
 *   - then both ends hold the same keys (stream, join, hop) and the right hop direction, and
 *     the parameters are inside the local limits;
 *   - the receiver never ACCEPTs an unproven sender; the sender never proves anything (AUTH)
 *     on parameters it did not ask for; the sender's AUTH always verifies for a receiver that
 *     knows the key, never for one that does not;
 *   - rails: the sender succeeds with RD_CAP_RAILS only if it offered it and then got a RAILS
 *     with the right hop tag (receiver's direction) and a payload that decodes, and then
 *     agreed->rails is that payload; a forged (untagged, reflected, wrongly keyed) or malformed
 *     RAILS makes it fail; without rails it reads nothing after ACCEPT. The receiver, here
 *     not on RDMA, never grants RD_CAP_RAILS, grants one stream to a sender that asked for
 *     rails, and never sends RAILS;
 *   - a peer that does everything right (RAILS included, when it granted rails) is always
 *     served (unless the link dies);
 *   - everything sent parses, handshake frames carry seq 0 and no tag, goodbyes on an
 *     authenticated connection carry the hop tag; nobody here sends RAILS;
 *   - mode 4: an ABORT/REJECT is taken iff its hop tag is right (the peer's direction), a
 *     stream frame passes rd_check_tagged iff its stream tag is right.
 */
#include "fz_input.h"
#include "fz_transport.h"

#include "wire/rd_auth.h"
#include "util/rd_error.h"
#include "wire/rd_proto.h"
#include "wire/rd_tag.h"
#include "transport/rd_session.h"

#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_check.h"

enum { M_RECEIVER, M_SENDER, M_ACCEPT_JOIN, M_JOIN, M_CTRL, M_COUNT };

#define CTRL_MAX 8   /* mode 4: frames received per run */

struct hs {
    struct fz_in in;
    struct fz_tp t;
    int mode;
    struct rd_key key, wrong_key;
    uint8_t join_key[32], wrong_join_key[32];
    uint8_t hop_key[RD_KEY_LEN], stream_key[RD_KEY_LEN];
    unsigned delivered;              /* frames handed to the side under test */
    struct rd_hello h;               /* the HELLO of this session, once known */
    int have_h;
    struct rd_challenge c;           /* the CHALLENGE of this session, once known */
    int have_c;
    /* the target as a key-holding peer */
    struct rd_session_keys keys;     /* the keys it derived (M_RECEIVER: as sender; M_SENDER: as receiver) */
    int have_keys;                   /* ... with the right key, for the session's h and c */
    uint8_t made[RD_AUTH_LEN];       /* the proof (M_RECEIVER) or ACCEPT MAC (M_SENDER) it made */
    size_t made_len;
    struct rd_proof made_proof;      /* M_RECEIVER: the proof, decoded */
    struct rd_pake st;               /* M_SENDER: its receiver state, after the CHALLENGE it made */
    struct rd_challenge st_c;        /* ... and that CHALLENGE */
    int have_st, st_right_key;
    struct rd_proof auth_seen;       /* M_SENDER: the AUTH the sender under test sent */
    int have_auth, auth_verified;
    int proved;                      /* the peer proved the key at its turn */
    int rails_right;                 /* M_SENDER: the frame after a proved ACCEPT is a RAILS with
                                      * the right hop tag and a payload that decodes ... */
    struct rd_rails rails;           /* ... into this */
    uint32_t join_index;             /* M_ACCEPT_JOIN: the index the proved JOIN named */
    int ctrl_valid[CTRL_MAX + 1];    /* M_CTRL: frame i is a goodbye with a right hop tag */
    uint8_t frame[RD_FRAME_HDR + FZ_MSG_MAX];
};

static struct rd_key fuzz_key, fuzz_wrong_key;
static int have_key;

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Parse a frame as rd_recv_ctrl does (header, length); 1 if it would pass that far. */
static int valid_frame(const uint8_t *p, size_t n, struct rd_frame *f)
{
    return n <= RD_CTRL_FRAME && rd_frame_parse(p, n, RD_CTRL_FRAME, f) == RD_P_OK;
}

static int tag_ok(const uint8_t *key, enum rd_tag_dir dir, const uint8_t *p, const struct rd_frame *f)
{
    struct rd_tagger *t = rd_tagger_new(key);
    if (!t)
        abort();
    int ok = rd_frame_check(t, dir, p, f) == RD_P_OK;
    rd_tagger_free(t);
    return ok;
}

static enum rd_tag_dir our_hop_dir(const struct hs *s)
{
    return (enum rd_tag_dir)s->t.tp.hop_dir;
}

static enum rd_tag_dir peer_hop_dir(const struct hs *s)
{
    return s->t.tp.hop_dir == RD_TAG_HOP_DOWN ? RD_TAG_HOP_UP : RD_TAG_HOP_DOWN;
}

/* The hostile peer writes what only a holder of the key could into its payload; *tag_key
 * and *tag_dir: M_CTRL, the key and direction to tag the sealed frame with (NULL: none). */
static void fix_mac(struct hs *s, const struct fz_msg *m, uint8_t *pl, const uint8_t **tag_key,
                    enum rd_tag_dir *tag_dir)
{
    int wrong = (m->ctl & FZ_WRONGKEY) != 0;
    size_t len = m->len;
    if (s->mode == M_RECEIVER && m->type == RD_AUTH && s->have_h && s->have_c && len >= RD_AUTH_LEN) {
        struct rd_proof p;
        struct rd_session_keys k;
        if (rd_auth_sender_prove(wrong ? &s->wrong_key : &s->key, &s->h, &s->c, &p, &k) != 0)
            return;   /* the receiver's share is invalid: nothing to prove on */
        rd_proof_encode(&p, pl);
        memcpy(s->made, pl, RD_AUTH_LEN);
        s->made_len = RD_AUTH_LEN;
        s->made_proof = p;
        if (!wrong) {
            s->keys = k;
            s->have_keys = 1;
        }
        rd_session_keys_wipe(&k);
    } else if (s->mode == M_SENDER && m->type == RD_CHALLENGE && s->have_h && len >= RD_CHALLENGE_LEN) {
        struct rd_challenge c;
        rd_challenge_decode(pl, RD_CHALLENGE_LEN, &c);
        if (s->have_st)
            rd_pake_wipe(&s->st);
        s->have_st = rd_auth_receiver_start(&s->st, wrong ? &s->wrong_key : &s->key, &s->h, &c) == 0;
        s->st_right_key = !wrong;
        s->st_c = c;
        rd_challenge_encode(&c, pl);
    } else if (s->mode == M_SENDER && m->type == RD_ACCEPT && s->have_st && s->have_auth && len >= RD_MAC_LEN) {
        /* the receiver's answer to the AUTH the sender under test sent */
        uint8_t mac[RD_MAC_LEN];
        struct rd_session_keys k;
        struct rd_pake st = s->st;
        if (rd_auth_receiver_check(&st, &s->h, &s->st_c, &s->auth_seen, &k, mac)) {
            memcpy(pl, mac, RD_MAC_LEN);
            memcpy(s->made, mac, RD_MAC_LEN);
            s->made_len = RD_MAC_LEN;
            if (s->st_right_key) {
                s->keys = k;
                s->have_keys = 1;
            }
            rd_session_keys_wipe(&k);
        }
    } else if (s->mode == M_SENDER && s->have_keys &&
               (m->type == RD_RAILS || m->type == RD_ABORT || m->type == RD_REJECT)) {
        /* after ACCEPT: hop-tagged, as a receiver that holds the session's keys sends them */
        *tag_key = wrong ? s->keys.stream : s->keys.hop;
        *tag_dir = (m->ctl & FZ_SEQ) ? RD_TAG_HOP_DOWN : RD_TAG_HOP_UP;
    } else if (s->mode == M_ACCEPT_JOIN && m->type == RD_JOIN && len >= RD_JOIN_LEN) {
        rd_auth_join_mac(wrong ? s->wrong_join_key : s->join_key, get32(pl), pl + 4);
    } else if (s->mode == M_CTRL) {
        if (m->type == RD_ABORT || m->type == RD_REJECT) {
            *tag_key = wrong ? s->stream_key : s->hop_key;
            *tag_dir = (m->ctl & FZ_SEQ) ? our_hop_dir(s) : peer_hop_dir(s);
        } else {
            *tag_key = wrong ? s->hop_key : s->stream_key;
            *tag_dir = (m->ctl & FZ_SEQ) ? RD_TAG_DOWN : RD_TAG_UP;
        }
    }
}

/* A handshake frame as rd_proto.h has it: seq 0 and a zero tag (nothing else there is taken). */
static int clean(const struct rd_frame *f)
{
    static const uint8_t zero[RD_TAG_LEN];
    return f->seq == 0 && memcmp(f->tag, zero, sizeof zero) == 0;
}

/* What the side under test will make of the frame it is about to receive. */
static void observe_delivery(struct hs *s, const uint8_t *p, size_t n)
{
    struct rd_frame f;
    unsigned i = s->delivered++;
    if (!valid_frame(p, n, &f))
        return;
    if (s->mode == M_RECEIVER && i == 0 && f.type == RD_HELLO)
        s->have_h = rd_hello_decode(f.payload, f.length, &s->h) == RD_P_OK;
    /* proved: exactly the proof we computed with the right key for this session */
    if (s->mode == M_RECEIVER && i == 1 && f.type == RD_AUTH && s->have_keys)
        s->proved = f.length == RD_AUTH_LEN && s->made_len == RD_AUTH_LEN && clean(&f) &&
                    memcmp(f.payload, s->made, RD_AUTH_LEN) == 0;
    if (s->mode == M_SENDER && i == 0 && f.type == RD_CHALLENGE && s->have_h)
        s->have_c = rd_challenge_decode(f.payload, f.length, &s->c) == RD_P_OK;
    if (s->mode == M_SENDER && i == 1 && f.type == RD_ACCEPT && s->have_keys && s->have_c &&
        memcmp(&s->c, &s->st_c, sizeof s->c) == 0)
        s->proved = f.length == RD_ACCEPT_LEN && s->made_len == RD_MAC_LEN && clean(&f) &&
                    memcmp(f.payload, s->made, RD_MAC_LEN) == 0;
    /* rails: right only under the hop key of this very session, in the receiver's direction */
    if (s->mode == M_SENDER && i == 2 && f.type == RD_RAILS && s->proved)
        s->rails_right = tag_ok(s->keys.hop, RD_TAG_HOP_UP, p, &f) &&
                         rd_rails_decode(f.payload, f.length, &s->rails) == RD_P_OK;
    if (s->mode == M_ACCEPT_JOIN && i == 0 && f.type == RD_JOIN) {
        struct rd_join j;
        if (clean(&f) && rd_join_decode(f.payload, f.length, &j) == RD_P_OK &&
            rd_auth_join_check(s->join_key, j.index, j.mac)) {
            s->proved = 1;
            s->join_index = j.index;
        }
    }
    if (s->mode == M_CTRL && i < CTRL_MAX && (f.type == RD_ABORT || f.type == RD_REJECT))
        s->ctrl_valid[i] = tag_ok(s->hop_key, peer_hop_dir(s), p, &f);
}

/* recv() asks: the peer sends its next message. */
static void on_recv(struct fz_tp *t, void *arg)
{
    struct hs *s = arg;
    struct fz_msg m;
    if (!fz_next_msg(&s->in, &m)) {
        fz_close_in(t);
        return;
    }
    if (!(m.ctl & FZ_SEAL)) {
        observe_delivery(s, m.bytes, m.len);
        fz_push(t, m.bytes, m.len);
        return;
    }
    uint8_t *pl = s->frame + RD_FRAME_HDR;
    memcpy(pl, m.bytes, m.len);
    const uint8_t *tag_key = NULL;
    enum rd_tag_dir tag_dir = RD_TAG_DOWN;
    if (m.ctl & FZ_FIXMAC)
        fix_mac(s, &m, pl, &tag_key, &tag_dir);
    /* an authenticated connection's frames have a nonce: from the message, or 0 */
    uint64_t seq = 0;
    if (s->mode == M_CTRL && m.len >= 8)
        memcpy(&seq, m.bytes, 8);
    size_t n = rd_frame_seal(s->frame, m.type, 0, (uint32_t)m.len, seq);
    if (tag_key) {
        struct rd_tagger *tg = rd_tagger_new(tag_key);
        if (!tg || rd_frame_tag(tg, tag_dir, s->frame, pl) != 0)
            abort();
        rd_tagger_free(tg);
    }
    if (m.ctl & FZ_BADTAG)
        s->frame[RD_HDR_TAG] ^= 1;
    observe_delivery(s, s->frame, n);
    fz_push(t, s->frame, n);
}

/* send(): remember the transcript the side under test commits to; check what it sends. */
static void on_send(struct fz_tp *t, const uint8_t *p, size_t n, void *arg)
{
    struct hs *s = arg;
    struct rd_frame f;
    CHECK(valid_frame(p, n, &f));   /* whatever we send, the peer can parse */
    CHECK(f.flags == 0);
    CHECK(f.type != RD_RAILS);   /* only a receiver over RDMA sends RAILS, and none runs here */
    static const uint8_t zero[RD_TAG_LEN];
    if (t->tp.hop_dir && (f.type == RD_ABORT || f.type == RD_REJECT)) {
        /* authenticated: our goodbyes carry the hop tag, in our direction */
        CHECK(tag_ok(t->tp.hop_key, our_hop_dir(s), p, &f));
    } else {
        CHECK(f.seq == 0 && memcmp(f.tag, zero, RD_TAG_LEN) == 0);   /* handshake frames: no tag */
    }
    if (s->mode == M_RECEIVER && f.type == RD_CHALLENGE) {
        s->have_c = rd_challenge_decode(f.payload, f.length, &s->c) == RD_P_OK;
        CHECK(s->have_c);
        /* rails only over RDMA: here never, and a sender that asked for them gets one stream */
        CHECK(!(s->c.caps & RD_CAP_RAILS));
        CHECK(!(s->have_h && (s->h.caps & RD_CAP_RAILS)) || s->c.streams == 1);
    }
    if (s->mode == M_SENDER && f.type == RD_HELLO)
        s->have_h = rd_hello_decode(f.payload, f.length, &s->h) == RD_P_OK;
    if (s->mode == M_SENDER && f.type == RD_AUTH) {
        CHECK(s->have_h && s->have_c);
        s->have_auth = rd_proof_decode(f.payload, f.length, &s->auth_seen) == RD_P_OK;
        CHECK(s->have_auth);
        /* a receiver that knows the key (ours, which made this CHALLENGE) accepts the proof;
         * one with another key never does */
        if (s->have_st && memcmp(&s->c, &s->st_c, sizeof s->c) == 0) {
            struct rd_pake st = s->st;
            struct rd_session_keys k;
            uint8_t mac[RD_MAC_LEN];
            s->auth_verified = rd_auth_receiver_check(&st, &s->h, &s->c, &s->auth_seen, &k, mac);
            CHECK(s->auth_verified == s->st_right_key);
            rd_session_keys_wipe(&k);
        }
    }
    if (f.type == RD_REJECT || f.type == RD_ABORT) {
        struct rd_reason r;
        CHECK(rd_reason_decode(f.payload, f.length, &r) == RD_P_OK);
    }
}

static int sent_type(const struct hs *s, uint8_t type)
{
    for (size_t i = 0; i < s->t.ntx; i++)
        if (s->t.tx[i].data[5] == type)
            return 1;
    return 0;
}

static void check_error(int rc)
{
    /* RD_ECONNECT: a REJECT that says the receiver serves another sender, or a HELLO where a
     * JOIN was due (another sender, turned away) */
    CHECK(rc == RD_ESTREAM || rc == RD_EAUTH || rc == RD_EIO || rc == RD_ECONNECT);
    CHECK(rd_error_code() != 0 && rd_error_msg()[0] != '\0');
    CHECK(strchr(rd_error_msg(), '\n') == NULL);   /* one line, whatever the peer wrote */
}

/* Both ends hold the same keys now: ours (s->keys) and what the handshake left. */
static void check_keys(struct hs *s, const struct rd_params *agreed, int we_send)
{
    CHECK(s->have_keys);
    CHECK(memcmp(agreed->stream_key, s->keys.stream, RD_KEY_LEN) == 0);
    CHECK(memcmp(agreed->join_key, s->keys.join, 32) == 0);
    CHECK(memcmp(s->t.tp.hop_key, s->keys.hop, RD_KEY_LEN) == 0);
    CHECK(s->t.tp.hop_dir == (we_send ? RD_TAG_HOP_DOWN : RD_TAG_HOP_UP));
}

/* Mode 4: frames arrive on an authenticated connection. */
static void run_ctrl(struct hs *s, unsigned bits)
{
    rd_random(s->hop_key, sizeof s->hop_key);   /* fresh: nothing to learn across runs */
    rd_random(s->stream_key, sizeof s->stream_key);
    memcpy(s->t.tp.hop_key, s->hop_key, RD_KEY_LEN);
    s->t.tp.hop_dir = bits & 1 ? RD_TAG_HOP_DOWN : RD_TAG_HOP_UP;
    for (int i = 0; i < CTRL_MAX; i++) {
        unsigned idx = s->delivered;   /* the frame recv is about to hand out */
        struct rd_buf *b;
        struct rd_frame f;
        int rc = (bits & 2) ? rd_recv_ctrl_quiet(&s->t.tp, 0, &b, &f) : rd_recv_ctrl(&s->t.tp, 0, &b, &f);
        if (rc != RD_OK) {
            check_error(rc);
            if (idx < CTRL_MAX && s->delivered > idx)
                CHECK(!s->ctrl_valid[idx]);   /* a right goodbye is never refused */
            rd_error_clear();
            if (s->delivered == idx)
                break;   /* nothing more came */
            continue;
        }
        CHECK(idx < s->delivered);
        if (f.type == RD_ABORT || f.type == RD_REJECT) {
            CHECK(idx < CTRL_MAX && s->ctrl_valid[idx]);   /* taken only with the peer's hop tag */
            rd_fail_from_reason(&f, "peer");
            check_error(rd_error_code());
        } else if (f.type == RD_END || f.type == RD_CONFIRM || f.type == RD_DATA) {
            /* a stream frame: its tag is the caller's to check, and right only with the stream key */
            enum rd_tag_dir dir = f.type == RD_CONFIRM ? RD_TAG_UP : RD_TAG_DOWN;
            int want = tag_ok(s->stream_key, dir, b->data, &f);
            int got = rd_check_tagged(&s->t.tp, b->data, &f, s->stream_key, dir, "peer") == RD_OK;
            CHECK(got == want);
            if (!got)
                check_error(rd_error_code());
        }
        s->t.tp.ops->release(&s->t.tp, b);
        rd_error_clear();
    }
    /* and a goodbye of our own: tagged (on_send checks it) */
    rd_send_reason(&s->t.tp, RD_ABORT, RD_ESTREAM, "fuzz: bye");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!have_key) {
        static const char secret[] = "fuzz handshake key", other[] = "not the fuzz handshake key";
        if (rd_key_derive(&fuzz_key, secret, sizeof secret - 1) ||
            rd_key_derive(&fuzz_wrong_key, other, sizeof other - 1))
            abort();
        have_key = 1;
    }
    static struct hs s;
    memset(&s, 0, offsetof(struct hs, frame));
    s.in = (struct fz_in){ data, size };
    s.key = fuzz_key;
    s.wrong_key = fuzz_wrong_key;
    s.mode = fz_byte(&s.in) % M_COUNT;
    struct rd_params lim = { 0 };
    lim.chunk_size = RD_MIN_CHUNK + fz_u32(&s.in) % (RD_MAX_CHUNK - RD_MIN_CHUNK + 1);
    lim.depth = 1 + (fz_byte(&s.in) | fz_byte(&s.in) << 8) % RD_MAX_DEPTH;
    lim.streams = 1 + fz_byte(&s.in) % RD_MAX_STREAMS;
    uint8_t caps = fz_byte(&s.in);
    lim.caps = caps & 3u;
    if (caps & 0x80) {
        /* the sender offers rails; the receiver has some to offer (port i at 10.0.i.1) */
        lim.caps |= RD_CAP_RAILS;
        lim.rails.count = (uint8_t)(2 + ((caps >> 2) & 7) % (RD_MAX_RAILS - 1));
        for (unsigned i = 0; i < lim.rails.count; i++) {
            lim.rails.a[i].family = 4;
            lim.rails.a[i].port = (uint8_t)i;
            memcpy(lim.rails.a[i].addr, (const uint8_t[]){ 10, 0, (uint8_t)i, 1 }, 4);
        }
    }
    uint8_t fail = fz_byte(&s.in);
    unsigned taken_bits = fz_byte(&s.in) | fz_byte(&s.in) << 8;
    rd_error_clear();
    fz_init(&s.t, "fuzz:peer");
    s.t.on_recv = on_recv;
    s.t.on_send = on_send;
    s.t.arg = &s;
    s.t.fail_send = fail < 4 ? fail : -1;   /* the link dies at one of the first sends */
    if (lim.rails.count) {
        /* as an RDMA connection would: this end's address, the first rail's */
        struct sockaddr_in *in = (struct sockaddr_in *)&s.t.tp.local;
        in->sin_family = AF_INET;
        in->sin_port = htons(5000);
        memcpy(&in->sin_addr, lim.rails.a[0].addr, 4);
    }
    for (int i = 0; i < 32; i++) {
        s.join_key[i] = (uint8_t)(i * 37 + 1);
        s.wrong_join_key[i] = (uint8_t)(i * 37 + 2);
    }

    struct rd_params agreed;
    memset(&agreed, 0, sizeof agreed);
    int rc = RD_OK;
    switch (s.mode) {
    case M_RECEIVER:
        rc = rd_session_receiver(&s.t.tp, &s.key, &lim, &agreed);
        if (rc == RD_OK) {
            CHECK(s.proved && s.have_h && s.have_c);
            CHECK(agreed.chunk_size >= RD_MIN_CHUNK && agreed.chunk_size <= lim.chunk_size &&
                  agreed.chunk_size <= s.h.chunk_size);
            CHECK(agreed.depth >= 1 && agreed.depth <= lim.depth && agreed.depth <= s.h.depth);
            CHECK(agreed.streams == 1);   /* striping is for TCP only */
            CHECK((agreed.caps & ~(lim.caps & s.h.caps)) == 0);
            CHECK(s.t.ring_recv == RD_FRAME_HDR + (size_t)agreed.chunk_size && s.t.setup_calls == 1);
            CHECK(s.t.ntx == 2 && s.t.tx[0].data[5] == RD_CHALLENGE && s.t.tx[1].data[5] == RD_ACCEPT);
            check_keys(&s, &agreed, 0);
            /* its ACCEPT proves the key to us, the sender */
            CHECK(s.t.tx[1].len == RD_FRAME_HDR + RD_ACCEPT_LEN);
            CHECK(rd_auth_sender_check(&s.keys, &s.h, &s.c, &s.made_proof, s.t.tx[1].data + RD_FRAME_HDR));
        } else {
            check_error(rc);
            CHECK(!sent_type(&s, RD_ACCEPT) || s.t.fail_send >= 0);
            CHECK(s.t.tp.hop_dir == 0 || s.proved);   /* nothing of an unproven peer is kept */
            /* a sender that did everything right is served, unless the link died */
            CHECK(!s.proved || s.t.fail_send >= 0);
        }
        break;
    case M_SENDER: {
        struct rd_params want = lim;
        rc = rd_session_sender(&s.t.tp, &s.key, &want, &agreed);
        /* the sender proves the key (AUTH) only on parameters it asked for */
        if (sent_type(&s, RD_AUTH))
            CHECK(s.have_c && s.c.chunk_size >= RD_MIN_CHUNK && s.c.chunk_size <= want.chunk_size &&
                  s.c.depth >= 1 && s.c.depth <= want.depth && (s.c.caps & ~want.caps) == 0 &&
                  s.c.streams >= 1 && s.c.streams <= want.streams);
        if (rc == RD_OK) {
            CHECK(s.proved && s.have_h && s.have_c && s.auth_verified);
            CHECK(agreed.chunk_size >= RD_MIN_CHUNK && agreed.chunk_size <= want.chunk_size);
            CHECK(agreed.depth >= 1 && agreed.depth <= want.depth);
            CHECK(agreed.streams >= 1 && agreed.streams <= want.streams);
            CHECK((agreed.caps & ~want.caps) == 0);
            if (agreed.streams == 1)
                CHECK(s.t.ring_send == RD_FRAME_HDR + (size_t)agreed.chunk_size && s.t.setup_calls == 1);
            else
                CHECK(s.t.setup_calls == 0);
            CHECK(s.t.ntx == 2 && s.t.tx[1].data[5] == RD_AUTH);
            check_keys(&s, &agreed, 1);
            if (agreed.caps & RD_CAP_RAILS) {
                /* offered (caps above), then a right RAILS came, and it is what we keep */
                CHECK(want.caps & RD_CAP_RAILS);
                CHECK(s.delivered == 3 && s.rails_right);
                CHECK(memcmp(&agreed.rails, &s.rails, sizeof s.rails) == 0);
            } else {
                CHECK(s.delivered == 2 && agreed.rails.count == 0);   /* nothing read after ACCEPT */
            }
        } else {
            check_error(rc);
            CHECK(s.t.tp.hop_dir == 0 || s.proved);
            /* a receiver that did everything right (its RAILS too, if it granted rails) is served */
            CHECK(!s.proved || s.t.fail_send >= 0 || ((s.c.caps & RD_CAP_RAILS) && !s.rails_right));
        }
        /* a sender that did not offer rails reads no RAILS; a forged or malformed one fails it */
        CHECK(s.delivered <= 2 || (want.caps & RD_CAP_RAILS));
        CHECK(s.delivered <= 2 || s.rails_right || rc != RD_OK);
        break;
    }
    case M_ACCEPT_JOIN: {
        unsigned char taken[RD_MAX_STREAMS];
        for (unsigned i = 0; i < RD_MAX_STREAMS; i++)
            taken[i] = (taken_bits >> i) & 1;
        lim.streams = lim.streams < 2 ? 2 : lim.streams;
        memcpy(lim.join_key, s.join_key, 32);
        uint32_t index = 0xffffffffu;
        rc = rd_session_accept_join(&s.t.tp, &lim, taken, &index);
        if (rc == RD_OK) {
            CHECK(s.proved && index == s.join_index);
            CHECK(index >= 1 && index < lim.streams && !taken[index]);
            CHECK(s.t.ntx == 1 && s.t.tx[0].data[5] == RD_ACCEPT);
        } else {
            check_error(rc);
            CHECK(!sent_type(&s, RD_ACCEPT) || s.t.fail_send >= 0);
            CHECK(!s.proved || s.join_index == 0 || s.join_index >= lim.streams || taken[s.join_index] ||
                  s.t.fail_send >= 0);
        }
        break;
    }
    case M_JOIN: {
        memcpy(lim.join_key, s.join_key, 32);
        uint32_t index = 1 + taken_bits % 15;
        rc = rd_session_join(&s.t.tp, &lim, index);
        CHECK(s.t.ntx >= 1 || s.t.fail_send == 0);
        if (s.t.ntx >= 1) {
            struct rd_join j;
            CHECK(s.t.tx[0].data[5] == RD_JOIN);
            CHECK(rd_join_decode(s.t.tx[0].data + RD_FRAME_HDR, s.t.tx[0].len - RD_FRAME_HDR, &j) == RD_P_OK);
            CHECK(j.index == index && rd_auth_join_check(s.join_key, index, j.mac));
        }
        if (rc != RD_OK)
            check_error(rc);
        break;
    }
    default:
        s.t.fail_send = -1;
        run_ctrl(&s, taken_bits);
        break;
    }
    if (getenv("FZ_VERBOSE"))   /* to see what a seed reaches */
        fprintf(stderr, "mode %d: rc %d proved %d sent %zu: %s\n", s.mode, rc, s.proved, s.t.ntx, rd_error_msg());
    if (s.have_st)
        rd_pake_wipe(&s.st);
    rd_session_keys_wipe(&s.keys);
    fz_free(&s.t);
    rd_error_clear();
    return 0;
}
