/* test_proto.c - wire format v2: frame header (48 bytes, tag field), tagging and checking a
 * frame, payload codecs, malformed input, frames of protocol version 1, the whole-stream hash,
 * and rd_parse_size from the command line. (The tag's cryptography: test_tag.c.) */
#include "check.h"
#include "mem_transport.h"

#include "run/rd_cli.h"
#include "util/rd_error.h"
#include "wire/rd_auth.h"
#include "wire/rd_proto.h"
#include "wire/rd_tag.h"
#include "transport/rd_session.h"

#include <stdint.h>
#include <string.h>
#include <xxhash.h>

#define MAXP 4096u   /* max_payload used by most cases */

static uint8_t buf[RD_FRAME_HDR + 8192];

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static const uint8_t zero_tag[RD_TAG_LEN];
static const uint8_t test_key[RD_KEY_LEN] = "0123456789abcdef0123456789abcdef";

/* Tag the sealed frame in b (payload in place) under test_key, direction dir. */
static void tag_frame(uint8_t *b, enum rd_tag_dir dir)
{
    struct rd_tagger *t = rd_tagger_new(test_key);
    if (!t || rd_frame_tag(t, dir, b, b + RD_FRAME_HDR) != 0)
        check_fail_at(__FILE__, __LINE__, "cannot tag a frame");
    rd_tagger_free(t);
}

/* rd_frame_check of the parsed frame f in b under test_key, direction dir. */
static int check_tag(const uint8_t *b, const struct rd_frame *f, enum rd_tag_dir dir)
{
    struct rd_tagger *t = rd_tagger_new(test_key);
    int rc = t ? rd_frame_check(t, dir, b, f) : -100;
    rd_tagger_free(t);
    return rc;
}

/* A DATA frame of n payload bytes 0,1,2,... in buf; returns the frame length. */
static size_t data_frame(uint32_t n, uint64_t seq)
{
    for (uint32_t i = 0; i < n; i++)
        buf[RD_FRAME_HDR + i] = (uint8_t)(i * 7 + 3);
    return rd_frame_seal(buf, RD_DATA, 0, n, seq);
}

/* ---- header ---- */

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
    CHECK_EQ_U(RD_FRAME_HDR, 48);
    CHECK_EQ_U(RD_HDR_SEQ, 16);
    CHECK_EQ_U(RD_HDR_TAG, 24);
    CHECK_EQ_U(RD_TAG_LEN, 16);
    /* the tag field is zero until rd_frame_tag fills it; bytes 40..47 are reserved, zero */
    for (int i = 24; i < 48; i++)
        if (buf[i] != 0)
            check_fail_at(__FILE__, __LINE__, "header byte %d is 0x%02x after sealing, expected 0", i, buf[i]);
    CHECK_EQ_U(buf[RD_FRAME_HDR + 5], 0xee);   /* nothing written past the frame */
    /* rd_frame_tag writes the tag of header and payload into bytes 24..39, nothing else */
    uint8_t before[RD_FRAME_HDR + 5], want_tag[RD_TAG_LEN];
    memcpy(before, buf, sizeof before);
    tag_frame(buf, RD_TAG_DOWN);
    struct rd_tagger *t = rd_tagger_new(test_key);
    CHECK_OR(t != NULL, return);
    CHECK_EQ_I(rd_tag_compute(t, RD_TAG_DOWN, before, (const uint8_t *)"hello", 5, want_tag), 0);
    rd_tagger_free(t);
    CHECK_MEM_EQ(buf + RD_HDR_TAG, want_tag, RD_TAG_LEN);
    CHECK_MEM_EQ(buf, before, RD_HDR_TAG);
    CHECK_MEM_EQ(buf + 40, before + 40, sizeof before - 40);
    CHECK_EQ_U(buf[RD_FRAME_HDR + 5], 0xee);
}

/* A sealed frame is untagged: its zero tag is not the tag of anything, empty payload included,
 * and sealing again clears a tag that was there. */
static void t_seal_leaves_tag_zero(void)
{
    size_t n = rd_frame_seal(buf, RD_DATA, 0, 0, 9);
    CHECK_EQ_U(n, RD_FRAME_HDR);
    struct rd_frame f;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_MEM_EQ(f.tag, zero_tag, RD_TAG_LEN);
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_TAG);
    tag_frame(buf, RD_TAG_DOWN);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_MEM_NE(f.tag, zero_tag, RD_TAG_LEN);
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_OK);
    rd_frame_seal(buf, RD_DATA, 0, 0, 9);
    CHECK_MEM_EQ(buf + RD_HDR_TAG, zero_tag, RD_TAG_LEN);
}

static void t_parse_every_type(void)
{
    for (int t = RD_HELLO; t <= RD_FRAME_TYPE_MAX; t++) {
        memset(buf + RD_FRAME_HDR, t, 10);
        size_t n = rd_frame_seal(buf, (uint8_t)t, 0, 10, (uint64_t)t * 1000);
        tag_frame(buf, RD_TAG_UP);
        struct rd_frame f;
        memset(&f, 0, sizeof f);
        CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
        CHECK_EQ_I(f.type, t);
        CHECK_EQ_U(f.flags, 0);
        CHECK_EQ_U(f.length, 10);
        CHECK_EQ_U(f.seq, (uint64_t)t * 1000);
        CHECK(f.payload == buf + RD_FRAME_HDR);
        CHECK_MEM_EQ(f.tag, buf + RD_HDR_TAG, RD_TAG_LEN);
        CHECK_EQ_I(check_tag(buf, &f, RD_TAG_UP), RD_P_OK);
    }
}

