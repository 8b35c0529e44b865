/* fuzz_relay.c - rd_relay (lib/rd_relay.c) fed a hostile upstream frame sequence and a
 * downstream that answers as the input says, over the scripted transport.
 *
 * Input: chunk:u8 down_mode:u8 down_fail:u8 up_fail:u8, then one message (fz_input.h) that
 * is downstream's answer, then the upstream frames as messages. A sealed upstream message
 * with FZ_SEQ gets the sequence number the relay expects next; a sealed END with FZ_FIXMAC
 * gets the true totals of the DATA frames before it.
 * down_mode % 6: 0 an honest receiver (CONFIRM echoing the END it got), 1 a CONFIRM with the
 * answer's bytes, 2 an ABORT with them, 3 the answer as a raw frame, 4 hangs up at END,
 * 5 sends the answer's raw frame at once, before anything is relayed.
 *
 * The reference model below re-implements the relay's header and order checks independently
 * and computes which upstream frames may go downstream: every frame up to the first one that
 * fails them (not included) or the first END/ABORT (included). Checked after each run:
 *   - downstream got a prefix of those frames, byte for byte, and nothing else except the
 *     relay's own well-formed ABORTs: a frame that failed a check is never forwarded;
 *   - upstream hears CONFIRM only when the relay returns RD_OK, and then it is downstream's;
 *   - RD_OK only for a whole stream whose END totals are right and that downstream confirmed;
 *   - a right stream, an honest downstream and no dead link always give RD_OK.
 */
#include "fz_input.h"
#include "fz_transport.h"

#include "engine/rd_engine.h"
#include "util/rd_error.h"
#include "wire/rd_proto.h"
#include "engine/rd_relay.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_check.h"

#define MAX_UP 64   /* upstream frames per run: enough for every path, keeps runs short */

enum { D_HONEST, D_CONFIRM, D_ABORT, D_RAW, D_HANGUP, D_EARLY, D_COUNT };

struct model {
    size_t nfwd;            /* frames that may be forwarded: up[0..nfwd) */
    int ends_well;          /* the last of them is an END with the right totals and checksum */
    uint64_t data_frames, data_bytes;   /* DATA frames among them */
};

struct rl {
    struct fz_tp up, down;
    int down_mode;
    struct fz_msg answer;
    int answered;
    uint8_t frame[RD_FRAME_HDR + FZ_MSG_MAX];
};

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The relay's checks, written again from the protocol description (rd_proto.h, rd_relay.c):
 * 1 if the frame may be forwarded as the next one after `seq` DATA frames. */
static int model_passes(const uint8_t *p, size_t len, uint32_t chunk, uint64_t seq)
{
    if (len < RD_FRAME_HDR || len > RD_FRAME_HDR + (size_t)chunk)
        return 0;   /* short, or larger than the receive buffers: never a frame */
    if (memcmp(p, RD_MAGIC, 4) != 0 || p[4] != RD_PROTO_VERSION)
        return 0;
    uint8_t type = p[5];
    if (type != RD_DATA && type != RD_END && type != RD_ABORT)
        return 0;
    if (get_le(p + 6, 2) != 0 || get_le(p + 12, 4) != 0)
        return 0;
    uint64_t length = get_le(p + 8, 4);
    if (RD_FRAME_HDR + length != len)
        return 0;
    if (type != RD_DATA && length > RD_CTRL_FRAME - RD_FRAME_HDR)
        return 0;
    if (type == RD_DATA && get_le(p + 16, 8) != seq)
        return 0;
    return 1;
}

/* Build the upstream frames from the script, queue them, and work out what may pass. */
static void build_upstream(struct rl *r, struct fz_in *in, uint32_t chunk, struct model *m)
{
    struct fz_msg msg;
    uint64_t seq = 0, bytes = 0;   /* as sealed, for FZ_SEQ / FZ_FIXMAC */
    struct rd_stream_hash sh;
    rd_stream_hash_init(&sh);
    int stopped = 0;
    memset(m, 0, sizeof *m);
    for (int i = 0; i < MAX_UP && fz_next_msg(in, &msg); i++) {
        const uint8_t *fr = msg.bytes;
        size_t len = msg.len;
        if (msg.ctl & FZ_SEAL) {
            uint8_t *pl = r->frame + RD_FRAME_HDR;
            memcpy(pl, msg.bytes, msg.len);
            if (msg.type == RD_END && (msg.ctl & FZ_FIXMAC) && msg.len >= RD_END_LEN) {
                struct rd_end e = { .total_bytes = bytes, .frames = seq, .stream_hash = sh.state };
                rd_end_encode(&e, pl);
            }
            uint64_t s = (msg.ctl & FZ_SEQ) && msg.type == RD_DATA ? seq : 0;
            len = rd_frame_seal(r->frame, msg.type, 0, (uint32_t)msg.len, s);
            if (msg.ctl & FZ_BADSUM)
                r->frame[24] ^= 1;
            fr = r->frame;
            if (msg.type == RD_DATA && (msg.ctl & FZ_SEQ)) {
                rd_stream_hash_add(&sh, seq, (uint32_t)msg.len, get_le(r->frame + 24, 8));
                seq++;
                bytes += msg.len;
            }
        }
        fz_push(&r->up, fr, len);
        if (stopped)
            continue;
        if (!model_passes(fr, len, chunk, m->data_frames)) {
            stopped = 1;
            continue;
        }
        m->nfwd++;
        uint8_t type = fr[5];
        if (type == RD_DATA) {
            m->data_frames++;
            m->data_bytes += len - RD_FRAME_HDR;
            continue;
        }
        stopped = 1;
        if (type == RD_END && len == RD_FRAME_HDR + RD_END_LEN &&
            rd_checksum(fr + RD_FRAME_HDR, RD_END_LEN) == get_le(fr + 24, 8))
            m->ends_well = get_le(fr + RD_FRAME_HDR, 8) == m->data_bytes &&
                           get_le(fr + RD_FRAME_HDR + 8, 8) == m->data_frames;
    }
    fz_close_in(&r->up);   /* then upstream hangs up */
}

