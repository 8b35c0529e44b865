/* rd_verbs.c - RDMA transport: connection management with librdmacm on an event channel
 * (asynchronous, so listening, accepting and the transfer itself can all poll its fd).
 * The data path is in rd_verbs_flow.c, the verbs resources in rd_verbs_res.c, the answering
 * of connection requests in rd_verbs_accept.c. */
#include "transport/rd_verbs.h"
#include "util/rd_error.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

static const char HELLO_MAGIC[4] = { 'R', 'D', 'P', 'v' };
static const char REJECT_MAGIC[4] = { 'R', 'D', 'P', 'r' };

int rd_verbs_available(void)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (list)
        ibv_free_device_list(list);
    return n > 0;
}

long long rd_v_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rd_v_peer_name(struct rdma_cm_id *id, char *out, size_t n)
{
    rd_sockaddr_str(rdma_get_peer_addr(id), out, n);
}

struct rd_v_conn *rd_v_conn_new(const struct rd_addr *a)
{
    struct rd_v_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    c->watch_ep = -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (a && a->device)
        snprintf(c->device, sizeof c->device, "%s", a->device);
    c->verbose = a ? a->verbose : 0;
    if (c->wake_fd < 0) {
        rd_v_conn_free(c);
        return NULL;
    }
    return c;
}

struct rdma_event_channel *rd_v_channel_new(void)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    if (ch) {
        int fl = fcntl(ch->fd, F_GETFL);
        fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
    }
    return ch;
}

/* Next CM event within timeout_ms; NULL on timeout. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int timeout_ms)
{
    long long deadline = rd_v_now_ms() + timeout_ms;
    for (;;) {
        struct rdma_cm_event *ev;
        if (rdma_get_cm_event(ch, &ev) == 0)
            return ev;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return NULL;
        long long left = deadline - rd_v_now_ms();
        if (left <= 0)
            return NULL;
        struct pollfd pf = { .fd = ch->fd, .events = POLLIN };
        poll(&pf, 1, (int)left);
    }
}

/* Is name one of the comma list's entries? */
static int listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, len) && (p[len] == ',' || !p[len]))
            return 1;
    return 0;
}

/* want: "" for any, a device name, or a comma list of them (a multi-rail receiver). */
int rd_v_device_is(struct rdma_cm_id *id, const char *want)
{
    return !want[0] || !id->verbs || listed(want, ibv_get_device_name(id->verbs->device));
}

/* NULL when every device named in the list exists, else the first that does not. */
static const char *missing_device(const char *want, char *buf, size_t bn)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    const char *miss = NULL;
    for (const char *p = want; p && !miss; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        size_t len = strcspn(p, ",");
        int found = 0;
        for (int i = 0; list && i < n; i++) {
            const char *name = ibv_get_device_name(list[i]);
            found |= strlen(name) == len && !strncmp(name, p, len);
        }
        if (!found) {
            snprintf(buf, bn, "%.*s", (int)len, p);
            miss = buf;
        }
    }
    if (list)
        ibv_free_device_list(list);
    return miss;
}

void rd_v_describe(struct rd_transport *tp, struct rd_v_conn *c)
{
    snprintf(tp->desc, sizeof tp->desc, "rdma %s port %u",
             ibv_get_device_name(c->id->verbs->device), (unsigned)c->id->port_num);
    snprintf(tp->peer, sizeof tp->peer, "%s", c->peer);
    const struct sockaddr *la = rdma_get_local_addr(c->id);
    if (la && (la->sa_family == AF_INET || la->sa_family == AF_INET6))
        memcpy(&tp->local, la, la->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
}

static void hello_make(struct rd_v_hello *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, HELLO_MAGIC, 4);
    h->version = 1;
    h->small_credits = RD_V_CTRL_RECV;   /* little-endian hosts only, like the frame format */
}

