/* mem_transport.c - see mem_transport.h.
 *
 * Locking: one mutex per link guards the link state, both inboxes and the pool lists; a
 * per-endpoint send mutex serializes send() calls on that endpoint so frames are numbered
 * and delivered in one order. The only blocking waits are rd_pool_get (outside the link
 * lock) and the inbox condition variable (inside it). Lock order: send_lock, link lock,
 * pool lock. Every buffer's owner is the rd_pool it belongs to, so a buffer goes back to its
 * own pool even after setup_ring replaced the pool; replaced pools stay allocated until both
 * ends are closed, so a thread still blocked on one can never touch freed memory.
 */
#include "mem_transport.h"

#include "util/rd_error.h"
#include "transport/rd_pool.h"
#include "wire/rd_proto.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MEM_MAX_POOLS 3              /* the control pool + up to two setup_ring calls */
#define MEM_INBOX_CAP 4096           /* > every buffer of MEM_MAX_POOLS pools of RD_MAX_DEPTH */

struct mem_entry {
    struct rd_buf *b;
    size_t len;   /* frame length as sent; > b->cap means it did not fit */
};

struct mem_link;

struct mem_ep {
    struct mem_link *link;
    struct rd_transport *tp;
    int down;                         /* shutdown() was called on this end */
    int closed;
    struct rd_pool *send_pools[MEM_MAX_POOLS], *recv_pools[MEM_MAX_POOLS];
    unsigned nsend, nrecv;            /* the current pool is the last one */
    struct mem_entry inbox[MEM_INBOX_CAP];   /* frames on their way to this end */
    unsigned head, count;
    pthread_cond_t arrived;
    pthread_mutex_t send_lock;
    struct mem_faults faults;         /* on frames this end sends */
    unsigned long sent, received;
    atomic_ulong by_ref;              /* frames sent with send_ref (mem_file_ops) */
    struct mem_entry held;            /* a frame being reordered (sent by this end) */
    int have_held;
};

struct mem_link {
    pthread_mutex_t lock;
    int dead;        /* one end shut down, or killed */
    int killed;
    int refs;        /* ends not yet closed */
    struct mem_ep ep[2];
};

void mem_faults_none(struct mem_faults *f)
{
    memset(f, 0, sizeof *f);
    f->corrupt_frame = f->drop_frame = f->dup_frame = f->reorder_frame = f->kill_after = -1;
}

static struct mem_ep *ep_of(struct rd_transport *tp)
{
    return tp->priv;
}

static struct mem_ep *peer_of(struct mem_ep *e)
{
    return &e->link->ep[e == &e->link->ep[0] ? 1 : 0];
}

