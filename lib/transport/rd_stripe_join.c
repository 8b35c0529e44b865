/* rd_stripe_join.c - gathering the connections of --streams, after the handshake on the first.
 *
 * The sender opens the other connections and starts each with JOIN (its stripe number and a
 * MAC under the session's join key); the receiver takes them from its listener and runs
 * their JOINs at once (rd_waiting), turning away what is not a stripe of this session. */
#include "transport/rd_stripe.h"
#include "util/rd_clock.h"

#include "util/rd_error.h"
#include "transport/rd_session.h"
#include "transport/rd_tcp.h"
#include "transport/rd_waiting.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* A receiver runs the handshakes of all its connections at once, and one of our stripes can
 * reach its listener in the instant between the ACCEPT it sent us and its noticing that this
 * session won. It keeps such a stripe for its stripes' set (rd_waiting: stripes_later), but
 * one whose JOIN came in two pieces goes to a handshake, which fails it unanswered. So a
 * stripe whose JOIN meets a closed connection (not a REJECT for its MAC) is opened again
 * after a short pause, doubling, for a second at most in all. */
#define JOIN_RETRY_FIRST_S 0.005
#define JOIN_RETRY_FOR_S 1.0

/* --streams, sender: open the other connections, JOIN each, and replace *tp (connection 0)
 * by the striped transport over all of them. On failure *tp is still connection 0. */
