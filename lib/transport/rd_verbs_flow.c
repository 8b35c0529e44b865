/* rd_verbs_flow.c - the data path of the verbs transport: posting, completions, credits.
 *
 * Threads: up to three callers (reader in get_send_buf, network thread in send, a monitor or
 * writer in recv/release) share one connection. One mutex guards the state; whoever must
 * wait becomes the single "poller" that sleeps in poll() on both completion channels, the CM
 * channel and a wakeup eventfd; the others wait on a condition variable that the poller
 * broadcasts after each round (leader/follower), so no completion event is ever consumed by
 * a thread that then leaves the others asleep. The CQ is always re-armed before it is
 * drained: Soft-RoCE does not signal completions that were queued before the arm.
 *
 * Liveness (see RD_V_HEARTBEAT_MS): every call that makes progress also posts a heartbeat
 * when nothing is in flight and nothing was posted for RD_V_HEARTBEAT_MS, or gives up when
 * sends have been in flight for RD_V_STUCK_MS without one completing; the poller wakes up
 * for both. The engine always has a thread in here while the peer matters (a receiver
 * waiting for data, a sender's monitor waiting for CONFIRM while its input is quiet, a
 * sender waiting for credits), so a silent peer is noticed in every one of those states.
 */
#include "transport/rd_verbs.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"
#include "wire/rd_proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ACK_BATCH 64u   /* CQ events acknowledged in batches: ibv_ack_cq_events takes a lock */

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void mark_dead(struct rd_v_conn *c, const char *fmt, ...)
{
    if (!c->dead && !c->shut) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->why, sizeof c->why, fmt, ap);
        va_end(ap);
    }
    c->dead = 1;
    pthread_cond_broadcast(&c->cv);
}

static int fail_dead(struct rd_v_conn *c)
{
    if (c->why[0])
        return rd_fail(RD_ESTREAM, "%s", c->why);
    return rd_fail_after(RD_ESTREAM, "connection to %s shut down", c->peer);
}

int rd_v_flow_init(struct rd_v_conn *c, unsigned peer_small)
{
    c->peer_small = peer_small;
    c->last_post_us = c->last_heard_us = c->sq_moved_us = now_us();
    c->est = RD_V_CTRL_RECV;
    c->batch = RD_V_CTRL_RECV / 4;
    c->rd_cap = c->rq_cap;
    c->ready = calloc(c->rd_cap, sizeof *c->ready);
    const char *bp = getenv("RDPIPE_BUSY_POLL_US");
    c->busy_us = bp ? atoi(bp) : RD_V_BUSY_US;
    if (!c->ready)
        return rd_fail(RD_EIO, "out of memory");
    return RD_OK;
}

/* ---- posting ---- */

/* The peer's next free receive (FIFO): small ones come first. */
static void consume_credit(struct rd_v_conn *c)
{
    if (c->peer_small)
        c->peer_small--;
    else
        c->peer_big--;
}

/* len bytes from ring slot `slot` of p, then (ref) the bytes ref names, in one message; or (p
 * NULL) an internal message with no payload */
static int post_parts(struct rd_v_conn *c, struct rd_v_pool *p, unsigned slot, size_t len,
                      const struct ibv_sge *ref, int internal)
{
    struct ibv_sge sge[2];
    struct ibv_send_wr wr = { 0 }, *bad;
    unsigned big = c->owe_big, small = c->owe_small;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(RD_V_IMM(internal, big, small));
    if (p) {
        sge[0] = (struct ibv_sge){ .addr = (uintptr_t)p->bufs[slot].data, .length = (uint32_t)len,
                                   .lkey = p->mr->lkey };
        if (ref)
            sge[1] = *ref;
        wr.sg_list = sge;
        wr.num_sge = ref ? 2 : 1;
        wr.wr_id = ((uint64_t)p->kind << 32) | slot;
    } else {
        wr.wr_id = (uint64_t)K_INTERNAL << 32;
    }
    int e = ibv_post_send(c->id->qp, &wr, &bad);
    if (e) {
        mark_dead(c, "connection to %s lost (cannot post RDMA send: %s)", c->peer, strerror(e));
        return RD_ESTREAM;
    }
    consume_credit(c);
    c->last_post_us = now_us();
    if (!c->sq_used)
        c->sq_moved_us = c->last_post_us;
    c->owe_big = c->owe_small = 0;
    c->est += big + small;
    c->sq_used++;
    if (internal)
        c->sq_internal++;
    else
        c->payload_out++;
    return RD_OK;
}