static void t_parse_empty_and_max_payload(void)
{
    struct rd_frame f;
    size_t n = data_frame(0, 0);
    tag_frame(buf, RD_TAG_DOWN);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_U(f.length, 0);
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_OK);
    CHECK_EQ_I(rd_frame_parse(buf, n, 0, &f), RD_P_OK);   /* max_payload 0 allows empty only */

    n = data_frame(MAXP, 1);
    tag_frame(buf, RD_TAG_DOWN);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);   /* exactly the limit */
    CHECK_EQ_U(f.length, MAXP);
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_OK);
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
    CHECK_STR_EQ(rd_frame_type_name(RD_RAILS), "RAILS");
    CHECK_EQ_I(RD_RAILS, 11);
    CHECK_STR_EQ(rd_frame_type_name(0), "?");
    CHECK_STR_EQ(rd_frame_type_name(12), "?");
    CHECK_STR_EQ(rd_frame_type_name(255), "?");
    CHECK_STR_EQ(rd_frame_type_name(-1), "?");
    CHECK_STR_EQ(rd_proto_strerror(RD_P_OK), "ok");
    CHECK_HAS(rd_proto_strerror(RD_P_TAG), "authentication tag");
    CHECK_EQ_I(RD_P_TAG, -7);
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
    static const uint8_t versions[] = { 0, 1, RD_PROTO_VERSION + 1, 2, 3, 0x7f, 0xff };
    size_t n = data_frame(10, 0);
    for (size_t i = 0; i < sizeof versions; i++) {
        if (versions[i] == RD_PROTO_VERSION)
            continue;
        buf[4] = versions[i];
        CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_VERSION);
    }
    buf[4] = RD_PROTO_VERSION;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(RD_PROTO_VERSION, 2);
}

/* A version 1 frame as a v1 peer sends it: a 32-byte header (magic, version 1, type, flags,
 * length, reserved, seq, XXH3 checksum) and its payload. It is shorter than our header, but
 * the peer deserves "another version", not "truncated": version is where v1 had it. */
static size_t v1_frame(uint8_t *b, uint8_t type, uint32_t len, uint64_t seq)
{
    memcpy(b, RD_MAGIC, 4);
    b[4] = 1;
    b[5] = type;
    b[6] = b[7] = 0;
    for (int i = 0; i < 4; i++)
        b[8 + i] = (uint8_t)(len >> (8 * i));
    memset(b + 12, 0, 4);
    for (int i = 0; i < 8; i++)
        b[16 + i] = (uint8_t)(seq >> (8 * i));
    uint64_t sum = XXH3_64bits(b + 32, len);
    for (int i = 0; i < 8; i++)
        b[24 + i] = (uint8_t)(sum >> (8 * i));
    return 32 + (size_t)len;
}

static void t_v1_frame_is_another_version(void)
{
    struct rd_frame f;
    static uint8_t b[RD_FRAME_HDR + 200];
    memset(b, 0, sizeof b);
    /* a v1 HELLO (52-byte payload: 84 bytes in all, more than our header), a v1 ACCEPT (32
     * bytes, less), a v1 END; and any prefix of at least magic + version */
    memset(b + 32, 0x11, RD_HELLO_LEN);
    size_t n = v1_frame(b, RD_HELLO, RD_HELLO_LEN, 0);
    CHECK_EQ_U(n, 84);
    CHECK_EQ_I(rd_frame_parse(b, n, MAXP, &f), RD_P_VERSION);
    CHECK_EQ_I(rd_frame_parse_head(b, MAXP, &f), RD_P_VERSION);   /* 48 bytes of it */
    n = v1_frame(b, RD_ACCEPT, 0, 0);
    CHECK_EQ_U(n, 32);
    for (size_t len = 5; len <= n; len++)
        if (rd_frame_parse(b, len, MAXP, &f) != RD_P_VERSION)
            check_fail_at(__FILE__, __LINE__, "a v1 frame cut to %zu bytes is not RD_P_VERSION", len);
    for (size_t len = 0; len < 5; len++)
        CHECK_EQ_I(rd_frame_parse(b, len, MAXP, &f), RD_P_SHORT);   /* no version byte yet */
    n = v1_frame(b, RD_END, RD_END_LEN, 3);
    CHECK_EQ_U(n, 56);
    CHECK_EQ_I(rd_frame_parse(b, n, MAXP, &f), RD_P_VERSION);
    /* a v2 frame cut short is truncated, as before */
    n = data_frame(0, 0);
    CHECK_EQ_I(rd_frame_parse(buf, 32, MAXP, &f), RD_P_SHORT);
    /* and magic first: a frame that is not rdpipe's is not "another version" */
    n = v1_frame(b, RD_HELLO, 0, 0);
    b[0] ^= 0x20;
    CHECK_EQ_I(rd_frame_parse(b, n, MAXP, &f), RD_P_MAGIC);
}

/* The reserved bytes (12..15 and 40..47) are a later version's: any non-zero bit is refused,
 * by the full parse and by the header-only one. */