static struct rd_pool *new_pool(unsigned count, size_t frame_size)
{
    struct rd_pool *p = malloc(sizeof *p);
    if (!p)
        return NULL;
    /* owner = the pool itself: release and send put buffers back where they came from */
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

static void put_back(struct rd_buf *b)
{
    rd_pool_put(b->owner, b);
}

/* Both under the link lock. */
static void close_recv_pools(struct mem_ep *e)
{
    for (unsigned i = 0; i < e->nrecv; i++)
        rd_pool_close(e->recv_pools[i]);
}

static void kill_locked(struct mem_link *l)
{
    if (!l->dead) {
        l->dead = 1;
        l->killed = 1;
    }
    for (int i = 0; i < 2; i++) {
        close_recv_pools(&l->ep[i]);   /* wake senders blocked on the peer's buffers */
        pthread_cond_broadcast(&l->ep[i].arrived);
    }
}

/* The error an end sees once it cannot use the link; under the link lock. */
static int link_error(struct mem_ep *e, const char *what)
{
    struct rd_transport *tp = e->tp;
    if (e->down)
        return rd_fail(RD_ESTREAM, "transfer aborted");
    if (e->link->killed)
        return rd_fail(RD_ESTREAM, "connection to %s lost %s (link killed)", tp->peer, what);
    return rd_fail(RD_ESTREAM, "connection to %s closed by peer %s", tp->peer, what);
}

static void inbox_push(struct mem_ep *to, struct mem_entry en)
{
    if (to->count == MEM_INBOX_CAP)
        abort();   /* cannot happen: every entry holds one of a bounded number of buffers */
    to->inbox[(to->head + to->count) % MEM_INBOX_CAP] = en;
    to->count++;
}

/* ---- connection set-up ---- */

int mem_pair(struct rd_transport **a, struct rd_transport **b)
{
    struct mem_link *l = calloc(1, sizeof *l);
    struct rd_transport *t[2] = { rd_transport_new(&mem_ops), rd_transport_new(&mem_ops) };
    if (!l || !t[0] || !t[1])
        goto oom;
    pthread_mutex_init(&l->lock, NULL);
    l->refs = 2;
    for (int i = 0; i < 2; i++) {
        struct mem_ep *e = &l->ep[i];
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&e->arrived, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&e->send_lock, NULL);
        e->link = l;
        e->tp = t[i];
        mem_faults_none(&e->faults);
        e->send_pools[0] = new_pool(MEM_CTRL_FRAMES, RD_CTRL_FRAME);
        e->recv_pools[0] = new_pool(MEM_CTRL_FRAMES, RD_CTRL_FRAME);
        if (e->send_pools[0])
            e->nsend = 1;
        if (e->recv_pools[0])
            e->nrecv = 1;
        t[i]->priv = e;
        snprintf(t[i]->peer, sizeof t[i]->peer, "mem:%c", i ? 'a' : 'b');
        snprintf(t[i]->desc, sizeof t[i]->desc, "mem");
    }
    if (!l->ep[0].nsend || !l->ep[0].nrecv || !l->ep[1].nsend || !l->ep[1].nrecv) {
        t[1]->ops->close(t[1]);   /* the second close frees the link */
        t[0]->ops->close(t[0]);
        return rd_fail(RD_EIO, "out of memory");
    }
    *a = t[0];
    *b = t[1];
    return RD_OK;
oom:
    free(l);
    free(t[0]);
    free(t[1]);
    return rd_fail(RD_EIO, "out of memory");
}

void mem_set_faults(struct rd_transport *tp, const struct mem_faults *f)
{
    struct mem_ep *e = ep_of(tp);
    pthread_mutex_lock(&e->link->lock);
    e->faults = *f;
    pthread_mutex_unlock(&e->link->lock);
}

void mem_kill(struct rd_transport *tp)
{
    struct mem_link *l = ep_of(tp)->link;
    pthread_mutex_lock(&l->lock);
    kill_locked(l);
    pthread_mutex_unlock(&l->lock);
}

unsigned long mem_frames_sent(struct rd_transport *tp)
{
    struct mem_ep *e = ep_of(tp);
    pthread_mutex_lock(&e->link->lock);
    unsigned long n = e->sent;
    pthread_mutex_unlock(&e->link->lock);
    return n;
}

unsigned long mem_frames_received(struct rd_transport *tp)
{
    struct mem_ep *e = ep_of(tp);
    pthread_mutex_lock(&e->link->lock);
    unsigned long n = e->received;
    pthread_mutex_unlock(&e->link->lock);
    return n;
}

static int mem_listen(struct rd_transport *lis, const struct rd_addr *addr)
{
    return rd_fail(RD_ECONNECT, "mem transport: use mem_pair()");
}

static int mem_accept(struct rd_transport *lis, struct rd_transport **conn, int timeout_ms)
{
    return rd_fail(RD_ECONNECT, "mem transport: use mem_pair()");
}

static int mem_listen_fd(struct rd_transport *lis)
{
    return -1;
}

static int mem_connect(struct rd_transport *tp, const struct rd_addr *addr)
{
    return rd_fail(RD_ECONNECT, "mem transport: use mem_pair()");
}

/* ---- data path ---- */

static int mem_setup_ring(struct rd_transport *tp, enum rd_dir dir, size_t frame_size, unsigned depth)
{
    struct mem_ep *e = ep_of(tp);
    struct mem_link *l = e->link;
    if (depth == 0 || frame_size == 0)
        return rd_fail(RD_EIO, "mem transport: ring of %u frames of %zu bytes", depth, frame_size);
    struct rd_pool *p = new_pool(depth, frame_size);
    if (!p)
        return rd_fail(RD_EIO, "cannot allocate %u buffers of %zu bytes", depth, frame_size);
    pthread_mutex_lock(&l->lock);
    struct rd_pool **list = dir == RD_DIR_SEND ? e->send_pools : e->recv_pools;
    unsigned *n = dir == RD_DIR_SEND ? &e->nsend : &e->nrecv;
    int rc = RD_OK;
    if (e->down || l->dead)
        rc = link_error(e, "before the transfer");
    else if (*n == MEM_MAX_POOLS)
        rc = rd_fail(RD_EIO, "mem transport: setup_ring called too often");
    else
        list[(*n)++] = p;
    pthread_mutex_unlock(&l->lock);
    if (rc)
        free_pool(p);
    return rc;
}

