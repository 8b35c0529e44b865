#include "engine/rd_engine.h"

#include "util/rd_error.h"
#include "util/rd_queue.h"
#include "util/rd_wake.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct send_ctx {
    struct rd_transport *tp;
    struct rd_source *src;
    const struct rd_params *p;
    struct rd_counters *cnt;
    struct rd_queue ready;   /* sealed frames, in stream order, waiting to be posted */
    struct rd_end end;       /* what END announced (written by the reader before it queues END) */
    struct rd_end confirm;   /* what CONFIRM said (written by the monitor) */
    int confirmed;
    struct rd_reason peer_reason;   /* the receiver's ABORT/REJECT, if it sent one */
    int peer_said;
    atomic_int stop;         /* the transfer failed: the reader's input may give up */
};

/* Read the next chunk. A stuck stdin must not keep a failed transfer alive: the engine then
 * sets c->stop and wakes this thread out of its read (rd_wake), and the read gives up. */
static ssize_t read_chunk(struct send_ctx *c, struct rd_buf *b)
{
    return rd_source_read(c->src, b->data + RD_FRAME_HDR, c->p->chunk_size);
}

/* Seal b as the ABORT that tells the receiver why our input failed. */
static void seal_abort(struct rd_buf *b)
{
    struct rd_reason r = { .code = RD_ESTREAM };
    snprintf(r.text, sizeof r.text, "sender aborted: %s", rd_error_msg());
    size_t len = rd_reason_encode(&r, b->data + RD_FRAME_HDR);
    b->len = rd_frame_seal(b->data, RD_ABORT, 0, (uint32_t)len, 0);
}

/* The next chunk, with its checksum: a page-cached file over a transport that can send from
 * a mapping is checksummed in place and never copied by us (b->ref); anything else is read
 * into b. Returns its length, 0 at the end of the input, -1 on error. */
static ssize_t next_chunk(struct send_ctx *c, struct rd_buf *b, uint64_t *sum)
{
    b->ref = NULL;
    if (c->tp->ops->send_ref &&
        (b->ref = rd_source_map(c->src, c->p->chunk_size, &b->ref_len, &b->ref_off))) {
        b->ref_fd = c->src->fd;
        if (rd_checksum_mapped(c->src, b->ref, b->ref_len, sum) == 0)
            return (ssize_t)b->ref_len;
        rd_source_unmap(b->ref, b->ref_len);
        b->ref = NULL;
        return -1;
    }
    ssize_t n = read_chunk(c, b);
    if (n > 0)
        *sum = rd_checksum(b->data + RD_FRAME_HDR, (size_t)n);
    return n;
}

static void *reader_main(void *arg)
{
    struct send_ctx *c = arg;
    struct rd_stream_hash hash;
    uint64_t seq = 0, total = 0;
    rd_wake_unblock();
    rd_stream_hash_init(&hash);
    for (;;) {
        struct rd_buf *b;
        uint64_t sum = 0;
        if (c->tp->ops->get_send_buf(c->tp, &b))
            break;
        ssize_t n = next_chunk(c, b, &sum);
        if (n < 0) {
            seal_abort(b);
            rd_queue_push(&c->ready, b);
            break;
        }
        if (n == 0) {
            c->end = (struct rd_end){ .total_bytes = total, .frames = seq, .stream_hash = hash.state };
            size_t len = rd_end_encode(&c->end, b->data + RD_FRAME_HDR);
            b->len = rd_frame_seal(b->data, RD_END, 0, (uint32_t)len, 0);
            rd_queue_push(&c->ready, b);
            break;
        }
        b->len = rd_frame_seal_sum(b->data, RD_DATA, 0, (uint32_t)n, seq, sum);
        rd_stream_hash_add(&hash, seq, (uint32_t)n, sum);
        seq++;
        total += (uint64_t)n;
        if (rd_queue_push(&c->ready, b)) {
            if (b->ref)
                rd_source_unmap(b->ref, b->ref_len);
            break;
        }
        atomic_fetch_add(&c->cnt->bytes, (uint64_t)n);
        atomic_fetch_add(&c->cnt->frames, 1);
    }
    rd_queue_close(&c->ready);
    return NULL;
}

/* Monitor thread: listens to the receiver for the whole transfer, so its CONFIRM, its ABORT
 * (with the reason) or its death are noticed at once, even while our input is quiet. */
