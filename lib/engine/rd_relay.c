/* rd_relay.c - what a `cat` segment of rdpipe runs (rdpipe h1:'<f' h2:cat h3:'>f' on h2).
 *
 * Frames go downstream byte for byte, so the origin's tags and whole-stream hash travel end to
 * end and the last receiver verifies them; the relay checks headers, order and the END
 * totals, not payloads, and holds no key that could forge them. The sink's CONFIRM comes
 * back the same way, tag and all. Each hop's own frames (ABORT) carry that hop's tag. Between
 * two TCP connections a payload is spliced from socket to socket and never enters user space;
 * otherwise it leaves from the buffer it landed in (send_ref: TCP, and RDMA between two queue
 * pairs), or is copied into a registered send buffer where the transport cannot. Upstream gets
 * CONFIRM only after the downstream receiver confirmed, so the origin's exit 0 still means
 * "written at the end of the pipeline". A failure on either side sends ABORT, with the
 * reason, to both.
 */
#include "engine/rd_relay.h"

#include "util/rd_clock.h"
#include "util/rd_error.h"
#include "util/rd_interrupt.h"
#include "util/rd_thread.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum side { SIDE_UP, SIDE_DOWN };

struct relay {
    struct rd_transport *up, *down;
    const struct rd_params *p;
    struct rd_counters *cnt;
    struct rd_end end;          /* what upstream announced (and we forwarded) */
    _Atomic uint64_t seq, total;   /* DATA frames and bytes passed on (stripes: by several threads) */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int answered;               /* the downstream monitor is done */
    int confirmed;
    struct rd_end confirm;
    uint8_t confirm_frame[RD_FRAME_HDR + RD_END_LEN];   /* passed upstream as it came */
    int down_said;              /* downstream sent ABORT/REJECT with this reason */
    struct rd_reason down_reason;
    struct rd_errctx *errctx;   /* the relay's, for the signal watcher's rd_fail */
    atomic_int interrupted;     /* the signal that stopped us (rd_interrupt), 0 if none */
};

/* Downstream's answer: CONFIRM, or an ABORT with a reason, or its death. Anything but
 * CONFIRM is passed upstream at once and stops both connections. */
