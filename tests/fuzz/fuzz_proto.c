/* fuzz_proto.c - the frame header, the frame tag and every payload decoder of rd_proto.c fed
 * arbitrary bytes (protocol v2).
 *
 * The input is tried as a whole frame (header + payload) and as a bare payload of each
 * message type. Whatever decodes must survive a round trip: encoding the decoded value
 * gives back the same bytes (the reason text excepted, which decoding makes printable),
 * and decoding those again gives the same value. A frame that parses is checked against
 * its tag under a fixed key in every direction: accepted exactly when its tag field holds
 * the tag rd_tag_compute gives; tagging it ourselves makes it pass and changes nothing but
 * the tag field. The tag computed piece by piece must equal the one-shot one for any split.
 * The input is also the private data of an RDMA CM event, which a stranger writes before any
 * key: rd_v_hello_parse gives 0 or credits in [2, 4096], and rd_v_reject_reason a printable
 * ASCII reason within its buffer.
 */
#include "transport/rd_verbs.h"
#include "wire/rd_proto.h"
#include "wire/rd_tag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_check.h"

static struct rd_tagger *tagger;
static const uint8_t fuzz_key[RD_KEY_LEN] = "fuzz_proto: a fixed frame key..";

static void frame_round_trip(const uint8_t *data, size_t size, size_t max_payload)
{
    struct rd_frame f;
    int rc = rd_frame_parse(data, size, max_payload, &f);
    CHECK(rc <= RD_P_OK && rc >= RD_P_SEQUENCE && rc != RD_P_TAG && rc != RD_P_SEQUENCE);
    CHECK(rd_proto_strerror(rc) != NULL);
    /* what needs only magic and version is decided first, whatever the length: a version 1
     * peer's frames (32-byte header) are "another version", not "truncated" */
    if (size < 5)
        CHECK(rc == RD_P_SHORT);
    else if (memcmp(data, RD_MAGIC, 4) != 0)
        CHECK(rc == RD_P_MAGIC);
    else if (data[4] != RD_PROTO_VERSION)
        CHECK(rc == RD_P_VERSION);
    else if (size < RD_FRAME_HDR)
        CHECK(rc == RD_P_SHORT);
    if (size >= RD_FRAME_HDR) {
        /* the header-only check agrees with the full one on everything it can see */
        struct rd_frame h;
        int hrc = rd_frame_parse_head(data, max_payload, &h);
        if (hrc != RD_P_OK)
            CHECK(rc == hrc);
        else
            CHECK(rc == RD_P_OK || rc == RD_P_SHORT || rc == RD_P_LENGTH);
        if (hrc == RD_P_OK) {
            /* reserved bytes are zero in whatever it accepts; the raw length is set exactly
             * for a compressed DATA frame, and bounded like a payload */
            for (size_t i = 12; i < 16; i++)
                CHECK(data[i] == 0);
            for (size_t i = RD_HDR_RAW + 4; i < RD_FRAME_HDR; i++)
                CHECK(data[i] == 0);
            uint32_t raw = (uint32_t)data[40] | (uint32_t)data[41] << 8 | (uint32_t)data[42] << 16 |
                           (uint32_t)data[43] << 24;
            if (h.flags & RD_FLAG_COMPRESSED)
                CHECK(h.type == RD_DATA && raw > 0 && raw <= max_payload && h.raw_length == raw);
            else
                CHECK(raw == 0 && h.raw_length == h.length);
            CHECK(h.payload == NULL);
        }
    }
    if (rc != RD_P_OK)
        return;
    CHECK(f.length <= max_payload && RD_FRAME_HDR + (size_t)f.length == size);
    CHECK(f.payload == data + RD_FRAME_HDR);
    CHECK(f.type >= RD_HELLO && f.type <= RD_FRAME_TYPE_MAX);
    CHECK(strcmp(rd_frame_type_name(f.type), "?") != 0);
    CHECK(memcmp(f.tag, data + RD_HDR_TAG, RD_TAG_LEN) == 0);
    /* the tag check: accepted iff the tag field is the tag of the rest, per direction */
    static const enum rd_tag_dir dirs[4] = { RD_TAG_DOWN, RD_TAG_UP, RD_TAG_HOP_DOWN, RD_TAG_HOP_UP };
    int passed = 0;
    for (int d = 0; d < 4; d++) {
        uint8_t want[RD_TAG_LEN];
        CHECK(rd_tag_compute(tagger, dirs[d], data, f.payload, f.length, want) == 0);
        int vrc = rd_frame_check(tagger, dirs[d], data, &f);
        CHECK(vrc == RD_P_OK || vrc == RD_P_TAG);
        CHECK((vrc == RD_P_OK) == (memcmp(want, f.tag, RD_TAG_LEN) == 0));
        passed += vrc == RD_P_OK;
    }
    CHECK(passed <= 1);   /* a tag is valid in one direction at most (for any sane key) */
    /* sealing the parsed fields again gives the very same header, the tag field zero */
    uint8_t *buf = malloc(size);
    CHECK(buf != NULL);
    memcpy(buf + RD_FRAME_HDR, data + RD_FRAME_HDR, f.length);
    size_t n = rd_frame_seal(buf, f.type, f.flags, f.length, f.seq);
    CHECK(n == size);
    if (f.flags & RD_FLAG_COMPRESSED)
        rd_frame_set_compressed(buf, f.length, f.raw_length);
    CHECK(memcmp(buf, data, RD_HDR_TAG) == 0);
    static const uint8_t zero[RD_FRAME_HDR];
    CHECK(memcmp(buf + RD_HDR_TAG, zero, RD_TAG_LEN) == 0);
    CHECK(memcmp(buf + RD_HDR_RAW, data + RD_HDR_RAW, RD_FRAME_HDR - RD_HDR_RAW) == 0);
    /* tagging it makes it pass, and changes the tag field only */
    enum rd_tag_dir dir = dirs[f.type % 4];
    CHECK(rd_frame_tag(tagger, dir, buf, buf + RD_FRAME_HDR) == 0);
    CHECK(memcmp(buf, data, RD_HDR_TAG) == 0 && memcmp(buf + RD_HDR_TAG + RD_TAG_LEN, data + RD_HDR_TAG + RD_TAG_LEN,
                                                          size - RD_HDR_TAG - RD_TAG_LEN) == 0);
    struct rd_frame g;
    CHECK(rd_frame_parse(buf, size, max_payload, &g) == RD_P_OK);
    CHECK(rd_frame_check(tagger, dir, buf, &g) == RD_P_OK);
    if (memcmp(g.tag, f.tag, RD_TAG_LEN) == 0)
        CHECK(rd_frame_check(tagger, dir, data, &f) == RD_P_OK);
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
        CHECK(memcmp(c.share, p + RD_CHALLENGE_PARAMS, RD_SHARE_LEN) == 0);
    } else {
        CHECK(n != RD_CHALLENGE_LEN);
    }
    struct rd_proof a, a2;
    memset(&a, 0x5c, sizeof a);
    if (rd_proof_decode(p, n, &a) == RD_P_OK) {
        CHECK(n == RD_AUTH_LEN);
        CHECK(rd_proof_encode(&a, out) == n && memcmp(out, p, n) == 0);
        CHECK(rd_proof_decode(out, n, &a2) == RD_P_OK && memcmp(&a, &a2, sizeof a) == 0);
    } else {
        CHECK(n != RD_AUTH_LEN);
        for (size_t i = 0; i < sizeof a.share; i++)   /* nothing decoded from a wrong length */
            CHECK(a.share[i] == 0x5c && a.mac[i] == 0x5c);
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
    struct rd_rails rl, rl2;
    memset(&rl2, 0, sizeof rl2);
    if (rd_rails_decode(p, n, &rl) == RD_P_OK) {
        CHECK(rl.count >= 1 && rl.count <= RD_MAX_RAILS && n == 1 + (size_t)rl.count * RD_RAIL_ENTRY_LEN);
        for (unsigned i = 0; i < rl.count; i++)
            CHECK(rl.a[i].family == 4 || rl.a[i].family == 6);
        CHECK(rd_rails_encode(&rl, out) == n && memcmp(out, p, n) == 0);
        CHECK(rd_rails_decode(out, n, &rl2) == RD_P_OK && memcmp(&rl, &rl2, sizeof rl) == 0);
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

/* The tag computed piece by piece (as a receiver may while bytes arrive) equals the one-shot
 * tag, however the input is cut; the header is a sealed one whose seq and type come from
 * the input. */
static void tag_pieces(const uint8_t *data, size_t size)
{
    uint8_t hdr[RD_FRAME_HDR], one[RD_TAG_LEN], pieces[RD_TAG_LEN];
    uint64_t seq = 0;
    memcpy(&seq, data, size < 8 ? size : 8);
    rd_frame_seal(hdr, size ? data[0] : RD_DATA, 0, (uint32_t)size, seq);
    enum rd_tag_dir dir = (enum rd_tag_dir)(1 + (size ? data[size - 1] : 0) % 4);
    CHECK(rd_tag_compute(tagger, dir, hdr, data, size, one) == 0);
    CHECK(rd_tag_begin(tagger, dir, hdr) == 0);
    size_t off = 0, step = size ? (size_t)data[0] % 61 : 1;   /* 0: an empty piece first */
    while (off < size) {
        size_t k = size - off < step ? size - off : step;
        CHECK(rd_tag_update(tagger, data + off, k) == 0);
        off += k;
        step = step * 7 % 97 + 1;
    }
    CHECK(rd_tag_finish(tagger, pieces) == 0);
    CHECK(memcmp(one, pieces, RD_TAG_LEN) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!tagger && !(tagger = rd_tagger_new(fuzz_key)))
        abort();
    frame_round_trip(data, size, RD_MAX_CHUNK);
    frame_round_trip(data, size, 64);          /* a receiver with small chunks */
    frame_round_trip(data, size, 0);
    struct rd_frame f;
    if (rd_frame_parse(data, size, RD_MAX_CHUNK, &f) == RD_P_OK)
        payload_round_trips(f.payload, f.length);
    payload_round_trips(data, size);
    tag_pieces(data, size);
    /* names and messages for any value a peer can put there */
    for (size_t i = 0; i < size && i < 4; i++) {
        CHECK(rd_frame_type_name((int8_t)data[i]) != NULL);
        CHECK(rd_proto_strerror(-(int)data[i]) != NULL);
    }
    /* an RDMA CM peer's private data: a connection's hello, a REJECT's reason */
    unsigned credits = rd_v_hello_parse(data, size);
    CHECK(credits == 0 || (credits >= 2 && credits <= 4096));
    char reason[200];
    size_t rn = rd_v_reject_reason(data, size, reason, size % sizeof reason);
    CHECK(size % sizeof reason == 0 || (rn < size % sizeof reason && strlen(reason) == rn));
    rn = rd_v_reject_reason(data, size, reason, sizeof reason);
    CHECK(rn < sizeof reason && strlen(reason) == rn);
    for (size_t i = 0; i < rn; i++)
        CHECK(reason[i] >= 0x20 && reason[i] < 0x7f);
    struct rd_stream_hash sh;
    rd_stream_hash_init(&sh);
    for (size_t i = 0; i + RD_TAG_LEN <= size && i < 256; i += RD_TAG_LEN)
        rd_stream_hash_add(&sh, data + i);
    return 0;
}
