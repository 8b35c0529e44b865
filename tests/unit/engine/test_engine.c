/* test_engine.c - handshake + stream engine, sender and receiver in two threads over the
 * in-memory transport, from files or pipes to files or pipes, with injected faults.
 *
 * Note: rd_fail() keeps one error per process, and here both peers share the process, so a
 * message may come from either side; the return codes are per side. Every case clears the
 * error first, and a watchdog (alarm) turns a hang into a failure. */
#include "check.h"
#include "mem_transport.h"
#include "testfiles.h"

#include "wire/rd_auth.h"
#include "engine/rd_defer.h"
#include "engine/rd_engine.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"
#include "engine/rd_io.h"
#include "wire/rd_proto.h"
#include "wire/rd_tag.h"
#include "transport/rd_session.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define CHUNK 4096u          /* the smallest chunk: many frames from little data */
#define CASE_TIMEOUT_S 30    /* a case that takes longer hangs */

static const char secret[] = "engine test key";

/* ---- helpers: messages ---- */

/* msg says "version N" (or "versions A..B" with n == A or n == B) */
static int names_version(const char *msg, unsigned n)
{
    for (const char *p = msg; (p = strstr(p, "version")) != NULL; p++) {
        const char *q = p + 7;
        while (*q == ' ' || *q == 's')
            q++;
        char *end;
        unsigned long v = strtoul(q, &end, 10);
        if (end != q && v == n)
            return 1;
        if (end != q && strncmp(end, "..", 2) == 0) {
            q = end + 2;
            v = strtoul(q, &end, 10);
            if (end != q && v == n)
                return 1;
        }
    }
    return 0;
}

/* ---- one transfer: sender and receiver threads ---- */

struct xfer {
    /* set up by the case */
    const char *in_path, *out_path;
    const char *send_secret, *recv_secret;
    struct rd_params want, limits;
    struct mem_faults send_faults, recv_faults;
    /* results */
    int send_session_rc, send_rc;   /* send_rc: the session's rc if it failed, else the engine's */
    int recv_session_rc, recv_rc;
    struct rd_params send_agreed, recv_agreed;
    struct rd_counters send_cnt, recv_cnt;
    struct rd_transport *a, *b;      /* a = sender's end, b = receiver's end */
    int by_ref;                      /* the sender's end has send_ref (as TCP has) */
    struct rd_source *custom;        /* the sender's source, when not in_path (a producer) */
    unsigned long frames_by_ref;     /* result: frames it sent that way */
    atomic_int send_done, recv_done;
};

static void xfer_init(struct xfer *x, const char *in, const char *out)
{
    memset(x, 0, sizeof *x);
    x->in_path = in;
    x->out_path = out;
    x->send_secret = x->recv_secret = secret;
    x->want = (struct rd_params){ .chunk_size = CHUNK, .depth = 4 };
    x->limits = (struct rd_params){ .chunk_size = CHUNK, .depth = 4 };
    mem_faults_none(&x->send_faults);
    mem_faults_none(&x->recv_faults);
    x->send_rc = x->recv_rc = x->send_session_rc = x->recv_session_rc = -1;
}

static void *sender_main(void *arg)
{
    struct xfer *x = arg;
    struct rd_source src;
    struct rd_key k;
    x->send_rc = x->custom ? RD_OK : rd_source_open(&src, x->in_path, 0);
    if (x->send_rc == RD_OK) {
        rd_key_derive(&k, x->send_secret, strlen(x->send_secret));
        x->send_rc = x->send_session_rc = rd_session_sender(x->a, &k, &x->want, &x->send_agreed);
        x->send_agreed.compress_mode = x->want.compress_mode;   /* local, as rd_run sets it */
        x->send_agreed.compress_level = x->want.compress_level;
        x->send_agreed.lanes = x->want.lanes;
        if (x->send_rc == RD_OK)
            x->send_rc = rd_engine_send(x->a, x->custom ? x->custom : &src, &x->send_agreed, &x->send_cnt);
        if (!x->custom)
            rd_source_close(&src);
        rd_key_wipe(&k);
    }
    x->frames_by_ref = mem_frames_by_ref(x->a);   /* a is gone after close */
    x->a->ops->close(x->a);   /* as rdsend does when it exits */
    atomic_store(&x->send_done, 1);
    return NULL;
}

static void *receiver_main(void *arg)
{
    struct xfer *x = arg;
    struct rd_sink dst;
    struct rd_key k;
    x->recv_rc = rd_sink_open(&dst, x->out_path);
    if (x->recv_rc == RD_OK) {
        rd_key_derive(&k, x->recv_secret, strlen(x->recv_secret));
        x->recv_rc = x->recv_session_rc = rd_session_receiver(x->b, &k, &x->limits, &x->recv_agreed);
        if (x->recv_rc == RD_OK)
            x->recv_rc = rd_sink_begin(&dst);
        if (x->recv_rc == RD_OK)
            x->recv_rc = rd_engine_recv(x->b, &dst, &x->recv_agreed, &x->recv_cnt);
        rd_sink_close(&dst);
        rd_key_wipe(&k);
    }
    x->b->ops->close(x->b);
    atomic_store(&x->recv_done, 1);
    return NULL;
}

static pthread_t g_sender, g_receiver;

/* Start both sides; xfer_wait joins them. 0 or -1. */
static int xfer_start(struct xfer *x)
{
    if (mem_pair(&x->a, &x->b) != RD_OK)
        return -1;
    mem_set_faults(x->a, &x->send_faults);
    mem_set_faults(x->b, &x->recv_faults);
    if (x->by_ref)
        mem_use_send_ref(x->a);
    if (rd_thread_create(&g_receiver, NULL, receiver_main, x))
        return -1;
    if (rd_thread_create(&g_sender, NULL, sender_main, x))
        return -1;
    return 0;
}

static void xfer_wait(void)
{
    pthread_join(g_sender, NULL);
    pthread_join(g_receiver, NULL);
}

static int xfer_run(struct xfer *x)
{
    if (xfer_start(x))
        return -1;
    xfer_wait();
    return 0;
}

/* The file at path holds exactly data[0..n). */
static void expect_file_is(const char *path, const uint8_t *data, size_t n)
{
    size_t got_n = 0;
    uint8_t *got = read_file(path, &got_n);
    CHECK_OR(got, return);
    CHECK_EQ_U(got_n, n);
    if (got_n == n)
        CHECK_MEM_EQ(got, data, n);
    free(got);
}

/* ---- whole transfers that must succeed ---- */

/* Send n random bytes file to file and check everything about the result. */
static void roundtrip_file(size_t n, uint32_t chunk, uint32_t depth, uint64_t seed)
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
    struct xfer x;
    xfer_init(&x, in, out);
    x.want = (struct rd_params){ .chunk_size = chunk, .depth = depth };
    x.limits = x.want;
    CHECK_OR(xfer_run(&x) == 0, goto done);
    CHECK_EQ_I(x.send_rc, RD_OK);
    CHECK_EQ_I(x.recv_rc, RD_OK);
    if (x.send_rc || x.recv_rc)
        check_fail_at(__FILE__, __LINE__, "error: %s", rd_error_msg());
    CHECK_EQ_U(x.send_agreed.chunk_size, chunk);
    CHECK_EQ_U(x.recv_agreed.chunk_size, chunk);
    CHECK_EQ_U(atomic_load(&x.send_cnt.bytes), n);
    CHECK_EQ_U(atomic_load(&x.recv_cnt.bytes), n);
    uint64_t frames = (n + chunk - 1) / chunk;
    CHECK_EQ_U(atomic_load(&x.recv_cnt.frames), frames);
    expect_file_is(out, data, n);
done:
    free(data);
    unlink(in);
    unlink(out);
}

