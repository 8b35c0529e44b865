#include "transport/rd_pool.h"

#include "util/rd_clock.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

int rd_pool_init(struct rd_pool *p, unsigned count, size_t frame_size, void *owner)
{
    p->bufs = calloc(count, sizeof *p->bufs);
    p->free_slots = calloc(count, sizeof *p->free_slots);
    p->count = 0;
    p->nfree = 0;
    p->closed = 0;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    if (!p->bufs || !p->free_slots)
        goto fail;
    for (unsigned i = 0; i < count; i++) {
        struct rd_buf *b = &p->bufs[i];
        b->data = rd_frame_alloc(frame_size);
        if (!b->data)
            goto fail;
        b->cap = frame_size;
        b->slot = i;
        b->owner = owner;
        p->count++;
        p->free_slots[p->nfree++] = i;
    }
    return 0;
fail:
    rd_pool_destroy(p);
    return -1;
}

void rd_pool_destroy(struct rd_pool *p)
{
    if (p->bufs)
        for (unsigned i = 0; i < p->count; i++)
            rd_frame_free(p->bufs[i].data);
    free(p->bufs);
    free(p->free_slots);
    p->bufs = NULL;
    p->free_slots = NULL;
    p->count = p->nfree = 0;
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
}

struct rd_buf *rd_pool_get(struct rd_pool *p)
{
    struct rd_buf *b = NULL;
    pthread_mutex_lock(&p->lock);
    while (!p->closed && p->nfree == 0)
        pthread_cond_wait(&p->cond, &p->lock);
    if (!p->closed)
        b = &p->bufs[p->free_slots[--p->nfree]];
    pthread_mutex_unlock(&p->lock);
    if (b)
        b->len = 0;
    return b;
}

struct rd_buf *rd_pool_get_timed(struct rd_pool *p, int timeout_ms, int *timed_out)
{
    struct rd_buf *b = NULL;
    struct timespec ts;
    rd_deadline_ns(&ts, (long long)timeout_ms * 1000000LL);
    *timed_out = 0;
    pthread_mutex_lock(&p->lock);
    while (!p->closed && p->nfree == 0)
        if (rd_cond_wait_until(&p->cond, &p->lock, &ts) == ETIMEDOUT) {
            *timed_out = p->nfree == 0 && !p->closed;
            break;
        }
    if (!p->closed && p->nfree)
        b = &p->bufs[p->free_slots[--p->nfree]];
    pthread_mutex_unlock(&p->lock);
    if (b)
        b->len = 0;
    return b;
}

void rd_pool_put(struct rd_pool *p, struct rd_buf *b)
{
    pthread_mutex_lock(&p->lock);
    p->free_slots[p->nfree++] = b->slot;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

void rd_pool_close(struct rd_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->closed = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}
