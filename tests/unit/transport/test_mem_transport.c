/* test_mem_transport.c - the in-memory test transport itself: ordering, bounded queues,
 * timeouts, shutdown waking blocked calls, and each injected fault. The engine tests rely
 * on all of this, so it is pinned down here first. */
#include "check.h"
#include "mem_transport.h"

#include "util/rd_error.h"
#include "wire/rd_proto.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

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

/* Send a frame whose bytes are all `tag`, `len` long. */
static int send_tagged(struct rd_transport *tp, uint8_t tag, size_t len)
{
    struct rd_buf *b;
    int rc = tp->ops->get_send_buf(tp, &b);
    if (rc)
        return rc;
    memset(b->data, tag, len);
    b->len = len;
    return tp->ops->send(tp, b);
}

/* Receive one frame; its first byte (or -1 on error, -2 if the frame is not uniform). */
static int recv_tag(struct rd_transport *tp, size_t *len, int timeout_ms)
{
    struct rd_buf *b;
    if (tp->ops->recv(tp, &b, timeout_ms))
        return -1;
    int tag = b->len ? b->data[0] : 0;
    for (size_t i = 1; i < b->len; i++)
        if (b->data[i] != tag)
            tag = -2;
    if (len)
        *len = b->len;
    tp->ops->release(tp, b);
    return tag;
}

static void t_in_order_both_ways(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    CHECK_STR_EQ(a->peer, "mem:b");
    CHECK_STR_EQ(b->peer, "mem:a");
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < MEM_CTRL_FRAMES; i++)
            CHECK_EQ_I(send_tagged(a, (uint8_t)(10 * round + i), 100 + (size_t)i), RD_OK);
        CHECK_EQ_I(send_tagged(b, (uint8_t)round, RD_CTRL_FRAME), RD_OK);
        for (int i = 0; i < MEM_CTRL_FRAMES; i++) {
            size_t len = 0;
            CHECK_EQ_I(recv_tag(b, &len, 0), 10 * round + i);
            CHECK_EQ_U(len, 100 + (size_t)i);
        }
        size_t len = 0;
        CHECK_EQ_I(recv_tag(a, &len, 0), round);
        CHECK_EQ_U(len, RD_CTRL_FRAME);
    }
    CHECK_EQ_U(mem_frames_sent(a), 10 * MEM_CTRL_FRAMES);
    CHECK_EQ_U(mem_frames_received(b), 10 * MEM_CTRL_FRAMES);
    CHECK_EQ_U(mem_frames_sent(b), 10);
    a->ops->close(a);
    b->ops->close(b);
}

static void t_recv_timeout(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    struct rd_buf *x;
    double t0 = now_s();
    CHECK_EQ_I(b->ops->recv(b, &x, 150), RD_ECONNECT);
    double dt = now_s() - t0;
    CHECK(dt >= 0.14 && dt < 5.0);
    CHECK_EQ_I(b->ops->recv(b, &x, 0), RD_ECONNECT);
    a->ops->close(a);
    b->ops->close(b);
}

/* ---- blocking calls and what wakes them ---- */

struct blocked {
    struct rd_transport *tp;
    int op;          /* 0 recv, 1 send, 2 get_send_buf */
    int rc;
    int done;
    pthread_mutex_t lock;
};

static void *blocked_main(void *arg)
{
    struct blocked *bl = arg;
    struct rd_buf *x;
    int rc;
    if (bl->op == 0) {
        rc = bl->tp->ops->recv(bl->tp, &x, -1);
        if (rc == RD_OK)
            bl->tp->ops->release(bl->tp, x);
    } else if (bl->op == 1) {
        rc = send_tagged(bl->tp, 0x77, 10);
    } else {
        rc = bl->tp->ops->get_send_buf(bl->tp, &x);
    }
    pthread_mutex_lock(&bl->lock);
    bl->rc = rc;
    bl->done = 1;
    pthread_mutex_unlock(&bl->lock);
    return NULL;
}

static int is_done(struct blocked *bl)
{
    pthread_mutex_lock(&bl->lock);
    int d = bl->done;
    pthread_mutex_unlock(&bl->lock);
    return d;
}

