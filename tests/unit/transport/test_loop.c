/* test_loop.c - the pass-by-pointer transport (transport/rd_loop): frames change hands
 * without a copy, flow control, shutdown waking both ends, then a handshake and a 10 MB stream
 * through the real engines, a shutdown in mid-stream failing both of them, and a receiver
 * whose one stream is claimed turning a sender away (or serving it once given back).
 *
 * rd_fail() keeps one error per process, shared by both peers here: every case clears it. */
#include "check.h"
#include "testfiles.h"

#include "engine/rd_engine.h"
#include "engine/rd_io.h"
#include "transport/rd_loop.h"
#include "transport/rd_session.h"
#include "util/rd_error.h"
#include "wire/rd_auth.h"
#include "wire/rd_proto.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#define CASE_TIMEOUT_S 60
#define STREAM_BYTES (10u * 1000 * 1000)   /* not a multiple of the chunk: a short last frame */

static const char secret[] = "loop transport test key, long enough to be a real one";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static void before_each(void)
{
    rd_error_clear();
}

/* ---- the transport alone ---- */

static void t_hands_over_the_buffer(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(rd_loop_pair(&a, &b) == RD_OK, return);
    CHECK_STR_EQ(a->peer, "loop:b");
    CHECK_STR_EQ(b->peer, "loop:a");
    CHECK(a->ops->send_ref == NULL);   /* nothing to gain: the engine preads into the buffers */
    struct rd_buf *s, *r;
    CHECK_OR(a->ops->get_send_buf(a, &s) == RD_OK, goto out);
    memset(s->data, 0xab, 100);
    s->len = 100;
    CHECK_EQ_I(a->ops->send(a, s), RD_OK);
    CHECK_OR(b->ops->recv(b, &r, 1000) == RD_OK, goto out);
    CHECK(r == s);                     /* the very buffer, not a copy */
    CHECK_EQ_U(r->len, 100);
    CHECK_EQ_U(r->data[99], 0xab);
    b->ops->release(b, r);
    /* the other way round, and a timeout when nothing comes */
    CHECK_OR(b->ops->get_send_buf(b, &s) == RD_OK, goto out);
    s->len = 1;
    CHECK_EQ_I(b->ops->send(b, s), RD_OK);
    CHECK_OR(a->ops->recv(a, &r, 1000) == RD_OK, goto out);
    CHECK(r == s);
    a->ops->release(a, r);
    CHECK_EQ_I(a->ops->recv(a, &r, 20), RD_ECONNECT);
    CHECK_EQ_I(a->ops->drain(a), RD_OK);
out:
    a->ops->close(a);
    b->ops->close(b);
}

struct blocked {
    struct rd_transport *tp;
    int recv;            /* 1: recv, 0: get_send_buf */
    atomic_int done;
    int rc;
    double at;           /* when it returned */
};

static void *blocked_main(void *arg)
{
    struct blocked *x = arg;
    struct rd_buf *b;
    x->rc = x->recv ? x->tp->ops->recv(x->tp, &b, -1) : x->tp->ops->get_send_buf(x->tp, &b);
    x->at = now_s();
    atomic_store(&x->done, 1);
    return NULL;
}

