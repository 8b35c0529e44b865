/* rdb_server.c - the answering side (rdb_net.h) on one authenticated connection: rdbench
 * --server and rdrecv --check (rdb_listen.c accepts and authenticates). Every message a
 * client sends is parsed by rdb_msg.c and bounded by what the session agreed; every send is
 * shown to the guard (rdb_guard.h), which ends one that a client that stopped reading blocks. */
#include "bench/rdb_net.h"

#include "bench/rdb_dev.h"
#include "bench/rdb_guard.h"
#include "bench/rdb_io.h"
#include "run/rd_cli.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void rdb_local_info(const struct rd_transport *tp, const struct rdb_server_cfg *cfg, struct rdb_info *info)
{
    memset(info, 0, sizeof *info);
    if (gethostname(info->host, sizeof info->host - 1))
        snprintf(info->host, sizeof info->host, "?");
    snprintf(info->version, sizeof info->version, "%s", RD_VERSION);
    snprintf(info->desc, sizeof info->desc, "%.63s", tp ? tp->desc : "");
    rdb_port_range(info->range, sizeof info->range);
    snprintf(info->io, sizeof info->io, "%s", cfg && cfg->io_dir ? "yes" : "no");
    struct rdb_port ports[RDB_MAX_PORTS];
    unsigned ndev;
    size_t n = rdb_ports(ports, RDB_MAX_PORTS, &ndev);
    for (size_t i = 0; i < n && info->ndev < RDB_INFO_DEVS; i++) {
        struct rdb_info_dev *d = &info->dev[info->ndev++];
        snprintf(d->name, sizeof d->name, "%.31s", ports[i].dev);
        d->port = ports[i].port;
        d->mtu = ports[i].active_mtu;
        d->netdev_mtu = ports[i].netdev_mtu;
        snprintf(d->netdev, sizeof d->netdev, "%.31s", ports[i].netdev);
    }
}

/* One message to the client, under the guard's eye: a send that blocks too long is ended. */
static int say(struct rd_transport *tp, struct rdb_guard *g, const struct rdb_hdr *h, const void *payload)
{
    rdb_guard_sending(g, 1);
    int rc = rdb_send_msg(tp, h, payload);
    rdb_guard_sending(g, 0);
    return rc;
}

/* ERR with a line of text, best effort; returns the error recorded for it. */
__attribute__((format(printf, 4, 5)))
static int refuse(struct rd_transport *tp, struct rdb_guard *g, int code, const char *fmt, ...)
{
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    int rc = rd_fail(code, "client %s: %s", tp->peer, text);
    struct rdb_hdr h = { .type = RDB_ERR, .len = (uint32_t)strlen(text) };
    say(tp, g, &h, text);
    return rc;
}

/* A receive that failed: a timeout (RD_ECONNECT) is a client that stalled, told as such. */
static int silent(struct rd_transport *tp, int rc)
{
    if (rc != RD_ECONNECT)
        return rc;
    return rd_fail_instead(RD_ECONNECT, "client %s sent nothing for %d s: dropped", tp->peer, RDB_STALL_MS / 1000);
}

/* REVERSE: send for ms, keeping depth messages of size unanswered, then END. */
static int reverse_run(struct rd_transport *tp, struct rdb_guard *g, uint32_t size, unsigned depth, unsigned ms)
{
    uint64_t next = 0, acked = 0;
    double t0 = rd_now(), until = t0 + ms / 1000.0;
    int stopping = 0, rc;
    for (;;) {
        while (!stopping && next - acked < depth) {
            if (rd_now() >= until) {
                stopping = 1;
                break;
            }
            struct rdb_hdr h = { .type = RDB_DATA, .len = size, .seq = next };
            if ((rc = say(tp, g, &h, NULL)))
                return rc;
            next++;
        }
        if (acked == next)
            break;
        struct rd_buf *b;
        struct rdb_hdr h;
        if ((rc = rdb_recv_msg(tp, RDB_STALL_MS, &b, &h, "client")))
            return silent(tp, rc);
        tp->ops->release(tp, b);
        if (h.type != RDB_ACK || h.seq != acked)
            return refuse(tp, g, RD_ESTREAM, "expected ACK %llu, got %s %llu", (unsigned long long)acked,
                          rdb_type_name(h.type), (unsigned long long)h.seq);
        acked++;
        if (rd_now() >= until)
            stopping = 1;
    }
    struct rdb_hdr end = { .type = RDB_END, .seq = next };
    return say(tp, g, &end, NULL);
}