static void t_reserved_bytes_refused(void)
{
    struct rd_frame f;
    static const int reserved[] = { 12, 13, 14, 15, 40, 41, 42, 43, 44, 45, 46, 47 };
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
        for (int bit = 0; bit < 8; bit += 7) {
            size_t n = data_frame(10, 0);
            buf[reserved[i]] ^= (uint8_t)(1u << bit);
            int rc = rd_frame_parse(buf, n, MAXP, &f), hrc = rd_frame_parse_head(buf, MAXP, &f);
            if (rc != RD_P_FLAGS || hrc != RD_P_FLAGS)
                check_fail_at(__FILE__, __LINE__, "reserved byte %d bit %d set: parse %d, parse_head %d; expected RD_P_FLAGS",
                              reserved[i], bit, rc, hrc);
        }
    }
    /* the tag field is not reserved: any value parses (the tag check is another step) */
    size_t n = data_frame(10, 0);
    memset(buf + RD_HDR_TAG, 0xff, RD_TAG_LEN);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(rd_frame_parse_head(buf, MAXP, &f), RD_P_OK);
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
        /* the answer is a REJECT in our own version (a v1 peer still reads magic and version) */
        CHECK_OR(rd_recv_ctrl(a, 1000, &rb, &f) == RD_OK, break);
        CHECK_EQ_I(f.type, RD_REJECT);
        a->ops->release(a, rb);
    }
    /* a v1 peer's HELLO, in the v1 layout (32-byte header) */
    rd_error_clear();
    struct rd_buf *sb;
    if (a->ops->get_send_buf(a, &sb) == RD_OK) {
        memset(sb->data + 32, 0, RD_HELLO_LEN);
        sb->len = v1_frame(sb->data, RD_HELLO, RD_HELLO_LEN, 0);
        CHECK(a->ops->send(a, sb) == RD_OK);
        struct rd_buf *rb = NULL;
        struct rd_frame f;
        CHECK_EQ_I(rd_recv_ctrl(b, 1000, &rb, &f), RD_ESTREAM);
        if (!names_version(rd_error_msg(), 1) || !names_version(rd_error_msg(), RD_PROTO_VERSION))
            check_fail_at(__FILE__, __LINE__, "\"%s\" should name versions 1 and %u", rd_error_msg(),
                          RD_PROTO_VERSION);
        CHECK_EQ_I(rd_recv_ctrl(a, 1000, &rb, &f), RD_OK);
        if (rb) {
            CHECK_EQ_I(f.type, RD_REJECT);
            a->ops->release(a, rb);
        }
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

/* ---- control frames on an authenticated connection (rd_session.c) ---- */

/* Receive one frame on tp: its rd_recv_ctrl rc; *type and a copy of the frame when RD_OK. */
static int recv_one(struct rd_transport *tp, int *type, uint8_t *copy, size_t *len)
{
    struct rd_buf *rb = NULL;
    struct rd_frame f;
    int rc = rd_recv_ctrl_quiet(tp, 1000, &rb, &f);
    if (rc == RD_OK) {
        *type = f.type;
        if (copy) {
            memcpy(copy, rb->data, rb->len);
            *len = rb->len;
        }
        tp->ops->release(tp, rb);
    }
    return rc;
}

/* Send the frame bytes[0..len) on tp as they are. */
static int send_bytes(struct rd_transport *tp, const uint8_t *bytes, size_t len)
{
    return rd_send_raw(tp, bytes, len);
}

/* Once the handshake set hop keys, ABORT and REJECT are tagged under the hop key in the
 * sender's direction with a random seq, and a receiver takes only those: an untagged,
 * reflected, damaged or other-key goodbye is a forgery. Other frames are not hop-tagged. */
static void t_hop_tagged_goodbyes(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    memcpy(a->hop_key, test_key, RD_KEY_LEN);
    memcpy(b->hop_key, test_key, RD_KEY_LEN);
    a->hop_dir = RD_TAG_HOP_DOWN;   /* a sends the stream */
    b->hop_dir = RD_TAG_HOP_UP;
    static uint8_t fr[2][RD_CTRL_FRAME];
    size_t len[2] = { 0, 0 };
    int type = -1;
    /* two ABORTs from a: both accepted by b, with different (random) seqs, tags in a's direction */
    for (int i = 0; i < 2; i++) {
        rd_send_reason(a, RD_ABORT, RD_ESTREAM, "disk full");
        CHECK_EQ_I(recv_one(b, &type, fr[i], &len[i]), RD_OK);
        CHECK_EQ_I(type, RD_ABORT);
    }
    struct rd_frame f0, f1;
    CHECK_OR(rd_frame_parse(fr[0], len[0], RD_CTRL_FRAME, &f0) == RD_P_OK &&
             rd_frame_parse(fr[1], len[1], RD_CTRL_FRAME, &f1) == RD_P_OK, goto out);
    CHECK_NE_U(f0.seq, f1.seq);
    CHECK_EQ_I(check_tag(fr[0], &f0, RD_TAG_HOP_DOWN), RD_P_OK);
    CHECK_EQ_I(check_tag(fr[0], &f0, RD_TAG_HOP_UP), RD_P_TAG);
    /* and b's REJECT the other way, in b's direction */
    rd_send_reason(b, RD_REJECT, RD_EAUTH, "no");
    CHECK_EQ_I(recv_one(a, &type, NULL, NULL), RD_OK);
    CHECK_EQ_I(type, RD_REJECT);

    /* forgeries: replayed as it was (a's own ABORT sent back to a: reflected), untagged,
     * one tag bit off, a payload byte changed, under another key */
    rd_error_clear();
    CHECK_EQ_I(send_bytes(b, fr[0], len[0]), RD_OK);
    CHECK_EQ_I(recv_one(a, &type, NULL, NULL), RD_ESTREAM);
    CHECK_HAS(rd_error_msg(), "authentication tag");
    static uint8_t forged[RD_CTRL_FRAME];
    for (int k = 0; k < 4; k++) {
        memcpy(forged, fr[0], len[0]);
        if (k == 0)
            memset(forged + RD_HDR_TAG, 0, RD_TAG_LEN);
        else if (k == 1)
            forged[RD_HDR_TAG + 15] ^= 0x80;
        else if (k == 2)
            forged[RD_FRAME_HDR + 4] ^= 0x20;   /* the reason's first letter */
        else {
            uint8_t other[RD_KEY_LEN];
            memcpy(other, test_key, sizeof other);
            other[5] ^= 1;
            struct rd_tagger *t = rd_tagger_new(other);
            CHECK_OR(t != NULL, break);
            rd_frame_tag(t, RD_TAG_HOP_DOWN, forged, forged + RD_FRAME_HDR);
            rd_tagger_free(t);
        }
        rd_error_clear();
        CHECK_EQ_I(send_bytes(a, forged, len[0]), RD_OK);
        int rc = recv_one(b, &type, NULL, NULL);
        if (rc != RD_ESTREAM || !strstr(rd_error_msg(), "authentication tag"))
            check_fail_at(__FILE__, __LINE__, "forgery %d: rc %d \"%s\", expected RD_ESTREAM, authentication tag",
                          k, rc, rd_error_msg());
    }
    /* a frame the handshake does not tag goes through untagged, and nothing tags it */
    rd_error_clear();
    CHECK_EQ_I(rd_send_ctrl(a, RD_ACCEPT, NULL, 0), RD_OK);
    CHECK_EQ_I(recv_one(b, &type, fr[0], &len[0]), RD_OK);
    CHECK_EQ_I(type, RD_ACCEPT);
    CHECK_MEM_EQ(fr[0] + RD_HDR_TAG, zero_tag, RD_TAG_LEN);
    /* rd_seal_hop seals what the caller built in a send buffer the same way */
    struct rd_buf *sb;
    CHECK_OR(a->ops->get_send_buf(a, &sb) == RD_OK, goto out);
    struct rd_reason r = { .code = RD_ESTREAM, .text = "sender aborted" };
    rd_seal_hop(a, sb, RD_ABORT, (uint32_t)rd_reason_encode(&r, sb->data + RD_FRAME_HDR));
    CHECK_EQ_I(a->ops->send(a, sb), RD_OK);
    CHECK_EQ_I(recv_one(b, &type, NULL, NULL), RD_OK);
    CHECK_EQ_I(type, RD_ABORT);
    /* before the handshake (no hop keys) nothing is tagged, and goodbyes are taken as they come */
    a->hop_dir = b->hop_dir = 0;
    rd_send_reason(a, RD_REJECT, RD_EAUTH, "wrong key");
    CHECK_EQ_I(recv_one(b, &type, fr[0], &len[0]), RD_OK);
    CHECK_EQ_I(type, RD_REJECT);
    CHECK_MEM_EQ(fr[0] + RD_HDR_TAG, zero_tag, RD_TAG_LEN);
    CHECK_EQ_U(le64(fr[0] + RD_HDR_SEQ), 0);
out:
    a->ops->close(a);
    b->ops->close(b);
    rd_error_clear();
}

/* Frames of the stream that go through rd_session.c (CONFIRM): rd_send_tagged tags under the
 * given key, direction and seq; rd_check_tagged takes exactly that. rd_send_raw passes a frame
 * on as it came (a relay's CONFIRM), and refuses one larger than a control frame. */
static void t_stream_tagged_ctrl(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    static const uint8_t stream_key[RD_KEY_LEN] = "stream key, not the hop key....";
    struct rd_end e = { .total_bytes = 5, .frames = 1, .stream_hash = 77 };
    uint8_t pl[RD_END_LEN];
    rd_end_encode(&e, pl);
    static uint8_t fr[RD_CTRL_FRAME];
    size_t len = 0;
    int type = -1;
    CHECK_EQ_I(rd_send_tagged(b, RD_CONFIRM, pl, sizeof pl, stream_key, RD_TAG_UP, 0), RD_OK);
    CHECK_EQ_I(recv_one(a, &type, fr, &len), RD_OK);
    struct rd_frame f;
    CHECK_OR(rd_frame_parse(fr, len, RD_CTRL_FRAME, &f) == RD_P_OK, goto out);
    CHECK_EQ_I(f.type, RD_CONFIRM);
    CHECK_EQ_U(f.seq, 0);
    CHECK_EQ_I(rd_check_tagged(a, fr, &f, stream_key, RD_TAG_UP, "receiver"), RD_OK);
    uint8_t other[RD_KEY_LEN];
    memcpy(other, stream_key, sizeof other);
    other[31] ^= 1;
    rd_error_clear();
    CHECK_EQ_I(rd_check_tagged(a, fr, &f, other, RD_TAG_UP, "receiver"), RD_ESTREAM);
    CHECK_HAS(rd_error_msg(), "receiver mem:b sent a CONFIRM that fails its authentication tag");
    rd_error_clear();
    CHECK_EQ_I(rd_check_tagged(a, fr, &f, stream_key, RD_TAG_DOWN, "receiver"), RD_ESTREAM);
    rd_error_clear();
    /* passed on verbatim: the very same bytes arrive */
    static uint8_t again[RD_CTRL_FRAME];
    size_t len2 = 0;
    CHECK_EQ_I(rd_send_raw(a, fr, len), RD_OK);
    CHECK_EQ_I(recv_one(b, &type, again, &len2), RD_OK);
    CHECK_EQ_U(len2, len);
    CHECK_MEM_EQ(again, fr, len);
    static uint8_t big[RD_CTRL_FRAME + 1];
    CHECK_EQ_I(rd_send_raw(a, big, sizeof big), RD_ESTREAM);
out:
    a->ops->close(a);
    b->ops->close(b);
    rd_error_clear();
}

static void t_unknown_type(void)
{
    struct rd_frame f;
    static const uint8_t types[] = { 0, 12, RD_FRAME_TYPE_MAX + 1, 0x40, 0x80, 0xff };
    size_t n = data_frame(10, 0);
    for (size_t i = 0; i < sizeof types; i++) {
        buf[5] = types[i];
        CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_TYPE);
    }
    /* 10 is no longer unknown: it is JOIN (--streams) */
    buf[5] = 10;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(f.type, RD_JOIN);
    buf[5] = 11;   /* and 11 is RAILS */
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(f.type, RD_RAILS);
}

