/* fuzz_bench_client.c - the bench client (rdbench, rdcheck) after the handshake, against a
 * hostile server whose frames are the input, over the scripted transport: rdb_recv_msg (an
 * ERR, and the REJECT/ABORT of an rdpipe peer), rdb_get_info, rdb_point, rdb_reverse,
 * rdb_get_io, rdb_close; and rdcheck's parser of the agent's ready line (rdb_ready_parse) on
 * the raw input. fuzz_bench covers the server side.
 *
 * Input: chunk:u16 (x 1 KiB, 4 KiB .. 64 KiB), depth:u8 (1..16), plan:u8, then messages
 * (fz_input.h), one handed out per receive, when the client asks (a server that answers what
 * it was just sent). plan's bits pick the calls, in this order: 1 INFO, 2 a point at
 * (chunk, depth), 4 REVERSE (chunk / 2, depth, 1 ms), 8 IO, 16 a point at (4 KiB, 1); the
 * client stops at the first that fails, and says BYE only if none did. A point ends after
 * depth + 1 answers (min_s 0, min_ops 1; its 10 s never pass here: the transport never waits),
 * so a script's answers fall to the same calls every run. A message with FZ_SEAL:
 * its first 20 bytes are a:u32 seq:u64 b:u64, the rest the payload, wrapped in a valid bench
 * header of `type`; FZ_SEQ gives an ACK the number the client waits for, and a DATA or END of a
 * REVERSE run the count of DATA so far. With FZ_FIXMAC instead: the bytes are the payload of an
 * rdpipe frame of `type` (a REJECT or ABORT with its reason: an rdrecv at a bench port).
 * Otherwise the bytes are the frame as sent.
 *
 * Checked: all the client sends is a bench frame of a client's type, within its buffers and
 * the agreed chunk and depth; it keeps at most `depth` DATA unanswered; it ACKs a REVERSE DATA
 * with its number, and only in a run; BYE only after every call succeeded; a call's error is a
 * documented code with one printable line; results are consistent (p50 <= p99, a REVERSE counts
 * no more DATA than came). A ready line that parses has a port 1..65535, known transports and
 * a range of ports or "?". */
#include "fz_input.h"
#include "fz_transport.h"

#include "bench/rdb_io.h"
#include "bench/rdb_msg.h"
#include "bench/rdb_net.h"
#include "util/rd_error.h"
#include "wire/rd_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_check.h"

struct st {
    struct fz_tp t;
    struct rd_params agreed;
    struct fz_in in;
    /* what the client sent and was handed, kept by the hooks */
    uint64_t data_sent;        /* DATA of points */
    uint64_t acks_taken;       /* ACKs handed out with the number the client waited for */
    int in_reverse;
    uint64_t rev_data;         /* DATA of the current REVERSE run handed out */
    uint64_t rev_acked;
    int bye;
};

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* The client is about to receive: hand it the next message of the script, or the end. */
static void on_read(struct fz_tp *t, void *arg)
{
    struct st *s = arg;
    static uint8_t frame[RD_FRAME_HDR + FZ_MSG_MAX];
    struct fz_msg m;
    if (!fz_next_msg(&s->in, &m)) {
        fz_close_in(t);
        return;
    }
    size_t len = m.len;
    if ((m.ctl & FZ_SEAL) && m.len >= 20) {
        struct rdb_hdr h = { .type = m.type, .len = (uint32_t)(m.len - 20), .a = get32(m.bytes),
                             .seq = get64(m.bytes + 4), .b = get64(m.bytes + 12) };
        if (m.ctl & FZ_SEQ)
            h.seq = h.type == RDB_ACK ? s->acks_taken : s->rev_data;
        rdb_hdr_encode(&h, frame);
        memcpy(frame + RDB_HDR, m.bytes + 20, m.len - 20);
        len = RDB_HDR + m.len - 20;
    } else if (m.ctl & FZ_FIXMAC) {
        memcpy(frame + RD_FRAME_HDR, m.bytes, m.len);
        len = rd_frame_seal(frame, m.type, 0, (uint32_t)m.len, 0);
    } else {
        memcpy(frame, m.bytes, m.len);
    }
    /* what the client will take as the answer it waits for (it fits its buffers, and has the
     * number it waits for), however it was made */
    struct rdb_hdr h;
    size_t cap = t->ring_recv ? t->ring_recv : RD_CTRL_FRAME;
    if (len <= cap && rdb_hdr_decode(frame, len, &h) == RDB_P_OK) {
        if (h.type == RDB_ACK && !s->in_reverse && h.seq == s->acks_taken)
            s->acks_taken++;
        else if (h.type == RDB_DATA && s->in_reverse && h.seq == s->rev_data)
            s->rev_data++;
        else if (h.type == RDB_END && s->in_reverse && h.seq == s->rev_data)
            s->in_reverse = 0;   /* the run is over */
    }
    fz_push(t, frame, len);
}

