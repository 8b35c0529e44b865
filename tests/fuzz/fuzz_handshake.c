/* fuzz_handshake.c - the protocol v1 handshake (rd_session.c, rd_auth.c) against a hostile
 * peer whose messages are the fuzz input, both roles, over the scripted transport.
 *
 * Input: mode:u8, then chunk:u32 depth:u16 streams:u8 caps:u8 fail_send:u8 taken:u16
 * (the local side's limits or wishes), then messages (fz_input.h). Modes:
 *   0  rd_session_receiver fed a hostile sender's HELLO, AUTH, ...
 *   1  rd_session_sender fed a hostile receiver's CHALLENGE, ACCEPT, ...
 *   2  rd_session_accept_join fed a hostile extra connection's JOIN
 *   3  rd_session_join fed the answer to its JOIN
 * The peer knows the key when a message asks for FZ_FIXMAC (it then gets the right MAC for
 * what it sent and saw), so the fuzzer reaches every step after authentication too.
 * Checked after each run: a side only succeeds against a peer that proved the key, only
 * with parameters inside its own limits, never sends AUTH or ACCEPT to a peer that did not
 * prove the key, and always succeeds against a peer that did everything right.
 */
#include "fz_input.h"
#include "fz_transport.h"

#include "wire/rd_auth.h"
#include "util/rd_error.h"
#include "wire/rd_proto.h"
#include "transport/rd_session.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_check.h"

enum { M_RECEIVER, M_SENDER, M_ACCEPT_JOIN, M_JOIN, M_COUNT };

struct hs {
    struct fz_in in;
    struct fz_tp t;
    int mode;
    struct rd_key key;
    uint8_t join_key[32];
    unsigned delivered;              /* frames handed to the side under test */
    struct rd_hello h;               /* the HELLO of this session, once known */
    int have_h;
    struct rd_challenge c;           /* the CHALLENGE of this session, once known */
    int have_c;
    int proved;                      /* the peer sent the right MAC at its turn */
    uint32_t join_index;             /* M_ACCEPT_JOIN: the index the proved JOIN named */
    uint8_t frame[RD_FRAME_HDR + FZ_MSG_MAX];
};

static struct rd_key fuzz_key;
static int have_key;

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Parse a frame as rd_recv_ctrl does (header, length, checksum); 1 if it would pass. */
static int valid_frame(const uint8_t *p, size_t n, struct rd_frame *f)
{
    return n <= RD_CTRL_FRAME && rd_frame_parse(p, n, RD_CTRL_FRAME, f) == RD_P_OK && rd_frame_verify(f) == RD_P_OK;
}

/* The hostile peer writes what only a peer with the key could into its payload. */
static void fix_mac(struct hs *s, uint8_t type, uint8_t *pl, size_t len)
{
    if (s->mode == M_RECEIVER && type == RD_AUTH && s->have_h && s->have_c && len >= RD_MAC_LEN) {
        rd_auth_mac(&s->key, RD_ROLE_SENDER, &s->h, &s->c, pl);
    } else if (s->mode == M_SENDER && type == RD_CHALLENGE && s->have_h && len >= RD_CHALLENGE_LEN) {
        struct rd_challenge c;
        rd_challenge_decode(pl, RD_CHALLENGE_LEN, &c);
        rd_auth_mac(&s->key, RD_ROLE_RECEIVER, &s->h, &c, c.mac);
        rd_challenge_encode(&c, pl);
    } else if (s->mode == M_ACCEPT_JOIN && type == RD_JOIN && len >= RD_JOIN_LEN) {
        rd_auth_join_mac(s->join_key, get32(pl), pl + 4);
    }
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
    if (s->mode == M_RECEIVER && i == 1 && f.type == RD_AUTH && s->have_h && s->have_c)
        s->proved = f.length == RD_AUTH_LEN && rd_auth_check(&s->key, RD_ROLE_SENDER, &s->h, &s->c, f.payload);
    if (s->mode == M_SENDER && i == 0 && f.type == RD_CHALLENGE && s->have_h) {
        s->have_c = rd_challenge_decode(f.payload, f.length, &s->c) == RD_P_OK;
        s->proved = s->have_c && rd_auth_check(&s->key, RD_ROLE_RECEIVER, &s->h, &s->c, s->c.mac);
    }
    if (s->mode == M_ACCEPT_JOIN && i == 0 && f.type == RD_JOIN) {
        struct rd_join j;
        if (rd_join_decode(f.payload, f.length, &j) == RD_P_OK && rd_auth_join_check(s->join_key, j.index, j.mac)) {
            s->proved = 1;
            s->join_index = j.index;
        }
    }
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
    if (m.ctl & FZ_FIXMAC)
        fix_mac(s, m.type, pl, m.len);
    size_t n = rd_frame_seal(s->frame, m.type, 0, (uint32_t)m.len, 0);
    if (m.ctl & FZ_BADSUM)
        s->frame[24] ^= 1;
    observe_delivery(s, s->frame, n);
    fz_push(t, s->frame, n);
}