static void t_unknown_flags(void)
{
    struct rd_frame f;
    for (int bit = 0; bit < 16; bit++) {
        uint16_t flag = (uint16_t)(1u << bit);
        if (flag & RD_FLAGS_KNOWN)
            continue;
        data_frame(10, 0);
        size_t n = rd_frame_seal(buf, RD_DATA, flag, 10, 0);
        CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_FLAGS);
    }
    size_t n = rd_frame_seal(buf, RD_DATA, 0xffff, 10, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_FLAGS);
    /* the codec flags: only on DATA, a cipher only with ENCRYPTED */
    n = rd_frame_seal(buf, RD_DATA, RD_FLAG_ENCRYPTED, 10, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    n = rd_frame_seal(buf, RD_DATA, RD_FLAG_AES_GCM, 10, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_FLAGS);
    n = rd_frame_seal(buf, RD_END, RD_FLAG_ENCRYPTED, 10, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_FLAGS);
    n = rd_frame_seal(buf, RD_CONFIRM, RD_FLAG_COMPRESSED, 10, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_FLAGS);
}

/* A compressed DATA frame names its raw length in bytes 40..43, bounded like a payload before
 * anything is allocated for it; without the flag those bytes stay zero. */
static void t_compressed_raw_length(void)
{
    struct rd_frame f;
    size_t n = rd_frame_seal(buf, RD_DATA, 0, 10, 0);
    rd_frame_set_compressed(buf, 10, 4096);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_U(f.raw_length, 4096);
    CHECK_EQ_U(f.length, 10);
    CHECK(f.flags & RD_FLAG_COMPRESSED);
    rd_frame_set_compressed(buf, 10, MAXP + 1);   /* a bomb: claims more than a chunk */
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_LENGTH);
    rd_frame_set_compressed(buf, 10, 0xffffffffu);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_LENGTH);
    rd_frame_set_compressed(buf, 10, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_LENGTH);
    n = rd_frame_seal(buf, RD_DATA, RD_FLAG_COMPRESSED, 0, 0);   /* nothing that decompresses */
    rd_frame_set_compressed(buf, 0, 100);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_LENGTH);
    n = rd_frame_seal(buf, RD_DATA, 0, 10, 0);
    buf[RD_HDR_RAW] = 1;   /* a raw length without the flag */
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_FLAGS);
    n = rd_frame_seal(buf, RD_DATA, 0, 10, 0);
    rd_frame_set_compressed(buf, 10, 100);
    buf[RD_HDR_RAW + 5] = 1;   /* the last reserved bytes */
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_FLAGS);
    n = rd_frame_seal(buf, RD_DATA, 0, 10, 0);
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_U(f.raw_length, 10);
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
    rd_frame_seal(buf, RD_DATA, 0, 0xffffffffu, 0);
    CHECK_EQ_I(rd_frame_parse(buf, RD_FRAME_HDR, MAXP, &f), RD_P_LENGTH);
    CHECK_EQ_I(rd_frame_parse(buf, sizeof buf, MAXP, &f), RD_P_LENGTH);
    rd_frame_seal(buf, RD_DATA, 0, 0x80000000u, 0);
    CHECK_EQ_I(rd_frame_parse(buf, RD_FRAME_HDR, RD_MAX_CHUNK, &f), RD_P_LENGTH);
}

