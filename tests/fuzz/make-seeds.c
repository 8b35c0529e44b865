/* make-seeds.c - writes the seed corpora of the fuzz targets (make fuzz-seeds).
 *
 * usage: make-seeds DIR   -> DIR/proto/, DIR/handshake/, DIR/relay/, DIR/agent_line/,
 *                           DIR/initiator_line/,
 *                           DIR/codec/, DIR/bench_client/
 * Every seed is built with the library's own encoders and the scripts of fz_input.h, so the
 * seeds stay valid when the formats change: regenerate and commit. Files named regress-*
 * (minimized inputs of fixed bugs) are written here too, from a description of the input,
 * and other files in DIR are left alone.
 */
#include "fz_input.h"

#include "bench/rdb_msg.h"
#include "copy/rdc_note.h"
#include "copy/rdc_tree.h"
#include "remote/rdr_line.h"
#include "remote/rdr_said.h"
#include "wire/rd_compress.h"
#include "wire/rd_proto.h"
#include "wire/rd_tag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct buf {
    uint8_t b[1 << 16];
    size_t n;
};

static const char *root;
static int written;

static void put(struct buf *s, const void *p, size_t n)
{
    if (s->n + n > sizeof s->b) {
        fprintf(stderr, "make-seeds: seed too large\n");
        exit(1);
    }
    memcpy(s->b + s->n, p, n);
    s->n += n;
}

static void put8(struct buf *s, uint8_t v)
{
    put(s, &v, 1);
}

static void put16(struct buf *s, uint16_t v)
{
    put8(s, (uint8_t)v);
    put8(s, (uint8_t)(v >> 8));
}

static void put32(struct buf *s, uint32_t v)
{
    put16(s, (uint16_t)v);
    put16(s, (uint16_t)(v >> 16));
}

/* One script message (fz_input.h). */
static void msg(struct buf *s, uint8_t ctl, uint8_t type, const void *p, size_t n)
{
    put8(s, ctl);
    put8(s, type);
    put16(s, (uint16_t)n);
    put(s, p, n);
}

static void save(const char *target, const char *name, const void *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, target);
    if (mkdir(path, 0755) && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
        perror(path);
        exit(1);
    }
    written++;
}

static void save_buf(const char *target, const char *name, const struct buf *s)
{
    save(target, name, s->b, s->n);
}

/* ---- values ---- */

static struct rd_hello hello(void)
{
    struct rd_hello h = { .version_min = RD_PROTO_VERSION, .version_max = RD_PROTO_VERSION, .caps = 0,
                          .chunk_size = 1 << 20, .depth = 8, .streams = 1 };
    for (int i = 0; i < 32; i++)
        h.nonce[i] = (uint8_t)i;
    return h;
}

static struct rd_challenge challenge(uint32_t streams)
{
    struct rd_challenge c = { .caps = 0, .chunk_size = 1 << 16, .depth = 4, .streams = streams };
    for (int i = 0; i < 32; i++)
        c.nonce[i] = (uint8_t)(0x80 + i);
    return c;
}

static size_t reason(uint8_t *out, uint32_t code, const char *text)
{
    struct rd_reason r = { .code = code };
    snprintf(r.text, sizeof r.text, "%s", text);
    return rd_reason_encode(&r, out);
}

/* ---- proto: whole frames of every type, and bare payloads ---- */

/* fuzz_proto.c's key: frames tagged with it pass its tag check in one direction */
static const uint8_t proto_key[RD_KEY_LEN] = "fuzz_proto: a fixed frame key..";

/* A frame of type with payload p[0..n): untagged (dir 0, as handshake frames are) or tagged
 * under proto_key in direction dir. */
static void frame_seed_dir(const char *name, uint8_t type, const void *p, size_t n, uint64_t seq, int dir)
{
    static uint8_t f[RD_FRAME_HDR + 4096];
    memcpy(f + RD_FRAME_HDR, p, n);
    size_t len = rd_frame_seal(f, type, 0, (uint32_t)n, seq);
    if (dir) {
        struct rd_tagger *t = rd_tagger_new(proto_key);
        if (!t || rd_frame_tag(t, (enum rd_tag_dir)dir, f, f + RD_FRAME_HDR)) {
            fprintf(stderr, "make-seeds: cannot tag a frame\n");
            exit(1);
        }
        rd_tagger_free(t);
    }
    save("proto", name, f, len);
}

static void frame_seed(const char *name, uint8_t type, const void *p, size_t n, uint64_t seq)
{
    frame_seed_dir(name, type, p, n, seq, 0);
}

