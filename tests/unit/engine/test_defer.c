/* test_defer.c - engine/rd_defer: a producer waits for the parts the lanes read, and stops
 * waiting when the transfer failed (the lanes then leave queued parts unread). */
#include "check.h"

#include "engine/rd_defer.h"
#include "util/rd_clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

struct reader {
    struct rd_defer_wait *w;
    int parts, err_at, err;   /* part err_at fails with err (-1: none fails) */
};

static void *read_parts(void *arg)
{
    struct reader *r = arg;
    for (int i = 0; i < r->parts; i++) {
        struct timespec ts = { 0, 2000000L };
        nanosleep(&ts, NULL);
        rd_defer_wait_done(r->w, i == r->err_at ? r->err : 0);
    }
    return NULL;
}

/* 10 parts read on another thread: the wait returns once all are, with 0; then a failure in
 * the next file's parts is the first one's, and the count is the next file's alone. */
static void t_waits_for_every_part(void)
{
    struct rd_defer_wait w;
    rd_defer_wait_init(&w);
    for (int i = 0; i < 10; i++)
        rd_defer_wait_add(&w);
    struct reader r = { .w = &w, .parts = 10, .err_at = -1 };
    pthread_t t;
    CHECK_OR(pthread_create(&t, NULL, read_parts, &r) == 0, return);
    CHECK_EQ_I(rd_defer_wait_all(&w, NULL), 0);
    CHECK_EQ_U(w.pending, 0);
    pthread_join(t, NULL);

    for (int i = 0; i < 5; i++)
        rd_defer_wait_add(&w);
    r = (struct reader){ .w = &w, .parts = 5, .err_at = 1, .err = -1 };
    CHECK_OR(pthread_create(&t, NULL, read_parts, &r) == 0, return);
    CHECK_EQ_I(rd_defer_wait_all(&w, NULL), -1);
    pthread_join(t, NULL);
    CHECK_EQ_I(rd_defer_wait_failed(&w), 0);   /* the next file starts clean */
    rd_defer_wait_fail(&w, 5);                 /* EIO, met by the producer itself */
    CHECK_EQ_I(rd_defer_wait_failed(&w), 1);
    CHECK_EQ_I(rd_defer_wait_all(&w, NULL), 5);
    rd_defer_wait_destroy(&w);
}

static void *set_stop_later(void *arg)
{
    struct timespec ts = { 0, 100000000L };
    nanosleep(&ts, NULL);
    atomic_store((atomic_int *)arg, 1);
    return NULL;
}

/* Parts that will never be read (the lanes were shut) and the transfer's stop flag set: the
 * wait ends within a few of its 20 ms checks, and says so. */
static void t_stop_ends_the_wait(void)
{
    struct rd_defer_wait w;
    rd_defer_wait_init(&w);
    rd_defer_wait_add(&w);
    rd_defer_wait_add(&w);
    rd_defer_wait_done(&w, 0);   /* one read, one never */
    atomic_int stop = 0;
    pthread_t t;
    CHECK_OR(pthread_create(&t, NULL, set_stop_later, &stop) == 0, return);
    double t0 = rd_now();
    CHECK_EQ_I(rd_defer_wait_all(&w, &stop), RD_DEFER_STOPPED);
    double dt = rd_now() - t0;
    CHECK(dt >= 0.09 && dt < 2.0);
    pthread_join(t, NULL);
    CHECK_EQ_I(rd_defer_wait_all(&w, &stop), RD_DEFER_STOPPED);   /* still stopped: at once */
    rd_defer_wait_destroy(&w);
}

int main(void)
{
    RUN(t_waits_for_every_part);
    RUN(t_stop_ends_the_wait);
    return check_summary();
}
