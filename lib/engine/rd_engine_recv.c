#include "engine/rd_engine.h"
#include "wire/rd_compress.h"
#include "wire/rd_ocb.h"
#include "wire/rd_seal.h"

#include "engine/rd_hold.h"
#include "engine/rd_lanes.h"
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

/* A frame whose header and order the network thread checked, for the lanes. */
struct recv_job {
    struct rd_buf *b;
    uint64_t off;        /* parallel: where a DATA frame's payload goes in the file */
    int bad_tag;         /* the lane found its tag wrong (the writer says where it was) */
    int bad_zstd;        /* ...or its compressed payload does not decompress to its raw length */
    uint8_t *raw;        /* --compress: this slot's chunk, decompressed (chunk size bytes) */
    const uint8_t *write_data;   /* parallel: what the lane writes at off, once checked */
    uint32_t write_len;
    uint64_t n;          /* the job's number in the stream (under order_mu) */
    int verdict;         /* parallel, under order_mu: 0 not checked yet, 1 passed, -1 failed */
};

struct recv_ctx {
    struct rd_transport *tp;
    struct rd_sink *dst;
    const struct rd_params *p;
    struct rd_counters *cnt;
    struct rd_lanes *lanes;    /* frames whose header and order were checked: tags checked
                                * there (and with parallel, written there), then taken back in
                                * order by the writer */
    /* the network thread fills job n before the window lets it submit it, while the writer
     * may still hold job n - window - 1: two slots more than the window (as the sender's) */
    struct recv_job *jobs;
    unsigned njobs;
    int parallel;              /* a regular file: the lanes pwrite each chunk at its offset */
    pthread_mutex_t order_mu;  /* parallel: which jobs passed their checks, in stream order */
    pthread_cond_t order_cv;
    uint64_t checked;          /* jobs 0 .. checked-1 all passed */
    int order_broken;          /* job `checked` failed: no job after it is written */
    struct rd_tagger *tagger;  /* the writer's: END under the stream key */
    struct rd_tagger *lane_tagger[RD_MAX_LANES];   /* the lanes': DATA */
    struct rd_decompressor *dec[RD_MAX_LANES];     /* the sender compresses: one per lane */
    struct rd_sealer *opener[RD_MAX_LANES][RD_CIPHERS];   /* --encrypt: the lanes' decryption,
                                                    * by cipher (the frame names it: through a
                                                    * relay the origin may have agreed AES, we
                                                    * not); OCB's NULL where it cannot run */
    unsigned nlanes;
    /* the writer's frame while a custom sink takes it, and its hold once the sink kept it
     * (rd_sink_hold): then it goes back to the transport with the sink's last hold */
    struct rd_buf *lending;
    struct rd_hold *lent;
    struct rd_holds holds;
    int confirmed;
    atomic_int stop;           /* the stream is lost: the writer's output may give up */
    atomic_int interrupted;    /* a signal: the writer sends ABORT and stops */
    pthread_t writer;
    struct rd_errctx *errctx;  /* the transfer's, for the signal watcher's rd_fail */
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
    if (rc)
        return rc;
    if (c->tp->ops->drain(c->tp)) {
        /* CONFIRM is sent: the stream arrived whole and is flushed where the user asked, and
         * this end has done its part, as over TCP, where send() returning says no more.
         * Whether CONFIRM arrived is the sender's to judge; it fails without it. Over RDMA a
         * sender that has CONFIRM disconnects at once, and its disconnect can overtake the
         * acknowledgement of our send, which then completes flushed (6.12's rxe). */
        rd_error_clear();
    }
    return RD_OK;
}

/* rd_sink_hold: the writer's current frame, lent once, with a hold per call */
static struct rd_hold *lend_current(void *ctx)
{
    struct recv_ctx *c = ctx;
    if (!c->lending)
        return NULL;
    if (!c->lent && !(c->lent = rd_hold_lend(&c->holds, c->tp, c->lending)))
        return NULL;
    rd_hold_more(c->lent);
    return c->lent;
}

/* the writer is done with b: back to the transport now, or with the sink's last hold */
static void give_back(struct recv_ctx *c, struct rd_buf *b)
{
    if (c->lent)
        rd_hold_drop(c->lent);
    else
        c->tp->ops->release(c->tp, b);
    c->lending = NULL;
    c->lent = NULL;
}

/* Write one chunk. A stuck consumer of our output must not keep a failed transfer alive: the
 * engine then sets c->stop and wakes this thread out of its write (rd_wake). */
