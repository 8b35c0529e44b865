/* rdb_guard.c - see rdb_guard.h. */
#include "bench/rdb_guard.h"

#include "util/rd_clock.h"
#include "util/rd_error.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#define LOOK_MS 500   /* how often it looks; the limits it checks are seconds long */

static long long now_ms(void)
{
    return (long long)(rd_now() * 1000);
}

int rdb_watch_ended(int fd)
{
    char buf[256];
    ssize_t r = read(fd, buf, sizeof buf);
    return r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN);
}

/* One look: the reason to shut the connection down now, or NONE. */
static int verdict(struct rdb_guard *g, short watch_revents)
{
    if (g->watch_fd >= 0 && watch_revents && rdb_watch_ended(g->watch_fd))
        return RDB_GUARD_GONE;
    if (g->deadline >= 0 && rd_now() >= g->deadline)
        return RDB_GUARD_DEADLINE;
    long long since = atomic_load(&g->send_since_ms);
    if (since && now_ms() - since >= g->send_ms)
        return RDB_GUARD_SEND;
    return RDB_GUARD_NONE;
}

static void *guard_main(void *arg)
{
    struct rdb_guard *g = arg;
    for (;;) {
        struct pollfd p[2] = { { .fd = g->stop[0], .events = POLLIN }, { .fd = g->watch_fd, .events = POLLIN } };
        int ms = rd_ms_until(g->deadline);
        if (ms < 0 || ms > LOOK_MS)
            ms = LOOK_MS;
        int r = poll(p, 2, ms);
        if (r < 0 && errno != EINTR)
            break;   /* cannot happen with two valid descriptors; the connection's own limits still hold */
        if ((r > 0 && p[0].revents) || atomic_load(&g->quit))
            break;
        int why = verdict(g, r > 0 ? p[1].revents : 0);
        if (why != RDB_GUARD_NONE) {
            atomic_store(&g->why, why);
            g->tp->ops->shutdown(g->tp);
            break;
        }
    }
    return NULL;
}

int rdb_guard_start(struct rdb_guard *g, struct rd_transport *tp, double deadline, int send_ms, int watch_fd)
{
    memset(g, 0, sizeof *g);
    g->tp = tp;
    g->deadline = deadline;
    g->send_ms = send_ms;
    g->watch_fd = watch_fd;
    atomic_init(&g->send_since_ms, 0);
    atomic_init(&g->why, RDB_GUARD_NONE);
    atomic_init(&g->quit, 0);
    if (pipe2(g->stop, O_CLOEXEC))
        return rd_fail(RD_EIO, "pipe: %s", strerror(errno));
    /* it works for the served connection (its error context, though it records nothing: the
     * server explains what it did, rdb_guard_explain) */
    int e = rd_thread_create(&g->th, NULL, guard_main, g);
    if (e) {
        close(g->stop[0]);
        close(g->stop[1]);
        return rd_fail(RD_EIO, "cannot start a thread: %s", strerror(e));
    }
    g->running = 1;
    return RD_OK;
}

void rdb_guard_sending(struct rdb_guard *g, int begin)
{
    if (g)
        atomic_store(&g->send_since_ms, begin ? now_ms() : 0);
}

int rdb_guard_why(const struct rdb_guard *g)
{
    return g ? atomic_load(&g->why) : RDB_GUARD_NONE;
}

int rdb_guard_explain(const struct rdb_guard *g, int rc)
{
    if (!rc)
        return rc;
    switch (rdb_guard_why(g)) {
    case RDB_GUARD_DEADLINE:
        return rd_fail_instead(RD_ECONNECT, "client %s: still being served when --timeout ran out: cut off",
                               g->tp->peer);
    case RDB_GUARD_SEND:
        if (g->of_client)
            return rd_fail_instead(RD_ESTREAM, "server %s read nothing for %.0f s (a send to it was blocked): gave up",
                                   g->tp->peer, g->send_ms / 1000.0);
        return rd_fail_instead(RD_ECONNECT, "client %s read nothing for %.0f s (a send to it was blocked): dropped",
                               g->tp->peer, g->send_ms / 1000.0);
    case RDB_GUARD_GONE:
        return rd_fail_instead(RD_ECONNECT, "%s", RDB_GUARD_GONE_TEXT);
    default:
        return rc;
    }
}

int rdb_guard_stop(struct rdb_guard *g)
{
    if (g->running) {
        atomic_store(&g->quit, 1);
        if (write(g->stop[1], "", 1) < 0) {
            /* cannot happen (an empty pipe); then it sees quit at its next look */
        }
        pthread_join(g->th, NULL);
        close(g->stop[0]);
        close(g->stop[1]);
        g->running = 0;
    }
    return rdb_guard_why(g);
}