static void t_bad_tag_payload_bit(void)
{
    struct rd_frame f;
    size_t n = data_frame(300, 5);
    tag_frame(buf, RD_TAG_DOWN);
    for (uint32_t i = 0; i < 300; i += 37) {
        for (int bit = 0; bit < 8; bit += 3) {
            buf[RD_FRAME_HDR + i] ^= (uint8_t)(1u << bit);
            CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);   /* header is still fine */
            CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_TAG);
            buf[RD_FRAME_HDR + i] ^= (uint8_t)(1u << bit);
        }
    }
    buf[n - 1] ^= 0x80;   /* the last byte too */
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_TAG);
    buf[n - 1] ^= 0x80;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_OK);
}

/* A damaged tag, or a header field that still parses (seq, type) changed under the tag: the
 * check refuses. So does the right frame under another key or in the other direction. */
static void t_bad_tag_header_bit(void)
{
    struct rd_frame f;
    size_t n = data_frame(300, 5);
    tag_frame(buf, RD_TAG_DOWN);
    for (unsigned byte = RD_HDR_TAG; byte < RD_HDR_TAG + RD_TAG_LEN; byte++) {
        buf[byte] ^= 0x10;
        CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
        CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_TAG);
        buf[byte] ^= 0x10;
    }
    for (unsigned byte = RD_HDR_SEQ; byte < RD_HDR_TAG; byte++) {   /* a replayed frame in another place */
        buf[byte] ^= 0x01;
        CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
        CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_TAG);
        buf[byte] ^= 0x01;
    }
    buf[5] = RD_END;   /* the same bytes passed off as another type */
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_TAG);
    buf[5] = RD_DATA;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_OK);
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_UP), RD_P_TAG);         /* reflected */
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_HOP_DOWN), RD_P_TAG);   /* another class of frame */
    uint8_t other[RD_KEY_LEN];
    memcpy(other, test_key, sizeof other);
    other[0] ^= 1;
    struct rd_tagger *t = rd_tagger_new(other);
    CHECK_OR(t != NULL, return);
    CHECK_EQ_I(rd_frame_check(t, RD_TAG_DOWN, buf, &f), RD_P_TAG);   /* another stream's key */
    rd_tagger_free(t);
    /* an empty payload has a tag too */
    n = data_frame(0, 0);
    tag_frame(buf, RD_TAG_DOWN);
    buf[RD_HDR_TAG] ^= 1;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_TAG);
    buf[RD_HDR_TAG] ^= 1;
    CHECK_EQ_I(rd_frame_parse(buf, n, MAXP, &f), RD_P_OK);   /* f.tag is a copy: parse again */
    CHECK_EQ_I(check_tag(buf, &f, RD_TAG_DOWN), RD_P_OK);
}