static void check_sent(struct fz_tp *t, const uint8_t *frame, size_t len, void *arg)
{
    struct st *s = arg;
    struct rdb_hdr h;
    (void)t;
    CHECK(!s->bye);   /* nothing after BYE, and nothing but ACKs inside a REVERSE run */
    if (s->in_reverse)
        CHECK(rdb_hdr_decode(frame, len, &h) == RDB_P_OK && h.type == RDB_ACK);
    CHECK(rdb_hdr_decode(frame, len, &h) == RDB_P_OK);
    switch (h.type) {
    case RDB_DATA:
        CHECK(!s->in_reverse && h.len <= s->agreed.chunk_size);
        CHECK(h.seq == s->data_sent);
        s->data_sent++;
        CHECK(s->data_sent - s->acks_taken <= s->agreed.depth);
        break;
    case RDB_ACK:   /* answers a REVERSE DATA, the one it got last */
        CHECK(s->in_reverse && h.seq == s->rev_acked && s->rev_acked < s->rev_data);
        s->rev_acked++;
        break;
    case RDB_REVERSE:
        CHECK(h.a >= 1 && h.a <= s->agreed.depth && h.b <= s->agreed.chunk_size && h.seq <= RDB_REVERSE_MAX_MS);
        s->in_reverse = 1;
        s->rev_data = s->rev_acked = 0;
        break;
    case RDB_INFO_REQ:
    case RDB_IO_REQ:
        CHECK(!s->in_reverse);
        break;
    case RDB_BYE:
        s->bye = 1;
        break;
    default:
        CHECK(!"the client sent a server's message");
    }
}

/* A failed call: a documented code, one printable line. */
static void check_error(int rc)
{
    CHECK(rc == RD_ESTREAM || rc == RD_ECONNECT || rc == RD_EAUTH || rc == RD_EIO);
    const char *msg = rd_error_msg();
    CHECK(msg[0]);
    for (const char *p = msg; *p; p++)
        CHECK((unsigned char)*p >= 0x20 && (unsigned char)*p != 0x7f);
}

static void ready_line(const uint8_t *data, size_t size)
{
    char line[256];
    size_t n = size < sizeof line - 1 ? size : sizeof line - 1;
    memcpy(line, data, n);
    line[n] = '\0';
    struct rdb_ready r;
    if (rdb_ready_parse(line, &r))
        return;
    char *end;
    long port = strtol(r.port, &end, 10);
    CHECK(!*end && port >= 1 && port <= 65535);
    CHECK(!strcmp(r.kinds, "tcp") || !strcmp(r.kinds, "rdma") || !strcmp(r.kinds, "tcp,rdma"));
    CHECK(!strcmp(r.range, "?") || (r.range[0] && strspn(r.range, "0123456789-") == strlen(r.range)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ready_line(data, size);
    static struct st s;
    memset(&s, 0, sizeof s);
    s.in = (struct fz_in){ data, size };
    unsigned chunk_k = (unsigned)fz_byte(&s.in) | (unsigned)fz_byte(&s.in) << 8;
    s.agreed.chunk_size = (4 + chunk_k % 61) * 1024u;
    s.agreed.depth = fz_byte(&s.in) % 16 + 1;
    unsigned plan = fz_byte(&s.in);
    fz_init(&s.t, "fuzz:server");
    s.t.on_send = check_sent;
    s.t.on_recv = on_read;
    s.t.arg = &s;
    s.t.ring_send = RD_FRAME_HDR + s.agreed.chunk_size;   /* as rd_session_sender leaves it */
    struct rdb_conn c = { .tp = &s.t.tp, .agreed = s.agreed };
    struct rdb_result r;
    int rc = RD_OK;
    if (!rc && (plan & 1)) {
        struct rdb_info info;
        rc = rdb_get_info(&c, &info);
    }
    if (!rc && (plan & 2)) {
        rc = rdb_point(&c, s.agreed.chunk_size, s.agreed.depth, 0, 10, 1, &r);
        if (!rc)
            CHECK(r.ops <= s.acks_taken && r.p50 <= r.p99 && r.bps >= 0);
    }
    if (!rc && (plan & 4)) {
        rc = rdb_reverse(&c, s.agreed.chunk_size / 2, s.agreed.depth, 1, &r);
        if (!rc)
            CHECK(r.ops < s.rev_data + 1 && r.bps >= 0);
    }
    if (!rc && (plan & 8)) {
        struct rdb_io io;
        int has = 0;
        rc = rdb_get_io(&c, RDB_IO_MIN, &io, &has);
    }
    if (!rc && (plan & 16))
        rc = rdb_point(&c, 4096, 1, 0, 10, 1, &r);
    if (rc)
        check_error(rc);
    if (getenv("FZ_VERBOSE"))   /* what the input reaches */
        fprintf(stderr, "plan %u: rc %d (%s), %llu DATA sent, %llu ACKs taken, %llu REVERSE DATA\n", plan, rc,
                rc ? rd_error_msg() : "ok", (unsigned long long)s.data_sent, (unsigned long long)s.acks_taken,
                (unsigned long long)s.rev_data);
    rdb_close(&c, rc == RD_OK);
    CHECK(s.bye == (rc == RD_OK));
    fz_free(&s.t);
    rd_error_clear();
    return 0;
}
