#include "engine/rd_lanes.h"

#include "util/rd_error.h"
#include "util/rd_numa.h"
#include "util/rd_thread.h"

#include <pthread.h>
#include <stdlib.h>

enum slot_state { S_EMPTY, S_QUEUED, S_RUNNING, S_DONE };

struct slot {
    void *job;
    enum slot_state state;
    int rc;
};

/* One lock for everything: a job is a whole chunk (a megabyte or more of work), so the lock
 * is taken a few thousand times a second at most. */
struct rd_lanes {
    pthread_mutex_t m;
    pthread_cond_t work;      /* lanes: a job was queued, or the end */
    pthread_cond_t changed;   /* takers: the oldest job finished, or no lane runs, or the end */
    pthread_cond_t space;     /* submitters: a job was taken, or the end */
    struct slot *slots;
    unsigned window;
    unsigned long head, tail, next;   /* next to take, next to submit, next to run */
    unsigned long drop;               /* rd_lanes_drop's position */
    unsigned running;
    int closed, shut;
    rd_lane_fn fn;
    void *ctx;
    unsigned n;
    int node;   /* NUMA node the lanes run on, or -1 */
    pthread_t th[RD_MAX_LANES];
    struct lane_arg {
        struct rd_lanes *l;
        unsigned i;
    } arg[RD_MAX_LANES];
};

static void *lane_main(void *arg)
{
    struct lane_arg *a = arg;
    struct rd_lanes *l = a->l;
    rd_thread_name("rd-lane%u", a->i);
    if (l->node >= 0)
        (void)rd_numa_run_on(l->node);   /* best effort: off the node is slower, not wrong */
    pthread_mutex_lock(&l->m);
    for (;;) {
        while (!l->shut && l->next == l->tail && !l->closed)
            pthread_cond_wait(&l->work, &l->m);
        if (l->shut || l->next == l->tail)
            break;
        struct slot *s = &l->slots[l->next++ % l->window];
        s->state = S_RUNNING;
        l->running++;
        pthread_mutex_unlock(&l->m);
        int rc = l->fn(l->ctx, a->i, s->job);
        pthread_mutex_lock(&l->m);
        s->rc = rc;
        s->state = S_DONE;
        l->running--;
        /* a taker waits only for the oldest job, rd_lanes_drop for no lane running: waking
         * the taker for a later job (or, before, for every submit) only made it sleep again,
         * a switch per chunk on a 2-core host */
        if (s == &l->slots[l->head % l->window] || !l->running)
            pthread_cond_broadcast(&l->changed);
    }
    pthread_mutex_unlock(&l->m);
    return NULL;
}

struct rd_lanes *rd_lanes_new(unsigned n, unsigned window, int node, rd_lane_fn fn, void *ctx)
{
    if (n < 1 || n > RD_MAX_LANES || window < 1) {
        rd_fail(RD_EUSAGE, "lanes must be from 1 to %u", RD_MAX_LANES);
        return NULL;
    }
    struct rd_lanes *l = calloc(1, sizeof *l);
    if (l)
        l->slots = calloc(window, sizeof *l->slots);
    if (!l || !l->slots) {
        free(l);
        rd_fail(RD_EIO, "out of memory");
        return NULL;
    }
    l->window = window;
    l->node = node;
    l->fn = fn;
    l->ctx = ctx;
    pthread_mutex_init(&l->m, NULL);
    pthread_cond_init(&l->work, NULL);
    pthread_cond_init(&l->changed, NULL);
    pthread_cond_init(&l->space, NULL);
    for (; l->n < n; l->n++) {
        l->arg[l->n] = (struct lane_arg){ .l = l, .i = l->n };
        if (rd_thread_create(&l->th[l->n], NULL, lane_main, &l->arg[l->n]))
            break;
    }
    if (l->n == 0) {
        rd_lanes_free(l);
        rd_fail(RD_EIO, "cannot start a lane thread");
        return NULL;
    }
    return l;   /* fewer lanes than asked when threads ran out: still correct, only slower */
}

int rd_lanes_submit(struct rd_lanes *l, void *job)
{
    pthread_mutex_lock(&l->m);
    while (!l->shut && !l->closed && l->tail - l->head >= l->window)
        pthread_cond_wait(&l->space, &l->m);
    int ok = !l->shut && !l->closed;
    if (ok) {
        l->slots[l->tail++ % l->window] = (struct slot){ .job = job, .state = S_QUEUED };
        pthread_cond_signal(&l->work);
    }
    pthread_mutex_unlock(&l->m);
    return ok ? 0 : -1;
}

void *rd_lanes_take(struct rd_lanes *l, int *rc)
{
    void *job = NULL;
    pthread_mutex_lock(&l->m);
    for (;;) {
        if (l->shut)
            break;
        if (l->head == l->tail) {
            if (l->closed)
                break;
        } else if (l->slots[l->head % l->window].state == S_DONE) {
            struct slot *s = &l->slots[l->head++ % l->window];
            job = s->job;
            *rc = s->rc;
            s->state = S_EMPTY;
            pthread_cond_signal(&l->space);
            break;
        }
        pthread_cond_wait(&l->changed, &l->m);
    }
    pthread_mutex_unlock(&l->m);
    return job;
}

static void end(struct rd_lanes *l, int shut)
{
    pthread_mutex_lock(&l->m);
    l->closed = 1;
    l->shut |= shut;
    pthread_cond_broadcast(&l->work);
    pthread_cond_broadcast(&l->changed);
    pthread_cond_broadcast(&l->space);
    pthread_mutex_unlock(&l->m);
}

void rd_lanes_close(struct rd_lanes *l)
{
    end(l, 0);
}

void rd_lanes_shut(struct rd_lanes *l)
{
    end(l, 1);
}

void *rd_lanes_drop(struct rd_lanes *l)
{
    void *job = NULL;
    pthread_mutex_lock(&l->m);
    while (l->running)   /* a lane may still be working on one: it is not ours to give yet */
        pthread_cond_wait(&l->changed, &l->m);
    if (l->drop < l->head)
        l->drop = l->head;
    if (l->drop < l->tail)
        job = l->slots[l->drop++ % l->window].job;
    pthread_mutex_unlock(&l->m);
    return job;
}

void rd_lanes_free(struct rd_lanes *l)
{
    if (!l)
        return;
    end(l, 1);
    for (unsigned i = 0; i < l->n; i++)
        pthread_join(l->th[i], NULL);
    pthread_cond_destroy(&l->space);
    pthread_cond_destroy(&l->changed);
    pthread_cond_destroy(&l->work);
    pthread_mutex_destroy(&l->m);
    free(l->slots);
    free(l);
}
