/* test_proto.c - wire format v1: frame header, payload codecs, malformed input, the
 * whole-stream hash, and rd_parse_size from the command line. */
#include "check.h"
#include "mem_transport.h"

#include "run/rd_cli.h"
#include "util/rd_error.h"
#include "wire/rd_proto.h"
#include "transport/rd_session.h"

#include <stdint.h>
#include <string.h>

#define MAXP 4096u   /* max_payload used by most cases */

static uint8_t buf[RD_FRAME_HDR + 8192];

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A DATA frame of n payload bytes 0,1,2,... in buf; returns the frame length. */
static size_t data_frame(uint32_t n, uint64_t seq)
{
    for (uint32_t i = 0; i < n; i++)
        buf[RD_FRAME_HDR + i] = (uint8_t)(i * 7 + 3);
    return rd_frame_seal(buf, RD_DATA, 0, n, seq);
}

/* ---- header ---- */

/* rd_sum fed in pieces must equal rd_checksum of the whole: the TCP receiver hashes each
 * read as it arrives and compares with the sender's one-shot checksum. Sizes straddle XXH3's
 * internal boundaries (16, 128, 240 bytes; 1 KiB stripes blocks); pieces are uneven. */
static void t_sum_in_pieces_equals_checksum(void)
{
    static const size_t sizes[] = { 0, 1, 16, 17, 128, 129, 239, 240, 241, 1023, 1024, 1025,
                                    4095, 65536, 1000003 };
    struct rd_sum *s = rd_sum_new();
    CHECK_OR(s != NULL, return);
    uint8_t *data = malloc(1000003);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < 1000003; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        data[i] = (uint8_t)x;
    }
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        for (size_t piece = 1; piece <= 4099; piece = piece * 3 + 2) {
            rd_sum_reset(s);
            for (size_t off = 0; off < n; off += piece)
                rd_sum_update(s, data + off, n - off < piece ? n - off : piece);
            if (rd_sum_digest(s) != rd_checksum(data, n)) {
                CHECK(!"pieces differ from one shot");
                printf("    size %zu, pieces of %zu\n", n, piece);
            }
        }
    }
    /* and it must notice a flipped bit like the one-shot checksum */
    rd_sum_reset(s);
    data[777] ^= 4;
    rd_sum_update(s, data, 1000003);
    data[777] ^= 4;
    CHECK(rd_sum_digest(s) != rd_checksum(data, 1000003));
    free(data);
    rd_sum_free(s);
}

static void t_header_layout(void)
{
    memset(buf, 0xee, sizeof buf);
    memcpy(buf + RD_FRAME_HDR, "hello", 5);
    size_t n = rd_frame_seal(buf, RD_DATA, 0, 5, 0x0102030405060708ull);
    CHECK_EQ_U(n, RD_FRAME_HDR + 5);
    static const uint8_t want[24] = {
        'R', 'D', 'P', 0xb1, RD_PROTO_VERSION, RD_DATA, 0, 0,   /* magic version type flags */
        5, 0, 0, 0, 0, 0, 0, 0,                                 /* length, reserved = 0 */
        8, 7, 6, 5, 4, 3, 2, 1,                                 /* seq, little endian */
    };
    CHECK_MEM_EQ(buf, want, sizeof want);
    CHECK_EQ_U(le64(buf + 24), rd_checksum("hello", 5));
    CHECK_EQ_U(buf[RD_FRAME_HDR + 5], 0xee);   /* nothing written past the frame */
}

static void t_seal_sum_uses_given_checksum(void)
{
    size_t n = rd_frame_seal_sum(buf, RD_DATA, 0, 0, 9, 0x1122334455667788ull);
    CHECK_EQ_U(n, RD_FRAME_HDR);
    CHECK_EQ_U(le64(buf + 24), 0x1122334455667788ull);
    struct rd_frame f;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_U(f.checksum, 0x1122334455667788ull);
    CHECK_EQ_I(rd_frame_verify(&f), RD_P_CHECKSUM);   /* not the checksum of an empty payload */
}

static void t_parse_every_type(void)
{
    for (int t = RD_HELLO; t <= RD_JOIN; t++) {
        memset(buf + RD_FRAME_HDR, t, 10);
        size_t n = rd_frame_seal(buf, (uint8_t)t, 0, 10, (uint64_t)t * 1000);
        struct rd_frame f;
        memset(&f, 0, sizeof f);
        CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
        CHECK_EQ_I(f.type, t);
        CHECK_EQ_U(f.flags, 0);
        CHECK_EQ_U(f.length, 10);
        CHECK_EQ_U(f.seq, (uint64_t)t * 1000);
        CHECK(f.payload == buf + RD_FRAME_HDR);
        CHECK_EQ_I(rd_frame_verify(&f), RD_P_OK);
    }
}