/* The peer's hello from CM private data; 0 when it is not ours. */
unsigned rd_v_hello_parse(const void *pd, size_t len)
{
    struct rd_v_hello h;
    if (!pd || len < sizeof h)
        return 0;
    memcpy(&h, pd, sizeof h);
    if (memcmp(h.magic, HELLO_MAGIC, 4) || h.version != 1 || h.small_credits < 2 ||
        h.small_credits > 4096)
        return 0;
    return h.small_credits;
}

static struct rdma_conn_param conn_param(struct rd_v_hello *h)
{
    struct rdma_conn_param p = {
        .private_data = h,
        .private_data_len = sizeof *h,
        .responder_resources = 0,       /* SEND/RECV only: no RDMA READ either way */
        .initiator_depth = 0,
        .retry_count = RD_V_RETRY,
        .rnr_retry_count = RD_V_RNR_RETRY,
    };
    return p;
}

/* Each side sets its own QP's ack timeout (else the CM derives one from the path). */
void rd_v_set_ack_timeout(struct rdma_cm_id *id)
{
    uint8_t t = RD_V_ACK_TIMEOUT;
    (void)rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof t);
}

int rd_v_cm_accept(struct rdma_cm_id *id)
{
    struct rd_v_hello h;
    hello_make(&h);
    struct rdma_conn_param p = conn_param(&h);
    return rdma_accept(id, &p);
}

/* ---- active side ---- */

enum { ATTEMPT_OK, ATTEMPT_FATAL, ATTEMPT_RETRY };

static int attempt(struct rd_v_conn *c, struct sockaddr *src, struct sockaddr *dst,
                   long long deadline, int *rc)
{
    struct rdma_cm_event *ev;
    if (rdma_create_id(c->ch, &c->id, c, RDMA_PS_TCP)) {
        *rc = rd_fail(RD_ECONNECT, "cannot create RDMA CM id: %s", strerror(errno));
        return ATTEMPT_FATAL;
    }
    if (rdma_resolve_addr(c->id, src, dst, RD_V_RESOLVE_MS)) {
        *rc = rd_fail(RD_ECONNECT, "no RDMA route to %s: %s", c->peer, strerror(errno));
        return ATTEMPT_FATAL;
    }
    ev = next_event(c->ch, RD_V_RESOLVE_MS + 1000);
    if (!ev || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED) {
        int st = ev ? ev->status : ETIMEDOUT;
        if (ev)
            rdma_ack_cm_event(ev);
        *rc = rd_fail(RD_ECONNECT, "no RDMA route to %s (address resolution: %s)", c->peer,
                      strerror(st < 0 ? -st : st));
        return ATTEMPT_FATAL;
    }
    rdma_ack_cm_event(ev);
    if (!rd_v_device_is(c->id, c->device)) {
        *rc = rd_fail(RD_ECONNECT, "%s is reached through RDMA device %s, not %s (-d)", c->peer,
                      ibv_get_device_name(c->id->verbs->device), c->device);
        return ATTEMPT_FATAL;
    }
    rd_v_set_ack_timeout(c->id);
    if (rdma_resolve_route(c->id, RD_V_RESOLVE_MS)) {
        *rc = rd_fail(RD_ECONNECT, "no RDMA route to %s: %s", c->peer, strerror(errno));
        return ATTEMPT_FATAL;
    }
    ev = next_event(c->ch, RD_V_RESOLVE_MS + 1000);
    if (!ev || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED) {
        if (ev)
            rdma_ack_cm_event(ev);
        *rc = rd_fail(RD_ECONNECT, "no RDMA route to %s (route resolution failed)", c->peer);
        return ATTEMPT_FATAL;
    }
    rdma_ack_cm_event(ev);
    if ((*rc = rd_v_res_create(c)))
        return ATTEMPT_FATAL;
    struct rd_v_hello h;
    hello_make(&h);
    struct rdma_conn_param p = conn_param(&h);
    if (rdma_connect(c->id, &p)) {
        *rc = rd_fail(RD_ECONNECT, "cannot connect to %s over RDMA: %s", c->peer, strerror(errno));
        return ATTEMPT_FATAL;
    }
    long long left = deadline - rd_v_now_ms();
    ev = next_event(c->ch, (int)(left > 500 ? left : 500));
    if (!ev) {
        *rc = rd_fail(RD_ECONNECT, "timed out connecting to %s over RDMA", c->peer);
        return ATTEMPT_FATAL;
    }
    enum rdma_cm_event_type t = ev->event;
    int status = ev->status;
    unsigned peer_small = rd_v_hello_parse(ev->param.conn.private_data,
                                           ev->param.conn.private_data_len);
    char reason[200] = "";
    if (t == RDMA_CM_EVENT_REJECTED)
        rd_v_reject_reason(ev->param.conn.private_data, ev->param.conn.private_data_len, reason, sizeof reason);
    rdma_ack_cm_event(ev);
    if (t == RDMA_CM_EVENT_ESTABLISHED) {
        if (!peer_small) {
            *rc = rd_fail(RD_ECONNECT, "%s is not an rdpipe RDMA peer", c->peer);
            return ATTEMPT_FATAL;
        }
        c->established = 1;
        *rc = rd_v_flow_init(c, peer_small);
        return *rc ? ATTEMPT_FATAL : ATTEMPT_OK;
    }
    if (reason[0]) {
        *rc = rd_fail(RD_ECONNECT, "%s refused the RDMA connection: %s", c->peer, reason);
        return ATTEMPT_FATAL;
    }
    if (t == RDMA_CM_EVENT_REJECTED || t == RDMA_CM_EVENT_UNREACHABLE ||
        t == RDMA_CM_EVENT_CONNECT_ERROR) {
        *rc = rd_fail(RD_ECONNECT, "cannot connect to %s over RDMA (%s%s, status %d)", c->peer,
                      rdma_event_str(t),
                      t == RDMA_CM_EVENT_REJECTED ? ": nobody listening?" : "", status);
        return ATTEMPT_RETRY;
    }
    *rc = rd_fail(RD_ECONNECT, "cannot connect to %s over RDMA (%s)", c->peer, rdma_event_str(t));
    return ATTEMPT_FATAL;
}

