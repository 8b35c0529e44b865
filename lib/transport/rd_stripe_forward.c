/* rd_stripe_forward.c - a relay between two striped transports of as many connections.
 *
 * Frame k travels on connection k % n on both sides, so connection i upstream carries what
 * connection i downstream must: each pair is forwarded on its own, by its own thread. Over
 * TCP every payload is spliced socket to socket (rd_tcp_splice_frame); the buffered relay
 * instead took every frame into user space on one connection's thread, passed it through
 * the relay's one thread, and wrote it out from another's: two copies per byte, and one
 * thread in the way. Over RDMA (direct stripes: each connection its own registered rings)
 * a pair sends each frame down from the upstream ring it landed in (send_ref), on its own
 * thread: no copy, and no one thread that every frame passes.
 *
 * The relay's checks (struct rd_forward) still see every header, each with the frame number
 * its pair expects. The last frame (END, or the sender's ABORT) is judged on the calling
 * thread once every pair stopped, so the END's totals are held against every DATA frame
 * that went on. A pair stops at a failure, at a control frame, or, once the END is known,
 * when it has carried every frame before it.
 */
#include "transport/rd_stripe_int.h"

#include "transport/rd_tcp.h"
#include "util/rd_error.h"
#include "util/rd_thread.h"
#include "wire/rd_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PAIR_PIPE_SIZE (1 << 20)

struct fwd;

struct pair {
    struct fwd *f;
    unsigned i;
    struct rd_transport *in, *out;
    int pfd[2];              /* the splice's pipe */
    uint64_t next;           /* the frame number this connection carries next */
    int err;                 /* this pair's failure, kept (not recorded) until judged */
    char err_msg[512];
    int down_failed;         /* ...and it came from the downstream connection */
    int lent;                /* RDMA: frames of in may wait in out's sends (send_ref) */
    pthread_t th;
};

struct fwd {
    struct rd_forward *fw;
    unsigned n;
    int direct;              /* RDMA: frames through the connections' rings, not spliced */
    pthread_mutex_t lock;
    int stopfd[2];           /* readable once the pairs must look up from their sockets */
    int stop;                /* a pair failed or took an ABORT: every pair stops */
    int first;               /* that pair, the first to; -1 while none */
    int end_known;           /* an END arrived, as frame end_seq */
    uint64_t end_seq;
    unsigned ctrl_pair;      /* the pair that holds the control frame */
    size_t ctrl_len;         /* 0: none */
    uint8_t ctrl[RD_CTRL_FRAME];
    struct pair p[RD_MAX_STREAMS];
};

/* The type of a control frame the relay's check passed. */
static int ctrl_type(const uint8_t *frame)
{
    struct rd_frame f;
    return rd_frame_parse_head(frame, RD_CTRL_FRAME, &f) == RD_P_OK ? f.type : -1;
}

/* Under f->lock: wake every pair that waits for its next frame (TCP: in poll; RDMA: in its
 * connection's recv, which an interrupt ends without touching the connection). */
static void wake_all(struct fwd *f)
{
    if (f->direct) {
        for (unsigned i = 0; i < f->n; i++)
            f->p[i].in->ops->interrupt(f->p[i].in);
        return;
    }
    ssize_t w = write(f->stopfd[1], "x", 1);
    (void)w;   /* the pipe is readable already when this fails (full) */
}

/* Stop everything because pair p failed or took an ABORT. A TCP pair in the middle of
 * reading a frame is woken by shutting the read side of the upstream connections: the
 * relay still sends its ABORT up them. */
static void stop_all(struct fwd *f, struct pair *p)
{
    pthread_mutex_lock(&f->lock);
    if (f->first < 0)
        f->first = (int)p->i;
    f->stop = 1;
    wake_all(f);
    pthread_mutex_unlock(&f->lock);
    for (unsigned i = 0; i < f->n && !f->direct; i++)
        shutdown(rd_tcp_fd(f->p[i].in), SHUT_RD);
}

