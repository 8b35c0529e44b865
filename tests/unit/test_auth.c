/* test_auth.c - key derivation and the mutual challenge-response MACs, first as pure
 * functions, then against a real rd_session_receiver driven by a hand-written sender. */
#include "check.h"
#include "mem_transport.h"

#include "wire/rd_auth.h"
#include "util/rd_error.h"
#include "wire/rd_proto.h"
#include "transport/rd_session.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char secret[] = "correct horse battery staple";

/* Known answers, computed independently (Python hmac/hashlib) from the documented scheme:
 * key = HKDF-SHA256(salt "rdpipe", info "rdpipe v1 handshake mac", 32 bytes);
 * MAC = HMAC-SHA256(key, label || HELLO payload || CHALLENGE payload with a zero MAC), where
 * HELLO = u16 version_min, u16 version_max, u32 caps, chunk_size, depth, streams, nonce[32]
 * (52 bytes) and CHALLENGE = u32 caps, chunk_size, depth, streams, nonce[32], mac[32] (80
 * bytes), all little endian; join key = the same HMAC with the label "rdpipe v1 join key";
 * JOIN MAC = HMAC-SHA256(join key, "rdpipe v1 stripe" || u32 index LE).
 * (The same script, fed the v1 layout without `streams`, reproduces the MACs this file pinned
 * before --streams: 598e1894... and 3141d310..., so the model is the C code's.)
 * They pin the scheme: two builds that disagree here cannot talk to each other. */
static const uint8_t kat_key[32] = {
    0xdc, 0xd6, 0xfe, 0x81, 0xec, 0xc5, 0x0f, 0x58, 0xa5, 0x85, 0xde, 0x2d, 0x8f, 0x22, 0x95, 0x28,
    0xb4, 0x20, 0x52, 0xf9, 0xbf, 0x2b, 0x91, 0xea, 0x22, 0x3b, 0x4a, 0x7e, 0x69, 0x82, 0x1b, 0x5c,
};
static const uint8_t kat_recv_mac[32] = {
    0xea, 0x34, 0x56, 0x34, 0x96, 0x8c, 0x12, 0xc1, 0x03, 0x22, 0x0e, 0x66, 0x87, 0xb5, 0x33, 0x05,
    0xc6, 0x84, 0xcd, 0x32, 0x23, 0xde, 0x37, 0xd9, 0x25, 0x0a, 0xe5, 0x55, 0x82, 0x37, 0xc6, 0x4b,
};
static const uint8_t kat_send_mac[32] = {
    0xa0, 0x28, 0xa2, 0x92, 0x13, 0x03, 0x52, 0x20, 0xa9, 0x27, 0x47, 0x73, 0x3b, 0x12, 0x3d, 0x0e,
    0x49, 0x62, 0x9f, 0x6b, 0x21, 0x7c, 0xf4, 0x2e, 0x7d, 0xbc, 0xf9, 0x0b, 0xfd, 0xbc, 0x58, 0xe2,
};
static const uint8_t kat_join_key[32] = {
    0xbc, 0x6f, 0xfa, 0xae, 0xdb, 0x50, 0xee, 0x5f, 0xde, 0x84, 0x5a, 0x4a, 0x29, 0x9a, 0x58, 0x8d,
    0x27, 0x92, 0x5c, 0xf1, 0x22, 0x79, 0xbe, 0xd4, 0x93, 0x28, 0x95, 0xa8, 0xd9, 0x8a, 0x7d, 0x27,
};
static const uint8_t kat_join_mac_1[32] = {   /* index 1 */
    0xa5, 0x55, 0x79, 0xec, 0x89, 0x0b, 0x01, 0x7b, 0x2b, 0xf9, 0x43, 0x97, 0xb9, 0x6f, 0xc0, 0x48,
    0x98, 0xd5, 0xc6, 0x9f, 0xfd, 0x5b, 0x0d, 0xbf, 0x8a, 0xe7, 0x2d, 0x8f, 0xb6, 0xe9, 0x65, 0x6b,
};
static const uint8_t kat_join_mac_01020307[32] = {   /* index 0x01020307: pins the byte order */
    0xb3, 0x76, 0x51, 0xe1, 0xd0, 0x42, 0x89, 0xb6, 0x24, 0x65, 0x3c, 0x2e, 0x46, 0x8f, 0x85, 0xff,
    0x50, 0x6c, 0x97, 0x14, 0x5a, 0x03, 0x34, 0x20, 0xa8, 0xe8, 0xf9, 0xff, 0x29, 0x73, 0x77, 0x1e,
};

static void kat_transcript(struct rd_hello *h, struct rd_challenge *c)
{
    memset(h, 0, sizeof *h);
    memset(c, 0, sizeof *c);
    *h = (struct rd_hello){ .version_min = 1, .version_max = 1, .caps = 0, .chunk_size = 4194304, .depth = 8,
                            .streams = 4 };
    *c = (struct rd_challenge){ .caps = 0, .chunk_size = 1048576, .depth = 4, .streams = 3 };
    for (int i = 0; i < 32; i++) {
        h->nonce[i] = (uint8_t)i;
        c->nonce[i] = (uint8_t)(0x80 + i);
    }
}

static struct rd_key key_of(const char *s)
{
    struct rd_key k;
    memset(&k, 0, sizeof k);
    if (rd_key_derive(&k, s, strlen(s)) != 0)
        check_fail_at(__FILE__, __LINE__, "rd_key_derive(\"%s\") failed", s);
    return k;
}

/* ---- pure functions ---- */

static void t_key_known_answer(void)
{
    struct rd_key k = key_of(secret);
    CHECK_MEM_EQ(k.mac_key, kat_key, 32);
}

static void t_key_deterministic(void)
{
    struct rd_key a = key_of(secret), b = key_of(secret);
    CHECK_MEM_EQ(a.mac_key, b.mac_key, sizeof a.mac_key);
    struct rd_key c = key_of("correct horse battery stapl"), d = key_of("Correct horse battery staple");
    CHECK_MEM_NE(a.mac_key, c.mac_key, sizeof a.mac_key);
    CHECK_MEM_NE(a.mac_key, d.mac_key, sizeof a.mac_key);
    /* the length counts: a secret with a NUL inside is not its prefix */
    struct rd_key e, f;
    CHECK_EQ_I(rd_key_derive(&e, "ab\0cd", 5), 0);
    CHECK_EQ_I(rd_key_derive(&f, "ab", 2), 0);
    CHECK_MEM_NE(e.mac_key, f.mac_key, sizeof e.mac_key);
    /* the derived key is not the secret itself */
    struct rd_key g = key_of("0123456789abcdef0123456789abcdef");
    CHECK_MEM_NE(g.mac_key, "0123456789abcdef0123456789abcdef", 32);
}