static void attempt_undo(struct rd_v_conn *c)
{
    rd_v_res_destroy(c);
    rd_v_destroy_id(c->id);
    c->id = NULL;
}

/* What connect and listen both start with: a device to use, and the connection state. */
static int conn_start(struct rd_transport *tp, const struct rd_addr *a, struct rd_v_conn **out)
{
    if (!rd_verbs_available())
        return rd_fail(RD_ENODEV, "no RDMA device");
    char miss[64];
    if (a->device && a->device[0] && missing_device(a->device, miss, sizeof miss))
        return rd_fail(RD_ENODEV, "no RDMA device named %s", miss);
    if (a->device && strlen(a->device) >= sizeof ((struct rd_v_conn *)0)->device)
        return rd_fail(RD_EUSAGE, "-d %s: too long a list", a->device);
    struct rd_v_conn *c = rd_v_conn_new(a);
    if (!c)
        return rd_fail(RD_EIO, "out of memory");
    tp->priv = c;
    *out = c;
    return RD_OK;
}

static int v_connect(struct rd_transport *tp, const struct rd_addr *a)
{
    struct rd_v_conn *c;
    int started = conn_start(tp, a, &c);
    if (started)
        return started;
    struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *dst = NULL, *src = NULL;
    int rc = RD_OK;
    if (rdma_getaddrinfo(a->host, a->port, &hints, &dst) || !dst->ai_dst_addr) {
        rc = rd_fail(RD_ECONNECT, "cannot resolve %s port %s for RDMA", a->host, a->port);
        goto out;
    }
    if (a->bind) {
        struct rdma_addrinfo sh = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
        sh.ai_family = dst->ai_family;
        if (rdma_getaddrinfo(a->bind, NULL, &sh, &src) || !src->ai_src_addr) {
            rc = rd_fail(RD_ECONNECT, "cannot use %s as RDMA source address", a->bind);
            goto out;
        }
    }
    rd_sockaddr_str(dst->ai_dst_addr, c->peer, sizeof c->peer);
    c->ch = rd_v_channel_new();
    if (!c->ch) {
        rc = rd_fail(RD_ECONNECT, "cannot open the RDMA CM event channel: %s", strerror(errno));
        goto out;
    }
    long long deadline = rd_v_now_ms() + (a->timeout_ms < 0 ? RD_V_CONNECT_MS : a->timeout_ms);
    for (;;) {
        rd_error_clear();
        int how = attempt(c, src ? src->ai_src_addr : NULL, dst->ai_dst_addr, deadline, &rc);
        if (how == ATTEMPT_OK)
            break;
        attempt_undo(c);
        if (how == ATTEMPT_FATAL || rd_v_now_ms() + 200 >= deadline)
            goto out;
        usleep(200 * 1000);   /* nobody listening yet: the receiver may still be starting */
    }
    rd_v_describe(tp, c);
out:
    if (src)
        rdma_freeaddrinfo(src);
    if (dst)
        rdma_freeaddrinfo(dst);
    return rc;
}