static void t_size_0(void) { roundtrip_file(0, CHUNK, 4, 1); }
static void t_size_1(void) { roundtrip_file(1, CHUNK, 4, 2); }
static void t_size_4095(void) { roundtrip_file(4095, CHUNK, 4, 3); }
static void t_size_chunk_minus_1(void) { roundtrip_file(16384 - 1, 16384, 4, 4); }
static void t_size_chunk(void) { roundtrip_file(CHUNK, CHUNK, 4, 5); }
static void t_size_chunk_plus_1(void) { roundtrip_file(CHUNK + 1, CHUNK, 4, 6); }
static void t_size_two_chunks(void) { roundtrip_file(2 * CHUNK, CHUNK, 1, 7); }
static void t_many_small_chunks(void) { roundtrip_file(37 * CHUNK + 123, CHUNK, 4, 8); }
static void t_depth_1(void) { roundtrip_file(20 * CHUNK + 1, CHUNK, 1, 9); }
static void t_bigger_chunks(void) { roundtrip_file((3u << 20) + 17, 65536, 8, 10); }

/* A page-cached input file over a transport that has send_ref (as TCP): n bytes with `caps`
 * (RD_FLAG_ENCRYPTED and the ciphers' bits, or 0) and compression mode `compress`; returns how many frames went by
 * send_ref, or -1 when the transfer failed (checked here). */
static long by_ref_case(size_t n, uint32_t caps, int compress, uint64_t seed)
{
    char in[256], out[256];
    long refs = -1;
    temp_path(in, sizeof in, "in");
    temp_path(out, sizeof out, "out");
    uint8_t *data = random_bytes(n, seed);
    if (compress)
        memset(data, 'z', n / 2);   /* half of it shrinks */
    CHECK_OR(write_file(in, data, n) == 0, goto done);
    struct xfer x;
    xfer_init(&x, in, out);
    x.by_ref = 1;
    x.want.caps = x.limits.caps = caps | (compress ? RD_FLAG_COMPRESSED : 0);
    x.want.compress_mode = compress;
    x.want.compress_level = 1;
    CHECK_OR(xfer_run(&x) == 0, goto done);
    CHECK_EQ_I(x.send_rc, RD_OK);
    CHECK_EQ_I(x.recv_rc, RD_OK);
    if (x.send_rc || x.recv_rc)
        check_fail_at(__FILE__, __LINE__, "error: %s", rd_error_msg());
    CHECK_EQ_U(x.recv_agreed.caps & RD_FLAG_ENCRYPTED, caps & RD_FLAG_ENCRYPTED);
    expect_file_is(out, data, n);
    refs = (long)x.frames_by_ref;
done:
    free(data);
    unlink(in);
    unlink(out);
    return refs;
}

/* A cached file's chunks go out of the frames the lanes read them into, plain, encrypted or
 * compressed: what is sent is what was tagged (send_ref is a relay's, for a received
 * payload). */
static void t_cached_file_sent_from_its_frames(void)
{
    CHECK_EQ_I(by_ref_case(3 * CHUNK + 1000, 0, 0, 41), 0);
    CHECK_EQ_I(by_ref_case(3 * CHUNK + 1000, RD_FLAG_ENCRYPTED, 0, 42), 0);
    CHECK_EQ_I(by_ref_case(3 * CHUNK + 1001, RD_FLAG_ENCRYPTED | RD_FLAG_AES_GCM, 0, 44), 0);
    CHECK_EQ_I(by_ref_case(3 * CHUNK + 1002, RD_FLAG_ENCRYPTED | RD_FLAG_AES_GCM | RD_FLAG_AES_OCB, 2, 45), 0);
    CHECK_EQ_I(by_ref_case(3 * CHUNK + 1000, 0, 2, 43), 0);
}

/* The receiver grants less than asked; both sides use what it granted. */
static void t_receiver_limits_win(void)
{
    char in[256], out[256];
    temp_path(in, sizeof in, "in");
    temp_path(out, sizeof out, "out");
    size_t n = 100000;
    uint8_t *data = random_bytes(n, 11);
    CHECK_OR(write_file(in, data, n) == 0, goto done);
    struct xfer x;
    xfer_init(&x, in, out);
    x.want = (struct rd_params){ .chunk_size = 1u << 20, .depth = 16 };
    x.limits = (struct rd_params){ .chunk_size = 16384, .depth = 3 };
    CHECK_OR(xfer_run(&x) == 0, goto done);
    CHECK_EQ_I(x.send_rc, RD_OK);
    CHECK_EQ_I(x.recv_rc, RD_OK);
    CHECK_EQ_U(x.send_agreed.chunk_size, 16384);
    CHECK_EQ_U(x.send_agreed.depth, 3);
    CHECK_EQ_U(x.recv_agreed.chunk_size, 16384);
    CHECK_EQ_U(x.recv_agreed.depth, 3);
    CHECK_EQ_U(atomic_load(&x.recv_cnt.frames), (n + 16383) / 16384);
    expect_file_is(out, data, n);
done:
    free(data);
    unlink(in);
    unlink(out);
}

/* Pipes at both ends, a producer that writes in odd pieces with pauses. */
struct feeder {
    int fd;
    const uint8_t *data;
    size_t n;
    int keep_open;          /* do not close after the data: a stalled producer */
    atomic_int stop;
};

static void *feeder_main(void *arg)
{
    struct feeder *f = arg;
    size_t off = 0, piece = 1;
    while (off < f->n) {
        size_t k = piece < f->n - off ? piece : f->n - off;
        ssize_t w = write(f->fd, f->data + off, k);
        if (w <= 0)
            break;
        off += (size_t)w;
        piece = piece * 3 + 7;
        if (piece > 50000)
            piece = 1;
        if (off % 3 == 0) {
            struct timespec ts = { 0, 2 * 1000000L };
            nanosleep(&ts, NULL);
        }
    }
    while (f->keep_open && !atomic_load(&f->stop)) {
        struct timespec ts = { 0, 5 * 1000000L };
        nanosleep(&ts, NULL);
    }
    close(f->fd);
    return NULL;
}

struct drainer {
    int fd;
    uint8_t *buf;
    size_t cap, n;
};

