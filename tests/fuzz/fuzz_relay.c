/* fuzz_relay.c - rd_relay (lib/engine/rd_relay.c) fed a hostile upstream frame sequence and a
 * downstream that answers as the input says, over the scripted transport (protocol v2).
 *
 * Input: chunk:u8 down_mode:u8 down_fail:u8 up_fail:u8, then one message (fz_input.h) that
 * is downstream's answer, then the upstream frames as messages. The target holds the three
 * keys of a relayed stream: link 1's hop key (upstream), link 2's hop key (downstream) and
 * the end-to-end stream key, which the relay never sees. A sealed upstream DATA or END is
 * tagged under the stream key, as the origin does (FZ_WRONGKEY: under link 1's hop key);
 * with FZ_SEQ it gets the sequence number the relay expects next (DATA: its index; END: the
 * number of DATA frames); a sealed END with FZ_FIXMAC gets the true totals and stream hash of
 * the DATA frames before it; a sealed ABORT with FZ_FIXMAC carries link 1's hop tag in the
 * sender's direction (FZ_WRONGKEY: the stream key's), without it none; FZ_BADTAG flips a tag bit.
 * down_mode % 6: 0 an honest receiver (checks every tag, seq and the stream hash as a sink
 * with the stream key does; CONFIRM tagged under the stream key, or a hop-tagged ABORT),
 * 1 a CONFIRM with the answer's bytes (tagged if the answer has FZ_FIXMAC), 2 an ABORT with
 * them (hop-tagged if FZ_FIXMAC), 3 the answer as a raw frame, 4 hangs up at END, 5 sends the
 * answer's raw frame at once, before anything is relayed.
 *
 * The reference model below re-implements the relay's header and order checks independently
 * and computes which upstream frames may go downstream: every frame up to the first one that
 * fails them (not included) or the first END (included); an ABORT is never passed on (the
 * relay says its own). END is judged on its structure alone (seq = DATA frames, totals): the
 * relay has no key to check a tag with. Checked after each run:
 *   - downstream got a prefix of those frames, byte for byte, and nothing else except the
 *     relay's own well-formed ABORTs, tagged under link 2's hop key in its direction: a frame
 *     that failed a check, and an upstream ABORT, are never forwarded;
 *   - upstream hears CONFIRM only when the relay returns RD_OK, and then it is downstream's
 *     CONFIRM frame byte for byte; otherwise only the relay's ABORTs, under link 1's hop tag;
 *   - RD_OK only for a whole stream whose END is right and that downstream confirmed (an
 *     honest downstream only confirms a stream whose tags are all right);
 *   - an upstream ABORT that fails link 1's hop tag is refused as a forgery, and a right one
 *     is reported as the sender's;
 *   - a right stream, an honest downstream and no dead link always give RD_OK.
 */
#include "fz_input.h"
#include "fz_transport.h"

#include "engine/rd_engine.h"
#include "util/rd_error.h"
#include "wire/rd_proto.h"
#include "wire/rd_tag.h"
#include "engine/rd_relay.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "fz_check.h"

#define MAX_UP 64   /* upstream frames per run: enough for every path, keeps runs short */

enum { D_HONEST, D_CONFIRM, D_ABORT, D_RAW, D_HANGUP, D_EARLY, D_COUNT };

static const uint8_t hop_up[RD_KEY_LEN] = "fuzz_relay: link 1's hop key...";
static const uint8_t hop_down[RD_KEY_LEN] = "fuzz_relay: link 2's hop key...";
static const uint8_t stream_key[RD_KEY_LEN] = "fuzz_relay: the stream's key....";

struct model {
    size_t nfwd;            /* frames that may be forwarded: up[0..nfwd) */
    int ends_well;          /* the last of them is an END with the right seq, length and totals */
    int tags_ok;            /* ... and every one of them carries the right stream tag, the END
                             * the stream hash of the DATA tags */
    uint64_t data_frames, data_bytes;
    int stop_abort;         /* the frame after them is an ABORT that passes the header checks */
    int abort_tag_ok;       /* ... with link 1's hop tag in the sender's direction */
    int abort_reason_ok;    /* ... and a well-formed reason */
};