/* rd_frame_check takes the header and the payload from where they are: the payload need not
 * follow the header (a receiver with the header in one buffer and the payload in another). */
static void t_check_payload_elsewhere(void)
{
    static uint8_t payload[777], hdr[RD_FRAME_HDR];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 5);
    rd_frame_seal(hdr, RD_DATA, 0, sizeof payload, 12);
    struct rd_tagger *t = rd_tagger_new(test_key);
    CHECK_OR(t != NULL, return);
    CHECK_EQ_I(rd_frame_tag(t, RD_TAG_DOWN, hdr, payload), 0);
    struct rd_frame f;
    CHECK_EQ_I(rd_frame_parse_head(hdr, MAXP, &f), RD_P_OK);
    f.payload = payload;
    CHECK_EQ_I(rd_frame_check(t, RD_TAG_DOWN, hdr, &f), RD_P_OK);
    payload[776] ^= 2;
    CHECK_EQ_I(rd_frame_check(t, RD_TAG_DOWN, hdr, &f), RD_P_TAG);
    rd_tagger_free(t);
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
    CHECK_MEM_EQ(f.tag, zero_tag, RD_TAG_LEN);   /* handshake frames carry no tag: the MACs cover them */
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
    fill(c.share, sizeof c.share, 200);
    memset(buf, 0xee, sizeof buf);
    size_t n = rd_challenge_encode(&c, buf + RD_FRAME_HDR);
    CHECK_EQ_U(n, RD_CHALLENGE_LEN);
    CHECK_EQ_U(RD_CHALLENGE_LEN, 80);
    CHECK_EQ_U(RD_CHALLENGE_PARAMS, 48);
    CHECK_EQ_U(RD_SHARE_LEN, 32);
    /* caps, chunk_size, depth, streams (LE), nonce, the CPace share (no MAC: it proves nothing) */
    static const uint8_t want[16] = { 3, 0, 0, 0, 0, 0, 0x40, 0, 8, 0, 0, 0, 0xc0, 0xb0, 0xa0, 0x90 };
    CHECK_MEM_EQ(buf + RD_FRAME_HDR, want, sizeof want);
    CHECK_MEM_EQ(buf + RD_FRAME_HDR + 16, c.nonce, RD_NONCE_LEN);
    CHECK_MEM_EQ(buf + RD_FRAME_HDR + RD_CHALLENGE_PARAMS, c.share, RD_SHARE_LEN);
    CHECK_EQ_U(buf[RD_FRAME_HDR + RD_CHALLENGE_LEN], 0xee);
    size_t len = rd_frame_seal(buf, RD_CHALLENGE, 0, (uint32_t)n, 0);
    struct rd_frame f;
    CHECK_EQ_I(rd_frame_parse(buf, len, RD_CTRL_FRAME, &f), RD_P_OK);
    CHECK_MEM_EQ(f.tag, zero_tag, RD_TAG_LEN);
    memset(&d, 0, sizeof d);
    CHECK_EQ_I(rd_challenge_decode(f.payload, f.length, &d), RD_P_OK);
    CHECK_EQ_U(d.caps, 3);
    CHECK_EQ_U(d.chunk_size, 4u << 20);
    CHECK_EQ_U(d.depth, 8);
    CHECK_EQ_U(d.streams, 0x90a0b0c0u);
    CHECK_MEM_EQ(d.nonce, c.nonce, RD_NONCE_LEN);
    CHECK_MEM_EQ(d.share, c.share, RD_SHARE_LEN);
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
        CHECK_MEM_EQ(f.tag, zero_tag, RD_TAG_LEN);
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
static void t_rails_round_trip(void)
{
    struct rd_rails r = { .count = 3 }, d;
    r.a[0].family = 4;
    r.a[0].port = 7;
    memcpy(r.a[0].addr, (uint8_t[]){ 10, 0, 1, 1 }, 4);
    r.a[1].family = 6;
    r.a[1].port = 7;   /* two addresses of one port */
    memset(r.a[1].addr, 0xfe, 16);
    r.a[2].family = 4;
    memcpy(r.a[2].addr, (uint8_t[]){ 192, 168, 7, 9 }, 4);
    uint8_t out[RD_RAILS_MAX_LEN];
    size_t n = rd_rails_encode(&r, out);
    CHECK_EQ_U(n, 1 + 3 * RD_RAIL_ENTRY_LEN);
    static const uint8_t want[] = { 3, 4, 7, 10, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 7, 0xfe };
    CHECK(memcmp(out, want, sizeof want) == 0);
    CHECK_EQ_I(rd_rails_decode(out, n, &d), RD_P_OK);
    CHECK(memcmp(&r, &d, sizeof r) == 0);
    struct rd_rails full = { .count = RD_MAX_RAILS };
    for (unsigned i = 0; i < RD_MAX_RAILS; i++)
        full.a[i] = (struct rd_rail_addr){ .family = 4, .port = (uint8_t)(255 - i), .addr = { 10, 0, (uint8_t)i, 1 } };
    n = rd_rails_encode(&full, out);
    CHECK_EQ_U(n, RD_RAILS_MAX_LEN);
    CHECK_EQ_I(rd_rails_decode(out, n, &d), RD_P_OK);
    CHECK(memcmp(&full, &d, sizeof full) == 0);
}

/* a count of 0 or past RD_MAX_RAILS, a length that is not the count's, a family other than
 * 4 or 6, and an IPv4 entry with bytes after its address are all refused */