static void seeds_proto(void)
{
    uint8_t p[512];
    struct rd_hello h = hello();
    struct rd_challenge c = challenge(2);
    struct rd_join j = { .index = 1 };
    struct rd_end e = { .total_bytes = 12345, .frames = 3, .stream_hash = 0x0123456789abcdefull };
    size_t n;
    n = rd_hello_encode(&h, p);
    frame_seed("hello", RD_HELLO, p, n, 0);
    save("proto", "hello-payload", p, n);
    n = rd_challenge_encode(&c, p);
    frame_seed("challenge", RD_CHALLENGE, p, n, 0);
    save("proto", "challenge-payload", p, n);
    struct rd_proof a;
    memset(a.share, 0xa5, sizeof a.share);
    memset(a.mac, 0x5a, sizeof a.mac);
    n = rd_proof_encode(&a, p);
    frame_seed("auth", RD_AUTH, p, n, 0);
    save("proto", "auth-payload", p, n);
    frame_seed("accept", RD_ACCEPT, a.mac, RD_ACCEPT_LEN, 0);
    n = reason(p, 3, "authentication failed (wrong key)");
    frame_seed_dir("reject", RD_REJECT, p, n, 0x0123456789abcdefull, RD_TAG_HOP_UP);
    save("proto", "reason-payload", p, n);
    n = reason(p, 4, "stream corrupt\x01\x7f\xff");
    frame_seed_dir("abort", RD_ABORT, p, n, 0xfedcba9876543210ull, RD_TAG_HOP_DOWN);
    memcpy(p, "hello, world\n", 13);
    frame_seed_dir("data", RD_DATA, p, 13, 7, RD_TAG_DOWN);
    frame_seed("data-untagged", RD_DATA, p, 13, 7);
    n = rd_end_encode(&e, p);
    frame_seed_dir("end", RD_END, p, n, e.frames, RD_TAG_DOWN);
    frame_seed_dir("confirm", RD_CONFIRM, p, n, 0, RD_TAG_UP);
    save("proto", "end-payload", p, n);
    /* a version 1 frame (32-byte header: magic, version 1, type, flags, length, reserved, seq,
     * checksum) as a v1 peer sends it, and a v2 header with a reserved byte set */
    static uint8_t v1[32 + RD_HELLO_LEN];
    memcpy(v1, RD_MAGIC, 4);
    v1[4] = 1;
    v1[5] = RD_HELLO;
    v1[8] = RD_HELLO_LEN;
    rd_hello_encode(&h, v1 + 32);
    save("proto", "v1-hello", v1, sizeof v1);
    static uint8_t rsv[RD_FRAME_HDR];
    rd_frame_seal(rsv, RD_DATA, 0, 0, 0);
    rsv[RD_FRAME_HDR - 1] = 1;
    save("proto", "reserved-set", rsv, sizeof rsv);
    n = rd_join_encode(&j, p);
    frame_seed("join", RD_JOIN, p, n, 0);
    save("proto", "join-payload", p, n);
    struct rd_rails rails = { .count = 2, .a = { { 4, 0, { 10, 0, 0, 1 } }, { 6, 1, { 0xfd, 0, [15] = 1 } } } };
    n = rd_rails_encode(&rails, p);
    frame_seed("rails", RD_RAILS, p, n, 0);
    save("proto", "rails-payload", p, n);
}

/* ---- handshake scripts (fuzz_handshake.c) ---- */

static void hs_params_caps(struct buf *s, uint8_t mode, uint32_t chunk, uint16_t depth, uint8_t streams,
                           uint8_t caps, uint8_t fail, uint16_t taken)
{
    s->n = 0;
    put8(s, mode);
    put32(s, chunk - RD_MIN_CHUNK);   /* the target adds RD_MIN_CHUNK */
    put16(s, (uint16_t)(depth - 1));
    put8(s, (uint8_t)(streams - 1));
    put8(s, caps);                    /* bits 0-1: flags; 7: rails (fuzz_handshake.c) */
    put8(s, fail);
    put16(s, taken);
}

static void hs_params(struct buf *s, uint8_t mode, uint32_t chunk, uint16_t depth, uint8_t streams,
                      uint8_t fail, uint16_t taken)
{
    hs_params_caps(s, mode, chunk, depth, streams, 0, fail, taken);
}