/* send(): remember the transcript the side under test commits to. */
static void on_send(struct fz_tp *t, const uint8_t *p, size_t n, void *arg)
{
    struct hs *s = arg;
    struct rd_frame f;
    CHECK(valid_frame(p, n, &f));   /* whatever we send, the peer can parse */
    CHECK(f.seq == 0 && f.flags == 0);
    if (s->mode == M_RECEIVER && f.type == RD_CHALLENGE)
        s->have_c = rd_challenge_decode(f.payload, f.length, &s->c) == RD_P_OK;
    if (s->mode == M_SENDER && f.type == RD_HELLO)
        s->have_h = rd_hello_decode(f.payload, f.length, &s->h) == RD_P_OK;
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
    CHECK(rc == RD_ESTREAM || rc == RD_EAUTH || rc == RD_EIO);
    CHECK(rd_error_code() != 0 && rd_error_msg()[0] != '\0');
    CHECK(strchr(rd_error_msg(), '\n') == NULL);   /* one line, whatever the peer wrote */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!have_key) {
        static const char secret[] = "fuzz handshake key";
        if (rd_key_derive(&fuzz_key, secret, sizeof secret - 1))
            abort();
        have_key = 1;
    }
    static struct hs s;
    memset(&s, 0, offsetof(struct hs, frame));
    s.in = (struct fz_in){ data, size };
    s.key = fuzz_key;
    s.mode = fz_byte(&s.in) % M_COUNT;
    struct rd_params lim = { 0 };
    lim.chunk_size = RD_MIN_CHUNK + fz_u32(&s.in) % (RD_MAX_CHUNK - RD_MIN_CHUNK + 1);
    lim.depth = 1 + (fz_byte(&s.in) | fz_byte(&s.in) << 8) % RD_MAX_DEPTH;
    lim.streams = 1 + fz_byte(&s.in) % RD_MAX_STREAMS;
    lim.caps = fz_byte(&s.in) & 3u;
    uint8_t fail = fz_byte(&s.in);
    unsigned taken_bits = fz_byte(&s.in) | fz_byte(&s.in) << 8;
    rd_error_clear();
    fz_init(&s.t, "fuzz:peer");
    s.t.on_recv = on_recv;
    s.t.on_send = on_send;
    s.t.arg = &s;
    s.t.fail_send = fail < 4 ? fail : -1;   /* the link dies at one of the first sends */
    for (int i = 0; i < 32; i++)
        s.join_key[i] = (uint8_t)(i * 37 + 1);

    struct rd_params agreed;
    memset(&agreed, 0, sizeof agreed);
    int rc;
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
            uint8_t jk[32];
            rd_auth_join_key(&s.key, &s.h, &s.c, jk);
            CHECK(memcmp(jk, agreed.join_key, 32) == 0);
        } else {
            check_error(rc);
            CHECK(!sent_type(&s, RD_ACCEPT) || s.t.fail_send >= 0);
            /* a sender that did everything right is served, unless the link died */
            CHECK(!s.proved || s.t.fail_send >= 0);
        }
        break;
    case M_SENDER: {
        struct rd_params want = lim;
        rc = rd_session_sender(&s.t.tp, &s.key, &want, &agreed);
        /* the sender's AUTH goes only to a receiver that proved the key */
        if (sent_type(&s, RD_AUTH))
            CHECK(s.proved);
        if (rc == RD_OK) {
            CHECK(s.proved && s.have_h && s.have_c);
            CHECK(agreed.chunk_size >= RD_MIN_CHUNK && agreed.chunk_size <= want.chunk_size);
            CHECK(agreed.depth >= 1 && agreed.depth <= want.depth);
            CHECK(agreed.streams >= 1 && agreed.streams <= want.streams);
            CHECK((agreed.caps & ~want.caps) == 0);
            if (agreed.streams == 1)
                CHECK(s.t.ring_send == RD_FRAME_HDR + (size_t)agreed.chunk_size && s.t.setup_calls == 1);
            else
                CHECK(s.t.setup_calls == 0);
            CHECK(s.t.ntx == 2 && s.t.tx[1].data[5] == RD_AUTH);
            uint8_t mac[RD_MAC_LEN];
            rd_auth_mac(&s.key, RD_ROLE_SENDER, &s.h, &s.c, mac);
            CHECK(memcmp(s.t.tx[1].data + RD_FRAME_HDR, mac, RD_MAC_LEN) == 0);
        } else {
            check_error(rc);
        }
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
    default: {
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
    }
    if (getenv("FZ_VERBOSE"))   /* to see what a seed reaches */
        fprintf(stderr, "mode %d: rc %d proved %d sent %zu: %s\n", s.mode, rc, s.proved, s.t.ntx, rd_error_msg());
    fz_free(&s.t);
    rd_error_clear();
    return 0;
}