static void t_parse_empty_and_max_payload(void)
{
    struct rd_frame f;
    size_t n = data_frame(0, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_U(f.length, 0);
    CHECK_EQ_I(rd_frame_verify(&f), RD_P_OK);
    CHECK_EQ_I(rd_frame_parse(buf, n, 0, &f), RD_P_OK);   /* max_payload 0 allows empty only */

    n = data_frame(MAXP, 1);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);   /* exactly the limit */
    CHECK_EQ_U(f.length, MAXP);
    CHECK_EQ_I(rd_frame_verify(&f), RD_P_OK);
}

static void t_frame_names(void)
{
    CHECK_STR_EQ(rd_frame_type_name(RD_HELLO), "HELLO");
    CHECK_STR_EQ(rd_frame_type_name(RD_CHALLENGE), "CHALLENGE");
    CHECK_STR_EQ(rd_frame_type_name(RD_AUTH), "AUTH");
    CHECK_STR_EQ(rd_frame_type_name(RD_ACCEPT), "ACCEPT");
    CHECK_STR_EQ(rd_frame_type_name(RD_REJECT), "REJECT");
    CHECK_STR_EQ(rd_frame_type_name(RD_DATA), "DATA");
    CHECK_STR_EQ(rd_frame_type_name(RD_END), "END");
    CHECK_STR_EQ(rd_frame_type_name(RD_CONFIRM), "CONFIRM");
    CHECK_STR_EQ(rd_frame_type_name(RD_ABORT), "ABORT");
    CHECK_STR_EQ(rd_frame_type_name(RD_JOIN), "JOIN");
    CHECK_EQ_I(RD_JOIN, 10);   /* on the wire: fixed forever */
    CHECK_STR_EQ(rd_frame_type_name(0), "?");
    CHECK_STR_EQ(rd_frame_type_name(11), "?");
    CHECK_STR_EQ(rd_frame_type_name(255), "?");
    CHECK_STR_EQ(rd_frame_type_name(-1), "?");
    CHECK_STR_EQ(rd_proto_strerror(RD_P_OK), "ok");
    CHECK_HAS(rd_proto_strerror(RD_P_CHECKSUM), "checksum");
    CHECK_HAS(rd_proto_strerror(RD_P_SEQUENCE), "out of order");
    CHECK_HAS(rd_proto_strerror(RD_P_VERSION), "version");
    CHECK_HAS(rd_proto_strerror(RD_P_MAGIC), "magic");
    CHECK_STR_EQ(rd_proto_strerror(-100), "protocol error");
}

/* ---- malformed frames ---- */

static void t_short_header(void)
{
    struct rd_frame f;
    size_t n = data_frame(0, 0);
    CHECK_EQ_U(n, RD_FRAME_HDR);
    for (size_t len = 0; len < RD_FRAME_HDR; len++)
        CHECK_EQ_I(rd_frame_parse(buf, len, MAXP, &f), RD_P_SHORT);
}

static void t_truncated_payload(void)
{
    struct rd_frame f;
    size_t n = data_frame(100, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n - 1, MAXP, &f), RD_P_SHORT);
    CHECK_EQ_I(rd_frame_parse(buf, RD_FRAME_HDR, MAXP, &f), RD_P_SHORT);
    CHECK_EQ_I(rd_frame_parse(buf, RD_FRAME_HDR + 1, MAXP, &f), RD_P_SHORT);
}

static void t_payload_longer_than_declared(void)
{
    struct rd_frame f;
    size_t n = data_frame(100, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n + 1, MAXP, &f), RD_P_LENGTH);
    CHECK_EQ_I(rd_frame_parse(buf, n + 1000, MAXP, &f), RD_P_LENGTH);
    n = data_frame(0, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n + 1, MAXP, &f), RD_P_LENGTH);
}

static void t_bad_magic(void)
{
    struct rd_frame f;
    size_t n = data_frame(10, 0);
    for (int i = 0; i < 4; i++) {
        for (int bit = 0; bit < 8; bit++) {
            buf[i] ^= (uint8_t)(1u << bit);
            CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_MAGIC);
            buf[i] ^= (uint8_t)(1u << bit);
        }
    }
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    /* an HTTP request or a TLS hello is not an rdpipe frame */
    memcpy(buf, "GET / HTTP/1.1\r\nHost: x\r\n\r\n\0\0\0\0\0", 32);
    CHECK_EQ_I(rd_frame_parse(buf, 32, MAXP, &f), RD_P_MAGIC);
}

static void t_bad_version(void)
{
    struct rd_frame f;
    static const uint8_t versions[] = { 0, RD_PROTO_VERSION + 1, 2, 0x7f, 0xff };
    size_t n = data_frame(10, 0);
    for (size_t i = 0; i < sizeof versions; i++) {
        if (versions[i] == RD_PROTO_VERSION)
            continue;
        buf[4] = versions[i];
        CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_VERSION);
    }
    buf[4] = RD_PROTO_VERSION;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
}

