#include "engine/rd_engine.h"

#include "engine/rd_lanes.h"
#include "util/rd_error.h"
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
    struct rd_lanes *lanes;    /* frames whose header and order were checked: tags checked
                                * there, then written in order */
    struct rd_tagger *tagger;  /* the writer's: END under the stream key */
    struct rd_tagger *lane_tagger[RD_MAX_LANES];   /* the lanes': DATA */
    unsigned nlanes;
    int confirmed;
    atomic_int stop;           /* the stream is lost: the writer's output may give up */
};

static void abort_transfer(struct recv_ctx *c)
{
    rd_send_reason(c->tp, RD_ABORT, rd_error_code(), rd_error_msg());
    c->tp->ops->shutdown(c->tp);
}

static int finish(struct recv_ctx *c, const uint8_t *hdr, const struct rd_frame *f, uint64_t total,
                  uint64_t frames, uint64_t hash)
{
    struct rd_end e;
    if (rd_frame_check(c->tagger, RD_TAG_DOWN, hdr, f) != RD_P_OK)
        return rd_fail(RD_ESTREAM, "stream corrupt: END from sender %s fails its authentication tag", c->tp->peer);
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
    rc = rd_send_tagged(c->tp, RD_CONFIRM, out, (uint32_t)rd_end_encode(&e, out), c->p->stream_key,
                        RD_TAG_UP, 0);
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

/* A lane's work: check one DATA frame's tag, off the thread that receives (measured: checking
 * each TCP read as it arrived, on the receiving thread, cost as much CPU and serialised the
 * tag with the copy). The verdict goes to the writer, which knows where in the stream the
 * chunk is and says so. */
static int check_job(void *ctx, unsigned lane, void *job)
{
    struct recv_ctx *c = ctx;
    struct rd_buf *b = job;
    struct rd_frame f;
    if (rd_frame_parse(b->data, b->len, c->p->chunk_size, &f) != RD_P_OK || f.type != RD_DATA)
        return RD_OK;   /* the writer judges everything else itself */
    return rd_frame_check(c->lane_tagger[lane], RD_TAG_DOWN, b->data, &f) == RD_P_OK ? RD_OK : RD_ESTREAM;
}

/* Writer thread: the checked chunks in order, written from the buffer they landed in, then
 * given back. */
static void *writer_main(void *arg)
{
    struct recv_ctx *c = arg;
    struct rd_stream_hash hash;
    uint64_t total = 0, frames = 0;
    rd_wake_unblock();
    rd_stream_hash_init(&hash);
    for (;;) {
        int tag_rc = RD_OK;
        struct rd_buf *b = rd_lanes_take(c->lanes, &tag_rc);
        if (!b)
            break;   /* the network side failed and said why */
        struct rd_frame f;
        int rc = rd_frame_parse(b->data, b->len, c->p->chunk_size, &f);
        if (rc == RD_P_OK && f.type == RD_DATA) {
            if (tag_rc) {
                rd_fail(RD_ESTREAM, "stream corrupt: chunk %llu (bytes %llu..%llu) fails its authentication tag",
                        (unsigned long long)f.seq, (unsigned long long)total,
                        (unsigned long long)(total + f.length));
                c->tp->ops->release(c->tp, b);
                abort_transfer(c);
                break;
            }
            rd_stream_hash_add(&hash, f.tag);
            rc = write_chunk(c, &f);
            c->tp->ops->release(c->tp, b);
            if (rc) {
                abort_transfer(c);
                break;
            }
            total += f.length;
            frames++;
            atomic_fetch_add(&c->cnt->bytes, f.length);
            atomic_fetch_add(&c->cnt->frames, 1);
            continue;
        }
        if (rc != RD_P_OK) {
            rd_fail(RD_ESTREAM, "stream corrupt: damaged %s frame", rd_frame_type_name(f.type));
            c->tp->ops->release(c->tp, b);
            abort_transfer(c);
            break;
        }
        if (f.type == RD_END) {
            rc = finish(c, b->data, &f, total, frames, hash.state);
            c->tp->ops->release(c->tp, b);
            if (rc)
                abort_transfer(c);
            else
                c->confirmed = 1;
        } else {   /* ABORT: the network thread checked its tag and let it through in order */
            rd_fail_from_reason(&f, "sender");
            c->tp->ops->release(c->tp, b);
        }
        break;
    }
    rd_lanes_shut(c->lanes);   /* whatever is still in the lanes will not be written */
    return NULL;
}

static void free_taggers(struct recv_ctx *c)
{
    for (unsigned i = 0; i < c->nlanes; i++)
        rd_tagger_free(c->lane_tagger[i]);
    rd_tagger_free(c->tagger);
}

static int start_lanes(struct recv_ctx *c)
{
    c->nlanes = c->p->lanes ? c->p->lanes : 1;
    if (c->nlanes > RD_MAX_LANES)
        c->nlanes = RD_MAX_LANES;
    int ok = (c->tagger = rd_tagger_new(c->p->stream_key)) != NULL;
    for (unsigned i = 0; ok && i < c->nlanes; i++)
        ok = (c->lane_tagger[i] = rd_tagger_new(c->p->stream_key)) != NULL;
    if (!ok) {
        free_taggers(c);
        return rd_fail(RD_EIO, "out of memory");
    }
    c->lanes = rd_lanes_new(c->nlanes, c->p->depth + 2, check_job, c);
    if (!c->lanes) {
        free_taggers(c);
        return rd_error_or(RD_EIO);
    }
    return RD_OK;
}

int rd_engine_recv(struct rd_transport *tp, struct rd_sink *dst, const struct rd_params *p,
                   struct rd_counters *cnt)
{
    struct recv_ctx c = { .tp = tp, .dst = dst, .p = p, .cnt = cnt };
    pthread_t writer;
    uint64_t expect_seq = 0;
    int rc = start_lanes(&c);
    if (rc)
        return rc;
    rd_wake_install();
    dst->stop = &c.stop;
    if (rd_thread_create(&writer, NULL, writer_main, &c)) {
        dst->stop = NULL;
        rd_lanes_free(c.lanes);
        free_taggers(&c);
        return rd_fail(RD_EIO, "cannot start the writer thread");
    }
    for (;;) {
        struct rd_buf *b;
        struct rd_frame f;
        if (tp->ops->recv(tp, &b, -1))
            break;
        int pe = rd_frame_parse(b->data, b->len, p->chunk_size, &f);
        if (pe == RD_P_OK && (f.type == RD_DATA || f.type == RD_END) && f.seq != expect_seq)
            pe = RD_P_SEQUENCE;   /* END's seq counts the DATA frames before it */
        if (pe == RD_P_OK && f.type == RD_ABORT)
            pe = rd_check_hop(tp, b->data, &f);   /* the authenticated peer's own ABORT */
        if (pe == RD_P_OK && f.type != RD_DATA && f.type != RD_END && f.type != RD_ABORT)
            pe = RD_P_TYPE;
        if (pe != RD_P_OK) {
            rd_fail(RD_ESTREAM, "protocol error from sender %s: %s", tp->peer, rd_proto_strerror(pe));
            tp->ops->release(tp, b);
            rd_send_reason(tp, RD_ABORT, RD_ESTREAM, rd_error_msg());
            break;
        }
        expect_seq++;
        if (rd_lanes_submit(c.lanes, b)) {
            tp->ops->release(tp, b);
            break;
        }
        if (f.type != RD_DATA)
            break;
    }
    rd_lanes_close(c.lanes);
    if (rd_error_code()) {
        /* the stream is lost; give the writer a moment to flush what arrived, no more */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 2;
        if (pthread_timedjoin_np(writer, NULL, &ts) == 0)
            goto joined;
        rd_lanes_shut(c.lanes);
        rd_wake_join(writer, &c.stop);
        goto joined;
    }
    pthread_join(writer, NULL);
joined:
    dst->stop = NULL;
    rd_lanes_free(c.lanes);
    free_taggers(&c);
    if (c.confirmed)
        return RD_OK;
    int e = rd_error_code();
    return e ? e : rd_fail(RD_ESTREAM, "stream incomplete");
}
