#include "engine/rd_engine.h"

#include "engine/rd_lanes.h"
#include "engine/rd_adapt.h"
#include "wire/rd_compress.h"
#include "wire/rd_seal.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"
#include "util/rd_interrupt.h"
#include "util/rd_wake.h"
#include "util/rd_thread.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct send_ctx {
    struct rd_transport *tp;
    struct rd_source *src;
    const struct rd_params *p;
    struct rd_counters *cnt;
    struct rd_lanes *lanes;  /* sealed frames in stream order: tagged there, then posted */
    struct rd_tagger *tagger[RD_MAX_LANES];   /* one per lane: DATA under the stream key */
    struct rd_tagger *end_tagger;             /* the network thread's: END */
    struct rd_sealer *sealer[RD_MAX_LANES];   /* --encrypt: one per lane, DATA encrypted */
    uint16_t data_flags;                      /* DATA frames' flags: the cipher, if any */
    struct rd_compressor *comp[RD_MAX_LANES]; /* --compress: one per lane */
    struct rd_adapt adapt;                    /* the level the lanes use (auto: adapted) */
    unsigned nlanes;
    /* what each frame in flight is waiting for. The reader fills the slot of job `seq` before
     * the lanes' window lets it submit: jobs seq - window - 1 (just taken by the network
     * thread) .. seq - 1 may still be in use, so two slots more than the window */
    struct send_job {
        struct rd_buf *b;
        uint64_t read_off;   /* a file chunk the lane reads itself (read_len > 0) */
        uint32_t read_len;
        uint32_t raw_len;    /* DATA: the chunk's bytes before compression */
        struct rd_defer defer;   /* a custom producer's parts for the lane to read */
        int level;           /* the zstd level the lane used (0: none) */
    } *jobs;
    unsigned njobs;
    struct rd_end end;       /* what END announced (written by the network thread before it posts END) */
    struct rd_end confirm;   /* what CONFIRM said (written by the monitor) */
    int confirmed;
    struct rd_reason peer_reason;   /* the receiver's ABORT/REJECT, if it sent one */
    int peer_said;
    atomic_int stop;         /* the transfer failed: the reader's input may give up */
    atomic_int interrupted;  /* a signal: the reader sends ABORT instead of the next chunk */
    pthread_t reader;
    struct rd_errctx *errctx;   /* the transfer's, for the signal watcher's rd_fail */
};

/* Read the next chunk. A stuck stdin must not keep a failed transfer alive: the engine then
 * sets c->stop and wakes this thread out of its read (rd_wake), and the read gives up. */
static ssize_t read_chunk(struct send_ctx *c, struct send_job *j)
{
    struct rd_source *s = c->src;
    s->defer = s->lane_read_fn ? &j->defer : NULL;
    ssize_t n = rd_source_read(s, j->b->data + RD_FRAME_HDR, c->p->chunk_size);
    s->defer = NULL;
    return n;
}

/* Seal b as the ABORT that tells the receiver why our input failed. */
static void seal_abort(struct send_ctx *c, struct rd_buf *b)
{
    struct rd_reason r = { .code = RD_ESTREAM };
    snprintf(r.text, sizeof r.text, "%s", rd_error_msg());   /* shown there as "sender: ..." */
    size_t len = rd_reason_encode(&r, b->data + RD_FRAME_HDR);
    rd_seal_hop(c->tp, b, RD_ABORT, (uint32_t)len);
}

/* A lane's work: one DATA frame's bytes when it reads them itself (a chunk of a regular
 * file, at its own offset), and its tag: the per-byte work of the sender. The chunk goes out
 * of the frame it was read into, on every transport: what is sent is what was tagged, and
 * the copy costs less than sending from the file's pages again (sendfile on TCP: rd_tcp.c;
 * registered file windows on RDMA, 0.91x in the VM). Tagging from a mapping of the file
 * instead cost more too: mapping, populating and unmapping each chunk, 0.66 against 0.50
 * sender CPU s/GB. */