/* msg says "version N" with exactly the number n (not "version 170" for n == 1) */
static int names_version(const char *msg, unsigned n)
{
    for (const char *p = msg; (p = strstr(p, "version")) != NULL; p++) {
        const char *q = p + 7;
        while (*q == ' ' || *q == 's')
            q++;
        char *end;
        unsigned long v = strtoul(q, &end, 10);
        if (end != q && v == n)
            return 1;
    }
    return 0;
}

/* The error a peer of another version gets names both versions (rd_recv_ctrl). */
static void t_bad_version_is_named(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    for (unsigned v = 0; v <= 255; v += 85) {   /* 0, 85, 170, 255 */
        rd_error_clear();
        struct rd_buf *sb;
        CHECK_OR(a->ops->get_send_buf(a, &sb) == RD_OK, break);
        uint8_t hello[RD_HELLO_LEN] = { 0 };
        memcpy(sb->data + RD_FRAME_HDR, hello, sizeof hello);
        sb->len = rd_frame_seal(sb->data, RD_HELLO, 0, RD_HELLO_LEN, 0);
        sb->data[4] = (uint8_t)v;
        CHECK_OR(a->ops->send(a, sb) == RD_OK, break);
        struct rd_buf *rb = NULL;
        struct rd_frame f;
        CHECK_EQ_I(rd_recv_ctrl(b, 1000, &rb, &f), RD_ESTREAM);
        if (!names_version(rd_error_msg(), v) || !names_version(rd_error_msg(), RD_PROTO_VERSION))
            check_fail_at(__FILE__, __LINE__, "\"%s\" should name versions %u and %u", rd_error_msg(),
                          v, RD_PROTO_VERSION);
        CHECK_HAS(rd_error_msg(), "mem:a");   /* and says which peer */
    }
    /* a right frame still goes through after that: nothing was leaked from the pool */
    for (int i = 0; i < 2 * MEM_CTRL_FRAMES; i++) {
        rd_error_clear();
        CHECK_EQ_I(rd_send_ctrl(a, RD_ACCEPT, NULL, 0), RD_OK);
        struct rd_buf *rb = NULL;
        struct rd_frame f;
        CHECK_OR(rd_recv_ctrl(b, 1000, &rb, &f) == RD_OK, break);
        CHECK_EQ_I(f.type, RD_ACCEPT);
        b->ops->release(b, rb);
    }
    a->ops->close(a);
    b->ops->close(b);
    rd_error_clear();
}

static void t_unknown_type(void)
{
    struct rd_frame f;
    static const uint8_t types[] = { 0, 11, RD_JOIN + 1, 0x40, 0x80, 0xff };
    size_t n = data_frame(10, 0);
    for (size_t i = 0; i < sizeof types; i++) {
        buf[5] = types[i];
        CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_TYPE);
    }
    /* 10 is no longer unknown: it is JOIN (--streams) */
    buf[5] = 10;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(f.type, RD_JOIN);
}

static void t_unknown_flags(void)
{
    struct rd_frame f;
    for (int bit = 0; bit < 16; bit++) {
        data_frame(10, 0);
        size_t n = rd_frame_seal(buf, RD_DATA, (uint16_t)(1u << bit), 10, 0);
        CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_FLAGS);
    }
    /* the reserved-for-later flags are not understood by this build either */
    size_t n = rd_frame_seal(buf, RD_DATA, RD_FLAG_COMPRESSED, 10, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_FLAGS);
    n = rd_frame_seal(buf, RD_DATA, RD_FLAG_ENCRYPTED, 10, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_FLAGS);
    n = rd_frame_seal(buf, RD_DATA, 0xffff, 10, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_FLAGS);
}

static void t_oversized_length(void)
{
    struct rd_frame f;
    size_t n = data_frame(MAXP + 1, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_LENGTH);
    n = data_frame(101, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, 100, &f), RD_P_LENGTH);
    CHECK_EQ_I(rd_frame_parse(buf, n, 101, &f), RD_P_OK);
    /* a huge declared length must be refused from the header alone, whatever follows */
    rd_frame_seal_sum(buf, RD_DATA, 0, 0xffffffffu, 0, 0);
    CHECK_EQ_I(rd_frame_parse(buf, RD_FRAME_HDR, MAXP, &f), RD_P_LENGTH);
    CHECK_EQ_I(rd_frame_parse(buf, sizeof buf, MAXP, &f), RD_P_LENGTH);
    rd_frame_seal_sum(buf, RD_DATA, 0, 0x80000000u, 0, 0);
    CHECK_EQ_I(rd_frame_parse(buf, RD_FRAME_HDR, RD_MAX_CHUNK, &f), RD_P_LENGTH);
}

