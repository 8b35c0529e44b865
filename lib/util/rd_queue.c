#include "util/rd_queue.h"

#include <stdlib.h>

int rd_queue_init(struct rd_queue *q, unsigned cap)
{
    q->items = calloc(cap, sizeof *q->items);
    q->cap = cap;
    q->head = q->count = 0;
    q->closed = 0;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    return q->items ? 0 : -1;
}

void rd_queue_destroy(struct rd_queue *q)
{
    free(q->items);
    q->items = NULL;
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
}

int rd_queue_push(struct rd_queue *q, struct rd_buf *b)
{
    pthread_mutex_lock(&q->lock);
    while (!q->closed && q->count == q->cap)
        pthread_cond_wait(&q->not_full, &q->lock);
    int rc = -1;
    if (!q->closed) {
        q->items[(q->head + q->count) % q->cap] = b;
        q->count++;
        pthread_cond_signal(&q->not_empty);
        rc = 0;
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

struct rd_buf *rd_queue_pop(struct rd_queue *q)
{
    struct rd_buf *b = NULL;
    pthread_mutex_lock(&q->lock);
    while (!q->closed && q->count == 0)
        pthread_cond_wait(&q->not_empty, &q->lock);
    if (q->count) {
        b = q->items[q->head];
        q->head = (q->head + 1) % q->cap;
        q->count--;
        pthread_cond_signal(&q->not_full);
    }
    pthread_mutex_unlock(&q->lock);
    return b;
}

void rd_queue_close(struct rd_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->lock);
}

int rd_queue_closed(struct rd_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int closed = q->closed;
    pthread_mutex_unlock(&q->lock);
    return closed;
}