/* ---- passive side ---- */

static int v_listen(struct rd_transport *lis, const struct rd_addr *a)
{
    struct rd_v_conn *c;
    int started = conn_start(lis, a, &c);
    if (started)
        return started;
    struct rdma_addrinfo *ai = NULL;
    struct sockaddr_in6 any6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT,
                                 .sin6_port = htons((uint16_t)atoi(a->port)) };
    struct sockaddr_in any4 = { .sin_family = AF_INET, .sin_addr.s_addr = INADDR_ANY,
                                .sin_port = any6.sin6_port };
    struct sockaddr *sa = (struct sockaddr *)&any6;
    const char *where = a->bind ? a->bind : "any address";
    int rc = RD_OK;
    if (a->bind) {
        struct rdma_addrinfo h = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
        if (rdma_getaddrinfo(a->bind, a->port, &h, &ai) || !ai->ai_src_addr) {
            rc = rd_fail(RD_ECONNECT, "cannot resolve listen address %s for RDMA", a->bind);
            goto out;
        }
        sa = ai->ai_src_addr;
    }
    if (!(c->lch = rd_v_channel_new()) || rdma_create_id(c->lch, &c->lid, c, RDMA_PS_TCP)) {
        rc = rd_fail(RD_ECONNECT, "cannot create an RDMA CM listener: %s", strerror(errno));
        goto out;
    }
    if (!a->bind) {
        int afonly = 0;   /* one listener for IPv4 and IPv6 */
        rdma_set_option(c->lid, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &afonly, sizeof afonly);
    }
    int e = rdma_bind_addr(c->lid, sa) ? errno : 0;
    if (e && !a->bind && e != EADDRINUSE)
        e = rdma_bind_addr(c->lid, (struct sockaddr *)&any4) ? errno : 0;   /* no IPv6 */
    if (e) {
        if (e == EADDRINUSE)
            rc = rd_fail(RD_ECONNECT, "RDMA port %s is already in use", a->port);
        else
            rc = rd_fail(RD_ECONNECT, "cannot listen for RDMA on %s port %s: %s", where, a->port,
                         e == ENODEV || e == EADDRNOTAVAIL ? "no RDMA device has that address"
                                                           : strerror(e));
        goto out;
    }
    if (!rd_v_device_is(c->lid, c->device)) {
        rc = rd_fail(RD_ECONNECT, "%s is on RDMA device %s, not %s (-d)", where,
                     ibv_get_device_name(c->lid->verbs->device), c->device);
        goto out;
    }
    if (rdma_listen(c->lid, 16)) {
        rc = rd_fail(RD_ECONNECT, "RDMA listen on port %s: %s", a->port, strerror(errno));
        goto out;
    }
    lis->local_port = ntohs(rdma_get_src_port(c->lid));
    if (c->lid->verbs)
        snprintf(lis->desc, sizeof lis->desc, "rdma %s", ibv_get_device_name(c->lid->verbs->device));
    rc = rd_v_acceptor_start(c);
