/* fuzz_proto.c - the frame header and every payload decoder of rd_proto.c fed arbitrary bytes.
 *
 * The input is tried as a whole frame (header + payload) and as a bare payload of each
 * message type. Whatever decodes must survive a round trip: encoding the decoded value
 * gives back the same bytes (the reason text excepted, which decoding makes printable),
 * and decoding those again gives the same value. The piecewise checksum must equal the
 * one-shot one for any split of the input.
 */
#include "wire/rd_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_check.h"

static void frame_round_trip(const uint8_t *data, size_t size, size_t max_payload)
{
    struct rd_frame f;
    int rc = rd_frame_parse(data, size, max_payload, &f);
    CHECK(rc <= RD_P_OK && rc >= RD_P_SEQUENCE);
    CHECK(rd_proto_strerror(rc) != NULL);
    if (size >= RD_FRAME_HDR) {
        /* the header-only check agrees with the full one on everything it can see */
        struct rd_frame h;
        int hrc = rd_frame_parse_head(data, max_payload, &h);
        if (hrc != RD_P_OK)
            CHECK(rc == hrc);
        else
            CHECK(rc == RD_P_OK || rc == RD_P_SHORT || rc == RD_P_LENGTH);
    } else {
        CHECK(rc == RD_P_SHORT);
    }
    if (rc != RD_P_OK)
        return;
    CHECK(f.length <= max_payload && RD_FRAME_HDR + (size_t)f.length == size);
    CHECK(f.payload == data + RD_FRAME_HDR);
    CHECK(f.type >= RD_HELLO && f.type <= RD_JOIN);
    CHECK(strcmp(rd_frame_type_name(f.type), "?") != 0);
    int vrc = rd_frame_verify(&f);
    CHECK(vrc == RD_P_OK || vrc == RD_P_CHECKSUM);
    CHECK((vrc == RD_P_OK) == (rd_checksum(f.payload, f.length) == f.checksum));
    /* sealing the parsed fields again gives the very same header */
    uint8_t *buf = malloc(size);
    CHECK(buf != NULL);
    memcpy(buf + RD_FRAME_HDR, data + RD_FRAME_HDR, f.length);
    size_t n = rd_frame_seal_sum(buf, f.type, f.flags, f.length, f.seq, f.checksum);
    CHECK(n == size);
    CHECK(memcmp(buf, data, RD_FRAME_HDR) == 0);
    if (vrc == RD_P_OK) {
        rd_frame_seal(buf, f.type, f.flags, f.length, f.seq);
        CHECK(memcmp(buf, data, size) == 0);
    }
    free(buf);
}

static void payload_round_trips(const uint8_t *p, size_t n)
{
    uint8_t out[512];
    struct rd_hello h, h2;
    if (rd_hello_decode(p, n, &h) == RD_P_OK) {
        CHECK(n == RD_HELLO_LEN);
        CHECK(rd_hello_encode(&h, out) == n && memcmp(out, p, n) == 0);
        CHECK(rd_hello_decode(out, n, &h2) == RD_P_OK && memcmp(&h, &h2, sizeof h) == 0);
    } else {
        CHECK(n != RD_HELLO_LEN);
    }
    struct rd_challenge c, c2;
    if (rd_challenge_decode(p, n, &c) == RD_P_OK) {
        CHECK(n == RD_CHALLENGE_LEN);
        CHECK(rd_challenge_encode(&c, out) == n && memcmp(out, p, n) == 0);
        CHECK(rd_challenge_decode(out, n, &c2) == RD_P_OK && memcmp(&c, &c2, sizeof c) == 0);
    } else {
        CHECK(n != RD_CHALLENGE_LEN);
    }
    struct rd_join j, j2;
    memset(&j, 0, sizeof j);   /* padding: compared with memcmp below */
    memset(&j2, 0, sizeof j2);
    if (rd_join_decode(p, n, &j) == RD_P_OK) {
        CHECK(n == RD_JOIN_LEN);
        CHECK(rd_join_encode(&j, out) == n && memcmp(out, p, n) == 0);
        CHECK(rd_join_decode(out, n, &j2) == RD_P_OK && memcmp(&j, &j2, sizeof j) == 0);
    } else {
        CHECK(n != RD_JOIN_LEN);
    }
    struct rd_end e, e2;
    if (rd_end_decode(p, n, &e) == RD_P_OK) {
        CHECK(n == RD_END_LEN);
        CHECK(rd_end_encode(&e, out) == n && memcmp(out, p, n) == 0);
        CHECK(rd_end_decode(out, n, &e2) == RD_P_OK && memcmp(&e, &e2, sizeof e) == 0);
    } else {
        CHECK(n != RD_END_LEN);
    }
    struct rd_reason r, r2;
    if (rd_reason_decode(p, n, &r) == RD_P_OK) {
        CHECK(n >= 4 && n - 4 < sizeof r.text);
        size_t tl = strlen(r.text);
        CHECK(tl == n - 4);   /* every byte kept (made printable), none cut at a NUL */
        for (size_t i = 0; i < tl; i++)
            CHECK(r.text[i] >= 0x20 && r.text[i] < 0x7f);
        size_t m = rd_reason_encode(&r, out);
        CHECK(m == n && memcmp(out, p, 4) == 0);
        CHECK(rd_reason_decode(out, m, &r2) == RD_P_OK);
        CHECK(r2.code == r.code && strcmp(r2.text, r.text) == 0);
    } else {
        CHECK(n < 4 || n - 4 >= sizeof r.text);
    }
}

/* The checksum computed piece by piece (as the transports do while bytes arrive) equals the
 * one-shot checksum, however the input is cut. */
static void checksum_pieces(const uint8_t *data, size_t size)
{
    struct rd_sum *s = rd_sum_new();
    CHECK(s != NULL);
    rd_sum_reset(s);
    size_t off = 0, step = size ? (size_t)data[0] % 61 + 1 : 1;
    while (off < size) {
        size_t k = size - off < step ? size - off : step;
        rd_sum_update(s, data + off, k);
        off += k;
        step = step * 7 % 97 + 1;
    }
    CHECK(rd_sum_digest(s) == rd_checksum(data, size));
    rd_sum_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    frame_round_trip(data, size, RD_MAX_CHUNK);
    frame_round_trip(data, size, 64);          /* a receiver with small chunks */
    frame_round_trip(data, size, 0);
    struct rd_frame f;
    if (rd_frame_parse(data, size, RD_MAX_CHUNK, &f) == RD_P_OK)
        payload_round_trips(f.payload, f.length);
    payload_round_trips(data, size);
    checksum_pieces(data, size);
    /* names and messages for any value a peer can put there */
    for (size_t i = 0; i < size && i < 4; i++) {
        CHECK(rd_frame_type_name((int8_t)data[i]) != NULL);
        CHECK(rd_proto_strerror(-(int)data[i]) != NULL);
    }
    struct rd_stream_hash sh;
    rd_stream_hash_init(&sh);
    for (size_t i = 0; i + 20 <= size && i < 200; i += 20) {
        uint64_t seq, sum;
        uint32_t len;
        memcpy(&seq, data + i, 8);
        memcpy(&len, data + i + 8, 4);
        memcpy(&sum, data + i + 12, 8);
        rd_stream_hash_add(&sh, seq, len, sum);
    }
    return 0;
}