static int post(struct rd_v_conn *c, struct rd_v_pool *p, unsigned slot, size_t len, int internal)
{
    return post_parts(c, p, slot, len, NULL, internal);
}

/* A zero-length RDMA WRITE: the peer's QP acknowledges it and nothing else happens there, so
 * it needs no credit and no receive. Only while nothing is in flight (anything in flight is
 * retried and fails the same way) and nothing was posted for a while. Also the backstop for
 * a provider that never completes what is in flight (RD_V_STUCK_MS). */
static void liveness(struct rd_v_conn *c)
{
    if (!c->established || c->dead || c->shut)
        return;
    long long now = now_us();
    if (c->sq_used && now - c->sq_moved_us >= RD_V_STUCK_MS * 1000LL) {
        mark_dead(c, "connection to %s lost: nothing sent to it completed for %.1f s (RDMA "
                  "link or device down?)", c->peer, (double)(now - c->sq_moved_us) / 1e6);
        return;
    }
    if (!RD_V_HEARTBEAT_MS || c->sq_used || now - c->last_post_us < RD_V_HEARTBEAT_MS * 1000LL)
        return;
    struct ibv_send_wr wr = { 0 }, *bad;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr_id = (uint64_t)K_HEARTBEAT << 32;
    int e = ibv_post_send(c->id->qp, &wr, &bad);
    if (e) {
        mark_dead(c, "connection to %s lost (cannot post RDMA heartbeat: %s)", c->peer,
                  strerror(e));
        return;
    }
    c->sq_used++;
    c->last_post_us = c->sq_moved_us = now;
    c->stat_heartbeats++;
}

/* Return owed credits in a credit-only message once a batch is owed, or at once when the
 * peer looks starved. Credit-only messages may use the reserve; they never echo because
 * one of them makes the peer owe a single credit, below every batch. */
static void flush_credits(struct rd_v_conn *c)
{
    unsigned owed = c->owe_big + c->owe_small;
    if (!owed || c->dead || c->shut)
        return;
    if (owed < c->batch && c->est > (long long)RD_V_RESERVE)
        return;
    if (c->peer_small + c->peer_big < 1 || c->sq_internal >= RD_V_SQ_EXTRA)
        return;   /* retried by the next progress round: a completion will come */
    if (post(c, NULL, 0, 0, 1) == RD_OK)
        c->stat_internal++;
}

/* Hand a received buffer back to the queue, or retire it: once our ring exists, small
 * receives must not be posted behind big ones (the peer counts them as gone). */
static void recycle(struct rd_v_conn *c, struct rd_v_pool *p, unsigned slot)
{
    if (c->dead || c->shut)
        return;
    if (p->kind == K_CTRL_RECV && c->ring_mode)
        return;
    if (rd_v_post_recv(c, p, slot)) {
        mark_dead(c, "connection to %s lost (cannot repost RDMA receive)", c->peer);
        return;
    }
    if (p->kind == K_CTRL_RECV)
        c->owe_small++;
    else
        c->owe_big++;
}

/* ---- completions ---- */

static struct rd_v_pool *pool_of(struct rd_v_conn *c, uint64_t wr_id)
{
    switch ((enum rd_v_kind)(wr_id >> 32)) {
    case K_CTRL_SEND: return &c->ctrl_send;
    case K_RING_SEND: return &c->ring_send;
    case K_CTRL_RECV: return &c->ctrl_recv;
    case K_RING_RECV: return &c->ring_recv;
    default: return NULL;
    }
}

/* Work requests flushed with no failure of ours behind them: a peer's disconnect (its CM
 * event follows), or, on some kernels (6.12's rxe), a port whose link went down, where others
 * let the peer go silent. The flush comes first and the port's state follows (measured: still
 * ACTIVE when the flushed completion is polled), so this looks again for up to half a second,
 * on a path that ends the connection anyway, unless a CM event says what happened. */