out:
    if (ai)
        rdma_freeaddrinfo(ai);
    return rc;
}

static int v_listen_fd(struct rd_transport *lis)
{
    return rd_v_acceptor_fd(lis->priv);
}

void rd_v_reject(struct rdma_cm_id *id, const char *why)
{
    char pd[56];
    memcpy(pd, REJECT_MAGIC, 4);
    size_t n = strlen(why);
    if (n > sizeof pd - 4)
        n = sizeof pd - 4;
    memcpy(pd + 4, why, n);
    rdma_reject(id, pd, (uint8_t)(4 + n));
}

size_t rd_v_reject_reason(const void *pd, size_t len, char *out, size_t n)
{
    const unsigned char *p = pd;
    size_t k = 0;
    if (n == 0)
        return 0;
    if (p && len > 4 && memcmp(p, REJECT_MAGIC, 4) == 0)
        for (size_t i = 4; i < len && p[i] && k + 1 < n; i++)
            out[k++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
    out[k] = '\0';
    return k;
}

static int v_accept(struct rd_transport *lis, struct rd_transport **out, int timeout_ms)
{
    struct rd_v_conn *c;
    int rc = rd_v_acceptor_take(lis->priv, &c, timeout_ms);
    if (rc)
        return rc;
    struct rd_transport *tp = rd_transport_new(&rd_verbs_ops);
    if (!tp) {
        (void)rdma_disconnect(c->id);
        rd_v_conn_free(c);
        return rd_fail(RD_EIO, "out of memory");
    }
    tp->priv = c;
    rd_v_describe(tp, c);
    *out = tp;
    return RD_OK;
}

static void v_close(struct rd_transport *tp)
{
    struct rd_v_conn *c = tp->priv;
    if (c)
        rd_v_print_stats(c);
    /* also answers a peer's disconnect request; a failure only means the connection is down
     * already, which releases nothing and loses nothing: not reported */
    if (c && c->id && c->established)
        (void)rdma_disconnect(c->id);
    if (c && c->acc)
        rd_v_acceptor_stop(c);   /* before the listener's id and channel go */
    rd_v_conn_free(c);
    free(tp);
}

/* Every verbs connection's operations. A sender's frames go out of its registered ring slots,
 * where the lanes read a file's chunks (sending them from registered windows of the file's
 * own pages measured slower in the VM, 0.067 against 0.073 GB/s, and the lane's read is
 * needed for the tag anyway); send_ref is a relay's, sending from an upstream ring. */
const struct rd_transport_ops rd_verbs_ops = {
    .name = "rdma",
    .listen = v_listen,
    .accept = v_accept,
    .listen_fd = v_listen_fd,
    .connect = v_connect,
    .setup_ring = rd_v_setup_ring,
    .get_send_buf = rd_v_get_send_buf,
    .send = rd_v_send,
    .send_ref = rd_v_send_ref,
    .recv = rd_v_recv,
    .release = rd_v_release,
    .drain = rd_v_drain,
    .shutdown = rd_v_shutdown,
    .interrupt = rd_v_interrupt,
    .shut_recv = rd_v_shut_recv,
    .close = v_close,
    .watch_fd = rd_v_watch_fd,
    .peek = rd_v_peek,
    .numa_node = rd_v_numa_node,
    .link_rate = rd_v_link_rate,
};