static void *drainer_main(void *arg)
{
    struct drainer *d = arg;
    for (;;) {
        if (d->n == d->cap) {
            d->cap = d->cap ? d->cap * 2 : 65536;
            d->buf = realloc(d->buf, d->cap);
        }
        ssize_t r = read(d->fd, d->buf + d->n, d->cap - d->n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        d->n += (size_t)r;
    }
    close(d->fd);
    return NULL;
}

static void t_pipe_to_pipe(void)
{
    size_t n = 300000;
    uint8_t *data = random_bytes(n, 12);
    int pin[2], pout[2];
    CHECK_OR(pipe(pin) == 0 && pipe(pout) == 0, { free(data); return; });
    char in[64], out[64];
    snprintf(in, sizeof in, "/dev/fd/%d", pin[0]);
    snprintf(out, sizeof out, "/dev/fd/%d", pout[1]);
    struct feeder f = { .fd = pin[1], .data = data, .n = n };
    struct drainer d = { .fd = pout[0] };
    pthread_t tf, td;
    rd_thread_create(&tf, NULL, feeder_main, &f);
    rd_thread_create(&td, NULL, drainer_main, &d);
    struct xfer x;
    xfer_init(&x, in, out);
    CHECK(xfer_run(&x) == 0);
    close(pin[0]);    /* the source and sink opened their own descriptors */
    close(pout[1]);   /* now the drainer sees the end of the output */
    pthread_join(tf, NULL);
    pthread_join(td, NULL);
    CHECK_EQ_I(x.send_rc, RD_OK);
    CHECK_EQ_I(x.recv_rc, RD_OK);
    if (x.send_rc || x.recv_rc)
        check_fail_at(__FILE__, __LINE__, "error: %s", rd_error_msg());
    CHECK_EQ_U(d.n, n);
    if (d.n == n)
        CHECK_MEM_EQ(d.buf, data, n);
    /* a slow pipe gives partial chunks: more frames than a file would, but never empty ones */
    CHECK(atomic_load(&x.recv_cnt.frames) >= (n + CHUNK - 1) / CHUNK);
    CHECK(atomic_load(&x.recv_cnt.frames) <= n);
    free(d.buf);
    free(data);
}

/* ---- failures ---- */

struct fail_case {
    struct case_files f;
    struct xfer x;
};

/* A file of n random bytes and an output file holding CASE_PRECIOUS. */
static void fail_setup(struct fail_case *c, size_t n, uint64_t seed)
{
    case_files_make(&c->f, n, seed);
    xfer_init(&c->x, c->f.in, c->f.out);
}

static void fail_teardown(struct fail_case *c)
{
    case_files_remove(&c->f);
}

/* The output after a failed stream: a prefix of the input; with `strict`, not all of it
 * (when a chunk was lost or corrupt, the stream cannot have arrived whole). */
static void check_output_prefix(struct fail_case *c, int line, int strict)
{
    case_files_check_prefix(&c->f, __FILE__, line, strict);
}

#define check_partial_output(c, line) check_output_prefix(c, line, 1)

/* The output after a refused handshake: untouched. */
static void check_untouched_output(struct fail_case *c, int line)
{
    size_t got_n = 0;
    uint8_t *got = read_file(c->f.out, &got_n);
    if (!got || got_n != sizeof CASE_PRECIOUS - 1 || memcmp(got, CASE_PRECIOUS, got_n) != 0)
        check_fail_at(__FILE__, line, "the output file was changed by a refused sender");
    free(got);
}

static void t_wrong_key(void)
{
    struct fail_case c;
    fail_setup(&c, 10 * CHUNK, 20);
    c.x.send_secret = "not the engine test key";
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.send_session_rc, RD_EAUTH);
    CHECK_EQ_I(c.x.send_rc, RD_EAUTH);
    CHECK_EQ_I(c.x.recv_session_rc, RD_EAUTH);
    CHECK_EQ_I(c.x.recv_rc, RD_EAUTH);
    CHECK_EQ_U(atomic_load(&c.x.recv_cnt.bytes), 0);
    CHECK_HAS(rd_error_msg(), "auth");
    check_untouched_output(&c, __LINE__);
out:
    fail_teardown(&c);
}

/* Sender frames: 0 HELLO, 1 AUTH, 2 + i DATA seq i, then END. */
#define DATA_FRAME(i) (2 + (long)(i))

static void corrupt_case(size_t offset, uint8_t mask, const char *want_msg)
{
    struct fail_case c;
    fail_setup(&c, 10 * CHUNK, 21);
    c.x.send_faults.corrupt_frame = DATA_FRAME(1);
    c.x.send_faults.corrupt_offset = offset;
    c.x.send_faults.corrupt_xor = mask;
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.send_session_rc, RD_OK);
    CHECK_EQ_I(c.x.recv_session_rc, RD_OK);
    CHECK_EQ_I(c.x.recv_rc, RD_ESTREAM);
    CHECK(c.x.send_rc != RD_OK);
    CHECK_HAS(rd_error_msg(), want_msg);
    CHECK(atomic_load(&c.x.recv_cnt.bytes) <= CHUNK);   /* nothing after the bad chunk */
    check_partial_output(&c, __LINE__);
out:
    fail_teardown(&c);
}

static void t_corrupt_payload(void) { corrupt_case(RD_FRAME_HDR + 100, 0x01, "authentication tag"); }
static void t_corrupt_payload_last_byte(void) { corrupt_case(RD_FRAME_HDR + CHUNK - 1, 0x80, "authentication tag"); }
static void t_corrupt_header_tag(void) { corrupt_case(RD_HDR_TAG, 0x01, "chunk 1 (bytes 4096..8192) fails its authentication tag"); }
static void t_corrupt_header_tag_last_byte(void) { corrupt_case(RD_HDR_TAG + RD_TAG_LEN - 1, 0x80, "authentication tag"); }
static void t_corrupt_header_reserved(void) { corrupt_case(RD_FRAME_HDR - 1, 0x01, "flags"); }
static void t_corrupt_seq(void) { corrupt_case(16, 0x04, "out of order"); }
static void t_corrupt_flags(void) { corrupt_case(6, 0x08, "flags"); }   /* a bit no codec uses */
/* COMPRESSED set on the way: no raw length in the header, refused before anyone decompresses */
static void t_corrupt_flags_compressed(void) { corrupt_case(6, 0x01, "frame length out of range"); }
/* ENCRYPTED set on the way: the tag covers the flags, so it fails like any other header bit */
static void t_corrupt_flags_encrypted(void) { corrupt_case(6, 0x02, "authentication tag"); }
static void t_corrupt_magic(void) { corrupt_case(1, 0x20, "magic"); }
static void t_corrupt_length(void) { corrupt_case(9, 0x10, "protocol error"); }

static void fault_case(void (*set)(struct mem_faults *), size_t n, const char *want_msg, int strict)
{
    struct fail_case c;
    fail_setup(&c, n, 22);
    set(&c.x.send_faults);
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.send_session_rc, RD_OK);
    CHECK_EQ_I(c.x.recv_session_rc, RD_OK);
    CHECK_EQ_I(c.x.recv_rc, RD_ESTREAM);
    CHECK(c.x.send_rc != RD_OK);
    CHECK_HAS(rd_error_msg(), want_msg);
    check_output_prefix(&c, __LINE__, strict);
out:
    fail_teardown(&c);
}

static void drop_second(struct mem_faults *f) { f->drop_frame = DATA_FRAME(1); }
static void drop_last(struct mem_faults *f) { f->drop_frame = DATA_FRAME(9); }
static void dup_second(struct mem_faults *f) { f->dup_frame = DATA_FRAME(1); }
static void dup_last(struct mem_faults *f) { f->dup_frame = DATA_FRAME(9); }
static void reorder_second(struct mem_faults *f) { f->reorder_frame = DATA_FRAME(1); }
static void reorder_last_and_end(struct mem_faults *f) { f->reorder_frame = DATA_FRAME(9); }

static void t_dropped_frame(void) { fault_case(drop_second, 10 * CHUNK, "out of order", 1); }
/* END's seq is the number of DATA frames: a lost last frame shows as END out of order */
static void t_dropped_last_frame(void) { fault_case(drop_last, 10 * CHUNK, "out of order", 1); }
static void t_duplicated_frame(void) { fault_case(dup_second, 10 * CHUNK, "out of order", 1); }
/* every byte arrived before the duplicate: the output may be whole, the transfer still fails */
static void t_duplicated_last_frame(void) { fault_case(dup_last, 10 * CHUNK, "out of order", 0); }
static void t_reordered_frames(void) { fault_case(reorder_second, 10 * CHUNK, "out of order", 1); }
/* END overtakes the last DATA frame: END (seq 10) comes where DATA 9 should. */
static void t_end_before_last_frame(void) { fault_case(reorder_last_and_end, 10 * CHUNK, "out of order", 1); }

/* The link dies while DATA flows (after HELLO, AUTH, DATA 0..2). */
static void t_link_killed_mid_stream(void)
{
    struct fail_case c;
    fail_setup(&c, 40 * CHUNK, 23);
    c.x.send_faults.kill_after = DATA_FRAME(3);
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.send_session_rc, RD_OK);
    CHECK_EQ_I(c.x.recv_session_rc, RD_OK);
    CHECK(c.x.send_rc != RD_OK);
    CHECK(c.x.recv_rc != RD_OK);
    CHECK_EQ_U(atomic_load(&c.x.recv_cnt.frames), 3);   /* exactly what got through was written */
    check_partial_output(&c, __LINE__);
out:
    fail_teardown(&c);
}

/* The link dies right after the last byte arrived, before CONFIRM: the receiver has
 * everything, but the sender must not report success without the confirmation. */
