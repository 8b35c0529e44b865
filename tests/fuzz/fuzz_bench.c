/* fuzz_bench.c - the bench server (rdbench --server, rdrecv --check) after the handshake,
 * against a hostile client whose messages are the input, over the scripted transport; and
 * the bench decoders (rdb_hdr_decode, rdb_info_decode, rdb_io_decode) on the raw input.
 *
 * Input: chunk:u16 (x 1 KiB, 4 KiB .. 64 KiB), depth:u8 (1..16), then messages (fz_input.h).
 * With FZ_SEAL the message's first 20 bytes are a:u32 seq:u64 b:u64 and the rest the payload:
 * the target writes a valid bench header of `type` around them; without, the bytes are the
 * frame as sent. FZ_SEQ on an ACK numbers it after the ACKs scripted since the last REVERSE
 * (a client that plays a REVERSE run right).
 *
 * Checked: everything the server sends decodes (a bench frame, or the one rdpipe ABORT it
 * tells an rdsend with) and fits the agreed ring; it answers each DATA with one ACK of the same
 * number before anything else; in a REVERSE run it keeps at most `depth` DATA unanswered,
 * each at most the agreed chunk, and its END counts them; it ends with *bye only after a BYE;
 * an ERR is its last word. Decoded info is printable, in its fields, and survives a round trip. */
#include "fz_input.h"
#include "fz_transport.h"

#include "bench/rdb_msg.h"
#include "bench/rdb_net.h"
#include "util/rd_error.h"
#include "wire/rd_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_check.h"

#define MAX_PUSHED 4096

struct st {
    struct fz_tp t;
    struct rd_params agreed;
    uint8_t ok[MAX_PUSHED];       /* pushed frame i decodes (and fits the ring) */
    struct rdb_hdr hdr[MAX_PUSHED];
    /* what the server has read and owes, kept as it reads (on_recv) and sends (on_send) */
    uint64_t owed[MAX_PUSHED];    /* DATA read and not answered yet, oldest first */
    size_t nowed;
    int in_reverse;
    unsigned rev_depth;
    uint64_t rev_size, rev_sent, rev_acked;
    int ended;                    /* the server sent ERR or ABORT */
    int saw_bye;                  /* the server read a BYE */
};

/* The server is about to read the next frame: it answered everything before it. */
static void on_read(struct fz_tp *t, void *arg)
{
    struct st *s = arg;
    size_t k = t->rx_head;
    CHECK(s->nowed == 0);
    if (k >= t->nrx || k >= MAX_PUSHED || !s->ok[k])
        return;
    const struct rdb_hdr *h = &s->hdr[k];
    switch (h->type) {
    case RDB_DATA:
        if (!s->in_reverse)
            s->owed[s->nowed++] = h->seq;
        break;
    case RDB_ACK:
        s->rev_acked += s->in_reverse;
        break;
    case RDB_BYE:
        s->saw_bye = 1;
        break;
    case RDB_REVERSE:
        if (!s->in_reverse && h->a >= 1 && h->a <= s->agreed.depth && h->b <= s->agreed.chunk_size &&
            h->seq <= RDB_REVERSE_MAX_MS) {
            s->in_reverse = 1;
            s->rev_depth = h->a;
            s->rev_size = h->b;
            s->rev_sent = s->rev_acked = 0;
        }
        break;
    }
}

