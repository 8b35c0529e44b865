#include "rd_engine.h"

#include "rd_error.h"
#include "rd_queue.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct send_ctx {
    struct rd_transport *tp;
    struct rd_source *src;
    const struct rd_params *p;
    struct rd_counters *cnt;
    struct rd_queue ready;   /* sealed frames, in stream order, waiting to be posted */
    struct rd_end end;       /* what END announced */
};

/* Read the next chunk; the only place the reader may be cancelled (a stuck stdin must not
 * keep a failed transfer alive). */
static ssize_t read_chunk(struct send_ctx *c, struct rd_buf *b)
{
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
    ssize_t n = rd_source_read(c->src, b->data + RD_FRAME_HDR, c->p->chunk_size);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    return n;
}

static void *reader_main(void *arg)
{
    struct send_ctx *c = arg;
    struct rd_stream_hash hash;
    uint64_t seq = 0, total = 0;
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    rd_stream_hash_init(&hash);
    for (;;) {
        struct rd_buf *b;
        if (c->tp->ops->get_send_buf(c->tp, &b))
            break;
        ssize_t n = read_chunk(c, b);
        if (n < 0) {
            struct rd_reason r = { .code = RD_ESTREAM };
            snprintf(r.text, sizeof r.text, "sender aborted: %s", rd_error_msg());
            size_t len = rd_reason_encode(&r, b->data + RD_FRAME_HDR);
            b->len = rd_frame_seal(b->data, RD_ABORT, 0, (uint32_t)len, 0);
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
        uint64_t sum = rd_checksum(b->data + RD_FRAME_HDR, (size_t)n);
        b->len = rd_frame_seal_sum(b->data, RD_DATA, 0, (uint32_t)n, seq, sum);
        rd_stream_hash_add(&hash, seq, (uint32_t)n, sum);
        seq++;
        total += (uint64_t)n;
        if (rd_queue_push(&c->ready, b))
            break;
        atomic_fetch_add(&c->cnt->bytes, (uint64_t)n);
        atomic_fetch_add(&c->cnt->frames, 1);
    }
    rd_queue_close(&c->ready);
    return NULL;
}

static int wait_confirm(struct send_ctx *c)
{
    struct rd_buf *b;
    struct rd_frame f;
    struct rd_end e;
    int rc = rd_recv_ctrl(c->tp, -1, &b, &f);
    if (rc)
        return rc == RD_ECONNECT ? rd_fail(RD_ESTREAM, "no confirmation from the receiver") : rc;
    if (f.type == RD_CONFIRM && rd_end_decode(f.payload, f.length, &e) == RD_P_OK &&
        e.total_bytes == c->end.total_bytes && e.frames == c->end.frames &&
        e.stream_hash == c->end.stream_hash)
        rc = RD_OK;
    else if (f.type == RD_ABORT || f.type == RD_REJECT)
        rc = rd_fail_from_reason(&f, "receiver");
    else
        rc = rd_fail(RD_ESTREAM, "receiver %s did not confirm the stream (got %s)", c->tp->peer,
                     rd_frame_type_name(f.type));
    c->tp->ops->release(c->tp, b);
    return rc;
}

/* The send failed; the receiver may have said why before it hung up. */
static void fetch_abort_reason(struct send_ctx *c)
{
    struct rd_buf *b;
    struct rd_frame f;
    char saved[512];
    int code = rd_error_code();
    snprintf(saved, sizeof saved, "%s", rd_error_msg());
    rd_error_clear();
    if (rd_recv_ctrl(c->tp, 1000, &b, &f) == RD_OK) {
        if (f.type == RD_ABORT) {
            rd_error_clear();
            rd_fail_from_reason(&f, "receiver");
        }
        c->tp->ops->release(c->tp, b);
    }
    if (rd_error_code() == 0 || rd_error_code() == RD_ECONNECT) {
        rd_error_clear();
        rd_fail(code, "%s", saved);
    }
}

int rd_engine_send(struct rd_transport *tp, struct rd_source *src, const struct rd_params *p,
                   struct rd_counters *cnt)
{
    struct send_ctx c = { .tp = tp, .src = src, .p = p, .cnt = cnt };
    pthread_t reader;
    int rc = RD_OK;
    if (rd_queue_init(&c.ready, p->depth + 2))
        return rd_fail(RD_EIO, "out of memory");
    if (pthread_create(&reader, NULL, reader_main, &c)) {
        rd_queue_destroy(&c.ready);
        return rd_fail(RD_EIO, "cannot start the reader thread");
    }
    for (;;) {
        struct rd_buf *b = rd_queue_pop(&c.ready);
        if (!b) {
            rc = rd_error_code() ? rd_error_code() : rd_fail(RD_ESTREAM, "transfer aborted");
            break;
        }
        uint8_t type = b->data[5];
        rc = tp->ops->send(tp, b);
        if (rc) {
            fetch_abort_reason(&c);
            rc = rd_error_code();
            break;
        }
        if (type == RD_ABORT) {
            rc = rd_error_code() ? rd_error_code() : RD_EIO;
            break;
        }
        if (type == RD_END) {
            rc = tp->ops->drain(tp);
            if (!rc)
                rc = wait_confirm(&c);
            break;
        }
    }
    if (rc) {
        /* wake or cancel the reader wherever it waits: transport, queue or input */
        tp->ops->shutdown(tp);
        rd_queue_close(&c.ready);
        pthread_cancel(reader);
    }
    pthread_join(reader, NULL);
    rd_queue_destroy(&c.ready);
    return rc;
}
