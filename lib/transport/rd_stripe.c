/* rd_stripe.c - one stream striped over several connections (--streams N): TCP below, with
 * a thread per connection; RDMA in the direct mode further down, on each connection's ring.
 *
 * A TCP connection is copied by one core on each end; when that core is the limit, more
 * connections carry more. Frame k of the striped direction travels on connection k % N, so
 * the receiver restores the order by reading the connections in turn, with no reordering
 * buffer. Every connection has its own thread on each end doing its copies (a send worker fed
 * by a queue; a receive worker with its own buffers), which is what lets the copies run on
 * several cores. The other direction (CONFIRM or ABORT back to the sender) is rare and small
 * and uses connection 0's own control frames. Any connection failing takes all of them down.
 */
#include "transport/rd_stripe.h"
#include "transport/rd_stripe_int.h"

#include "util/rd_error.h"
#include "transport/rd_pool.h"
#include "wire/rd_proto.h"
#include "util/rd_queue.h"
#include "transport/rd_session.h"
#include "transport/rd_tcp.h"
#include "util/rd_thread.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct rd_transport *conn0(struct stripe *s)
{
    return s->w[0].conn;
}

/* Fail every queue and pool, so that the engine's threads wake up and ask why; the
 * connections stay up for the engine to hear the peer's reason (its ABORT) first. */
static void stripe_wake(struct stripe *s)
{
    for (unsigned i = 0; i < s->n; i++) {
        struct worker *w = &s->w[i];
        if (w->have_q)
            rd_queue_close(&w->q);
        if (w->have_pool)
            rd_pool_close(&w->pool);
    }
    if (s->have_send_pool)
        rd_pool_close(&s->send_pool);
    pthread_mutex_lock(&s->lock);
    s->failed = 1;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
}

/* Wake and fail everything, the connections too. */
static void stripe_down(struct stripe *s)
{
    if (atomic_exchange(&s->down, 1))
        return;
    for (unsigned i = 0; i < s->n; i++)
        s->w[i].conn->ops->shutdown(s->w[i].conn);
    stripe_wake(s);
}

/* A worker's failure is kept, not recorded: the engine decides what it means. */
static void keep_error(struct worker *w)
{
    struct stripe *s = w->s;
    pthread_mutex_lock(&s->lock);
    w->err = rd_error_copy(w->err_msg, sizeof w->err_msg);
    pthread_mutex_unlock(&s->lock);
}

/* The stream broke at this connection (or anywhere, for w == NULL): record why, once. */
static int broken(struct stripe *s, struct worker *w)
{
    int e = rd_error_code();
    if (e)
        return e;
    pthread_mutex_lock(&s->lock);
    for (unsigned i = 0; !(w && w->err) && i < s->n; i++)
        if (s->w[i].err)
            w = &s->w[i];
    int code = w && w->err ? w->err : 0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", code ? w->err_msg : "transfer aborted");
    pthread_mutex_unlock(&s->lock);
    return code ? rd_fail(code, "%s", msg) : rd_fail_after(RD_ESTREAM, "%s", msg);
}

static void *send_worker(void *arg)
{
    struct worker *w = arg;
    struct stripe *s = w->s;
    struct rd_buf *b;
    rd_thread_name("rd-tx%d", (int)(w - s->w));
    rd_errctx_bind(NULL);
    while ((b = rd_queue_pop(&w->q))) {
        int rc = b->ref ? rd_tcp_send_parts(w->conn, b->data, b->ref, b->ref_len)
                        : rd_tcp_send_frame(w->conn, b->data, b->len);
        rd_ref_done(b);
        rd_pool_put(&s->send_pool, b);
        pthread_mutex_lock(&s->lock);
        s->in_flight--;
        pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->lock);
        if (rc) {
            keep_error(w);
            stripe_wake(s);
            break;
        }
    }
    return NULL;
}

/* The peer hung up on a connection that waits for a free buffer (the writer is stuck): that
 * must end the transfer even though nothing is read. */