static int tag_job(void *ctx, unsigned lane, void *arg)
{
    struct send_ctx *c = ctx;
    struct send_job *j = arg;
    struct rd_buf *b = j->b;
    if (b->data[5] != RD_DATA)
        return RD_OK;
    if (j->read_len) {
        ssize_t n = rd_source_read_at(c->src, b->data + RD_FRAME_HDR, j->read_len, j->read_off);
        if (n < 0)
            return rd_error_or(RD_EIO);
        if ((size_t)n < j->read_len)
            return rd_fail(RD_EIO, "%s shrank while it was being sent", c->src->name);
    }
    if (j->defer.n) {
        int rc = c->src->lane_read_fn(c->src->ctx, b->data + RD_FRAME_HDR, &j->defer);
        if (rc)
            return rc;
    }
    j->raw_len = (uint32_t)(b->len - RD_FRAME_HDR);
    int level = j->level = c->comp[0] ? rd_adapt_level(&c->adapt) : 0;
    if (level && j->raw_len) {   /* compress, then encrypt or tag */
        long z = rd_compress_chunk(c->comp[lane], level, b->data + RD_FRAME_HDR, j->raw_len);
        if (z < 0)
            return rd_fail(RD_EIO, "zstd cannot compress a chunk");
        if ((uint32_t)z < j->raw_len) {
            rd_frame_set_compressed(b->data, (uint32_t)z, j->raw_len);
            b->len = RD_FRAME_HDR + (size_t)z;
        }
    }
    if (c->data_flags)   /* --encrypt: in place, and the AEAD's tag is the frame's */
        return rd_seal_payload(c->sealer[lane], RD_TAG_DOWN, b->data, b->data + RD_FRAME_HDR,
                               b->len - RD_FRAME_HDR)
                   ? rd_fail(RD_EIO, "libcrypto cannot encrypt a chunk")
                   : RD_OK;
    if (rd_frame_tag(c->tagger[lane], RD_TAG_DOWN, b->data, b->data + RD_FRAME_HDR))
        return rd_fail(RD_EIO, "libcrypto cannot compute a frame tag");
    return RD_OK;
}

/* A regular file's next chunk within the size it had at open, for a lane to read: the lanes
 * then read the file in parallel, each chunk at its offset. Beyond that size (a file still
 * growing) the reader goes on reading in order itself, as from a pipe. */
static int lane_reads(struct send_ctx *c, struct send_job *j, uint64_t seq)
{
    struct rd_source *s = c->src;
    if (!s->is_regular || s->read_fn || s->offset >= s->size)
        return 0;
    uint64_t left = s->size - s->offset;
    j->read_len = left < c->p->chunk_size ? (uint32_t)left : c->p->chunk_size;
    j->read_off = s->offset;
    s->offset += j->read_len;
    j->b->len = rd_frame_seal(j->b->data, RD_DATA, c->data_flags, j->read_len, seq);
    return 1;
}

/* The next chunk into job j's frame, sealed; a lane tags it. A regular file's chunks are
 * read by the lane at their offset; anything else is read here into b, in order. Returns
 * its length, 0 at the end of the input, -1 on error. */
static ssize_t next_chunk(struct send_ctx *c, struct send_job *j, uint64_t seq)
{
    struct rd_buf *b = j->b;
    if (lane_reads(c, j, seq))
        return j->read_len;
    ssize_t n = read_chunk(c, j);
    if (n > 0)
        b->len = rd_frame_seal(b->data, RD_DATA, c->data_flags, (uint32_t)n, seq);
    return n;
}

/* Reader thread: the input in order into sealed frames for the lanes. At the end of the input
 * an END frame without its payload follows (the network thread fills it in: its hash covers
 * the tags, which exist only once the lanes are done); after an input error, an ABORT. */
static void *reader_main(void *arg)
{
    struct send_ctx *c = arg;
    uint64_t seq = 0;
    rd_thread_name("rd-reader");
    rd_wake_unblock();
    for (;;) {
        struct send_job *j = &c->jobs[seq % c->njobs];
        *j = (struct send_job){ 0 };
        if (c->tp->ops->get_send_buf(c->tp, &j->b))
            break;
        struct rd_buf *b = j->b;
        ssize_t n = atomic_load(&c->interrupted) ? -1 : next_chunk(c, j, seq);
        if (n < 0)
            seal_abort(c, b);
        else if (n == 0)
            b->len = rd_frame_seal(b->data, RD_END, 0, 0, seq);
        if (rd_lanes_submit(c->lanes, j))
            break;
        if (n <= 0)
            break;
        seq++;
    }
    rd_lanes_close(c->lanes);
    return NULL;
}

/* SIGINT, SIGTERM, SIGHUP (rd_interrupt): the reader's next frame is the ABORT that names
 * the signal, so the receiver learns why the stream ends here. The error is recorded first,
 * so it is the reason the ABORT gives, whatever the woken read says. */
static int interrupt_send(void *ctx, int signo)
{
    struct send_ctx *c = ctx;
    if (!atomic_exchange(&c->interrupted, signo))
        rd_interrupt_record(c->errctx, signo);
    atomic_store(&c->stop, 1);
    rd_wake_kick(c->reader);   /* out of a read of a quiet stdin */
    return 1;
}

/* Monitor thread: listens to the receiver for the whole transfer, so its CONFIRM, its ABORT
 * (with the reason) or its death are noticed at once, even while our input is quiet. */
