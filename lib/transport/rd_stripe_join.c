/* rd_stripe_join.c - gathering the connections of --streams, after the handshake on the first.
 *
 * The sender opens the other connections and starts each with JOIN (its stripe number and a
 * MAC under the session's join key); the receiver takes them from its listener, whichever
 * speaks first, turning away what is not a stripe of this session. */
#include "transport/rd_stripe.h"
#include "util/rd_clock.h"

#include "util/rd_error.h"
#include "transport/rd_session.h"
#include "transport/rd_tcp.h"
#include "transport/rd_waiting.h"

/* --streams, sender: open the other connections, JOIN each, and replace *tp (connection 0)
 * by the striped transport over all of them. On failure *tp is still connection 0. */
int rd_stripe_join(const struct rd_reach *o, struct rd_transport **tp, const struct rd_params *agreed)
{
    struct rd_transport *conns[RD_MAX_STREAMS] = { *tp };
    struct rd_reach d = *o;
    d.transport = RD_T_TCP;
    unsigned n = 1;
    int rc = RD_OK;
    while (!rc && n < agreed->streams) {
        rc = rd_connect_any(&d, &conns[n]);
        if (rc)
            break;
        rc = rd_session_join(conns[n], agreed, n);
        n++;
    }
    if (rc) {
        rd_send_reason(conns[0], RD_ABORT, rc, rd_error_msg());
        for (unsigned i = 1; i < n; i++)
            conns[i]->ops->close(conns[i]);
        return rc;
    }
    struct rd_transport *st = rd_stripe_new(conns, n);
    *tp = st;
    if (!st)
        return rd_fail(RD_EIO, "out of memory");
    return st->ops->setup_ring(st, RD_DIR_SEND, RD_FRAME_HDR + (size_t)agreed->chunk_size, agreed->depth);
}

/* --streams, receiver: the sender's other connections JOIN through our listener; then *tpp
 * (connection 0) becomes the striped transport over all of them. Connections that are not
 * stripes of this session are turned away with one line each, silent ones cannot keep the
 * stripes out (rd_waiting), and connection 0 is watched meanwhile: a sender that gives up
 * or dies ends the wait at once. */
struct joining {
    struct rd_transport *conns[RD_MAX_STREAMS];
    unsigned char taken[RD_MAX_STREAMS];
    unsigned got;
    struct rd_waiting waiting;
};

static void turn_away(struct rd_transport *c)
{
    rd_report();
    rd_error_clear();
    c->ops->close(c);
}

/* Connection 0 spoke while stripes were due: the sender gave up (ABORT) or went away. */
static int sender_gone(struct rd_transport *tp)
{
    struct rd_buf *b;
    struct rd_frame f;
    if (rd_recv_ctrl(tp, 1000, &b, &f)) {
        rd_error_clear();
        return rd_fail(RD_ESTREAM, "sender %s went away before all its connections joined", tp->peer);
    }
    int rc = f.type == RD_ABORT ? rd_fail_from_reason(&f, "sender")
                                : rd_fail(RD_ESTREAM, "protocol error: sender %s sent %s before its stripes",
                                          tp->peer, rd_frame_type_name(f.type));
    tp->ops->release(tp, b);
    return rc;
}

static int gather_stripes(struct rd_listener *lis, struct joining *j, const struct rd_params *agreed)
{
    double deadline = rd_now() + RD_JOIN_WAIT_MS / 1000.0;
    while (j->got < agreed->streams) {
        double left = deadline - rd_now();
        struct rd_transport *c;
        uint32_t idx;
        if (left <= 0 || rd_waiting_next(&j->waiting, lis, rd_tcp_fd(j->conns[0]), (int)(left * 1000) + 1, &c)) {
            rd_error_clear();
            return rd_fail(RD_ESTREAM, "only %u of the sender's %u connections arrived", j->got,
                           agreed->streams);
        }
        if (!c)
            return sender_gone(j->conns[0]);
        if (!rd_tcp_is(c)) {
            rd_fail(RD_ESTREAM, "connection from %s: a stripe must come over TCP", c->peer);
            turn_away(c);
        } else if (rd_session_accept_join(c, agreed, j->taken, &idx) == RD_OK) {
            j->conns[idx] = c;
            j->taken[idx] = 1;
            j->got++;
        } else {
            turn_away(c);
        }
    }
    return RD_OK;
}

int rd_stripe_accept(struct rd_listener *lis, struct rd_transport **tpp, const struct rd_params *agreed)
{
    struct joining j = { .conns = { *tpp }, .taken = { 1 }, .got = 1 };
    int rc = gather_stripes(lis, &j, agreed);
    rd_waiting_close(&j.waiting);
    if (rc) {
        rd_send_reason(*tpp, RD_ABORT, rc, rd_error_msg());
        for (unsigned i = 1; i < agreed->streams; i++)
            if (j.conns[i])
                j.conns[i]->ops->close(j.conns[i]);
        return rc;
    }
    struct rd_transport *st = rd_stripe_new(j.conns, j.got);
    *tpp = st;
    if (!st)
        return rd_fail(RD_EIO, "out of memory");
    return st->ops->setup_ring(st, RD_DIR_RECV, RD_FRAME_HDR + (size_t)agreed->chunk_size, agreed->depth);
}