static int hung_up(struct rd_transport *conn)
{
    struct pollfd pfd = { .fd = rd_tcp_fd(conn), .events = POLLRDHUP };
    return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Only this connection's queue ends on a failure: what the other connections already
 * carried still reaches the engine in order (an ABORT, say), and the engine finds the break
 * when its turn comes to this connection. */
static void *recv_worker(void *arg)
{
    struct worker *w = arg;
    rd_thread_name("rd-rx%d", (int)(w - w->s->w));
    rd_errctx_bind(NULL);
    for (;;) {
        int timed_out;
        struct rd_buf *b = rd_pool_get_timed(&w->pool, 250, &timed_out);
        if (!b && timed_out && hung_up(w->conn)) {
            rd_fail(RD_ESTREAM, "connection to %s closed by peer while receiving", w->conn->peer);
            break;
        }
        if (!b && timed_out)
            continue;
        if (!b)
            break;
        if (rd_tcp_recv_into(w->conn, b) || rd_queue_push(&w->q, b)) {
            rd_pool_put(&w->pool, b);
            break;
        }
    }
    keep_error(w);
    rd_queue_close(&w->q);
    return NULL;
}

static int start_workers(struct stripe *s, void *(*fn)(void *))
{
    for (unsigned i = 0; i < s->n; i++) {
        struct worker *w = &s->w[i];
        if (pthread_create(&w->th, NULL, fn, w))
            return rd_fail(RD_EIO, "cannot start a thread for stream %u", i);
        w->started = 1;
    }
    return RD_OK;
}

static int stripe_setup_ring(struct rd_transport *tp, enum rd_dir dir, size_t frame_size, unsigned depth)
{
    struct stripe *s = tp->priv;
    unsigned per = (depth + s->n - 1) / s->n;   /* each connection's share of the ring */
    if (per < 2)
        per = 2;
    if (dir == RD_DIR_SEND) {
        if (rd_pool_init(&s->send_pool, per * s->n, frame_size, tp))
            return rd_fail(RD_EIO, "cannot allocate %u buffers of %zu bytes", per * s->n, frame_size);
        s->have_send_pool = 1;
    }
    s->dir = dir;
    for (unsigned i = 0; i < s->n; i++) {
        struct worker *w = &s->w[i];
        if (dir == RD_DIR_RECV) {
            if (rd_pool_init(&w->pool, per, frame_size, w))
                return rd_fail(RD_EIO, "cannot allocate %u buffers of %zu bytes", per, frame_size);
            w->have_pool = 1;
        }
        if (rd_queue_init(&w->q, per * s->n + 2))
            return rd_fail(RD_EIO, "out of memory");
        w->have_q = 1;
    }
    /* receive workers read the connections as soon as they run: started by the first recv,
     * so that a relay may splice the connections instead (rd_stripe_forward) */
    s->recv_lazy = dir == RD_DIR_RECV;
    return dir == RD_DIR_SEND ? start_workers(s, send_worker) : RD_OK;
}


static int stripe_get_send_buf(struct rd_transport *tp, struct rd_buf **out)
{
    struct stripe *s = tp->priv;
    if (s->dir != RD_DIR_SEND)
        return conn0(s)->ops->get_send_buf(conn0(s), out);
    *out = rd_pool_get(&s->send_pool);
    return *out ? RD_OK : broken(s, NULL);
}

static int post(struct stripe *s, struct rd_buf *b)
{
    struct worker *w = &s->w[s->next++ % s->n];
    pthread_mutex_lock(&s->lock);
    s->in_flight++;
    pthread_mutex_unlock(&s->lock);
    if (rd_queue_push(&w->q, b) == 0)
        return RD_OK;
    rd_ref_done(b);
    rd_pool_put(&s->send_pool, b);
    pthread_mutex_lock(&s->lock);
    s->in_flight--;
    pthread_mutex_unlock(&s->lock);
    return broken(s, NULL);
}

static int stripe_send(struct rd_transport *tp, struct rd_buf *b)
{
    struct stripe *s = tp->priv;
    if (b->owner == conn0(s))
        return conn0(s)->ops->send(conn0(s), b);
    return post(s, b);
}

/* The worker sends the payload from where the relay received it, and gives that buffer back
 * then: no copy on the relay's one thread, which forwards every frame of every stripe. */
static int stripe_send_ref(struct rd_transport *tp, struct rd_buf *b)
{
    struct stripe *s = tp->priv;
    b->len = RD_FRAME_HDR + b->ref_len;
    return post(s, b);
}

static int stripe_recv(struct rd_transport *tp, struct rd_buf **out, int timeout_ms)
{
    struct stripe *s = tp->priv;
    if (s->dir != RD_DIR_RECV)
        return conn0(s)->ops->recv(conn0(s), out, timeout_ms);
    if (s->recv_lazy) {   /* only the network thread receives */
        s->recv_lazy = 0;
        int rc = start_workers(s, recv_worker);
        if (rc) {
            stripe_down(s);
            return rc;
        }
    }
    struct worker *w = &s->w[s->next % s->n];
    struct rd_buf *b = rd_queue_pop(&w->q);
    if (!b) {
        int rc = broken(s, w);
        if (!atomic_load(&s->recv_shut))   /* else the caller still sends its ABORT */
            stripe_down(s);
        return rc;
    }
    s->next++;
    *out = b;
    return RD_OK;
}

static void stripe_release(struct rd_transport *tp, struct rd_buf *b)
{
    struct stripe *s = tp->priv;
    if (b->owner == conn0(s))
        conn0(s)->ops->release(conn0(s), b);
    else
        rd_pool_put(&((struct worker *)b->owner)->pool, b);
}

static int stripe_drain(struct rd_transport *tp)
{
    struct stripe *s = tp->priv;
    if (s->dir != RD_DIR_SEND)   /* a CONFIRM: connection 0 has it already */
        return conn0(s)->ops->drain(conn0(s));
    pthread_mutex_lock(&s->lock);
    while (s->in_flight && !s->failed)
        pthread_cond_wait(&s->idle, &s->lock);
    int failed = s->failed;
    pthread_mutex_unlock(&s->lock);
    return failed ? broken(s, NULL) : RD_OK;
}

static void stripe_shutdown(struct rd_transport *tp)
{
    stripe_down(tp->priv);
}

/* ops->shut_recv of both kinds: each connection's own (a worker or a relay's pair that
 * reads it fails, and the stripe with it) */
static void stripes_shut_recv(struct rd_transport *tp)
{
    struct stripe *s = tp->priv;
    atomic_store(&s->recv_shut, 1);
    for (unsigned i = 0; i < s->n; i++)
        if (s->w[i].conn->ops->shut_recv)
            s->w[i].conn->ops->shut_recv(s->w[i].conn);
}

static void stripe_close(struct rd_transport *tp)
{
    struct stripe *s = tp->priv;
    stripe_down(s);
    /* every worker ends before any queue goes: a worker that fails late wakes all the
     * queues (stripe_wake), an earlier worker's too (TSan: a destroyed mutex) */
    for (unsigned i = 0; i < s->n; i++)
        if (s->w[i].started)
            pthread_join(s->w[i].th, NULL);
    for (unsigned i = 0; i < s->n; i++) {
        struct worker *w = &s->w[i];
        struct rd_buf *b;
        while (w->have_q && s->dir == RD_DIR_SEND && (b = rd_queue_pop(&w->q)))
            rd_ref_done(b);   /* never sent: the relay's buffer goes back (the queue is closed) */
        if (w->have_q)
            rd_queue_destroy(&w->q);
        if (w->have_pool)
            rd_pool_destroy(&w->pool);
        w->conn->ops->close(w->conn);
    }
    if (s->have_send_pool)
        rd_pool_destroy(&s->send_pool);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->lock);
    free(s);
    free(tp);
}