static void t_link_killed_before_confirm(void)
{
    struct fail_case c;
    fail_setup(&c, 5 * CHUNK, 24);
    c.x.recv_faults.kill_after = 2;   /* receiver frames: 0 CHALLENGE, 1 ACCEPT, 2 CONFIRM */
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.send_session_rc, RD_OK);
    CHECK_EQ_I(c.x.recv_session_rc, RD_OK);
    CHECK(c.x.send_rc != RD_OK);
    CHECK(c.x.recv_rc != RD_OK);
out:
    fail_teardown(&c);
}

/* Every frame arrives, but one end's drain fails after its last send (over RDMA a peer that
 * has END or CONFIRM can disconnect before the acknowledgement arrives, and the send completes
 * flushed): the receiver has sent CONFIRM and the sender has it, so both ends succeed. */
static void drain_fails_case(int on_sender, size_t n, uint64_t seed)
{
    struct fail_case c;
    fail_setup(&c, n, seed);
    (on_sender ? &c.x.send_faults : &c.x.recv_faults)->drain_fails = 1;
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.send_rc, RD_OK);
    CHECK_EQ_I(c.x.recv_rc, RD_OK);
    case_files_check_whole(&c.f, __FILE__, __LINE__);
out:
    fail_teardown(&c);
}

static void t_drain_fails_after_confirm(void)
{
    drain_fails_case(0, 5 * CHUNK + 7, 27);
}

static void t_sender_drain_fails_after_end(void)
{
    drain_fails_case(1, 4 * CHUNK + 11, 28);
}

/* The link dies during the handshake (after HELLO). */
static void t_link_killed_in_handshake(void)
{
    struct fail_case c;
    fail_setup(&c, 5 * CHUNK, 25);
    c.x.send_faults.kill_after = 1;
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK(c.x.send_session_rc != RD_OK && c.x.send_session_rc != -1);
    CHECK(c.x.recv_session_rc != RD_OK && c.x.recv_session_rc != -1);
    check_untouched_output(&c, __LINE__);
out:
    fail_teardown(&c);
}

/* The producer stalls (a pipe that stays open and quiet) and the link dies: the sender
 * must give up instead of waiting for input forever. */
static void t_link_killed_with_stalled_input(void)
{
    size_t n = 3 * CHUNK + 5;
    uint8_t *data = random_bytes(n, 26);
    char out[256];
    temp_path(out, sizeof out, "out");
    int pin[2];
    CHECK_OR(pipe(pin) == 0, { free(data); unlink(out); return; });
    char in[64];
    snprintf(in, sizeof in, "/dev/fd/%d", pin[0]);
    struct feeder f = { .fd = pin[1], .data = data, .n = n, .keep_open = 1 };
    pthread_t tf;
    rd_thread_create(&tf, NULL, feeder_main, &f);
    struct xfer x;
    xfer_init(&x, in, out);
    CHECK_OR(xfer_start(&x) == 0, goto out);
    /* wait until all the data arrived, then pull the cable */
    for (int i = 0; i < 1000 && atomic_load(&x.recv_cnt.bytes) < n; i++) {
        struct timespec ts = { 0, 5 * 1000000L };
        nanosleep(&ts, NULL);
    }
    CHECK_EQ_U(atomic_load(&x.recv_cnt.bytes), n);
    CHECK(!atomic_load(&x.send_done) && !atomic_load(&x.recv_done));   /* still streaming */
    mem_kill(x.a);
    xfer_wait();
    CHECK(x.send_rc != RD_OK);
    CHECK(x.recv_rc != RD_OK);
out:
    atomic_store(&f.stop, 1);
    pthread_join(tf, NULL);
    close(pin[0]);
    free(data);
    unlink(out);
}

/* A producer that leaves every chunk's bytes to the lanes (struct rd_defer), as rdcp leaves
 * a big file's, and at its end waits for their reads (engine/rd_defer) before it says END. */
struct deferring {
    struct rd_source src;
    struct rd_defer_wait w;
    int fd;                /* the data */
    uint64_t size;
    _Atomic uint64_t pos;  /* read by the test while the engine's reader fills */
    long read_ms;          /* each lane read takes this long */
};

static ssize_t deferring_fill(void *ctx, void *buf, size_t cap)
{
    (void)buf;
    struct deferring *d = ctx;
    if (d->pos < d->size) {   /* a chunk of parts, its bytes left to a lane */
        size_t len = d->size - d->pos < cap ? (size_t)(d->size - d->pos) : cap;
        d->src.defer->seg[d->src.defer->n++] = (struct rd_defer_seg){ .at = 0, .len = (uint32_t)len, .off = d->pos, .fd = d->fd };
        rd_defer_wait_add(&d->w);
        d->pos += len;
        return (ssize_t)len;
    }
    int rc = rd_defer_wait_all(&d->w, d->src.stop);
    return rc == RD_DEFER_STOPPED ? -1 : rc ? rd_fail(RD_EIO, "a lane's read failed") : 0;
}

static int deferring_read(void *ctx, unsigned char *payload, const struct rd_defer *def)
{
    struct deferring *d = ctx;
    for (unsigned i = 0; i < def->n; i++) {
        struct timespec ts = { d->read_ms / 1000, (d->read_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
        const struct rd_defer_seg *g = &def->seg[i];
        ssize_t n = pread(g->fd, payload + g->at, g->len, (off_t)g->off);
        rd_defer_wait_done(&d->w, n == (ssize_t)g->len ? 0 : -1);
    }
    return RD_OK;
}

/* The lanes read every chunk (1 lane, then 3): the output is the input, byte for byte. */
static void deferred_case(unsigned lanes, size_t n, uint64_t seed)
{
    struct fail_case c;
    fail_setup(&c, n, seed);
    struct deferring d = { .size = n, .fd = open(c.f.in, O_RDONLY | O_CLOEXEC) };
    CHECK_OR(d.fd >= 0, goto out);
    rd_defer_wait_init(&d.w);
    rd_source_custom(&d.src, "deferring", deferring_fill, &d);
    rd_source_defer_reads(&d.src, deferring_read);
    c.x.custom = &d.src;
    c.x.want.lanes = lanes;
    CHECK_OR(xfer_run(&c.x) == 0, goto close);
    CHECK_EQ_I(c.x.send_rc, RD_OK);
    CHECK_EQ_I(c.x.recv_rc, RD_OK);
    case_files_check_whole(&c.f, __FILE__, __LINE__);
close:
    rd_defer_wait_destroy(&d.w);
    close(d.fd);
out:
    fail_teardown(&c);
}

static void t_deferred_reads_one_lane(void) { deferred_case(1, 37 * CHUNK + 11, 41); }
static void t_deferred_reads_three_lanes(void) { deferred_case(3, 53 * CHUNK + 3, 42); }

/* The link dies while the producer waits for its parts, with some of them still queued
 * behind a slow read on the only lane: the engine shuts the lanes, which leave those parts
 * unread, so only the stop flag can end the producer's wait. Both ends fail, and at once: a
 * wait that missed the flag would hang the sender for good. */
static void t_link_killed_while_producer_waits_for_lanes(void)
{
    struct fail_case c;
    fail_setup(&c, 6 * CHUNK, 43);
    struct deferring d = { .size = 6 * CHUNK, .read_ms = 300, .fd = open(c.f.in, O_RDONLY | O_CLOEXEC) };
    CHECK_OR(d.fd >= 0, goto out);
    rd_defer_wait_init(&d.w);
    rd_source_custom(&d.src, "deferring", deferring_fill, &d);
    rd_source_defer_reads(&d.src, deferring_read);
    c.x.custom = &d.src;
    c.x.want.lanes = 1;
    c.x.want.depth = c.x.limits.depth = 16;   /* a buffer for every chunk: the producer waits in its fill */
    CHECK_OR(xfer_start(&c.x) == 0, goto close);
    for (int i = 0; i < 400 && d.pos < d.size; i++) {   /* every part handed over */
        struct timespec ts = { 0, 5 * 1000000L };
        nanosleep(&ts, NULL);
    }
    CHECK_EQ_U(d.pos, d.size);
    mem_kill(c.x.a);
    double t0 = rd_now();
    while (!atomic_load(&c.x.send_done) && rd_now() - t0 < 10) {
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
    }
    if (!atomic_load(&c.x.send_done)) {
        /* its thread cannot be joined: say so and end the whole test here */
        printf("FAIL t_link_killed_while_producer_waits_for_lanes: the sender still waits for its lanes 10 s after the link died\n");
        fflush(stdout);
        _exit(1);
    }
    xfer_wait();
    CHECK(c.x.send_rc != RD_OK);
    CHECK(c.x.recv_rc != RD_OK);
close:
    rd_defer_wait_destroy(&d.w);
    close(d.fd);
out:
    fail_teardown(&c);
}

/* END is damaged in flight (its stream hash, or its tag): every byte arrived, but the
 * receiver must not confirm a stream it cannot vouch for. */
static void corrupt_end_case(size_t offset)
{
    struct fail_case c;
    fail_setup(&c, 10 * CHUNK, 30);
    c.x.send_faults.corrupt_frame = DATA_FRAME(10);   /* END */
    c.x.send_faults.corrupt_offset = offset;
    c.x.send_faults.corrupt_xor = 0x01;
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.recv_session_rc, RD_OK);
    CHECK_EQ_I(c.x.recv_rc, RD_ESTREAM);
    CHECK(c.x.send_rc != RD_OK);
    CHECK_HAS(rd_error_msg(), "END from sender mem:a fails its authentication tag");
    CHECK_EQ_U(atomic_load(&c.x.recv_cnt.bytes), 10 * CHUNK);
    check_output_prefix(&c, __LINE__, 0);
out:
    fail_teardown(&c);
}

static void t_corrupt_end(void) { corrupt_end_case(RD_FRAME_HDR + 16); }
static void t_corrupt_end_tag(void) { corrupt_end_case(RD_HDR_TAG + 3); }

/* CONFIRM is damaged in flight: the receiver is done, the sender must not claim success. */
static void t_corrupt_confirm(void)
{
    struct fail_case c;
    fail_setup(&c, 10 * CHUNK, 31);
    c.x.recv_faults.corrupt_frame = 2;   /* receiver frames: 0 CHALLENGE, 1 ACCEPT, 2 CONFIRM */
    c.x.recv_faults.corrupt_offset = RD_FRAME_HDR + 3;
    c.x.recv_faults.corrupt_xor = 0x40;
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.recv_rc, RD_OK);
    CHECK_EQ_I(c.x.send_session_rc, RD_OK);
    CHECK_EQ_I(c.x.send_rc, RD_ESTREAM);
    CHECK_HAS(rd_error_msg(), "CONFIRM that fails its authentication tag");
out:
    fail_teardown(&c);
}