/* Whether p should read another frame; waits while its connection is quiet and the END is
 * not known yet (once it is, a pair whose frames are still due reads on, blocking). */
static int more(struct fwd *f, struct pair *p)
{
    for (;;) {
        pthread_mutex_lock(&f->lock);
        int stop = f->stop || (f->end_known && p->next >= f->end_seq);
        int known = f->end_known;
        pthread_mutex_unlock(&f->lock);
        if (stop)
            return 0;
        if (known || f->direct)   /* RDMA: the recv itself is woken */
            return 1;
        struct pollfd pfd[2] = { { .fd = rd_tcp_fd(p->in), .events = POLLIN },
                                 { .fd = f->stopfd[0], .events = POLLIN } };
        if (poll(pfd, 2, -1) < 0 && errno != EINTR)
            return 1;   /* the read will say what is wrong */
        if (pfd[0].revents)
            return 1;
    }
}

/* p read a control frame whole: keep it for the caller to judge. An END tells the other
 * pairs where the stream ends; an ABORT stops them. */
static int take_ctrl(struct fwd *f, struct pair *p, const uint8_t *frame, size_t len)
{
    int is_end = ctrl_type(frame) == RD_END;
    pthread_mutex_lock(&f->lock);
    int second = f->ctrl_len != 0;
    if (!second) {
        memcpy(f->ctrl, frame, len);
        f->ctrl_len = len;
        f->ctrl_pair = p->i;
        if (is_end) {
            f->end_known = 1;
            f->end_seq = p->next;
            wake_all(f);
        }
    }
    pthread_mutex_unlock(&f->lock);
    if (second)
        return rd_fail(RD_ESTREAM, "protocol error from sender %s: a second END or ABORT", p->in->peer);
    if (!is_end)
        stop_all(f, p);
    return RD_OK;
}

/* One TCP frame of pair p: a DATA payload spliced on, or a control frame read into frame
 * (*ctrl_len: its length; 0 for DATA). */
static int step_tcp(struct pair *p, uint8_t frame[RD_CTRL_FRAME], size_t *ctrl_len)
{
    struct rd_forward *fw = p->f->fw;
    size_t len;
    int is_data = 0;
    uint32_t raw = 0;
    *ctrl_len = 0;
    int rc = rd_tcp_recv_head(p->in, frame, &len);
    if (!rc)
        rc = fw->check(fw->ctx, frame, len, p->next, &is_data, &raw);
    if (rc)
        return rc;
    if (is_data) {
        rc = rd_tcp_splice_frame(p->in, p->out, frame, len - RD_FRAME_HDR, p->pfd, &p->down_failed);
        if (!rc)
            fw->passed(fw->ctx, len, raw);
        return rc;
    }
    if (len > RD_CTRL_FRAME)   /* the check bounds control frames; never trust it blindly */
        return rd_fail(RD_ESTREAM, "protocol error from %s: a %zu-byte control frame", p->in->peer, len);
    rc = rd_tcp_recv_payload(p->in, frame + RD_FRAME_HDR, len - RD_FRAME_HDR);
    *ctrl_len = rc ? 0 : len;
    return rc;
}

/* A frame of a direct pair sent down out: copied into a buffer of out's ring. */
static int copy_to(struct rd_transport *out, const uint8_t *frame, size_t len)
{
    struct rd_buf *o;
    int rc = out->ops->get_send_buf(out, &o);
    if (!rc && o->cap < len) {
        out->ops->release(out, o);
        return rd_fail(RD_ESTREAM, "a frame of %zu bytes does not fit the buffers of %s", len, out->peer);
    }
    if (!rc) {
        memcpy(o->data, frame, len);
        o->len = len;
        rc = out->ops->send(out, o);
    }
    return rc;
}