/* The sum of the distinct links under the connections: --streams over one NIC counts it
 * once, rails on two ports both; links named alike (two hosts' "eth0" cannot meet here: one
 * end's connections all leave from its own NICs) are one. Unknown if any link is. */
static uint64_t stripe_link_rate(struct rd_transport *tp, char *link, size_t n)
{
    struct stripe *s = tp->priv;
    char names[RD_MAX_STREAMS][64];
    uint64_t sum = 0;
    size_t len = 0;
    for (unsigned i = 0; i < s->n; i++) {
        uint64_t r = rd_transport_link_rate(s->w[i].conn, names[i], sizeof names[i]);
        if (!r)
            return 0;
        unsigned k = 0;
        while (k < i && strcmp(names[k], names[i]))
            k++;
        if (k < i)
            continue;
        sum += r;
        if (n > len)
            len += (size_t)snprintf(link + len, n - len, "%s%s", len ? "+" : "", names[i]);
    }
    return sum;
}

static const struct rd_transport_ops stripe_ops = {
    .name = "tcp",
    .setup_ring = stripe_setup_ring,
    .get_send_buf = stripe_get_send_buf,
    .send = stripe_send,
    .send_ref = stripe_send_ref,
    .forward = rd_stripe_forward,
    .recv = stripe_recv,
    .release = stripe_release,
    .drain = stripe_drain,
    .shutdown = stripe_shutdown,
    .shut_recv = stripes_shut_recv,
    .close = stripe_close,
    .link_rate = stripe_link_rate,
};