static void t_bad_checksum_payload_bit(void)
{
    struct rd_frame f;
    size_t n = data_frame(300, 5);
    for (uint32_t i = 0; i < 300; i += 37) {
        for (int bit = 0; bit < 8; bit += 3) {
            buf[RD_FRAME_HDR + i] ^= (uint8_t)(1u << bit);
            CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);   /* header is still fine */
            CHECK_EQ_I(rd_frame_verify(&f), RD_P_CHECKSUM);
            buf[RD_FRAME_HDR + i] ^= (uint8_t)(1u << bit);
        }
    }
    buf[n - 1] ^= 0x80;   /* the last byte too */
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(rd_frame_verify(&f), RD_P_CHECKSUM);
    buf[n - 1] ^= 0x80;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(rd_frame_verify(&f), RD_P_OK);
}

static void t_bad_checksum_header_bit(void)
{
    struct rd_frame f;
    size_t n = data_frame(300, 5);
    for (int byte = 24; byte < 32; byte++) {
        buf[byte] ^= 0x10;
        CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
        CHECK_EQ_I(rd_frame_verify(&f), RD_P_CHECKSUM);
        buf[byte] ^= 0x10;
    }
    /* an empty payload has a checksum too */
    n = data_frame(0, 0);
    buf[24] ^= 1;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(rd_frame_verify(&f), RD_P_CHECKSUM);
}

/* ---- payloads ---- */

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + i * 13);
}

static void t_hello_round_trip(void)
{
    struct rd_hello h = { .version_min = 1, .version_max = 0xfffe, .caps = 0xa5a5a5a5u,
                          .chunk_size = 0x01020304u, .depth = 1024, .streams = 0x0b0c0d0eu }, d;
    fill(h.nonce, sizeof h.nonce, 1);
    memset(buf, 0xee, sizeof buf);
    size_t n = rd_hello_encode(&h, buf + RD_FRAME_HDR);
    CHECK_EQ_U(n, RD_HELLO_LEN);
    CHECK_EQ_U(RD_HELLO_LEN, 52);
    /* wire layout: little endian integers (versions, caps, chunk, depth, streams), then the nonce */
    static const uint8_t want[20] = {
        1, 0, 0xfe, 0xff,                 /* version_min, version_max */
        0xa5, 0xa5, 0xa5, 0xa5,           /* caps */
        0x04, 0x03, 0x02, 0x01,           /* chunk_size */
        0x00, 0x04, 0x00, 0x00,           /* depth 1024 */
        0x0e, 0x0d, 0x0c, 0x0b,           /* streams */
    };
    CHECK_MEM_EQ(buf + RD_FRAME_HDR, want, sizeof want);
    CHECK_MEM_EQ(buf + RD_FRAME_HDR + 20, h.nonce, RD_NONCE_LEN);
    CHECK_EQ_U(buf[RD_FRAME_HDR + RD_HELLO_LEN], 0xee);   /* nothing written past it */
    size_t len = rd_frame_seal(buf, RD_HELLO, 0, (uint32_t)n, 0);
    struct rd_frame f;
    CHECK_EQ_I(rd_frame_parse(buf, len, RD_CTRL_FRAME, &f), RD_P_OK);
    CHECK_EQ_I(rd_frame_verify(&f), RD_P_OK);
    CHECK_EQ_I(f.type, RD_HELLO);
    memset(&d, 0x55, sizeof d);
    CHECK_EQ_I(rd_hello_decode(f.payload, f.length, &d), RD_P_OK);
    CHECK_EQ_U(d.version_min, 1);
    CHECK_EQ_U(d.version_max, 0xfffe);
    CHECK_EQ_U(d.caps, 0xa5a5a5a5u);
    CHECK_EQ_U(d.chunk_size, 0x01020304u);
    CHECK_EQ_U(d.depth, 1024);
    CHECK_EQ_U(d.streams, 0x0b0c0d0eu);
    CHECK_MEM_EQ(d.nonce, h.nonce, RD_NONCE_LEN);
    /* the values --streams uses survive too */
    for (uint32_t st = 0; st <= 17; st++) {
        h.streams = st;
        CHECK_EQ_I(rd_hello_decode(buf + RD_FRAME_HDR, rd_hello_encode(&h, buf + RD_FRAME_HDR), &d), RD_P_OK);
        CHECK_EQ_U(d.streams, st);
        CHECK_EQ_U(d.depth, 1024);
    }
}

