/* test_relay.c - rd_relay between an origin sender and a final receiver, three threads over
 * two in-memory links, with faults injected on either link:
 *
 *   origin (session + engine_send) -> link 1 -> relay (session_receiver on link 1,
 *   session_sender on link 2 with the upstream's agreed parameters, rd_relay) -> link 2 ->
 *   final receiver (session + engine_recv)
 *
 * The relay does not verify payloads (it holds no key of the stream), so a corruption upstream
 * must be caught at the far end; it confirms upstream only after downstream confirmed, passing
 * the receiver's CONFIRM on as it came, so the origin's RD_OK means written. As rdpipe does
 * (RDPIPE_STREAM_KEY, lib/run/rd_run.c use_stream_key), origin and final receiver tag the
 * stream with an end-to-end key of their own, not with either link's session key; each link's
 * own frames (ABORT) carry that link's hop tag, and the relay says its own ABORT, never passes
 * the origin's on.
 *
 * Note: rd_fail() keeps one error per process, shared here by the three sides, and the library
 * sometimes clears it to record a better one (the peer's reason), so rd_error_msg() may be any
 * side's (return codes are safe: the library reads the error once). Error texts are
 * therefore read off the wire: every endpoint is wrapped in a tap that records the ABORT
 * each side sent (its code and text, computed when it failed) and the ABORT/CONFIRM frames it
 * received (what it was told). A watchdog (alarm) turns a hang into a failure. */
#include "check.h"
#include "mem_transport.h"
#include "testfiles.h"

#include "wire/rd_auth.h"
#include "engine/rd_engine.h"
#include "util/rd_error.h"
#include "engine/rd_io.h"
#include "wire/rd_proto.h"
#include "engine/rd_relay.h"
#include "transport/rd_session.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 4096u          /* the smallest chunk: many frames from little data */
#define CASE_TIMEOUT_S 30    /* a case that takes longer hangs */
#define FAIL_WITHIN_S 10     /* a failure must be noticed by every side well before that */
/* Failures mid-stream use an input longer than all the buffers between origin and receiver,
 * so the origin is still reading when the stream breaks. */
#define LONG_INPUT (100 * CHUNK)

/* two keys: each link has its own, as rdpipe gives each hop its own; and the stream's key,
 * which only its two ends hold */
static const char key_up[] = "relay test key, link 1";
static const char key_down[] = "relay test key, link 2";
static const uint8_t stream_key[RD_KEY_LEN] = "relay test: end-to-end stream k";

/* Frames sent on either link by its sending side: 0 HELLO, 1 AUTH, 2 + i DATA seq i, END;
 * by its receiving side: 0 CHALLENGE, 1 ACCEPT, 2 CONFIRM (or ABORT). */
#define DATA_FRAME(i) (2 + (long)(i))
#define CONFIRM_FRAME 2

/* ---- helpers ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- a tap: a transport that passes everything to a mem endpoint and remembers the
 * ABORT/REJECT/CONFIRM frames its owner sent and received ---- */

struct tap {
    struct rd_transport tp;      /* what the side under test uses */
    struct rd_transport *inner;  /* the mem endpoint */
    /* received: frames of these kinds (REJECT counts as abort), the first ABORT/REJECT's text;
     * bad_tags: ABORT/REJECT frames received once the handshake set the hop key (on this tap:
     * the session writes tp.hop_key) that fail the peer's hop tag */
    int aborts, confirms, bad_tags;
    char said[sizeof ((struct rd_reason *)0)->text];
    /* sent: ABORT/REJECT frames passed to send() (failed sends included) and the first one's
     * code and text; CONFIRM frames send() took */
    int sent_aborts, sent_confirms;
    int sent_code;
    char sent_text[sizeof ((struct rd_reason *)0)->text];
    /* the last CONFIRM frame sent and received, byte for byte */
    uint8_t confirm_sent[RD_FRAME_HDR + RD_END_LEN], confirm_got[RD_FRAME_HDR + RD_END_LEN];
    size_t confirm_sent_len, confirm_got_len;
    /* with send_ref (tap_ref_ops): the frame whose payload still lies in the relay's received
     * buffer, sent at the next call only, as a striped connection's thread sends it later */
    struct rd_buf *held;
};

static struct rd_transport *inner_of(struct rd_transport *tp)
{
    return ((struct tap *)tp->priv)->inner;
}

static int tap_listen(struct rd_transport *t, const struct rd_addr *a) { return inner_of(t)->ops->listen(inner_of(t), a); }
static int tap_accept(struct rd_transport *t, struct rd_transport **c, int ms) { return inner_of(t)->ops->accept(inner_of(t), c, ms); }
static int tap_listen_fd(struct rd_transport *t) { return inner_of(t)->ops->listen_fd(inner_of(t)); }
static int tap_connect(struct rd_transport *t, const struct rd_addr *a) { return inner_of(t)->ops->connect(inner_of(t), a); }
static int tap_setup_ring(struct rd_transport *t, enum rd_dir d, size_t size, unsigned depth) { return inner_of(t)->ops->setup_ring(inner_of(t), d, size, depth); }
static int tap_get_send_buf(struct rd_transport *t, struct rd_buf **b) { return inner_of(t)->ops->get_send_buf(inner_of(t), b); }
static void tap_release(struct rd_transport *t, struct rd_buf *b) { inner_of(t)->ops->release(inner_of(t), b); }
/* The held frame goes out now: its payload copied from the relay's buffer, which then goes
 * back to the upstream transport (rd_ref_done), and only then. */
static int tap_flush(struct tap *tp)
{
    struct rd_buf *b = tp->held;
    if (!b)
        return RD_OK;
    tp->held = NULL;
    memcpy(b->data + RD_FRAME_HDR, b->ref, b->ref_len);
    b->len = RD_FRAME_HDR + b->ref_len;
    rd_ref_done(b);
    return tp->inner->ops->send(tp->inner, b);
}

static int tap_drain(struct rd_transport *t)
{
    int rc = tap_flush(t->priv);
    int d = inner_of(t)->ops->drain(inner_of(t));
    return rc ? rc : d;
}
static void tap_shutdown(struct rd_transport *t) { inner_of(t)->ops->shutdown(inner_of(t)); }
static void tap_close(struct rd_transport *t)   /* the tap itself is the case's */
{
    (void)tap_flush(t->priv);   /* the link may be down: the frame goes back to its pool */
    inner_of(t)->ops->close(inner_of(t));
}