static int port_down(struct rd_v_conn *c)
{
    struct ibv_port_attr pa;
    for (int i = 0; i < 10 && c->id && c->id->verbs; i++) {
        if (ibv_query_port(c->id->verbs, c->id->port_num, &pa))
            return 0;
        if (pa.state != IBV_PORT_ACTIVE)
            return 1;
        struct pollfd cm = { .fd = c->ch ? c->ch->fd : -1, .events = POLLIN };
        if (c->cm_event_seen || (cm.fd >= 0 && poll(&cm, 1, 50) != 0))
            return 0;
    }
    return 0;
}

static void wc_error(struct rd_v_conn *c, const struct ibv_wc *wc)
{
    if (wc->status == IBV_WC_WR_FLUSH_ERR && (c->dead || c->shut))
        return;   /* the consequence of a failure already recorded */
    double quiet = (double)(now_us() - c->last_heard_us) / 1e6;
    if (wc->status == IBV_WC_RETRY_EXC_ERR)
        mark_dead(c, "connection to %s lost: the peer went silent (nothing acknowledged for "
                  "%.1f s: host down or network cut)", c->peer, quiet);
    else if (wc->status == IBV_WC_RNR_RETRY_EXC_ERR)
        mark_dead(c, "connection to %s lost: the peer had no receive buffer for %.1f s (RDMA "
                  "%s)", c->peer, quiet, ibv_wc_status_str(wc->status));
    else if (wc->status == IBV_WC_WR_FLUSH_ERR && port_down(c))
        mark_dead(c, "connection to %s lost: RDMA port %s/%u is down (link down or cable out)",
                  c->peer, ibv_get_device_name(c->id->verbs->device), (unsigned)c->id->port_num);
    else
        mark_dead(c, "connection to %s lost (RDMA %s)", c->peer, ibv_wc_status_str(wc->status));
}

static void on_recv(struct rd_v_conn *c, const struct ibv_wc *wc)
{
    struct rd_v_pool *p = pool_of(c, wc->wr_id);
    unsigned slot = (uint32_t)wc->wr_id;
    if (wc->status != IBV_WC_SUCCESS || !p) {
        wc_error(c, wc);
        return;
    }
    int internal = 0;
    c->last_heard_us = now_us();
    c->est--;
    if (wc->wc_flags & IBV_WC_WITH_IMM) {
        uint32_t imm = ntohl(wc->imm_data);
        c->peer_small += imm & 0xffffu;
        c->peer_big += (imm >> 16) & 0x7fffu;
        internal = !!(imm & RD_V_IMM_INTERNAL);
    }
    if (internal) {
        recycle(c, p, slot);
        return;
    }
    struct rd_v_ready *r = &c->ready[(c->rd_head + c->rd_count) % c->rd_cap];
    r->pool = p;
    r->slot = slot;
    r->len = wc->byte_len;
    c->rd_count++;
}

static void on_send(struct rd_v_conn *c, const struct ibv_wc *wc)
{
    struct rd_v_pool *p = pool_of(c, wc->wr_id);
    c->sq_used--;
    c->sq_moved_us = now_us();
    if (wc->status == IBV_WC_SUCCESS)
        c->last_heard_us = c->sq_moved_us;   /* the peer acknowledged it */
    if ((enum rd_v_kind)(wc->wr_id >> 32) == K_HEARTBEAT) {
        /* counted in sq_used only */
    } else if (p) {
        c->payload_out--;
        if (p->bufs[(uint32_t)wc->wr_id].ref_from)   /* sent, or never will be: the payload goes back */
            rd_ref_done(&p->bufs[(uint32_t)wc->wr_id]);
        p->free[p->nfree++] = (uint32_t)wc->wr_id;
        if (wc->status != IBV_WC_SUCCESS)
            c->send_err = 1;
    } else {
        c->sq_internal--;
    }
    if (wc->status != IBV_WC_SUCCESS)
        wc_error(c, wc);
}

static int drain_cq(struct rd_v_conn *c, struct ibv_cq *cq, int is_recv)
{
    struct ibv_wc wc[32];
    int n, total = 0;
    while ((n = ibv_poll_cq(cq, 32, wc)) > 0) {
        for (int i = 0; i < n; i++)
            is_recv ? on_recv(c, &wc[i]) : on_send(c, &wc[i]);
        total += n;
    }
    if (n < 0)
        mark_dead(c, "connection to %s lost (cannot poll RDMA completions)", c->peer);
    return total;
}