static void seeds_handshake(void)
{
    struct buf s;
    uint8_t p[512], proof[RD_AUTH_LEN] = { 0 }, mac[RD_MAC_LEN] = { 0 };
    struct rd_hello h = hello();
    struct rd_challenge c = challenge(1);
    size_t hn = rd_hello_encode(&h, p);

    /* receiver: an honest sender (the target proves for it), one with the wrong key, one with
     * a made-up proof, a v1 sender's AUTH (a MAC alone), garbage, one whose link dies at ACCEPT */
    hs_params(&s, 0, 1 << 20, 8, 1, 0xff, 0);
    msg(&s, FZ_SEAL, RD_HELLO, p, hn);
    msg(&s, FZ_SEAL | FZ_FIXMAC, RD_AUTH, proof, sizeof proof);
    save_buf("handshake", "receiver-ok", &s);
    hs_params(&s, 0, 1 << 20, 8, 1, 0xff, 0);
    msg(&s, FZ_SEAL, RD_HELLO, p, hn);
    msg(&s, FZ_SEAL | FZ_FIXMAC | FZ_WRONGKEY, RD_AUTH, proof, sizeof proof);
    save_buf("handshake", "receiver-wrong-key", &s);
    hs_params(&s, 0, 1 << 20, 8, 1, 0xff, 0);
    msg(&s, FZ_SEAL, RD_HELLO, p, hn);
    msg(&s, FZ_SEAL, RD_AUTH, proof, sizeof proof);
    save_buf("handshake", "receiver-made-up-proof", &s);
    hs_params(&s, 0, 1 << 20, 8, 1, 0xff, 0);
    msg(&s, FZ_SEAL, RD_HELLO, p, hn);
    msg(&s, FZ_SEAL, RD_AUTH, mac, sizeof mac);
    save_buf("handshake", "receiver-v1-auth", &s);
    hs_params(&s, 0, 1 << 20, 8, 1, 0xff, 0);
    msg(&s, 0, 0, "GET / HTTP/1.0\r\n\r\n", 18);
    save_buf("handshake", "receiver-garbage", &s);
    hs_params(&s, 0, 1 << 20, 8, 1, 1, 0);   /* the link dies at ACCEPT */
    msg(&s, FZ_SEAL, RD_HELLO, p, hn);
    msg(&s, FZ_SEAL | FZ_FIXMAC, RD_AUTH, proof, sizeof proof);
    save_buf("handshake", "receiver-dies", &s);

    /* sender: an honest receiver (one stream, three), one with the wrong key, one whose share
     * is invalid (zero), one whose ACCEPT is made up, a rejecting one */
    for (uint32_t streams = 1; streams <= 3; streams += 2) {
        c = challenge(streams);
        size_t cn = rd_challenge_encode(&c, p);
        hs_params(&s, 1, 1 << 20, 8, 4, 0xff, 0);
        msg(&s, FZ_SEAL | FZ_FIXMAC, RD_CHALLENGE, p, cn);
        msg(&s, FZ_SEAL | FZ_FIXMAC, RD_ACCEPT, mac, sizeof mac);
        save_buf("handshake", streams == 1 ? "sender-ok" : "sender-ok-streams", &s);
    }
    c = challenge(1);
    size_t cn = rd_challenge_encode(&c, p);
    hs_params(&s, 1, 1 << 20, 8, 4, 0xff, 0);
    msg(&s, FZ_SEAL | FZ_FIXMAC | FZ_WRONGKEY, RD_CHALLENGE, p, cn);
    msg(&s, FZ_SEAL | FZ_FIXMAC, RD_ACCEPT, mac, sizeof mac);
    save_buf("handshake", "sender-wrong-key", &s);
    hs_params(&s, 1, 1 << 20, 8, 4, 0xff, 0);
    msg(&s, FZ_SEAL, RD_CHALLENGE, p, cn);   /* share all zero: the identity */
    msg(&s, FZ_SEAL, RD_ACCEPT, mac, sizeof mac);
    save_buf("handshake", "sender-zero-share", &s);
    hs_params(&s, 1, 1 << 20, 8, 4, 0xff, 0);
    msg(&s, FZ_SEAL | FZ_FIXMAC, RD_CHALLENGE, p, cn);
    msg(&s, FZ_SEAL, RD_ACCEPT, mac, sizeof mac);
    save_buf("handshake", "sender-made-up-accept", &s);
    size_t rn = reason(p, 3, "authentication failed (wrong key)");
    hs_params(&s, 1, 1 << 20, 8, 1, 0xff, 0);
    msg(&s, FZ_SEAL, RD_REJECT, p, rn);
    save_buf("handshake", "sender-rejected", &s);

    /* rails: a sender that offers them (caps bit 7) and a receiver that grants them, whose
     * RAILS is right, untagged, reflected, under the stream key, malformed; one that ABORTs
     * instead; a sender that did not offer them; a receiver asked for rails (caps bit 7: it
     * has three) by a sender that wants four streams */
    c = challenge(2);
    c.caps = RD_CAP_RAILS;
    cn = rd_challenge_encode(&c, p);
    struct rd_rails rl = { .count = 2 };
    rl.a[0].family = 4;
    memcpy(rl.a[0].addr, (const uint8_t[]){ 10, 0, 0, 2 }, 4);
    rl.a[1].family = 6;
    rl.a[1].port = 1;
    memcpy(rl.a[1].addr, (const uint8_t[]){ 0xfd, 0, [15] = 2 }, 16);
    uint8_t rp[RD_RAILS_MAX_LEN];
    size_t rpn = rd_rails_encode(&rl, rp);
    static const struct { const char *name; uint8_t ctl, type; int bad; } rails[] = {
        { "sender-rails-ok", FZ_SEAL | FZ_FIXMAC, RD_RAILS, 0 },
        { "sender-rails-untagged", FZ_SEAL, RD_RAILS, 0 },
        { "sender-rails-reflected", FZ_SEAL | FZ_FIXMAC | FZ_SEQ, RD_RAILS, 0 },
        { "sender-rails-wrong-key", FZ_SEAL | FZ_FIXMAC | FZ_WRONGKEY, RD_RAILS, 0 },
        { "sender-rails-malformed", FZ_SEAL | FZ_FIXMAC, RD_RAILS, 1 },
        { "sender-rails-abort", FZ_SEAL | FZ_FIXMAC, RD_ABORT, 0 },
    };
    for (size_t i = 0; i < sizeof rails / sizeof rails[0]; i++) {
        uint8_t q[RD_RAILS_MAX_LEN];
        size_t qn = rpn;
        memcpy(q, rp, rpn);
        if (rails[i].bad)
            q[1 + RD_RAIL_ENTRY_LEN] = 5;   /* the second entry's family */
        if (rails[i].type == RD_ABORT)
            qn = reason(q, 4, "no rails after all");
        hs_params_caps(&s, 1, 1 << 20, 8, 4, 0x80, 0xff, 0);
        msg(&s, FZ_SEAL | FZ_FIXMAC, RD_CHALLENGE, p, cn);
        msg(&s, FZ_SEAL | FZ_FIXMAC, RD_ACCEPT, mac, sizeof mac);
        msg(&s, rails[i].ctl, rails[i].type, q, qn);
        save_buf("handshake", rails[i].name, &s);
    }
    hs_params(&s, 1, 1 << 20, 8, 4, 0xff, 0);
    msg(&s, FZ_SEAL | FZ_FIXMAC, RD_CHALLENGE, p, cn);
    msg(&s, FZ_SEAL | FZ_FIXMAC, RD_ACCEPT, mac, sizeof mac);
    msg(&s, FZ_SEAL | FZ_FIXMAC, RD_RAILS, rp, rpn);
    save_buf("handshake", "sender-rails-not-offered", &s);
    h.caps = RD_CAP_RAILS;
    h.streams = 4;
    hn = rd_hello_encode(&h, p);
    hs_params_caps(&s, 0, 1 << 20, 8, 4, 0x80 | 1 << 2, 0xff, 0);
    msg(&s, FZ_SEAL, RD_HELLO, p, hn);
    msg(&s, FZ_SEAL | FZ_FIXMAC, RD_AUTH, proof, sizeof proof);
    save_buf("handshake", "receiver-rails", &s);

    /* joins */
    struct rd_join j = { .index = 2 };
    size_t jn = rd_join_encode(&j, p);
    hs_params(&s, 2, 1 << 20, 8, 4, 0xff, 0x0002);
    msg(&s, FZ_SEAL | FZ_FIXMAC, RD_JOIN, p, jn);
    save_buf("handshake", "accept-join-ok", &s);
    hs_params(&s, 2, 1 << 20, 8, 4, 0xff, 0x0002);
    msg(&s, FZ_SEAL | FZ_FIXMAC | FZ_WRONGKEY, RD_JOIN, p, jn);
    save_buf("handshake", "accept-join-wrong-key", &s);
    hs_params(&s, 3, 1 << 20, 8, 4, 0xff, 1);
    msg(&s, FZ_SEAL, RD_ACCEPT, p, 0);
    save_buf("handshake", "join-ok", &s);

    /* an authenticated connection (mode 4; taken's low bit: we are the sending end): goodbyes
     * with the right hop tag, forged, reflected, under another key; stream frames tagged or
     * not; a v1 frame (answered with a hop-tagged REJECT) */
    for (unsigned end = 0; end < 2; end++) {
        rn = reason(p, 4, "disk full on the other side");
        uint8_t e[RD_END_LEN];
        struct rd_end ev = { .total_bytes = 10, .frames = 1, .stream_hash = 5 };
        rd_end_encode(&ev, e);
        hs_params(&s, 4, 1 << 20, 8, 1, 0xff, (uint16_t)end);
        msg(&s, FZ_SEAL | FZ_FIXMAC, RD_CONFIRM, e, sizeof e);
        msg(&s, FZ_SEAL, RD_CONFIRM, e, sizeof e);
        msg(&s, FZ_SEAL | FZ_FIXMAC | FZ_SEQ, RD_END, e, sizeof e);
        msg(&s, FZ_SEAL, RD_ABORT, p, rn);
        msg(&s, FZ_SEAL | FZ_FIXMAC | FZ_SEQ, RD_ABORT, p, rn);
        msg(&s, FZ_SEAL | FZ_FIXMAC | FZ_WRONGKEY, RD_REJECT, p, rn);
        msg(&s, FZ_SEAL | FZ_FIXMAC | FZ_BADTAG, RD_ABORT, p, rn);
        msg(&s, FZ_SEAL | FZ_FIXMAC, RD_ABORT, p, rn);
        save_buf("handshake", end ? "ctrl-sender-goodbyes" : "ctrl-receiver-goodbyes", &s);
    }
    static uint8_t v1[32 + 8];
    memcpy(v1, RD_MAGIC, 4);
    v1[4] = 1;
    v1[5] = RD_ABORT;
    v1[8] = 8;
    hs_params(&s, 4, 1 << 20, 8, 1, 0xff, 0);
    msg(&s, 0, 0, v1, sizeof v1);
    save_buf("handshake", "ctrl-v1-frame", &s);
}