/* A ring of 2: the third get_send_buf waits until the receiver releases a frame. */
static void t_flow_control(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(rd_loop_pair(&a, &b) == RD_OK, return);
    CHECK_EQ_I(b->ops->setup_ring(b, RD_DIR_RECV, 8192, 2), RD_OK);
    CHECK_EQ_I(a->ops->setup_ring(a, RD_DIR_SEND, 8192, 2), RD_OK);
    struct rd_buf *s[2], *r;
    for (int i = 0; i < 2; i++) {
        CHECK_OR(a->ops->get_send_buf(a, &s[i]) == RD_OK, goto out);
        CHECK_EQ_U(s[i]->cap, 8192);
        s[i]->len = 8192;
        s[i]->data[0] = (uint8_t)i;
        CHECK_EQ_I(a->ops->send(a, s[i]), RD_OK);
    }
    struct blocked g = { .tp = a };
    pthread_t t;
    CHECK_OR(rd_thread_create(&t, NULL, blocked_main, &g) == 0, goto out);
    sleep_ms(50);
    CHECK(!atomic_load(&g.done));      /* both frames are in the receiver's hands */
    CHECK_OR(b->ops->recv(b, &r, 1000) == RD_OK, goto join);
    CHECK(r == s[0]);                  /* in order */
    CHECK_EQ_U(r->data[0], 0);
    b->ops->release(b, r);
join:
    pthread_join(t, NULL);
    CHECK_EQ_I(g.rc, RD_OK);
out:
    a->ops->close(a);
    b->ops->close(b);
}

/* What the peer sent before it shut down still arrives; then the connection is closed. A
 * frame the receiver holds stays valid after the sender closed its end. */
static void t_peer_shutdown_after_send(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(rd_loop_pair(&a, &b) == RD_OK, return);
    struct rd_buf *s, *r;
    CHECK_OR(a->ops->get_send_buf(a, &s) == RD_OK, goto out);
    memset(s->data, 7, 64);
    s->len = 64;
    CHECK_EQ_I(a->ops->send(a, s), RD_OK);
    a->ops->close(a);
    a = NULL;
    CHECK_OR(b->ops->recv(b, &r, 1000) == RD_OK, goto out);
    CHECK_EQ_U(r->len, 64);
    CHECK_EQ_U(r->data[63], 7);
    b->ops->release(b, r);
    CHECK_EQ_I(b->ops->recv(b, &r, 1000), RD_ESTREAM);
    CHECK_EQ_I(b->ops->get_send_buf(b, &s), RD_ESTREAM);
out:
    if (a)
        a->ops->close(a);
    b->ops->close(b);
}

/* shutdown on one end from a third thread wakes every blocked call on both ends promptly:
 * get_send_buf and recv on the other end, recv on its own. */
static void t_shutdown_wakes_both_ends(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(rd_loop_pair(&a, &b) == RD_OK, return);
    CHECK_EQ_I(a->ops->setup_ring(a, RD_DIR_SEND, 8192, 1), RD_OK);
    struct rd_buf *held;
    CHECK_OR(a->ops->get_send_buf(a, &held) == RD_OK, goto out);   /* a's only frame */
    struct blocked g[3] = { { .tp = a }, { .tp = a, .recv = 1 }, { .tp = b, .recv = 1 } };
    pthread_t t[3];
    int started = 0;
    for (int i = 0; i < 3; i++)
        started += rd_thread_create(&t[i], NULL, blocked_main, &g[i]) == 0;
    CHECK_OR(started == 3, goto out);
    sleep_ms(50);
    for (int i = 0; i < 3; i++)
        CHECK(!atomic_load(&g[i].done));
    double t0 = now_s();
    b->ops->shutdown(b);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_I(g[i].rc, RD_ESTREAM);
        CHECK(g[i].at - t0 < 1.0);
    }
    held->len = 10;
    CHECK_EQ_I(a->ops->send(a, held), RD_ESTREAM);   /* and send takes the frame back */
    CHECK_EQ_I(a->ops->drain(a), RD_OK);
out:
    a->ops->close(a);
    b->ops->close(b);
}