static void cm_events(struct rd_v_conn *c)
{
    struct rdma_cm_event *ev;
    while (rdma_get_cm_event(c->ch, &ev) == 0) {
        enum rdma_cm_event_type t = ev->event;
        rdma_ack_cm_event(ev);
        if (t == RDMA_CM_EVENT_ESTABLISHED || t == RDMA_CM_EVENT_TIMEWAIT_EXIT)
            continue;
        /* frames that arrived before the disconnect are still delivered */
        c->cm_event_seen = 1;
        drain_cq(c, c->rcq, 1);
        mark_dead(c, "connection to %s lost (RDMA %s)", c->peer,
                  t == RDMA_CM_EVENT_DISCONNECTED ? "DISCONNECTED" : rdma_event_str(t));
    }
}

/* Non-blocking: everything that can be done now. Returns completions seen. */
static int progress(struct rd_v_conn *c)
{
    int n = drain_cq(c, c->scq, 0) + drain_cq(c, c->rcq, 1);
    flush_credits(c);
    liveness(c);
    return n;
}

static void take_cq_events(struct rd_v_conn *c, struct ibv_comp_channel *cc, unsigned *count)
{
    struct ibv_cq *cq;
    void *ctx;
    int got = 0;
    while (ibv_get_cq_event(cc, &cq, &ctx) == 0) {
        got = 1;
        if (++*count >= ACK_BATCH) {
            ibv_ack_cq_events(cq, *count);
            *count = 0;
        }
    }
    if (got)
        ibv_req_notify_cq(cc == c->scc ? c->scq : c->rcq, 0);   /* re-arm, then drain */
}

/* One blocking round, called with mu held; returns RD_OK to re-check, RD_ECONNECT when the
 * deadline (us, 0 = none) passed, RD_ESTREAM when the connection is gone. */
static int wait_round(struct rd_v_conn *c, long long deadline)
{
    if (c->dead || c->shut)
        return RD_ESTREAM;
    long long now = now_us();
    if (deadline && now >= deadline)
        return RD_ECONNECT;
    if (c->poller) {
        struct timespec ts;
        long long wait = deadline ? deadline - now : 1000000;
        if (wait > 1000000)
            wait = 1000000;
        rd_deadline_ns(&ts, wait * 1000);
        rd_cond_wait_until(&c->cv, &c->mu, &ts);
        progress(c);
        return RD_OK;
    }
    c->poller = 1;
    /* short busy-poll: a completion that is microseconds away costs no sleep/wakeup */
    if (c->busy_us > 0) {
        long long until = now + c->busy_us;
        int n = 0;
        while (!n && now_us() < until && !c->dead && !c->shut) {
            pthread_mutex_unlock(&c->mu);
            sched_yield();
            pthread_mutex_lock(&c->mu);
            n = progress(c);
        }
        if (n) {
            c->poller = 0;
            pthread_cond_broadcast(&c->cv);
            return RD_OK;
        }
    }
    struct pollfd pf[4] = {
        { .fd = c->scc->fd, .events = POLLIN }, { .fd = c->rcc->fd, .events = POLLIN },
        { .fd = c->ch->fd, .events = POLLIN }, { .fd = c->wake_fd, .events = POLLIN },
    };
    long long wake = deadline, live = 0;   /* the next heartbeat, or the stuck check */
    if (c->established && c->sq_used)
        live = c->sq_moved_us + RD_V_STUCK_MS * 1000LL;
    else if (c->established && RD_V_HEARTBEAT_MS > 0)
        live = c->last_post_us + RD_V_HEARTBEAT_MS * 1000LL;
    if (live && (!wake || live < wake))
        wake = live;
    int ms = -1;
    if (wake)
        ms = wake > now ? (int)((wake - now + 999) / 1000) : 0;
    c->stat_sleeps++;
    pthread_mutex_unlock(&c->mu);
    poll(pf, 4, ms);
    uint64_t woken;
    if ((pf[3].revents & POLLIN) && read(c->wake_fd, &woken, sizeof woken) < 0) {
        /* nothing was there after all; shut is checked before every poll, so a shutdown's
         * wakeup is never needed twice */
    }
    pthread_mutex_lock(&c->mu);
    c->poller = 0;
    take_cq_events(c, c->scc, &c->scq_events);
    take_cq_events(c, c->rcc, &c->rcq_events);
    progress(c);
    cm_events(c);
    pthread_cond_broadcast(&c->cv);
    return RD_OK;
}