/* ---- relay scripts (fuzz_relay.c) ---- */

static void rl_params_ctl(struct buf *s, uint8_t chunk_sel, uint8_t down_mode, uint8_t down_fail, uint8_t up_fail,
                          uint8_t answer_ctl, const void *answer, size_t an)
{
    s->n = 0;
    put8(s, chunk_sel);
    put8(s, down_mode);
    put8(s, down_fail);
    put8(s, up_fail);
    msg(s, answer_ctl, 0, answer, an);
}

static void rl_params(struct buf *s, uint8_t chunk_sel, uint8_t down_mode, uint8_t down_fail, uint8_t up_fail,
                      const void *answer, size_t an)
{
    rl_params_ctl(s, chunk_sel, down_mode, down_fail, up_fail, 0, answer, an);
}

static void rl_stream(struct buf *s, int frames, size_t each)
{
    static uint8_t d[8192];
    for (size_t i = 0; i < sizeof d; i++)
        d[i] = (uint8_t)(i * 31 + 7);
    for (int i = 0; i < frames; i++)
        msg(s, FZ_SEAL | FZ_SEQ, RD_DATA, d, each);
    uint8_t e[RD_END_LEN] = { 0 };
    msg(s, FZ_SEAL | FZ_FIXMAC | FZ_SEQ, RD_END, e, sizeof e);   /* seq = the number of DATA frames */
}