/* The sender's input fails mid-way: the receiver is told (ABORT) and fails too. */
static void t_sender_read_error(void)
{
    struct fail_case c;
    fail_setup(&c, 1, 32);
    c.x.in_path = "/proc/self/mem";   /* opens fine; reading at offset 0 is EIO */
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.send_session_rc, RD_OK);
    CHECK_EQ_I(c.x.recv_session_rc, RD_OK);
    CHECK_EQ_I(c.x.send_rc, RD_EIO);
    CHECK(c.x.recv_rc != RD_OK);
    CHECK_HAS(rd_error_msg(), "/proc/self/mem");
    CHECK_EQ_U(atomic_load(&c.x.recv_cnt.bytes), 0);
out:
    fail_teardown(&c);
}

/* The receiver cannot write its output: the sender learns why and fails too. */
static void t_receiver_write_error(void)
{
    struct fail_case c;
    fail_setup(&c, 10 * CHUNK, 27);
    c.x.out_path = "/dev/full";
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.recv_session_rc, RD_OK);
    /* both peers share this process's one error: the sender, told "receiver: cannot write
     * /dev/full", may re-record it as its own (RD_ESTREAM) before the receiver reads its code */
    if (c.x.recv_rc != RD_EIO && !(c.x.recv_rc == RD_ESTREAM && strstr(rd_error_msg(), "receiver: ")))
        check_fail_at(__FILE__, __LINE__, "receiver returned %d (%s), expected RD_EIO", c.x.recv_rc,
                      rd_error_msg());
    CHECK(c.x.send_rc != RD_OK);
    CHECK_HAS(rd_error_msg(), "/dev/full");
out:
    fail_teardown(&c);
}

/* ---- the stream's tags, against a hand-driven peer ----
 *
 * The test plays one end itself, after a real handshake, and builds or checks every frame of
 * the stream from the protocol description alone: DATA i has seq i and is tagged under the
 * agreed stream key in direction DOWN; END has seq = the number of DATA frames, the totals and
 * the XXH3-64 chain over the DATA tags, tagged the same way; CONFIRM comes back with seq 0,
 * tagged in direction UP. Only the real side records errors, so rd_error_msg() is its own. */

static const uint8_t *tag_of_frame(const uint8_t *frame) { return frame + RD_HDR_TAG; }

/* Seal and tag frame b (payload in place) under key, dir; 0 or -1. */
static int seal_tagged(struct rd_buf *b, uint8_t type, uint32_t len, uint64_t seq, const uint8_t *key,
                       enum rd_tag_dir dir)
{
    b->len = rd_frame_seal(b->data, type, 0, len, seq);
    if (!key)
        return 0;
    struct rd_tagger *t = rd_tagger_new(key);
    int rc = t ? rd_frame_tag(t, dir, b->data, b->data + RD_FRAME_HDR) : -1;
    rd_tagger_free(t);
    return rc;
}

struct real_recv {
    struct rd_transport *tp;
    const char *out;
    struct rd_params agreed;
    struct rd_counters cnt;
    int session_rc, rc;
};

static void *real_recv_main(void *arg)
{
    struct real_recv *r = arg;
    struct rd_sink dst;
    struct rd_key k;
    struct rd_params limits = { .chunk_size = CHUNK, .depth = 4 };
    r->rc = rd_sink_open(&dst, r->out);
    if (r->rc == RD_OK) {
        rd_key_derive(&k, secret, strlen(secret));
        r->rc = r->session_rc = rd_session_receiver(r->tp, &k, &limits, &r->agreed);
        if (r->rc == RD_OK)
            r->rc = rd_sink_begin(&dst);
        if (r->rc == RD_OK)
            r->rc = rd_engine_recv(r->tp, &dst, &r->agreed, &r->cnt);
        rd_sink_close(&dst);
        rd_key_wipe(&k);
    }
    r->tp->ops->shutdown(r->tp);
    return NULL;
}

enum fake_send {
    FS_HONEST,         /* everything right */
    FS_OTHER_KEY,      /* DATA 1 tagged under another stream key */
    FS_REFLECTED,      /* DATA 1 tagged in direction UP */
    FS_HOP_KEY,        /* DATA 1 tagged as a hop frame under the hop key */
    FS_REPLAYED,       /* DATA 1 is DATA 0 again with seq 1 (DATA 0's tag) */
    FS_END_BAD_HASH,   /* END tagged right, its stream hash wrong */
    FS_END_SEQ_0,      /* END with seq 0, as in version 1 */
    FS_FORGED_ABORT,   /* after DATA 0, an untagged ABORT */
    FS_TAGGED_ABORT,   /* after DATA 0, an ABORT under the hop key */
};