struct rl {
    struct fz_tp up, down;
    int down_mode;
    struct fz_msg answer;
    int answered;
    uint8_t confirm[RD_CTRL_FRAME];   /* the CONFIRM downstream sent, if any */
    size_t confirm_len;
    uint8_t frame[RD_FRAME_HDR + FZ_MSG_MAX];
};

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* frame p[0..len) passes its tag under key, direction dir (its header already parsed fine) */
static int tag_ok(const uint8_t *key, enum rd_tag_dir dir, const uint8_t *p, size_t len)
{
    struct rd_frame f;
    if (len < RD_FRAME_HDR || rd_frame_parse(p, len, len - RD_FRAME_HDR, &f) != RD_P_OK)
        return 0;
    struct rd_tagger *t = rd_tagger_new(key);
    if (!t)
        abort();
    int ok = rd_frame_check(t, dir, p, &f) == RD_P_OK;
    rd_tagger_free(t);
    return ok;
}

static void tag_frame(const uint8_t *key, enum rd_tag_dir dir, uint8_t *frame)
{
    struct rd_tagger *t = rd_tagger_new(key);
    if (!t || rd_frame_tag(t, dir, frame, frame + RD_FRAME_HDR) != 0)
        abort();
    rd_tagger_free(t);
}

/* The relay's checks, written again from the protocol description (rd_proto.h, rd_relay.c):
 * 1 if the frame may be forwarded as the next one after `seq` DATA frames (an ABORT: if it
 * may be read at all). */
static int model_passes(const uint8_t *p, size_t len, uint32_t chunk, uint64_t seq)
{
    if (len < RD_FRAME_HDR || len > RD_FRAME_HDR + (size_t)chunk)
        return 0;   /* short, or larger than the receive buffers: never a frame */
    if (memcmp(p, RD_MAGIC, 4) != 0 || p[4] != RD_PROTO_VERSION)
        return 0;
    uint8_t type = p[5];
    if (type != RD_DATA && type != RD_END && type != RD_ABORT)
        return 0;
    if (get_le(p + 6, 2) != 0 || get_le(p + 12, 4) != 0 || get_le(p + 40, 8) != 0)
        return 0;   /* flags, reserved */
    uint64_t length = get_le(p + 8, 4);
    if (RD_FRAME_HDR + length != len)
        return 0;
    if (type != RD_DATA && length > RD_CTRL_FRAME - RD_FRAME_HDR)
        return 0;
    if ((type == RD_DATA || type == RD_END) && get_le(p + 16, 8) != seq)
        return 0;   /* DATA in order; END's seq is the number of DATA frames */
    return 1;
}