static void seeds_relay(void)
{
    struct buf s;
    uint8_t p[512];
    size_t rn = reason(p, 4, "disk full");
    const char *names[] = { "honest", "confirm", "abort", "raw", "hangup", "early" };
    struct rd_end other = { .total_bytes = 3000, .frames = 3, .stream_hash = 1 };
    uint8_t on[RD_END_LEN];
    rd_end_encode(&other, on);   /* a CONFIRM of another stream */
    for (uint8_t mode = 0; mode < 6; mode++) {
        char name[64];
        snprintf(name, sizeof name, "stream-%s", names[mode]);
        if (mode == 1)
            rl_params(&s, 0, mode, 0xff, 0xff, on, sizeof on);
        else   /* the answer's frame tagged as a key holder would (downstream's ABORT: hop tag) */
            rl_params_ctl(&s, 0, mode, 0xff, 0xff, FZ_FIXMAC, p, rn);
        rl_stream(&s, 3, 1000);
        save_buf("relay", name, &s);
    }
    rl_params(&s, 0, 2, 0xff, 0xff, p, rn);   /* downstream's ABORT without its hop tag: a forgery */
    rl_stream(&s, 3, 1000);
    save_buf("relay", "stream-abort-forged", &s);
    rl_params(&s, 0, 0, 0xff, 0xff, p, rn);   /* a DATA tag damaged: the relay passes it, the sink refuses */
    msg(&s, FZ_SEAL | FZ_SEQ, RD_DATA, "abc", 3);
    msg(&s, FZ_SEAL | FZ_SEQ | FZ_BADTAG, RD_DATA, "def", 3);
    msg(&s, FZ_SEAL | FZ_SEQ | FZ_FIXMAC, RD_END, on, sizeof on);
    save_buf("relay", "stream-bad-tag", &s);
    rl_params(&s, 0, 0, 0xff, 0xff, p, rn);   /* DATA under the hop key instead of the stream's */
    msg(&s, FZ_SEAL | FZ_SEQ | FZ_WRONGKEY, RD_DATA, "abc", 3);
    msg(&s, FZ_SEAL | FZ_SEQ | FZ_FIXMAC, RD_END, on, sizeof on);
    save_buf("relay", "stream-wrong-key", &s);
    rl_params(&s, 0, 0, 0xff, 0xff, p, rn);   /* END with seq 0 after DATA: out of order (v1 style) */
    msg(&s, FZ_SEAL | FZ_SEQ, RD_DATA, "abc", 3);
    msg(&s, FZ_SEAL | FZ_FIXMAC, RD_END, on, sizeof on);
    save_buf("relay", "end-seq-0", &s);
    rl_params(&s, 1, 0, 0xff, 0xff, p, 0);
    rl_stream(&s, 0, 0);
    save_buf("relay", "empty-stream", &s);
    rl_params(&s, 0, 0, 2, 0xff, p, rn);   /* downstream dies at the third frame */
    rl_stream(&s, 4, 100);
    save_buf("relay", "down-dies", &s);
    rl_params(&s, 0, 0, 0xff, 0, p, rn);   /* the CONFIRM upstream is lost */
    rl_stream(&s, 2, 100);
    save_buf("relay", "up-dies", &s);
    rl_params(&s, 0, 0, 0xff, 0xff, p, rn);   /* upstream gives up: its ABORT under link 1's hop tag */
    msg(&s, FZ_SEAL | FZ_SEQ, RD_DATA, "abc", 3);
    msg(&s, FZ_SEAL | FZ_FIXMAC, RD_ABORT, p, rn);
    save_buf("relay", "upstream-abort", &s);
    rl_params(&s, 0, 0, 0xff, 0xff, p, rn);   /* a forged upstream ABORT: no hop tag */
    msg(&s, FZ_SEAL | FZ_SEQ, RD_DATA, "abc", 3);
    msg(&s, FZ_SEAL, RD_ABORT, p, rn);
    save_buf("relay", "upstream-abort-forged", &s);
    rl_params(&s, 0, 0, 0xff, 0xff, p, rn);   /* an upstream ABORT under another key */
    msg(&s, FZ_SEAL | FZ_FIXMAC | FZ_WRONGKEY, RD_ABORT, p, rn);
    save_buf("relay", "upstream-abort-wrong-key", &s);
    rl_params(&s, 0, 0, 0xff, 0xff, p, rn);   /* a frame out of order */
    msg(&s, FZ_SEAL | FZ_SEQ, RD_DATA, "abc", 3);
    msg(&s, FZ_SEAL, RD_DATA, "def", 3);
    save_buf("relay", "out-of-order", &s);
    /* regression: a frame shorter than a header, whose "header" the relay used to read
     * past the frame (rd_relay.c check_head) */
    rl_params(&s, 0, 0, 0xff, 0xff, p, 0);
    static const uint8_t short_frame[6] = { 'R', 'D', 'P', 0xb1, RD_PROTO_VERSION, RD_DATA };
    msg(&s, 0, 0, short_frame, sizeof short_frame);
    save_buf("relay", "regress-short-frame-2", &s);
    /* regression: downstream answers at once in another protocol version (here 1); the relay's
     * monitor thread used to REJECT it on down while the main thread was forwarding on down */
    static uint8_t v1[RD_FRAME_HDR + 64];
    size_t v1n = rd_frame_seal(v1, RD_ABORT, 0, (uint32_t)reason(v1 + RD_FRAME_HDR, 4, "v1"), 0);
    v1[4] = 1;
    rl_params(&s, 0, 5, 0xff, 0xff, v1, v1n);
    rl_stream(&s, 20, 100);
    save_buf("relay", "regress-monitor-reject", &s);
}