/* One thread receives at a time on an endpoint (handshake, then the engine's monitor or
 * network thread, each started after the previous is done), and the case reads after the
 * join. Sends may come from two threads (the relay's monitor and its main thread): those
 * counters are only updated under the lock. */
static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;

static int tap_recv(struct rd_transport *t, struct rd_buf **out, int timeout_ms)
{
    struct tap *tp = t->priv;
    int rc = tp->inner->ops->recv(tp->inner, out, timeout_ms);
    struct rd_frame f;
    if (rc == RD_OK && rd_frame_parse((*out)->data, (*out)->len, (*out)->cap, &f) == RD_P_OK) {
        if (f.type == RD_CONFIRM) {
            tp->confirms++;
            if ((*out)->len <= sizeof tp->confirm_got) {
                memcpy(tp->confirm_got, (*out)->data, (*out)->len);
                tp->confirm_got_len = (*out)->len;
            }
        }
        if (f.type == RD_ABORT || f.type == RD_REJECT) {
            struct rd_reason why;
            if (tp->aborts++ == 0 && rd_reason_decode(f.payload, f.length, &why) == RD_P_OK)
                snprintf(tp->said, sizeof tp->said, "%s", why.text);
            if (t->hop_dir) {
                struct rd_tagger *tg = rd_tagger_new(t->hop_key);
                enum rd_tag_dir peer = t->hop_dir == RD_TAG_HOP_DOWN ? RD_TAG_HOP_UP : RD_TAG_HOP_DOWN;
                if (!tg || rd_frame_check(tg, peer, (*out)->data, &f) != RD_P_OK)
                    tp->bad_tags++;
                rd_tagger_free(tg);
            }
        }
    }
    return rc;
}

static int tap_send(struct rd_transport *t, struct rd_buf *b)
{
    struct tap *tp = t->priv;
    struct rd_frame f;
    struct rd_reason why;
    int kind = 0;   /* 1 abort, 2 confirm */
    uint8_t confirm[RD_FRAME_HDR + RD_END_LEN];
    size_t confirm_len = 0;
    if (rd_frame_parse(b->data, b->len, b->cap, &f) == RD_P_OK) {
        if (f.type == RD_ABORT || f.type == RD_REJECT) {
            kind = 1;
            if (rd_reason_decode(f.payload, f.length, &why) != RD_P_OK)
                why = (struct rd_reason){ .code = 0, .text = "(malformed)" };
        } else if (f.type == RD_CONFIRM) {
            kind = 2;
            if (b->len <= sizeof confirm) {
                memcpy(confirm, b->data, b->len);
                confirm_len = b->len;
            }
        }
    }
    int held_rc = tap_flush(tp);   /* in order: a frame held by send_ref goes first */
    int rc = tp->inner->ops->send(tp->inner, b);   /* b is gone now */
    if (held_rc)
        rc = held_rc;
    pthread_mutex_lock(&tap_lock);
    if (kind == 1) {
        if (tp->sent_aborts++ == 0) {
            tp->sent_code = (int)why.code;
            snprintf(tp->sent_text, sizeof tp->sent_text, "%s", why.text);
        }
    } else if (kind == 2 && rc == RD_OK) {
        tp->sent_confirms++;
        memcpy(tp->confirm_sent, confirm, confirm_len);
        tp->confirm_sent_len = confirm_len;
    }
    pthread_mutex_unlock(&tap_lock);
    return rc;
}

#define TAP_OPS                        \
    .name = "tap",                     \
    .listen = tap_listen,              \
    .accept = tap_accept,              \
    .listen_fd = tap_listen_fd,        \
    .connect = tap_connect,            \
    .setup_ring = tap_setup_ring,      \
    .get_send_buf = tap_get_send_buf,  \
    .send = tap_send,                  \
    .recv = tap_recv,                  \
    .release = tap_release,            \
    .drain = tap_drain,                \
    .shutdown = tap_shutdown,          \
    .close = tap_close

static const struct rd_transport_ops tap_ops = { TAP_OPS };   /* no send_ref, as mem: the relay copies */

/* send_ref as a striped TCP connection does it: the payload is read later, on another call,
 * and the relay's buffer given back then. A relay that gave it back itself when the call
 * returned would have the frame sent from a buffer already received into again. */
static int tap_send_ref(struct rd_transport *t, struct rd_buf *b)
{
    struct tap *tp = t->priv;
    int rc = tap_flush(tp);
    if (rc) {
        memcpy(b->data + RD_FRAME_HDR, b->ref, b->ref_len);
        b->len = RD_FRAME_HDR + b->ref_len;
        rd_ref_done(b);
        (void)tp->inner->ops->send(tp->inner, b);   /* fails as the link did: b goes back */
        return rc;
    }
    tp->held = b;
    return RD_OK;
}

static const struct rd_transport_ops tap_ref_ops = { TAP_OPS, .send_ref = tap_send_ref };

static struct rd_transport *tap_wrap(struct tap *t, struct rd_transport *inner)
{
    memset(t, 0, sizeof *t);
    t->inner = inner;
    t->tp.ops = &tap_ops;
    t->tp.priv = t;
    snprintf(t->tp.peer, sizeof t->tp.peer, "%s", inner->peer);
    snprintf(t->tp.desc, sizeof t->tp.desc, "%s", inner->desc);
    return &t->tp;
}

/* ---- one chained transfer: origin, relay, final receiver ---- */

struct chain;

struct chain {
    /* set up by the case */
    const char *in_path, *out_path;
    struct rd_params want, relay_limits, recv_limits;
    int no_stream_key;                     /* the two ends keep their own links' stream keys */
    /* instead of rd_engine_send: a hand-driven origin after its real handshake, which records
     * no error (so rd_error_msg() is the relay's and the receiver's); returns the origin's rc */
    int (*origin_script)(struct chain *c, struct rd_transport *tp);
    int forged_up;                         /* the case forges a goodbye on link 1 itself */
    int defer_ref;                         /* the relay's downstream has tap_ref_ops' send_ref */
    struct mem_faults origin_faults;       /* on link 1, frames the origin sends */
    struct mem_faults relay_up_faults;     /* on link 1, frames the relay sends upstream */
    struct mem_faults relay_down_faults;   /* on link 2, frames the relay sends downstream */
    struct mem_faults recv_faults;         /* on link 2, frames the final receiver sends */
    /* results: *_session_rc is the handshake's; *_rc the side's overall outcome */
    int send_session_rc, send_rc;
    int relay_up_rc, relay_down_rc, relay_rc;
    int recv_session_rc, recv_rc;
    struct rd_params send_agreed, up_agreed, down_agreed, recv_agreed;
    struct rd_counters send_cnt, relay_cnt, recv_cnt;
    struct rd_transport *a1, *b1, *a2, *b2;   /* link 1: a1 origin, b1 relay; link 2: a2 relay, b2 receiver */
    struct tap origin_tap, relay_up_tap;      /* wrap a1 and b1 */
    struct tap relay_down_tap, recv_tap;      /* wrap a2 and b2 */
    double seconds;                           /* wall time of the whole transfer */
};