/* ---- direct mode ----
 * A connection that owns registered buffers (RDMA) cannot send from another's, and needs no
 * thread to copy: its sends are posted and its receives land by themselves. So frame k is
 * borrowed from connection k % N's own ring and sent on it, and the receiver takes frame k
 * from connection k % N's ring; the stripe only remembers whose each lent frame is. The
 * engine borrows frames in the order it sends them, so they match; a frame that does not (a
 * transport user that borrows ahead out of order) is copied into the right connection's. */

/* Remember that b, lent out, belongs to connection i. */
static int lend(struct stripe *s, struct rd_buf *b, unsigned i)
{
    pthread_mutex_lock(&s->lock);
    if (s->nlent == s->caplent) {
        unsigned cap = s->caplent ? s->caplent * 2 : 64;
        struct lent *l = realloc(s->lent, cap * sizeof *l);
        if (!l) {
            pthread_mutex_unlock(&s->lock);
            return rd_fail(RD_EIO, "out of memory");
        }
        s->lent = l;
        s->caplent = cap;
    }
    s->lent[s->nlent++] = (struct lent){ b, i };
    pthread_mutex_unlock(&s->lock);
    return RD_OK;
}

/* The connection b was lent from, forgotten now; -1: none of the striped ones (connection
 * 0's control frames, which go both ways outside the stripe). */
static int returned(struct stripe *s, struct rd_buf *b)
{
    int i = -1;
    pthread_mutex_lock(&s->lock);
    for (unsigned k = 0; k < s->nlent; k++)
        if (s->lent[k].b == b) {
            i = (int)s->lent[k].conn;
            s->lent[k] = s->lent[--s->nlent];
            break;
        }
    pthread_mutex_unlock(&s->lock);
    return i;
}

static int direct_setup_ring(struct rd_transport *tp, enum rd_dir dir, size_t frame_size, unsigned depth)
{
    struct stripe *s = tp->priv;
    unsigned per = (depth + s->n - 1) / s->n;   /* each connection's share of the ring */
    if (per < 2)
        per = 2;
    for (unsigned i = 0; i < s->n; i++) {
        struct rd_transport *c = s->w[i].conn;
        int rc = c->ops->setup_ring(c, dir, frame_size, per);
        if (rc)
            return rc;
    }
    s->dir = dir;
    return RD_OK;
}

static int direct_get_send_buf(struct rd_transport *tp, struct rd_buf **out)
{
    struct stripe *s = tp->priv;
    if (s->dir != RD_DIR_SEND)
        return conn0(s)->ops->get_send_buf(conn0(s), out);
    pthread_mutex_lock(&s->lock);
    unsigned i = s->gnext++ % s->n;
    pthread_mutex_unlock(&s->lock);
    struct rd_transport *c = s->w[i].conn;
    int rc = c->ops->get_send_buf(c, out);
    if (!rc && (rc = lend(s, *out, i)))
        c->ops->release(c, *out);
    return rc;
}

/* The connection the next striped frame must go out on. */
static unsigned due(struct stripe *s)
{
    pthread_mutex_lock(&s->lock);
    unsigned want = s->next++ % s->n;
    pthread_mutex_unlock(&s->lock);
    return want;
}

/* A buffer of connection `want` for a frame of len bytes borrowed from another one. */
static int borrow_from(struct stripe *s, unsigned want, size_t len, struct rd_buf **o)
{
    struct rd_transport *to = s->w[want].conn;
    int rc = to->ops->get_send_buf(to, o);
    if (!rc && (*o)->cap < len) {
        to->ops->release(to, *o);
        rc = rd_fail(RD_EIO, "a frame of %zu bytes does not fit stream %u's buffers", len, want);
    }
    return rc;
}

static int direct_send(struct rd_transport *tp, struct rd_buf *b)
{
    struct stripe *s = tp->priv;
    int i = returned(s, b);
    if (i < 0)
        return conn0(s)->ops->send(conn0(s), b);
    unsigned want = due(s);
    struct rd_transport *c = s->w[i].conn, *to = s->w[want].conn;
    if ((unsigned)i == want)
        return c->ops->send(c, b);
    struct rd_buf *o;
    int rc = borrow_from(s, want, b->len, &o);
    if (!rc) {
        memcpy(o->data, b->data, b->len);
        o->len = b->len;
    }
    c->ops->release(c, b);
    return rc ? rc : to->ops->send(to, o);
}

