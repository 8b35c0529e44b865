/* test_hold.c - frames a custom sink keeps after write_fn returned (rd_sink_hold), as rdcp's
 * receiver keeps them for its workers: the real session and engines in two threads over the
 * in-memory transport, and a "keeper" sink that takes a hold on each half of every chunk,
 * queues the halves, and writes them later, on a thread of its own, in reverse order.
 *
 * What must hold: the bytes stay valid until the last hold is dropped (the ring is small, so
 * the transport would reuse a frame given back too early and the output would differ); the
 * sender is held back while the sink keeps the whole ring, and goes on as the keeper lets go
 * (a hang is the watchdog's failure); the engine returns only once every lent frame came
 * back, also when the link dies mid-stream; a decompressed chunk is never lent. */
#include "check.h"
#include "mem_transport.h"
#include "testfiles.h"

#include "engine/rd_engine.h"
#include "engine/rd_hold.h"
#include "engine/rd_io.h"
#include "util/rd_error.h"
#include "util/rd_thread.h"
#include "wire/rd_auth.h"
#include "wire/rd_proto.h"
#include "transport/rd_session.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdatomic.h>
#include <unistd.h>

#define CHUNK 4096u
#define CASE_TIMEOUT_S 30

static const char secret[] = "hold test key";

struct piece {
    struct piece *next;
    const uint8_t *p;
    size_t n;
    uint64_t off;
    struct rd_hold *h;
};

/* The sink: pieces kept, written into out by the keeper thread. */
struct keeper {
    struct rd_sink sink;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct piece *stack;     /* written last in, first out: out of order on purpose */
    unsigned queued;
    int closing;
    uint8_t *out;
    size_t cap;
    uint64_t off;            /* where the next byte handed to write_fn goes */
    unsigned batch;          /* the keeper waits for this many pieces (or the end) */
    atomic_ulong held, dropped, copied;
};

static int keep_write(void *ctx, const void *buf, size_t n)
{
    struct keeper *k = ctx;
    const uint8_t *b = buf;
    size_t half = n / 2;
    size_t parts[2] = { half, n - half };
    for (int i = 0; i < 2; i++) {
        size_t len = parts[i];
        if (k->off + len > k->cap)
            return rd_fail(RD_EIO, "keeper: more bytes than expected");
        struct rd_hold *h = rd_sink_hold(&k->sink);
        if (!h) {   /* not lent: now or never */
            memcpy(k->out + k->off, b, len);
            atomic_fetch_add(&k->copied, len);
        } else {
            struct piece *pc = malloc(sizeof *pc);
            if (!pc)
                abort();
            *pc = (struct piece){ .p = b, .n = len, .off = k->off, .h = h };
            atomic_fetch_add(&k->held, 1);
            pthread_mutex_lock(&k->mu);
            pc->next = k->stack;
            k->stack = pc;
            k->queued++;
            pthread_cond_signal(&k->cv);
            pthread_mutex_unlock(&k->mu);
        }
        b += len;
        k->off += len;
    }
    return RD_OK;
}

/* Waits for `batch` pieces, or for 20 ms without a new one (the stream's end, or a sender
 * held back by the ring the keeper holds), then writes what it has. */