static int defer_ref;   /* the cases that set it run the chain with tap_ref_ops downstream */

static void chain_init(struct chain *c, const char *in, const char *out)
{
    memset(c, 0, sizeof *c);
    c->in_path = in;
    c->out_path = out;
    c->want = (struct rd_params){ .chunk_size = CHUNK, .depth = 4 };
    /* the relay and the receiver would grant more: what the origin asks for is what all use */
    c->relay_limits = (struct rd_params){ .chunk_size = 4 * CHUNK, .depth = 8 };
    c->recv_limits = (struct rd_params){ .chunk_size = 4 * CHUNK, .depth = 8 };
    mem_faults_none(&c->origin_faults);
    mem_faults_none(&c->relay_up_faults);
    mem_faults_none(&c->relay_down_faults);
    mem_faults_none(&c->recv_faults);
    c->send_session_rc = c->send_rc = -1;
    c->relay_up_rc = c->relay_down_rc = c->relay_rc = -1;
    c->recv_session_rc = c->recv_rc = -1;
    c->defer_ref = defer_ref;
}

static void *origin_main(void *arg)
{
    struct chain *c = arg;
    struct rd_transport *tp = &c->origin_tap.tp;
    struct rd_source src;
    struct rd_key k;
    c->send_rc = rd_source_open(&src, c->in_path, 0);
    if (c->send_rc == RD_OK) {
        rd_key_derive(&k, key_up, strlen(key_up));
        c->send_rc = c->send_session_rc = rd_session_sender(tp, &k, &c->want, &c->send_agreed);
        if (!c->no_stream_key)   /* rdpipe's end-to-end key (rd_run.c use_stream_key) */
            memcpy(c->send_agreed.stream_key, stream_key, RD_KEY_LEN);
        if (c->send_rc == RD_OK && c->origin_script)
            c->send_rc = c->origin_script(c, tp);
        else if (c->send_rc == RD_OK)
            c->send_rc = rd_engine_send(tp, &src, &c->send_agreed, &c->send_cnt);
        rd_source_close(&src);
        rd_key_wipe(&k);
    }
    tp->ops->close(tp);
    return NULL;
}

/* What serve_relay (lib/rd_run.c) does once the next hop is known. */
static void *relay_main(void *arg)
{
    struct chain *c = arg;
    struct rd_transport *up = &c->relay_up_tap.tp, *down = &c->relay_down_tap.tp;
    struct rd_key ku, kd;
    rd_key_derive(&ku, key_up, strlen(key_up));
    rd_key_derive(&kd, key_down, strlen(key_down));
    c->relay_up_rc = rd_session_receiver(up, &ku, &c->relay_limits, &c->up_agreed);
    if (c->relay_up_rc == RD_OK) {
        c->relay_down_rc = rd_session_sender(down, &kd, &c->up_agreed, &c->down_agreed);
        if (c->relay_down_rc == RD_OK && c->down_agreed.chunk_size < c->up_agreed.chunk_size)
            c->relay_down_rc = rd_fail(RD_ESTREAM, "downstream takes chunks of at most %u bytes, the sender sends %u",
                                       c->down_agreed.chunk_size, c->up_agreed.chunk_size);
        if (c->relay_down_rc == RD_OK)
            c->relay_rc = rd_relay(up, down, &c->up_agreed, &c->relay_cnt);
        else
            rd_send_reason(up, RD_ABORT, rd_error_code(), rd_error_msg());
    }
    down->ops->close(down);
    up->ops->close(up);
    rd_key_wipe(&ku);
    rd_key_wipe(&kd);
    return NULL;
}

static void *receiver_main(void *arg)
{
    struct chain *c = arg;
    struct rd_transport *tp = &c->recv_tap.tp;
    struct rd_sink dst;
    struct rd_key k;
    c->recv_rc = rd_sink_open(&dst, c->out_path);
    if (c->recv_rc == RD_OK) {
        rd_key_derive(&k, key_down, strlen(key_down));
        c->recv_rc = c->recv_session_rc = rd_session_receiver(tp, &k, &c->recv_limits, &c->recv_agreed);
        if (!c->no_stream_key)
            memcpy(c->recv_agreed.stream_key, stream_key, RD_KEY_LEN);
        if (c->recv_rc == RD_OK)
            c->recv_rc = rd_sink_begin(&dst);
        if (c->recv_rc == RD_OK)
            c->recv_rc = rd_engine_recv(tp, &dst, &c->recv_agreed, &c->recv_cnt);
        rd_sink_close(&dst);
        rd_key_wipe(&k);
    }
    tp->ops->close(tp);
    return NULL;
}

/* Run the three sides to the end. 0, or -1 if the chain could not be set up. */
static int chain_run(struct chain *c)
{
    if (mem_pair(&c->a1, &c->b1) != RD_OK)
        return -1;
    if (mem_pair(&c->a2, &c->b2) != RD_OK) {
        c->a1->ops->close(c->a1);
        c->b1->ops->close(c->b1);
        return -1;
    }
    mem_set_faults(c->a1, &c->origin_faults);
    mem_set_faults(c->b1, &c->relay_up_faults);
    mem_set_faults(c->a2, &c->relay_down_faults);
    mem_set_faults(c->b2, &c->recv_faults);
    tap_wrap(&c->origin_tap, c->a1);
    tap_wrap(&c->relay_up_tap, c->b1);
    tap_wrap(&c->relay_down_tap, c->a2);
    if (c->defer_ref)
        c->relay_down_tap.tp.ops = &tap_ref_ops;
    tap_wrap(&c->recv_tap, c->b2);
    pthread_t t_recv, t_relay, t_origin;
    double t0 = now_s();
    if (rd_thread_create(&t_recv, NULL, receiver_main, c) || rd_thread_create(&t_relay, NULL, relay_main, c) ||
        rd_thread_create(&t_origin, NULL, origin_main, c)) {
        fprintf(stderr, "pthread_create failed\n");
        exit(2);
    }
    pthread_join(t_origin, NULL);
    pthread_join(t_relay, NULL);
    pthread_join(t_recv, NULL);
    c->seconds = now_s() - t0;
    return 0;
}