static int mem_get_send_buf(struct rd_transport *tp, struct rd_buf **out)
{
    struct mem_ep *e = ep_of(tp);
    pthread_mutex_lock(&e->link->lock);
    struct rd_pool *p = e->send_pools[e->nsend - 1];
    pthread_mutex_unlock(&e->link->lock);
    *out = rd_pool_get(p);
    return *out ? RD_OK : rd_fail(RD_ESTREAM, "transfer aborted");
}

static int mem_send(struct rd_transport *tp, struct rd_buf *b)
{
    struct mem_ep *e = ep_of(tp), *peer = peer_of(e);
    struct mem_link *l = e->link;
    struct mem_entry copy[2] = { { NULL, 0 }, { NULL, 0 } };
    int rc = RD_OK;
    size_t len = b->len;

    pthread_mutex_lock(&e->send_lock);
    pthread_mutex_lock(&l->lock);
    if (e->down || l->dead) {
        rc = link_error(e, "while sending");
        pthread_mutex_unlock(&l->lock);
        goto out;
    }
    long idx = (long)e->sent;
    struct mem_faults f = e->faults;
    if (f.kill_after >= 0 && idx >= f.kill_after) {
        kill_locked(l);
        rc = link_error(e, "while sending");
        pthread_mutex_unlock(&l->lock);
        goto out;
    }
    e->sent++;
    struct rd_pool *dst = peer->recv_pools[peer->nrecv - 1];
    pthread_mutex_unlock(&l->lock);

    if (idx == f.drop_frame)
        goto out;
    int copies = idx == f.dup_frame ? 2 : 1;
    for (int i = 0; i < copies; i++) {
        struct rd_buf *d = rd_pool_get(dst);   /* blocks while the peer has no free buffer */
        if (!d) {
            pthread_mutex_lock(&l->lock);
            rc = link_error(e, "while sending");
            pthread_mutex_unlock(&l->lock);
            goto out;
        }
        size_t n = len < d->cap ? len : d->cap;
        memcpy(d->data, b->data, n);
        d->len = n;
        if (idx == f.corrupt_frame && f.corrupt_offset < n)
            d->data[f.corrupt_offset] ^= f.corrupt_xor;
        copy[i] = (struct mem_entry){ d, len };
    }

    pthread_mutex_lock(&l->lock);
    if (e->down || l->dead) {
        rc = link_error(e, "while sending");
    } else if (idx == f.reorder_frame) {
        e->held = copy[0];
        e->have_held = 1;
        copy[0].b = NULL;
        if (copy[1].b) {
            inbox_push(peer, copy[1]);
            copy[1].b = NULL;
            pthread_cond_broadcast(&peer->arrived);
        }
    } else {
        for (int i = 0; i < copies; i++) {
            inbox_push(peer, copy[i]);
            copy[i].b = NULL;
        }
        if (e->have_held) {
            inbox_push(peer, e->held);
            e->have_held = 0;
        }
        pthread_cond_broadcast(&peer->arrived);
    }
    pthread_mutex_unlock(&l->lock);
out:
    for (int i = 0; i < 2; i++)
        if (copy[i].b)
            put_back(copy[i].b);
    put_back(b);   /* the sender's buffer is free again: the bytes were copied */
    pthread_mutex_unlock(&e->send_lock);
    return rc;
}