static void push_answer(struct rl *r, const uint8_t *end, size_t end_len)
{
    uint8_t *pl = r->frame + RD_FRAME_HDR;
    size_t n = r->answer.len;
    switch (r->down_mode) {
    case D_HONEST:
        if (end_len == RD_FRAME_HDR + RD_END_LEN) {
            memcpy(pl, end + RD_FRAME_HDR, RD_END_LEN);
            fz_push(&r->down, r->frame, rd_frame_seal(r->frame, RD_CONFIRM, 0, RD_END_LEN, 0));
        } else {
            static const char bad[] = "\4\0\0\0malformed END";
            memcpy(pl, bad, sizeof bad - 1);
            fz_push(&r->down, r->frame, rd_frame_seal(r->frame, RD_ABORT, 0, sizeof bad - 1, 0));
        }
        break;
    case D_CONFIRM:
    case D_ABORT:
        if (n > RD_CTRL_FRAME - RD_FRAME_HDR)
            n = RD_CTRL_FRAME - RD_FRAME_HDR;
        memcpy(pl, r->answer.bytes, n);
        fz_push(&r->down, r->frame,
                rd_frame_seal(r->frame, r->down_mode == D_CONFIRM ? RD_CONFIRM : RD_ABORT, 0, (uint32_t)n, 0));
        break;
    case D_RAW:
        fz_push(&r->down, r->answer.bytes, r->answer.len);
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

/* A frame the relay made itself: a well-formed ABORT. */
static int own_abort(const struct fz_frame *f)
{
    struct rd_frame fr;
    struct rd_reason why;
    return rd_frame_parse(f->data, f->len, RD_CTRL_FRAME, &fr) == RD_P_OK && fr.type == RD_ABORT &&
           fr.seq == 0 && rd_frame_verify(&fr) == RD_P_OK &&
           rd_reason_decode(fr.payload, fr.length, &why) == RD_P_OK;
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
        fz_push(&r.down, r.answer.bytes, r.answer.len);
    }

    struct rd_params p = { .chunk_size = chunk, .depth = 8, .streams = 1 };
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
        CHECK(own_abort(&r.down.tx[i]));
    /* upstream: nothing but CONFIRM (at most one) or ABORTs */
    int confirms = 0;
    for (size_t i = 0; i < r.up.ntx; i++) {
        if (r.up.tx[i].len >= 6 && r.up.tx[i].data[5] == RD_CONFIRM)
            confirms++;
        else
            CHECK(own_abort(&r.up.tx[i]));
    }
    if (rc == RD_OK) {
        CHECK(m.ends_well && fwd == m.nfwd);
        CHECK(confirms == 1);
        CHECK(atomic_load(&cnt.bytes) == m.data_bytes && atomic_load(&cnt.frames) == m.data_frames);
        CHECK(r.down_mode == D_HONEST || r.down_mode == D_CONFIRM || r.down_mode == D_RAW || r.down_mode == D_EARLY);
    } else {
        CHECK(rc == RD_ESTREAM || rc == RD_EIO || rc == RD_EAUTH);
        CHECK(confirms == 0 || r.up.fail_send >= 0);   /* a CONFIRM is only sent on the way to RD_OK */
        CHECK(rd_error_msg()[0] != '\0');
        /* a whole, right stream and an honest downstream on live links always gets through */
        CHECK(!(m.ends_well && r.down_mode == D_HONEST && r.down.fail_send < 0 && r.up.fail_send < 0));
    }
    if (getenv("FZ_VERBOSE"))   /* to see what a seed reaches */
        fprintf(stderr, "down mode %d: rc %d, %zu of %zu frames forwarded, ends well %d: %s\n", r.down_mode, rc,
                fwd, m.nfwd, m.ends_well, rd_error_msg());
    fz_free(&r.up);
    fz_free(&r.down);
    rd_error_clear();
    return 0;
}