static void *monitor_main(void *arg)
{
    struct relay *r = arg;
    struct rd_buf *b;
    struct rd_frame f;
    int ok = 0;
    rd_thread_name("rd-relay-mon");
    if (rd_recv_ctrl_quiet(r->down, -1, &b, &f) == RD_OK) {   /* the main thread sends on down */
        if (f.type == RD_CONFIRM && rd_end_decode(f.payload, f.length, &r->confirm) == RD_P_OK) {
            memcpy(r->confirm_frame, b->data, sizeof r->confirm_frame);
            ok = 1;
        } else if (f.type == RD_ABORT || f.type == RD_REJECT) {
            r->down_said = rd_reason_decode(f.payload, f.length, &r->down_reason) == RD_P_OK;
            rd_fail_from_reason(&f, "downstream");
        } else if (f.type == RD_CONFIRM) {
            rd_fail(RD_ESTREAM, "downstream %s sent a malformed CONFIRM", r->down->peer);
        } else {
            rd_fail(RD_ESTREAM, "protocol error: downstream %s sent %s during the stream",
                    r->down->peer, rd_frame_type_name(f.type));
        }
        r->down->ops->release(r->down, b);
    }
    if (!ok) {
        char text[300];
        if (r->down_said)
            snprintf(text, sizeof text, "downstream: %s", r->down_reason.text);
        else
            snprintf(text, sizeof text, "%s", rd_error_msg());
        rd_send_reason(r->up, RD_ABORT, RD_ESTREAM, text);
        r->up->ops->shutdown(r->up);
        r->down->ops->shutdown(r->down);
    }
    pthread_mutex_lock(&r->lock);
    r->answered = 1;
    r->confirmed = ok;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* Wait for the monitor, at most timeout_s seconds (-1 = until it answers). */
static int wait_answer(struct relay *r, int timeout_s)
{
    struct timespec ts;
    rd_deadline_ns(&ts, timeout_s * 1000000000LL);
    pthread_mutex_lock(&r->lock);
    while (!r->answered && !atomic_load(&r->interrupted))
        if (timeout_s < 0)
            pthread_cond_wait(&r->cond, &r->lock);
        else if (rd_cond_wait_until(&r->cond, &r->lock, &ts))
            break;
    int answered = r->answered;
    pthread_mutex_unlock(&r->lock);
    return answered;
}

/* SIGINT, SIGTERM, SIGHUP (rd_interrupt): upstream's frames stop coming in, so the main thread
 * fails where it is and sends the ABORT that names the signal both ways, the same path as any
 * failure (the error is recorded first, so it is the reason given); a wait for downstream's
 * answer ends too. A relay that is sending into a stalled downstream cannot stop, and dies
 * when the grace ends. */
static int interrupt_relay(void *ctx, int signo)
{
    struct relay *r = ctx;
    if (!r->up->ops->shut_recv)
        return 0;
    if (!atomic_exchange(&r->interrupted, signo))
        rd_interrupt_record(r->errctx, signo);
    r->up->ops->shut_recv(r->up);
    pthread_mutex_lock(&r->lock);
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    return 1;
}

/* Check one header from upstream: its type, size, and order (DATA and END: frame number seq). */
static int check_head(struct relay *r, const uint8_t *head, size_t frame_len, uint64_t seq, struct rd_frame *f)
{
    /* TCP delivers frames shorter than a header too: their "header" would be stale bytes */
    int pe = frame_len < RD_FRAME_HDR ? RD_P_SHORT : rd_frame_parse_head(head, r->p->chunk_size, f);
    if (pe == RD_P_OK && RD_FRAME_HDR + (size_t)f->length != frame_len)
        pe = RD_P_LENGTH;
    if (pe == RD_P_OK && f->type != RD_DATA && f->type != RD_END && f->type != RD_ABORT)
        pe = RD_P_TYPE;
    if (pe == RD_P_OK && f->type != RD_DATA && f->length > RD_CTRL_FRAME - RD_FRAME_HDR)
        pe = RD_P_LENGTH;
    if (pe == RD_P_OK && (f->type == RD_DATA || f->type == RD_END) && f->seq != seq)
        pe = RD_P_SEQUENCE;
    if (pe != RD_P_OK)
        return rd_fail(RD_ESTREAM, "protocol error from sender %s: %s", r->up->peer, rd_proto_strerror(pe));
    return RD_OK;
}

/* A control frame (END or ABORT) whose header is head and payload is in memory: verify it
 * and act on it. Returns RD_OK for END (forwarded: now wait for downstream), or the ABORT's
 * error. */
static int take_ctrl(struct relay *r, const uint8_t *head, struct rd_frame *f)
{
    if (f->type == RD_ABORT) {
        /* the upstream hop's own frame: its tag under that hop's key. Not passed on: the
         * relay's own ABORT, tagged for the next hop, carries the reason down */
        if (rd_check_hop(r->up, head, f) != RD_P_OK)
            return rd_fail(RD_ESTREAM, "stream corrupt: sender %s sent an ABORT that fails its authentication tag",
                           r->up->peer);
        return rd_fail_from_reason(f, "sender");
    }
    if (rd_end_decode(f->payload, f->length, &r->end) != RD_P_OK)
        return rd_fail(RD_ESTREAM, "malformed END from sender %s", r->up->peer);
    uint64_t total = atomic_load(&r->total), seq = atomic_load(&r->seq);
    if (r->end.total_bytes != total || r->end.frames != seq)
        return rd_fail(RD_ESTREAM, "stream incomplete: sender sent %llu bytes in %llu frames, %llu bytes in %llu frames arrived",
                       (unsigned long long)r->end.total_bytes, (unsigned long long)r->end.frames,
                       (unsigned long long)total, (unsigned long long)seq);
    return RD_OK;
}

/* A DATA frame went on: raw bytes once decompressed (what END totals), wire bytes as sent */
static void count(struct relay *r, uint32_t raw, uint32_t wire)
{
    atomic_fetch_add(&r->seq, 1);
    atomic_fetch_add(&r->total, raw);
    atomic_fetch_add(&r->cnt->bytes, raw);
    atomic_fetch_add(&r->cnt->wire_bytes, wire);
    atomic_fetch_add(&r->cnt->frames, 1);
}

/* The relay's side of ops->forward: the transport moves the frames, these decide. */
static int fw_check(void *ctx, const uint8_t *head, size_t frame_len, uint64_t seq, int *is_data,
                    uint32_t *raw_len)
{
    struct rd_frame f;
    int rc = check_head(ctx, head, frame_len, seq, &f);
    *is_data = !rc && f.type == RD_DATA;
    *raw_len = *is_data ? f.raw_length : 0;
    return rc;
}

static void fw_passed(void *ctx, size_t frame_len, uint32_t raw_len)
{
    count(ctx, raw_len, (uint32_t)(frame_len - RD_FRAME_HDR));
}

static int fw_ctrl(void *ctx, const uint8_t *frame, size_t frame_len)
{
    struct relay *r = ctx;
    struct rd_frame f;
    int rc = check_head(r, frame, frame_len, atomic_load(&r->seq), &f);   /* checked before: parse it again */
    if (rc)
        return rc;
    f.payload = frame + RD_FRAME_HDR;
    return take_ctrl(r, frame, &f);
}

/* Same transport on both sides and it can forward by itself (TCP: splice; stripes: each
 * connection spliced to its pair). *declined: it could not, and nothing was read. */
static int relay_forwarded(struct relay *r, enum side *side, int *declined)
{
    struct rd_forward fw = { .ctx = r, .check = fw_check, .passed = fw_passed, .ctrl = fw_ctrl };
    int rc = r->up->ops->forward(r->up, r->down, &fw);
    *side = fw.down_failed ? SIDE_DOWN : SIDE_UP;
    *declined = fw.declined;
    return rc;
}

/* Any transports: forward each frame from the buffer it arrived in. */
static int relay_buffers(struct relay *r, enum side *side)
{
    struct rd_transport *up = r->up, *down = r->down;
    for (;;) {
        struct rd_buf *b, *o;
        struct rd_frame f;
        *side = SIDE_UP;
        int rc = up->ops->recv(up, &b, -1);
        if (rc)
            return rc;
        rc = check_head(r, b->data, b->len, atomic_load(&r->seq), &f);
        if (rc) {
            up->ops->release(up, b);
            return rc;
        }
        f.payload = b->data + RD_FRAME_HDR;
        if (f.type != RD_DATA) {
            /* judged before it goes on: an ABORT does not */
            rc = take_ctrl(r, b->data, &f);
            if (rc) {
                up->ops->release(up, b);
                return rc;
            }
        }
        *side = SIDE_DOWN;
        rc = down->ops->get_send_buf(down, &o);
        if (!rc && down->ops->send_ref) {   /* b goes with it, back to up once sent */
            rd_ref_frame(o, up, b, f.length);
            rc = down->ops->send_ref(down, o);
        } else {
            if (!rc) {
                memcpy(o->data, b->data, b->len);
                o->len = b->len;
                rc = down->ops->send(down, o);
            }
            up->ops->release(up, b);
        }
        if (rc || f.type != RD_DATA)
            return rc;
        count(r, f.raw_length, f.length);
    }
}

int rd_relay(struct rd_transport *up, struct rd_transport *down, const struct rd_params *p,
             struct rd_counters *cnt)
{
    struct relay r = { .up = up, .down = down, .p = p, .cnt = cnt, .errctx = rd_errctx_current() };
    struct rd_interrupt_hook before_us;
    pthread_t monitor;
    enum side side = SIDE_UP;
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    int rc = RD_OK;
    if (rd_thread_create(&monitor, NULL, monitor_main, &r)) {
        rc = rd_fail(RD_EIO, "cannot start the monitor thread");
        goto destroy_sync;
    }
    rd_interrupt_set(interrupt_relay, &r, &before_us);
    int declined = 1;
    if (up->ops->forward && up->ops == down->ops)
        rc = relay_forwarded(&r, &side, &declined);
    if (declined)
        rc = relay_buffers(&r, &side);
    if (!rc && down->ops->drain(down))
        rd_error_clear();   /* END is posted but its send did not complete: the sink's disconnect
                             * after its CONFIRM can overtake the acknowledgement (6.12's rxe),
                             * so CONFIRM decides, as in rd_engine_send */
    if (!rc) {
        /* END is on its way: the answer decides */
        wait_answer(&r, -1);
        int signo = atomic_load(&r.interrupted);
        if (!r.confirmed) {
            rc = rd_error_code();
            if (!rc && signo)   /* recorded, then cleared above with the drain's error */
                rc = rd_fail(RD_ESTREAM, "interrupted by %s", rd_interrupt_name(signo));
            if (!rc)
                rc = rd_fail(RD_ESTREAM, "no confirmation from downstream");
        } else if (r.confirm.total_bytes != r.end.total_bytes || r.confirm.frames != r.end.frames ||
                 r.confirm.stream_hash != r.end.stream_hash)
            rc = rd_fail(RD_ESTREAM, "downstream %s confirmed another stream than the one relayed", down->peer);
        if (!rc) {
            rc = rd_send_raw(up, r.confirm_frame, sizeof r.confirm_frame);
            if (!rc && up->ops->drain(up))
                rd_error_clear();   /* CONFIRM is sent; its arrival is the origin's to judge
                                     * (as in rd_engine_recv's finish) */
        }
    } else if (side == SIDE_DOWN && wait_answer(&r, 1) && r.down_said) {
        /* a send failed because downstream hung up: its reason beats "broken pipe" */
        rc = rd_fail_instead(RD_ESTREAM, "downstream: %s", r.down_reason.text);
    }
    if (rc) {
        char text[300];
        snprintf(text, sizeof text, "%s", rd_error_msg());
        rd_send_reason(down, RD_ABORT, rd_error_code(), text);
        /* a striped downstream queues the ABORT for a connection's thread: let it leave
         * before the shutdown below, or the sink never learns why (as rd_engine_send does) */
        down->ops->drain(down);
        rd_send_reason(up, RD_ABORT, rd_error_code(), text);
    }
    up->ops->shutdown(up);
    down->ops->shutdown(down);
    pthread_join(monitor, NULL);
    rd_interrupt_restore(&before_us);
destroy_sync:
    pthread_cond_destroy(&r.cond);
    pthread_mutex_destroy(&r.lock);
    return rc ? rd_error_or(rc) : RD_OK;
}
