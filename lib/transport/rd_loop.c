/* rd_loop.c - see rd_loop.h.
 *
 * Locking: one mutex per link guards both directions' queues, their pool lists and the ends'
 * state; each pool has its own lock for its free list (rd_pool), taken after the link lock or
 * alone. The only blocking waits are rd_pool_get (outside the link lock) and a direction's
 * `arrived` condition (inside it). Every buffer's owner is the pool it belongs to, so it goes
 * back there even after setup_ring replaced that pool; replaced pools stay allocated until
 * both ends are closed, so no thread can touch freed memory.
 */
#include "transport/rd_loop.h"

#include "util/rd_error.h"
#include "transport/rd_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOOP_CTRL_FRAMES 4
#define LOOP_MAX_POOLS 3   /* the control pool + up to two setup_ring(SEND) calls */

/* The frames one end sends to the other. */
struct loop_dir {
    struct rd_pool *pools[LOOP_MAX_POOLS];   /* the sender's; the last one is current */
    unsigned npools;
    struct rd_buf **q;      /* sent, not yet received: room for every buffer of every pool,
                             * since a buffer is in one place at a time, so a push never waits */
    unsigned qcap, head, count;
    size_t recv_max;        /* the largest frame the receiving end takes */
    pthread_cond_t arrived;
};

struct loop_link;

struct loop_end {
    struct loop_link *link;
    struct rd_transport *tp;
    unsigned i;     /* this end sends on dir[i] and receives on dir[!i] */
    int down;       /* shutdown() was called on this end */
};

struct loop_link {
    pthread_mutex_t lock;
    int dead;       /* an end shut down: no more sends either way */
    int refs;       /* ends not yet closed */
    struct loop_end end[2];
    struct loop_dir dir[2];
};

static struct loop_end *end_of(struct rd_transport *tp)
{
    return tp->priv;
}

static struct loop_dir *dir_out(struct loop_end *e)
{
    return &e->link->dir[e->i];
}

static struct loop_dir *dir_in(struct loop_end *e)
{
    return &e->link->dir[!e->i];
}

static struct rd_pool *new_pool(unsigned count, size_t frame_size)
{
    struct rd_pool *p = malloc(sizeof *p);
    if (!p)
        return NULL;
    /* owner = the pool itself: release puts a buffer back where it came from */
    if (rd_pool_init(p, count, frame_size, p)) {
        free(p);
        return NULL;
    }
    return p;
}

static void free_pool(struct rd_pool *p)
{
    rd_pool_destroy(p);
    free(p);
}

/* Under the link lock: p becomes d's current pool, and the queue grows to hold its buffers
 * too. 0 or -1 (out of memory). */
static int add_pool(struct loop_dir *d, struct rd_pool *p)
{
    unsigned cap = d->qcap + p->count;
    struct rd_buf **q = malloc(cap * sizeof *q);
    if (!q)
        return -1;
    for (unsigned k = 0; k < d->count; k++)
        q[k] = d->q[(d->head + k) % d->qcap];
    free(d->q);
    d->q = q;
    d->qcap = cap;
    d->head = 0;
    d->pools[d->npools++] = p;
    return 0;
}

/* The error an end sees once it cannot use the link; under the link lock. */
static int link_error(struct loop_end *e, const char *what)
{
    if (e->down)
        return rd_fail_after(RD_ESTREAM, "transfer aborted");
    return rd_fail(RD_ESTREAM, "connection to %s closed by peer %s", e->tp->peer, what);
}

/* ---- connection set-up ---- */

static void free_link(struct loop_link *l)
{
    for (int i = 0; i < 2; i++) {
        struct loop_dir *d = &l->dir[i];
        for (unsigned j = 0; j < d->npools; j++)
            free_pool(d->pools[j]);
        free(d->q);
        pthread_cond_destroy(&d->arrived);
    }
    pthread_mutex_destroy(&l->lock);
    free(l);
}