static int mem_recv(struct rd_transport *tp, struct rd_buf **out, int timeout_ms)
{
    struct mem_ep *e = ep_of(tp);
    struct mem_link *l = e->link;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    if (timeout_ms > 0) {
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&l->lock);
    for (;;) {
        if (e->down) {
            int rc = link_error(e, "while receiving");
            pthread_mutex_unlock(&l->lock);
            return rc;
        }
        if (e->count) {
            struct mem_entry en = e->inbox[e->head];
            e->head = (e->head + 1) % MEM_INBOX_CAP;
            e->count--;
            e->received++;
            pthread_mutex_unlock(&l->lock);
            if (en.len > en.b->cap) {
                size_t cap = en.b->cap;
                put_back(en.b);
                return rd_fail(RD_ESTREAM, "peer %s sent a %zu-byte frame, larger than the %zu agreed",
                               tp->peer, en.len, cap);
            }
            *out = en.b;
            return RD_OK;
        }
        if (l->dead) {
            int rc = link_error(e, "while receiving");
            pthread_mutex_unlock(&l->lock);
            return rc;
        }
        if (timeout_ms < 0) {
            pthread_cond_wait(&e->arrived, &l->lock);
        } else if (pthread_cond_timedwait(&e->arrived, &l->lock, &deadline) == ETIMEDOUT && !e->count &&
                   !l->dead && !e->down) {
            pthread_mutex_unlock(&l->lock);
            return rd_fail(RD_ECONNECT, "timed out waiting for %s", tp->peer);
        }
    }
}

static void mem_release(struct rd_transport *tp, struct rd_buf *b)
{
    put_back(b);
}

static int mem_drain(struct rd_transport *tp)
{
    if (ep_of(tp)->faults.drain_fails)
        return rd_fail(RD_ESTREAM, "connection to %s lost (RDMA DISCONNECTED)", tp->peer);
    return RD_OK;   /* send() returns once the frame sits in the peer's inbox */
}

static void mem_shutdown(struct rd_transport *tp)
{
    struct mem_ep *e = ep_of(tp), *peer = peer_of(e);
    struct mem_link *l = e->link;
    pthread_mutex_lock(&l->lock);
    e->down = 1;
    l->dead = 1;
    for (unsigned i = 0; i < e->nsend; i++)
        rd_pool_close(e->send_pools[i]);   /* our borrowers */
    close_recv_pools(e);                   /* the peer's senders */
    close_recv_pools(peer);                /* our senders */
    pthread_cond_broadcast(&e->arrived);
    pthread_cond_broadcast(&peer->arrived);
    pthread_mutex_unlock(&l->lock);
}

static void mem_close(struct rd_transport *tp)
{
    struct mem_ep *e = ep_of(tp);
    struct mem_link *l = e->link;
    mem_shutdown(tp);
    pthread_mutex_lock(&l->lock);
    e->closed = 1;
    int last = --l->refs == 0;
    pthread_mutex_unlock(&l->lock);
    free(tp);
    if (!last)
        return;
    for (int i = 0; i < 2; i++) {
        struct mem_ep *x = &l->ep[i];
        for (unsigned j = 0; j < x->nsend; j++)
            free_pool(x->send_pools[j]);
        for (unsigned j = 0; j < x->nrecv; j++)
            free_pool(x->recv_pools[j]);
        pthread_cond_destroy(&x->arrived);
        pthread_mutex_destroy(&x->send_lock);
    }
    pthread_mutex_destroy(&l->lock);
    free(l);
}

#define MEM_OPS                        \
    .name = "mem",                     \
    .listen = mem_listen,              \
    .accept = mem_accept,              \
    .listen_fd = mem_listen_fd,        \
    .connect = mem_connect,            \
    .setup_ring = mem_setup_ring,      \
    .get_send_buf = mem_get_send_buf,  \
    .send = mem_send,                  \
    .recv = mem_recv,                  \
    .release = mem_release,            \
    .drain = mem_drain,                \
    .shutdown = mem_shutdown,          \
    .close = mem_close

const struct rd_transport_ops mem_ops = { MEM_OPS };

/* send_ref as TCP's: the payload at b->ref goes out after the header */
static int mem_send_ref(struct rd_transport *tp, struct rd_buf *b)
{
    memmove(b->data + RD_FRAME_HDR, b->ref, b->ref_len);
    b->len = RD_FRAME_HDR + b->ref_len;
    rd_ref_done(b);
    atomic_fetch_add(&ep_of(tp)->by_ref, 1);
    return mem_send(tp, b);
}

static const struct rd_transport_ops mem_file_ops = { MEM_OPS, .send_ref = mem_send_ref };

void mem_use_send_ref(struct rd_transport *ep)
{
    ep->ops = &mem_file_ops;
}

unsigned long mem_frames_by_ref(struct rd_transport *ep)
{
    return atomic_load(&ep_of(ep)->by_ref);
}
