/* rd_stripe_int.h - the insides of a striped TCP transport, shared by rd_stripe.c (the
 * workers that copy) and rd_stripe_forward.c (a relay's pairs that splice). */
#ifndef RD_STRIPE_INT_H
#define RD_STRIPE_INT_H

#include "transport/rd_pool.h"
#include "transport/rd_session.h"
#include "transport/rd_transport.h"
#include "util/rd_queue.h"

#include <pthread.h>
#include <stdatomic.h>

struct stripe;

struct worker {
    struct stripe *s;
    struct rd_transport *conn;
    int err;                /* why this connection stopped (held, see rd_errctx_bind), 0 if not */
    char err_msg[512];
    struct rd_queue q;      /* send: frames to write; recv: frames read, in arrival order */
    struct rd_pool pool;    /* recv: this connection's buffers */
    int have_q, have_pool, started;
    pthread_t th;
};

struct stripe {
    unsigned n;
    struct worker w[RD_MAX_STREAMS];
    enum rd_dir dir;           /* the striped direction, once setup_ring ran (0 before) */
    struct rd_pool send_pool;  /* send: the ring the engine fills */
    int have_send_pool;
    uint64_t next;             /* the next striped frame (its connection: next % n; 64 bits, as a relay counts frames) */
    atomic_int down;
    atomic_int recv_shut;      /* ops->shut_recv: receiving stopped, sending goes on */
    pthread_mutex_t lock;
    pthread_cond_t idle;
    unsigned in_flight;        /* send: frames queued or being written */
    int failed;
    int recv_lazy;             /* recv: the workers start at the first recv (a relay that
                                * forwards never starts them) */
    /* direct mode (connections that own registered rings: RDMA): no workers; each
     * connection has its own ring and the engine's frames are its frames */
    int direct;
    uint64_t gnext;            /* sending: the next frame lent out (its connection: gnext % n) */
    struct lent { struct rd_buf *b; unsigned conn; } *lent;   /* frames out, and whose */
    unsigned nlent, caplent;
};

/* ops->forward of a striped TCP transport to another with as many connections: connection i
 * spliced to connection i, each pair on its own thread (rd_stripe_forward.c). */
int rd_stripe_forward(struct rd_transport *tp, struct rd_transport *to, struct rd_forward *fw);

#endif
