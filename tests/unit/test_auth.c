/* test_auth.c - key derivation and the mutual challenge-response MACs, first as pure
 * functions, then against a real rd_session_receiver driven by a hand-written sender. */
#include "check.h"
#include "mem_transport.h"

#include "rd_auth.h"
#include "rd_error.h"
#include "rd_proto.h"
#include "rd_session.h"

#include <pthread.h>
#include <string.h>

static const char secret[] = "correct horse battery staple";

/* Known answers, computed independently (Python hmac/hashlib) from the documented scheme:
 * key = HKDF-SHA256(salt "rdpipe", info "rdpipe v1 handshake mac", 32 bytes);
 * MAC = HMAC-SHA256(key, label || HELLO payload || CHALLENGE payload with a zero MAC).
 * They pin the scheme: two builds that disagree here cannot talk to each other. */
static const uint8_t kat_key[32] = {
    0xdc, 0xd6, 0xfe, 0x81, 0xec, 0xc5, 0x0f, 0x58, 0xa5, 0x85, 0xde, 0x2d, 0x8f, 0x22, 0x95, 0x28,
    0xb4, 0x20, 0x52, 0xf9, 0xbf, 0x2b, 0x91, 0xea, 0x22, 0x3b, 0x4a, 0x7e, 0x69, 0x82, 0x1b, 0x5c,
};
static const uint8_t kat_recv_mac[32] = {
    0x59, 0x8e, 0x18, 0x94, 0x16, 0xee, 0xbd, 0xb1, 0xa9, 0x2b, 0x63, 0xca, 0x2f, 0x4f, 0xdd, 0x2b,
    0x6a, 0xd0, 0xfd, 0x25, 0x53, 0x87, 0xb0, 0x49, 0xe8, 0xf2, 0x70, 0xbd, 0x8c, 0x1f, 0xdc, 0x37,
};
static const uint8_t kat_send_mac[32] = {
    0x31, 0x41, 0xd3, 0x10, 0xc1, 0x0e, 0x8d, 0xe1, 0x46, 0xff, 0xa7, 0xf4, 0xcd, 0x0c, 0xf0, 0x57,
    0x0f, 0x56, 0xea, 0x66, 0xaf, 0x24, 0x1b, 0x1d, 0x74, 0xf7, 0xc1, 0xdd, 0x23, 0x59, 0x29, 0xa4,
};

static void kat_transcript(struct rd_hello *h, struct rd_challenge *c)
{
    memset(h, 0, sizeof *h);
    memset(c, 0, sizeof *c);
    *h = (struct rd_hello){ .version_min = 1, .version_max = 1, .caps = 0, .chunk_size = 4194304, .depth = 8 };
    *c = (struct rd_challenge){ .caps = 0, .chunk_size = 1048576, .depth = 4 };
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
    enum { N = 13 };
    static const char *const names[N] = {
        "hello.version_min", "hello.version_max", "hello.caps", "hello.chunk_size", "hello.depth",
        "hello.nonce[0]", "hello.nonce[31]", "challenge.caps", "challenge.chunk_size",
        "challenge.depth", "challenge.nonce[0]", "challenge.nonce[31]", "hello.chunk_size high byte",
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
    RUN(t_session_honest_sender_accepted);
    RUN(t_session_replay_rejected);
    RUN(t_session_reflection_rejected);
    RUN(t_session_wrong_key_rejected);
    return check_summary();
}