/* Build the upstream frames from the script, queue them, and work out what may pass. */
static void build_upstream(struct rl *r, struct fz_in *in, uint32_t chunk, struct model *m)
{
    struct fz_msg msg;
    uint64_t seq = 0, bytes = 0, hash = 0;   /* as sealed, for FZ_SEQ / FZ_FIXMAC */
    uint64_t model_hash = 0;                 /* of the DATA frames the model lets through */
    int stopped = 0;
    memset(m, 0, sizeof *m);
    m->tags_ok = 1;
    for (int i = 0; i < MAX_UP && fz_next_msg(in, &msg); i++) {
        const uint8_t *fr = msg.bytes;
        size_t len = msg.len;
        if (msg.ctl & FZ_SEAL) {
            uint8_t *pl = r->frame + RD_FRAME_HDR;
            memcpy(pl, msg.bytes, msg.len);
            if (msg.type == RD_END && (msg.ctl & FZ_FIXMAC) && msg.len >= RD_END_LEN) {
                struct rd_end e = { .total_bytes = bytes, .frames = seq, .stream_hash = hash };
                rd_end_encode(&e, pl);
            }
            uint64_t s = 0;
            if ((msg.ctl & FZ_SEQ) && (msg.type == RD_DATA || msg.type == RD_END))
                s = seq;
            else if (msg.len >= 8)
                memcpy(&s, msg.bytes, 8);   /* the fuzzer's own nonce */
            len = rd_frame_seal(r->frame, msg.type, 0, (uint32_t)msg.len, s);
            if (msg.type == RD_DATA || msg.type == RD_END)
                tag_frame((msg.ctl & FZ_WRONGKEY) ? hop_up : stream_key, RD_TAG_DOWN, r->frame);
            else if (msg.type == RD_ABORT && (msg.ctl & FZ_FIXMAC))
                tag_frame((msg.ctl & FZ_WRONGKEY) ? stream_key : hop_up, RD_TAG_HOP_DOWN, r->frame);
            if (msg.ctl & FZ_BADTAG)
                r->frame[RD_HDR_TAG] ^= 1;
            fr = r->frame;
            if (msg.type == RD_DATA && (msg.ctl & FZ_SEQ)) {
                hash = XXH3_64bits_withSeed(r->frame + RD_HDR_TAG, RD_TAG_LEN, hash);
                seq++;
                bytes += msg.len;
            }
        }
        fz_push(&r->up, fr, len);
        if (stopped)
            continue;
        stopped = 1;
        if (!model_passes(fr, len, chunk, m->data_frames))
            continue;
        uint8_t type = fr[5];
        if (type == RD_ABORT) {
            /* judged by the relay, never passed on */
            struct rd_reason why;
            m->stop_abort = 1;
            m->abort_tag_ok = tag_ok(hop_up, RD_TAG_HOP_DOWN, fr, len);
            m->abort_reason_ok = rd_reason_decode(fr + RD_FRAME_HDR, len - RD_FRAME_HDR, &why) == RD_P_OK;
            continue;
        }
        m->nfwd++;
        m->tags_ok &= tag_ok(stream_key, RD_TAG_DOWN, fr, len);
        if (type == RD_DATA) {
            model_hash = XXH3_64bits_withSeed(fr + RD_HDR_TAG, RD_TAG_LEN, model_hash);
            m->data_frames++;
            m->data_bytes += len - RD_FRAME_HDR;
            stopped = 0;
            continue;
        }
        if (len == RD_FRAME_HDR + RD_END_LEN) {   /* END */
            m->ends_well = get_le(fr + RD_FRAME_HDR, 8) == m->data_bytes &&
                           get_le(fr + RD_FRAME_HDR + 8, 8) == m->data_frames;
            m->tags_ok &= get_le(fr + RD_FRAME_HDR + 16, 8) == model_hash;
        }
    }
    fz_close_in(&r->up);   /* then upstream hangs up */
}

/* The honest sink: every frame it got, checked as rd_engine_recv does with the stream key. */
static int sink_vouches(const struct rl *r, const uint8_t *end, size_t end_len)
{
    uint64_t hash = 0, total = 0, n = 0;
    for (size_t i = 0; i < r->down.ntx; i++) {
        const struct fz_frame *f = &r->down.tx[i];
        if (f->len < RD_FRAME_HDR || f->data[5] != RD_DATA || get_le(f->data + 16, 8) != n ||
            !tag_ok(stream_key, RD_TAG_DOWN, f->data, f->len))
            return 0;
        hash = XXH3_64bits_withSeed(f->data + RD_HDR_TAG, RD_TAG_LEN, hash);
        total += f->len - RD_FRAME_HDR;
        n++;
    }
    return end_len == RD_FRAME_HDR + RD_END_LEN && get_le(end + 16, 8) == n &&
           tag_ok(stream_key, RD_TAG_DOWN, end, end_len) && get_le(end + RD_FRAME_HDR, 8) == total &&
           get_le(end + RD_FRAME_HDR + 8, 8) == n && get_le(end + RD_FRAME_HDR + 16, 8) == hash;
}

static void push_down(struct rl *r, const uint8_t *p, size_t n)
{
    if (n >= 6 && p[5] == RD_CONFIRM && n <= sizeof r->confirm) {
        memcpy(r->confirm, p, n);
        r->confirm_len = n;
    }
    fz_push(&r->down, p, n);
}