static void t_challenge_round_trip(void)
{
    struct rd_challenge c = { .caps = 3, .chunk_size = 4u << 20, .depth = 8, .streams = 0x90a0b0c0u }, d;
    fill(c.nonce, sizeof c.nonce, 100);
    fill(c.mac, sizeof c.mac, 200);
    memset(buf, 0xee, sizeof buf);
    size_t n = rd_challenge_encode(&c, buf + RD_FRAME_HDR);
    CHECK_EQ_U(n, RD_CHALLENGE_LEN);
    CHECK_EQ_U(RD_CHALLENGE_LEN, 80);
    /* caps, chunk_size, depth, streams (LE), nonce, mac */
    static const uint8_t want[16] = { 3, 0, 0, 0, 0, 0, 0x40, 0, 8, 0, 0, 0, 0xc0, 0xb0, 0xa0, 0x90 };
    CHECK_MEM_EQ(buf + RD_FRAME_HDR, want, sizeof want);
    CHECK_MEM_EQ(buf + RD_FRAME_HDR + 16, c.nonce, RD_NONCE_LEN);
    CHECK_MEM_EQ(buf + RD_FRAME_HDR + 16 + RD_NONCE_LEN, c.mac, RD_MAC_LEN);
    CHECK_EQ_U(buf[RD_FRAME_HDR + RD_CHALLENGE_LEN], 0xee);
    size_t len = rd_frame_seal(buf, RD_CHALLENGE, 0, (uint32_t)n, 0);
    struct rd_frame f;
    CHECK_EQ_I(rd_frame_parse(buf, len, RD_CTRL_FRAME, &f), RD_P_OK);
    CHECK_EQ_I(rd_frame_verify(&f), RD_P_OK);
    memset(&d, 0, sizeof d);
    CHECK_EQ_I(rd_challenge_decode(f.payload, f.length, &d), RD_P_OK);
    CHECK_EQ_U(d.caps, 3);
    CHECK_EQ_U(d.chunk_size, 4u << 20);
    CHECK_EQ_U(d.depth, 8);
    CHECK_EQ_U(d.streams, 0x90a0b0c0u);
    CHECK_MEM_EQ(d.nonce, c.nonce, RD_NONCE_LEN);
    CHECK_MEM_EQ(d.mac, c.mac, RD_MAC_LEN);
    for (uint32_t st = 0; st <= 17; st++) {
        c.streams = st;
        CHECK_EQ_I(rd_challenge_decode(buf, rd_challenge_encode(&c, buf), &d), RD_P_OK);
        CHECK_EQ_U(d.streams, st);
        CHECK_EQ_U(d.depth, 8);
        CHECK_MEM_EQ(d.nonce, c.nonce, RD_NONCE_LEN);
    }
}

static void t_join_round_trip(void)
{
    CHECK_EQ_U(RD_JOIN_LEN, 36);
    static const uint32_t idx[] = { 1, 2, 15, 0, 0x01020304u, 0xffffffffu };
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) {
        struct rd_join j = { .index = idx[i] }, d;
        fill(j.mac, sizeof j.mac, (uint8_t)(50 + i));
        memset(buf, 0xee, sizeof buf);
        size_t n = rd_join_encode(&j, buf + RD_FRAME_HDR);
        CHECK_EQ_U(n, RD_JOIN_LEN);
        /* u32 index little endian, then the MAC; nothing past it */
        const uint8_t *p = buf + RD_FRAME_HDR;
        CHECK_EQ_U((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24, idx[i]);
        CHECK_MEM_EQ(p + 4, j.mac, RD_MAC_LEN);
        CHECK_EQ_U(p[RD_JOIN_LEN], 0xee);
        size_t len = rd_frame_seal(buf, RD_JOIN, 0, (uint32_t)n, 0);
        struct rd_frame f;
        CHECK_EQ_I(rd_frame_parse(buf, len, RD_CTRL_FRAME, &f), RD_P_OK);
        CHECK_EQ_I(rd_frame_verify(&f), RD_P_OK);
        CHECK_EQ_I(f.type, RD_JOIN);
        CHECK_EQ_U(f.length, RD_JOIN_LEN);
        memset(&d, 0x55, sizeof d);
        CHECK_EQ_I(rd_join_decode(f.payload, f.length, &d), RD_P_OK);
        CHECK_EQ_U(d.index, idx[i]);
        CHECK_MEM_EQ(d.mac, j.mac, RD_MAC_LEN);
    }
    /* the explicit byte order */
    static const uint8_t wire[RD_JOIN_LEN] = { 0x07, 0x03, 0x02, 0x01, 0xaa };
    struct rd_join d;
    CHECK_EQ_I(rd_join_decode(wire, sizeof wire, &d), RD_P_OK);
    CHECK_EQ_U(d.index, 0x01020307u);
    CHECK_EQ_U(d.mac[0], 0xaa);
    CHECK_EQ_U(d.mac[31], 0);
}