static void t_frame_larger_than_agreed(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(rd_loop_pair(&a, &b) == RD_OK, return);
    CHECK_EQ_I(a->ops->setup_ring(a, RD_DIR_SEND, 65536, 2), RD_OK);
    struct rd_buf *s, *r;
    CHECK_OR(a->ops->get_send_buf(a, &s) == RD_OK, goto out);
    s->len = RD_CTRL_FRAME + 1;        /* b still takes control frames only */
    CHECK_EQ_I(a->ops->send(a, s), RD_OK);
    CHECK_EQ_I(b->ops->recv(b, &r, 1000), RD_ESTREAM);
    CHECK_HAS(rd_error_msg(), "larger than");
    CHECK_EQ_I(b->ops->setup_ring(b, RD_DIR_RECV, 65536, 2), RD_OK);
    CHECK_OR(a->ops->get_send_buf(a, &s) == RD_OK, goto out);
    s->len = 65536;
    CHECK_EQ_I(a->ops->send(a, s), RD_OK);
    CHECK_OR(b->ops->recv(b, &r, 1000) == RD_OK, goto out);
    CHECK_EQ_U(r->len, 65536);
    b->ops->release(b, r);
out:
    a->ops->close(a);
    b->ops->close(b);
}

/* ---- handshake + engines ---- */

struct xfer {
    struct rd_transport *a, *b;   /* a: the sender's end; closed by the case, after the joins */
    struct rd_source src;
    struct rd_sink dst;
    uint32_t lanes;
    int send_rc, recv_rc;
    struct rd_counters send_cnt, recv_cnt;
    atomic_int send_done, recv_done;
};

static void *sender_main(void *arg)
{
    struct xfer *x = arg;
    struct rd_key k;
    struct rd_params want = { .chunk_size = 256 * 1024, .depth = 4 }, agreed = { 0 };
    rd_key_derive(&k, secret, strlen(secret));
    x->send_rc = rd_session_sender(x->a, &k, &want, &agreed);
    rd_key_wipe(&k);
    agreed.lanes = x->lanes;
    if (x->send_rc == RD_OK)
        x->send_rc = rd_engine_send(x->a, &x->src, &agreed, &x->send_cnt);
    atomic_store(&x->send_done, 1);
    return NULL;
}

static void *receiver_main(void *arg)
{
    struct xfer *x = arg;
    struct rd_key k;
    struct rd_params limits = { .chunk_size = 256 * 1024, .depth = 4 }, agreed = { 0 };
    rd_key_derive(&k, secret, strlen(secret));
    x->recv_rc = rd_session_receiver(x->b, &k, &limits, &agreed);
    rd_key_wipe(&k);
    agreed.lanes = x->lanes;
    if (x->recv_rc == RD_OK)
        x->recv_rc = rd_sink_begin(&x->dst);
    if (x->recv_rc == RD_OK)
        x->recv_rc = rd_engine_recv(x->b, &x->dst, &agreed, &x->recv_cnt);
    atomic_store(&x->recv_done, 1);
    return NULL;
}

/* Both ends on their threads; the caller joins them with xfer_join. */
static int xfer_start(struct xfer *x, pthread_t *ts, pthread_t *tr)
{
    x->send_rc = x->recv_rc = -1;
    if (rd_loop_pair(&x->a, &x->b) != RD_OK)
        return -1;
    if (rd_thread_create(tr, NULL, receiver_main, x))
        return -1;
    if (rd_thread_create(ts, NULL, sender_main, x)) {
        x->b->ops->shutdown(x->b);
        pthread_join(*tr, NULL);
        return -1;
    }
    return 0;
}

static void xfer_join(struct xfer *x, pthread_t ts, pthread_t tr)
{
    pthread_join(ts, NULL);
    pthread_join(tr, NULL);
    x->a->ops->close(x->a);
    x->b->ops->close(x->b);
}

