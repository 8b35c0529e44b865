/* rd_defer.c - see rd_defer.h. */
#include "engine/rd_defer.h"

#include "util/rd_clock.h"

#include <time.h>

#define STOP_CHECK_NS 20000000L   /* how often a waiting producer looks at the stop flag */

void rd_defer_wait_init(struct rd_defer_wait *w)
{
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->pending = 0;
    w->err = 0;
}

void rd_defer_wait_destroy(struct rd_defer_wait *w)
{
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

void rd_defer_wait_add(struct rd_defer_wait *w)
{
    pthread_mutex_lock(&w->mu);
    w->pending++;
    pthread_mutex_unlock(&w->mu);
}

void rd_defer_wait_done(struct rd_defer_wait *w, int err)
{
    pthread_mutex_lock(&w->mu);
    if (err && !w->err)
        w->err = err;
    if (w->pending && --w->pending == 0)
        pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void rd_defer_wait_fail(struct rd_defer_wait *w, int err)
{
    pthread_mutex_lock(&w->mu);
    if (!w->err)
        w->err = err;
    pthread_mutex_unlock(&w->mu);
}

int rd_defer_wait_failed(struct rd_defer_wait *w)
{
    pthread_mutex_lock(&w->mu);
    int failed = w->err != 0;
    pthread_mutex_unlock(&w->mu);
    return failed;
}

int rd_defer_wait_all(struct rd_defer_wait *w, const atomic_int *stop)
{
    pthread_mutex_lock(&w->mu);
    /* a timed wait: the engine wakes a stopped producer with a signal, which a condition
     * wait may sleep through */
    while (w->pending && !(stop && atomic_load(stop))) {
        struct timespec ts;
        rd_deadline_ns(&ts, STOP_CHECK_NS);
        rd_cond_wait_until(&w->cv, &w->mu, &ts);
    }
    int rc = w->pending ? RD_DEFER_STOPPED : w->err;
    if (!w->pending)
        w->err = 0;
    pthread_mutex_unlock(&w->mu);
    return rc;
}