static void *monitor_main(void *arg)
{
    struct send_ctx *c = arg;
    struct rd_buf *b;
    struct rd_frame f;
    rd_thread_name("rd-monitor");
    int rc = rd_recv_ctrl_quiet(c->tp, -1, &b, &f);   /* never answers: the network thread is the one sender */
    if (rc == RD_OK) {
        if (f.type == RD_CONFIRM) {
            /* only the stream's real sink can say it got the stream: the stream key's tag */
            if (f.seq != 0 || rd_check_tagged(c->tp, b->data, &f, c->p->stream_key, RD_TAG_UP, "receiver"))
                rd_fail(RD_ESTREAM, "stream unconfirmed: receiver %s sent a CONFIRM that fails its authentication tag",
                        c->tp->peer);
            else if (rd_end_decode(f.payload, f.length, &c->confirm) == RD_P_OK)
                c->confirmed = 1;
            else
                rd_fail(RD_ESTREAM, "receiver %s sent a malformed CONFIRM", c->tp->peer);
        }
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
        rd_lanes_shut(c->lanes);
    }
    return NULL;
}

static void free_taggers(struct send_ctx *c)
{
    for (unsigned i = 0; i < c->nlanes; i++)
        rd_tagger_free(c->tagger[i]);
    for (unsigned i = 0; i < c->nlanes; i++) {
        rd_sealer_free(c->sealer[i]);
        rd_compressor_free(c->comp[i]);
    }
    rd_tagger_free(c->end_tagger);
}

/* The lanes and their taggers; RD_OK or the error. */
static int start_lanes(struct send_ctx *c)
{
    c->nlanes = c->p->lanes ? c->p->lanes : 1;
    if (c->nlanes > RD_MAX_LANES)
        c->nlanes = RD_MAX_LANES;
    int ok = (c->end_tagger = rd_tagger_new(c->p->stream_key)) != NULL;
    for (unsigned i = 0; ok && i < c->nlanes; i++)
        ok = (c->tagger[i] = rd_tagger_new(c->p->stream_key)) != NULL;
    if (c->p->caps & RD_FLAG_ENCRYPTED) {
        enum rd_cipher cipher = rd_cipher_agreed(c->p->caps);
        c->data_flags = rd_cipher_flags(cipher);
        for (unsigned i = 0; ok && i < c->nlanes; i++)
            ok = (c->sealer[i] = rd_sealer_new(c->p->stream_key, cipher, 1)) != NULL;
    }
    if ((c->p->caps & RD_FLAG_COMPRESSED) && c->p->compress_mode)
        for (unsigned i = 0; ok && i < c->nlanes; i++)
            ok = (c->comp[i] = rd_compressor_new(c->p->chunk_size)) != NULL;
    rd_adapt_init(&c->adapt, c->comp[0] ? c->p->compress_mode : 0, c->p->compress_level);
    if (!ok) {
        free_taggers(c);
        return rd_fail(RD_EIO, "out of memory");
    }
    /* in flight between the reader and the wire: the ring, and one frame on each side */
    unsigned window = c->p->depth + 2;
    c->njobs = window + 2;
    c->jobs = calloc(c->njobs, sizeof *c->jobs);
    c->lanes = c->jobs ? rd_lanes_new(c->nlanes, window, rd_transport_node(c->tp), tag_job, c) : NULL;
    if (!c->lanes) {
        free(c->jobs);
        free_taggers(c);
        return c->jobs ? rd_error_or(RD_EIO) : rd_fail(RD_EIO, "out of memory");
    }
    return RD_OK;
}

/* END, now that every DATA frame's tag is known: totals, the hash chained over the tags. */
static int seal_end(struct send_ctx *c, struct rd_buf *b, uint64_t frames, uint64_t total, uint64_t hash)
{
    c->end = (struct rd_end){ .total_bytes = total, .frames = frames, .stream_hash = hash };
    size_t len = rd_end_encode(&c->end, b->data + RD_FRAME_HDR);
    b->len = rd_frame_seal(b->data, RD_END, 0, (uint32_t)len, frames);
    if (rd_frame_tag(c->end_tagger, RD_TAG_DOWN, b->data, b->data + RD_FRAME_HDR))
        return rd_fail(RD_EIO, "libcrypto cannot compute a frame tag");
    return RD_OK;
}

/* After a failure: wait until no lane works on an unsent job (one may still be reading the
 * input into its frame), before the input and the frames go away. */
static void drop_unsent(struct send_ctx *c)
{
    while (rd_lanes_drop(c->lanes))
        ;
}

