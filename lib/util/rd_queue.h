/* rd_queue.h - bounded FIFO of frame buffers between two threads of the engine. */
#ifndef RD_QUEUE_H
#define RD_QUEUE_H

#include <pthread.h>

struct rd_buf;

struct rd_queue {
    struct rd_buf **items;
    unsigned cap, head, count;
    int closed;
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
};

int rd_queue_init(struct rd_queue *q, unsigned cap);
void rd_queue_destroy(struct rd_queue *q);
/* 0, or -1 if the queue was closed (the item was not queued). */
int rd_queue_push(struct rd_queue *q, struct rd_buf *b);
/* The next item; NULL once the queue is closed and empty. */
struct rd_buf *rd_queue_pop(struct rd_queue *q);
/* No more pushes: poppers drain what is left, then get NULL. */
void rd_queue_close(struct rd_queue *q);
int rd_queue_closed(struct rd_queue *q);

#endif
