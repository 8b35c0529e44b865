/* fz_transport.h - a scripted rd_transport for the fuzz targets: no sockets, no pools.
 *
 * recv() hands out the frames queued with fz_push (each in a buffer of exactly its length,
 * so ASan sees any read past the frame); once the queue is empty and fz_close_in was called
 * it fails like a peer that hung up. An on_recv hook may push the next frame lazily, when
 * the code under test asks for it (a hostile peer that answers what it was just sent).
 * Every frame passed to send() is recorded in tx[]; an on_send hook sees it first.
 * Thread-safe, because rd_relay receives downstream on a monitor thread: in blocking mode
 * recv() waits for a push, fz_close_in or shutdown instead of failing at once.
 */
#ifndef FZ_TRANSPORT_H
#define FZ_TRANSPORT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/rd_transport.h"

#define FZ_MAX_FRAMES 256   /* tx[] keeps at most this many frames (later ones are counted) */

struct fz_frame {
    uint8_t *data;
    size_t len;
};

struct fz_tp {
    struct rd_transport tp;        /* tp.priv points back here */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct fz_frame *rx;           /* every frame pushed; recv() hands out copies of rx[rx_head..nrx) */
    size_t nrx, rx_head, rx_cap;
    int in_closed;                 /* no more frames will be pushed */
    int blocking;                  /* recv waits for a push instead of failing */
    int down;                      /* shutdown() was called */
    struct fz_frame tx[FZ_MAX_FRAMES];
    size_t ntx, sends;             /* recorded frames, send() calls */
    long fail_send;                /* this send() (0-based) fails and kills the link; -1 never */
    size_t ring_send, ring_recv;   /* frame size set by setup_ring, 0 = control frames */
    unsigned setup_calls;
    /* hooks, called without the lock held */
    void (*on_recv)(struct fz_tp *t, void *arg);
    void (*on_send)(struct fz_tp *t, const uint8_t *frame, size_t len, void *arg);
    void *arg;
};

extern const struct rd_transport_ops fz_ops;

void fz_init(struct fz_tp *t, const char *peer);
void fz_free(struct fz_tp *t);
/* Queue a frame (copied) for recv(). */
void fz_push(struct fz_tp *t, const void *frame, size_t len);
/* Nothing more will come: recv() fails once the queue is drained. */
void fz_close_in(struct fz_tp *t);

#endif