static void t_key_wipe(void)
{
    struct rd_key k = key_of(secret);
    static const uint8_t zero[32];
    CHECK_MEM_NE(k.mac_key, zero, 32);
    rd_key_wipe(&k);
    CHECK_MEM_EQ(k.mac_key, zero, 32);
}

static void t_random(void)
{
    uint8_t a[32], b[32];
    static const uint8_t zero[32];
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    CHECK_EQ_I(rd_random(a, sizeof a), 0);
    CHECK_EQ_I(rd_random(b, sizeof b), 0);
    CHECK_MEM_NE(a, b, sizeof a);
    CHECK_MEM_NE(a, zero, sizeof a);
}

static void t_mac_known_answer(void)
{
    struct rd_key k = key_of(secret);
    struct rd_hello h;
    struct rd_challenge c;
    kat_transcript(&h, &c);
    uint8_t m[RD_MAC_LEN];
    rd_auth_mac(&k, RD_ROLE_RECEIVER, &h, &c, m);
    CHECK_MEM_EQ(m, kat_recv_mac, RD_MAC_LEN);
    rd_auth_mac(&k, RD_ROLE_SENDER, &h, &c, m);
    CHECK_MEM_EQ(m, kat_send_mac, RD_MAC_LEN);
}

static void t_right_key_verifies(void)
{
    /* both sides derive from the same secret independently */
    struct rd_key ks = key_of(secret), kr = key_of(secret);
    struct rd_hello h;
    struct rd_challenge c;
    kat_transcript(&h, &c);
    rd_auth_mac(&kr, RD_ROLE_RECEIVER, &h, &c, c.mac);
    CHECK_EQ_I(rd_auth_check(&ks, RD_ROLE_RECEIVER, &h, &c, c.mac), 1);
    uint8_t m[RD_MAC_LEN];
    rd_auth_mac(&ks, RD_ROLE_SENDER, &h, &c, m);
    CHECK_EQ_I(rd_auth_check(&kr, RD_ROLE_SENDER, &h, &c, m), 1);
}

static void t_wrong_key_fails(void)
{
    struct rd_key good = key_of(secret), bad = key_of("wrong");
    struct rd_hello h;
    struct rd_challenge c;
    kat_transcript(&h, &c);
    uint8_t m[RD_MAC_LEN];
    rd_auth_mac(&bad, RD_ROLE_RECEIVER, &h, &c, m);
    CHECK_EQ_I(rd_auth_check(&good, RD_ROLE_RECEIVER, &h, &c, m), 0);
    rd_auth_mac(&bad, RD_ROLE_SENDER, &h, &c, m);
    CHECK_EQ_I(rd_auth_check(&good, RD_ROLE_SENDER, &h, &c, m), 0);
    static const uint8_t zero[RD_MAC_LEN];
    CHECK_EQ_I(rd_auth_check(&good, RD_ROLE_SENDER, &h, &c, zero), 0);
}