/* A JOIN of any other length is refused and nothing is decoded from it. */
static void t_join_malformed(void)
{
    uint8_t p[RD_CTRL_FRAME];
    memset(p, 0x5c, sizeof p);
    static const size_t bad[] = { 0, 1, 3, 4, 5, RD_MAC_LEN, RD_JOIN_LEN - 1, RD_JOIN_LEN + 1,
                                  RD_JOIN_LEN + 4, RD_HELLO_LEN, RD_CHALLENGE_LEN, RD_END_LEN, 4096 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct rd_join d;
        memset(&d, 0x11, sizeof d);
        int rc = rd_join_decode(p, bad[i], &d);
        if (rc != RD_P_LENGTH)
            check_fail_at(__FILE__, __LINE__, "rd_join_decode of %zu bytes = %d, expected RD_P_LENGTH", bad[i], rc);
        if (d.index != 0x11111111u || d.mac[0] != 0x11)
            check_fail_at(__FILE__, __LINE__, "rd_join_decode of %zu bytes wrote its output", bad[i]);
    }
    struct rd_join d;
    CHECK_EQ_I(rd_join_decode(p, RD_JOIN_LEN, &d), RD_P_OK);
    CHECK_EQ_U(d.index, 0x5c5c5c5cu);
    /* and a JOIN frame that lies about its length fails at the header, like every frame */
    struct rd_join j = { .index = 1 };
    size_t n = rd_join_encode(&j, buf + RD_FRAME_HDR);
    size_t len = rd_frame_seal(buf, RD_JOIN, 0, (uint32_t)n, 0);
    struct rd_frame f;
    CHECK_EQ_I(rd_frame_parse(buf, len - 1, RD_CTRL_FRAME, &f), RD_P_SHORT);
    CHECK_EQ_I(rd_frame_parse(buf, len + 1, RD_CTRL_FRAME, &f), RD_P_LENGTH);
    buf[RD_FRAME_HDR + 5] ^= 1;   /* a MAC byte damaged in transit: the frame checksum catches it */
    CHECK_EQ_I(rd_frame_parse(buf, len, RD_CTRL_FRAME, &f), RD_P_OK);
    CHECK_EQ_I(rd_frame_verify(&f), RD_P_CHECKSUM);
}

static void t_end_round_trip(void)
{
    struct rd_end e = { .total_bytes = 0xfedcba9876543210ull, .frames = 1ull << 40,
                        .stream_hash = 0x0123456789abcdefull }, d;
    size_t n = rd_end_encode(&e, buf + RD_FRAME_HDR);
    CHECK_EQ_U(n, RD_END_LEN);
    CHECK_EQ_U(le64(buf + RD_FRAME_HDR), 0xfedcba9876543210ull);
    CHECK_EQ_U(le64(buf + RD_FRAME_HDR + 16), 0x0123456789abcdefull);
    for (int type = RD_END; type <= RD_CONFIRM; type++) {   /* CONFIRM carries the same payload */
        size_t len = rd_frame_seal(buf, (uint8_t)type, 0, (uint32_t)n, 0);
        struct rd_frame f;
        CHECK_EQ_I(rd_frame_parse(buf, len, RD_CTRL_FRAME, &f), RD_P_OK);
        CHECK_EQ_I(rd_frame_verify(&f), RD_P_OK);
        memset(&d, 0, sizeof d);
        CHECK_EQ_I(rd_end_decode(f.payload, f.length, &d), RD_P_OK);
        CHECK_EQ_U(d.total_bytes, e.total_bytes);
        CHECK_EQ_U(d.frames, e.frames);
        CHECK_EQ_U(d.stream_hash, e.stream_hash);
    }
}

static void t_reason_round_trip(void)
{
    static const uint8_t types[] = { RD_REJECT, RD_ABORT };
    for (size_t i = 0; i < sizeof types; i++) {
        struct rd_reason r = { .code = 3 }, d;
        snprintf(r.text, sizeof r.text, "authentication failed: wrong key (%s)",
                 rd_frame_type_name(types[i]));
        size_t n = rd_reason_encode(&r, buf + RD_FRAME_HDR);
        CHECK_EQ_U(n, 4 + strlen(r.text));
        size_t len = rd_frame_seal(buf, types[i], 0, (uint32_t)n, 0);
        struct rd_frame f;
        CHECK_EQ_I(rd_frame_parse(buf, len, RD_CTRL_FRAME, &f), RD_P_OK);
        CHECK_EQ_I(f.type, types[i]);
        CHECK_EQ_I(rd_frame_verify(&f), RD_P_OK);
        memset(&d, 'x', sizeof d);
        CHECK_EQ_I(rd_reason_decode(f.payload, f.length, &d), RD_P_OK);
        CHECK_EQ_U(d.code, 3);
        CHECK_STR_EQ(d.text, r.text);
    }
    /* empty text */
    struct rd_reason r = { .code = 0xdeadbeef }, d;
    size_t n = rd_reason_encode(&r, buf);
    CHECK_EQ_U(n, 4);
    memset(&d, 'x', sizeof d);
    CHECK_EQ_I(rd_reason_decode(buf, n, &d), RD_P_OK);
    CHECK_EQ_U(d.code, 0xdeadbeef);
    CHECK_STR_EQ(d.text, "");
}