static void *monitor_main(void *arg)
{
    struct send_ctx *c = arg;
    struct rd_buf *b;
    struct rd_frame f;
    int rc = rd_recv_ctrl_quiet(c->tp, -1, &b, &f);   /* never answers: the network thread is the one sender */
    if (rc == RD_OK) {
        if (f.type == RD_CONFIRM && rd_end_decode(f.payload, f.length, &c->confirm) == RD_P_OK)
            c->confirmed = 1;
        else if (f.type == RD_ABORT || f.type == RD_REJECT) {
            c->peer_said = rd_reason_decode(f.payload, f.length, &c->peer_reason) == RD_P_OK;
            rd_fail_from_reason(&f, "receiver");
        }
        else
            rd_fail(RD_ESTREAM, "protocol error: receiver %s sent %s during the stream", c->tp->peer,
                    rd_frame_type_name(f.type));
        c->tp->ops->release(c->tp, b);
    }
    if (!c->confirmed) {
        /* wake the posting thread and the reader wherever they wait */
        c->tp->ops->shutdown(c->tp);
        rd_queue_close(&c->ready);
    }
    return NULL;
}

int rd_engine_send(struct rd_transport *tp, struct rd_source *src, const struct rd_params *p,
                   struct rd_counters *cnt)
{
    struct send_ctx c = { .tp = tp, .src = src, .p = p, .cnt = cnt };
    pthread_t reader, monitor;
    int rc = RD_OK, sent_end = 0, own_abort = 0;
    if (rd_queue_init(&c.ready, p->depth + 2))
        return rd_fail(RD_EIO, "out of memory");
    if (pthread_create(&monitor, NULL, monitor_main, &c)) {
        rd_queue_destroy(&c.ready);
        return rd_fail(RD_EIO, "cannot start the monitor thread");
    }
    rd_wake_install();
    src->stop = &c.stop;
    if (pthread_create(&reader, NULL, reader_main, &c)) {
        src->stop = NULL;
        tp->ops->shutdown(tp);
        pthread_join(monitor, NULL);
        rd_queue_destroy(&c.ready);
        return rd_fail(RD_EIO, "cannot start the reader thread");
    }
    for (;;) {
        struct rd_buf *b = rd_queue_pop(&c.ready);
        if (!b) {
            rc = rd_error_code();
            if (!rc)
                rc = rd_fail(RD_ESTREAM, "transfer aborted");
            break;
        }
        uint8_t type = b->data[5];
        if (b->ref) {
            const uint8_t *ref = b->ref;
            size_t ref_len = b->ref_len;
            rc = tp->ops->send_ref(tp, b);
            rd_source_unmap(ref, ref_len);
        } else {
            rc = tp->ops->send(tp, b);
        }
        if (rc)
            break;
        if (type == RD_ABORT) {
            rc = rd_error_or(RD_EIO);
            own_abort = 1;
            /* a transport may still hold the ABORT (--streams queues it for a worker): let
             * it leave before the shutdown below, or the receiver never learns why */
            tp->ops->drain(tp);
            break;
        }
        if (type == RD_END) {
            rc = tp->ops->drain(tp);
            sent_end = !rc;
            break;
        }
    }
    int monitor_joined = 0;
    if (rc && !own_abort) {
        /* our send failed (EPIPE, reset): the receiver usually said why just before it hung
         * up, and that reason, not "broken pipe", is what the user needs to see. (Not when
         * the failure was our own input's: a relay echoes our ABORT back, and our reason
         * stays the one to report.) */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        monitor_joined = pthread_timedjoin_np(monitor, NULL, &ts) == 0;
        if (monitor_joined && c.peer_said) {
            rd_error_clear();
            rc = rd_fail(c.peer_reason.code == RD_EAUTH ? RD_EAUTH : RD_ESTREAM, "receiver: %s",
                         c.peer_reason.text);
        }
    }
    if (rc) {
        tp->ops->shutdown(tp);
        rd_queue_close(&c.ready);
        rd_wake_join(reader, &c.stop);
    } else {
        pthread_join(reader, NULL);
    }
    src->stop = NULL;
    if (!monitor_joined)
        pthread_join(monitor, NULL);   /* after END it returns with the receiver's answer */
    rd_queue_destroy(&c.ready);
    if (rc)
        return rd_error_or(rc);
    if (!sent_end || !c.confirmed) {
        int e = rd_error_code();
        return e ? e : rd_fail(RD_ESTREAM, "no confirmation from the receiver");
    }
    if (c.confirm.total_bytes != c.end.total_bytes || c.confirm.frames != c.end.frames ||
        c.confirm.stream_hash != c.end.stream_hash)
        return rd_fail(RD_ESTREAM, "receiver %s confirmed another stream than the one sent", tp->peer);
    return RD_OK;
}