/* ---- whole transfers that must succeed ---- */

/* n random bytes file to file through the relay; everything about the result checked.
 * depth: what the origin asks for; down_depth: the most the final receiver grants. */
static void roundtrip(size_t n, uint32_t depth, uint32_t down_depth, uint64_t seed)
{
    char in[256], out[256];
    temp_path(in, sizeof in, "in");
    temp_path(out, sizeof out, "out");
    uint8_t *data = random_bytes(n, seed);
    CHECK_OR(write_file(in, data, n) == 0, goto done);
    /* stale, longer content in the output must be gone afterwards */
    uint8_t *junk = random_bytes(n + 5000, seed + 1);
    CHECK_OR(write_file(out, junk, n + 5000) == 0, { free(junk); goto done; });
    free(junk);
    struct chain c;
    chain_init(&c, in, out);
    c.want.depth = depth;
    c.recv_limits.depth = down_depth;
    CHECK_OR(chain_run(&c) == 0, goto done);
    CHECK_EQ_I(c.send_rc, RD_OK);
    CHECK_EQ_I(c.relay_rc, RD_OK);
    CHECK_EQ_I(c.recv_rc, RD_OK);
    if (c.send_rc || c.relay_rc || c.recv_rc)
        check_fail_at(__FILE__, __LINE__, "error: %s", rd_error_msg());
    /* the relay asked downstream for exactly what upstream agreed */
    CHECK_EQ_U(c.up_agreed.chunk_size, CHUNK);
    CHECK_EQ_U(c.up_agreed.depth, depth);
    CHECK_EQ_U(c.down_agreed.chunk_size, CHUNK);
    CHECK_EQ_U(c.down_agreed.depth, depth < down_depth ? depth : down_depth);
    CHECK_EQ_U(c.recv_agreed.chunk_size, CHUNK);
    uint64_t frames = (n + CHUNK - 1) / CHUNK;
    CHECK_EQ_U(atomic_load(&c.send_cnt.bytes), n);
    CHECK_EQ_U(atomic_load(&c.relay_cnt.bytes), n);
    CHECK_EQ_U(atomic_load(&c.relay_cnt.frames), frames);
    CHECK_EQ_U(atomic_load(&c.recv_cnt.bytes), n);
    CHECK_EQ_U(atomic_load(&c.recv_cnt.frames), frames);
    /* the origin heard exactly one CONFIRM and nobody was told to abort */
    CHECK_EQ_I(c.origin_tap.confirms, 1);
    CHECK_EQ_I(c.origin_tap.aborts, 0);
    CHECK_EQ_I(c.recv_tap.aborts, 0);
    /* that CONFIRM is the final receiver's, byte for byte: the relay passed it on */
    CHECK_EQ_U(c.recv_tap.confirm_sent_len, RD_FRAME_HDR + RD_END_LEN);
    CHECK_EQ_U(c.origin_tap.confirm_got_len, c.recv_tap.confirm_sent_len);
    CHECK_MEM_EQ(c.origin_tap.confirm_got, c.recv_tap.confirm_sent, RD_FRAME_HDR + RD_END_LEN);
    CHECK_MEM_EQ(c.relay_up_tap.confirm_sent, c.recv_tap.confirm_sent, RD_FRAME_HDR + RD_END_LEN);
    /* each link ran its own handshake: its own hop keys and session stream keys */
    CHECK_MEM_NE(c.origin_tap.tp.hop_key, c.recv_tap.tp.hop_key, RD_KEY_LEN);
    CHECK_MEM_EQ(c.origin_tap.tp.hop_key, c.relay_up_tap.tp.hop_key, RD_KEY_LEN);
    CHECK_MEM_EQ(c.relay_down_tap.tp.hop_key, c.recv_tap.tp.hop_key, RD_KEY_LEN);
    CHECK_MEM_NE(c.up_agreed.stream_key, c.down_agreed.stream_key, RD_KEY_LEN);
    size_t got_n = 0;
    uint8_t *got = read_file(out, &got_n);
    CHECK_OR(got, goto done);
    CHECK_EQ_U(got_n, n);
    if (got_n == n)
        CHECK_MEM_EQ(got, data, n);
    free(got);
done:
    free(data);
    unlink(in);
    unlink(out);
}

static void t_size_0(void) { roundtrip(0, 4, 8, 1); }
static void t_size_1(void) { roundtrip(1, 4, 8, 2); }
static void t_size_chunk_minus_1(void) { roundtrip(CHUNK - 1, 4, 8, 3); }
static void t_size_chunk(void) { roundtrip(CHUNK, 4, 8, 4); }
static void t_size_chunk_plus_1(void) { roundtrip(CHUNK + 1, 4, 8, 5); }
static void t_many_chunks(void) { roundtrip(300 * CHUNK + 123, 4, 8, 6); }
/* a downstream that sends each payload from the relay's received buffer later (send_ref, as
 * a striped connection does): that buffer must stay the relay's until then */
static void t_many_chunks_sent_later(void)
{
    defer_ref = 1;
    roundtrip(300 * CHUNK + 123, 4, 8, 31);
    defer_ref = 0;
}
static void t_depth_1(void) { roundtrip(20 * CHUNK + 1, 1, 8, 7); }
/* the two links need not agree on depth: 8 frames in flight upstream, 2 downstream */
static void t_shallower_downstream(void) { roundtrip(50 * CHUNK + 7, 8, 2, 8); }

/* ---- failures ---- */

struct fail_case {
    struct case_files f;
    struct chain c;
};

static void fail_setup(struct fail_case *fc, size_t n, uint64_t seed)
{
    case_files_make(&fc->f, n, seed);
    chain_init(&fc->c, fc->f.in, fc->f.out);
}

static void fail_teardown(struct fail_case *fc)
{
    case_files_remove(&fc->f);
}

static int fail_run(struct fail_case *fc)
{
    return chain_run(&fc->c);
}

/* Every handshake went through (the failure is in the stream). */
static void check_sessions_ok(struct fail_case *fc, int line)
{
    struct chain *c = &fc->c;
    if (c->send_session_rc || c->relay_up_rc || c->relay_down_rc || c->recv_session_rc)
        check_fail_at(__FILE__, line, "a handshake failed: origin %d, relay up %d, relay down %d, receiver %d (%s)",
                      c->send_session_rc, c->relay_up_rc, c->relay_down_rc, c->recv_session_rc,
                      rd_error_msg());
}

/* Nobody claims success, and the failure was noticed in time. Besides the return codes,
 * what each side did on the wire: the receiver sent no CONFIRM, nor did the relay. */