static void t_every_mac_bit_matters(void)
{
    struct rd_key k = key_of(secret);
    struct rd_hello h;
    struct rd_challenge c;
    kat_transcript(&h, &c);
    uint8_t m[RD_MAC_LEN];
    rd_auth_mac(&k, RD_ROLE_SENDER, &h, &c, m);
    int accepted = 0;
    for (unsigned bit = 0; bit < 8 * RD_MAC_LEN; bit++) {
        m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        accepted += rd_auth_check(&k, RD_ROLE_SENDER, &h, &c, m);
        m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    CHECK_EQ_I(accepted, 0);
    CHECK_EQ_I(rd_auth_check(&k, RD_ROLE_SENDER, &h, &c, m), 1);
}

static void t_reflection_rejected(void)
{
    struct rd_key k = key_of(secret);
    struct rd_hello h;
    struct rd_challenge c;
    kat_transcript(&h, &c);
    uint8_t recv_mac[RD_MAC_LEN], send_mac[RD_MAC_LEN];
    rd_auth_mac(&k, RD_ROLE_RECEIVER, &h, &c, recv_mac);
    rd_auth_mac(&k, RD_ROLE_SENDER, &h, &c, send_mac);
    CHECK_MEM_NE(recv_mac, send_mac, RD_MAC_LEN);
    /* a sender without the key sends the receiver's own MAC back as its AUTH */
    CHECK_EQ_I(rd_auth_check(&k, RD_ROLE_SENDER, &h, &c, recv_mac), 0);
    /* and the other way round */
    CHECK_EQ_I(rd_auth_check(&k, RD_ROLE_RECEIVER, &h, &c, send_mac), 0);
}

static void t_replay_rejected(void)
{
    struct rd_key k = key_of(secret);
    struct rd_hello h;
    struct rd_challenge c1, c2;
    kat_transcript(&h, &c1);
    uint8_t old_mac[RD_MAC_LEN];
    rd_auth_mac(&k, RD_ROLE_SENDER, &h, &c1, old_mac);   /* recorded from session 1 */
    c2 = c1;
    CHECK_EQ_I(rd_random(c2.nonce, sizeof c2.nonce), 0);   /* session 2: a fresh receiver nonce */
    CHECK_EQ_I(rd_auth_check(&k, RD_ROLE_SENDER, &h, &c2, old_mac), 0);
    CHECK_EQ_I(rd_auth_check(&k, RD_ROLE_SENDER, &h, &c1, old_mac), 1);
    /* the receiver's MAC of session 1 does not prove anything in session 2 either */
    uint8_t old_recv[RD_MAC_LEN];
    rd_auth_mac(&k, RD_ROLE_RECEIVER, &h, &c1, old_recv);
    struct rd_hello h2 = h;
    CHECK_EQ_I(rd_random(h2.nonce, sizeof h2.nonce), 0);   /* a sender's fresh nonce */
    CHECK_EQ_I(rd_auth_check(&k, RD_ROLE_RECEIVER, &h2, &c1, old_recv), 0);
}

/* Each negotiated parameter and each nonce is covered: change one, the MAC changes. */
static void t_every_parameter_covered(void)
{
    struct rd_key k = key_of(secret);
    struct rd_hello h0;
    struct rd_challenge c0;
    kat_transcript(&h0, &c0);
    uint8_t base[2][RD_MAC_LEN];
    rd_auth_mac(&k, RD_ROLE_RECEIVER, &h0, &c0, base[0]);
    rd_auth_mac(&k, RD_ROLE_SENDER, &h0, &c0, base[1]);
    enum { N = 16 };
    static const char *const names[N] = {
        "hello.version_min", "hello.version_max", "hello.caps", "hello.chunk_size", "hello.depth",
        "hello.nonce[0]", "hello.nonce[31]", "challenge.caps", "challenge.chunk_size",
        "challenge.depth", "challenge.nonce[0]", "challenge.nonce[31]", "hello.chunk_size high byte",
        "hello.streams", "challenge.streams", "challenge.streams high byte",
    };
    for (int i = 0; i < N; i++) {
        struct rd_hello h = h0;
        struct rd_challenge c = c0;
        switch (i) {
        case 0: h.version_min ^= 1; break;
        case 1: h.version_max ^= 0x100; break;
        case 2: h.caps ^= RD_FLAG_COMPRESSED; break;
        case 3: h.chunk_size += 1; break;
        case 4: h.depth -= 1; break;
        case 5: h.nonce[0] ^= 1; break;
        case 6: h.nonce[31] ^= 0x80; break;
        case 7: c.caps ^= RD_FLAG_ENCRYPTED; break;
        case 8: c.chunk_size *= 2; break;
        case 9: c.depth += 1; break;
        case 10: c.nonce[0] ^= 1; break;
        case 11: c.nonce[31] ^= 0x80; break;
        case 12: h.chunk_size ^= 0x80000000u; break;
        case 13: h.streams += 1; break;
        case 14: c.streams -= 1; break;
        case 15: c.streams ^= 0x01000000u; break;
        }
        for (int role = 0; role < 2; role++) {
            enum rd_auth_role who = role ? RD_ROLE_SENDER : RD_ROLE_RECEIVER;
            uint8_t m[RD_MAC_LEN];
            rd_auth_mac(&k, who, &h, &c, m);
            if (memcmp(m, base[role], RD_MAC_LEN) == 0)
                check_fail_at(__FILE__, __LINE__, "changing %s does not change the %s MAC", names[i],
                              role ? "sender" : "receiver");
            if (rd_auth_check(&k, who, &h, &c, base[role]))
                check_fail_at(__FILE__, __LINE__, "the original %s MAC verifies after changing %s",
                              role ? "sender" : "receiver", names[i]);
        }
    }
}

/* The MAC field of the challenge is not part of the transcript (it carries the MAC). */
static void t_challenge_mac_field_excluded(void)
{
    struct rd_key k = key_of(secret);
    struct rd_hello h;
    struct rd_challenge c;
    kat_transcript(&h, &c);
    uint8_t a[RD_MAC_LEN], b[RD_MAC_LEN];
    rd_auth_mac(&k, RD_ROLE_SENDER, &h, &c, a);
    memset(c.mac, 0xa7, sizeof c.mac);
    rd_auth_mac(&k, RD_ROLE_SENDER, &h, &c, b);
    CHECK_MEM_EQ(a, b, RD_MAC_LEN);
    CHECK_MEM_EQ(b, kat_send_mac, RD_MAC_LEN);
}

/* ---- the join key and the JOIN MACs of --streams ---- */

static void join_key_of(const struct rd_key *k, const struct rd_hello *h, const struct rd_challenge *c,
                        uint8_t out[32])
{
    memset(out, 0, 32);
    rd_auth_join_key(k, h, c, out);
}

static void t_join_known_answer(void)
{
    struct rd_key k = key_of(secret);
    struct rd_hello h;
    struct rd_challenge c;
    kat_transcript(&h, &c);
    memset(c.mac, 0x5a, sizeof c.mac);   /* the challenge's MAC field is not in the transcript */
    uint8_t jk[32], m[RD_MAC_LEN];
    join_key_of(&k, &h, &c, jk);
    CHECK_MEM_EQ(jk, kat_join_key, 32);
    memset(m, 0, sizeof m);
    rd_auth_join_mac(kat_join_key, 1, m);
    CHECK_MEM_EQ(m, kat_join_mac_1, RD_MAC_LEN);
    rd_auth_join_mac(kat_join_key, 0x01020307u, m);
    CHECK_MEM_EQ(m, kat_join_mac_01020307, RD_MAC_LEN);
    CHECK_EQ_I(rd_auth_join_check(kat_join_key, 1, kat_join_mac_1), 1);
    CHECK_EQ_I(rd_auth_join_check(kat_join_key, 0x01020307u, kat_join_mac_01020307), 1);
    /* deterministic: both ends derive the same key from the same transcript */
    struct rd_key k2 = key_of(secret);
    uint8_t jk2[32];
    join_key_of(&k2, &h, &c, jk2);
    CHECK_MEM_EQ(jk, jk2, 32);
}

/* The join key is secret material of its own: it is none of the MACs that crossed the wire
 * (an eavesdropper of the handshake must not learn it), nor the handshake key. */
static void t_join_key_is_not_on_the_wire(void)
{
    struct rd_key k = key_of(secret);
    struct rd_hello h;
    struct rd_challenge c;
    kat_transcript(&h, &c);
    uint8_t jk[32], rm[RD_MAC_LEN], sm[RD_MAC_LEN];
    join_key_of(&k, &h, &c, jk);
    rd_auth_mac(&k, RD_ROLE_RECEIVER, &h, &c, rm);
    rd_auth_mac(&k, RD_ROLE_SENDER, &h, &c, sm);
    CHECK_MEM_NE(jk, rm, 32);
    CHECK_MEM_NE(jk, sm, 32);
    CHECK_MEM_NE(jk, k.mac_key, 32);
    /* nor can a JOIN MAC be made from a handshake MAC used as the key */
    uint8_t m_real[RD_MAC_LEN], m_fake[RD_MAC_LEN];
    rd_auth_join_mac(jk, 1, m_real);
    rd_auth_join_mac(rm, 1, m_fake);
    CHECK_MEM_NE(m_real, m_fake, RD_MAC_LEN);
    CHECK_EQ_I(rd_auth_join_check(jk, 1, m_fake), 0);
    rd_auth_join_mac(sm, 1, m_fake);
    CHECK_EQ_I(rd_auth_join_check(jk, 1, m_fake), 0);
}

static void t_join_check(void)
{
    struct rd_key k = key_of(secret), other_secret = key_of("another secret");
    struct rd_hello h;
    struct rd_challenge c;
    kat_transcript(&h, &c);
    uint8_t jk[32], jk_other_session[32], jk_other_key[32];
    join_key_of(&k, &h, &c, jk);
    struct rd_challenge c2 = c;
    c2.nonce[7] ^= 0x10;   /* another session: the receiver's fresh nonce */
    join_key_of(&k, &h, &c2, jk_other_session);
    join_key_of(&other_secret, &h, &c, jk_other_key);
    static const uint32_t idx[] = { 1, 2, 3, 15, 16, 255, 256, 0x10000u, 0xffffffffu };
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) {
        uint8_t m[RD_MAC_LEN];
        rd_auth_join_mac(jk, idx[i], m);
        if (!rd_auth_join_check(jk, idx[i], m))
            check_fail_at(__FILE__, __LINE__, "the right MAC for index %u is refused", idx[i]);
        /* the same MAC does not admit any other index */
        const uint32_t wrong[] = { idx[i] + 1, idx[i] - 1, 0, idx[i] ^ 0x100u, idx[i] ^ 0x80000000u };
        for (size_t w = 0; w < sizeof wrong / sizeof wrong[0]; w++)
            if (rd_auth_join_check(jk, wrong[w], m))
                check_fail_at(__FILE__, __LINE__, "the MAC for index %u admits index %u", idx[i], wrong[w]);
        /* nor under another session's or another secret's join key */
        if (rd_auth_join_check(jk_other_session, idx[i], m))
            check_fail_at(__FILE__, __LINE__, "index %u: MAC accepted under another session's join key", idx[i]);
        if (rd_auth_join_check(jk_other_key, idx[i], m))
            check_fail_at(__FILE__, __LINE__, "index %u: MAC accepted under another secret's join key", idx[i]);
        /* every bit of the MAC matters */
        int accepted = 0;
        for (unsigned bit = 0; bit < 8 * RD_MAC_LEN; bit++) {
            m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            accepted += rd_auth_join_check(jk, idx[i], m);
            m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        if (accepted)
            check_fail_at(__FILE__, __LINE__, "index %u: %d MACs with one flipped bit accepted", idx[i], accepted);
        CHECK_EQ_I(rd_auth_join_check(jk, idx[i], m), 1);   /* restored */
    }
    static const uint8_t zero[RD_MAC_LEN];
    CHECK_EQ_I(rd_auth_join_check(jk, 1, zero), 0);
    uint8_t m1[RD_MAC_LEN], m2[RD_MAC_LEN];
    rd_auth_join_mac(jk, 1, m1);
    rd_auth_join_mac(jk, 2, m2);
    CHECK_MEM_NE(m1, m2, RD_MAC_LEN);
}

/* The join key covers the whole transcript: change any field (streams included) or nonce and
 * it changes, so a JOIN MAC of one session never admits a connection into another. */
static void t_join_key_covers_transcript(void)
{
    struct rd_key k = key_of(secret);
    struct rd_hello h0;
    struct rd_challenge c0;
    kat_transcript(&h0, &c0);
    uint8_t base[32], base_mac[RD_MAC_LEN];
    join_key_of(&k, &h0, &c0, base);
    rd_auth_join_mac(base, 1, base_mac);
    enum { N = 17 };
    static const char *const names[N] = {
        "hello.version_min", "hello.version_max", "hello.caps", "hello.chunk_size", "hello.depth",
        "hello.streams", "hello.streams high byte", "hello.nonce[0]", "hello.nonce[31]",
        "challenge.caps", "challenge.chunk_size", "challenge.depth", "challenge.streams",
        "challenge.streams high byte", "challenge.nonce[0]", "challenge.nonce[31]", "the key",
    };
    for (int i = 0; i < N; i++) {
        struct rd_hello h = h0;
        struct rd_challenge c = c0;
        struct rd_key kk = k;
        switch (i) {
        case 0: h.version_min ^= 1; break;
        case 1: h.version_max ^= 0x100; break;
        case 2: h.caps ^= RD_FLAG_COMPRESSED; break;
        case 3: h.chunk_size += 1; break;
        case 4: h.depth -= 1; break;
        case 5: h.streams += 1; break;
        case 6: h.streams ^= 0x01000000u; break;
        case 7: h.nonce[0] ^= 1; break;
        case 8: h.nonce[31] ^= 0x80; break;
        case 9: c.caps ^= RD_FLAG_ENCRYPTED; break;
        case 10: c.chunk_size *= 2; break;
        case 11: c.depth += 1; break;
        case 12: c.streams = 2; break;
        case 13: c.streams ^= 0x80000000u; break;
        case 14: c.nonce[0] ^= 1; break;
        case 15: c.nonce[31] ^= 0x80; break;
        case 16: kk = key_of("correct horse battery stapler"); break;
        }
        uint8_t jk[32];
        join_key_of(&kk, &h, &c, jk);
        if (memcmp(jk, base, 32) == 0)
            check_fail_at(__FILE__, __LINE__, "changing %s does not change the join key", names[i]);
        if (rd_auth_join_check(jk, 1, base_mac))
            check_fail_at(__FILE__, __LINE__, "after changing %s the original JOIN MAC is still accepted",
                          names[i]);
    }
}

/* ---- against the real receiver handshake ---- */

struct recv_side {
    struct rd_transport *tp;
    struct rd_key key;
    int rc;
    struct rd_params agreed;
};

static void *receiver_main(void *arg)
{
    struct recv_side *r = arg;
    struct rd_params limits = { .chunk_size = 65536, .depth = 4, .caps = 0 };
    r->rc = rd_session_receiver(r->tp, &r->key, &limits, &r->agreed);
    return NULL;
}

/* A hand-driven sender: send HELLO h, read the CHALLENGE into *c. */
static int fake_hello(struct rd_transport *tp, const struct rd_hello *h, struct rd_challenge *c)
{
    uint8_t out[RD_HELLO_LEN];
    int rc = rd_send_ctrl(tp, RD_HELLO, out, (uint32_t)rd_hello_encode(h, out));
    if (rc)
        return rc;
    struct rd_buf *b;
    struct rd_frame f;
    rc = rd_recv_ctrl(tp, 5000, &b, &f);
    if (rc)
        return rc;
    int ok = f.type == RD_CHALLENGE && rd_challenge_decode(f.payload, f.length, c) == RD_P_OK;
    tp->ops->release(tp, b);
    return ok ? RD_OK : RD_ESTREAM;
}

/* Send AUTH with mac; return the type of the receiver's answer (ACCEPT or REJECT), or -1. */
static int fake_auth(struct rd_transport *tp, const uint8_t mac[RD_MAC_LEN], struct rd_reason *why)
{
    if (rd_send_ctrl(tp, RD_AUTH, mac, RD_MAC_LEN))
        return -1;
    struct rd_buf *b;
    struct rd_frame f;
    if (rd_recv_ctrl(tp, 5000, &b, &f))
        return -1;
    int type = f.type;
    if (type == RD_REJECT && why && rd_reason_decode(f.payload, f.length, why) != RD_P_OK)
        type = -1;
    tp->ops->release(tp, b);
    return type;
}

/* One session: the receiver in a thread, the test as the sender. mac_for(c, out) picks the
 * AUTH the fake sender answers with. Returns the receiver's rc; *answer = its reply type. */
struct fake_session {
    struct rd_hello h;
    struct rd_challenge c;   /* what the receiver sent */
    int answer;
    struct rd_reason why;
    int recv_rc;
};

static void run_fake_session(struct fake_session *s, const struct rd_key *recv_key,
                             void (*mac_for)(struct fake_session *, uint8_t *), int *ok)
{
    struct rd_transport *a, *b;
    *ok = 0;
    if (mem_pair(&a, &b) != RD_OK)
        return;
    struct recv_side r = { .tp = b, .key = *recv_key, .rc = -1 };
    pthread_t t;
    if (pthread_create(&t, NULL, receiver_main, &r)) {
        a->ops->close(a);
        b->ops->close(b);
        return;
    }
    s->answer = -1;
    memset(&s->why, 0, sizeof s->why);
    if (fake_hello(a, &s->h, &s->c) == RD_OK) {
        uint8_t mac[RD_MAC_LEN];
        mac_for(s, mac);
        s->answer = fake_auth(a, mac, &s->why);
        *ok = 1;
    }
    a->ops->close(a);   /* like a sender exiting: also unblocks the receiver if it waits */
    pthread_join(t, NULL);
    b->ops->close(b);
    s->recv_rc = r.rc;
}

static struct rd_key g_key;
static uint8_t g_recorded[RD_MAC_LEN];

static void mac_honest(struct fake_session *s, uint8_t *mac)
{
    rd_auth_mac(&g_key, RD_ROLE_SENDER, &s->h, &s->c, mac);
    memcpy(g_recorded, mac, RD_MAC_LEN);
}

static void mac_recorded(struct fake_session *s, uint8_t *mac)
{
    memcpy(mac, g_recorded, RD_MAC_LEN);
}

static void mac_reflected(struct fake_session *s, uint8_t *mac)
{
    memcpy(mac, s->c.mac, RD_MAC_LEN);
}

static void init_hello(struct rd_hello *h)
{
    *h = (struct rd_hello){ .version_min = RD_PROTO_VERSION, .version_max = RD_PROTO_VERSION,
                            .chunk_size = 65536, .depth = 4 };
    for (int i = 0; i < 32; i++)
        h->nonce[i] = (uint8_t)(i * 3);
}

static void t_session_honest_sender_accepted(void)
{
    g_key = key_of(secret);
    struct fake_session s;
    int ok;
    init_hello(&s.h);
    run_fake_session(&s, &g_key, mac_honest, &ok);
    CHECK_OR(ok, return);
    CHECK_EQ_I(s.answer, RD_ACCEPT);
    CHECK_EQ_I(s.recv_rc, RD_OK);
    /* and the receiver proved the key to us */
    CHECK_EQ_I(rd_auth_check(&g_key, RD_ROLE_RECEIVER, &s.h, &s.c, s.c.mac), 1);
    CHECK_EQ_U(s.c.chunk_size, 65536);
    CHECK_EQ_U(s.c.depth, 4);
}

/* An eavesdropper replays the AUTH of a recorded session with the same HELLO: the receiver
 * picked a fresh nonce, so the old MAC is wrong. */
static void t_session_replay_rejected(void)
{
    g_key = key_of(secret);
    struct fake_session s1, s2;
    int ok1, ok2;
    init_hello(&s1.h);
    run_fake_session(&s1, &g_key, mac_honest, &ok1);
    CHECK_OR(ok1 && s1.answer == RD_ACCEPT, return);
    rd_error_clear();
    s2.h = s1.h;   /* the very same HELLO, nonce included */
    run_fake_session(&s2, &g_key, mac_recorded, &ok2);
    CHECK_OR(ok2, return);
    CHECK_MEM_NE(s1.c.nonce, s2.c.nonce, RD_NONCE_LEN);
    CHECK_EQ_I(s2.answer, RD_REJECT);
    CHECK_EQ_U(s2.why.code, RD_EAUTH);
    CHECK_EQ_I(s2.recv_rc, RD_EAUTH);
    CHECK_HAS(rd_error_msg(), "auth");
}

/* A sender without the key answers the receiver's CHALLENGE with the receiver's own MAC. */
static void t_session_reflection_rejected(void)
{
    g_key = key_of(secret);
    struct fake_session s;
    int ok;
    init_hello(&s.h);
    run_fake_session(&s, &g_key, mac_reflected, &ok);
    CHECK_OR(ok, return);
    CHECK_EQ_I(s.answer, RD_REJECT);
    CHECK_EQ_U(s.why.code, RD_EAUTH);
    CHECK_EQ_I(s.recv_rc, RD_EAUTH);
}

/* A sender with another key computes an honest MAC with it. */
static void t_session_wrong_key_rejected(void)
{
    g_key = key_of("not the secret");
    struct rd_key recv_key = key_of(secret);
    struct fake_session s;
    int ok;
    init_hello(&s.h);
    run_fake_session(&s, &recv_key, mac_honest, &ok);
    CHECK_OR(ok, return);
    CHECK_EQ_I(rd_auth_check(&g_key, RD_ROLE_RECEIVER, &s.h, &s.c, s.c.mac), 0);
    CHECK_EQ_I(s.answer, RD_REJECT);
    CHECK_EQ_U(s.why.code, RD_EAUTH);
    CHECK_EQ_I(s.recv_rc, RD_EAUTH);
}

/* ---- JOIN: rd_session_join / rd_session_accept_join ---- */

static struct rd_params join_params(uint32_t streams, const uint8_t key[32])
{
    struct rd_params p = { .chunk_size = 65536, .depth = 4, .streams = streams };
    memcpy(p.join_key, key, 32);
    return p;
}

struct join_try {
    int answer;               /* what came back: RD_ACCEPT, RD_REJECT, or -1 nothing */
    struct rd_reason why;     /* the REJECT's reason */
    int rc;                   /* rd_session_accept_join's */
    uint32_t got;             /* its *index */
    char msg[512];            /* the error it recorded */
};

/* A hand-driven stripe: one frame of `type` with payload[0..len) to rd_session_accept_join. */
static void join_raw(uint8_t type, const void *payload, uint32_t len, const struct rd_params *agreed,
                     const unsigned char *taken, struct join_try *t)
{
    struct rd_transport *a, *b;
    memset(t, 0, sizeof *t);
    t->answer = -1;
    t->rc = -1;
    t->got = 0xdeadbeefu;
    rd_error_clear();
    if (mem_pair(&a, &b) != RD_OK) {
        check_fail_at(__FILE__, __LINE__, "mem_pair failed");
        return;
    }
    if (rd_send_ctrl(a, type, payload, len) == RD_OK) {
        t->rc = rd_session_accept_join(b, agreed, taken, &t->got);
        snprintf(t->msg, sizeof t->msg, "%s", rd_error_msg());
        b->ops->close(b);   /* a then reads what b answered, then sees it closed */
        b = NULL;
        struct rd_buf *rb;
        struct rd_frame f;
        if (rd_recv_ctrl(a, 2000, &rb, &f) == RD_OK) {
            t->answer = f.type;
            if (f.type == RD_REJECT && rd_reason_decode(f.payload, f.length, &t->why) != RD_P_OK)
                t->answer = -2;
            a->ops->release(a, rb);
        }
    }
    a->ops->close(a);
    if (b)
        b->ops->close(b);
    rd_error_clear();
}

static void join_try_index(uint32_t index, const uint8_t mac_key[32], uint32_t mac_index,
                           const struct rd_params *agreed, const unsigned char *taken, struct join_try *t)
{
    struct rd_join j = { .index = index };
    uint8_t out[RD_JOIN_LEN];
    rd_auth_join_mac(mac_key, mac_index, j.mac);
    join_raw(RD_JOIN, out, (uint32_t)rd_join_encode(&j, out), agreed, taken, t);
}

#define CHECK_TURNED_AWAY(t, what)                                                                  \
    do {                                                                                            \
        if ((t).answer != RD_REJECT || (t).rc != RD_EAUTH || (t).why.code != RD_EAUTH ||              \
            !strstr((t).why.text, "not a stripe of this session") ||                                \
            !strstr((t).msg, "not a stripe of this session") || !strstr((t).msg, "mem:a") ||        \
            (t).got != 0xdeadbeefu)                                                                 \
            check_fail_at(__FILE__, __LINE__,                                                       \
                          "%s: answer %d rc %d code %u reason \"%s\" error \"%s\" index %u; expected " \
                          "REJECT, RD_EAUTH, \"not a stripe of this session\" naming mem:a, index untouched", \
                          what, (t).answer, (t).rc, (t).why.code, (t).why.text, (t).msg, (t).got);  \
    } while (0)

static void t_accept_join(void)
{
    struct rd_params p = join_params(4, kat_join_key);
    /* taken has exactly `streams` entries (on the heap, so ASan sees a read past them):
     * 0 is the first connection, 2 has joined already */
    unsigned char *taken = calloc(4, 1);
    CHECK_OR(taken != NULL, return);
    taken[0] = 1;
    taken[2] = 1;
    uint8_t other_session[32];
    memcpy(other_session, kat_join_key, 32);
    other_session[0] ^= 1;
    struct join_try t;

    join_try_index(1, kat_join_key, 1, &p, taken, &t);
    CHECK_EQ_I(t.answer, RD_ACCEPT);
    CHECK_EQ_I(t.rc, RD_OK);
    CHECK_EQ_U(t.got, 1);
    join_try_index(3, kat_join_key, 3, &p, taken, &t);   /* the last one, streams - 1 */
    CHECK_EQ_I(t.answer, RD_ACCEPT);
    CHECK_EQ_I(t.rc, RD_OK);
    CHECK_EQ_U(t.got, 3);

    join_try_index(1, kat_join_key, 3, &p, taken, &t);
    CHECK_TURNED_AWAY(t, "index 1 with the MAC of index 3");
    join_try_index(1, other_session, 1, &p, taken, &t);
    CHECK_TURNED_AWAY(t, "index 1 with a MAC under another session's join key");
    join_try_index(0, kat_join_key, 0, &p, taken, &t);
    CHECK_TURNED_AWAY(t, "index 0 (the first connection) with its right MAC");
    join_try_index(4, kat_join_key, 4, &p, taken, &t);
    CHECK_TURNED_AWAY(t, "index 4 == streams with its right MAC");
    join_try_index(0xffffffffu, kat_join_key, 0xffffffffu, &p, taken, &t);
    CHECK_TURNED_AWAY(t, "index 0xffffffff with its right MAC");
    join_try_index(2, kat_join_key, 2, &p, taken, &t);
    CHECK_TURNED_AWAY(t, "index 2, already taken, with its right MAC");
    /* a zero MAC, and the right MAC with one bit flipped */
    struct rd_join j = { .index = 1 };
    uint8_t out[RD_JOIN_LEN];
    join_raw(RD_JOIN, out, (uint32_t)rd_join_encode(&j, out), &p, taken, &t);
    CHECK_TURNED_AWAY(t, "index 1 with a zero MAC");
    rd_auth_join_mac(kat_join_key, 1, j.mac);
    j.mac[31] ^= 0x80;
    join_raw(RD_JOIN, out, (uint32_t)rd_join_encode(&j, out), &p, taken, &t);
    CHECK_TURNED_AWAY(t, "index 1 with one MAC bit flipped");

    /* malformed: JOIN payload one byte short / long, no payload; another frame than JOIN */
    j.mac[31] ^= 0x80;
    rd_join_encode(&j, out);
    static const uint32_t bad_len[] = { 0, 4, RD_JOIN_LEN - 1 };
    for (size_t i = 0; i < sizeof bad_len / sizeof bad_len[0]; i++) {
        join_raw(RD_JOIN, out, bad_len[i], &p, taken, &t);
        if (t.answer == RD_ACCEPT || t.rc != RD_ESTREAM || !strstr(t.msg, "malformed JOIN") ||
            t.got != 0xdeadbeefu)
            check_fail_at(__FILE__, __LINE__, "JOIN of %u bytes: answer %d rc %d \"%s\"", bad_len[i],
                          t.answer, t.rc, t.msg);
    }
    uint8_t longer[RD_JOIN_LEN + 1];
    memcpy(longer, out, RD_JOIN_LEN);
    longer[RD_JOIN_LEN] = 0;
    join_raw(RD_JOIN, longer, sizeof longer, &p, taken, &t);
    CHECK(t.answer != RD_ACCEPT);
    CHECK_EQ_I(t.rc, RD_ESTREAM);
    CHECK_HAS(t.msg, "malformed JOIN");
    struct rd_hello h;
    struct rd_challenge c;
    kat_transcript(&h, &c);
    uint8_t hello[RD_HELLO_LEN];
    join_raw(RD_HELLO, hello, (uint32_t)rd_hello_encode(&h, hello), &p, taken, &t);
    CHECK(t.answer != RD_ACCEPT);
    CHECK_EQ_I(t.rc, RD_ESTREAM);
    CHECK_HAS(t.msg, "JOIN");
    CHECK_EQ_U(t.got, 0xdeadbeefu);
    /* taken[] is the caller's: accept_join only reads it */
    CHECK(taken[0] == 1 && taken[1] == 0 && taken[2] == 1 && taken[3] == 0);
    free(taken);
}

struct join_recv {
    struct rd_transport *tp;
    struct rd_params p;
    unsigned char taken[RD_MAX_STREAMS];
    uint32_t got;
    int rc;
};

static void *accept_join_main(void *arg)
{
    struct join_recv *r = arg;
    r->rc = rd_session_accept_join(r->tp, &r->p, r->taken, &r->got);
    return NULL;
}

/* rd_session_join against rd_session_accept_join: RD_OK when both have the join key, the
 * receiver's refusal (RD_EAUTH) when not. */
static int join_both(uint32_t streams, const uint8_t send_key[32], uint32_t index, int taken_too,
                     struct join_recv *r)
{
    struct rd_transport *a, *b;
    rd_error_clear();
    if (mem_pair(&a, &b) != RD_OK)
        return -100;
    memset(r, 0, sizeof *r);
    r->tp = b;
    r->p = join_params(streams, kat_join_key);
    r->taken[0] = 1;
    if (taken_too)
        r->taken[index] = 1;
    r->got = 0xdeadbeefu;
    r->rc = -1;
    pthread_t th;
    if (pthread_create(&th, NULL, accept_join_main, r)) {
        a->ops->close(a);
        b->ops->close(b);
        return -100;
    }
    struct rd_params sp = join_params(streams, send_key);
    int rc = rd_session_join(a, &sp, index);
    a->ops->close(a);
    pthread_join(th, NULL);
    b->ops->close(b);
    rd_error_clear();
    return rc;
}

static void t_session_join(void)
{
    struct join_recv r;
    uint8_t other[32];
    memcpy(other, kat_join_key, 32);
    other[17] ^= 4;
    CHECK_EQ_I(join_both(3, kat_join_key, 2, 0, &r), RD_OK);
    CHECK_EQ_I(r.rc, RD_OK);
    CHECK_EQ_U(r.got, 2);
    CHECK_EQ_I(join_both(16, kat_join_key, 15, 0, &r), RD_OK);
    CHECK_EQ_U(r.got, 15);
    CHECK_EQ_I(join_both(3, other, 1, 0, &r), RD_EAUTH);   /* the sender of another session */
    CHECK_EQ_I(r.rc, RD_EAUTH);
    CHECK_EQ_I(join_both(3, kat_join_key, 1, 1, &r), RD_EAUTH);   /* stripe 1 joined already */
    CHECK_EQ_I(r.rc, RD_EAUTH);
    CHECK_EQ_I(join_both(3, kat_join_key, 3, 0, &r), RD_EAUTH);   /* past the last stripe */
    CHECK_EQ_I(r.rc, RD_EAUTH);
}

/* ---- streams in the handshake ---- */

struct send_side {
    struct rd_transport *tp;
    struct rd_key key;
    struct rd_params want, agreed;
    int rc;
};

static void *sender_main(void *arg)
{
    struct send_side *s = arg;
    s->rc = rd_session_sender(s->tp, &s->key, &s->want, &s->agreed);
    s->tp->ops->shutdown(s->tp);   /* the fake receiver then sees the end */
    return NULL;
}

/* The real rd_session_sender asks for `ask` streams; a fake receiver with the right key
 * grants `grant`. Returns the sender's rc; *h_streams = what the HELLO asked for on the wire;
 * *join_ok = the sender's join key is rd_auth_join_key of the transcript. */
static int sender_vs_grant(uint32_t ask, uint32_t grant, uint32_t *h_streams, struct send_side *s,
                           int *join_ok)
{
    struct rd_transport *a, *b;
    rd_error_clear();
    *h_streams = 0xdeadbeefu;
    *join_ok = 0;
    if (mem_pair(&a, &b) != RD_OK)
        return -100;
    memset(s, 0, sizeof *s);
    s->tp = a;
    s->key = key_of(secret);
    s->want = (struct rd_params){ .chunk_size = 65536, .depth = 4, .streams = ask };
    s->rc = -1;
    pthread_t th;
    if (pthread_create(&th, NULL, sender_main, s)) {
        a->ops->close(a);
        b->ops->close(b);
        return -100;
    }
    struct rd_buf *rb;
    struct rd_frame f;
    struct rd_hello h;
    struct rd_challenge c = { .chunk_size = 65536, .depth = 4, .streams = grant };
    if (rd_recv_ctrl(b, 5000, &rb, &f) == RD_OK) {
        int ok = f.type == RD_HELLO && rd_hello_decode(f.payload, f.length, &h) == RD_P_OK;
        b->ops->release(b, rb);
        if (ok) {
            *h_streams = h.streams;
            rd_random(c.nonce, sizeof c.nonce);
            rd_auth_mac(&s->key, RD_ROLE_RECEIVER, &h, &c, c.mac);
            uint8_t out[RD_CHALLENGE_LEN];
            if (rd_send_ctrl(b, RD_CHALLENGE, out, (uint32_t)rd_challenge_encode(&c, out)) == RD_OK &&
                rd_recv_ctrl(b, 5000, &rb, &f) == RD_OK) {   /* AUTH, or the sender gave up */
                int auth = f.type == RD_AUTH;
                b->ops->release(b, rb);
                if (auth)
                    rd_send_ctrl(b, RD_ACCEPT, NULL, 0);
            }
        }
    }
    pthread_join(th, NULL);
    if (s->rc == RD_OK) {
        uint8_t jk[32];
        rd_auth_join_key(&s->key, &h, &c, jk);
        *join_ok = memcmp(jk, s->agreed.join_key, 32) == 0;
    }
    a->ops->close(a);
    b->ops->close(b);
    return s->rc;
}

static void t_sender_checks_granted_streams(void)
{
    struct send_side s;
    uint32_t hs;
    int join_ok;
    CHECK_EQ_I(sender_vs_grant(4, 4, &hs, &s, &join_ok), RD_OK);
    CHECK_EQ_U(hs, 4);
    CHECK_EQ_U(s.agreed.streams, 4);
    CHECK(join_ok);
    CHECK_EQ_I(sender_vs_grant(4, 3, &hs, &s, &join_ok), RD_OK);
    CHECK_EQ_U(s.agreed.streams, 3);
    CHECK(join_ok);
    CHECK_EQ_I(sender_vs_grant(16, 1, &hs, &s, &join_ok), RD_OK);
    CHECK_EQ_U(hs, 16);
    CHECK_EQ_U(s.agreed.streams, 1);
    CHECK(join_ok);
    /* want.streams 0 (callers that predate --streams) asks for one */
    CHECK_EQ_I(sender_vs_grant(0, 1, &hs, &s, &join_ok), RD_OK);
    CHECK_EQ_U(hs, 1);
    CHECK_EQ_U(s.agreed.streams, 1);
    /* more than asked, or none at all: refused, although the receiver's MAC is right */
    static const uint32_t bad[][2] = { { 4, 5 }, { 1, 2 }, { 0, 2 }, { 4, 0 }, { 1, 0 }, { 16, 17 },
                                       { 2, 0xffffffffu } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = sender_vs_grant(bad[i][0], bad[i][1], &hs, &s, &join_ok);
        if (rc != RD_ESTREAM)
            check_fail_at(__FILE__, __LINE__, "asked %u streams, granted %u: sender rc %d, expected RD_ESTREAM",
                          bad[i][0], bad[i][1], rc);
    }
}

/* Real sender and real receiver over the in-memory transport: it is not TCP, so whatever the
 * sender asks and the receiver allows, one stream; both ends hold the same join key. */
struct recv_side2 {
    struct rd_transport *tp;
    struct rd_key key;
    struct rd_params limits, agreed;
    int rc;
};

static void *receiver2_main(void *arg)
{
    struct recv_side2 *r = arg;
    r->rc = rd_session_receiver(r->tp, &r->key, &r->limits, &r->agreed);
    return NULL;
}

static void t_session_streams_not_tcp(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    struct recv_side2 r = { .tp = b, .key = key_of(secret),
                            .limits = { .chunk_size = 65536, .depth = 4, .streams = 16 }, .rc = -1 };
    pthread_t th;
    CHECK_OR(pthread_create(&th, NULL, receiver2_main, &r) == 0, goto out);
    struct rd_key k = key_of(secret);
    struct rd_params want = { .chunk_size = 65536, .depth = 4, .streams = 8 }, agreed;
    memset(&agreed, 0, sizeof agreed);
    CHECK_EQ_I(rd_session_sender(a, &k, &want, &agreed), RD_OK);
    pthread_join(th, NULL);
    CHECK_EQ_I(r.rc, RD_OK);
    CHECK_EQ_U(agreed.streams, 1);
    CHECK_EQ_U(r.agreed.streams, 1);
    CHECK_MEM_EQ(agreed.join_key, r.agreed.join_key, 32);
    static const uint8_t zero[32];
    CHECK_MEM_NE(agreed.join_key, zero, 32);
out:
    a->ops->close(a);
    b->ops->close(b);
}

/* Over TCP the receiver grants min(asked, its limit, RD_MAX_STREAMS), at least 1. A
 * hand-driven sender puts any number in its HELLO, also ones rdsend's command line refuses. */
static int tcp_pair(struct rd_transport **a, struct rd_transport **b)
{
    struct rd_transport *lis = rd_transport_new(&rd_tcp_ops);
    *a = rd_transport_new(&rd_tcp_ops);
    *b = NULL;
    struct rd_addr la = { .bind = "127.0.0.1", .port = "0", .timeout_ms = -1 };
    int rc = lis && *a ? lis->ops->listen(lis, &la) : RD_EIO;
    char port[16];
    if (!rc) {
        snprintf(port, sizeof port, "%u", lis->local_port);
        struct rd_addr ca = { .host = "127.0.0.1", .port = port, .timeout_ms = 3000 };
        rc = (*a)->ops->connect(*a, &ca);
    }
    if (!rc)
        rc = lis->ops->accept(lis, b, 3000);
    if (lis)
        lis->ops->close(lis);
    if (rc && *a) {
        (*a)->ops->close(*a);
        *a = NULL;
    }
    return rc;
}

static void t_session_tcp_grants_streams(void)
{
    static const uint32_t cases[][3] = {   /* asked, receiver limit, granted */
        { 4, 16, 4 }, { 4, 2, 2 }, { 4, 0, 1 }, { 3, 1, 1 }, { 16, 16, 16 }, { 100, 16, 16 },
        { 100, 64, 16 }, { 0xffffffffu, 0xffffffffu, 16 }, { 1, 16, 1 }, { 0, 16, 1 },
    };
    struct rd_key k = key_of(secret);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rd_transport *a, *b;
        rd_error_clear();
        int prc = tcp_pair(&a, &b);
        CHECK_OR(prc == RD_OK, printf("    tcp_pair: %s\n", rd_error_msg()); return);
        struct recv_side2 r = { .tp = b, .key = k, .rc = -1,
                                .limits = { .chunk_size = 65536, .depth = 4, .streams = cases[i][1] } };
        pthread_t th;
        CHECK_OR(pthread_create(&th, NULL, receiver2_main, &r) == 0, break);
        struct rd_hello h;
        init_hello(&h);
        h.streams = cases[i][0];
        struct rd_challenge c;
        memset(&c, 0, sizeof c);
        int answer = -1;
        if (fake_hello(a, &h, &c) == RD_OK) {
            uint8_t mac[RD_MAC_LEN];
            rd_auth_mac(&k, RD_ROLE_SENDER, &h, &c, mac);
            answer = fake_auth(a, mac, NULL);
        }
        pthread_join(th, NULL);
        if (answer != RD_ACCEPT || r.rc != RD_OK || c.streams != cases[i][2] ||
            r.agreed.streams != cases[i][2])
            check_fail_at(__FILE__, __LINE__,
                          "asked %u, limit %u: answer %d, rc %d, CHALLENGE grants %u, receiver agreed %u; "
                          "expected ACCEPT, %u (%s)", cases[i][0], cases[i][1], answer, r.rc, c.streams,
                          r.agreed.streams, cases[i][2], rd_error_msg());
        /* and the receiver's join key is the one of this transcript */
        uint8_t jk[32];
        rd_auth_join_key(&k, &h, &c, jk);
        CHECK_MEM_EQ(jk, r.agreed.join_key, 32);
        a->ops->close(a);
        b->ops->close(b);
    }
    rd_error_clear();
}

static void before_each(void)
{
    rd_error_clear();
}

int main(void)
{
    check_before_each = before_each;
    RUN(t_key_known_answer);
    RUN(t_key_deterministic);
    RUN(t_key_wipe);
    RUN(t_random);
    RUN(t_mac_known_answer);
    RUN(t_right_key_verifies);
    RUN(t_wrong_key_fails);
    RUN(t_every_mac_bit_matters);
    RUN(t_reflection_rejected);
    RUN(t_replay_rejected);
    RUN(t_every_parameter_covered);
    RUN(t_challenge_mac_field_excluded);
    RUN(t_join_known_answer);
    RUN(t_join_key_is_not_on_the_wire);
    RUN(t_join_check);
    RUN(t_join_key_covers_transcript);
    RUN(t_session_honest_sender_accepted);
    RUN(t_session_replay_rejected);
    RUN(t_session_reflection_rejected);
    RUN(t_session_wrong_key_rejected);
    RUN(t_accept_join);
    RUN(t_session_join);
    RUN(t_sender_checks_granted_streams);
    RUN(t_session_streams_not_tcp);
    RUN(t_session_tcp_grants_streams);
    return check_summary();
}
