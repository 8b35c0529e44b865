#include "engine/rd_engine.h"

#include "util/rd_error.h"
#include "util/rd_queue.h"
#include "util/rd_wake.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct recv_ctx {
    struct rd_transport *tp;
    struct rd_sink *dst;
    const struct rd_params *p;
    struct rd_counters *cnt;
    struct rd_queue arrived;   /* frames whose header and order were checked */
    int confirmed;
    atomic_int stop;           /* the stream is lost: the writer's output may give up */
};

static void abort_transfer(struct recv_ctx *c)
{
    rd_send_reason(c->tp, RD_ABORT, rd_error_code(), rd_error_msg());
    c->tp->ops->shutdown(c->tp);
}

static int finish(struct recv_ctx *c, const struct rd_frame *f, uint64_t total, uint64_t frames,
                  uint64_t hash)
{
    struct rd_end e;
    if (rd_end_decode(f->payload, f->length, &e) != RD_P_OK)
        return rd_fail(RD_ESTREAM, "malformed END from sender %s", c->tp->peer);
    if (e.total_bytes != total || e.frames != frames)
        return rd_fail(RD_ESTREAM, "stream incomplete: sender sent %llu bytes in %llu frames, %llu bytes in %llu frames arrived",
                       (unsigned long long)e.total_bytes, (unsigned long long)e.frames,
                       (unsigned long long)total, (unsigned long long)frames);
    if (e.stream_hash != hash)
        return rd_fail(RD_ESTREAM, "stream corrupt: whole-stream hash mismatch");
    int rc = rd_sink_finish(c->dst);
    if (rc)
        return rc;
    uint8_t out[RD_END_LEN];
    rc = rd_send_ctrl(c->tp, RD_CONFIRM, out, (uint32_t)rd_end_encode(&e, out));
    if (!rc)
        rc = c->tp->ops->drain(c->tp);
    return rc;
}

/* Write one chunk. A stuck consumer of our output must not keep a failed transfer alive: the
 * engine then sets c->stop and wakes this thread out of its write (rd_wake). */
static int write_chunk(struct recv_ctx *c, const struct rd_frame *f)
{
    return rd_sink_write(c->dst, f->payload, f->length);
}

/* Writer thread: verify each chunk, write it from the buffer it landed in, give it back. */
static void *writer_main(void *arg)
{
    struct recv_ctx *c = arg;
    struct rd_stream_hash hash;
    uint64_t total = 0, frames = 0;
    rd_wake_unblock();
    rd_stream_hash_init(&hash);
    for (;;) {
        struct rd_buf *b = rd_queue_pop(&c->arrived);
        if (!b)
            break;   /* the network side failed and said why */
        struct rd_frame f;
        int rc = rd_frame_parse(b->data, b->len, c->p->chunk_size, &f);
        if (rc == RD_P_OK && f.type == RD_DATA) {
            /* TCP hashed the payload as it arrived; RDMA placed it without a CPU touching it */
            if (b->has_sum ? b->sum != f.checksum : rd_frame_verify(&f) != RD_P_OK) {
                rd_fail(RD_ESTREAM, "stream corrupt: checksum mismatch in chunk %llu (bytes %llu..%llu)",
                        (unsigned long long)f.seq, (unsigned long long)total,
                        (unsigned long long)(total + f.length));
                c->tp->ops->release(c->tp, b);
                abort_transfer(c);
                break;
            }
            rc = write_chunk(c, &f);
            c->tp->ops->release(c->tp, b);
            if (rc) {
                abort_transfer(c);
                break;
            }
            rd_stream_hash_add(&hash, f.seq, f.length, f.checksum);
            total += f.length;
            frames++;
            atomic_fetch_add(&c->cnt->bytes, f.length);
            atomic_fetch_add(&c->cnt->frames, 1);
            continue;
        }
        if (rc != RD_P_OK || rd_frame_verify(&f) != RD_P_OK) {
            rd_fail(RD_ESTREAM, "stream corrupt: damaged %s frame", rd_frame_type_name(f.type));
            c->tp->ops->release(c->tp, b);
            abort_transfer(c);
            break;
        }
        if (f.type == RD_END) {
            rc = finish(c, &f, total, frames, hash.state);
            c->tp->ops->release(c->tp, b);
            if (rc)
                abort_transfer(c);
            else
                c->confirmed = 1;
        } else {   /* ABORT: the network thread let it through so it is handled in order */
            rd_fail_from_reason(&f, "sender");
            c->tp->ops->release(c->tp, b);
        }
        break;
    }
    return NULL;
}

int rd_engine_recv(struct rd_transport *tp, struct rd_sink *dst, const struct rd_params *p,
                   struct rd_counters *cnt)
{
    struct recv_ctx c = { .tp = tp, .dst = dst, .p = p, .cnt = cnt };
    pthread_t writer;
    uint64_t expect_seq = 0;
    if (rd_queue_init(&c.arrived, p->depth + 2))
        return rd_fail(RD_EIO, "out of memory");
    rd_wake_install();
    dst->stop = &c.stop;
    if (pthread_create(&writer, NULL, writer_main, &c)) {
        dst->stop = NULL;
        rd_queue_destroy(&c.arrived);
        return rd_fail(RD_EIO, "cannot start the writer thread");
    }
    for (;;) {
        struct rd_buf *b;
        struct rd_frame f;
        if (tp->ops->recv(tp, &b, -1))
            break;
        int pe = rd_frame_parse(b->data, b->len, p->chunk_size, &f);
        if (pe == RD_P_OK && f.type == RD_DATA && f.seq != expect_seq)
            pe = RD_P_SEQUENCE;
        if (pe == RD_P_OK && f.type != RD_DATA && f.type != RD_END && f.type != RD_ABORT)
            pe = RD_P_TYPE;
        if (pe != RD_P_OK) {
            rd_fail(RD_ESTREAM, "protocol error from sender %s: %s", tp->peer, rd_proto_strerror(pe));
            tp->ops->release(tp, b);
            rd_send_reason(tp, RD_ABORT, RD_ESTREAM, rd_error_msg());
            break;
        }
        expect_seq++;
        if (rd_queue_push(&c.arrived, b)) {
            tp->ops->release(tp, b);
            break;
        }
        if (f.type != RD_DATA)
            break;
    }
    rd_queue_close(&c.arrived);
    if (rd_error_code()) {
        /* the stream is lost; give the writer a moment to flush what arrived, no more */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 2;
        if (pthread_timedjoin_np(writer, NULL, &ts) == 0)
            goto joined;
        rd_wake_join(writer, &c.stop);
        goto joined;
    }
    pthread_join(writer, NULL);
joined:
    dst->stop = NULL;
    rd_queue_destroy(&c.arrived);
    if (c.confirmed)
        return RD_OK;
    int e = rd_error_code();
    return e ? e : rd_fail(RD_ESTREAM, "stream incomplete");
}
