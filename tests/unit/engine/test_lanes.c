/* test_lanes.c - engine/rd_lanes: per-chunk work on N threads, handed back in submission order. */
#include "check.h"

#include "engine/rd_lanes.h"
#include "util/rd_error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

struct job {
    unsigned seq;
    unsigned lane;
    int done;
};

struct ctx {
    atomic_uint busy, max_busy;   /* lanes working at once */
    atomic_uint calls;
    unsigned fail_seq;            /* this job's work fails (UINT32_MAX: none) */
    atomic_int block;             /* lanes wait while set */
};

static void pause_us(long us)
{
    struct timespec ts = { 0, us * 1000 };
    nanosleep(&ts, NULL);
}

static int work(void *arg, unsigned lane, void *p)
{
    struct ctx *c = arg;
    struct job *j = p;
    unsigned now = atomic_fetch_add(&c->busy, 1) + 1;
    unsigned m = atomic_load(&c->max_busy);
    while (now > m && !atomic_compare_exchange_weak(&c->max_busy, &m, now))
        ;
    while (atomic_load(&c->block))
        pause_us(1000);
    pause_us((long)((j->seq * 7919u) % 5u) * 300);   /* jobs finish out of order */
    j->lane = lane;
    j->done = 1;
    atomic_fetch_add(&c->calls, 1);
    atomic_fetch_sub(&c->busy, 1);
    return j->seq == c->fail_seq ? RD_EIO : RD_OK;
}

struct producer {
    struct rd_lanes *l;
    struct job *jobs;
    unsigned n;
    _Atomic unsigned submitted;   /* read by the test while the producer runs */
    int refused;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    for (unsigned i = 0; i < p->n; i++) {
        if (rd_lanes_submit(p->l, &p->jobs[i])) {
            p->refused = 1;
            break;
        }
        p->submitted++;
    }
    rd_lanes_close(p->l);
    return NULL;
}

/* Many jobs, random durations, 4 lanes: taken back exactly in submission order, every one
 * done, by more than one lane at once, and never more in flight than the window. */
static void t_order_kept(void)
{
    enum { N = 400 };
    static struct job jobs[N];
    struct ctx c = { .fail_seq = UINT32_MAX };
    for (unsigned i = 0; i < N; i++)
        jobs[i] = (struct job){ .seq = i };
    struct rd_lanes *l = rd_lanes_new(4, 6, -1, work, &c);
    CHECK_OR(l != NULL, return);
    struct producer p = { .l = l, .jobs = jobs, .n = N };
    pthread_t t;
    pthread_create(&t, NULL, produce, &p);
    unsigned taken = 0, lanes_seen = 0;
    int rc;
    struct job *j;
    while ((j = rd_lanes_take(l, &rc))) {
        CHECK_EQ_U(j->seq, taken);
        CHECK(j->done);
        CHECK_EQ_I(rc, RD_OK);
        lanes_seen |= 1u << j->lane;
        taken++;
    }
    pthread_join(t, NULL);
    CHECK_EQ_U(taken, N);
    CHECK_EQ_U(atomic_load(&c.calls), N);
    CHECK(atomic_load(&c.max_busy) > 1);
    CHECK(atomic_load(&c.max_busy) <= 4);
    CHECK(lanes_seen != 0 && (lanes_seen & (lanes_seen - 1)) != 0);   /* more than one lane */
    rd_lanes_free(l);
}

/* A job whose work fails comes back in its place with the error, the others with RD_OK. */
static void t_result_in_place(void)
{
    enum { N = 50 };
    static struct job jobs[N];
    struct ctx c = { .fail_seq = 17 };
    for (unsigned i = 0; i < N; i++)
        jobs[i] = (struct job){ .seq = i };
    struct rd_lanes *l = rd_lanes_new(3, 8, -1, work, &c);
    CHECK_OR(l != NULL, return);
    struct producer p = { .l = l, .jobs = jobs, .n = N };
    pthread_t t;
    pthread_create(&t, NULL, produce, &p);
    int rc;
    struct job *j;
    unsigned taken = 0;
    while ((j = rd_lanes_take(l, &rc))) {
        CHECK_EQ_I(rc, j->seq == 17 ? RD_EIO : RD_OK);
        taken++;
    }
    pthread_join(t, NULL);
    CHECK_EQ_U(taken, N);
    rd_lanes_free(l);
}

/* The window bounds what is in flight: a submitter with the window full waits, and shut wakes
 * it (refused) and a taker (NULL); drop then hands back every job that was never taken. */
static void t_shut_wakes_and_drop(void)
{
    enum { N = 20, WINDOW = 3 };
    static struct job jobs[N];
    struct ctx c = { .fail_seq = UINT32_MAX };
    atomic_store(&c.block, 1);   /* the lanes hold their jobs: the window fills */
    for (unsigned i = 0; i < N; i++)
        jobs[i] = (struct job){ .seq = i };
    struct rd_lanes *l = rd_lanes_new(2, WINDOW, -1, work, &c);
    CHECK_OR(l != NULL, return);
    struct producer p = { .l = l, .jobs = jobs, .n = N };
    pthread_t t;
    pthread_create(&t, NULL, produce, &p);
    pause_us(100000);
    CHECK_EQ_U(p.submitted, WINDOW);   /* blocked on the full window */
    rd_lanes_shut(l);
    pthread_join(t, NULL);             /* woken: its next submit was refused */
    CHECK(p.refused);
    int rc;
    CHECK(rd_lanes_take(l, &rc) == NULL);
    atomic_store(&c.block, 0);         /* let the lanes finish what they hold */
    unsigned dropped = 0;
    struct job *j;
    while ((j = rd_lanes_drop(l))) {
        CHECK_EQ_U(j->seq, dropped);
        dropped++;
    }
    CHECK_EQ_U(dropped, WINDOW);
    rd_lanes_free(l);
}

/* Out-of-range lane counts are refused with a message, not a crash. */
static void t_bad_counts(void)
{
    struct ctx c = { .fail_seq = UINT32_MAX };
    rd_error_clear();
    CHECK(rd_lanes_new(0, 4, -1, work, &c) == NULL);
    CHECK(rd_error_code() != 0);
    rd_error_clear();
    CHECK(rd_lanes_new(RD_MAX_LANES + 1, 4, -1, work, &c) == NULL);
    rd_error_clear();
    CHECK(rd_lanes_new(2, 0, -1, work, &c) == NULL);
    rd_error_clear();
}

int main(void)
{
    RUN(t_order_kept);
    RUN(t_result_in_place);
    RUN(t_shut_wakes_and_drop);
    RUN(t_bad_counts);
    return check_summary();
}