int rd_loop_pair(struct rd_transport **a, struct rd_transport **b)
{
    struct loop_link *l = calloc(1, sizeof *l);
    struct rd_transport *t[2] = { rd_transport_new(&rd_loop_ops), rd_transport_new(&rd_loop_ops) };
    int ok = l && t[0] && t[1];
    if (l) {
        pthread_mutex_init(&l->lock, NULL);
        l->refs = 2;
        for (unsigned i = 0; i < 2; i++) {
            pthread_condattr_t ca;
            pthread_condattr_init(&ca);
            pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* recv timeouts ignore clock jumps */
            pthread_cond_init(&l->dir[i].arrived, &ca);
            pthread_condattr_destroy(&ca);
            l->dir[i].recv_max = RD_CTRL_FRAME;
            struct rd_pool *p = ok ? new_pool(LOOP_CTRL_FRAMES, RD_CTRL_FRAME) : NULL;
            if (p && add_pool(&l->dir[i], p)) {
                free_pool(p);
                p = NULL;
            }
            ok = p != NULL;
        }
    }
    if (!ok) {
        if (l)
            free_link(l);
        free(t[0]);
        free(t[1]);
        return rd_fail(RD_EIO, "out of memory");
    }
    for (unsigned i = 0; i < 2; i++) {
        l->end[i] = (struct loop_end){ .link = l, .tp = t[i], .i = i };
        t[i]->priv = &l->end[i];
        snprintf(t[i]->peer, sizeof t[i]->peer, "loop:%c", i ? 'a' : 'b');
        snprintf(t[i]->desc, sizeof t[i]->desc, "loop");
    }
    *a = t[0];
    *b = t[1];
    return RD_OK;
}

static int loop_listen(struct rd_transport *lis, const struct rd_addr *addr)
{
    return rd_fail(RD_ECONNECT, "loop transport: use rd_loop_pair()");
}

static int loop_accept(struct rd_transport *lis, struct rd_transport **conn, int timeout_ms)
{
    return rd_fail(RD_ECONNECT, "loop transport: use rd_loop_pair()");
}

static int loop_listen_fd(struct rd_transport *lis)
{
    return -1;
}

static int loop_connect(struct rd_transport *tp, const struct rd_addr *addr)
{
    return rd_fail(RD_ECONNECT, "loop transport: use rd_loop_pair()");
}

/* ---- data path ---- */

static int loop_setup_ring(struct rd_transport *tp, enum rd_dir dir, size_t frame_size, unsigned depth)
{
    struct loop_end *e = end_of(tp);
    struct loop_link *l = e->link;
    if (depth == 0 || frame_size == 0)
        return rd_fail(RD_EIO, "loop transport: ring of %u frames of %zu bytes", depth, frame_size);
    /* the receiving end borrows the sender's buffers: it only says how large a frame it takes */
    struct rd_pool *p = dir == RD_DIR_SEND ? new_pool(depth, frame_size) : NULL;
    if (dir == RD_DIR_SEND && !p)
        return rd_fail(RD_EIO, "cannot allocate %u buffers of %zu bytes", depth, frame_size);
    int rc = RD_OK;
    pthread_mutex_lock(&l->lock);
    if (e->down || l->dead)
        rc = link_error(e, "before the transfer");
    else if (dir == RD_DIR_RECV)
        dir_in(e)->recv_max = frame_size;
    else if (dir_out(e)->npools == LOOP_MAX_POOLS)
        rc = rd_fail(RD_EIO, "loop transport: setup_ring called too often");
    else if (add_pool(dir_out(e), p))
        rc = rd_fail(RD_EIO, "out of memory");
    else
        p = NULL;
    pthread_mutex_unlock(&l->lock);
    if (p)
        free_pool(p);
    return rc;
}

static int loop_get_send_buf(struct rd_transport *tp, struct rd_buf **out)
{
    struct loop_end *e = end_of(tp);
    pthread_mutex_lock(&e->link->lock);
    struct loop_dir *d = dir_out(e);
    struct rd_pool *p = d->pools[d->npools - 1];
    pthread_mutex_unlock(&e->link->lock);
    *out = rd_pool_get(p);   /* the flow control: waits for the peer to release one */
    if (*out)
        return RD_OK;
    pthread_mutex_lock(&e->link->lock);   /* closed: only shutdown closes a pool */
    int rc = link_error(e, "while sending");
    pthread_mutex_unlock(&e->link->lock);
    return rc;
}