/* A DATA frame b of pair p sent down from where it landed (send_ref; the transport copies
 * where it cannot): b goes back to p->in once sent (p->lent). */
static int pass_direct(struct pair *p, struct rd_buf *b)
{
    struct rd_transport *out = p->out;
    struct rd_buf *o;
    int rc = out->ops->get_send_buf(out, &o);
    if (rc) {
        p->in->ops->release(p->in, b);
        return rc;
    }
    rd_ref_frame(o, p->in, b, b->len - RD_FRAME_HDR);
    p->lent = 1;
    return out->ops->send_ref(out, o);
}

/* One RDMA frame of pair p, as step_tcp; *woken: the recv was interrupted, nothing read.
 * While frames of p->in wait in p->out's sends, no thread may sleep on p->in: the sender
 * would wait for their credits, and nobody would reap the sends that return them. So a pair
 * with frames lent looks without waiting, and settles its sends when nothing is there. */
static int step_direct(struct pair *p, uint8_t frame[RD_CTRL_FRAME], size_t *ctrl_len, int *woken)
{
    struct rd_forward *fw = p->f->fw;
    struct rd_transport *in = p->in;
    struct rd_buf *b;
    int is_data = 0;
    uint32_t raw = 0;
    *ctrl_len = 0;
    *woken = 0;
    int rc = in->ops->recv(in, &b, p->lent ? 0 : -1);
    if (rc == RD_ECONNECT) {   /* ops->interrupt, or nothing there yet */
        rd_error_clear();
        *woken = 1;
        rc = p->lent ? p->out->ops->drain(p->out) : RD_OK;
        p->down_failed = rc != RD_OK;
        p->lent = 0;
        return rc;
    }
    if (rc)
        return rc;
    rc = fw->check(fw->ctx, b->data, b->len, p->next, &is_data, &raw);
    if (!rc && is_data) {
        size_t len = b->len;
        rc = pass_direct(p, b);
        p->down_failed = rc != RD_OK;
        if (!rc)
            fw->passed(fw->ctx, len, raw);
        return rc;
    }
    if (!rc && !is_data) {
        if (b->len > RD_CTRL_FRAME)
            rc = rd_fail(RD_ESTREAM, "protocol error from %s: a %zu-byte control frame", in->peer, b->len);
        else
            memcpy(frame, b->data, *ctrl_len = b->len);
    }
    in->ops->release(in, b);
    return rc;
}

static void *pair_main(void *arg)
{
    struct pair *p = arg;
    struct fwd *f = p->f;
    uint8_t frame[RD_CTRL_FRAME];
    rd_thread_name("rd-fw%u", p->i);
    rd_errctx_bind(NULL);   /* kept: the caller judges which failure was the cause */
    int rc = RD_OK;
    while (!rc && more(f, p)) {
        size_t ctrl_len;
        int woken = 0;
        rc = f->direct ? step_direct(p, frame, &ctrl_len, &woken) : step_tcp(p, frame, &ctrl_len);
        if (rc || woken)
            continue;
        if (ctrl_len) {
            rc = take_ctrl(f, p, frame, ctrl_len);
            break;
        }
        p->next += f->n;
    }
    if (rc) {
        p->err = rd_error_copy(p->err_msg, sizeof p->err_msg);
        if (!p->err)
            p->err = RD_ESTREAM;
        stop_all(f, p);
    }
    return NULL;
}

/* Both sides striped alike with as many connections, nothing received from upstream nor
 * sent downstream yet. */
static int pairable(struct rd_transport *tp, struct rd_transport *to)
{
    struct stripe *u = tp->priv, *d = to->priv;
    if (to->ops != tp->ops || u->direct != d->direct || u->n != d->n || u->dir != RD_DIR_RECV ||
        d->dir != RD_DIR_SEND || d->next || d->gnext)
        return 0;
    if (!u->direct)
        return u->recv_lazy;
    const struct rd_transport_ops *ops = u->w[0].conn->ops;
    return !u->next && ops->interrupt && ops->send_ref;
}