int rd_engine_send(struct rd_transport *tp, struct rd_source *src, const struct rd_params *p,
                   struct rd_counters *cnt)
{
    struct send_ctx c = { .tp = tp, .src = src, .p = p, .cnt = cnt, .errctx = rd_errctx_current() };
    struct rd_interrupt_hook before_us;
    pthread_t reader, monitor;
    int rc = start_lanes(&c), sent_end = 0, own_abort = 0, end_unacked = 0;
    if (rc)
        return rc;
    if (rd_thread_create(&monitor, NULL, monitor_main, &c)) {
        rd_lanes_free(c.lanes);
        free(c.jobs);
        free_taggers(&c);
        return rd_fail(RD_EIO, "cannot start the monitor thread");
    }
    rd_wake_install();
    src->stop = &c.stop;
    if (rd_thread_create(&reader, NULL, reader_main, &c)) {
        src->stop = NULL;
        tp->ops->shutdown(tp);
        pthread_join(monitor, NULL);
        rd_lanes_free(c.lanes);
        free(c.jobs);
        free_taggers(&c);
        return rd_fail(RD_EIO, "cannot start the reader thread");
    }
    c.reader = reader;
    rd_interrupt_set(interrupt_send, &c, &before_us);
    struct rd_stream_hash hash;
    uint64_t frames = 0, total = 0;
    rd_stream_hash_init(&hash);
    for (;;) {
        int job_rc = RD_OK;
        struct send_job *j = rd_lanes_take(c.lanes, &job_rc);
        struct rd_buf *b = j ? j->b : NULL;
        if (!b) {
            rc = rd_error_code();
            if (!rc)
                rc = rd_fail_after(RD_ESTREAM, "transfer aborted");
            break;
        }
        uint8_t type = b->data[5];
        if (job_rc) {   /* the lane could not tag it (the file shrank): tell the receiver why */
            seal_abort(&c, b);
            type = RD_ABORT;
        } else if (type == RD_DATA) {
            rd_stream_hash_add(&hash, b->data + RD_HDR_TAG);
            frames++;
            total += j->raw_len;
        } else if (type == RD_END && (rc = seal_end(&c, b, frames, total, hash.state))) {
            seal_abort(&c, b);
            type = RD_ABORT;
        }
        size_t payload = b->len - RD_FRAME_HDR;   /* b is the transport's once it is sent */
        uint32_t raw = j->raw_len;
        int level = j->level;
        double t_send = rd_now();
        rc = tp->ops->send(tp, b);
        if (rc)
            break;
        if (type == RD_DATA) {
            atomic_fetch_add(&c.cnt->bytes, (uint64_t)raw);
            atomic_fetch_add(&c.cnt->wire_bytes, (uint64_t)payload);
            atomic_fetch_add(&c.cnt->frames, 1);
            rd_adapt_chunk(&c.adapt, level, raw, (uint32_t)payload, rd_now() - t_send, rd_now());
        }
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
            end_unacked = rc != RD_OK;
            sent_end = !rc;
            break;
        }
    }
    /* from here the stream is over or the reader is told to stop: a signal ends us at once */
    rd_interrupt_restore(&before_us);
    int monitor_joined = 0;
    if (end_unacked) {
        /* END was posted but its send did not complete: over RDMA the receiver's disconnect
         * after its CONFIRM can overtake the acknowledgement of END (6.12's rxe). CONFIRM,
         * tagged by the sink over END's totals, is what proves the stream arrived, and frames
         * that came before a disconnect are still delivered: the monitor's verdict decides. */
        struct timespec ts;
        rd_deadline_ns(&ts, 2000000000LL);
        monitor_joined = rd_join_until(monitor, &ts) == 0;
        if (monitor_joined && c.confirmed) {
            rd_error_clear();
            rc = RD_OK;
            sent_end = 1;
        }
    }
    if (rc && !own_abort) {
        /* our send failed (EPIPE, reset): the receiver usually said why just before it hung
         * up, and that reason, not "broken pipe", is what the user needs to see. (Not when
         * the failure was our own input's: a relay echoes our ABORT back, and our reason
         * stays the one to report.) */
        struct timespec ts;
        rd_deadline_ns(&ts, 1000000000LL);
        if (!monitor_joined)
            monitor_joined = rd_join_until(monitor, &ts) == 0;
        if (monitor_joined && c.peer_said) {
            rc = rd_fail_instead(c.peer_reason.code == RD_EAUTH ? RD_EAUTH : RD_ESTREAM, "receiver: %s",
                                 c.peer_reason.text);
        }
    }
    if (rc) {
        tp->ops->shutdown(tp);
        rd_lanes_shut(c.lanes);
        rd_wake_join(reader, &c.stop);
        drop_unsent(&c);
    } else {
        pthread_join(reader, NULL);
    }
    src->stop = NULL;
    if (!monitor_joined)
        pthread_join(monitor, NULL);   /* after END it returns with the receiver's answer */
    rd_lanes_free(c.lanes);
    free(c.jobs);
    free_taggers(&c);
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
