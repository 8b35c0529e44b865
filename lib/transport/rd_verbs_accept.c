/* rd_verbs_accept.c - the passive side of the RDMA transport: a thread of the listener answers
 * connection requests, so that none of them can hold up another.
 *
 * An RDMA connection is set up in three messages: the peer's request (REQ), our answer (REP,
 * rdma_accept) and the peer's ready-to-use (RTU), after which the connection is established.
 * A peer that sends a request and then nothing leaves ours waiting for an RTU that never
 * comes. Waiting for each in turn (as accept once did, up to 5 s each) let a few such
 * requests lock everyone else out, TCP senders too, since the receiver polls both listeners
 * from one thread. So this thread answers every request at once and keeps it pending until
 * its RTU (then it moves to the ready queue that accept takes from), its failure, or
 * RD_V_ACCEPT_MS. The listener's fd for poll is an eventfd counting the ready connections.
 *
 * The thread keeps its errors in its own context (rd_errctx_bind(NULL)): a stranger's failed
 * setup must never become the transfer's error, which its threads may be recording meanwhile.
 */
#include "transport/rd_verbs.h"
#include "util/rd_error.h"
#include "util/rd_thread.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

struct pending {
    struct rd_v_conn *c;
    long long since;   /* ms: when we answered its request */
};

struct rd_v_acceptor {
    struct rd_v_conn *l;
    pthread_t thread;
    int started;
    int stop_fd;                   /* eventfd: the thread ends */
    int ready_fd;                  /* eventfd (semaphore): one count per ready connection */
    /* the thread's own */
    struct pending pend[RD_V_PENDING_MAX];
    unsigned npend;
    /* shared with accept, under mu */
    pthread_mutex_t mu;
    struct rd_v_conn *ready[RD_V_READY_MAX];
    unsigned nready;
    int gone;                      /* the device went away: the listener is dead */
};

static void count_up(int fd)
{
    uint64_t one = 1;
    if (write(fd, &one, sizeof one) < 0) {
        /* an eventfd counter cannot overflow from this; nothing else can fail */
    }
}

static void count_down(int fd)
{
    uint64_t v;
    if (read(fd, &v, sizeof v) < 0) {
        /* EAGAIN: already zero; the queue under mu is what counts */
    }
}

/* An established connection nobody took: tell the peer, free it. */
static void close_conn(struct rd_v_conn *c)
{
    (void)rdma_disconnect(c->id);
    rd_v_conn_free(c);
}

static void drop_pending(struct rd_v_acceptor *a, unsigned i, const char *why)
{
    struct rd_v_conn *c = a->pend[i].c;
    if (why && a->l->verbose)
        rd_warn("rdma: connection from %s %s: dropped", c->peer, why);
    a->npend--;
    memmove(a->pend + i, a->pend + i + 1, (a->npend - i) * sizeof *a->pend);
    rd_v_conn_free(c);   /* destroys the id: the CM rejects it if it is still half open */
}

static int find_pending(struct rd_v_acceptor *a, struct rdma_cm_id *id)
{
    for (unsigned i = 0; i < a->npend; i++)
        if (a->pend[i].c->id == id)
            return (int)i;
    return -1;
}

