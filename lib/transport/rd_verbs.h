/* rd_verbs.h - private state of the RDMA (verbs) transport, shared by rd_verbs*.c.
 *
 * Receive queue discipline (why credits have two kinds): one RC QP has one receive queue and
 * messages consume posted receives strictly in FIFO order. Control receives are RD_CTRL_FRAME
 * bytes, ring receives are frame_size bytes, so a big DATA frame must never meet a small
 * control receive. Each side therefore posts all its control ("small") receives before any
 * ring ("big") receive, stops reposting small ones once its ring exists, and the peer tracks
 * both counts: it burns leftover small receives with zero-length fillers before the first
 * big message. Every message (including credit-only ones) costs one credit; credits return
 * piggybacked in the imm_data of every SEND_WITH_IMM, or in a credit-only message once a
 * batch is owed. Payload messages keep RD_V_RESERVE credits back, so a credit-only message
 * can always be sent and the two sides can never both wait for each other's credits.
 */
#ifndef RD_VERBS_H
#define RD_VERBS_H

#include "transport/rd_transport.h"

#include <pthread.h>
#include <stdint.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#define RD_V_CTRL_SEND 8u          /* control send frames */
#define RD_V_CTRL_RECV 16u         /* control receive frames: handshake + credit messages */
#define RD_V_RESERVE 1u            /* credits only credit-only messages may use */
#define RD_V_SQ_EXTRA 32u          /* send queue room for credit-only / filler messages */
#define RD_V_RESOLVE_MS 2000
#define RD_V_CONNECT_MS 5000       /* default connect timeout (rd_addr.timeout_ms = -1) */
/* Liveness. A peer host that dies or drops off the network says nothing: only our own QP can
 * notice, when something it sent is not acknowledged. So whenever nothing is in flight, each
 * side posts a heartbeat every RD_V_HEARTBEAT_MS: a zero-length RDMA WRITE, which the peer's
 * QP acknowledges without consuming a receive, a credit or any of the peer's CPU time (it
 * keeps flowing while the peer's queue is full or its process is busy flushing to disk). A
 * silent peer then fails that write after RD_V_RETRY + 1 tries of RD_V_ACK_TIMEOUT each:
 * 7 x 268 ms = 1.9 s here (an HCA may stretch each timeout up to 4x: 7.5 s at worst), so
 * both sides end within 10 s of the peer going quiet. */
#ifndef RD_V_HEARTBEAT_MS         /* -DRD_V_HEARTBEAT_MS=0: none (to see the tests catch it) */
#define RD_V_HEARTBEAT_MS 250
#endif
/* Backstop: a provider must fail a send within 7 tries x 4 x 268 ms = 7.5 s (the most the
 * spec lets an HCA stretch a timeout). Soft-RoCE whose own netdev went down was seen to report
 * nothing at all; sends in flight this long without one completing count as a lost link. */
#define RD_V_STUCK_MS 8000
#define RD_V_ACK_TIMEOUT 16        /* 4.096 us << 16 = 268 ms per try */
#define RD_V_RETRY 6               /* 6 retries after the first try (7 is the 3-bit maximum) */
/* Credits guarantee a posted receive for every message, so "receiver not ready" is a bug,
 * not back-pressure: finite (7 would retry forever), so such a bug fails instead of
 * hanging. The responder's RNR timer is the CM's 0 = 655 ms: 7 x 655 ms = 4.6 s. */
#define RD_V_RNR_RETRY 6
/* The accept side: connection requests are answered by a thread of the listener and wait
 * for the peer's RTU concurrently, so one that stalls costs the others nothing. A request
 * still unanswered after RD_V_ACCEPT_MS is dropped; at most RD_V_PENDING_MAX wait (the
 * oldest goes first when more come), and at most RD_V_READY_MAX established connections
 * wait to be taken by accept. */
#define RD_V_ACCEPT_MS 5000
#define RD_V_PENDING_MAX 16u
#define RD_V_READY_MAX 8u
/* Spin this long before sleeping on the completion channel (RDPIPE_BUSY_POLL_US overrides).
 * On rxe (TCG VM, 256 MiB, 1M chunks) 0/20/100 us measured 13-17/17/16 MB/s: within noise,
 * since the "NIC" is kernel code on the same CPUs; on a real HCA a short spin saves the
 * wakeup when a completion is microseconds away, and 20 us costs little. */
#define RD_V_BUSY_US 20
/* A relay's downstream connection sends frames from the rings of at most this many upstream
 * connections without copying them (send_ref); it copies from any further one. */