static void t_rails_malformed(void)
{
    uint8_t p[RD_CTRL_FRAME] = { 0 };
    struct rd_rails d;
    p[0] = 0;
    CHECK_EQ_I(rd_rails_decode(p, 1, &d), RD_P_LENGTH);
    p[0] = RD_MAX_RAILS + 1;
    for (unsigned i = 0; i <= RD_MAX_RAILS; i++)
        p[1 + i * RD_RAIL_ENTRY_LEN] = 4;
    CHECK_EQ_I(rd_rails_decode(p, 1 + (RD_MAX_RAILS + 1) * RD_RAIL_ENTRY_LEN, &d), RD_P_LENGTH);
    p[0] = 1;
    CHECK_EQ_I(rd_rails_decode(p, 0, &d), RD_P_LENGTH);
    CHECK_EQ_I(rd_rails_decode(p, RD_RAIL_ENTRY_LEN, &d), RD_P_LENGTH);
    CHECK_EQ_I(rd_rails_decode(p, RD_RAIL_ENTRY_LEN + 2, &d), RD_P_LENGTH);
    CHECK_EQ_I(rd_rails_decode(p, RD_RAIL_ENTRY_LEN + 1, &d), RD_P_OK);
    p[1] = 5;
    CHECK_EQ_I(rd_rails_decode(p, RD_RAIL_ENTRY_LEN + 1, &d), RD_P_LENGTH);
    p[1] = 4;
    p[2] = 0xff;        /* any port number */
    CHECK_EQ_I(rd_rails_decode(p, RD_RAIL_ENTRY_LEN + 1, &d), RD_P_OK);
    CHECK_EQ_U(d.a[0].port, 0xff);
    p[1 + 2 + 4] = 1;   /* past an IPv4 address */
    CHECK_EQ_I(rd_rails_decode(p, RD_RAIL_ENTRY_LEN + 1, &d), RD_P_LENGTH);
    p[1] = 6;           /* the same bytes are an IPv6 address */
    CHECK_EQ_I(rd_rails_decode(p, RD_RAIL_ENTRY_LEN + 1, &d), RD_P_OK);
}

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
    /* a MAC byte damaged in transit: JOIN is a handshake frame without a tag, its own MAC
     * catches it */
    static const uint8_t jk[32] = { 7 };
    rd_auth_join_mac(jk, 1, j.mac);
    rd_join_encode(&j, buf + RD_FRAME_HDR);
    buf[RD_FRAME_HDR + 5] ^= 1;
    CHECK_EQ_I(rd_frame_parse(buf, len, RD_CTRL_FRAME, &f), RD_P_OK);
    CHECK_EQ_I(rd_join_decode(f.payload, f.length, &d), RD_P_OK);
    CHECK_EQ_I(rd_auth_join_check(jk, d.index, d.mac), 0);
    buf[RD_FRAME_HDR + 5] ^= 1;
    CHECK_EQ_I(rd_join_decode(f.payload, f.length, &d), RD_P_OK);
    CHECK_EQ_I(rd_auth_join_check(jk, d.index, d.mac), 1);
}

/* AUTH carries the sender's share and its MAC (64 bytes); ACCEPT the receiver's MAC alone. */
static void t_proof_round_trip(void)
{
    CHECK_EQ_U(RD_AUTH_LEN, 64);
    CHECK_EQ_U(RD_ACCEPT_LEN, 32);
    struct rd_proof a, d;
    fill(a.share, sizeof a.share, 3);
    fill(a.mac, sizeof a.mac, 150);
    memset(buf, 0xee, sizeof buf);
    size_t n = rd_proof_encode(&a, buf + RD_FRAME_HDR);
    CHECK_EQ_U(n, RD_AUTH_LEN);
    CHECK_MEM_EQ(buf + RD_FRAME_HDR, a.share, RD_SHARE_LEN);   /* the share, then the MAC */
    CHECK_MEM_EQ(buf + RD_FRAME_HDR + RD_SHARE_LEN, a.mac, RD_MAC_LEN);
    CHECK_EQ_U(buf[RD_FRAME_HDR + RD_AUTH_LEN], 0xee);
    size_t len = rd_frame_seal(buf, RD_AUTH, 0, (uint32_t)n, 0);
    struct rd_frame f;
    CHECK_EQ_I(rd_frame_parse(buf, len, RD_CTRL_FRAME, &f), RD_P_OK);
    CHECK_EQ_I(f.type, RD_AUTH);
    CHECK_MEM_EQ(f.tag, zero_tag, RD_TAG_LEN);
    memset(&d, 0x55, sizeof d);
    CHECK_EQ_I(rd_proof_decode(f.payload, f.length, &d), RD_P_OK);
    CHECK_MEM_EQ(d.share, a.share, RD_SHARE_LEN);
    CHECK_MEM_EQ(d.mac, a.mac, RD_MAC_LEN);
    /* any other length is refused and nothing is decoded: the v1 AUTH (a MAC alone) included */
    static const size_t bad[] = { 0, 1, RD_MAC_LEN, RD_SHARE_LEN + 1, RD_AUTH_LEN - 1, RD_AUTH_LEN + 1,
                                  RD_CHALLENGE_LEN, RD_JOIN_LEN, 4096 };
    uint8_t p[4096];
    memset(p, 0x5c, sizeof p);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&d, 0x11, sizeof d);
        int rc = rd_proof_decode(p, bad[i], &d);
        if (rc != RD_P_LENGTH)
            check_fail_at(__FILE__, __LINE__, "rd_proof_decode of %zu bytes = %d, expected RD_P_LENGTH", bad[i], rc);
        if (d.share[0] != 0x11 || d.mac[31] != 0x11)
            check_fail_at(__FILE__, __LINE__, "rd_proof_decode of %zu bytes wrote its output", bad[i]);
    }
    CHECK_EQ_I(rd_proof_decode(p, RD_AUTH_LEN, &d), RD_P_OK);
    CHECK_EQ_U(d.share[0], 0x5c);
    CHECK_EQ_U(d.mac[31], 0x5c);
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
        /* END goes down with seq = frames, CONFIRM comes back up with seq 0 */
        enum rd_tag_dir dir = type == RD_END ? RD_TAG_DOWN : RD_TAG_UP;
        size_t len = rd_frame_seal(buf, (uint8_t)type, 0, (uint32_t)n, type == RD_END ? e.frames : 0);
        tag_frame(buf, dir);
        struct rd_frame f;
        CHECK_EQ_I(rd_frame_parse(buf, len, RD_CTRL_FRAME, &f), RD_P_OK);
        CHECK_EQ_I(check_tag(buf, &f, dir), RD_P_OK);
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
        size_t len = rd_frame_seal(buf, types[i], 0, (uint32_t)n, 0x1234567890abcdefull);
        tag_frame(buf, RD_TAG_HOP_UP);
        struct rd_frame f;
        CHECK_EQ_I(rd_frame_parse(buf, len, RD_CTRL_FRAME, &f), RD_P_OK);
        CHECK_EQ_I(f.type, types[i]);
        CHECK_EQ_I(check_tag(buf, &f, RD_TAG_HOP_UP), RD_P_OK);
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
    struct rd_proof a;
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
    static const size_t proof_bad[] = { 0, RD_MAC_LEN, RD_AUTH_LEN - 1, RD_AUTH_LEN + 1, RD_CHALLENGE_LEN };
    for (size_t i = 0; i < sizeof proof_bad / sizeof proof_bad[0]; i++)
        CHECK_EQ_I(rd_proof_decode(buf, proof_bad[i], &a), RD_P_LENGTH);
    CHECK_EQ_I(rd_proof_decode(buf, RD_AUTH_LEN, &a), RD_P_OK);
    CHECK_EQ_I(rd_hello_decode(buf, RD_HELLO_LEN, &h), RD_P_OK);
    CHECK_EQ_I(rd_challenge_decode(buf, RD_CHALLENGE_LEN, &c), RD_P_OK);
    CHECK_EQ_I(rd_end_decode(buf, RD_END_LEN, &e), RD_P_OK);
}