static int write_chunk(struct recv_ctx *c, const struct recv_job *j, const struct rd_frame *f)
{
    if (f->flags & RD_FLAG_COMPRESSED)
        return rd_sink_write(c->dst, j->raw, f->raw_length);
    return rd_sink_write(c->dst, f->payload, f->length);
}

/* A lane's work: check one DATA frame's tag, off the thread that receives (measured: checking
 * each TCP read as it arrived, on the receiving thread, cost as much CPU and serialised the
 * tag with the copy), and with parallel write it to the file at its offset (check_job), so
 * the chunks of one file are written by all lanes at once. A wrong tag goes to the writer,
 * which knows where in the stream the chunk is and says so; a failed write is recorded in
 * check_job (rd_fail) and ends the transfer there. */
static int open_job(struct recv_ctx *c, unsigned lane, struct recv_job *j)
{
    struct rd_buf *b = j->b;
    struct rd_frame f;
    if (rd_frame_parse(b->data, b->len, c->p->chunk_size, &f) != RD_P_OK || f.type != RD_DATA)
        return RD_OK;   /* the writer judges everything else itself */
    /* an encrypted stream's chunks all are, a plain one's none: the flags are under the tag */
    struct rd_sealer *opener = c->opener[lane][rd_cipher_of_flags(f.flags)];
    int bad = c->p->caps & RD_FLAG_ENCRYPTED
                  ? !(f.flags & RD_FLAG_ENCRYPTED) || !opener ||
                        rd_open_payload(opener, RD_TAG_DOWN, b->data, b->data + RD_FRAME_HDR, f.length) != 0
                  : (f.flags & ~RD_FLAG_COMPRESSED) ||
                        rd_frame_check(c->lane_tagger[lane], RD_TAG_DOWN, b->data, &f) != RD_P_OK;
    if (bad || ((f.flags & RD_FLAG_COMPRESSED) && !c->dec[0])) {   /* compressed, not agreed */
        j->bad_tag = 1;
        return RD_ESTREAM;
    }
    const uint8_t *data = f.payload;
    if (f.flags & RD_FLAG_COMPRESSED) {   /* then decompressed: it was compressed, then sealed */
        if (rd_decompress_chunk(c->dec[lane], b->data + RD_FRAME_HDR, f.length, j->raw, f.raw_length)) {
            j->bad_zstd = 1;
            return RD_ESTREAM;
        }
        data = j->raw;
    }
    j->write_data = data;
    j->write_len = f.raw_length;
    return RD_OK;
}

/* Parallel: record job j's verdict, then wait until every job before it passed its checks
 * too. 1: j may be written; 0: j or a job before it failed. So the file never holds a chunk
 * that follows a bad frame, as with the ordered writer, yet the writes still overlap: a lane
 * waits for the checks of the chunks before its own, never for their writes. No lane waits
 * for ever: the lanes start jobs in order, so every job before j is already on a lane. */
static int in_order(struct recv_ctx *c, struct recv_job *j, int ok)
{
    pthread_mutex_lock(&c->order_mu);
    j->verdict = ok ? 1 : -1;
    for (;;) {
        struct recv_job *k = &c->jobs[c->checked % c->njobs];
        if (c->order_broken || k->n != c->checked || !k->verdict)
            break;
        if (k->verdict < 0)
            c->order_broken = 1;
        else
            c->checked++;
    }
    pthread_cond_broadcast(&c->order_cv);
    while (ok && !c->order_broken && c->checked <= j->n)
        pthread_cond_wait(&c->order_cv, &c->order_mu);
    int go = ok && c->checked > j->n;
    pthread_mutex_unlock(&c->order_mu);
    return go;
}

static int check_job(void *ctx, unsigned lane, void *arg)
{
    struct recv_ctx *c = ctx;
    struct recv_job *j = arg;
    int rc = open_job(c, lane, j);
    if (!c->parallel)
        return rc;
    if (!in_order(c, j, rc == RD_OK))
        return rc ? rc : RD_ESTREAM;   /* never taken: the writer stops at the failed one */
    if (j->write_len && rd_sink_write_at(c->dst, j->write_data, j->write_len, j->off))
        return rd_error_or(RD_EIO);
    return RD_OK;
}

/* Writer thread: the checked chunks in order, written from the buffer they landed in (with
 * parallel, already written by the lanes), then given back. */