/* The real receiver (session + engine) against a hand-driven sender; 3 DATA frames. */
static void fake_sender_case(enum fake_send mode, int want_rc, const char *want_msg)
{
    char out[256];
    temp_path(out, sizeof out, "out");
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    struct real_recv r = { .tp = b, .out = out, .session_rc = -1, .rc = -1 };
    pthread_t th;
    CHECK_OR(rd_thread_create(&th, NULL, real_recv_main, &r) == 0, goto close);
    struct rd_key k;
    rd_key_derive(&k, secret, strlen(secret));
    struct rd_params want = { .chunk_size = CHUNK, .depth = 4 }, agreed;
    int rc = rd_session_sender(a, &k, &want, &agreed);
    CHECK_EQ_I(rc, RD_OK);
    enum { FRAMES = 3 };
    uint8_t *data = random_bytes(FRAMES * CHUNK, 77);
    uint8_t other[RD_KEY_LEN], tag0[RD_TAG_LEN] = { 0 };   /* set at frame 0, used at frame 1 */
    memcpy(other, agreed.stream_key, sizeof other);
    other[0] ^= 1;
    uint64_t hash = 0;
    int sent_all = 0;
    for (uint64_t i = 0; rc == RD_OK && i <= FRAMES; i++) {
        struct rd_buf *sb;
        if ((rc = a->ops->get_send_buf(a, &sb)) != RD_OK)
            break;
        if (i == 1 && (mode == FS_FORGED_ABORT || mode == FS_TAGGED_ABORT)) {
            struct rd_reason why = { .code = RD_ESTREAM };
            snprintf(why.text, sizeof why.text, "sender aborted: forged by the test");
            uint32_t n = (uint32_t)rd_reason_encode(&why, sb->data + RD_FRAME_HDR);
            if (mode == FS_FORGED_ABORT)
                seal_tagged(sb, RD_ABORT, n, 12345, NULL, 0);
            else
                rd_seal_hop(a, sb, RD_ABORT, n);
            rc = a->ops->send(a, sb);
            break;
        }
        if (i < FRAMES) {
            memcpy(sb->data + RD_FRAME_HDR, data + i * CHUNK, CHUNK);
            const uint8_t *key = agreed.stream_key;
            enum rd_tag_dir dir = RD_TAG_DOWN;
            if (i == 1 && mode == FS_OTHER_KEY)
                key = other;
            if (i == 1 && mode == FS_REFLECTED)
                dir = RD_TAG_UP;
            if (i == 1 && mode == FS_HOP_KEY) {
                key = a->hop_key;
                dir = RD_TAG_HOP_DOWN;
            }
            seal_tagged(sb, RD_DATA, CHUNK, i, key, dir);
            if (i == 0)
                memcpy(tag0, tag_of_frame(sb->data), RD_TAG_LEN);
            if (i == 1 && mode == FS_REPLAYED) {
                memcpy(sb->data + RD_FRAME_HDR, data, CHUNK);
                memcpy(sb->data + RD_HDR_TAG, tag0, RD_TAG_LEN);
            }
            hash = XXH3_64bits_withSeed(tag_of_frame(sb->data), RD_TAG_LEN, hash);
        } else {
            struct rd_end e = { .total_bytes = FRAMES * CHUNK, .frames = FRAMES, .stream_hash = hash };
            if (mode == FS_END_BAD_HASH)
                e.stream_hash ^= 1;
            uint32_t n = (uint32_t)rd_end_encode(&e, sb->data + RD_FRAME_HDR);
            seal_tagged(sb, RD_END, n, mode == FS_END_SEQ_0 ? 0 : FRAMES, agreed.stream_key, RD_TAG_DOWN);
            sent_all = 1;
        }
        rc = a->ops->send(a, sb);
    }
    /* the receiver's answer: CONFIRM, checked here from the description, or an ABORT */
    struct rd_buf *rb = NULL;
    struct rd_frame f;
    int answer = -1, confirm_ok = 0;
    if (sent_all && rd_recv_ctrl_quiet(a, 5000, &rb, &f) == RD_OK) {
        answer = f.type;
        if (f.type == RD_CONFIRM) {
            struct rd_tagger *t = rd_tagger_new(agreed.stream_key);
            struct rd_end e;
            confirm_ok = t && f.seq == 0 && rd_frame_check(t, RD_TAG_UP, rb->data, &f) == RD_P_OK &&
                         rd_end_decode(f.payload, f.length, &e) == RD_P_OK && e.total_bytes == FRAMES * CHUNK &&
                         e.frames == FRAMES && e.stream_hash == hash;
            rd_tagger_free(t);
        }
        a->ops->release(a, rb);
    }
    a->ops->shutdown(a);
    pthread_join(th, NULL);
    CHECK_EQ_I(r.session_rc, RD_OK);
    CHECK_EQ_I(r.rc, want_rc);
    if (want_rc == RD_OK) {
        CHECK_EQ_I(answer, RD_CONFIRM);
        CHECK(confirm_ok);
        size_t got_n = 0;
        uint8_t *got = read_file(out, &got_n);
        CHECK(got && got_n == FRAMES * CHUNK && memcmp(got, data, got_n) == 0);
        free(got);
    } else {
        CHECK(answer != RD_CONFIRM);
        CHECK_HAS(rd_error_msg(), want_msg);
        CHECK(!strstr(rd_error_msg(), "forged by the test") || mode == FS_TAGGED_ABORT);
    }
    free(data);
    rd_key_wipe(&k);
close:
    a->ops->close(a);
    b->ops->close(b);
    unlink(out);
}

static void t_fake_sender_honest(void) { fake_sender_case(FS_HONEST, RD_OK, NULL); }
static void t_fake_sender_other_key(void) { fake_sender_case(FS_OTHER_KEY, RD_ESTREAM, "chunk 1 (bytes 4096..8192) fails its authentication tag"); }
static void t_fake_sender_reflected(void) { fake_sender_case(FS_REFLECTED, RD_ESTREAM, "chunk 1 (bytes 4096..8192) fails its authentication tag"); }
static void t_fake_sender_hop_key(void) { fake_sender_case(FS_HOP_KEY, RD_ESTREAM, "chunk 1 (bytes 4096..8192) fails its authentication tag"); }
static void t_fake_sender_replayed(void) { fake_sender_case(FS_REPLAYED, RD_ESTREAM, "chunk 1 (bytes 4096..8192) fails its authentication tag"); }
static void t_fake_sender_end_bad_hash(void) { fake_sender_case(FS_END_BAD_HASH, RD_ESTREAM, "whole-stream hash mismatch"); }
static void t_fake_sender_end_seq_0(void) { fake_sender_case(FS_END_SEQ_0, RD_ESTREAM, "out of order"); }
static void t_fake_sender_forged_abort(void) { fake_sender_case(FS_FORGED_ABORT, RD_ESTREAM, "authentication tag mismatch"); }
static void t_fake_sender_tagged_abort(void) { fake_sender_case(FS_TAGGED_ABORT, RD_ESTREAM, "sender: sender aborted: forged by the test"); }

struct real_send {
    struct rd_transport *tp;
    const char *in;
    struct rd_params agreed;
    struct rd_counters cnt;
    int session_rc, rc;
};

static void *real_send_main(void *arg)
{
    struct real_send *s = arg;
    struct rd_source src;
    struct rd_key k;
    s->rc = rd_source_open(&src, s->in, 0);
    if (s->rc == RD_OK) {
        rd_key_derive(&k, secret, strlen(secret));
        struct rd_params want = { .chunk_size = CHUNK, .depth = 4 };
        s->rc = s->session_rc = rd_session_sender(s->tp, &k, &want, &s->agreed);
        if (s->rc == RD_OK)
            s->rc = rd_engine_send(s->tp, &src, &s->agreed, &s->cnt);
        rd_source_close(&src);
        rd_key_wipe(&k);
    }
    s->tp->ops->shutdown(s->tp);
    return NULL;
}

enum fake_confirm {
    FC_HONEST,        /* stream key, UP, seq 0 */
    FC_HOP_KEY,       /* tagged under the hop key */
    FC_SEQ_1,         /* right key and direction, seq 1 */
    FC_DOWN,          /* tagged in direction DOWN */
    FC_REFLECTED_END, /* the sender's own END sent back with the type changed */
    FC_UNTAGGED,      /* as v1 would: no tag */
    FC_OTHER_STREAM,  /* tagged right, but it confirms one frame more */
};

/* The real sender (session + engine) against a hand-driven receiver that checks every frame
 * from the description and answers with a CONFIRM as mode says. */