/* A 10 MB file, read with pread into the loop's buffers, arrives byte for byte. */
static void stream_file(uint32_t lanes)
{
    char in[256], out[256];
    temp_path(in, sizeof in, "loop-in");
    temp_path(out, sizeof out, "loop-out");
    uint8_t *data = random_bytes(STREAM_BYTES, 13 + lanes);
    CHECK_OR(write_file(in, data, STREAM_BYTES) == 0, goto out);
    struct xfer x = { .lanes = lanes };
    CHECK_OR(rd_source_open(&x.src, in, 0) == RD_OK, goto out);
    CHECK_OR(rd_sink_open(&x.dst, out) == RD_OK, { rd_source_close(&x.src); goto out; });
    pthread_t ts, tr;
    if (xfer_start(&x, &ts, &tr) == 0) {
        xfer_join(&x, ts, tr);
        CHECK_EQ_I(x.send_rc, RD_OK);
        CHECK_EQ_I(x.recv_rc, RD_OK);
        CHECK_EQ_U(atomic_load(&x.recv_cnt.bytes), STREAM_BYTES);
    } else {
        CHECK(!"could not start the transfer");
    }
    rd_source_close(&x.src);
    rd_sink_close(&x.dst);
    size_t n = 0;
    uint8_t *got = read_file(out, &n);
    CHECK_OR(got, goto out);
    CHECK_EQ_U(n, STREAM_BYTES);
    if (n == STREAM_BYTES)
        CHECK_MEM_EQ(got, data, n);
    free(got);
out:
    free(data);
    unlink(in);
    unlink(out);
}

static void t_stream_10mb_one_lane(void)
{
    stream_file(1);
}

static void t_stream_10mb_three_lanes(void)
{
    stream_file(3);
}

/* An endless source and a sink that only counts: the stream ends only by the shutdown. */
static ssize_t endless_read(void *ctx, void *buf, size_t cap)
{
    memset(buf, 0x5a, cap);
    return (ssize_t)cap;
}

static int count_write(void *ctx, const void *buf, size_t n)
{
    return RD_OK;
}

/* shutdown on one end while data flows: both engines fail, promptly, and nothing hangs. */
static void shutdown_mid_stream(int receiver_end)
{
    struct xfer x = { .lanes = 2 };
    rd_source_custom(&x.src, "endless", endless_read, NULL);
    rd_sink_custom(&x.dst, "counter", count_write, NULL, NULL);
    pthread_t ts, tr;
    CHECK_OR(xfer_start(&x, &ts, &tr) == 0, return);
    double t0 = now_s();
    while (atomic_load(&x.recv_cnt.bytes) < 4u << 20 && now_s() - t0 < 20 && !atomic_load(&x.recv_done))
        sleep_ms(1);
    CHECK(atomic_load(&x.recv_cnt.bytes) >= 4u << 20);
    CHECK(!atomic_load(&x.send_done));
    CHECK(!atomic_load(&x.recv_done));
    double t1 = now_s();
    struct rd_transport *victim = receiver_end ? x.b : x.a;
    victim->ops->shutdown(victim);
    while ((!atomic_load(&x.send_done) || !atomic_load(&x.recv_done)) && now_s() - t1 < 10)
        sleep_ms(1);
    CHECK(now_s() - t1 < 5);   /* "promptly": the receiver alone waits up to 2 s for its writer */
    xfer_join(&x, ts, tr);
    CHECK_EQ_I(x.send_rc, RD_ESTREAM);
    CHECK_EQ_I(x.recv_rc, RD_ESTREAM);
}

static void t_shutdown_receiver_end_mid_stream(void)
{
    shutdown_mid_stream(1);
}

static void t_shutdown_sender_end_mid_stream(void)
{
    shutdown_mid_stream(0);
}

/* ---- one stream, claimed (rd_receiver_arg.claim): rdrecv, rdbench --server ---- */

struct busy {
    struct rd_transport *a, *b;
    atomic_int claim;
    int wait_ms;
    int send_rc, recv_rc;
    char send_msg[512];
};

/* Plain threads: each end's error is its own (rd_thread_create would share the case's). */
static void *busy_sender(void *arg)
{
    struct busy *x = arg;
    struct rd_key k;
    struct rd_params want = { .chunk_size = 64 * 1024, .depth = 2 }, agreed = { 0 };
    rd_key_derive(&k, secret, strlen(secret));
    x->send_rc = rd_session_sender(x->a, &k, &want, &agreed);
    rd_key_wipe(&k);
    rd_error_copy(x->send_msg, sizeof x->send_msg);
    return NULL;
}