static void check_all_failed(struct fail_case *fc, int line)
{
    struct chain *c = &fc->c;
    if (c->recv_tap.sent_confirms != 0)
        check_fail_at(__FILE__, line, "the receiver sent a CONFIRM");
    if (c->relay_up_tap.sent_confirms != 0)
        check_fail_at(__FILE__, line, "the relay sent a CONFIRM upstream");
    if (c->send_rc == RD_OK || c->relay_rc == RD_OK || c->recv_rc == RD_OK)
        check_fail_at(__FILE__, line, "a side returned RD_OK: origin %d, relay %d, receiver %d",
                      c->send_rc, c->relay_rc, c->recv_rc);
    if (c->send_rc == -1 || c->relay_rc == -1 || c->recv_rc == -1)
        check_fail_at(__FILE__, line, "a side never ran: origin %d, relay %d, receiver %d",
                      c->send_rc, c->relay_rc, c->recv_rc);
    if (c->origin_tap.confirms != 0)
        check_fail_at(__FILE__, line, "the origin received a CONFIRM");
    if (c->seconds > FAIL_WITHIN_S)
        check_fail_at(__FILE__, line, "the failure took %.1f s to reach every side", c->seconds);
    /* every goodbye the relay and the ends exchanged carried its link's hop tag (the case's
     * own forgeries aside: exactly one, which the relay receives on relay_up_tap) */
    if (c->origin_tap.bad_tags || c->recv_tap.bad_tags || c->relay_down_tap.bad_tags ||
        c->relay_up_tap.bad_tags != (c->forged_up ? 1 : 0))
        check_fail_at(__FILE__, line, "a goodbye failed its hop tag: origin %d, relay up %d, relay down %d, receiver %d",
                      c->origin_tap.bad_tags, c->relay_up_tap.bad_tags, c->relay_down_tap.bad_tags,
                      c->recv_tap.bad_tags);
}

/* The output after a failed stream: a prefix of the input; with `strict`, not all of it. */
static void check_output_prefix(struct fail_case *fc, int line, int strict)
{
    case_files_check_prefix(&fc->f, __FILE__, line, strict);
}

/* The output is the whole input (the receiver did its part). */
static void check_output_whole(struct fail_case *fc, int line)
{
    size_t got_n = 0;
    uint8_t *got = read_file(fc->f.out, &got_n);
    if (!got || got_n != fc->f.n || memcmp(got, fc->f.data, fc->f.n) != 0)
        check_fail_at(__FILE__, line, "the output is not the input (%zu of %zu bytes)", got ? got_n : 0, fc->f.n);
    free(got);
}

/* tap was told to abort, with a reason that contains `want` */
static void check_told(const struct tap *t, const char *who, const char *want, int line)
{
    if (t->aborts == 0)
        check_fail_at(__FILE__, line, "the %s was not sent an ABORT", who);
    else if (!strstr(t->said, want))
        check_fail_at(__FILE__, line, "the %s was told \"%s\", which does not contain \"%s\"", who, t->said, want);
}

/* A payload byte (or the tag) damaged between origin and relay: the relay does not look at
 * payloads and cannot check tags; it passes the frame on; the final receiver's tag check
 * catches it and its reason travels back to the origin through the relay. */
static void corrupt_upstream_case(size_t offset, uint8_t mask)
{
    struct fail_case fc;
    fail_setup(&fc, LONG_INPUT, 20);
    fc.c.origin_faults.corrupt_frame = DATA_FRAME(1);
    fc.c.origin_faults.corrupt_offset = offset;
    fc.c.origin_faults.corrupt_xor = mask;
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_I(fc.c.recv_rc, RD_ESTREAM);
    CHECK(atomic_load(&fc.c.relay_cnt.frames) >= 2);   /* the damaged frame was forwarded */
    CHECK_EQ_I(fc.c.recv_tap.sent_aborts, 1);            /* and the receiver caught it */
    CHECK_HAS(fc.c.recv_tap.sent_text, "chunk 1 (bytes 4096..8192) fails its authentication tag");
    CHECK(atomic_load(&fc.c.recv_cnt.bytes) <= CHUNK);   /* nothing written after it */
    check_told(&fc.c.origin_tap, "origin", "downstream", __LINE__);
    check_told(&fc.c.origin_tap, "origin", "authentication tag", __LINE__);
    check_output_prefix(&fc, __LINE__, 1);
out:
    fail_teardown(&fc);
}

static void t_corrupt_payload_upstream(void) { corrupt_upstream_case(RD_FRAME_HDR + 100, 0x01); }
static void t_corrupt_header_tag_upstream(void) { corrupt_upstream_case(RD_HDR_TAG, 0x01); }

/* The same damage between relay and receiver. */
static void t_corrupt_payload_downstream(void)
{
    struct fail_case fc;
    fail_setup(&fc, LONG_INPUT, 21);
    fc.c.relay_down_faults.corrupt_frame = DATA_FRAME(1);
    fc.c.relay_down_faults.corrupt_offset = RD_FRAME_HDR + CHUNK - 1;
    fc.c.relay_down_faults.corrupt_xor = 0x80;
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_I(fc.c.recv_rc, RD_ESTREAM);
    CHECK_EQ_I(fc.c.recv_tap.sent_aborts, 1);
    CHECK_HAS(fc.c.recv_tap.sent_text, "chunk 1 (bytes 4096..8192) fails its authentication tag");
    check_told(&fc.c.origin_tap, "origin", "authentication tag", __LINE__);
    check_output_prefix(&fc, __LINE__, 1);
out:
    fail_teardown(&fc);
}

/* Frames lost, repeated or swapped between origin and relay: the relay's own order check
 * stops the stream, and tells both ends why. */
static void order_fault_case(void (*set)(struct mem_faults *), int strict)
{
    struct fail_case fc;
    fail_setup(&fc, LONG_INPUT, 22);
    set(&fc.c.origin_faults);
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_I(fc.c.relay_rc, RD_ESTREAM);
    CHECK_EQ_I(fc.c.recv_rc, RD_ESTREAM);
    CHECK_HAS(fc.c.relay_down_tap.sent_text, "out of order");
    check_told(&fc.c.origin_tap, "origin", "out of order", __LINE__);
    check_told(&fc.c.recv_tap, "receiver", "out of order", __LINE__);
    /* the relay caught it: no bad frame reached the receiver, which had nothing to say */
    CHECK_EQ_I(fc.c.recv_tap.sent_aborts, 0);
    /* the receiver only got what the relay forwarded before it stopped */
    CHECK_EQ_U(atomic_load(&fc.c.recv_cnt.frames), atomic_load(&fc.c.relay_cnt.frames));
    check_output_prefix(&fc, __LINE__, strict);
out:
    fail_teardown(&fc);
}