/* A connection request: refuse strangers, else set up its resources and answer it. */
static void on_request(struct rd_v_acceptor *a, struct rdma_cm_id *id, unsigned peer_small)
{
    struct rd_v_conn *l = a->l;
    char who[128];
    rd_v_peer_name(id, who, sizeof who);
    if (!peer_small || !rd_v_device_is(id, l->device)) {
        if (l->verbose)
            rd_warn("rdma: refused a connection from %s (%s)", who,
                    peer_small ? "other RDMA device" : "not an rdpipe peer");
        rd_v_reject(id, peer_small ? "wrong RDMA device" : "not an rdpipe peer");
        rd_v_destroy_id(id);
        return;
    }
    if (a->npend == RD_V_PENDING_MAX)
        drop_pending(a, 0, "did not complete its connection while newer ones came");
    struct rd_v_conn *c = rd_v_conn_new(NULL);
    if (!c) {
        rdma_reject(id, NULL, 0);
        rd_v_destroy_id(id);
        return;
    }
    c->verbose = l->verbose;
    snprintf(c->peer, sizeof c->peer, "%s", who);
    c->id = id;   /* from here rd_v_conn_free destroys it */
    rd_v_set_ack_timeout(id);
    if (rd_v_res_create(c) || rd_v_flow_init(c, peer_small)) {
        if (l->verbose)
            rd_warn("rdma: connection from %s failed during setup", who);
        rd_v_reject(id, "receiver out of RDMA resources");
        rd_v_conn_free(c);
        return;
    }
    if (rd_v_cm_accept(id)) {
        if (l->verbose)
            rd_warn("rdma: cannot answer the connection from %s: %s", who, strerror(errno));
        rd_v_conn_free(c);
        return;
    }
    a->pend[a->npend++] = (struct pending){ .c = c, .since = rd_v_now_ms() };
}

/* Its RTU came: the connection gets its own event channel and goes to the ready queue. */
static void on_established(struct rd_v_acceptor *a, unsigned i)
{
    struct rd_v_conn *c = a->pend[i].c;
    if (!(c->ch = rd_v_channel_new()) || rdma_migrate_id(c->id, c->ch)) {
        drop_pending(a, i, "could not be moved to its own event channel");
        return;
    }
    a->npend--;
    memmove(a->pend + i, a->pend + i + 1, (a->npend - i) * sizeof *a->pend);
    c->established = 1;
    struct rd_v_conn *old = NULL;
    pthread_mutex_lock(&a->mu);
    if (a->nready == RD_V_READY_MAX) {   /* nobody takes them: the oldest goes */
        old = a->ready[0];
        a->nready--;
        memmove(a->ready, a->ready + 1, a->nready * sizeof *a->ready);
        count_down(a->ready_fd);
    }
    a->ready[a->nready++] = c;
    count_up(a->ready_fd);
    pthread_mutex_unlock(&a->mu);
    if (old) {
        if (a->l->verbose)
            rd_warn("rdma: connection from %s was never served while newer ones came: dropped",
                    old->peer);
        close_conn(old);
    }
}

/* Returns 0, or -1 when the listener itself is gone. */
static int on_event(struct rd_v_acceptor *a, struct rdma_cm_event *ev)
{
    enum rdma_cm_event_type t = ev->event;
    struct rdma_cm_id *id = ev->id;
    if (t == RDMA_CM_EVENT_CONNECT_REQUEST) {
        unsigned peer_small = rd_v_hello_parse(ev->param.conn.private_data,
                                               ev->param.conn.private_data_len);
        rdma_ack_cm_event(ev);
        on_request(a, id, peer_small);
        return 0;
    }
    rdma_ack_cm_event(ev);   /* before any rdma_destroy_id below, which waits for it */
    if (id == a->l->lid) {
        if (t == RDMA_CM_EVENT_DEVICE_REMOVAL) {
            pthread_mutex_lock(&a->mu);
            a->gone = 1;
            count_up(a->ready_fd);   /* so that accept hears of it */
            pthread_mutex_unlock(&a->mu);
            return -1;
        }
        return 0;
    }
    int i = find_pending(a, id);
    if (i < 0)
        return 0;
    if (t == RDMA_CM_EVENT_ESTABLISHED)
        on_established(a, (unsigned)i);
    else if (t != RDMA_CM_EVENT_ADDR_CHANGE)
        drop_pending(a, (unsigned)i, rdma_event_str(t));   /* rejected, unreachable, error... */
    return 0;
}