int rd_stripe_join(const struct rd_reach *o, struct rd_transport **tp, const struct rd_params *agreed)
{
    struct rd_transport *conns[RD_MAX_STREAMS] = { *tp };
    enum rd_transport_choice same = rd_tcp_is(*tp) ? RD_T_TCP : RD_T_RDMA;   /* as connection 0 */
    unsigned n = 1;
    int rc = RD_OK;
    double t0 = rd_now(), pause = JOIN_RETRY_FIRST_S;
    while (!rc && n < agreed->streams) {
        struct rd_rail rail;
        struct rd_reach d = rd_reach_rail(o, n, &rail);   /* connection n's rail */
        d.transport = same;
        rc = rd_connect_any(&d, &conns[n]);
        if (rc)
            break;
        /* the receiver gives up on the stripes after RD_JOIN_WAIT_MS (saying why on
         * connection 0): no point waiting longer for an ACCEPT, nor past --timeout */
        int wait = (*tp)->answer_ms > 0 ? (*tp)->answer_ms : RD_SENDER_WAIT_MS;
        conns[n]->answer_ms = wait < RD_JOIN_WAIT_MS + 1000 ? wait : RD_JOIN_WAIT_MS + 1000;
        rc = rd_session_join(conns[n], agreed, n);
        if (rc == RD_ESTREAM && rd_now() + pause < t0 + JOIN_RETRY_FOR_S) {
            conns[n]->ops->close(conns[n]);
            rd_error_clear();
            rc = RD_OK;
            struct timespec ts = { 0, (long)(pause * 1e9) };
            nanosleep(&ts, NULL);
            pause *= 2;
            continue;
        }
        n++;
    }
    if (rc) {
        /* the receiver may have said why on connection 0 (the stripes did not all come): its
         * reason is the one to show, exit 4, not our own wait's */
        struct rd_buf *b;
        struct rd_frame f;
        if (rd_recv_ctrl_quiet(conns[0], 200, &b, &f) == RD_OK) {
            if (f.type == RD_ABORT || f.type == RD_REJECT) {
                char whom[200];
                snprintf(whom, sizeof whom, "receiver %s", conns[0]->peer);
                rd_error_clear();   /* no other thread of this transfer runs yet */
                rc = rd_fail_from_reason(&f, whom);
            }
            conns[0]->ops->release(conns[0], b);
        }
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
 * (connection 0) becomes the striped transport over all of them. Every connection that
 * arrives meanwhile runs its JOIN at the same time as the others (rd_waiting), so one that
 * stalls, silent or in the middle of a frame, cannot keep the stripes out; those that are not
 * stripes of this session are turned away with one line each. Connection 0 is watched
 * meanwhile: a sender that gives up or dies ends the wait at once. */
/* The stripes JOIN threads have answered ACCEPT for: a stripe is claimed under the lock before
 * its ACCEPT goes out, so two JOINs for one stripe running at once cannot both be accepted. */
struct claims {
    pthread_mutex_t lock;
    unsigned char claimed[RD_MAX_STREAMS];
};

struct join_arg {
    struct rd_params agreed;
    const struct rd_transport_ops *ops;    /* connection 0's: every stripe's kind */
    unsigned char taken[RD_MAX_STREAMS];   /* each JOIN gets a copy as it was when it arrived */
    struct claims *claims;                 /* shared by every copy */
};

struct joining {
    struct rd_transport *conns[RD_MAX_STREAMS];
    struct join_arg arg;                   /* arg.taken: the stripes we have */
    unsigned got;
    struct rd_waiting *waiting;
};

static int join(struct rd_transport *c, void *arg, void *index)
{
    const struct join_arg *a = arg;
    if (c->ops != a->ops)
        return rd_fail(RD_ESTREAM, "connection from %s: a stripe must come over %s like the first",
                       c->peer, a->ops->name);
    uint32_t idx;
    int rc = rd_session_read_join(c, &a->agreed, &idx);
    if (rc)
        return rc;
    pthread_mutex_lock(&a->claims->lock);
    int mine = !a->claims->claimed[idx];
    a->claims->claimed[idx] = 1;
    pthread_mutex_unlock(&a->claims->lock);
    if (!mine)
        return rd_session_refuse_join(c);
    *(uint32_t *)index = idx;
    return rd_send_ctrl(c, RD_ACCEPT, NULL, 0);
}

/* What connection 0 holds, looked at without taking it (the transport's peek; TCP's frames
 * start with a 4-byte length, then the header): n bytes of the next frame's header, 0 when
 * nothing came, -1 when the peer hung up. */
static int peek(struct rd_transport *tp, uint8_t *head, size_t n)
{
    if (tp->ops->peek)
        return tp->ops->peek(tp, head, n);
    uint8_t buf[4 + 16];
    ssize_t got;
    if (!rd_tcp_is(tp) || n > sizeof buf - 4)
        return 0;
    do
        got = recv(rd_tcp_fd(tp), buf, 4 + n, MSG_PEEK | MSG_DONTWAIT);
    while (got < 0 && errno == EINTR);
    if (got == 0 || (got < 0 && errno != EAGAIN))
        return -1;
    if (got <= 4)
        return 0;
    memcpy(head, buf + 4, (size_t)got - 4);
    return (int)got - 4;
}

static int watch_fd(struct rd_transport *tp)
{
    return tp->ops->watch_fd ? tp->ops->watch_fd(tp) : rd_tcp_is(tp) ? rd_tcp_fd(tp) : -1;
}

enum { QUIET, SPOKE, GAVE_UP };

/* Connection 0 may have spoken while stripes were due. An ABORT, or nothing but a hang-up,
 * means the sender gave up or went away. Anything else means it has its stripes' ACCEPTs
 * already, sent by JOIN threads an instant before this loop saw them finish (rd_waiting):
 * keep gathering. Peeked, so the frame stays for sender_gone or the stream: magic at 0, type
 * at 5 (rd_proto.h). QUIET: nothing yet (a transport whose watch fired for its own traffic). */
static int sender_gave_up(struct rd_transport *tp)
{
    uint8_t head[6];
    int got = peek(tp, head, sizeof head);
    if (got < 0)
        return GAVE_UP;
    if (got == 0)   /* TCP's socket polled readable: a frame's first bytes at least */
        return tp->ops->peek ? QUIET : SPOKE;
    return got == (int)sizeof head && !memcmp(head, RD_MAGIC, 4) && head[5] == RD_ABORT ? GAVE_UP : SPOKE;
}

/* Connection 0 spoke while stripes were due: the sender gave up (ABORT) or went away. */
static int sender_gone(struct rd_transport *tp)
{
    struct rd_buf *b;
    struct rd_frame f;
    if (rd_recv_ctrl(tp, 1000, &b, &f)) {
        return rd_fail_instead(RD_ESTREAM, "sender %s went away before all its connections joined", tp->peer);
    }
    int rc = f.type == RD_ABORT ? rd_fail_from_reason(&f, "sender")
                                : rd_fail(RD_ESTREAM, "protocol error: sender %s sent %s before its stripes",
                                          tp->peer, rd_frame_type_name(f.type));
    tp->ops->release(tp, b);
    return rc;
}

/* The JOINs still running stop before an error is recorded: their threads must not race it. */
static int gather_stripes(struct rd_listener *lis, struct joining *j, const struct rd_params *agreed)
{
    double deadline = rd_now() + RD_JOIN_WAIT_MS / 1000.0;
    int watch = watch_fd(j->conns[0]);
    while (j->got < agreed->streams) {
        double left = deadline - rd_now();
        struct rd_transport *c;
        uint32_t idx;
        if (left <= 0 || rd_waiting_next(j->waiting, lis, watch, (int)(left * 1000) + 1, &c, &idx)) {
            rd_waiting_free(j->waiting);
            j->waiting = NULL;
            return rd_fail_instead(RD_ESTREAM, "only %u of the sender's %u connections arrived", j->got,
                                   agreed->streams);
        }
        int said = c ? QUIET : sender_gave_up(j->conns[0]);
        if (!c && said == QUIET)
            continue;
        if (!c && said == SPOKE) {
            watch = -1;   /* the stripes it has are finishing here: the deadline still holds */
            continue;
        }
        if (!c) {
            rd_waiting_free(j->waiting);
            j->waiting = NULL;
            return sender_gone(j->conns[0]);
        }
        if (j->arg.taken[idx]) {   /* two JOINs for one stripe ran at once: the first stays */
            rd_warn("connection from %s: stripe %u of this session joined already: dropped", c->peer, idx);
            c->ops->close(c);
            continue;
        }
        j->conns[idx] = c;
        j->arg.taken[idx] = 1;
        j->got++;
    }
    return RD_OK;
}

int rd_stripe_accept(struct rd_listener *lis, struct rd_transport **tpp, const struct rd_params *agreed)
{
    struct claims claims = { .lock = PTHREAD_MUTEX_INITIALIZER, .claimed = { 1 } };
    struct joining j = { .conns = { *tpp },
                         .arg = { .agreed = *agreed, .ops = (*tpp)->ops, .taken = { 1 }, .claims = &claims },
                         .got = 1 };
    struct rd_waiting_cfg cfg = { .handshake = join, .arg = &j.arg, .arg_size = sizeof j.arg,
                                  .result_size = sizeof(uint32_t), .deadline_ms = RD_HANDSHAKE_MS };
    j.waiting = rd_waiting_new(&cfg);
    int rc = j.waiting ? gather_stripes(lis, &j, agreed) : rd_error_or(RD_EIO);
    rd_waiting_free(j.waiting);
    explicit_bzero(&j.arg, sizeof j.arg);   /* the join key */
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