static void check_sent(struct fz_tp *t, const uint8_t *frame, size_t len, void *arg)
{
    struct st *s = arg;
    struct rdb_hdr h;
    (void)t;
    CHECK(!s->ended);   /* nothing after an ERR or ABORT */
    int pe = rdb_hdr_decode(frame, len, &h);
    if (pe == RDB_P_MAGIC) {
        struct rd_frame f;
        CHECK(rd_frame_parse(frame, len, RD_CTRL_FRAME, &f) == RD_P_OK && f.type == RD_ABORT);
        s->ended = 1;
        return;
    }
    CHECK(pe == RDB_P_OK);
    CHECK(s->nowed == 0 || h.type == RDB_ACK || h.type == RDB_ERR);   /* ACKs first */
    switch (h.type) {
    case RDB_ACK:
        CHECK(s->nowed > 0 && h.seq == s->owed[0]);
        memmove(s->owed, s->owed + 1, (s->nowed - 1) * sizeof s->owed[0]);
        s->nowed--;
        break;
    case RDB_DATA:
        CHECK(s->in_reverse);
        CHECK(h.len == s->rev_size && h.len <= s->agreed.chunk_size);
        CHECK(h.seq == s->rev_sent);
        s->rev_sent++;
        CHECK(s->rev_sent - s->rev_acked <= s->rev_depth);
        break;
    case RDB_END:
        CHECK(s->in_reverse && h.seq == s->rev_sent && s->rev_acked == s->rev_sent);
        s->in_reverse = 0;
        break;
    case RDB_ERR:
        s->ended = 1;
        break;
    case RDB_INFO: {
        struct rdb_info info;
        CHECK(rdb_info_decode(frame + RDB_HDR, h.len, &info) == 0);
        break;
    }
    case RDB_IO:
        CHECK(h.len == 0);   /* this server has no --io */
        break;
    default:
        CHECK(!"the server sent a client's message");
    }
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void printable(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    CHECK(n < cap);
    for (size_t i = 0; i < n; i++)
        CHECK(s[i] >= 0x20 && s[i] < 0x7f);
}

static void decoders(const uint8_t *data, size_t size)
{
    struct rdb_hdr h;
    int pe = rdb_hdr_decode(data, size, &h);
    CHECK(pe <= RDB_P_OK && pe >= RDB_P_LENGTH);
    if (pe == RDB_P_OK) {
        uint8_t again[RDB_HDR];
        rdb_hdr_encode(&h, again);
        CHECK(memcmp(again, data, RDB_HDR) == 0);
        CHECK(RDB_HDR + (size_t)h.len == size);
    }
    struct rdb_info in, out;
    rdb_info_decode(data, size, &in);
    printable(in.host, sizeof in.host);
    printable(in.version, sizeof in.version);
    printable(in.desc, sizeof in.desc);
    printable(in.range, sizeof in.range);
    printable(in.io, sizeof in.io);
    CHECK(in.ndev <= RDB_INFO_DEVS);
    for (unsigned i = 0; i < in.ndev; i++) {
        printable(in.dev[i].name, sizeof in.dev[i].name);
        printable(in.dev[i].netdev, sizeof in.dev[i].netdev);
        CHECK(in.dev[i].name[0] && !strchr(in.dev[i].name, ' '));
    }
    char text[RDB_TEXT_MAX];
    size_t n = rdb_info_encode(&in, text, sizeof text);
    if (n) {
        CHECK(rdb_info_decode((const uint8_t *)text, n, &out) == 0);
        CHECK(!strcmp(in.host, out.host) && !strcmp(in.desc, out.desc) && !strcmp(in.range, out.range));
        CHECK(in.ndev == out.ndev);
        for (unsigned i = 0; i < in.ndev; i++)
            CHECK(!strcmp(in.dev[i].name, out.dev[i].name) && in.dev[i].mtu == out.dev[i].mtu &&
                  in.dev[i].port == out.dev[i].port && in.dev[i].netdev_mtu == out.dev[i].netdev_mtu &&
                  !strcmp(in.dev[i].netdev, out.dev[i].netdev));
    }
    struct rdb_io io;
    if (rdb_io_decode(data, size, &io) == RDB_P_OK) {
        uint8_t again[RDB_IO_LEN];
        rdb_io_encode(&io, again);
        CHECK(memcmp(again, data, RDB_IO_LEN) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decoders(data, size);
    static struct st s;
    static uint8_t frame[RDB_HDR + FZ_MSG_MAX];
    struct fz_in in = { data, size };
    memset(&s, 0, sizeof s);
    unsigned chunk_k = (unsigned)fz_byte(&in) | (unsigned)fz_byte(&in) << 8;
    s.agreed.chunk_size = (4 + chunk_k % 61) * 1024u;
    s.agreed.depth = fz_byte(&in) % 16 + 1;
    fz_init(&s.t, "fuzz:client");
    s.t.on_send = check_sent;
    s.t.on_recv = on_read;
    s.t.arg = &s;
    /* as rd_session_receiver leaves it: the receive ring of the agreed size */
    s.t.ring_recv = RD_FRAME_HDR + s.agreed.chunk_size;
    uint64_t acks = 0;   /* ACKs scripted since the last REVERSE (for FZ_SEQ) */
    struct fz_msg m;
    while (s.t.nrx < MAX_PUSHED && fz_next_msg(&in, &m)) {
        size_t len = m.len;
        if (m.ctl & FZ_SEAL) {
            if (m.len < 20)
                continue;
            struct rdb_hdr h = { .type = m.type, .len = (uint32_t)(m.len - 20), .a = get32(m.bytes),
                                 .seq = get64(m.bytes + 4), .b = get64(m.bytes + 12) };
            if (h.type == RDB_ACK && (m.ctl & FZ_SEQ))
                h.seq = acks;
            rdb_hdr_encode(&h, frame);
            memcpy(frame + RDB_HDR, m.bytes + 20, m.len - 20);
            len = RDB_HDR + m.len - 20;
        } else {
            memcpy(frame, m.bytes, m.len);
        }
        size_t i = s.t.nrx;
        s.ok[i] = len <= s.t.ring_recv && rdb_hdr_decode(frame, len, &s.hdr[i]) == RDB_P_OK;
        if (s.ok[i] && s.hdr[i].type == RDB_REVERSE)
            acks = 0;
        if (s.ok[i] && s.hdr[i].type == RDB_ACK)
            acks++;
        fz_push(&s.t, frame, len);
    }
    fz_close_in(&s.t);
    struct rdb_server_cfg cfg = { 0 };
    int bye = 0;
    int rc = rdb_serve_conn(&s.t.tp, &s.agreed, &cfg, NULL, &bye);
    CHECK(rc == RD_OK || rc == RD_ESTREAM || rc == RD_ECONNECT || rc == RD_EIO);
    CHECK(bye != 1 || (rc == RD_OK && s.saw_bye));
    CHECK(bye != -1 || rc != RD_OK);   /* a client that is not rdbench is refused */
    CHECK(rc != RD_OK || bye == 1);    /* it stops without an error only at a BYE */
    fz_free(&s.t);
    rd_error_clear();
    return 0;
}