static void *keeper_main(void *arg)
{
    struct keeper *k = arg;
    pthread_mutex_lock(&k->mu);
    for (;;) {
        while (k->queued < k->batch && !k->closing) {
            unsigned before = k->queued;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            if (pthread_cond_timedwait(&k->cv, &k->mu, &ts) == ETIMEDOUT && k->queued && k->queued == before)
                break;
        }
        struct piece *pc = k->stack;
        if (!pc && k->closing)
            break;
        k->stack = NULL;
        k->queued = 0;
        pthread_mutex_unlock(&k->mu);
        while (pc) {
            struct piece *next = pc->next;
            usleep(200);
            memcpy(k->out + pc->off, pc->p, pc->n);
            struct rd_hold *h = pc->h;
            free(pc);
            atomic_fetch_add(&k->dropped, 1);   /* before the drop: the engine may return at once */
            rd_hold_drop(h);
            pc = next;
        }
        pthread_mutex_lock(&k->mu);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

struct run {
    struct rd_transport *a, *b;
    struct rd_params want, limits, send_agreed, recv_agreed;
    struct rd_counters send_cnt, recv_cnt;
    const char *in;
    struct keeper *k;
    int send_rc, recv_rc;
    unsigned long held_at_return, dropped_at_return;
};

static void *sender_main(void *arg)
{
    struct run *x = arg;
    struct rd_source src;
    struct rd_key key;
    x->send_rc = rd_source_open(&src, x->in, 0);
    if (x->send_rc == RD_OK) {
        rd_key_derive(&key, secret, strlen(secret));
        x->send_rc = rd_session_sender(x->a, &key, &x->want, &x->send_agreed);
        x->send_agreed.compress_mode = x->want.compress_mode;
        x->send_agreed.compress_level = x->want.compress_level;
        if (x->send_rc == RD_OK)
            x->send_rc = rd_engine_send(x->a, &src, &x->send_agreed, &x->send_cnt);
        rd_source_close(&src);
        rd_key_wipe(&key);
    }
    x->a->ops->close(x->a);
    return NULL;
}

static void *receiver_main(void *arg)
{
    struct run *x = arg;
    struct rd_key key;
    rd_key_derive(&key, secret, strlen(secret));
    x->recv_rc = rd_session_receiver(x->b, &key, &x->limits, &x->recv_agreed);
    if (x->recv_rc == RD_OK)
        x->recv_rc = rd_engine_recv(x->b, &x->k->sink, &x->recv_agreed, &x->recv_cnt);
    x->held_at_return = atomic_load(&x->k->held);
    x->dropped_at_return = atomic_load(&x->k->dropped);
    rd_key_wipe(&key);
    /* an engine that returned too early fails the case, not the process: the ring is freed
     * only once the keeper let go (close frees it) */
    for (int i = 0; i < 5000 && atomic_load(&x->k->dropped) < atomic_load(&x->k->held); i++)
        usleep(1000);
    x->b->ops->close(x->b);
    return NULL;
}

/* n random bytes (compressible ones when compressed) through a keeper that waits for
 * `batch` pieces before it writes any; kill_after >= 0 kills the link after that many of
 * the sender's frames. The case's checks on what came out are the caller's. */
static void run_case(struct run *x, struct keeper *k, uint8_t **data, size_t n, unsigned batch, int compress,
                     long kill_after, uint64_t seed)
{
    static char in[256];
    temp_path(in, sizeof in, "in");
    *data = random_bytes(n, seed);
    for (size_t i = 0; compress && i < n; i++)   /* every chunk shrinks, no two alike */
        (*data)[i] = (uint8_t)(i / 512 * 37);
    memset(x, 0, sizeof *x);
    memset(k, 0, sizeof *k);
    CHECK_OR(write_file(in, *data, n) == 0, return);
    rd_sink_custom(&k->sink, "keeper", keep_write, NULL, k);
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    k->out = calloc(1, n + 1);
    k->cap = n;
    k->batch = batch;
    x->in = in;
    x->k = k;
    x->want = (struct rd_params){ .chunk_size = CHUNK, .depth = 4, .caps = compress ? RD_FLAG_COMPRESSED : 0,
                                  .compress_mode = compress, .compress_level = 1 };
    x->limits = x->want;
    CHECK_OR(mem_pair(&x->a, &x->b) == RD_OK, return);
    struct mem_faults f;
    mem_faults_none(&f);
    f.kill_after = kill_after;
    mem_set_faults(x->a, &f);
    pthread_t s, r, kt;
    CHECK_OR(rd_thread_create(&kt, NULL, keeper_main, k) == 0, return);
    CHECK_OR(rd_thread_create(&r, NULL, receiver_main, x) == 0, return);
    CHECK_OR(rd_thread_create(&s, NULL, sender_main, x) == 0, return);
    pthread_join(s, NULL);
    pthread_join(r, NULL);
    pthread_mutex_lock(&k->mu);
    k->closing = 1;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    pthread_join(kt, NULL);
    unlink(in);
}

static void end_case(struct keeper *k, uint8_t *data)
{
    free(k->out);
    free(data);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
}

/* Every chunk lent, kept until the keeper has three of them (the ring holds four frames, so
 * the sender waits on the keeper), written in reverse: the bytes are the sender's. */
static void t_lent_frames_written_later(void)
{
    struct run x;
    struct keeper k;
    uint8_t *data;
    size_t n = 37 * CHUNK + 123;
    run_case(&x, &k, &data, n, 6, 0, -1, 7);
    CHECK_EQ_I(x.send_rc, RD_OK);
    CHECK_EQ_I(x.recv_rc, RD_OK);
    if (x.send_rc || x.recv_rc)
        check_fail_at(__FILE__, __LINE__, "error: %s", rd_error_msg());
    CHECK_EQ_U(atomic_load(&k.copied), 0);
    CHECK_EQ_U(x.held_at_return, 2 * 38);   /* two pieces a chunk, 38 chunks */
    CHECK_EQ_U(x.dropped_at_return, x.held_at_return);
    CHECK_MEM_EQ(k.out, data, n);
    end_case(&k, data);
}

/* The link dies with frames lent: the engine fails, yet returns only once they came back
 * (before, the transport's close would free them under the keeper: ASan's use after free). */
static void t_link_killed_with_frames_lent(void)
{
    struct run x;
    struct keeper k;
    uint8_t *data;
    size_t n = 37 * CHUNK;
    run_case(&x, &k, &data, n, 1000, 0, 2 + 10, 8);   /* HELLO, AUTH, then 10 chunks */
    CHECK(x.send_rc != RD_OK);
    CHECK(x.recv_rc != RD_OK);
    CHECK(x.held_at_return > 0);
    CHECK_EQ_U(x.dropped_at_return, x.held_at_return);
    CHECK_MEM_EQ(k.out, data, (size_t)(x.held_at_return / 2) * CHUNK);   /* what arrived is intact */
    end_case(&k, data);
}

/* A compressed chunk is decompressed into a buffer of the engine's that the next frame
 * reuses: never lent, so the sink uses the bytes while it has them. */
static void t_decompressed_chunks_not_lent(void)
{
    struct run x;
    struct keeper k;
    uint8_t *data;
    size_t n = 9 * CHUNK;   /* whole chunks: a 5-byte tail would go uncompressed */
    run_case(&x, &k, &data, n, 1, 2, -1, 9);
    CHECK_EQ_I(x.send_rc, RD_OK);
    CHECK_EQ_I(x.recv_rc, RD_OK);
    CHECK_EQ_U(atomic_load(&k.held), 0);
    CHECK_EQ_U(atomic_load(&k.copied), n);
    CHECK_MEM_EQ(k.out, data, n);
    end_case(&k, data);
}

/* Outside the engine nothing is lent. */
static void t_no_engine_no_hold(void)
{
    struct rd_sink s;
    rd_sink_custom(&s, "x", keep_write, NULL, NULL);
    CHECK(rd_sink_hold(&s) == NULL);
}

static void before_each(void)
{
    rd_error_clear();
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    check_watchdog(CASE_TIMEOUT_S);
    rd_set_progname("test_hold");
    check_before_each = before_each;
    RUN(t_lent_frames_written_later);
    RUN(t_link_killed_with_frames_lent);
    RUN(t_decompressed_chunks_not_lent);
    RUN(t_no_engine_no_hold);
    return check_summary();
}
