/* rd_pool.h - a fixed set of aligned frame buffers with a blocking free list.
 * Used by transports that own plain memory (TCP, the in-memory test transport). */
#ifndef RD_POOL_H
#define RD_POOL_H

#include <pthread.h>

#include "transport/rd_transport.h"

struct rd_pool {
    struct rd_buf *bufs;
    unsigned count;
    unsigned *free_slots;   /* stack of free slot indexes */
    unsigned nfree;
    int closed;             /* set by rd_pool_close: waiters give up */
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

/* count frames of frame_size bytes each; 0 or -1 (out of memory). */
int rd_pool_init(struct rd_pool *p, unsigned count, size_t frame_size, void *owner);
void rd_pool_destroy(struct rd_pool *p);
/* Take a free buffer, waiting while none is free; NULL once the pool is closed. */
struct rd_buf *rd_pool_get(struct rd_pool *p);
/* Same, but give up after timeout_ms: NULL and *timed_out = 1. */
struct rd_buf *rd_pool_get_timed(struct rd_pool *p, int timeout_ms, int *timed_out);
void rd_pool_put(struct rd_pool *p, struct rd_buf *b);
/* Wake every waiter and make later gets fail. */
void rd_pool_close(struct rd_pool *p);

#endif