static void push_answer(struct rl *r, const uint8_t *end, size_t end_len)
{
    uint8_t *pl = r->frame + RD_FRAME_HDR;
    size_t n = r->answer.len;
    switch (r->down_mode) {
    case D_HONEST:
        if (sink_vouches(r, end, end_len)) {
            memcpy(pl, end + RD_FRAME_HDR, RD_END_LEN);
            rd_frame_seal(r->frame, RD_CONFIRM, 0, RD_END_LEN, 0);
            tag_frame(stream_key, RD_TAG_UP, r->frame);
            push_down(r, r->frame, RD_FRAME_HDR + RD_END_LEN);
        } else {
            static const char bad[] = "\4\0\0\0fuzz sink: stream corrupt";
            memcpy(pl, bad, sizeof bad - 1);
            size_t len = rd_frame_seal(r->frame, RD_ABORT, 0, sizeof bad - 1, 7);
            tag_frame(hop_down, RD_TAG_HOP_UP, r->frame);
            push_down(r, r->frame, len);
        }
        break;
    case D_CONFIRM:
    case D_ABORT: {
        if (n > RD_CTRL_FRAME - RD_FRAME_HDR)
            n = RD_CTRL_FRAME - RD_FRAME_HDR;
        memcpy(pl, r->answer.bytes, n);
        int confirm = r->down_mode == D_CONFIRM;
        size_t len = rd_frame_seal(r->frame, confirm ? RD_CONFIRM : RD_ABORT, 0, (uint32_t)n, confirm ? 0 : 7);
        if (r->answer.ctl & FZ_FIXMAC)
            tag_frame(confirm ? stream_key : hop_down, confirm ? RD_TAG_UP : RD_TAG_HOP_UP, r->frame);
        push_down(r, r->frame, len);
        break;
    }
    case D_RAW:
        push_down(r, r->answer.bytes, r->answer.len);
        break;
    default:
        break;
    }
    fz_close_in(&r->down);   /* downstream says nothing more */
}

/* Downstream sees each frame the relay sends; it answers END. */
static void on_down_send(struct fz_tp *t, const uint8_t *p, size_t n, void *arg)
{
    struct rl *r = arg;
    if (n < RD_FRAME_HDR || r->answered)
        return;
    if (p[5] == RD_END) {
        r->answered = 1;
        push_answer(r, p, n);
    } else if (p[5] == RD_ABORT) {
        r->answered = 1;
        fz_close_in(t);   /* told to give up: it hangs up */
    }
}

static int same(const struct fz_frame *f, const uint8_t *p, size_t n)
{
    return f->len == n && memcmp(f->data, p, n) == 0;
}

