#include "transport/rd_select.h"

#include "util/rd_error.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUTO_RDMA_CONNECT_MS 3000   /* auto: how long RDMA may try before TCP takes over */

static struct rd_addr make_addr(const struct rd_reach *o, int timeout_ms)
{
    struct rd_addr a = { .host = o->host, .port = o->port, .bind = o->bind, .device = o->device,
                         .timeout_ms = timeout_ms, .verbose = o->verbose };
    return a;
}

/* A transport whose connect or listen failed: close what it set up, or just free it. */
static void discard(struct rd_transport *tp)
{
    if (tp->priv)
        tp->ops->close(tp);
    else
        free(tp);
}

static int try_connect(const struct rd_transport_ops *ops, const struct rd_addr *a, struct rd_transport **out)
{
    struct rd_transport *tp = rd_transport_new(ops);
    if (!tp)
        return rd_fail(RD_EIO, "out of memory");
    int rc = ops->connect(tp, a);
    if (rc) {
        discard(tp);
        return rc;
    }
    *out = tp;
    return RD_OK;
}

unsigned rd_list_len(const char *list)
{
    if (!list)
        return 0;
    unsigned n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    return n;
}

/* Entry i mod the count of a comma list into buf (truncated to n - 1); NULL for NULL. */
static const char *entry(const char *list, unsigned i, char *buf, size_t n)
{
    if (!list)
        return NULL;
    i %= rd_list_len(list);
    const char *p = list;
    while (i--)
        p = strchr(p, ',') + 1;
    size_t len = strcspn(p, ",");
    if (len >= n)
        len = n - 1;
    memcpy(buf, p, len);
    buf[len] = 0;
    return buf;
}

struct rd_reach rd_reach_rail(const struct rd_reach *o, unsigned i, struct rd_rail *r)
{
    struct rd_reach d = *o;
    d.host = entry(o->host, i, r->host, sizeof r->host);
    d.bind = entry(o->bind, i, r->bind, sizeof r->bind);
    d.device = entry(o->device, i, r->device, sizeof r->device);
    return d;
}

int rd_connect_any(const struct rd_reach *rails, struct rd_transport **out)
{
    struct rd_rail r;
    struct rd_reach one = rd_reach_rail(rails, 0, &r);
    const struct rd_reach *o = &one;
    int timeout_ms = o->timeout_s >= 0 ? o->timeout_s * 1000 : -1;
    struct rd_addr a = make_addr(o, timeout_ms);
    if (o->transport == RD_T_TCP)
        return try_connect(&rd_tcp_ops, &a, out);
    if (o->transport == RD_T_RDMA) {
        if (!rd_verbs_available())
            return rd_fail(RD_ENODEV, "no RDMA device");
        return try_connect(&rd_verbs_ops, &a, out);
    }
    if (rd_verbs_available()) {
        struct rd_addr ra = make_addr(o, AUTO_RDMA_CONNECT_MS);
        if (try_connect(&rd_verbs_ops, &ra, out) == RD_OK)
            return RD_OK;
        if (o->verbose)
            rd_warn("RDMA not possible (%s); using TCP", rd_error_msg());
        rd_error_clear();
    } else if (o->verbose) {
        rd_warn("no RDMA device; using TCP");
    }
    return try_connect(&rd_tcp_ops, &a, out);
}

static int add_listener(struct rd_listener *l, const struct rd_transport_ops *ops, const struct rd_addr *a)
{
    struct rd_transport *tp = rd_transport_new(ops);
    if (!tp)
        return rd_fail(RD_EIO, "out of memory");
    int rc = ops->listen(tp, a);
    if (rc) {
        discard(tp);
        return rc;
    }
    l->lis[l->count++] = tp;
    return RD_OK;
}

int rd_listen_any(const struct rd_reach *o, struct rd_listener *l)
{
    struct rd_addr a = make_addr(o, -1);
    a.host = NULL;
    memset(l, 0, sizeof *l);
    if (rd_list_len(o->bind) > 1)
        return rd_fail(RD_EUSAGE, "a receiver listens on one --bind address, or on all without "
                       "--bind (-d DEV1,DEV2 picks the RDMA devices)");
    if (o->transport == RD_T_RDMA) {
        if (!rd_verbs_available())
            return rd_fail(RD_ENODEV, "no RDMA device");
        return add_listener(l, &rd_verbs_ops, &a);
    }
    int rc = add_listener(l, &rd_tcp_ops, &a);
    if (rc)
        return rc;
    if (o->transport == RD_T_AUTO && rd_verbs_available()) {
        /* same port number on RDMA, also when the TCP port was picked by the kernel */
        char port[16];
        snprintf(port, sizeof port, "%u", l->lis[0]->local_port);
        a.port = port;
        if (add_listener(l, &rd_verbs_ops, &a) != RD_OK) {
            if (o->verbose)
                rd_warn("not listening on RDMA (%s); TCP only", rd_error_msg());
            rd_error_clear();
        }
    }
    return RD_OK;
}

int rd_accept_any(struct rd_listener *l, struct rd_transport **out, int timeout_ms)
{
    if (l->count == 1)
        return l->lis[0]->ops->accept(l->lis[0], out, timeout_ms);
    struct pollfd pfd[2];
    for (int i = 0; i < l->count; i++)
        pfd[i] = (struct pollfd){ .fd = l->lis[i]->ops->listen_fd(l->lis[i]), .events = POLLIN };
    int rc;
    do
        rc = poll(pfd, (nfds_t)l->count, timeout_ms);
    while (rc < 0 && errno == EINTR);
    if (rc == 0)
        return rd_fail(RD_ECONNECT, "timed out waiting for a sender");
    if (rc < 0)
        return rd_fail(RD_ECONNECT, "poll: %s", strerror(errno));
    for (int i = 0; i < l->count; i++)
        if (pfd[i].revents)
            return l->lis[i]->ops->accept(l->lis[i], out, 0);
    return rd_fail(RD_ECONNECT, "no connection");
}

void rd_listener_close_tcp(struct rd_listener *l)
{
    int k = 0;
    for (int i = 0; i < l->count; i++) {
        if (strcmp(l->lis[i]->ops->name, "tcp") == 0)
            l->lis[i]->ops->close(l->lis[i]);
        else
            l->lis[k++] = l->lis[i];
    }
    l->count = k;
}

void rd_listener_close(struct rd_listener *l)
{
    for (int i = 0; i < l->count; i++)
        l->lis[i]->ops->close(l->lis[i]);
    l->count = 0;
}
