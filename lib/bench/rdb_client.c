/* rdb_client.c - the measuring side of rdbench and rdcheck (rdb_net.h): connect, post
 * messages at a depth and time their answers, receive REVERSE traffic, ask INFO and IO.
 * Where it sits: under the sweep (rdb_sweep.c) and rdcheck; over rd_select + rd_session. */
#include "bench/rdb_net.h"

#include "bench/rdb_model.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages ---- */

/* Send one message; for DATA the payload is whatever the buffer holds (nobody reads it). */
int rdb_send_msg(struct rd_transport *tp, const struct rdb_hdr *h, const void *payload)
{
    struct rd_buf *b;
    int rc = tp->ops->get_send_buf(tp, &b);
    if (rc)
        return rc;
    if (RDB_HDR + (size_t)h->len > b->cap) {
        /* the callers bound every size by the agreed chunk: this is a bug, and the buffer
         * can only go back by being sent, so the peer learns it too */
        static const char text[] = "internal error: message larger than the agreed buffers";
        struct rdb_hdr e = { .type = RDB_ERR, .len = sizeof text - 1 };
        rdb_hdr_encode(&e, b->data);
        memcpy(b->data + RDB_HDR, text, sizeof text - 1);
        b->len = RDB_HDR + sizeof text - 1;
        tp->ops->send(tp, b);
        return rd_fail(RD_EUSAGE, "a %u-byte message does not fit the %zu-byte buffers", h->len, b->cap);
    }
    rdb_hdr_encode(h, b->data);
    if (payload && h->len)
        memcpy(b->data + RDB_HDR, payload, h->len);
    b->len = RDB_HDR + (size_t)h->len;
    return tp->ops->send(tp, b);
}

/* Receive and parse one message. An ERR from the peer, or an rdpipe REJECT/ABORT (the peer
 * is rdrecv, not a bench server), becomes the error. */
int rdb_recv_msg(struct rd_transport *tp, int timeout_ms, struct rd_buf **bp, struct rdb_hdr *h,
                 const char *who)
{
    struct rd_buf *b;
    int rc = tp->ops->recv(tp, &b, timeout_ms);
    if (rc)
        return rc;
    int pe = rdb_hdr_decode(b->data, b->len, h);
    if (pe == RDB_P_OK && h->type == RDB_ERR) {
        char text[RDB_TEXT_MAX + 1];
        rdb_text_clean(b->data + RDB_HDR, h->len, text, sizeof text);
        tp->ops->release(tp, b);
        return rd_fail(RD_ESTREAM, "%s %s: %s", who, tp->peer, text);
    }
    if (pe != RDB_P_OK) {
        struct rd_frame f;
        if (pe == RDB_P_MAGIC && rd_frame_parse(b->data, b->len, b->cap, &f) == RD_P_OK &&
            (f.type == RD_REJECT || f.type == RD_ABORT)) {
            /* the peer speaks rdpipe's protocol: an rdrecv (or rdsend) at a bench port; its
             * reason is its view of us ("protocol error from sender ..."): not repeated */
            rc = rd_fail(RD_ESTREAM, "%s %s is an rdrecv or rdsend, not an rdbench --server: it refused "
                         "rdbench's messages", who, tp->peer);
        } else {
            rc = rd_fail(RD_ESTREAM, "%s %s sent a bad message: %s", who, tp->peer, rdb_perr_str(pe));
        }
        tp->ops->release(tp, b);
        return rc;
    }
    *bp = b;
    return RD_OK;
}

static int answer_ms(const struct rdb_conn *c)
{
    return c->answer_ms > 0 ? c->answer_ms : RDB_ANSWER_MS;
}

static int unexpected(struct rd_transport *tp, struct rd_buf *b, const struct rdb_hdr *h, const char *want)
{
    int rc = rd_fail(RD_ESTREAM, "protocol error: expected %s from %s, got %s", want, tp->peer,
                     rdb_type_name(h->type));
    tp->ops->release(tp, b);
    return rc;
}

/* One message from the client, under the guard's eye (a server that stopped reading). */
static int say(struct rdb_conn *c, const struct rdb_hdr *h, const void *payload)
{
    struct rdb_guard *g = c->guarded ? &c->guard : NULL;
    rdb_guard_sending(g, 1);
    int rc = rdb_send_msg(c->tp, h, payload);
    rdb_guard_sending(g, 0);
    return g ? rdb_guard_explain(g, rc) : rc;
}

/* ---- connecting ---- */

void rdb_conn_guard(struct rdb_conn *c, int send_ms)
{
    c->guarded = rdb_guard_start(&c->guard, c->tp, -1, send_ms, -1) == RD_OK;
    if (c->guarded)
        c->guard.of_client = 1;
    else
        rd_error_clear();   /* no thread for it: the connection goes unwatched, no more */
}