static long long deadline_of(int timeout_ms)
{
    return timeout_ms < 0 ? 0 : now_us() + (long long)timeout_ms * 1000 + 1;
}

/* ---- the interface ---- */

int rd_v_setup_ring(struct rd_transport *tp, enum rd_dir dir, size_t frame_size, unsigned depth)
{
    struct rd_v_conn *c = tp->priv;
    if (frame_size < RD_CTRL_FRAME)
        frame_size = RD_CTRL_FRAME;   /* a control frame may land in any ring receive */
    if (depth < 4)
        depth = 4;                    /* so a batch of credits always comes back */
    pthread_mutex_lock(&c->mu);
    int rc = RD_OK;
    if (dir == RD_DIR_RECV) {
        if (c->ring_recv.n || depth > c->rq_cap - RD_V_CTRL_RECV) {
            rc = rd_fail(RD_EUSAGE, "RDMA receive ring: bad depth %u", depth);
            goto out;
        }
        if ((rc = rd_v_pool_create(c, &c->ring_recv, K_RING_RECV, depth, frame_size)))
            goto out;
        c->ring_mode = 1;   /* from now on no small receive is posted */
        for (unsigned i = 0; i < depth && !rc; i++)
            if (rd_v_post_recv(c, &c->ring_recv, i))
                rc = RD_ESTREAM;
        if (rc) {
            mark_dead(c, "connection to %s: cannot post the RDMA receive ring", c->peer);
            goto out;
        }
        c->owe_big += depth;
        c->batch = depth / 4 > 2 ? depth / 4 : 2;
        flush_credits(c);
    } else {
        if (c->ring_send.n || depth > c->sq_cap - RD_V_CTRL_SEND - RD_V_SQ_EXTRA) {
            rc = rd_fail(RD_EUSAGE, "RDMA send ring: bad depth %u", depth);
            goto out;
        }
        rc = rd_v_pool_create(c, &c->ring_send, K_RING_SEND, depth, frame_size);
    }
out:
    if (!rc && c->verbose > 1) {
        const struct rd_v_pool *p = dir == RD_DIR_RECV ? &c->ring_recv : &c->ring_send;
        static const char *const pages[] = { "small pages", "transparent huge pages asked", "hugetlbfs pages" };
        fprintf(stderr, "%s: rdma: %s ring of %u x %zu bytes on %s\n", rd_progname(),
                dir == RD_DIR_RECV ? "receive" : "send", p->n, p->frame, pages[p->huge]);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int rd_v_get_send_buf(struct rd_transport *tp, struct rd_buf **out)
{
    struct rd_v_conn *c = tp->priv;
    int rc = RD_OK;
    pthread_mutex_lock(&c->mu);
    progress(c);
    for (;;) {
        struct rd_v_pool *p = c->ring_send.n ? &c->ring_send : &c->ctrl_send;
        if (c->dead || c->shut) {
            rc = fail_dead(c);
            break;
        }
        if (p->nfree) {
            struct rd_buf *b = &p->bufs[p->free[--p->nfree]];
            b->len = 0;
            *out = b;
            break;
        }
        wait_round(c, 0);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* Can a message of len bytes go now? Burns leftover small receives first for big ones. */
static int can_send(struct rd_v_conn *c, size_t len)
{
    if (len <= RD_CTRL_FRAME)
        return c->peer_small + c->peer_big >= 1 + RD_V_RESERVE;
    if (c->peer_big < 1 + RD_V_RESERVE)
        return 0;
    while (c->peer_small && c->sq_internal < RD_V_SQ_EXTRA)
        if (post(c, NULL, 0, 0, 1))
            return 0;
    return c->peer_small == 0;
}

/* Post b (b->len bytes: its first `first` from its slot, the rest as ref names) once the peer
 * has a receive for it. A frame that never went is given back: its slot to get_send_buf, a
 * payload lent by another connection to that one. */
static int send_parts(struct rd_transport *tp, struct rd_buf *b, size_t first, const struct ibv_sge *ref)
{
    struct rd_v_conn *c = tp->priv;
    struct rd_v_pool *p = b->owner;
    int rc = RD_OK;
    pthread_mutex_lock(&c->mu);
    progress(c);
    for (;;) {
        if (c->dead || c->shut) {
            rc = fail_dead(c);
            break;
        }
        if (can_send(c, b->len)) {
            if (post_parts(c, p, b->slot, first, ref, 0))
                continue;
            c->stat_by_ref += ref != NULL;
            break;
        }
        wait_round(c, 0);
    }
    pthread_mutex_unlock(&c->mu);
    if (rc) {
        rd_ref_done(b);
        rd_v_release(tp, b);
    }
    return rc;
}

int rd_v_send(struct rd_transport *tp, struct rd_buf *b)
{
    return send_parts(tp, b, b->len, NULL);
}

/* ops->send_ref: a relay's frame goes out as it came in, its header from b's slot and its
 * payload from the receive ring of the upstream connection it landed in (registered in our PD
 * too, at the first frame), in one SEND of two pieces: the relay copies nothing, and the
 * upstream buffer goes back (reposted, a credit to the sender) once the send completed. A
 * payload of anything else (a stripe's, a TCP buffer), or of a ring that could not be
 * registered, is copied into b. */
int rd_v_send_ref(struct rd_transport *tp, struct rd_buf *b)
{
    struct rd_v_conn *c = tp->priv;
    size_t len = RD_FRAME_HDR + b->ref_len;
    if (len > b->cap) {
        rd_ref_done(b);
        rd_v_release(tp, b);
        return rd_fail(RD_ESTREAM, "a frame of %zu bytes does not fit the buffers of %s", len, c->peer);
    }
    struct ibv_mr *mr = NULL;
    pthread_mutex_lock(&c->mu);
    if (b->ref_from->ops == &rd_verbs_ops && b->ref_from->priv != c)
        mr = rd_v_foreign_mr(c, b->ref_buf->owner);
    pthread_mutex_unlock(&c->mu);
    b->len = len;
    if (!mr) {
        memcpy(b->data + RD_FRAME_HDR, b->ref, b->ref_len);
        rd_ref_done(b);
        return send_parts(tp, b, len, NULL);
    }
    struct ibv_sge ref = { .addr = (uintptr_t)b->ref, .length = (uint32_t)b->ref_len, .lkey = mr->lkey };
    return send_parts(tp, b, RD_FRAME_HDR, b->ref_len ? &ref : NULL);
}

int rd_v_recv(struct rd_transport *tp, struct rd_buf **out, int timeout_ms)
{
    struct rd_v_conn *c = tp->priv;
    long long deadline = deadline_of(timeout_ms);
    int rc = RD_OK;
    pthread_mutex_lock(&c->mu);
    progress(c);
    while (!c->rd_count || c->recv_shut) {
        if (c->recv_shut) {
            rc = rd_fail(RD_ESTREAM, "stopped receiving from %s", c->peer);
            break;
        }
        if (c->interrupted) {
            c->interrupted = 0;
            rc = rd_fail(RD_ECONNECT, "interrupted waiting for %s", c->peer);
            break;
        }
        int w = wait_round(c, deadline);
        if (w == RD_ESTREAM && !c->rd_count) {
            rc = fail_dead(c);
            break;
        }
        if (w == RD_ECONNECT) {
            rc = rd_fail(RD_ECONNECT, "timed out waiting for %s", c->peer);
            break;
        }
    }
    if (!rc) {
        struct rd_v_ready *r = &c->ready[c->rd_head];
        c->rd_head = (c->rd_head + 1) % c->rd_cap;
        c->rd_count--;
        struct rd_buf *b = &r->pool->bufs[r->slot];
        b->len = r->len;
        *out = b;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void rd_v_release(struct rd_transport *tp, struct rd_buf *b)
{
    struct rd_v_conn *c = tp->priv;
    struct rd_v_pool *p = b->owner;
    pthread_mutex_lock(&c->mu);
    if (p->kind == K_CTRL_SEND || p->kind == K_RING_SEND)
        p->free[p->nfree++] = b->slot;   /* a borrowed send frame that was never sent */
    else {
        recycle(c, p, b->slot);
        flush_credits(c);
    }
    pthread_mutex_unlock(&c->mu);
}

int rd_v_drain(struct rd_transport *tp)
{
    struct rd_v_conn *c = tp->priv;
    int rc = RD_OK;
    pthread_mutex_lock(&c->mu);
    progress(c);
    while (c->payload_out && !c->dead && !c->shut)
        wait_round(c, 0);
    if (c->payload_out || c->send_err)
        rc = fail_dead(c);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void rd_v_print_stats(struct rd_v_conn *c)
{
    if (c->verbose <= 1 || !c->established)
        return;
    pthread_mutex_lock(&c->mu);
    fprintf(stderr, "%s: rdma: %s: %llu sleeps, %llu credit messages, %llu heartbeats, %llu frames "
            "sent from an upstream ring\n", rd_progname(), c->peer, c->stat_sleeps, c->stat_internal,
            c->stat_heartbeats, c->stat_by_ref);
    pthread_mutex_unlock(&c->mu);
}

/* Raise *flag (c->shut, c->interrupted) and wake every thread waiting on c: those on the
 * condition variable and the poller in poll(). Returns the flag's previous value. */
static int raise_and_wake(struct rd_v_conn *c, int *flag)
{
    uint64_t one = 1;
    pthread_mutex_lock(&c->mu);
    int was = *flag;
    *flag = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (write(c->wake_fd, &one, sizeof one) < 0) {
        /* the eventfd counter cannot overflow here; nothing to do */
    }
    return was;
}

void rd_v_shutdown(struct rd_transport *tp)
{
    struct rd_v_conn *c = tp->priv;
    if (!c || !c->id)
        return;
    if (!raise_and_wake(c, &c->shut) && c->established)
        (void)rdma_disconnect(c->id);   /* the peer's blocked calls fail too; see v_close */
}

/* ops->interrupt: a relay's pair that waits for a frame which may never come (the END went
 * up another connection) is told to look up; the connection stays as it is. */
void rd_v_interrupt(struct rd_transport *tp)
{
    struct rd_v_conn *c = tp->priv;
    if (c && c->id)
        raise_and_wake(c, &c->interrupted);
}

/* ops->shut_recv: a relay told to stop by a signal; its sends (the ABORTs) still go */
void rd_v_shut_recv(struct rd_transport *tp)
{
    struct rd_v_conn *c = tp->priv;
    if (c && c->id)
        raise_and_wake(c, &c->recv_shut);
}

/* ops->watch_fd: an epoll set of the CM channel (the peer left) and the receive completion
 * channel (a frame came). The CQ is armed at creation and re-armed whenever its events are
 * taken, so a completion always makes it readable; peek takes the events. */
int rd_v_watch_fd(struct rd_transport *tp)
{
    struct rd_v_conn *c = tp->priv;
    pthread_mutex_lock(&c->mu);
    if (c->watch_ep < 0 && c->ch && c->rcc) {
        int ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event e1 = { .events = EPOLLIN, .data.fd = c->ch->fd };
        struct epoll_event e2 = { .events = EPOLLIN, .data.fd = c->rcc->fd };
        if (ep >= 0 && (epoll_ctl(ep, EPOLL_CTL_ADD, c->ch->fd, &e1) ||
                        epoll_ctl(ep, EPOLL_CTL_ADD, c->rcc->fd, &e2))) {
            close(ep);
            ep = -1;
        }
        c->watch_ep = ep;
    }
    int fd = c->watch_ep;
    pthread_mutex_unlock(&c->mu);
    return fd;
}

/* ops->peek: what arrived, without waiting; the frame stays for recv. A peer that left after
 * sending frames still shows them first (its ABORT, say). */
int rd_v_peek(struct rd_transport *tp, uint8_t *head, size_t n)
{
    struct rd_v_conn *c = tp->priv;
    int got = 0;
    pthread_mutex_lock(&c->mu);
    if (!c->poller) {   /* the events are the sleeping poller's otherwise */
        take_cq_events(c, c->rcc, &c->rcq_events);
        cm_events(c);
    }
    progress(c);
    if (c->rd_count) {
        const struct rd_v_ready *r = &c->ready[c->rd_head];
        size_t len = r->len < n ? r->len : n;
        memcpy(head, r->pool->bufs[r->slot].data, len);
        got = (int)len;
    } else if (c->dead || c->shut) {
        got = -1;
    }
    pthread_mutex_unlock(&c->mu);
    return got;
}