static void *busy_receiver(void *arg)
{
    struct busy *x = arg;
    struct rd_key k;
    rd_key_derive(&k, secret, strlen(secret));
    struct rd_receiver_arg ha = { .key = &k, .limits = { .chunk_size = 64 * 1024, .depth = 2 },
                                  .claim = &x->claim, .busy = "busy with a test of its own",
                                  .claim_wait_ms = x->wait_ms };
    struct rd_params agreed = { 0 };
    x->recv_rc = rd_session_receiver_arg(x->b, &ha, &agreed);
    rd_key_wipe(&k);
    return NULL;
}

/* The claim held, then given back after give_back_ms (< 0: never); the sender's result. */
static void busy_run(struct busy *x, long give_back_ms)
{
    x->send_rc = x->recv_rc = -1;
    atomic_init(&x->claim, 1);
    CHECK_OR(rd_loop_pair(&x->a, &x->b) == RD_OK, return);
    pthread_t ts, tr;
    CHECK_OR(pthread_create(&tr, NULL, busy_receiver, x) == 0, return);
    CHECK_OR(pthread_create(&ts, NULL, busy_sender, x) == 0, return);
    if (give_back_ms >= 0) {
        sleep_ms(give_back_ms);
        atomic_store(&x->claim, 0);
    }
    pthread_join(ts, NULL);
    pthread_join(tr, NULL);
}

/* Taken, and not given back within claim_wait_ms: the sender proved the key and is told the
 * receiver's busy text (RD_ECONNECT: exit 2 there), and the receiver marks it as proved, so
 * rd_waiting does not count it against its address */
static void t_claimed_stream_turns_the_sender_away(void)
{
    struct busy x = { .wait_ms = 200 };
    double t0 = now_s();
    busy_run(&x, -1);
    double took = now_s() - t0;
    CHECK_EQ_I(x.recv_rc, RD_ECONNECT);
    CHECK_EQ_I(x.send_rc, RD_ECONNECT);
    CHECK_HAS(x.send_msg, "busy with a test of its own");
    CHECK(x.b && x.b->proved);
    CHECK(took >= 0.19 && took < 10);
    CHECK_EQ_I(atomic_load(&x.claim), 1);
    if (x.a) {
        x.a->ops->close(x.a);
        x.b->ops->close(x.b);
    }
}

/* Given back within the wait (rdbench --server between two connections of one client): the
 * sender is served, and the stream is its */
static void t_claim_given_back_in_time_serves_the_sender(void)
{
    struct busy x = { .wait_ms = 5000 };
    busy_run(&x, 100);
    CHECK_EQ_I(x.recv_rc, RD_OK);
    CHECK_EQ_I(x.send_rc, RD_OK);
    CHECK_EQ_I(atomic_load(&x.claim), 1);
    if (x.a) {
        x.a->ops->close(x.a);
        x.b->ops->close(x.b);
    }
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    check_watchdog(CASE_TIMEOUT_S);
    rd_set_progname("test_loop");
    check_before_each = before_each;
    RUN(t_hands_over_the_buffer);
    RUN(t_flow_control);
    RUN(t_peer_shutdown_after_send);
    RUN(t_shutdown_wakes_both_ends);
    RUN(t_frame_larger_than_agreed);
    RUN(t_stream_10mb_one_lane);
    RUN(t_stream_10mb_three_lanes);
    RUN(t_shutdown_receiver_end_mid_stream);
    RUN(t_shutdown_sender_end_mid_stream);
    RUN(t_claimed_stream_turns_the_sender_away);
    RUN(t_claim_given_back_in_time_serves_the_sender);
    return check_summary();
}