/* ---- agent control lines (fuzz_agent_line.c) ---- */

static void seeds_agent_line(void)
{
    static const char session[] =
        "rdpipe-agent-1\n"
        "seg cmd recv send auto 1 7472206120207a2041205a -\n"
        "seg cmd recv send tcp 0 636174 - encrypt,compress=auto\n"
        "seg cmd recv send tcp 0 636174 - compress=3,lanes=4,streams=2\n"
        "key 0123456789abcdef0123456789abcdef\n"
        "setup\n"
        "next @initiator 40000 fedcba9876543210fedcba9876543210\n"
        "start\n";
    static const char files[] =
        "rdpipe-agent-1\n"
        "seg write recv none rdma 0 - 7e2f6f75742e696d67\n"
        "manifest 66696c652d61\n"
        "list\n"
        "setup\n"
        "abort\n";
    static const char replies[] =
        "hello 10.0.0.2 10.0.0.1 4242\n"
        "port 40001\n"
        "ready\n"
        "log 72647265637620726561647920\n"
        "stat recv 1048576 0.5 tcp\n"
        "exit cmd 0 0 -\n"
        "done\n";
    static const char specs[] =
        "host1:tr a-z A-Z\n"
        "user@[::1]:rev\n"
        "< big.img\n"
        "fs2:cat\n"
        "localhost:>> out.log\n"
        "-oProxyCommand=x:ls\n";
    save("agent_line", "session", session, sizeof session - 1);
    save("agent_line", "files", files, sizeof files - 1);
    save("agent_line", "replies", replies, sizeof replies - 1);
    save("agent_line", "specs", specs, sizeof specs - 1);

    /* rdcp --resume's manifest as the source's agent gets it: DST a directory, a complete
     * file, a partial one with its temporary file */
    struct rdc_manifest_entry e[3] = {
        { .kind = 'T', .size = 1, .path = "", .tmp = "" },
        { .kind = 'F', .size = 70000, .mtime_s = 1700000000, .mtime_ns = 5, .path = "a/b.txt", .tmp = "" },
        { .kind = 'P', .size = 4096, .mtime_s = 1700000001, .path = "big.img", .tmp = ".rdcp.big.img.x1" },
    };
    char man[1024] = "rdpipe-agent-1\nseg tree-send none send tcp 0 - -\n";
    for (int i = 0; i < 3; i++) {
        memset(e[i].hash, 0x11 * (i + 1), 16);
        char *h = rdc_manifest_line(&e[i]);
        if (h && strlen(man) + strlen(h) + 16 < sizeof man)
            strcat(strcat(strcat(man, "manifest "), h), "\n");
        free(h);
    }
    strcat(man, "setup\n");
    save("agent_line", "manifest", man, strlen(man));
}

/* ---- what an agent says after setup, as rdpipe's and rdcp's initiators read it
 *      (fuzz_initiator_line.c) ---- */

/* append "log HEX(text)\n" */
static void add_log(char *buf, size_t cap, const char *text)
{
    char *h = rdr_hex_str(text);
    if (h && strlen(buf) + strlen(h) + 6 < cap)
        strcat(strcat(strcat(buf, "log "), h), "\n");
    free(h);
}