static void fake_receiver_case(enum fake_confirm mode, int want_rc, const char *want_msg)
{
    struct case_files cf;
    case_files_make(&cf, 5 * CHUNK + 100, 78);
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, { case_files_remove(&cf); return; });
    struct real_send s = { .tp = a, .in = cf.in, .session_rc = -1, .rc = -1 };
    pthread_t th;
    CHECK_OR(rd_thread_create(&th, NULL, real_send_main, &s) == 0, goto close);
    struct rd_key k;
    rd_key_derive(&k, secret, strlen(secret));
    struct rd_params limits = { .chunk_size = CHUNK, .depth = 4 }, agreed;
    CHECK_EQ_I(rd_session_receiver(b, &k, &limits, &agreed), RD_OK);
    rd_key_wipe(&k);
    struct rd_tagger *t = rd_tagger_new(agreed.stream_key);
    CHECK_OR(t != NULL, goto join);
    uint64_t seq = 0, total = 0, hash = 0;
    int bad = 0;
    static uint8_t end_frame[RD_FRAME_HDR + RD_END_LEN];
    for (;;) {
        struct rd_buf *rb;
        struct rd_frame f;
        if (b->ops->recv(b, &rb, 5000) != RD_OK) {
            bad++;
            break;
        }
        int pe = rd_frame_parse(rb->data, rb->len, CHUNK, &f);
        if (pe != RD_P_OK || f.seq != seq || rd_frame_check(t, RD_TAG_DOWN, rb->data, &f) != RD_P_OK) {
            check_fail_at(__FILE__, __LINE__, "frame %llu of the real sender: parse %d, type %d, seq %llu, tag %d",
                          (unsigned long long)seq, pe, f.type, (unsigned long long)f.seq,
                          pe == RD_P_OK ? rd_frame_check(t, RD_TAG_DOWN, rb->data, &f) : -100);
            b->ops->release(b, rb);
            bad++;
            break;
        }
        if (f.type == RD_DATA) {
            CHECK(f.length > 0 && memcmp(f.payload, cf.data + total, f.length) == 0);
            hash = XXH3_64bits_withSeed(f.tag, RD_TAG_LEN, hash);
            total += f.length;
            seq++;
            b->ops->release(b, rb);
            continue;
        }
        struct rd_end e;
        if (f.type != RD_END || rd_end_decode(f.payload, f.length, &e) != RD_P_OK || e.total_bytes != total ||
            e.frames != seq || e.stream_hash != hash)
            bad++;
        memcpy(end_frame, rb->data, sizeof end_frame);
        b->ops->release(b, rb);
        break;
    }
    CHECK_EQ_I(bad, 0);
    CHECK_EQ_U(total, cf.n);
    CHECK_EQ_U(seq, (cf.n + CHUNK - 1) / CHUNK);
    if (!bad) {
        struct rd_end e = { .total_bytes = total, .frames = seq, .stream_hash = hash };
        if (mode == FC_OTHER_STREAM)
            e.frames++;
        uint8_t pl[RD_END_LEN];
        rd_end_encode(&e, pl);
        switch (mode) {
        case FC_HONEST:
        case FC_OTHER_STREAM:
            CHECK_EQ_I(rd_send_tagged(b, RD_CONFIRM, pl, sizeof pl, agreed.stream_key, RD_TAG_UP, 0), RD_OK);
            break;
        case FC_HOP_KEY:
            CHECK_EQ_I(rd_send_tagged(b, RD_CONFIRM, pl, sizeof pl, b->hop_key, RD_TAG_UP, 0), RD_OK);
            break;
        case FC_SEQ_1:
            CHECK_EQ_I(rd_send_tagged(b, RD_CONFIRM, pl, sizeof pl, agreed.stream_key, RD_TAG_UP, 1), RD_OK);
            break;
        case FC_DOWN:
            CHECK_EQ_I(rd_send_tagged(b, RD_CONFIRM, pl, sizeof pl, agreed.stream_key, RD_TAG_DOWN, 0), RD_OK);
            break;
        case FC_REFLECTED_END:
            end_frame[5] = RD_CONFIRM;
            CHECK_EQ_I(rd_send_raw(b, end_frame, sizeof end_frame), RD_OK);
            break;
        case FC_UNTAGGED:
            CHECK_EQ_I(rd_send_ctrl(b, RD_CONFIRM, pl, sizeof pl), RD_OK);
            break;
        }
        b->ops->drain(b);
    }
    rd_tagger_free(t);
join:
    pthread_join(th, NULL);
    CHECK_EQ_I(s.session_rc, RD_OK);
    CHECK_EQ_I(s.rc, want_rc);
    if (want_rc != RD_OK)
        CHECK_HAS(rd_error_msg(), want_msg);
close:
    a->ops->close(a);
    b->ops->close(b);
    case_files_remove(&cf);
}

static void t_fake_receiver_honest(void) { fake_receiver_case(FC_HONEST, RD_OK, NULL); }
static void t_fake_receiver_hop_key(void) { fake_receiver_case(FC_HOP_KEY, RD_ESTREAM, "CONFIRM that fails its authentication tag"); }
static void t_fake_receiver_seq_1(void) { fake_receiver_case(FC_SEQ_1, RD_ESTREAM, "CONFIRM that fails its authentication tag"); }
static void t_fake_receiver_down(void) { fake_receiver_case(FC_DOWN, RD_ESTREAM, "CONFIRM that fails its authentication tag"); }
static void t_fake_receiver_reflected_end(void) { fake_receiver_case(FC_REFLECTED_END, RD_ESTREAM, "CONFIRM that fails its authentication tag"); }
static void t_fake_receiver_untagged(void) { fake_receiver_case(FC_UNTAGGED, RD_ESTREAM, "CONFIRM that fails its authentication tag"); }
static void t_fake_receiver_other_stream(void) { fake_receiver_case(FC_OTHER_STREAM, RD_ESTREAM, "confirmed another stream"); }

/* ---- the --direct sink: every byte at its own offset ---- */

/* Writes of these sizes, each from a page-aligned buffer as the transports hand them over:
 * after the first odd one no frame starts on a block boundary any more, and O_DIRECT cannot
 * take them; they must still land where they belong (once they went to offset 0). */
static void direct_sink_case(const size_t *sizes, size_t count, uint64_t seed)
{
    char path[256];
    temp_path(path, sizeof path, "direct");
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += sizes[i];
    uint8_t *want = random_bytes(total, seed);
    struct rd_sink dst;
    CHECK_OR(rd_sink_open(&dst, path) == RD_OK, goto out);
    rd_sink_use_direct(&dst);
    CHECK_EQ_I(rd_sink_begin(&dst), RD_OK);
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        uint8_t *buf = rd_alloc_aligned(sizes[i]);
        CHECK_OR(buf, break);
        memcpy(buf, want + at, sizes[i]);
        CHECK_EQ_I(rd_sink_write(&dst, buf, sizes[i]), RD_OK);
        free(buf);
        at += sizes[i];
    }
    CHECK_EQ_I(rd_sink_finish(&dst), RD_OK);
    rd_sink_close(&dst);
    size_t got_n = 0;
    uint8_t *got = read_file(path, &got_n);
    CHECK_EQ_U(got_n, total);
    if (got && got_n == total)
        CHECK_MEM_EQ(got, want, total);
    free(got);
out:
    free(want);
    unlink(path);
}

static void t_direct_sink_unaligned_frames(void)
{
    static const size_t sizes[] = { 5000, 300000, 65536, 4096, 1, 4095, 8192, 12289 };
    direct_sink_case(sizes, sizeof sizes / sizeof sizes[0], 41);
}

static void t_direct_sink_aligned_then_tail(void)
{
    static const size_t sizes[] = { 65536, 65536, 4097, 3, 65536 };
    direct_sink_case(sizes, sizeof sizes / sizeof sizes[0], 42);
}

/* ---- another protocol version ---- */