/* Start op on tp in a thread, check it stays blocked, run wake(waker), check it returned. */
static void blocked_case(struct rd_transport *tp, int op, void (*wake)(struct rd_transport *),
                         struct rd_transport *waker, int want_rc, int line)
{
    struct blocked bl = { .tp = tp, .op = op, .rc = -1 };
    pthread_mutex_init(&bl.lock, NULL);
    pthread_t t;
    rd_thread_create(&t, NULL, blocked_main, &bl);
    sleep_ms(100);
    if (is_done(&bl))
        check_fail_at(__FILE__, line, "op %d returned %d without waiting", op, bl.rc);
    wake(waker);
    for (int i = 0; i < 500 && !is_done(&bl); i++)
        sleep_ms(10);
    if (!is_done(&bl)) {
        /* the thread still uses bl on this stack: report and stop the whole binary */
        printf("FAIL %s: %s:%d: op %d still blocked 5 s after the wake-up\n", check_case_name,
               __FILE__, line, op);
        fflush(stdout);
        _exit(1);
    }
    pthread_join(t, NULL);
    if (bl.rc != want_rc)
        check_fail_at(__FILE__, line, "op %d returned %d, expected %d", op, bl.rc, want_rc);
    pthread_mutex_destroy(&bl.lock);
}

static void do_shutdown(struct rd_transport *tp) { tp->ops->shutdown(tp); }
static void do_kill(struct rd_transport *tp) { mem_kill(tp); }
static void do_send(struct rd_transport *tp) { send_tagged(tp, 1, 10); }

static void t_shutdown_wakes_own_recv(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    blocked_case(b, 0, do_shutdown, b, RD_ESTREAM, __LINE__);
    CHECK_HAS(rd_error_msg(), "aborted");
    a->ops->close(a);
    b->ops->close(b);
}

static void t_peer_shutdown_wakes_recv(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    blocked_case(b, 0, do_shutdown, a, RD_ESTREAM, __LINE__);
    CHECK_HAS(rd_error_msg(), "closed by peer");
    a->ops->close(a);
    b->ops->close(b);
}

static void t_send_arrival_wakes_recv(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    blocked_case(b, 0, do_send, a, RD_OK, __LINE__);
    a->ops->close(a);
    b->ops->close(b);
}

/* Flow control: with every receive buffer of the peer taken, send blocks. */
static void t_send_blocks_until_peer_releases(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    for (int i = 0; i < MEM_CTRL_FRAMES; i++)
        CHECK_EQ_I(send_tagged(a, (uint8_t)i, 10), RD_OK);
    struct blocked bl = { .tp = a, .op = 1, .rc = -1 };
    pthread_mutex_init(&bl.lock, NULL);
    pthread_t t;
    rd_thread_create(&t, NULL, blocked_main, &bl);
    sleep_ms(100);
    CHECK(!is_done(&bl));
    CHECK_EQ_I(recv_tag(b, NULL, 0), 0);   /* frees one buffer */
    pthread_join(t, NULL);
    CHECK_EQ_I(bl.rc, RD_OK);
    for (int i = 1; i < MEM_CTRL_FRAMES; i++)
        CHECK_EQ_I(recv_tag(b, NULL, 0), i);
    CHECK_EQ_I(recv_tag(b, NULL, 0), 0x77);
    pthread_mutex_destroy(&bl.lock);
    a->ops->close(a);
    b->ops->close(b);
}

static void fill_peer(struct rd_transport *a)
{
    for (int i = 0; i < MEM_CTRL_FRAMES; i++)
        send_tagged(a, (uint8_t)i, 10);
}

static void t_shutdown_wakes_blocked_send(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    fill_peer(a);
    blocked_case(a, 1, do_shutdown, a, RD_ESTREAM, __LINE__);
    a->ops->close(a);
    b->ops->close(b);
}

static void t_peer_shutdown_wakes_blocked_send(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    fill_peer(a);
    blocked_case(a, 1, do_shutdown, b, RD_ESTREAM, __LINE__);
    a->ops->close(a);
    b->ops->close(b);
}

static void t_kill_wakes_blocked_send(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    fill_peer(a);
    blocked_case(a, 1, do_kill, b, RD_ESTREAM, __LINE__);
    CHECK_HAS(rd_error_msg(), "killed");
    a->ops->close(a);
    b->ops->close(b);
}

static void t_shutdown_wakes_get_send_buf(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    struct rd_buf *held[MEM_CTRL_FRAMES];
    for (int i = 0; i < MEM_CTRL_FRAMES; i++)
        CHECK_EQ_I(a->ops->get_send_buf(a, &held[i]), RD_OK);
    blocked_case(a, 2, do_shutdown, a, RD_ESTREAM, __LINE__);
    a->ops->close(a);   /* the borrowed buffers go with the pool */
    b->ops->close(b);
}