static void seeds_initiator_line(void)
{
    char pipe[1024] = "", copy[2048] = "", line[256];
    char *h = rdr_hex_str("rdrecv: the stream broke off");
    strcat(pipe, "note 72647069706520736179732068656c6c6f\nclosed\n");
    snprintf(line, sizeof line, RDR_SAID_STAT_FMT "\n", "recv", 1073741824ULL, 0.731245, "tcp,-2-streams");
    strcat(pipe, line);
    snprintf(line, sizeof line, RDR_SAID_EXIT_FMT "\n", "recv", 4, 0, h);
    strcat(pipe, line);
    snprintf(line, sizeof line, RDR_SAID_EXIT_FMT "\n", "cmd", 141, 1, "-");
    strcat(pipe, line);
    free(h);
    save("initiator_line", "rdpipe", pipe, strlen(pipe));

    strcat(copy, "manifest 5401000000\n");
    strcat(copy, "root 66696c65616c706861\nroot 2e2e\nroot 612f62\nlisted\n");   /* a source's list */
    snprintf(line, sizeof line, RDC_NOTE_TOTAL_FMT, 20000ULL, 663000000ULL);
    line[strlen(line) - 1] = '\0';
    add_log(copy, sizeof copy, line);
    snprintf(line, sizeof line, RDC_NOTE_PROGRESS_FMT, 1200ULL, 40000000ULL, 3ULL);
    line[strlen(line) - 1] = '\0';
    add_log(copy, sizeof copy, line);
    add_log(copy, sizeof copy, "@rdcp made 612f622e747874");
    add_log(copy, sizeof copy, "@rdcp notdir");
    add_log(copy, sizeof copy, "rdcp: cannot open 'a/b': Permission denied");
    snprintf(line, sizeof line, RDC_NOTE_SENT_FMT, 20000ULL, 12ULL, 663000000ULL, 3ULL, 1ULL, 3.25);
    line[strlen(line) - 1] = '\0';
    add_log(copy, sizeof copy, line);
    snprintf(line, sizeof line, RDC_NOTE_RECV_FMT, 20000ULL, 12ULL, 663000000ULL, 3ULL, 1ULL, 3.5);
    line[strlen(line) - 1] = '\0';
    add_log(copy, sizeof copy, line);
    strcat(copy, "exit recv 23 0 -\n");
    save("initiator_line", "rdcp", copy, strlen(copy));

    /* what atoi and sscanf once took: a wrapped status, a negative count, inf seconds */
    static const char hostile[] =
        "exit recv 4294967296 0 -\n"
        "exit send 4 2 -\n"
        "stat recv 10 inf -\n"
        "stat recv -1 0x10 -\n"
        "stat recv 10 1.0 tcp\033]0;owned\007\n"
        "log 4072646370207072677265737320312032202d33\n";
    save("initiator_line", "regress-atoi", hostile, sizeof hostile - 1);
}

/* ---- codec: 2 bytes of raw length, then a payload (fuzz_codec.c) ---- */
static void save_codec(const char *name, const uint8_t *raw, size_t n, int level)
{
    uint8_t buf[2 + 4096];
    memcpy(buf + 2, raw, n);
    struct rd_compressor *c = rd_compressor_new(4096);
    long z = c ? rd_compress_chunk(c, level, buf + 2, n) : -1;
    rd_compressor_free(c);
    if (z <= 0)
        return;
    buf[0] = (uint8_t)n;
    buf[1] = (uint8_t)(n >> 8);
    save("codec", name, buf, 2 + (size_t)z);
}

static void seeds_codec(void)
{
    uint8_t text[4096];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (uint8_t)("the quick brown fox jumps over the lazy dog 0123456789\n"[i % 55]);
    save_codec("text-l1", text, sizeof text, 1);
    save_codec("text-l19", text, sizeof text, 19);
    save_codec("text-fast", text, sizeof text, -5);
    memset(text, 0, sizeof text);
    save_codec("zeros", text, sizeof text, 3);
}

/* ---- bench client: a server's answers (fuzz_bench_client.c) ---- */

/* chunk:u16 (x 1 KiB from 4) depth:u8 plan:u8 */
static void bc_params(struct buf *s, uint16_t chunk_sel, uint8_t depth_sel, uint8_t plan)
{
    put16(s, chunk_sel);
    put8(s, depth_sel);
    put8(s, plan);
}

/* A bench message of type: a seq b (FZ_SEQ numbers it in the target) and payload p[0..n) */
static void bc_msg(struct buf *s, uint8_t ctl, uint8_t type, uint32_t a, uint64_t seq, uint64_t b,
                   const void *p, size_t n)
{
    uint8_t m[20 + 4096];
    if (n > 4096)
        n = 4096;
    for (int i = 0; i < 4; i++)
        m[i] = (uint8_t)(a >> (8 * i));
    for (int i = 0; i < 8; i++) {
        m[4 + i] = (uint8_t)(seq >> (8 * i));
        m[12 + i] = (uint8_t)(b >> (8 * i));
    }
    if (n)
        memcpy(m + 20, p, n);
    msg(s, FZ_SEAL | ctl, type, m, 20 + n);
}