static int direct_recv(struct rd_transport *tp, struct rd_buf **out, int timeout_ms)
{
    struct stripe *s = tp->priv;
    if (s->dir != RD_DIR_RECV)
        return conn0(s)->ops->recv(conn0(s), out, timeout_ms);
    unsigned i = s->next % s->n;   /* only the network thread receives */
    struct rd_transport *c = s->w[i].conn;
    int rc = c->ops->recv(c, out, timeout_ms);
    if (rc)
        return rc;
    s->next++;
    if ((rc = lend(s, *out, i)))
        c->ops->release(c, *out);
    return rc;
}

static void direct_release(struct rd_transport *tp, struct rd_buf *b)
{
    struct stripe *s = tp->priv;
    int i = returned(s, b);
    struct rd_transport *c = i < 0 ? conn0(s) : s->w[i].conn;
    c->ops->release(c, b);
}

static int direct_drain(struct rd_transport *tp)
{
    struct stripe *s = tp->priv;
    if (s->dir != RD_DIR_SEND)
        return conn0(s)->ops->drain(conn0(s));
    int rc = RD_OK;
    for (unsigned i = 0; i < s->n && !rc; i++)
        rc = s->w[i].conn->ops->drain(s->w[i].conn);
    return rc;
}

static void direct_shutdown(struct rd_transport *tp)
{
    struct stripe *s = tp->priv;
    if (atomic_exchange(&s->down, 1))
        return;
    for (unsigned i = 0; i < s->n; i++)
        s->w[i].conn->ops->shutdown(s->w[i].conn);
}

static void direct_close(struct rd_transport *tp)
{
    struct stripe *s = tp->priv;
    direct_shutdown(tp);
    for (unsigned i = 0; i < s->n; i++)
        s->w[i].conn->ops->close(s->w[i].conn);
    free(s->lent);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->lock);
    free(s);
    free(tp);
}

/* The node of every connection's device when they share one; -1 when they differ (rails on
 * two sockets: no node is right for lanes that serve both). */
static int direct_numa_node(struct rd_transport *tp)
{
    struct stripe *s = tp->priv;
    int node = rd_transport_node(conn0(s));
    for (unsigned i = 1; i < s->n && node >= 0; i++)
        if (rd_transport_node(s->w[i].conn) != node)
            node = -1;
    return node;
}

static const struct rd_transport_ops direct_ops = {
    .name = "rdma",
    .setup_ring = direct_setup_ring,
    .get_send_buf = direct_get_send_buf,
    .send = direct_send,
    .recv = direct_recv,
    .release = direct_release,
    .drain = direct_drain,
    .shutdown = direct_shutdown,
    .shut_recv = stripes_shut_recv,
    .forward = rd_stripe_forward,
    .close = direct_close,
    .numa_node = direct_numa_node,
    .link_rate = stripe_link_rate,
};

/* What -v names: each distinct connection's description once, then the count. */
static void describe(struct rd_transport *tp, struct rd_transport **conns, unsigned n)
{
    size_t len = 0;
    tp->desc[0] = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned k = 0;
        while (k < i && strcmp(conns[k]->desc, conns[i]->desc))
            k++;
        if (k < i)
            continue;
        int w = snprintf(tp->desc + len, sizeof tp->desc - len, "%s%s", i ? " + " : "", conns[i]->desc);
        if (w < 0 || (size_t)w >= sizeof tp->desc - len)
            break;
        len += (size_t)w;
    }
    if (len < sizeof tp->desc)
        snprintf(tp->desc + len, sizeof tp->desc - len, ", %u streams", n);
}

struct rd_transport *rd_stripe_new(struct rd_transport **conns, unsigned n)
{
    int direct = n && !rd_tcp_is(conns[0]);
    struct rd_transport *tp = rd_transport_new(direct ? &direct_ops : &stripe_ops);
    struct stripe *s = calloc(1, sizeof *s);
    if (!tp || !s || n < 2 || n > RD_MAX_STREAMS) {
        free(tp);
        free(s);
        for (unsigned i = 0; i < n; i++)
            conns[i]->ops->close(conns[i]);
        return NULL;
    }
    s->n = n;
    s->direct = direct;
    for (unsigned i = 0; i < n; i++)
        s->w[i] = (struct worker){ .s = s, .conn = conns[i] };
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->idle, NULL);
    tp->priv = s;
    snprintf(tp->peer, sizeof tp->peer, "%s", conns[0]->peer);
    memcpy(tp->hop_key, conns[0]->hop_key, sizeof tp->hop_key);   /* the session's, from stripe 0 */
    tp->hop_dir = conns[0]->hop_dir;
    describe(tp, conns, n);
    return tp;
}