static void drop_second(struct mem_faults *f) { f->drop_frame = DATA_FRAME(1); }
static void dup_second(struct mem_faults *f) { f->dup_frame = DATA_FRAME(1); }
static void reorder_second(struct mem_faults *f) { f->reorder_frame = DATA_FRAME(1); }

static void t_dropped_frame_upstream(void) { order_fault_case(drop_second, 1); }
static void t_duplicated_frame_upstream(void) { order_fault_case(dup_second, 1); }
static void t_reordered_frames_upstream(void) { order_fault_case(reorder_second, 1); }

/* The last DATA frame is lost upstream: END's seq (the number of DATA frames) is one ahead,
 * and the relay's order check stops it. */
static void t_dropped_last_frame_upstream(void)
{
    struct fail_case fc;
    fail_setup(&fc, 10 * CHUNK, 23);
    fc.c.origin_faults.drop_frame = DATA_FRAME(9);
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_I(fc.c.recv_rc, RD_ESTREAM);
    CHECK_EQ_U(atomic_load(&fc.c.relay_cnt.frames), 9);
    CHECK_EQ_I(fc.c.relay_rc, RD_ESTREAM);
    check_told(&fc.c.origin_tap, "origin", "out of order", __LINE__);
    check_told(&fc.c.recv_tap, "receiver", "out of order", __LINE__);
    check_output_prefix(&fc, __LINE__, 1);
out:
    fail_teardown(&fc);
}

/* The link between relay and receiver dies while DATA flows (after DATA 0..2). */
static void t_downstream_link_killed(void)
{
    struct fail_case fc;
    fail_setup(&fc, LONG_INPUT, 24);
    fc.c.relay_down_faults.kill_after = DATA_FRAME(3);
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_U(atomic_load(&fc.c.relay_cnt.frames), 3);
    CHECK_EQ_U(atomic_load(&fc.c.recv_cnt.frames), 3);   /* exactly what got through was written */
    check_told(&fc.c.origin_tap, "origin", "link killed", __LINE__);
    check_output_prefix(&fc, __LINE__, 1);
out:
    fail_teardown(&fc);
}

/* The same with a downstream that sends each payload later, from the relay's buffer. */
static void t_downstream_link_killed_sent_later(void)
{
    struct fail_case fc;
    defer_ref = 1;
    fail_setup(&fc, LONG_INPUT, 32);
    defer_ref = 0;
    fc.c.relay_down_faults.kill_after = DATA_FRAME(3);
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_U(atomic_load(&fc.c.recv_cnt.frames), 3);
    check_told(&fc.c.origin_tap, "origin", "link killed", __LINE__);
    check_output_prefix(&fc, __LINE__, 1);
out:
    fail_teardown(&fc);
}

/* The link between origin and relay dies while DATA flows. */
static void t_upstream_link_killed(void)
{
    struct fail_case fc;
    fail_setup(&fc, LONG_INPUT, 25);
    fc.c.origin_faults.kill_after = DATA_FRAME(3);
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_I(fc.c.recv_rc, RD_ESTREAM);
    CHECK_EQ_U(atomic_load(&fc.c.relay_cnt.frames), 3);
    CHECK_EQ_U(atomic_load(&fc.c.recv_cnt.frames), 3);
    check_told(&fc.c.recv_tap, "receiver", "link killed", __LINE__);
    check_output_prefix(&fc, __LINE__, 1);
out:
    fail_teardown(&fc);
}

/* The final receiver cannot write its output: the origin learns the far end's reason. The
 * receiver's own code is read from the ABORT it sent (its return value is the process's
 * shared error, which the relay may replace with its "downstream: ..." version). */
static void t_receiver_write_error(void)
{
    struct fail_case fc;
    fail_setup(&fc, LONG_INPUT, 26);
    fc.c.out_path = "/dev/full";
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_I(fc.c.recv_tap.sent_aborts, 1);
    CHECK_EQ_I(fc.c.recv_tap.sent_code, RD_EIO);
    CHECK_HAS(fc.c.recv_tap.sent_text, "/dev/full");
    check_told(&fc.c.origin_tap, "origin", "downstream: ", __LINE__);
    check_told(&fc.c.origin_tap, "origin", "cannot write /dev/full", __LINE__);
    CHECK_EQ_U(atomic_load(&fc.c.recv_cnt.bytes), 0);
out:
    fail_teardown(&fc);
}

/* The origin's input fails: its ABORT (tagged under link 1's hop key) reaches the relay, which
 * takes it as the origin's and tells the receiver in an ABORT of its own (tagged for link 2),
 * with the origin's reason. */
static void t_origin_read_error(void)
{
    struct fail_case fc;
    fail_setup(&fc, 1, 27);
    fc.c.in_path = "/proc/self/mem";   /* opens fine; reading at offset 0 is EIO */
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_I(fc.c.origin_tap.sent_aborts, 1);
    CHECK_HAS(fc.c.origin_tap.sent_text, "cannot read /proc/self/mem");
    /* the first word the receiver got is the relay's own ABORT with the reason (the exact text
     * is the process's shared error here: t_origin_script_abort pins it), under link 2's hop
     * tag: not the origin's frame passed on, whose tag is link 1's */
    check_told(&fc.c.recv_tap, "receiver", "/proc/self/mem", __LINE__);
    CHECK_EQ_I(fc.c.relay_down_tap.sent_aborts, 1);
    CHECK_EQ_I(fc.c.recv_tap.bad_tags, 0);
    CHECK_EQ_I(fc.c.relay_up_tap.bad_tags, 0);
    CHECK_EQ_U(atomic_load(&fc.c.relay_cnt.bytes), 0);
    CHECK_EQ_U(atomic_load(&fc.c.recv_cnt.bytes), 0);
out:
    fail_teardown(&fc);
}

/* Scripted origins: DATA 0, then an ABORT that is the origin's (hop-tagged) or a forgery
 * (untagged, or tagged in the relay's direction: reflected); then wait for the relay. */