static void *writer_main(void *arg)
{
    struct recv_ctx *c = arg;
    struct rd_stream_hash hash;
    uint64_t total = 0, frames = 0;
    rd_thread_name("rd-writer");
    rd_wake_unblock();
    rd_stream_hash_init(&hash);
    for (;;) {
        int job_rc = RD_OK;
        struct recv_job *j = rd_lanes_take(c->lanes, &job_rc);
        if (!j) {
            if (atomic_load(&c->interrupted))   /* the one who tells the sender: the writer */
                abort_transfer(c);
            break;   /* else the network side failed and said why */
        }
        struct rd_buf *b = j->b;
        struct rd_frame f;
        int rc = rd_frame_parse(b->data, b->len, c->p->chunk_size, &f);
        if (rc == RD_P_OK && f.type == RD_DATA) {
            if (job_rc && (j->bad_tag || j->bad_zstd)) {
                rd_fail(RD_ESTREAM, "stream corrupt: chunk %llu (bytes %llu..%llu) %s",
                        (unsigned long long)f.seq, (unsigned long long)total,
                        (unsigned long long)(total + f.raw_length),
                        j->bad_tag ? "fails its authentication tag"
                                   : "does not decompress to the length it names (a zstd bomb or a sender bug)");
                c->tp->ops->release(c->tp, b);
                abort_transfer(c);
                break;
            }
            rd_stream_hash_add(&hash, f.tag);
            /* a decompressed chunk is in j->raw, which the next frame in this slot reuses */
            c->lending = f.flags & RD_FLAG_COMPRESSED ? NULL : b;
            rc = c->parallel ? job_rc : write_chunk(c, j, &f);   /* parallel: the lane wrote it */
            give_back(c, b);
            if (rc) {
                abort_transfer(c);
                break;
            }
            if (c->parallel)
                c->dst->offset += f.raw_length;   /* in order: rd_sink_finish leaves stdout after it */
            total += f.raw_length;
            frames++;
            atomic_fetch_add(&c->cnt->bytes, f.raw_length);
            atomic_fetch_add(&c->cnt->wire_bytes, f.length);
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
    /* whatever is still in the lanes is not taken (with parallel, a lane may have written a
     * later chunk when an earlier chunk's write failed; never a chunk after a bad frame) */
    rd_lanes_shut(c->lanes);
    return NULL;
}

/* SIGINT, SIGTERM, SIGHUP (rd_interrupt): the writer stops where it is and sends the ABORT
 * that names the signal (it is the thread that sends ABORT on a failed write too). The error
 * is recorded first, so it is the reason the ABORT gives, whatever the woken write says. */
static int interrupt_recv(void *ctx, int signo)
{
    struct recv_ctx *c = ctx;
    if (!atomic_exchange(&c->interrupted, signo))
        rd_interrupt_record(c->errctx, signo);
    atomic_store(&c->stop, 1);
    rd_lanes_shut(c->lanes);   /* out of waiting for the next frame */
    rd_wake_kick(c->writer);   /* out of a write to a stalled stdout */
    return 1;
}

/* the taggers and the job ring */
static void free_taggers(struct recv_ctx *c)
{
    for (unsigned i = 0; i < c->nlanes; i++)
        rd_tagger_free(c->lane_tagger[i]);
    for (unsigned i = 0; i < c->nlanes; i++)
        for (unsigned k = 0; k < RD_CIPHERS; k++)
            rd_sealer_free(c->opener[i][k]);
    for (unsigned i = 0; i < c->nlanes; i++)
        rd_decompressor_free(c->dec[i]);
    for (unsigned i = 0; c->jobs && i < c->njobs; i++)
        free(c->jobs[i].raw);
    rd_tagger_free(c->tagger);
    free(c->jobs);
}

static int start_lanes(struct recv_ctx *c)
{
    c->nlanes = c->p->lanes ? c->p->lanes : 1;
    if (c->nlanes > RD_MAX_LANES)
        c->nlanes = RD_MAX_LANES;
    int ok = (c->tagger = rd_tagger_new(c->p->stream_key)) != NULL;
    for (unsigned i = 0; ok && i < c->nlanes; i++)
        ok = (c->lane_tagger[i] = rd_tagger_new(c->p->stream_key)) != NULL;
    for (unsigned i = 0; ok && (c->p->caps & RD_FLAG_ENCRYPTED) && i < c->nlanes; i++)
        for (int k = 0; ok && k < RD_CIPHERS; k++)
            if (k != RD_CIPHER_AES_256_OCB || rd_ocb_usable())
                ok = (c->opener[i][k] = rd_sealer_new(c->p->stream_key, (enum rd_cipher)k, 0)) != NULL;
    if (!ok) {
        free_taggers(c);
        return rd_fail(RD_EIO, "out of memory");
    }
    unsigned window = c->p->depth + 2;
    c->njobs = window + 2;
    c->jobs = calloc(c->njobs, sizeof *c->jobs);
    int ok_jobs = c->jobs != NULL;
    /* the sender may compress: room for each slot's chunk decompressed, allocated here from
     * the agreed chunk size, never from what a frame claims */
    for (unsigned i = 0; ok_jobs && (c->p->caps & RD_FLAG_COMPRESSED) && i < c->nlanes; i++)
        ok_jobs = (c->dec[i] = rd_decompressor_new()) != NULL;
    for (unsigned i = 0; ok_jobs && (c->p->caps & RD_FLAG_COMPRESSED) && i < c->njobs; i++)
        ok_jobs = (c->jobs[i].raw = malloc(c->p->chunk_size)) != NULL;
    if (!ok_jobs) {
        free_taggers(c);
        return rd_fail(RD_EIO, "out of memory");
    }
    c->lanes = rd_lanes_new(c->nlanes, window, rd_transport_node(c->tp), check_job, c);
    if (!c->lanes) {
        free_taggers(c);
        return rd_error_or(RD_EIO);
    }
    return RD_OK;
}

int rd_engine_recv(struct rd_transport *tp, struct rd_sink *dst, const struct rd_params *p,
                   struct rd_counters *cnt)
{
    struct recv_ctx c = { .tp = tp, .dst = dst, .p = p, .cnt = cnt, .order_mu = PTHREAD_MUTEX_INITIALIZER,
                          .order_cv = PTHREAD_COND_INITIALIZER, .errctx = rd_errctx_current() };
    struct rd_interrupt_hook before_us;
    pthread_t writer;
    uint64_t expect_seq = 0;
    int rc = start_lanes(&c);
    if (rc)
        return rc;
    /* one lane: it checks, the writer writes, two threads at once (measured: one lane doing
     * both was slower); more: each lane writes what it checked */
    c.parallel = c.nlanes > 1 && rd_sink_parallel(dst);
    uint64_t next_off = dst->offset;   /* parallel: where the next DATA frame's payload goes */
    rd_wake_install();
    dst->stop = &c.stop;
    rd_holds_init(&c.holds);
    if (dst->write_fn) {
        dst->lend_fn = lend_current;
        dst->lend_ctx = &c;
    }
    if (rd_thread_create(&writer, NULL, writer_main, &c)) {
        dst->stop = NULL;
        dst->lend_fn = NULL;
        rd_holds_wait(&c.holds);
        rd_lanes_free(c.lanes);
        free_taggers(&c);
        return rd_fail(RD_EIO, "cannot start the writer thread");
    }
    c.writer = writer;
    rd_interrupt_set(interrupt_recv, &c, &before_us);
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
        struct recv_job *j = &c.jobs[expect_seq % c.njobs];
        pthread_mutex_lock(&c.order_mu);   /* lanes read n and verdict of other jobs' slots */
        *j = (struct recv_job){ .b = b, .off = next_off, .raw = j->raw, .n = expect_seq };
        pthread_mutex_unlock(&c.order_mu);
        if (f.type == RD_DATA)
            next_off += f.raw_length;
        expect_seq++;
        if (rd_lanes_submit(c.lanes, j)) {
            tp->ops->release(tp, b);
            break;
        }
        if (f.type != RD_DATA)
            break;
    }
    rd_lanes_close(c.lanes);
    /* the stream has ended or failed: the writer only flushes and confirms or gives up now,
     * and a signal ends us at once */
    rd_interrupt_restore(&before_us);
    if (rd_error_code()) {
        /* the stream is lost; give the writer a moment to flush what arrived, no more */
        struct timespec ts;
        rd_deadline_ns(&ts, 2000000000LL);
        if (rd_join_until(writer, &ts) == 0)
            goto joined;
        rd_lanes_shut(c.lanes);
        rd_wake_join(writer, &c.stop);
        goto joined;
    }
    pthread_join(writer, NULL);
joined:
    dst->stop = NULL;
    dst->lend_fn = NULL;
    /* the sink's workers give back what they hold as they finish it (rdcp: its pieces are
     * all written even when the stream broke, so a partial file is whole up to its end) */
    rd_holds_wait(&c.holds);
    rd_lanes_free(c.lanes);
    free_taggers(&c);
    if (c.confirmed)
        return RD_OK;
    int e = rd_error_code();
    return e ? e : rd_fail(RD_ESTREAM, "stream incomplete");
}
