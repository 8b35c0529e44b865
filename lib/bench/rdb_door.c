/* rdb_door.c - see rdb_door.h. */
#include "bench/rdb_door.h"

#include "transport/rd_session.h"
#include "util/rd_error.h"
#include "util/rd_thread.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

void rdb_door_init(struct rdb_door *d, struct rd_waiting *waiting, struct rd_listener *lis)
{
    memset(d, 0, sizeof *d);
    d->waiting = waiting;
    d->lis = lis;
    d->stop[0] = d->stop[1] = -1;
}

/* A plain pthread (tests/integration/layers.sh lists it): it does strangers' work, the
 * handshakes of other clients, so its errors (a failed poll) are its own, not the served
 * client's. */
static void *door_main(void *arg)
{
    struct rdb_door *d = arg;
    rd_thread_name("rdbench-door");
    for (;;) {
        struct rd_transport *tp = NULL;
        struct rd_params agreed;
        if (rd_waiting_next(d->waiting, d->lis, d->stop[0], -1, &tp, &agreed)) {
            rd_report();   /* cannot happen but for poll failing; the queue waits, as before */
            rd_error_clear();
            break;
        }
        if (!tp)
            break;   /* rdb_door_close */
        /* cannot happen: the served client holds the claim, so no other handshake succeeds */
        explicit_bzero(&agreed, sizeof agreed);
        tp->ops->close(tp);
    }
    return NULL;
}

void rdb_door_open(struct rdb_door *d)
{
    if (d->running)
        return;
    if (d->stop[0] < 0 && pipe2(d->stop, O_CLOEXEC | O_NONBLOCK)) {
        d->stop[0] = d->stop[1] = -1;
        rd_warn("cannot turn clients away while one is served (pipe: %s)", strerror(errno));
        return;
    }
    int e = pthread_create(&d->th, NULL, door_main, d);
    if (e) {
        rd_warn("cannot turn clients away while one is served (thread: %s)", strerror(e));
        return;
    }
    d->running = 1;
}

void rdb_door_close(struct rdb_door *d)
{
    if (!d->running)
        return;
    if (write(d->stop[1], "", 1) < 0) {
        /* cannot happen: an empty pipe */
    }
    pthread_join(d->th, NULL);
    char buf[16];
    while (read(d->stop[0], buf, sizeof buf) > 0) {
    }
    d->running = 0;
}

void rdb_door_free(struct rdb_door *d)
{
    rdb_door_close(d);
    if (d->stop[0] >= 0) {
        close(d->stop[0]);
        close(d->stop[1]);
    }
    d->stop[0] = d->stop[1] = -1;
}