int rdb_connect(const struct rd_reach *reach, const struct rd_key *key, uint32_t want_size,
                uint32_t want_depth, struct rdb_conn *c)
{
    memset(c, 0, sizeof *c);
    if (want_size < RD_MIN_CHUNK)
        want_size = RD_MIN_CHUNK;
    struct rd_params want = { .chunk_size = want_size, .depth = want_depth, .streams = 1 };
    int rc = rd_connect_any(reach, &c->tp);
    if (rc)
        return rc;
    rc = rd_session_sender(c->tp, key, &want, &c->agreed);
    /* a smaller depth is the server's limit on what it holds (the caller measures what fits);
     * a smaller message is no point at all */
    if (!rc && (c->agreed.chunk_size < want_size || c->agreed.depth < 1))
        rc = rd_fail(RD_ESTREAM, "server %s grants messages of %u bytes at depth %u, not %u at %u",
                     c->tp->peer, c->agreed.chunk_size, c->agreed.depth, want_size, want_depth);
    /* the server's REJECT names it "receiver", as for rdsend: say it in rdbench's words */
    if (rc == RD_ECONNECT && strstr(rd_error_msg(), RDB_BUSY_TEXT))
        rc = rd_fail_instead(RD_ECONNECT, "server %s is " RDB_BUSY_TEXT ": try again when it is done",
                             c->tp->peer);
    if (rc) {
        c->tp->ops->close(c->tp);
        c->tp = NULL;
        return rc;
    }
    rdb_conn_guard(c, RDB_SEND_MS);
    return RD_OK;
}

void rdb_close(struct rdb_conn *c, int bye)
{
    if (!c->tp)
        return;
    if (bye) {
        struct rdb_hdr h = { .type = RDB_BYE };
        int saved = rd_error_code();
        if (say(c, &h, NULL) == RD_OK)
            c->tp->ops->drain(c->tp);
        if (!saved)
            rd_error_clear();   /* a goodbye that did not arrive changes nothing measured */
    }
    if (c->guarded)
        rdb_guard_stop(&c->guard);
    c->guarded = 0;
    c->tp->ops->close(c->tp);
    c->tp = NULL;
}

/* ---- a point ---- */

int rdb_point(struct rdb_conn *c, uint32_t size, unsigned depth, double min_s, double max_s,
              unsigned min_ops, struct rdb_result *r)
{
    struct rd_transport *tp = c->tp;
    memset(r, 0, sizeof *r);
    if (size > c->agreed.chunk_size || depth == 0 || depth > c->agreed.depth)
        return rd_fail(RD_EUSAGE, "point %u x %u outside the connection's %u x %u", size, depth,
                       c->agreed.chunk_size, c->agreed.depth);
    double *lat = malloc(RDB_LAT_SAMPLES * sizeof *lat), *sent = calloc(depth, sizeof *sent);
    if (!lat || !sent) {
        free(lat);
        free(sent);
        return rd_fail(RD_EIO, "out of memory");
    }
    uint64_t first = c->seq, next = c->seq, acked = c->seq, counted = 0;
    size_t nlat = 0;
    int counting = 0, stopping = 0, rc = RD_OK;
    double t0 = rd_now(), t_start = t0, t_end = t0;
    for (;;) {
        while (!stopping && next - acked < depth) {
            struct rdb_hdr h = { .type = RDB_DATA, .len = size, .seq = next };
            sent[next % depth] = rd_now();
            if ((rc = say(c, &h, NULL)))
                goto out;
            next++;
        }
        if (acked == next)
            break;
        struct rd_buf *b;
        struct rdb_hdr h;
        if ((rc = rdb_recv_msg(tp, answer_ms(c), &b, &h, "server")))
            goto out;
        if (h.type != RDB_ACK) {
            rc = unexpected(tp, b, &h, "ACK");
            goto out;
        }
        tp->ops->release(tp, b);
        if (h.seq != acked) {
            rc = rd_fail(RD_ESTREAM, "server %s answered message %llu, expected %llu", tp->peer,
                         (unsigned long long)h.seq, (unsigned long long)acked);
            goto out;
        }
        double now = rd_now();
        double l = now - sent[acked % depth];
        acked++;
        if (!counting) {
            if (acked - first >= depth) {   /* warmed up: the pipeline is full */
                counting = 1;
                t_start = t_end = now;
            }
        } else {
            counted++;
            t_end = now;
            if (nlat < RDB_LAT_SAMPLES)
                lat[nlat++] = l;
        }
        if ((counting && now - t_start >= min_s && counted >= min_ops) || now - t0 >= max_s)
            stopping = 1;
    }
    if (counted && t_end > t_start) {
        r->ops = counted;
        r->seconds = t_end - t_start;
    } else {   /* too slow to warm up inside max_s: every answer, from the first post */
        r->ops = acked - first;
        r->seconds = t_end > t0 ? t_end - t0 : rd_now() - t0;
    }
    r->ops_per_s = r->seconds > 0 ? (double)r->ops / r->seconds : 0;
    r->bps = r->ops_per_s * size;
    r->p50 = rdb_percentile(lat, nlat, 50);
    r->p99 = rdb_percentile(lat, nlat, 99);
out:
    c->seq = next;
    free(lat);
    free(sent);
    return rc;
}