static int origin_abort(struct chain *c, struct rd_transport *tp, int how)
{
    struct rd_buf *b;
    int rc = tp->ops->get_send_buf(tp, &b);
    if (rc)
        return rc;
    memset(b->data + RD_FRAME_HDR, 'd', CHUNK);
    b->len = rd_frame_seal(b->data, RD_DATA, 0, CHUNK, 0);
    struct rd_tagger *t = rd_tagger_new(c->send_agreed.stream_key);
    if (t)
        rd_frame_tag(t, RD_TAG_DOWN, b->data, b->data + RD_FRAME_HDR);
    rd_tagger_free(t);
    if ((rc = tp->ops->send(tp, b)) != RD_OK || (rc = tp->ops->get_send_buf(tp, &b)) != RD_OK)
        return rc;
    struct rd_reason why = { .code = RD_ESTREAM, .text = "origin gave up (scripted)" };
    uint32_t n = (uint32_t)rd_reason_encode(&why, b->data + RD_FRAME_HDR);
    if (how == 0) {
        rd_seal_hop(tp, b, RD_ABORT, n);
    } else {
        b->len = rd_frame_seal(b->data, RD_ABORT, 0, n, 99);
        if (how == 2) {
            struct rd_tagger *h = rd_tagger_new(tp->hop_key);
            if (h)
                rd_frame_tag(h, RD_TAG_HOP_UP, b->data, b->data + RD_FRAME_HDR);
            rd_tagger_free(h);
        }
    }
    if ((rc = tp->ops->send(tp, b)) != RD_OK)
        return rc;
    struct rd_buf *rb;
    struct rd_frame f;
    if (rd_recv_ctrl_quiet(tp, 5000, &rb, &f) == RD_OK)   /* the relay's ABORT back, or its hang-up */
        tp->ops->release(tp, rb);
    return RD_ESTREAM;
}

static int origin_abort_tagged(struct chain *c, struct rd_transport *tp) { return origin_abort(c, tp, 0); }
static int origin_abort_untagged(struct chain *c, struct rd_transport *tp) { return origin_abort(c, tp, 1); }
static int origin_abort_reflected(struct chain *c, struct rd_transport *tp) { return origin_abort(c, tp, 2); }

/* The origin's own ABORT: the relay relays its reason, as "sender: ...", in its own ABORT. */
static void t_origin_script_abort(void)
{
    struct fail_case fc;
    fail_setup(&fc, 1, 34);
    fc.c.origin_script = origin_abort_tagged;
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_I(fc.c.relay_rc, RD_ESTREAM);
    CHECK_EQ_I(fc.c.recv_rc, RD_ESTREAM);
    CHECK_STR_EQ(fc.c.recv_tap.said, "sender: origin gave up (scripted)");
    CHECK_STR_EQ(fc.c.relay_down_tap.sent_text, "sender: origin gave up (scripted)");
    CHECK_EQ_I(fc.c.relay_down_tap.sent_aborts, 1);
    CHECK_EQ_I(fc.c.recv_tap.bad_tags, 0);
    CHECK_EQ_U(atomic_load(&fc.c.relay_cnt.frames), 1);   /* DATA 0 went on, the ABORT did not */
    CHECK_EQ_U(atomic_load(&fc.c.recv_cnt.frames), 1);
    CHECK_HAS(rd_error_msg(), "sender: origin gave up (scripted)");
out:
    fail_teardown(&fc);
}

/* A forged ABORT upstream (no hop tag, or the relay's own direction's): refused. The relay
 * says why, and the forger's text goes nowhere. */
static void forged_abort_case(int (*script)(struct chain *, struct rd_transport *))
{
    struct fail_case fc;
    fail_setup(&fc, 1, 35);
    fc.c.origin_script = script;
    fc.c.forged_up = 1;
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_I(fc.c.relay_rc, RD_ESTREAM);
    CHECK_HAS(fc.c.relay_down_tap.sent_text, "sender mem:a sent an ABORT that fails its authentication tag");
    check_told(&fc.c.recv_tap, "receiver", "fails its authentication tag", __LINE__);
    check_told(&fc.c.origin_tap, "origin", "fails its authentication tag", __LINE__);
    CHECK(!strstr(fc.c.recv_tap.said, "scripted"));
    CHECK_EQ_I(fc.c.recv_tap.bad_tags, 0);
    CHECK_EQ_I(fc.c.origin_tap.bad_tags, 0);   /* the relay's ABORT upstream is tagged for link 1 */
    CHECK_EQ_U(atomic_load(&fc.c.recv_cnt.frames), 1);
    CHECK_HAS(rd_error_msg(), "fails its authentication tag");
out:
    fail_teardown(&fc);
}

static void t_origin_abort_untagged(void) { forged_abort_case(origin_abort_untagged); }
static void t_origin_abort_reflected(void) { forged_abort_case(origin_abort_reflected); }

/* The origin's real ABORT with its hop tag damaged on link 1: it is nobody's word; the relay
 * refuses it (the texts are the shared error here; forged_abort_case pins them). */
static void t_origin_abort_damaged(void)
{
    struct fail_case fc;
    fail_setup(&fc, 1, 31);
    fc.c.in_path = "/proc/self/mem";
    fc.c.origin_faults.corrupt_frame = 2;   /* origin frames: 0 HELLO, 1 AUTH, 2 ABORT */
    fc.c.origin_faults.corrupt_offset = RD_HDR_TAG + 7;
    fc.c.origin_faults.corrupt_xor = 0x10;
    fc.c.forged_up = 1;
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_I(fc.c.origin_tap.sent_aborts, 1);
    CHECK_EQ_I(fc.c.relay_down_tap.sent_aborts, 1);
    CHECK_EQ_I(fc.c.recv_tap.bad_tags, 0);
    CHECK_EQ_U(atomic_load(&fc.c.recv_cnt.bytes), 0);
out:
    fail_teardown(&fc);
}

/* Without the end-to-end stream key, each end tags with its own link's session key: the
 * receiver cannot verify a single chunk, and nobody succeeds. (What rdpipe's
 * RDPIPE_STREAM_KEY is for.) */
static void t_no_end_to_end_key(void)
{
    struct fail_case fc;
    fail_setup(&fc, 10 * CHUNK, 32);
    fc.c.no_stream_key = 1;
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_HAS(fc.c.recv_tap.sent_text, "chunk 0 (bytes 0..4096) fails its authentication tag");
    CHECK_EQ_U(atomic_load(&fc.c.recv_cnt.bytes), 0);
    check_told(&fc.c.origin_tap, "origin", "authentication tag", __LINE__);
out:
    fail_teardown(&fc);
}

/* The receiver wrote everything but its CONFIRM is lost: the relay must not confirm
 * upstream on its own. */