/* After the peer closed, what it sent before still arrives, then the end. */
static void t_close_delivers_queued_then_fails(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    CHECK_EQ_I(send_tagged(a, 5, 20), RD_OK);
    CHECK_EQ_I(send_tagged(a, 6, 20), RD_OK);
    a->ops->close(a);
    CHECK_EQ_I(recv_tag(b, NULL, -1), 5);
    CHECK_EQ_I(recv_tag(b, NULL, -1), 6);
    rd_error_clear();
    CHECK_EQ_I(recv_tag(b, NULL, -1), -1);
    CHECK_EQ_I(rd_error_code(), RD_ESTREAM);
    CHECK_EQ_I(send_tagged(b, 1, 10), RD_ESTREAM);
    b->ops->close(b);
}

/* ---- rings ---- */

static void t_setup_ring_sizes(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    CHECK_EQ_I(a->ops->setup_ring(a, RD_DIR_SEND, 65536 + RD_FRAME_HDR, 3), RD_OK);
    CHECK_EQ_I(b->ops->setup_ring(b, RD_DIR_RECV, 65536 + RD_FRAME_HDR, 3), RD_OK);
    struct rd_buf *x[3];
    for (int i = 0; i < 3; i++) {
        CHECK_OR(a->ops->get_send_buf(a, &x[i]) == RD_OK, goto out);
        CHECK(x[i]->cap >= 65536 + RD_FRAME_HDR);
        CHECK(((uintptr_t)(x[i]->data + RD_FRAME_HDR) & (RD_BUF_ALIGN - 1)) == 0);   /* payload page aligned */
    }
    for (int i = 0; i < 3; i++) {
        memset(x[i]->data, 'a' + i, 65536 + RD_FRAME_HDR);
        x[i]->len = 65536 + RD_FRAME_HDR;
        CHECK_EQ_I(a->ops->send(a, x[i]), RD_OK);
    }
    for (int i = 0; i < 3; i++) {
        size_t len = 0;
        CHECK_EQ_I(recv_tag(b, &len, 0), 'a' + i);
        CHECK_EQ_U(len, 65536 + RD_FRAME_HDR);
    }
    /* the control direction (b -> a) keeps its small frames */
    CHECK_EQ_I(send_tagged(b, 9, RD_CTRL_FRAME), RD_OK);
    CHECK_EQ_I(recv_tag(a, NULL, 0), 9);
out:
    a->ops->close(a);
    b->ops->close(b);
}

static void t_oversized_frame_fails_recv(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    CHECK_EQ_I(a->ops->setup_ring(a, RD_DIR_SEND, 3 * RD_CTRL_FRAME, 2), RD_OK);
    CHECK_EQ_I(send_tagged(a, 1, 2 * RD_CTRL_FRAME), RD_OK);   /* peer still has control frames */
    CHECK_EQ_I(send_tagged(a, 2, 100), RD_OK);
    rd_error_clear();
    CHECK_EQ_I(recv_tag(b, NULL, 0), -1);
    CHECK_HAS(rd_error_msg(), "larger than");
    CHECK_EQ_I(recv_tag(b, NULL, 0), 2);   /* the link itself carries on */
    a->ops->close(a);
    b->ops->close(b);
}

/* ---- faults ---- */

static void t_fault_corrupt(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    struct mem_faults f;
    mem_faults_none(&f);
    f.corrupt_frame = 1;
    f.corrupt_offset = 7;
    f.corrupt_xor = 0x0f;
    mem_set_faults(a, &f);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_I(send_tagged(a, 0x30, 16), RD_OK);
    for (int i = 0; i < 3; i++) {
        struct rd_buf *x;
        CHECK_OR(b->ops->recv(b, &x, 0) == RD_OK, break);
        for (size_t j = 0; j < 16; j++) {
            uint8_t want = (i == 1 && j == 7) ? 0x3f : 0x30;
            if (x->data[j] != want)
                check_fail_at(__FILE__, __LINE__, "frame %d byte %zu = 0x%02x, expected 0x%02x", i, j,
                              x->data[j], want);
        }
        b->ops->release(b, x);
    }
    a->ops->close(a);
    b->ops->close(b);
}

/* Send tags 0..n-1 from a with faults f; return the tags b receives as a string of digits. */
static void fault_sequence(const struct mem_faults *f, int n, char *out, size_t outn)
{
    struct rd_transport *a, *b;
    out[0] = '\0';
    if (mem_pair(&a, &b) != RD_OK)
        return;
    mem_set_faults(a, f);
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        int rc = send_tagged(a, (uint8_t)('0' + i), 8);
        if (rc)
            out[k++] = 'x';   /* this send failed */
        int tag;
        while ((tag = recv_tag(b, NULL, 0)) >= 0 && k < outn - 2)
            out[k++] = (char)tag;
    }
    a->ops->close(a);
    int tag;
    while ((tag = recv_tag(b, NULL, 0)) >= 0 && k < outn - 2)
        out[k++] = (char)tag;
    out[k] = '\0';
    b->ops->close(b);
}

