/* rd_hold.c - frames lent past write_fn (rd_hold.h). Transports take releases from any thread:
 * each guards its free list (rd_pool, the verbs connection's mutex), as a relay's by-reference
 * sends already need. */
#include "engine/rd_hold.h"

#include <stdlib.h>

void rd_holds_init(struct rd_holds *all)
{
    pthread_mutex_init(&all->mu, NULL);
    pthread_cond_init(&all->back, NULL);
    all->out = 0;
}

void rd_holds_wait(struct rd_holds *all)
{
    pthread_mutex_lock(&all->mu);
    while (all->out)
        pthread_cond_wait(&all->back, &all->mu);
    pthread_mutex_unlock(&all->mu);
    pthread_cond_destroy(&all->back);
    pthread_mutex_destroy(&all->mu);
}

struct rd_hold *rd_hold_lend(struct rd_holds *all, struct rd_transport *tp, struct rd_buf *b)
{
    struct rd_hold *h = malloc(sizeof *h);
    if (!h)
        return NULL;
    atomic_init(&h->refs, 1);
    h->tp = tp;
    h->b = b;
    h->all = all;
    pthread_mutex_lock(&all->mu);
    all->out++;
    pthread_mutex_unlock(&all->mu);
    return h;
}

void rd_hold_more(struct rd_hold *h)
{
    atomic_fetch_add(&h->refs, 1);
}

void rd_hold_drop(struct rd_hold *h)
{
    if (atomic_fetch_sub(&h->refs, 1) != 1)
        return;
    struct rd_holds *all = h->all;
    h->tp->ops->release(h->tp, h->b);
    free(h);
    pthread_mutex_lock(&all->mu);
    if (--all->out == 0)
        pthread_cond_broadcast(&all->back);
    pthread_mutex_unlock(&all->mu);
}