/* Every pair stopped: the outcome. A failure or an ABORT that came first decides; else the
 * END, judged now, goes on down the connection it came up. */
static int judge(struct fwd *f, struct rd_transport *to)
{
    struct rd_forward *fw = f->fw;
    struct stripe *d = to->priv;
    uint64_t due = UINT64_MAX;   /* the first frame that did not go on: where the sink waits */
    for (unsigned i = 0; i < f->n; i++)
        if (f->p[i].next < due)
            due = f->p[i].next;
    int rc;
    if (f->first >= 0 && f->p[f->first].err) {
        struct pair *p = &f->p[f->first];
        fw->down_failed = p->down_failed;
        rc = rd_fail(p->err, "%s", p->err_msg);
    } else if (f->ctrl_len) {
        rc = fw->ctrl(fw->ctx, f->ctrl, f->ctrl_len);
        if (!rc && ctrl_type(f->ctrl) == RD_END) {
            struct rd_transport *out = d->w[f->ctrl_pair].conn;   /* down the connection it came up */
            rc = f->direct ? copy_to(out, f->ctrl, f->ctrl_len) : rd_tcp_send_frame(out, f->ctrl, f->ctrl_len);
            fw->down_failed = rc != RD_OK;
            if (!rc)
                due = f->end_seq + 1;
        }
    } else {
        rc = rd_fail(RD_ESTREAM, "protocol error from sender %s: the stream stopped without END", to->peer);
    }
    d->next = d->gnext = due;   /* the relay's own ABORT goes where the sink waits */
    return rc;
}

int rd_stripe_forward(struct rd_transport *tp, struct rd_transport *to, struct rd_forward *fw)
{
    fw->down_failed = 0;
    fw->declined = !pairable(tp, to);
    if (fw->declined)
        return RD_OK;
    struct stripe *u = tp->priv, *d = to->priv;
    struct fwd *f = calloc(1, sizeof *f);
    if (!f)
        return rd_fail(RD_EIO, "out of memory");
    f->fw = fw;
    f->n = u->n;
    f->direct = u->direct;
    f->first = -1;
    int rc = RD_OK;
    pthread_mutex_init(&f->lock, NULL);
    if (pipe2(f->stopfd, O_CLOEXEC)) {
        rc = rd_fail(RD_EIO, "cannot create a pipe");
        goto free_fwd;
    }
    unsigned piped = 0, started = 0;
    for (; piped < f->n; piped++) {
        struct pair *p = &f->p[piped];
        *p = (struct pair){ .f = f, .i = piped, .in = u->w[piped].conn, .out = d->w[piped].conn, .next = piped,
                            .pfd = { -1, -1 } };
        if (f->direct)
            continue;
        if (pipe2(p->pfd, O_CLOEXEC)) {
            rc = rd_fail(RD_EIO, "cannot create a pipe");
            goto close_pipes;
        }
        fcntl(p->pfd[1], F_SETPIPE_SZ, PAIR_PIPE_SIZE);
    }
    for (; started < f->n; started++)
        if (rd_thread_create(&f->p[started].th, NULL, pair_main, &f->p[started])) {
            rc = rd_fail(RD_EIO, "cannot start a thread for stream %u", started);
            stop_all(f, &f->p[started]);
            break;
        }
    for (unsigned i = 0; i < started; i++)
        pthread_join(f->p[i].th, NULL);
    if (!rc)
        rc = judge(f, to);
close_pipes:
    for (unsigned i = 0; i < piped && !f->direct; i++) {
        close(f->p[i].pfd[0]);
        close(f->p[i].pfd[1]);
    }
    close(f->stopfd[0]);
    close(f->stopfd[1]);
free_fwd:
    pthread_mutex_destroy(&f->lock);
    free(f);
    return rc;
}