static void bc_acks(struct buf *s, int n)
{
    for (int i = 0; i < n; i++)
        bc_msg(s, FZ_SEQ, RDB_ACK, 0, 0, 0, NULL, 0);
}

static void seeds_bench_client(void)
{
    struct buf s = { .n = 0 };
    struct rdb_info info = { .ndev = 1 };
    snprintf(info.host, sizeof info.host, "there");
    snprintf(info.version, sizeof info.version, "0.1.0");
    snprintf(info.desc, sizeof info.desc, "tcp");
    snprintf(info.range, sizeof info.range, "32768-60999");
    snprintf(info.io, sizeof info.io, "yes");
    snprintf(info.dev[0].name, sizeof info.dev[0].name, "rxe0");
    info.dev[0].port = 1;
    info.dev[0].mtu = 4096;
    char text[RDB_TEXT_MAX];
    size_t tn = rdb_info_encode(&info, text, sizeof text);
    struct rdb_io io = { .lanes = 4, .bytes = 16u << 20 };
    for (unsigned k = 0; k < RDB_IO_COUNT; k++)
        io.bps[k] = 1000000000ull + k;
    uint8_t iob[RDB_IO_LEN];
    rdb_io_encode(&io, iob);
    static uint8_t data[2048];

    /* an honest server, every call: INFO, a point at 4 KiB x 2 (2 ACKs to warm up, 1 counted,
     * 1 for the one still out), REVERSE of 3 DATA and END, IO, a point at 4 KiB x 1 */
    bc_params(&s, 0, 1, 31);
    bc_msg(&s, 0, RDB_INFO, 0, 0, 0, text, tn);
    bc_acks(&s, 4);
    for (int i = 0; i < 3; i++)
        bc_msg(&s, FZ_SEQ, RDB_DATA, 0, 0, 0, data, sizeof data);
    bc_msg(&s, FZ_SEQ, RDB_END, 0, 0, 0, NULL, 0);
    bc_msg(&s, 0, RDB_IO, 0, 0, 0, iob, sizeof iob);
    bc_acks(&s, 2);
    save_buf("bench_client", "honest", &s);

    /* a server without --io, at depth 16 with 64 KiB messages (a point takes 2 x depth ACKs) */
    s.n = 0;
    bc_params(&s, 60, 15, 2 | 8 | 16);
    bc_acks(&s, 32);
    bc_msg(&s, 0, RDB_IO, 0, 0, 0, NULL, 0);
    bc_acks(&s, 2);
    save_buf("bench_client", "deep-no-io", &s);

    /* an rdrecv at the bench port: its REJECT or ABORT, with a reason */
    uint8_t r[256];
    s.n = 0;
    bc_params(&s, 0, 1, 1);
    msg(&s, FZ_FIXMAC, RD_REJECT, r, reason(r, 3, "authentication failed (wrong key)"));
    save_buf("bench_client", "rdrecv-reject", &s);
    s.n = 0;
    bc_params(&s, 0, 1, 2);
    bc_acks(&s, 1);
    msg(&s, FZ_FIXMAC, RD_ABORT, r, reason(r, 4, "this is rdrecv, not an rdbench server\033[2J"));
    save_buf("bench_client", "rdrecv-abort", &s);

    /* the server's ERR, a wrong ACK, a REVERSE that never ends */
    static const char err[] = "REVERSE 3 x 4096 for 10 ms is outside 2 x 4096, 10000 ms";
    s.n = 0;
    bc_params(&s, 0, 1, 4);
    bc_msg(&s, 0, RDB_ERR, 0, 0, 0, err, sizeof err - 1);
    save_buf("bench_client", "server-err", &s);
    s.n = 0;
    bc_params(&s, 0, 3, 2);
    bc_acks(&s, 2);
    bc_msg(&s, 0, RDB_ACK, 0, 7, 0, NULL, 0);
    save_buf("bench_client", "ack-out-of-order", &s);
    s.n = 0;
    bc_params(&s, 0, 1, 4);
    for (int i = 0; i < 40; i++)
        bc_msg(&s, FZ_SEQ, RDB_DATA, 0, 0, 0, data, 64);
    save_buf("bench_client", "reverse-endless", &s);

    /* rdcheck's agent says where it listens: the line alone */
    static const char ready[] = "ready 35141 tcp,rdma 32768-60999";
    save("bench_client", "ready-line", ready, sizeof ready - 1);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make-seeds DIR\n");
        return 2;
    }
    root = argv[1];
    if (mkdir(root, 0755) && errno != EEXIST) {
        perror(root);
        return 1;
    }
    seeds_proto();
    seeds_handshake();
    seeds_relay();
    seeds_agent_line();
    seeds_initiator_line();
    seeds_codec();
    seeds_bench_client();
    printf("make-seeds: %d seeds in %s\n", written, root);
    return 0;
}