static void t_reason_longest_text(void)
{
    struct rd_reason r = { .code = 4 }, d;
    memset(r.text, 'L', sizeof r.text);   /* not even terminated: encode must stop at 199 */
    size_t n = rd_reason_encode(&r, buf);
    CHECK_EQ_U(n, 4 + sizeof r.text - 1);
    CHECK_EQ_I(rd_reason_decode(buf, n, &d), RD_P_OK);
    CHECK_EQ_U(strlen(d.text), sizeof d.text - 1);
    CHECK_EQ_U((unsigned char)d.text[198], 'L');
    /* one more byte of text than fits is refused, not truncated silently */
    buf[n] = 'L';
    CHECK_EQ_I(rd_reason_decode(buf, n + 1, &d), RD_P_LENGTH);
    CHECK_EQ_I(rd_reason_decode(buf, 3, &d), RD_P_LENGTH);
    CHECK_EQ_I(rd_reason_decode(buf, 0, &d), RD_P_LENGTH);
}

static void t_reason_sanitized(void)
{
    static const uint8_t raw[] = { 5, 0, 0, 0, 'o', 'k', '\n', '\x1b', '[', '2', 'J', '\r', '\t',
                                   0x00, 0x7f, 0x80, 0xff, 0xc3, 0xa9, ' ', '~', 0x1f };
    struct rd_reason d;
    CHECK_EQ_I(rd_reason_decode(raw, sizeof raw, &d), RD_P_OK);
    CHECK_EQ_U(d.code, 5);
    CHECK_STR_EQ(d.text, "ok" "??" "[2J" "????????" " ~?");
    CHECK_EQ_U(strlen(d.text), sizeof raw - 4);   /* NUL inside the text does not cut it */
}

static void t_payload_wrong_size(void)
{
    struct rd_hello h;
    struct rd_challenge c;
    struct rd_end e;
    memset(buf, 0, sizeof buf);
    /* 48 and 76: the HELLO and CHALLENGE of builds before --streams */
    static const size_t hello_bad[] = { 0, 1, RD_HELLO_LEN - 1, RD_HELLO_LEN + 1, RD_CHALLENGE_LEN, 48,
                                        RD_JOIN_LEN };
    for (size_t i = 0; i < sizeof hello_bad / sizeof hello_bad[0]; i++)
        CHECK_EQ_I(rd_hello_decode(buf, hello_bad[i], &h), RD_P_LENGTH);
    static const size_t chal_bad[] = { 0, RD_HELLO_LEN, RD_CHALLENGE_LEN - 1, RD_CHALLENGE_LEN + 1, 76,
                                       RD_JOIN_LEN };
    for (size_t i = 0; i < sizeof chal_bad / sizeof chal_bad[0]; i++)
        CHECK_EQ_I(rd_challenge_decode(buf, chal_bad[i], &c), RD_P_LENGTH);
    static const size_t end_bad[] = { 0, 8, RD_END_LEN - 1, RD_END_LEN + 1, 32 };
    for (size_t i = 0; i < sizeof end_bad / sizeof end_bad[0]; i++)
        CHECK_EQ_I(rd_end_decode(buf, end_bad[i], &e), RD_P_LENGTH);
    CHECK_EQ_I(rd_hello_decode(buf, RD_HELLO_LEN, &h), RD_P_OK);
    CHECK_EQ_I(rd_challenge_decode(buf, RD_CHALLENGE_LEN, &c), RD_P_OK);
    CHECK_EQ_I(rd_end_decode(buf, RD_END_LEN, &e), RD_P_OK);
}

/* ---- whole-stream hash ---- */

static uint64_t hash_of(const uint64_t *seq, const uint32_t *len, const uint64_t *sum, int n)
{
    struct rd_stream_hash h;
    rd_stream_hash_init(&h);
    for (int i = 0; i < n; i++)
        rd_stream_hash_add(&h, seq[i], len[i], sum[i]);
    return h.state;
}

static void t_stream_hash(void)
{
    uint64_t seq[3] = { 0, 1, 2 }, sum[3] = { 0x1111, 0x2222, 0x3333 };
    uint32_t len[3] = { 4096, 4096, 17 };
    uint64_t base = hash_of(seq, len, sum, 3);
    CHECK_EQ_U(hash_of(seq, len, sum, 3), base);   /* deterministic */
    struct rd_stream_hash empty;
    rd_stream_hash_init(&empty);
    CHECK_NE_U(base, empty.state);
    CHECK_NE_U(hash_of(seq, len, sum, 2), base);   /* a missing last chunk shows */

    /* same chunks, other order: checksums swapped (with the same seqs) */
    uint64_t sum_swapped[3] = { 0x2222, 0x1111, 0x3333 };
    CHECK_NE_U(hash_of(seq, len, sum_swapped, 3), base);
    /* same chunks, other order: whole entries swapped */
    uint64_t seq_sw[3] = { 1, 0, 2 };
    CHECK_NE_U(hash_of(seq_sw, len, sum_swapped, 3), base);
    /* each field counts */
    uint64_t seq_b[3] = { 0, 1, 3 };
    CHECK_NE_U(hash_of(seq_b, len, sum, 3), base);
    uint32_t len_b[3] = { 4096, 4096, 18 };
    CHECK_NE_U(hash_of(seq, len_b, sum, 3), base);
    uint64_t sum_b[3] = { 0x1111, 0x2223, 0x3333 };
    CHECK_NE_U(hash_of(seq, len, sum_b, 3), base);
    /* two identical chunks in a row are not the same as one */
    uint64_t s2[2] = { 0, 1 }, c2[2] = { 7, 7 };
    uint32_t l2[2] = { 10, 10 };
    CHECK_NE_U(hash_of(s2, l2, c2, 2), hash_of(s2, l2, c2, 1));
}