static void t_downstream_confirm_lost(void)
{
    struct fail_case fc;
    fail_setup(&fc, 5 * CHUNK, 28);
    fc.c.recv_faults.kill_after = CONFIRM_FRAME;
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    check_all_failed(&fc, __LINE__);
    CHECK_EQ_U(atomic_load(&fc.c.relay_cnt.bytes), 5 * CHUNK);
    CHECK_EQ_U(atomic_load(&fc.c.recv_cnt.bytes), 5 * CHUNK);
    check_told(&fc.c.origin_tap, "origin", "link killed", __LINE__);
out:
    fail_teardown(&fc);
}

/* The receiver's CONFIRM is damaged on its way to the relay (its totals): the receiver is done,
 * but the relay sees it confirms another stream than the one relayed, so the origin must fail. */
static void t_downstream_confirm_corrupt(void)
{
    struct fail_case fc;
    fail_setup(&fc, 5 * CHUNK, 29);
    fc.c.recv_faults.corrupt_frame = CONFIRM_FRAME;
    fc.c.recv_faults.corrupt_offset = RD_FRAME_HDR + 3;
    fc.c.recv_faults.corrupt_xor = 0x40;
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    CHECK_EQ_I(fc.c.recv_rc, RD_OK);
    CHECK(fc.c.relay_rc != RD_OK && fc.c.relay_rc != -1);
    CHECK(fc.c.send_rc != RD_OK && fc.c.send_rc != -1);
    CHECK_EQ_I(fc.c.origin_tap.confirms, 0);
    check_told(&fc.c.origin_tap, "origin", "confirmed another stream", __LINE__);
    check_output_whole(&fc, __LINE__);
out:
    fail_teardown(&fc);
}

/* The receiver's CONFIRM has its tag damaged on its way: the relay holds no stream key, cannot
 * tell, and passes it on as it came (its totals match); the origin checks the tag and fails.
 * So a relay cannot confirm a stream on the receiver's behalf. */
static void t_downstream_confirm_tag_corrupt(void)
{
    struct fail_case fc;
    fail_setup(&fc, 5 * CHUNK, 33);
    fc.c.recv_faults.corrupt_frame = CONFIRM_FRAME;
    fc.c.recv_faults.corrupt_offset = RD_HDR_TAG + 15;
    fc.c.recv_faults.corrupt_xor = 0x01;
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    CHECK_EQ_I(fc.c.recv_rc, RD_OK);
    CHECK_EQ_I(fc.c.relay_rc, RD_OK);
    CHECK_EQ_I(fc.c.send_rc, RD_ESTREAM);
    CHECK_EQ_I(fc.c.origin_tap.confirms, 1);
    /* what the origin got is what the relay got: the damaged frame */
    CHECK_EQ_U(fc.c.origin_tap.confirm_got_len, RD_FRAME_HDR + RD_END_LEN);
    CHECK_MEM_EQ(fc.c.origin_tap.confirm_got, fc.c.relay_down_tap.confirm_got, RD_FRAME_HDR + RD_END_LEN);
    CHECK_MEM_NE(fc.c.origin_tap.confirm_got, fc.c.recv_tap.confirm_sent, RD_FRAME_HDR + RD_END_LEN);
    check_output_whole(&fc, __LINE__);
out:
    fail_teardown(&fc);
}

/* The relay's CONFIRM to the origin is lost: the receiver succeeded, the origin must not. */
static void t_upstream_confirm_lost(void)
{
    struct fail_case fc;
    fail_setup(&fc, 5 * CHUNK, 30);
    fc.c.relay_up_faults.kill_after = CONFIRM_FRAME;
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    CHECK_EQ_I(fc.c.recv_rc, RD_OK);
    CHECK(fc.c.relay_rc != RD_OK && fc.c.relay_rc != -1);
    CHECK(fc.c.send_rc != RD_OK && fc.c.send_rc != -1);
    CHECK_EQ_I(fc.c.origin_tap.confirms, 0);
    check_output_whole(&fc, __LINE__);
out:
    fail_teardown(&fc);
}

/* END and both CONFIRMs arrive, but every drain fails after them (over RDMA a peer that has
 * END or CONFIRM can disconnect before the acknowledgement arrives): every end succeeds. */
static void t_confirm_drains_fail(void)
{
    struct fail_case fc;
    fail_setup(&fc, 5 * CHUNK + 3, 31);
    fc.c.recv_faults.drain_fails = 1;
    fc.c.relay_up_faults.drain_fails = 1;
    fc.c.relay_down_faults.drain_fails = 1;
    fc.c.origin_faults.drain_fails = 1;
    CHECK_OR(fail_run(&fc) == 0, goto out);
    check_sessions_ok(&fc, __LINE__);
    CHECK_EQ_I(fc.c.recv_rc, RD_OK);
    CHECK_EQ_I(fc.c.relay_rc, RD_OK);
    CHECK_EQ_I(fc.c.send_rc, RD_OK);
    CHECK_EQ_I(fc.c.origin_tap.confirms, 1);
    check_output_whole(&fc, __LINE__);
out:
    fail_teardown(&fc);
}

static void before_each(void)
{
    rd_error_clear();
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    check_watchdog(CASE_TIMEOUT_S);
    rd_set_progname("test_relay");
    check_before_each = before_each;
    RUN(t_size_0);
    RUN(t_size_1);
    RUN(t_size_chunk_minus_1);
    RUN(t_size_chunk);
    RUN(t_size_chunk_plus_1);
    RUN(t_many_chunks);
    RUN(t_many_chunks_sent_later);
    RUN(t_depth_1);
    RUN(t_shallower_downstream);
    RUN(t_corrupt_payload_upstream);
    RUN(t_corrupt_header_tag_upstream);
    RUN(t_corrupt_payload_downstream);
    RUN(t_dropped_frame_upstream);
    RUN(t_duplicated_frame_upstream);
    RUN(t_reordered_frames_upstream);
    RUN(t_dropped_last_frame_upstream);
    RUN(t_downstream_link_killed);
    RUN(t_downstream_link_killed_sent_later);
    RUN(t_upstream_link_killed);
    RUN(t_receiver_write_error);
    RUN(t_origin_read_error);
    RUN(t_origin_abort_damaged);
    RUN(t_origin_script_abort);
    RUN(t_origin_abort_untagged);
    RUN(t_origin_abort_reflected);
    RUN(t_no_end_to_end_key);
    RUN(t_downstream_confirm_lost);
    RUN(t_confirm_drains_fail);
    RUN(t_downstream_confirm_corrupt);
    RUN(t_downstream_confirm_tag_corrupt);
    RUN(t_upstream_confirm_lost);
    return check_summary();
}