static void t_fault_drop_dup_reorder_kill(void)
{
    struct mem_faults f;
    char got[32];
    mem_faults_none(&f);
    fault_sequence(&f, 5, got, sizeof got);
    CHECK_STR_EQ(got, "01234");
    mem_faults_none(&f);
    f.drop_frame = 2;
    fault_sequence(&f, 5, got, sizeof got);
    CHECK_STR_EQ(got, "0134");
    mem_faults_none(&f);
    f.dup_frame = 0;
    fault_sequence(&f, 5, got, sizeof got);
    CHECK_STR_EQ(got, "001234");
    mem_faults_none(&f);
    f.reorder_frame = 1;
    fault_sequence(&f, 5, got, sizeof got);
    CHECK_STR_EQ(got, "02134");
    mem_faults_none(&f);
    f.kill_after = 3;
    fault_sequence(&f, 5, got, sizeof got);
    CHECK_STR_EQ(got, "012xx");
}

static void t_kill_seen_by_both_ends(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    struct mem_faults f;
    mem_faults_none(&f);
    f.kill_after = 1;
    mem_set_faults(a, &f);
    CHECK_EQ_I(send_tagged(a, 1, 8), RD_OK);
    CHECK_EQ_I(send_tagged(a, 2, 8), RD_ESTREAM);
    CHECK_EQ_I(recv_tag(b, NULL, -1), 1);
    CHECK_EQ_I(recv_tag(b, NULL, -1), -1);   /* -1 = forever, but the link is dead */
    CHECK_EQ_I(recv_tag(a, NULL, -1), -1);
    CHECK_EQ_I(send_tagged(b, 3, 8), RD_ESTREAM);
    CHECK_EQ_U(mem_frames_sent(a), 1);
    a->ops->close(a);
    b->ops->close(b);
}

/* Two threads send on one end at once (the engine does: data and ABORT): nothing is lost
 * and each thread's frames stay in its order. */
struct pounder {
    struct rd_transport *tp;
    uint8_t base;
    int n, fails;
};

static void *pounder_main(void *arg)
{
    struct pounder *p = arg;
    for (int i = 0; i < p->n; i++) {
        struct rd_buf *x;
        if (p->tp->ops->get_send_buf(p->tp, &x)) {
            p->fails++;
            continue;
        }
        x->data[0] = p->base;
        x->data[1] = (uint8_t)i;
        x->len = 2;
        if (p->tp->ops->send(p->tp, x))
            p->fails++;
    }
    return NULL;
}

static void t_concurrent_senders(void)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    struct pounder p1 = { a, 1, 200, 0 }, p2 = { a, 2, 200, 0 };
    pthread_t t1, t2;
    rd_thread_create(&t1, NULL, pounder_main, &p1);
    rd_thread_create(&t2, NULL, pounder_main, &p2);
    int next[3] = { 0, 0, 0 }, bad = 0;
    for (int i = 0; i < 400; i++) {
        struct rd_buf *x;
        if (b->ops->recv(b, &x, 5000)) {
            bad++;
            break;
        }
        int who = x->data[0];
        if ((who != 1 && who != 2) || x->data[1] != (uint8_t)next[who])
            bad++;
        else
            next[who]++;
        b->ops->release(b, x);
    }
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CHECK_EQ_I(bad, 0);
    CHECK_EQ_I(next[1], 200);
    CHECK_EQ_I(next[2], 200);
    CHECK_EQ_I(p1.fails + p2.fails, 0);
    a->ops->close(a);
    b->ops->close(b);
}

static void before_each(void)
{
    rd_error_clear();
}

int main(void)
{
    check_watchdog(30);
    check_before_each = before_each;
    RUN(t_in_order_both_ways);
    RUN(t_recv_timeout);
    RUN(t_shutdown_wakes_own_recv);
    RUN(t_peer_shutdown_wakes_recv);
    RUN(t_send_arrival_wakes_recv);
    RUN(t_send_blocks_until_peer_releases);
    RUN(t_shutdown_wakes_blocked_send);
    RUN(t_peer_shutdown_wakes_blocked_send);
    RUN(t_kill_wakes_blocked_send);
    RUN(t_shutdown_wakes_get_send_buf);
    RUN(t_close_delivers_queued_then_fails);
    RUN(t_setup_ring_sizes);
    RUN(t_oversized_frame_fails_recv);
    RUN(t_fault_corrupt);
    RUN(t_fault_drop_dup_reorder_kill);
    RUN(t_kill_seen_by_both_ends);
    RUN(t_concurrent_senders);
    return check_summary();
}