/* ---- whole-stream hash ---- */

static uint64_t hash_of(const uint8_t (*tags)[RD_TAG_LEN], int n)
{
    struct rd_stream_hash h;
    rd_stream_hash_init(&h);
    for (int i = 0; i < n; i++)
        rd_stream_hash_add(&h, tags[i]);
    return h.state;
}

static void t_stream_hash(void)
{
    uint8_t tags[3][RD_TAG_LEN];
    for (int i = 0; i < 3; i++)
        fill(tags[i], RD_TAG_LEN, (uint8_t)(0x11 * (i + 1)));
    uint64_t base = hash_of(tags, 3);
    CHECK_EQ_U(hash_of(tags, 3), base);   /* deterministic */
    struct rd_stream_hash empty;
    rd_stream_hash_init(&empty);
    CHECK_NE_U(base, empty.state);
    CHECK_NE_U(hash_of(tags, 2), base);   /* a missing last chunk shows */
    /* the construction: XXH3-64 of each tag, seeded with the state so far, from 0 */
    uint64_t want = 0;
    for (int i = 0; i < 3; i++)
        want = XXH3_64bits_withSeed(tags[i], RD_TAG_LEN, want);
    CHECK_EQ_U(base, want);
    CHECK_EQ_U(empty.state, 0);

    /* same chunks, other order */
    uint8_t swapped[3][RD_TAG_LEN];
    memcpy(swapped[0], tags[1], RD_TAG_LEN);
    memcpy(swapped[1], tags[0], RD_TAG_LEN);
    memcpy(swapped[2], tags[2], RD_TAG_LEN);
    CHECK_NE_U(hash_of(swapped, 3), base);
    /* every byte of every tag counts */
    for (int i = 0; i < 3; i++)
        for (unsigned k = 0; k < RD_TAG_LEN; k++) {
            tags[i][k] ^= (uint8_t)(1u << (k % 8));
            if (hash_of(tags, 3) == base)
                check_fail_at(__FILE__, __LINE__, "tag %d byte %u does not change the stream hash", i, k);
            tags[i][k] ^= (uint8_t)(1u << (k % 8));
        }
    /* two identical chunks in a row are not the same as one */
    uint8_t two[2][RD_TAG_LEN];
    memcpy(two[0], tags[0], RD_TAG_LEN);
    memcpy(two[1], tags[0], RD_TAG_LEN);
    CHECK_NE_U(hash_of(two, 2), hash_of(two, 1));
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
    RUN(t_seal_leaves_tag_zero);
    RUN(t_parse_every_type);
    RUN(t_parse_empty_and_max_payload);
    RUN(t_frame_names);
    RUN(t_short_header);
    RUN(t_truncated_payload);
    RUN(t_payload_longer_than_declared);
    RUN(t_bad_magic);
    RUN(t_bad_version);
    RUN(t_bad_version_is_named);
    RUN(t_v1_frame_is_another_version);
    RUN(t_reserved_bytes_refused);
    RUN(t_hop_tagged_goodbyes);
    RUN(t_stream_tagged_ctrl);
    RUN(t_unknown_type);
    RUN(t_unknown_flags);
    RUN(t_compressed_raw_length);
    RUN(t_oversized_length);
    RUN(t_bad_tag_payload_bit);
    RUN(t_bad_tag_header_bit);
    RUN(t_check_payload_elsewhere);
    RUN(t_hello_round_trip);
    RUN(t_challenge_round_trip);
    RUN(t_join_round_trip);
    RUN(t_join_malformed);
    RUN(t_rails_round_trip);
    RUN(t_rails_malformed);
    RUN(t_proof_round_trip);
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