static int answer_io(struct rd_transport *tp, struct rdb_guard *g, const struct rdb_server_cfg *cfg, uint64_t want)
{
    struct rdb_hdr h = { .type = RDB_IO };
    if (!cfg->io_dir)
        return say(tp, g, &h, NULL);   /* len 0: nothing to measure here */
    struct rdb_io io;
    uint64_t bytes = want < cfg->io_size ? want : cfg->io_size;
    if (bytes < RDB_IO_MIN)
        bytes = RDB_IO_MIN;
    if (rdb_io_measure(cfg->io_dir, bytes, cfg->io_lanes, &io)) {
        char msg[200];
        snprintf(msg, sizeof msg, "cannot measure --io %s: %s", cfg->io_dir, rd_error_msg());
        rd_report();   /* our own problem: say it here too */
        rd_error_clear();
        return refuse(tp, g, RD_EIO, "%s", msg);
    }
    uint8_t out[RDB_IO_LEN];
    h.len = (uint32_t)rdb_io_encode(&io, out);
    return say(tp, g, &h, out);
}

int rdb_serve_conn(struct rd_transport *tp, const struct rd_params *agreed,
                   const struct rdb_server_cfg *cfg, struct rdb_guard *g, int *bye)
{
    int send_ring = 0, rc;
    *bye = 0;
    for (;;) {
        struct rd_buf *b;
        struct rdb_hdr h;
        rc = tp->ops->recv(tp, &b, RDB_STALL_MS);
        if (rc)
            return silent(tp, rc);
        int pe = rdb_hdr_decode(b->data, b->len, &h);
        tp->ops->release(tp, b);   /* only the header matters, and it is in h now */
        if (pe == RDB_P_MAGIC) {
            /* most likely rdsend: tell it in its own protocol */
            rdb_guard_sending(g, 1);
            rd_send_reason(tp, RD_ABORT, RD_ESTREAM, "this is an rdbench server (rdbench --server or "
                           "rdrecv --check), not rdrecv");
            rdb_guard_sending(g, 0);
            *bye = -1;
            return rd_fail(RD_ESTREAM, "client %s does not speak rdbench (an rdsend?)", tp->peer);
        }
        if (pe)
            return refuse(tp, g, RD_ESTREAM, "bad message: %s", rdb_perr_str(pe));
        switch (h.type) {
        case RDB_DATA: {
            struct rdb_hdr a = { .type = RDB_ACK, .seq = h.seq };
            if ((rc = say(tp, g, &a, NULL)))
                return rc;
            break;
        }
        case RDB_INFO_REQ: {
            struct rdb_info info;
            char text[RDB_TEXT_MAX];
            rdb_local_info(tp, cfg, &info);
            struct rdb_hdr a = { .type = RDB_INFO, .len = (uint32_t)rdb_info_encode(&info, text, sizeof text) };
            if ((rc = say(tp, g, &a, text)))
                return rc;
            break;
        }
        case RDB_IO_REQ:
            if ((rc = answer_io(tp, g, cfg, h.b)))
                return rc;
            break;
        case RDB_REVERSE:
            if (h.a == 0 || h.a > agreed->depth || h.b > agreed->chunk_size || h.seq > RDB_REVERSE_MAX_MS)
                return refuse(tp, g, RD_ESTREAM, "REVERSE %u x %llu for %llu ms is outside %u x %u, %u ms",
                              h.a, (unsigned long long)h.b, (unsigned long long)h.seq, agreed->depth,
                              agreed->chunk_size, RDB_REVERSE_MAX_MS);
            if (!send_ring) {
                rc = tp->ops->setup_ring(tp, RD_DIR_SEND, RD_FRAME_HDR + (size_t)agreed->chunk_size, agreed->depth);
                if (rc)
                    return rc;
                send_ring = 1;
            }
            if ((rc = reverse_run(tp, g, (uint32_t)h.b, h.a, (unsigned)h.seq)))
                return rc;
            break;
        case RDB_BYE:
            *bye = 1;
            return RD_OK;
        default:
            return refuse(tp, g, RD_ESTREAM, "%s out of turn", rdb_type_name(h.type));
        }
    }
}