#define RD_V_FOREIGN_MAX 4u

/* imm_data layout (host order): bit 31 credit-only, bits 16..30 big credits, 0..15 small */
#define RD_V_IMM_INTERNAL 0x80000000u
#define RD_V_IMM(internal, big, small) \
    ((internal ? RD_V_IMM_INTERNAL : 0u) | ((uint32_t)(big) << 16) | (uint32_t)(small))

/* CM private data, both directions: who we are and how many small receives we posted */
struct rd_v_hello {
    char magic[4];                 /* "RDPv" */
    uint8_t version;               /* 1 */
    uint8_t pad;
    uint16_t small_credits;        /* little endian */
};

enum rd_v_kind { K_CTRL_SEND = 1, K_RING_SEND, K_CTRL_RECV, K_RING_RECV, K_INTERNAL, K_HEARTBEAT };

struct rd_v_acceptor;   /* rd_verbs_accept.c */

/* A set of equal frames inside one registration. */
struct rd_v_pool {
    enum rd_v_kind kind;
    unsigned n;
    size_t frame;                  /* bytes per frame (what a receive accepts) */
    size_t stride;                 /* distance between frames: whole pages */
    uint8_t *mem;
    size_t mem_len;                /* the mapping's length (munmap) */
    int huge;                      /* 2: hugetlbfs pages, 1: transparent huge pages asked, 0 */
    struct ibv_mr *mr;
    struct rd_buf *bufs;
    unsigned *free;                /* send pools: stack of free slots */
    unsigned nfree;
};

struct rd_v_ready { struct rd_v_pool *pool; unsigned slot; uint32_t len; };

/* Another connection's pool registered in our PD too (send_ref); mr NULL: that failed (ulimit
 * -l counts the pages again), so its frames are copied. */
struct rd_v_foreign { const void *mem; struct ibv_mr *mr; };

struct rd_v_conn {
    /* connection management */
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id;
    /* listener only */
    struct rdma_event_channel *lch;
    struct rdma_cm_id *lid;
    struct rd_v_acceptor *acc;     /* the thread that answers connection requests */
    char device[64];               /* -d pin, "" = any */
    char peer[128];                /* printable peer address for messages */
    int verbose;
    int cm_event_seen;             /* the peer left or the route changed: flushes follow from it */

    /* verbs resources (rd_verbs_res.c) */
    struct ibv_pd *pd;
    struct ibv_comp_channel *scc, *rcc;
    struct ibv_cq *scq, *rcq;
    unsigned sq_cap, rq_cap;
    unsigned scq_events, rcq_events;   /* unacked CQ events */
    int wake_fd;                   /* eventfd: shutdown and interrupt wake pollers */
    int watch_ep;                  /* epoll of the CM and receive channels (watch_fd), or -1 */
    struct rd_v_pool ctrl_send, ctrl_recv, ring_send, ring_recv;
    struct rd_v_foreign foreign[RD_V_FOREIGN_MAX];   /* under mu */
    unsigned nforeign;

    /* flow state (rd_verbs_flow.c), all under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int poller;                    /* a thread is sleeping in poll() for everyone */
    int interrupted;               /* ops->interrupt: the next recv that must wait returns */
    int recv_shut;                 /* ops->shut_recv: every recv fails from now on */
    unsigned sq_used, sq_internal, payload_out;
    int send_err;                  /* a payload send did not complete successfully */
    long long est;                 /* receives the peer believes it may still use */
    unsigned peer_small, peer_big; /* receives the peer posted that we may use */
    int peer_ring;                 /* the peer announced big receives: it retires small ones */
    unsigned owe_small, owe_big;   /* receives we reposted but did not announce yet */
    unsigned batch;                /* announce once this many are owed */
    int ring_mode;                 /* our RECV ring exists: retire small receives */
    struct rd_v_ready *ready;      /* received frames in arrival order */
    unsigned rd_head, rd_count, rd_cap;
    int dead, shut, established;
    char why[200];
    int busy_us;                   /* busy-poll before sleeping */
    long long last_post_us;        /* when we last posted anything (heartbeats fill the gaps) */
    long long last_heard_us;       /* when the peer last acknowledged or sent something */
    long long sq_moved_us;         /* when a send last completed, or was posted to an idle SQ */
    unsigned long long stat_sleeps, stat_internal, stat_heartbeats, stat_by_ref;
};

/* rd_verbs_res.c */
int rd_v_res_create(struct rd_v_conn *c);      /* PD, CQs, control pools, QP, post receives */
void rd_v_res_destroy(struct rd_v_conn *c);    /* QP, pools (MRs), CQs, channels, PD */
int rd_v_pool_create(struct rd_v_conn *c, struct rd_v_pool *p, enum rd_v_kind kind,
                     unsigned n, size_t frame);