/* ---- the other direction ---- */

int rdb_reverse(struct rdb_conn *c, uint32_t size, unsigned depth, unsigned ms, struct rdb_result *r)
{
    struct rd_transport *tp = c->tp;
    memset(r, 0, sizeof *r);
    if (size > c->agreed.chunk_size || depth == 0 || depth > c->agreed.depth || ms > RDB_REVERSE_MAX_MS)
        return rd_fail(RD_EUSAGE, "reverse run %u x %u for %u ms outside the connection's %u x %u",
                       size, depth, ms, c->agreed.chunk_size, c->agreed.depth);
    int rc;
    if (!c->reverse_ring) {
        /* our receive ring first: the server may send as soon as it has our request */
        rc = tp->ops->setup_ring(tp, RD_DIR_RECV, RD_FRAME_HDR + (size_t)c->agreed.chunk_size, c->agreed.depth);
        if (rc)
            return rc;
        c->reverse_ring = 1;
    }
    struct rdb_hdr h = { .type = RDB_REVERSE, .a = depth, .b = size, .seq = ms };
    if ((rc = say(c, &h, NULL)))
        return rc;
    uint64_t got = 0, bytes = 0, expect = 0;
    double t0 = 0, t1 = 0;
    /* the run's end: a server that keeps sending past it (every message in time) is not
     * running our REVERSE, and would keep us here forever */
    int answer = answer_ms(c);
    double until = rd_now() + (ms + (double)answer) / 1000;
    for (;;) {
        struct rd_buf *b;
        int left = rd_ms_until(until);
        rc = left > 0 ? rdb_recv_msg(tp, left < answer ? left : answer, &b, &h, "server") : RD_ECONNECT;
        if (rc == RD_ECONNECT && rd_now() >= until)
            return rd_fail_instead(RD_ESTREAM, "server %s did not end its %u ms REVERSE run within %.1f s more",
                                   tp->peer, ms, answer / 1000.0);
        if (rc)
            return rc;
        if (h.type == RDB_END) {
            tp->ops->release(tp, b);
            if (h.seq != got)
                return rd_fail(RD_ESTREAM, "server %s says it sent %llu messages, %llu arrived", tp->peer,
                               (unsigned long long)h.seq, (unsigned long long)got);
            break;
        }
        if (h.type != RDB_DATA)
            return unexpected(tp, b, &h, "DATA or END");
        size_t len = h.len;
        tp->ops->release(tp, b);
        if (h.seq != expect)
            return rd_fail(RD_ESTREAM, "server %s sent message %llu, expected %llu", tp->peer,
                           (unsigned long long)h.seq, (unsigned long long)expect);
        expect++;
        struct rdb_hdr a = { .type = RDB_ACK, .seq = h.seq };
        if ((rc = say(c, &a, NULL)))
            return rc;
        /* the window opens with the first message: its bytes are not counted */
        double now = rd_now();
        if (got++ == 0)
            t0 = now;
        else
            bytes += len;
        t1 = now;
    }
    r->ops = got > 1 ? got - 1 : 0;
    r->seconds = t1 - t0;
    r->bps = r->seconds > 0 ? (double)bytes / r->seconds : 0;
    r->ops_per_s = r->seconds > 0 ? (double)r->ops / r->seconds : 0;
    return RD_OK;
}

/* ---- questions ---- */

int rdb_get_info(struct rdb_conn *c, struct rdb_info *info)
{
    struct rdb_hdr h = { .type = RDB_INFO_REQ };
    struct rd_buf *b;
    int rc = say(c, &h, NULL);
    if (!rc)
        rc = rdb_recv_msg(c->tp, answer_ms(c), &b, &h, "server");
    if (rc)
        return rc;
    if (h.type != RDB_INFO)
        return unexpected(c->tp, b, &h, "INFO");
    rdb_info_decode(b->data + RDB_HDR, h.len, info);
    c->tp->ops->release(c->tp, b);
    return RD_OK;
}

int rdb_get_io(struct rdb_conn *c, uint64_t bytes, struct rdb_io *io, int *has)
{
    struct rdb_hdr h = { .type = RDB_IO_REQ, .b = bytes };
    struct rd_buf *b;
    int rc = say(c, &h, NULL);
    *has = 0;
    /* the server writes and reads its scratch file first: give it time */
    if (!rc)
        rc = rdb_recv_msg(c->tp, 10 * 60 * 1000, &b, &h, "server");
    if (rc)
        return rc;
    if (h.type != RDB_IO)
        return unexpected(c->tp, b, &h, "IO");
    if (h.len) {
        int pe = rdb_io_decode(b->data + RDB_HDR, h.len, io);
        c->tp->ops->release(c->tp, b);
        if (pe)
            return rd_fail(RD_ESTREAM, "server %s sent malformed IO results", c->tp->peer);
        *has = 1;
        return RD_OK;
    }
    c->tp->ops->release(c->tp, b);
    return RD_OK;
}