static void *acceptor_main(void *arg)
{
    struct rd_v_acceptor *a = arg;
    struct rd_v_conn *l = a->l;
    rd_thread_name("rd-rdma-accept");
    rd_errctx_bind(NULL);
    for (;;) {
        long long now = rd_v_now_ms();
        while (a->npend && now - a->pend[0].since >= RD_V_ACCEPT_MS)
            drop_pending(a, 0, "did not complete its connection in time");
        int ms = a->npend ? (int)(a->pend[0].since + RD_V_ACCEPT_MS - now) : -1;
        struct pollfd pf[2] = { { .fd = l->lch->fd, .events = POLLIN },
                                { .fd = a->stop_fd, .events = POLLIN } };
        if (poll(pf, 2, ms) < 0 && errno != EINTR)
            break;
        if (pf[1].revents)
            break;
        struct rdma_cm_event *ev;
        int gone = 0;
        while (!gone && rdma_get_cm_event(l->lch, &ev) == 0)
            gone = on_event(a, ev);
        if (gone)
            break;
    }
    return NULL;
}

int rd_v_acceptor_start(struct rd_v_conn *l)
{
    struct rd_v_acceptor *a = calloc(1, sizeof *a);
    if (!a)
        return rd_fail(RD_EIO, "out of memory");
    a->l = l;
    a->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    a->ready_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE);
    pthread_mutex_init(&a->mu, NULL);
    l->acc = a;
    if (a->stop_fd < 0 || a->ready_fd < 0)
        return rd_fail(RD_ECONNECT, "cannot create the RDMA listener's eventfds: %s",
                       strerror(errno));
    int e = pthread_create(&a->thread, NULL, acceptor_main, a);
    if (e)
        return rd_fail(RD_ECONNECT, "cannot start the RDMA listener's thread: %s", strerror(e));
    a->started = 1;
    return RD_OK;
}

int rd_v_acceptor_fd(struct rd_v_conn *l)
{
    return l->acc->ready_fd;
}

int rd_v_acceptor_take(struct rd_v_conn *l, struct rd_v_conn **out, int timeout_ms)
{
    struct rd_v_acceptor *a = l->acc;
    long long deadline = timeout_ms < 0 ? -1 : rd_v_now_ms() + timeout_ms;
    for (;;) {
        pthread_mutex_lock(&a->mu);
        if (a->nready) {
            *out = a->ready[0];
            a->nready--;
            memmove(a->ready, a->ready + 1, a->nready * sizeof *a->ready);
            count_down(a->ready_fd);
            pthread_mutex_unlock(&a->mu);
            return RD_OK;
        }
        if (a->gone == 1) {
            a->gone = 2;   /* said once; the fd stops polling readable */
            count_down(a->ready_fd);
            pthread_mutex_unlock(&a->mu);
            return rd_fail(RD_ECONNECT, "RDMA device removed while listening");
        }
        pthread_mutex_unlock(&a->mu);
        long long left = deadline < 0 ? -1 : deadline - rd_v_now_ms();
        if (deadline >= 0 && left <= 0)
            return rd_fail(RD_ECONNECT, "timed out waiting for a sender");
        struct pollfd pf = { .fd = a->ready_fd, .events = POLLIN };
        if (poll(&pf, 1, left < 0 ? -1 : (int)left) < 0 && errno != EINTR)
            return rd_fail(RD_ECONNECT, "poll: %s", strerror(errno));
    }
}

void rd_v_acceptor_stop(struct rd_v_conn *l)
{
    struct rd_v_acceptor *a = l->acc;
    if (!a)
        return;
    if (a->started) {
        count_up(a->stop_fd);
        pthread_join(a->thread, NULL);
    }
    if (a->stop_fd >= 0)
        close(a->stop_fd);
    while (a->npend)
        drop_pending(a, a->npend - 1, NULL);
    for (unsigned i = 0; i < a->nready; i++)
        close_conn(a->ready[i]);
    if (a->ready_fd >= 0)
        close(a->ready_fd);
    pthread_mutex_destroy(&a->mu);
    free(a);
    l->acc = NULL;
}
