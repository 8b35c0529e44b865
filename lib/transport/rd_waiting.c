/* rd_waiting.c - see rd_waiting.h. */
#include "transport/rd_waiting.h"
#include "util/rd_clock.h"

#include "util/rd_error.h"
#include "transport/rd_session.h"
#include "transport/rd_tcp.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

static struct rd_transport *take(struct rd_waiting *w, unsigned i)
{
    struct rd_transport *c = w->c[i];
    w->n--;
    memmove(w->c + i, w->c + i + 1, (w->n - i) * sizeof *w->c);
    memmove(w->since + i, w->since + i + 1, (w->n - i) * sizeof *w->since);
    return c;
}

static void drop(struct rd_waiting *w, unsigned i, const char *why)
{
    struct rd_transport *c = take(w, i);
    rd_warn("connection from %s %s: dropped", c->peer, why);
    c->ops->close(c);
}

/* A new connection from the listener: into the set (TCP) or straight out (RDMA). */
static struct rd_transport *arrival(struct rd_waiting *w, struct rd_listener *lis)
{
    struct rd_transport *c;
    if (rd_accept_any(lis, &c, 0)) {
        rd_report();
        rd_error_clear();
        return NULL;
    }
    if (!rd_tcp_is(c))
        return c;
    if (w->n == RD_WAITING_MAX)
        drop(w, 0, "said nothing while newer ones came");
    w->c[w->n] = c;
    w->since[w->n] = rd_now();
    w->n++;
    return NULL;
}

int rd_waiting_next(struct rd_waiting *w, struct rd_listener *lis, int watch_fd, int timeout_ms,
                    struct rd_transport **out)
{
    double deadline = timeout_ms >= 0 ? rd_now() + timeout_ms / 1000.0 : -1;
    *out = NULL;
    for (;;) {
        double now = rd_now();
        while (w->n && now - w->since[0] > RD_HELLO_MS / 1000.0)
            drop(w, 0, "said nothing");
        /* wake for the deadline, and for the oldest silent connection's time to go */
        double wake = deadline;
        if (w->n && (wake < 0 || w->since[0] + RD_HELLO_MS / 1000.0 < wake))
            wake = w->since[0] + RD_HELLO_MS / 1000.0;
        if (deadline >= 0 && now >= deadline)
            return rd_fail(RD_ECONNECT, "timed out waiting for a sender");
        struct pollfd pfd[1 + 2 + RD_WAITING_MAX];
        int np = 0;
        pfd[np++] = (struct pollfd){ .fd = watch_fd, .events = POLLIN | POLLRDHUP };
        for (int i = 0; i < lis->count; i++)
            pfd[np++] = (struct pollfd){ .fd = lis->lis[i]->ops->listen_fd(lis->lis[i]), .events = POLLIN };
        int first = np;
        for (unsigned i = 0; i < w->n; i++)
            pfd[np++] = (struct pollfd){ .fd = rd_tcp_fd(w->c[i]), .events = POLLIN | POLLRDHUP };
        int ms = wake < 0 ? -1 : (int)((wake - now) * 1000) + 1;
        int pr = poll(pfd, (nfds_t)np, ms);
        if (pr < 0 && errno != EINTR)
            return rd_fail(RD_EIO, "poll: %s", strerror(errno));
        if (pr <= 0)
            continue;
        if (watch_fd >= 0 && pfd[0].revents)
            return RD_OK;
        for (int k = first; k < np; k++)
            if (pfd[k].revents) {
                *out = take(w, (unsigned)(k - first));
                return RD_OK;
            }
        for (int i = 0; i < lis->count; i++)
            if (pfd[1 + i].revents && (*out = arrival(w, lis)))
                return RD_OK;
    }
}

void rd_waiting_close(struct rd_waiting *w)
{
    while (w->n) {
        struct rd_transport *c = take(w, 0);
        c->ops->close(c);
    }
}