/* ---- rd_parse_size ---- */

static int size_ok_at(int line, const char *s, uint64_t want)
{
    uint64_t v = 0xababababababababull;
    int rc = rd_parse_size(s, &v);
    if (rc != 0 || v != want) {
        check_fail_at(__FILE__, line, "rd_parse_size(\"%s\") = %d, %llu; expected 0, %llu", s, rc,
                      (unsigned long long)v, (unsigned long long)want);
        return 0;
    }
    return 1;
}

static int size_bad_at(int line, const char *s)
{
    uint64_t v = 0xababababababababull;
    int rc = rd_parse_size(s, &v);
    if (rc != -1 || v != 0xababababababababull) {
        check_fail_at(__FILE__, line, "rd_parse_size(\"%s\") = %d, %llu; expected -1, untouched",
                      s ? s : "(null)", rc, (unsigned long long)v);
        return 0;
    }
    return 1;
}

#define size_ok(s, want) size_ok_at(__LINE__, s, want)
#define size_bad(s) size_bad_at(__LINE__, s)

static void t_parse_size_good(void)
{
    size_ok("4096", 4096);
    size_ok("0", 0);
    size_ok("4K", 4096);
    size_ok("4k", 4096);
    size_ok("64K", 65536);
    size_ok("1M", 1048576);
    size_ok("1m", 1048576);
    size_ok("2G", 2147483648ull);
    size_ok("2g", 2147483648ull);
    size_ok("4MiB", 4194304);
    size_ok("4KiB", 4096);
    size_ok("4MB", 4194304);
    size_ok("18446744073709551615", 18446744073709551615ull);   /* UINT64_MAX, no suffix */
    size_ok("17179869183G", 17179869183ull << 30);              /* largest G that fits */
}

static void t_parse_size_bad(void)
{
    size_bad("");
    size_bad(NULL);
    size_bad("-1");
    size_bad("-0");
    size_bad("4X");
    size_bad("4KX");
    size_bad("4 K");
    size_bad("K");
    size_bad("4T");
    size_bad("4.5M");
    size_bad("0x10");
    size_bad("18446744073709551616");   /* UINT64_MAX + 1 */
    size_bad("99999999999999999999999");
    size_bad("17179869184G");           /* 2^34 G = 2^64 */
    size_bad("18014398509481984K");     /* 2^54 K = 2^64 */
}

/* Inputs that strtoull() accepts but a size must not: a sign or space in front (" -1" is
 * read by strtoull as 2^64 - 1), and an "i"/"B" with no unit before it. */
static void t_parse_size_strtoull_leftovers(void)
{
    size_bad(" -1");
    size_bad(" 4K");
    size_bad("+4K");
    size_bad("4i");
    size_bad("4iB");
}

static void before_each(void)
{
    rd_error_clear();
}

int main(void)
{
    check_before_each = before_each;
    RUN(t_header_layout);
    RUN(t_sum_in_pieces_equals_checksum);
    RUN(t_seal_sum_uses_given_checksum);
    RUN(t_parse_every_type);
    RUN(t_parse_empty_and_max_payload);
    RUN(t_frame_names);
    RUN(t_short_header);
    RUN(t_truncated_payload);
    RUN(t_payload_longer_than_declared);
    RUN(t_bad_magic);
    RUN(t_bad_version);
    RUN(t_bad_version_is_named);
    RUN(t_unknown_type);
    RUN(t_unknown_flags);
    RUN(t_oversized_length);
    RUN(t_bad_checksum_payload_bit);
    RUN(t_bad_checksum_header_bit);
    RUN(t_hello_round_trip);
    RUN(t_challenge_round_trip);
    RUN(t_join_round_trip);
    RUN(t_join_malformed);
    RUN(t_end_round_trip);
    RUN(t_reason_round_trip);
    RUN(t_reason_longest_text);
    RUN(t_reason_sanitized);
    RUN(t_payload_wrong_size);
    RUN(t_stream_hash);
    RUN(t_parse_size_good);
    RUN(t_parse_size_bad);
    RUN(t_parse_size_strtoull_leftovers);
    return check_summary();
}