/* A frame the relay made itself: a well-formed ABORT with its link's hop tag, its direction. */
static int own_abort(const struct fz_frame *f, const uint8_t *key, enum rd_tag_dir dir)
{
    struct rd_frame fr;
    struct rd_reason why;
    return rd_frame_parse(f->data, f->len, RD_CTRL_FRAME, &fr) == RD_P_OK && fr.type == RD_ABORT &&
           tag_ok(key, dir, f->data, f->len) && rd_reason_decode(fr.payload, fr.length, &why) == RD_P_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct rl r;
    memset(&r, 0, offsetof(struct rl, frame));
    struct fz_in in = { data, size };
    uint32_t chunk = RD_MIN_CHUNK << (fz_byte(&in) % 4);
    r.down_mode = fz_byte(&in) % D_COUNT;
    uint8_t down_fail = fz_byte(&in), up_fail = fz_byte(&in);
    if (!fz_next_msg(&in, &r.answer))
        r.answer = (struct fz_msg){ 0 };
    rd_error_clear();
    fz_init(&r.up, "fuzz:upstream");
    fz_init(&r.down, "fuzz:downstream");
    /* what the two handshakes left: the relay received on link 1, sends on link 2 */
    memcpy(r.up.tp.hop_key, hop_up, RD_KEY_LEN);
    r.up.tp.hop_dir = RD_TAG_HOP_UP;
    memcpy(r.down.tp.hop_key, hop_down, RD_KEY_LEN);
    r.down.tp.hop_dir = RD_TAG_HOP_DOWN;
    r.up.ring_recv = RD_FRAME_HDR + (size_t)chunk;    /* what the upstream handshake set up */
    r.down.ring_send = RD_FRAME_HDR + (size_t)chunk;
    r.down.blocking = 1;                              /* the monitor thread waits for an answer */
    r.down.on_send = on_down_send;
    r.down.arg = &r;
    r.down.fail_send = down_fail < 8 ? down_fail : -1;
    r.up.fail_send = up_fail < 2 ? up_fail : -1;
    struct model m;
    build_upstream(&r, &in, chunk, &m);
    if (r.down_mode == D_EARLY) {
        r.answered = 1;
        push_down(&r, r.answer.bytes, r.answer.len);
    }

    struct rd_params p = { .chunk_size = chunk, .depth = 8, .streams = 1 };   /* no stream key */
    struct rd_counters cnt;
    atomic_init(&cnt.bytes, 0);
    atomic_init(&cnt.frames, 0);
    int rc = rd_relay(&r.up.tp, &r.down.tp, &p, &cnt);

    /* downstream: a prefix of the frames that passed, then only the relay's own ABORTs */
    size_t fwd = 0;
    while (fwd < r.down.ntx && fwd < m.nfwd && same(&r.down.tx[fwd], r.up.rx[fwd].data, r.up.rx[fwd].len))
        fwd++;
    if (getenv("FZ_VERBOSE"))
        for (size_t i = 0; i < r.down.ntx; i++)
            fprintf(stderr, "downstream got %zu: %zu bytes, type %d%s\n", i, r.down.tx[i].len,
                    r.down.tx[i].len > 5 ? r.down.tx[i].data[5] : -1, i < fwd ? " (forwarded)" : "");
    for (size_t i = fwd; i < r.down.ntx; i++)
        CHECK(own_abort(&r.down.tx[i], hop_down, RD_TAG_HOP_DOWN));
    /* upstream: nothing but CONFIRM (at most one, downstream's as it came) or ABORTs */
    int confirms = 0;
    for (size_t i = 0; i < r.up.ntx; i++) {
        if (r.up.tx[i].len >= 6 && r.up.tx[i].data[5] == RD_CONFIRM) {
            confirms++;
            CHECK(r.confirm_len && same(&r.up.tx[i], r.confirm, r.confirm_len));
        } else {
            CHECK(own_abort(&r.up.tx[i], hop_up, RD_TAG_HOP_UP));
        }
    }
    if (rc == RD_OK) {
        CHECK(m.ends_well && fwd == m.nfwd);
        CHECK(confirms == 1);
        CHECK(atomic_load(&cnt.bytes) == m.data_bytes && atomic_load(&cnt.frames) == m.data_frames);
        CHECK(r.down_mode == D_HONEST || r.down_mode == D_CONFIRM || r.down_mode == D_RAW || r.down_mode == D_EARLY);
        if (r.down_mode == D_HONEST)
            CHECK(m.tags_ok);   /* the sink vouched for every tag */
    } else {
        CHECK(rc == RD_ESTREAM || rc == RD_EIO || rc == RD_EAUTH);
        CHECK(confirms == 0 || r.up.fail_send >= 0);   /* a CONFIRM is only sent on the way to RD_OK */
        CHECK(rd_error_msg()[0] != '\0');
        /* a whole, right stream and an honest downstream on live links always gets through */
        CHECK(!(m.ends_well && m.tags_ok && r.down_mode == D_HONEST && r.down.fail_send < 0 && r.up.fail_send < 0));
    }
    /* an upstream ABORT, reached with nothing in the way: judged by its hop tag */
    if (m.stop_abort && fwd == m.nfwd && r.down_mode != D_EARLY) {
        CHECK(rc != RD_OK);
        if (!m.abort_tag_ok)
            CHECK(strstr(rd_error_msg(), "sent an ABORT that fails its authentication tag") != NULL);
        else if (m.abort_reason_ok)
            CHECK(strncmp(rd_error_msg(), "sender: ", 8) == 0);
        else
            CHECK(strstr(rd_error_msg(), "sender sent a malformed ABORT") != NULL);
    }
    if (getenv("FZ_VERBOSE"))   /* to see what a seed reaches */
        fprintf(stderr, "down mode %d: rc %d, %zu of %zu frames forwarded, ends well %d, tags ok %d, abort %d/%d: %s\n",
                r.down_mode, rc, fwd, m.nfwd, m.ends_well, m.tags_ok, m.stop_abort, m.abort_tag_ok, rd_error_msg());
    fz_free(&r.up);
    fz_free(&r.down);
    rd_error_clear();
    return 0;
}