static int loop_send(struct rd_transport *tp, struct rd_buf *b)
{
    struct loop_end *e = end_of(tp);
    struct loop_link *l = e->link;
    struct loop_dir *d = dir_out(e);
    int rc = RD_OK;
    pthread_mutex_lock(&l->lock);
    if (e->down || l->dead) {
        rc = link_error(e, "while sending");
        rd_pool_put(b->owner, b);   /* send takes the buffer either way */
    } else {
        if (d->count == d->qcap)
            abort();   /* a buffer sent twice: the queue has room for every buffer once */
        d->q[(d->head + d->count++) % d->qcap] = b;
        pthread_cond_signal(&d->arrived);   /* one receiving thread per end */
    }
    pthread_mutex_unlock(&l->lock);
    return rc;
}

static void deadline_in(struct timespec *ts, int timeout_ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += timeout_ms / 1000;
    ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static int loop_recv(struct rd_transport *tp, struct rd_buf **out, int timeout_ms)
{
    struct loop_end *e = end_of(tp);
    struct loop_link *l = e->link;
    struct loop_dir *d = dir_in(e);
    struct timespec deadline;
    if (timeout_ms >= 0)
        deadline_in(&deadline, timeout_ms);
    pthread_mutex_lock(&l->lock);
    for (;;) {
        if (e->down || (!d->count && l->dead)) {   /* what the peer sent before it went still comes */
            int rc = link_error(e, "while receiving");
            pthread_mutex_unlock(&l->lock);
            return rc;
        }
        if (d->count) {
            struct rd_buf *b = d->q[d->head];
            d->head = (d->head + 1) % d->qcap;
            d->count--;
            size_t max = d->recv_max;
            pthread_mutex_unlock(&l->lock);
            if (b->len > max) {
                size_t len = b->len;
                rd_pool_put(b->owner, b);
                return rd_fail(RD_ESTREAM, "peer %s sent a %zu-byte frame, larger than the %zu agreed",
                               tp->peer, len, max);
            }
            *out = b;
            return RD_OK;
        }
        if (timeout_ms < 0)
            pthread_cond_wait(&d->arrived, &l->lock);
        else if (pthread_cond_timedwait(&d->arrived, &l->lock, &deadline) == ETIMEDOUT && !d->count &&
                 !l->dead && !e->down) {
            pthread_mutex_unlock(&l->lock);
            return rd_fail(RD_ECONNECT, "timed out waiting for %s", tp->peer);
        }
    }
}

static void loop_release(struct rd_transport *tp, struct rd_buf *b)
{
    rd_pool_put(b->owner, b);   /* back to the sender's free list */
}

static int loop_drain(struct rd_transport *tp)
{
    return RD_OK;   /* a sent frame is on the peer's queue already, and stays valid there */
}

static void loop_shutdown(struct rd_transport *tp)
{
    struct loop_end *e = end_of(tp);
    struct loop_link *l = e->link;
    pthread_mutex_lock(&l->lock);
    e->down = 1;
    l->dead = 1;
    for (int i = 0; i < 2; i++) {
        struct loop_dir *d = &l->dir[i];
        for (unsigned j = 0; j < d->npools; j++)
            rd_pool_close(d->pools[j]);   /* wakes get_send_buf on both ends */
        pthread_cond_broadcast(&d->arrived);
    }
    pthread_mutex_unlock(&l->lock);
}

static void loop_close(struct rd_transport *tp)
{
    struct loop_end *e = end_of(tp);
    struct loop_link *l = e->link;
    loop_shutdown(tp);
    pthread_mutex_lock(&l->lock);
    int last = --l->refs == 0;
    pthread_mutex_unlock(&l->lock);
    free(tp);
    if (last)
        free_link(l);
}

const struct rd_transport_ops rd_loop_ops = {
    .name = "loop",
    .listen = loop_listen,
    .accept = loop_accept,
    .listen_fd = loop_listen_fd,
    .connect = loop_connect,
    .setup_ring = loop_setup_ring,
    .get_send_buf = loop_get_send_buf,
    .send = loop_send,
    .recv = loop_recv,
    .release = loop_release,
    .drain = loop_drain,
    .shutdown = loop_shutdown,
    .close = loop_close,
};
