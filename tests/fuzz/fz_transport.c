/* fz_transport.c - see fz_transport.h. */
#include "fz_transport.h"

#include "util/rd_error.h"
#include "wire/rd_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct fz_tp *fz_of(struct rd_transport *tp)
{
    return tp->priv;
}

static uint8_t *dup_bytes(const void *p, size_t n)
{
    uint8_t *d = malloc(n ? n : 1);
    if (!d)
        abort();   /* a fuzz target cannot go on without memory */
    if (n)
        memcpy(d, p, n);
    return d;
}

void fz_init(struct fz_tp *t, const char *peer)
{
    memset(t, 0, sizeof *t);
    t->tp.ops = &fz_ops;
    t->tp.priv = t;
    snprintf(t->tp.peer, sizeof t->tp.peer, "%s", peer);
    snprintf(t->tp.desc, sizeof t->tp.desc, "fuzz");
    t->fail_send = -1;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
}

void fz_free(struct fz_tp *t)
{
    for (size_t i = 0; i < t->nrx; i++)
        free(t->rx[i].data);
    free(t->rx);
    for (size_t i = 0; i < t->ntx; i++)
        free(t->tx[i].data);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
}

void fz_push(struct fz_tp *t, const void *frame, size_t len)
{
    uint8_t *d = dup_bytes(frame, len);
    pthread_mutex_lock(&t->lock);
    if (t->nrx == t->rx_cap) {
        t->rx_cap = t->rx_cap ? 2 * t->rx_cap : 16;
        t->rx = realloc(t->rx, t->rx_cap * sizeof *t->rx);
        if (!t->rx)
            abort();
    }
    t->rx[t->nrx++] = (struct fz_frame){ d, len };
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

void fz_close_in(struct fz_tp *t)
{
    pthread_mutex_lock(&t->lock);
    t->in_closed = 1;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static int fz_setup_ring(struct rd_transport *tp, enum rd_dir dir, size_t frame_size, unsigned depth)
{
    struct fz_tp *t = fz_of(tp);
    /* a hostile peer must not make us allocate what the real transports would refuse */
    if (frame_size > RD_FRAME_HDR + (size_t)RD_MAX_CHUNK || depth == 0 || depth > 1024)
        return rd_fail(RD_EIO, "fuzz transport: ring %zu x %u out of range", frame_size, depth);
    pthread_mutex_lock(&t->lock);
    if (dir == RD_DIR_SEND)
        t->ring_send = frame_size;
    else
        t->ring_recv = frame_size;
    t->setup_calls++;
    pthread_mutex_unlock(&t->lock);
    return RD_OK;
}

static int fz_get_send_buf(struct rd_transport *tp, struct rd_buf **out)
{
    struct fz_tp *t = fz_of(tp);
    pthread_mutex_lock(&t->lock);
    size_t cap = t->ring_send ? t->ring_send : RD_CTRL_FRAME;
    int down = t->down;
    pthread_mutex_unlock(&t->lock);
    if (down)
        return rd_fail(RD_ESTREAM, "transfer aborted");
    struct rd_buf *b = calloc(1, sizeof *b);
    if (!b)
        abort();
    b->data = calloc(1, cap);
    if (!b->data)
        abort();
    b->cap = cap;
    *out = b;
    return RD_OK;
}

static void free_buf(struct rd_buf *b)
{
    free(b->data);
    free(b);
}

static int fz_send(struct rd_transport *tp, struct rd_buf *b)
{
    struct fz_tp *t = fz_of(tp);
    if (b->len > b->cap)
        abort();   /* the code under test overran its own send buffer */
    pthread_mutex_lock(&t->lock);
    long n = (long)t->sends++;
    int fail = t->down || n == t->fail_send;
    if (n == t->fail_send) {
        t->down = 1;   /* the link died: the receiving side learns it too */
        pthread_cond_broadcast(&t->cond);
    }
    pthread_mutex_unlock(&t->lock);
    if (fail) {
        free_buf(b);
        return rd_fail(RD_ESTREAM, "connection to %s lost", tp->peer);
    }
    if (t->on_send)
        t->on_send(t, b->data, b->len, t->arg);
    pthread_mutex_lock(&t->lock);
    if (t->ntx < FZ_MAX_FRAMES)
        t->tx[t->ntx++] = (struct fz_frame){ dup_bytes(b->data, b->len), b->len };
    pthread_mutex_unlock(&t->lock);
    free_buf(b);
    return RD_OK;
}

static int fz_recv(struct rd_transport *tp, struct rd_buf **out, int timeout_ms)
{
    struct fz_tp *t = fz_of(tp);
    if (t->on_recv)
        t->on_recv(t, t->arg);
    pthread_mutex_lock(&t->lock);
    while (t->rx_head == t->nrx && !t->down && !t->in_closed && t->blocking)
        pthread_cond_wait(&t->cond, &t->lock);
    if (t->rx_head == t->nrx || t->down) {
        pthread_mutex_unlock(&t->lock);
        return rd_fail(RD_ESTREAM, "connection to %s closed by peer", tp->peer);
    }
    struct fz_frame f = t->rx[t->rx_head++];
    size_t cap = t->ring_recv ? t->ring_recv : RD_CTRL_FRAME;
    pthread_mutex_unlock(&t->lock);
    if (f.len > cap) {
        return rd_fail(RD_ESTREAM, "peer %s sent a %zu-byte frame, larger than the %zu agreed",
                       tp->peer, f.len, cap);
    }
    struct rd_buf *b = calloc(1, sizeof *b);
    if (!b)
        abort();
    b->data = dup_bytes(f.data, f.len);   /* exactly f.len bytes: reading past the frame is an ASan report */
    b->len = f.len;
    b->cap = cap;
    *out = b;
    return RD_OK;
}

static void fz_release(struct rd_transport *tp, struct rd_buf *b)
{
    free_buf(b);
}

static int fz_drain(struct rd_transport *tp)
{
    struct fz_tp *t = fz_of(tp);
    pthread_mutex_lock(&t->lock);
    int down = t->down;
    pthread_mutex_unlock(&t->lock);
    return down ? rd_fail(RD_ESTREAM, "connection to %s lost", tp->peer) : RD_OK;
}

static void fz_shutdown(struct rd_transport *tp)
{
    struct fz_tp *t = fz_of(tp);
    pthread_mutex_lock(&t->lock);
    t->down = 1;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void fz_close(struct rd_transport *tp)
{
    fz_shutdown(tp);   /* the owner frees with fz_free */
}

const struct rd_transport_ops fz_ops = {
    .name = "fuzz",
    .setup_ring = fz_setup_ring,
    .get_send_buf = fz_get_send_buf,
    .send = fz_send,
    .send_ref = NULL,
    .recv = fz_recv,
    .release = fz_release,
    .drain = fz_drain,
    .shutdown = fz_shutdown,
    .close = fz_close,
};