/* The sender's frames carry another version in their header: 1 (a v1 build) or 3. */
static void sender_other_version(unsigned v)
{
    struct fail_case c;
    fail_setup(&c, 3 * CHUNK, 28);
    c.x.send_faults.corrupt_frame = 0;   /* HELLO */
    c.x.send_faults.corrupt_offset = 4;
    c.x.send_faults.corrupt_xor = (uint8_t)(RD_PROTO_VERSION ^ v);
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.recv_session_rc, RD_ESTREAM);
    CHECK(c.x.send_rc != RD_OK);
    if (!names_version(rd_error_msg(), v) || !names_version(rd_error_msg(), RD_PROTO_VERSION))
        check_fail_at(__FILE__, __LINE__, "\"%s\" should name versions %u and %u", rd_error_msg(), v,
                      RD_PROTO_VERSION);
    check_untouched_output(&c, __LINE__);
out:
    fail_teardown(&c);
}

static void t_sender_other_version(void) { sender_other_version(1); }
static void t_sender_newer_version(void) { sender_other_version(3); }

/* The receiver answers with version 1 in its CHALLENGE header. */
static void t_receiver_other_version(void)
{
    struct fail_case c;
    fail_setup(&c, 3 * CHUNK, 29);
    c.x.recv_faults.corrupt_frame = 0;   /* CHALLENGE */
    c.x.recv_faults.corrupt_offset = 4;
    c.x.recv_faults.corrupt_xor = (uint8_t)(RD_PROTO_VERSION ^ 1u);
    CHECK_OR(xfer_run(&c.x) == 0, goto out);
    CHECK_EQ_I(c.x.send_session_rc, RD_ESTREAM);
    CHECK(c.x.recv_rc != RD_OK);
    if (!names_version(rd_error_msg(), 1) || !names_version(rd_error_msg(), RD_PROTO_VERSION))
        check_fail_at(__FILE__, __LINE__, "\"%s\" should name versions 1 and %u", rd_error_msg(),
                      RD_PROTO_VERSION);
    check_untouched_output(&c, __LINE__);
out:
    fail_teardown(&c);
}

/* A (future) sender whose HELLO offers versions 3..4 only, in a v2 frame: the receiver
 * refuses, names the versions, and tells the sender which one it speaks. (And a v1 sender's
 * HELLO payload, versions 1..1, likewise.) */
struct recv_only {
    struct rd_transport *tp;
    int rc;
};

static void *recv_only_main(void *arg)
{
    struct recv_only *r = arg;
    struct rd_key k;
    struct rd_params limits = { .chunk_size = CHUNK, .depth = 4 }, agreed;
    rd_key_derive(&k, secret, strlen(secret));
    r->rc = rd_session_receiver(r->tp, &k, &limits, &agreed);
    return NULL;
}

static void hello_offers(unsigned vmin, unsigned vmax)
{
    struct rd_transport *a, *b;
    CHECK_OR(mem_pair(&a, &b) == RD_OK, return);
    struct recv_only r = { .tp = b, .rc = -1 };
    pthread_t t;
    rd_thread_create(&t, NULL, recv_only_main, &r);
    struct rd_hello h = { .version_min = (uint16_t)vmin, .version_max = (uint16_t)vmax, .chunk_size = CHUNK, .depth = 4 };
    uint8_t out[RD_HELLO_LEN];
    CHECK_EQ_I(rd_send_ctrl(a, RD_HELLO, out, (uint32_t)rd_hello_encode(&h, out)), RD_OK);
    struct rd_buf *rb;
    struct rd_frame f;
    int rc = rd_recv_ctrl(a, 5000, &rb, &f);
    CHECK_EQ_I(rc, RD_OK);
    if (rc == RD_OK) {
        CHECK_EQ_I(f.type, RD_REJECT);
        struct rd_reason why;
        CHECK_EQ_I(rd_reason_decode(f.payload, f.length, &why), RD_P_OK);
        if (!names_version(why.text, RD_PROTO_VERSION))
            check_fail_at(__FILE__, __LINE__, "REJECT \"%s\" should name version %u", why.text,
                          RD_PROTO_VERSION);
        a->ops->release(a, rb);
    }
    pthread_join(t, NULL);
    CHECK_EQ_I(r.rc, RD_ESTREAM);
    if (!names_version(rd_error_msg(), vmin) || !names_version(rd_error_msg(), vmax))
        check_fail_at(__FILE__, __LINE__, "\"%s\" should name versions %u and %u", rd_error_msg(), vmin, vmax);
    a->ops->close(a);
    b->ops->close(b);
}

static void t_hello_offers_other_versions(void) { hello_offers(3, 4); }
static void t_hello_offers_version_1(void) { hello_offers(1, 1); }

static void before_each(void)
{
    rd_error_clear();
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    check_watchdog(CASE_TIMEOUT_S);
    rd_set_progname("test_engine");
    check_before_each = before_each;
    RUN(t_size_0);
    RUN(t_size_1);
    RUN(t_size_4095);
    RUN(t_size_chunk_minus_1);
    RUN(t_size_chunk);
    RUN(t_size_chunk_plus_1);
    RUN(t_size_two_chunks);
    RUN(t_many_small_chunks);
    RUN(t_depth_1);
    RUN(t_bigger_chunks);
    RUN(t_cached_file_sent_from_its_frames);
    RUN(t_receiver_limits_win);
    RUN(t_pipe_to_pipe);
    RUN(t_wrong_key);
    RUN(t_corrupt_payload);
    RUN(t_corrupt_payload_last_byte);
    RUN(t_corrupt_header_tag);
    RUN(t_corrupt_header_tag_last_byte);
    RUN(t_corrupt_header_reserved);
    RUN(t_corrupt_seq);
    RUN(t_corrupt_flags);
    RUN(t_corrupt_flags_compressed);
    RUN(t_corrupt_flags_encrypted);
    RUN(t_corrupt_magic);
    RUN(t_corrupt_length);
    RUN(t_dropped_frame);
    RUN(t_dropped_last_frame);
    RUN(t_duplicated_frame);
    RUN(t_duplicated_last_frame);
    RUN(t_reordered_frames);
    RUN(t_end_before_last_frame);
    RUN(t_link_killed_mid_stream);
    RUN(t_link_killed_before_confirm);
    RUN(t_drain_fails_after_confirm);
    RUN(t_sender_drain_fails_after_end);
    RUN(t_link_killed_in_handshake);
    RUN(t_link_killed_with_stalled_input);
    RUN(t_deferred_reads_one_lane);
    RUN(t_deferred_reads_three_lanes);
    RUN(t_link_killed_while_producer_waits_for_lanes);
    RUN(t_corrupt_end);
    RUN(t_corrupt_end_tag);
    RUN(t_corrupt_confirm);
    RUN(t_sender_read_error);
    RUN(t_receiver_write_error);
    RUN(t_fake_sender_honest);
    RUN(t_fake_sender_other_key);
    RUN(t_fake_sender_reflected);
    RUN(t_fake_sender_hop_key);
    RUN(t_fake_sender_replayed);
    RUN(t_fake_sender_end_bad_hash);
    RUN(t_fake_sender_end_seq_0);
    RUN(t_fake_sender_forged_abort);
    RUN(t_fake_sender_tagged_abort);
    RUN(t_fake_receiver_honest);
    RUN(t_fake_receiver_hop_key);
    RUN(t_fake_receiver_seq_1);
    RUN(t_fake_receiver_down);
    RUN(t_fake_receiver_reflected_end);
    RUN(t_fake_receiver_untagged);
    RUN(t_fake_receiver_other_stream);
    RUN(t_direct_sink_unaligned_frames);
    RUN(t_direct_sink_aligned_then_tail);
    RUN(t_sender_other_version);
    RUN(t_sender_newer_version);
    RUN(t_receiver_other_version);
    RUN(t_hello_offers_other_versions);
    RUN(t_hello_offers_version_1);
    return check_summary();
}