/* Deregister and free a pool; only once no posted work request can use it (QP destroyed, or
 * nothing posted from it yet). -1 (warned) when the MR could not be deregistered: then its
 * memory is leaked, not freed under the registration. */
int rd_v_pool_destroy(struct rd_v_pool *p);
int rd_v_post_recv(struct rd_v_conn *c, struct rd_v_pool *p, unsigned slot);
/* Under c->mu: the registration in c's PD of p, another connection's pool, made at the first
 * call; NULL when it cannot be (the caller copies). */
struct ibv_mr *rd_v_foreign_mr(struct rd_v_conn *c, const struct rd_v_pool *p);
void rd_v_conn_free(struct rd_v_conn *c);      /* everything, including the CM ids/channels */
void rd_v_destroy_id(struct rdma_cm_id *id);   /* rdma_destroy_id, a failure warned (NULL: no-op) */
/* "prog: RDMA teardown: CALL failed: strerror (errno N)" on stderr: a release that failed
 * leaks a resource but loses no data, so it never changes an exit status. */
void rd_v_teardown_warn(const char *call, int err);

/* rd_verbs_flow.c */
int rd_v_flow_init(struct rd_v_conn *c, unsigned peer_small);
extern const struct rd_transport_ops rd_verbs_ops;
int rd_v_setup_ring(struct rd_transport *tp, enum rd_dir dir, size_t frame_size, unsigned depth);
int rd_v_get_send_buf(struct rd_transport *tp, struct rd_buf **out);
int rd_v_send(struct rd_transport *tp, struct rd_buf *b);   /* waits for credits */
int rd_v_send_ref(struct rd_transport *tp, struct rd_buf *b);
int rd_v_recv(struct rd_transport *tp, struct rd_buf **out, int timeout_ms);
void rd_v_release(struct rd_transport *tp, struct rd_buf *b);
int rd_v_drain(struct rd_transport *tp);
void rd_v_shutdown(struct rd_transport *tp);
void rd_v_interrupt(struct rd_transport *tp);
void rd_v_shut_recv(struct rd_transport *tp);
void rd_v_print_stats(struct rd_v_conn *c);   /* -vv: what the data path did, at close */
int rd_v_watch_fd(struct rd_transport *tp);
int rd_v_peek(struct rd_transport *tp, uint8_t *head, size_t n);
int rd_v_numa_node(struct rd_transport *tp);   /* the device's node (sysfs), -1 if none */
/* the port's data rate (its speed and width), bytes/s; 0 if unknown */
uint64_t rd_v_link_rate(struct rd_transport *tp, char *link, size_t n);

/* rd_verbs.c: connection management shared by both sides */
void rd_v_peer_name(struct rdma_cm_id *id, char *out, size_t n);
long long rd_v_now_ms(void);
struct rd_v_conn *rd_v_conn_new(const struct rd_addr *a);
struct rdma_event_channel *rd_v_channel_new(void);   /* non-blocking */
int rd_v_device_is(struct rdma_cm_id *id, const char *want);
void rd_v_describe(struct rd_transport *tp, struct rd_v_conn *c);
unsigned rd_v_hello_parse(const void *pd, size_t len);   /* peer's small credits, 0 = not ours */
void rd_v_set_ack_timeout(struct rdma_cm_id *id);   /* RD_V_ACK_TIMEOUT, before the QP is up */
int rd_v_cm_accept(struct rdma_cm_id *id);           /* our hello and the retry counts above */
void rd_v_reject(struct rdma_cm_id *id, const char *why);   /* why goes to the peer */
/* The reason in a REJECT's private data (rd_v_reject's), as it may be shown: up to the first
 * NUL, every byte but printable ASCII as '?' (a stranger wrote it, before any key). Returns its
 * length, 0 with out "" when the data is not an rdpipe reason. */
size_t rd_v_reject_reason(const void *pd, size_t len, char *out, size_t n);

/* rd_verbs_accept.c: the listener's thread */
int rd_v_acceptor_start(struct rd_v_conn *l);
int rd_v_acceptor_fd(struct rd_v_conn *l);             /* readable: a connection is ready */
int rd_v_acceptor_take(struct rd_v_conn *l, struct rd_v_conn **out, int timeout_ms);
void rd_v_acceptor_stop(struct rd_v_conn *l);           /* join; drops whatever still waits */

#endif
