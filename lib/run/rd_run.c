#include "run/rd_run.h"
#include "util/rd_clock.h"

#include "wire/rd_auth.h"
#include "engine/rd_engine.h"
#include "engine/rd_relay.h"
#include "wire/rd_seal.h"
#include "util/rd_error.h"
#include "util/rd_interrupt.h"
#include "util/rd_wake.h"
#include "run/rd_plan.h"
#include "run/rd_report.h"
#include "transport/rd_rails.h"
#include "transport/rd_select.h"
#include "transport/rd_session.h"
#include "transport/rd_stripe.h"
#include "transport/rd_waiting.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The AEAD that encrypts the stream's chunks (--encrypt), else NULL. */
static const char *cipher_name(const struct rd_params *p)
{
    return p->caps & RD_FLAG_ENCRYPTED ? rd_cipher_name(rd_cipher_agreed(p->caps)) : NULL;
}

/* The status this tool will end with: after SIGINT, SIGTERM or SIGHUP it dies by the signal
 * (rd_interrupt_finish), whatever the stream's error code. */
static int exit_code_of(int rc)
{
    int signo = rd_interrupted();
    return rc && signo ? 128 + signo : rc;
}

static void summarize(const struct rd_opts *o, const char *tool, const struct rd_transport *tp,
                      const struct rd_params *p, const struct rd_params *asked, const struct rd_counters *cnt,
                      double seconds, int rc)
{
    char zstd[32] = "";
    if (p && (p->caps & RD_FLAG_COMPRESSED))
        snprintf(zstd, sizeof zstd, p->compress_mode == 2 ? "zstd level %d" : p->compress_mode ? "zstd auto" : "zstd",
                 p->compress_level);
    struct rd_summary s = {
        .tool = tool, .transport = tp ? tp->desc : NULL, .peer = tp ? tp->peer : NULL,
        .bytes = cnt ? atomic_load(&cnt->bytes) : 0, .wire_bytes = cnt ? atomic_load(&cnt->wire_bytes) : 0,
        .compression = zstd[0] ? zstd : NULL, .seconds = seconds, .chunk_size = p ? p->chunk_size : 0,
        .depth = p ? p->depth : 0, .exit_code = exit_code_of(rc), .error = rc ? rd_error_msg() : NULL,
        .lanes = p ? p->lanes : 0, .link_rate = p ? p->link_rate : 0, .cipher = p ? cipher_name(p) : NULL,
        .streams = p ? (p->streams ? p->streams : 1) : 0, .has_asked = p && asked,
        .asked_chunk_size = p && asked ? asked->chunk_size : 0, .asked_depth = p && asked ? asked->depth : 0,
        .asked_streams = p && asked ? (asked->streams ? asked->streams : 1) : 0,
    };
    if (o->verbose && rc == RD_OK)
        rd_print_bandwidth(&s);
    if (o->json)
        rd_print_json(&s);
}

static int derive(const struct rd_opts *o, struct rd_key *k)
{
    return rd_key_derive(k, o->key, o->key_len) ? rd_fail(RD_EIO, "libcrypto cannot derive the key") : RD_OK;
}

/* The lanes this end plans for a link of link_rate bytes/s (0: unknown) on `cores` cores,
 * --lanes aside. */
static uint32_t plan_lanes(const struct rd_opts *o, uint64_t link_rate, int slow_cipher, unsigned cores)
{
    struct rd_plan_in in = { .link_rate = link_rate, .cores = cores,
                             .compress = o->is_sender && o->compress_mode, .slow_cipher = slow_cipher };
    return rd_plan_lanes(&in);
}

/* The connections a sender without --streams asks for on `link` (rate bytes/s, 0 unknown)
 * under tp, said with -v when that is more than one (the summary then says what the
 * receiver granted). */
static uint32_t plan_streams(const struct rd_opts *o, const struct rd_transport *tp, const char *link,
                             uint64_t rate, unsigned cores)
{
    int rdma = tp->ops == &rd_verbs_ops;
    uint32_t n = rd_plan_streams(rate, rdma, cores);
    if (o->verbose && n > 1)
        rd_warn("asking for %u streams: %s at %.0f Gb/s, %s, %u core%s (--streams 1 for one)", n, link,
                (double)rate * 8 / 1e9, rdma ? "a queue pair per 100 Gb/s" : "a connection per 10 Gb/s",
                cores, cores == 1 ? "" : "s");
    return n;
}

/* What this end decides alone: through relays the frames are tagged with rdpipe's
 * end-to-end key (not the key of the hop it shares with a relay), and how many lanes do the
 * per-chunk work: --lanes, else enough for the link under tp (run/rd_plan.h). The link is
 * named in why (for -v). */
static void set_local_params(const struct rd_opts *o, struct rd_params *agreed, struct rd_transport *tp,
                             char *why, size_t n)
{
    if (o->has_stream_key)
        memcpy(agreed->stream_key, o->stream_key, sizeof agreed->stream_key);
    char link[160];
    uint64_t rate = agreed->link_rate = rd_transport_link_rate(tp, link, sizeof link);
    const char *c = cipher_name(agreed);
    unsigned cores = rd_plan_cores();
    agreed->lanes = o->lanes ? o->lanes
                             : plan_lanes(o, rate, c && rd_cipher_agreed(agreed->caps) != RD_CIPHER_AES_256_OCB, cores);
    const char *s = cores == 1 ? "" : "s";
    if (o->lanes)
        snprintf(why, n, "--lanes");
    else if (o->is_sender && o->compress_mode)
        snprintf(why, n, "compressing, %u core%s", cores, s);
    else if (rate)
        snprintf(why, n, "%s at %.0f Gb/s, %u core%s", link, (double)rate * 8 / 1e9, cores, s);
    else
        snprintf(why, n, "link speed unknown%s%s, %u core%s", link[0] ? " on " : "", link, cores, s);
    agreed->compress_mode = o->is_sender ? o->compress_mode : 0;   /* a receiver follows the sender */
    agreed->compress_level = o->compress_level;
}

/* -v: the rails a stream spreads over, or why there is one; -v -v: both ends' ports. */
static void say_rails(int verbose, const struct rd_transport *tp, const struct rd_rails *theirs,
                      const struct rd_port_addr *ours, unsigned n_ours, unsigned n, const struct rd_reach *rails)
{
    char t[RD_MAX_RAILS * 64], l[RD_MAX_RAILS * 96];
    rd_rails_str(theirs, t, sizeof t);
    rd_ports_str(ours, n_ours, l, sizeof l);
    if (n > 1)
        rd_warn("%u rails to %s: %s from %s (%s)", n, tp->peer, rails->host, rails->bind, rails->device);
    else   /* the receiver's other ports are on networks ours are not */
        rd_warn("one rail to %s: no port here (%s) reaches the receiver's others (%s)", tp->peer, l, t);
    if (verbose > 1)
        rd_warn("rails: the receiver's ports %s; ours %s", t, l);
}

/* The receiver dropped our connection in its handshake (rd_session_sender: RD_ECONNECT, lost):
 * busy, its handshake slots taken by strangers' connections, each of which it keeps for
 * seconds (rd_waiting). Try again after a random 50-250 ms, for as long as we would retry a
 * refused connection; reach's timeout becomes what is left. 1: try again (error cleared). */
static int retry_dropped(const struct rd_opts *o, struct rd_reach *reach, double give_up)
{
    unsigned r = 0;
    (void)rd_random(&r, sizeof r);
    double pause = 0.05 + (r % 200) / 1000.0, left = give_up - rd_now() - pause;
    if (left < 0.1)
        return 0;
    if (o->verbose)
        rd_warn("%s; again in %.0f ms", rd_error_msg(), pause * 1000);
    rd_error_clear();
    struct timespec ts = { 0, (long)(pause * 1e9) };
    nanosleep(&ts, NULL);
    reach->timeout_s = (int)left + (left > (int)left);   /* what is left, rounded up */
    return 1;
}

int rd_send_source(const struct rd_opts *o, struct rd_source *src)
{
    struct rd_key key;
    struct rd_transport *tp = NULL;
    struct rd_params want = { .chunk_size = o->chunk_size, .depth = o->depth, .streams = o->streams,
                              .caps = (o->encrypt ? rd_cipher_offer() : 0) |
                                      (o->compress_mode ? RD_FLAG_COMPRESSED : 0) },
                     agreed = { 0 };
    struct rd_counters cnt = { 0 };
    struct rd_report rep = { 0 };
    struct rd_transport shown = { 0 };   /* what the summary names after tp is gone */
    double t0 = 0, t1 = 0;
    int rc = derive(o, &key);
    if (rc)
        goto out;
    struct rd_reach reach = rd_reach_of(o);
    const struct rd_params asked = want;
    double give_up = rd_now() + (reach.timeout_s >= 0 ? reach.timeout_s : RD_CONNECT_RETRY_S);
reconnect:
    want = asked;
    rc = rd_connect_any(&reach, &tp);
    if (rc)
        goto wipe_key;
    if (!o->chunk_set && tp->ops == &rd_tcp_ops)
        want.chunk_size = RD_TCP_DEFAULT_CHUNK;
    struct rd_port_addr ports[RD_MAX_RAILS];
    unsigned naddrs, nports = rd_rails_offer(&reach, o->streams_set, tp, ports, &naddrs);
    char link[160];
    uint64_t link_rate = rd_transport_link_rate(tp, link, sizeof link);
    unsigned cores = rd_plan_cores();
    if (nports) {   /* multi-rail by default: a connection per port, as far as the receiver's go */
        want.caps |= RD_CAP_RAILS;
        want.streams = nports;
    } else if (!o->streams_set) {   /* enough connections for the link (run/rd_plan.h) */
        want.streams = plan_streams(o, tp, link, link_rate, cores);
    }
    if (!o->depth_set) {   /* a chunk for each lane the link may need, two for each connection */
        /* rails: a link each, like this one; every connection (rails, --streams) a ring */
        uint64_t rate = link_rate * (nports ? nports : 1);
        unsigned rings = want.streams > 1 ? want.streams : 1;
        uint32_t depth = rd_plan_depth(o->lanes ? o->lanes : plan_lanes(o, rate, o->encrypt, cores),
                                       rings, want.depth);
        /* RDMA pins its rings: past the default only as far as ulimit -l lets this end pin
         * them (the receiver grants what its own lets it pin) */
        if (depth > want.depth && tp->ops == &rd_verbs_ops) {
            uint32_t fit = rd_verbs_pinnable_depth(want.chunk_size, depth, rings, 0);
            depth = fit > want.depth ? fit : want.depth;
        }
        want.depth = depth;
    }
    if (reach.timeout_s >= 0) {   /* --timeout: a receiver that accepts and then says nothing too */
        double left_ms = (give_up - rd_now()) * 1000;
        tp->answer_ms = left_ms < RD_MIN_ANSWER_MS ? RD_MIN_ANSWER_MS
                      : left_ms > RD_SENDER_WAIT_MS ? RD_SENDER_WAIT_MS : (int)left_ms;
    }
    rc = rd_session_sender(tp, &key, &want, &agreed);
    if (rc == RD_ECONNECT && tp->lost && retry_dropped(o, &reach, give_up)) {
        tp->ops->close(tp);
        tp = NULL;
        goto reconnect;
    }
    struct rd_rail_lists lists;
    struct rd_reach rails = reach;
    if (!rc && (agreed.caps & RD_CAP_RAILS)) {
        unsigned n = rd_rails_reach(&reach, tp, &agreed.rails, ports, naddrs, &lists, &rails);
        if (o->verbose)
            say_rails(o->verbose, tp, &agreed.rails, ports, naddrs, n, &rails);
    }
    if (!rc && agreed.streams > 1)
        rc = rd_stripe_join(&rails, &tp, &agreed);
    if (rc)
        goto close_transport;
    char why[200];
    set_local_params(o, &agreed, tp, why, sizeof why);
    if (o->verbose)
        rd_warn("sending %s to %s over %s (chunk %u, depth %u); lanes %u (%s)%s%s", src->name, tp->peer,
                tp->desc, agreed.chunk_size, agreed.depth, agreed.lanes, why,
                cipher_name(&agreed) ? ", encrypted with " : "", cipher_name(&agreed) ? cipher_name(&agreed) : "");
    if (o->verbose && (agreed.chunk_size < want.chunk_size || agreed.depth < want.depth ||
                       (agreed.streams ? agreed.streams : 1) < (want.streams ? want.streams : 1)))
        rd_warn("the receiver granted less than asked: chunk %u of %u, depth %u of %u, %u of %u connections "
                "(its own limits, or what it may pin over RDMA)", agreed.chunk_size,
                want.chunk_size, agreed.depth, want.depth, agreed.streams ? agreed.streams : 1,
                want.streams ? want.streams : 1);
    t0 = rd_now();
    if (o->progress)
        rd_progress_start(&rep, &cnt, src->size);
    rc = rd_engine_send(tp, src, &agreed, &cnt);
    rd_progress_stop(&rep);
    t1 = rd_now();
    if (o->verbose && src->is_regular)
        rd_warn("read %llu bytes from the page cache, %llu with O_DIRECT",
                (unsigned long long)src->cached_bytes, (unsigned long long)src->direct_bytes);
close_transport:
    if (tp) {
        shown = *tp;
        tp->ops->close(tp);
        tp = NULL;
    }
wipe_key:
    rd_key_wipe(&key);
out:
    if (rc)
        rd_report();
    summarize(o, "rdsend", shown.ops ? &shown : NULL, agreed.chunk_size ? &agreed : NULL, &want, &cnt, t1 - t0, rc);
    return rc;
}

int rd_run_send(const struct rd_opts *o)
{
    struct rd_source src;
    int rc = rd_source_open(&src, o->file, o->direct);
    if (rc) {
        rd_report();
        if (o->json)
            summarize(o, "rdsend", NULL, NULL, NULL, NULL, 0, rc);
        return rc;
    }
    rc = rd_send_source(o, &src);
    /* stdin a file: leave its offset past what was sent, as cat does ('{ rdsend ...; cmd; } <
     * file'); the lanes read it with pread, which moves nothing */
    if (rc == RD_OK && src.fd == STDIN_FILENO && src.is_regular)
        lseek(STDIN_FILENO, (off_t)src.offset, SEEK_SET);
    rd_source_close(&src);
    return rc;
}

/* What a receiver does with the connection whose handshake completed first (won: what it
 * agreed): the stream. Every error is final. */
typedef int (*serve_fn)(const struct rd_opts *o, struct rd_listener *lis, struct rd_transport **tpp,
                        const struct rd_params *won, void *ctx);

/* A FIFO sink is opened once a sender is in, and the open waits for the FIFO's reader: a
 * signal meanwhile ends that wait (rd_wake) and is the reason the sender is told. */
struct fifo_wait {
    pthread_t self;
    atomic_int stop;
    struct rd_errctx *err;
};

static int interrupt_fifo_open(void *ctx, int signo)
{
    struct fifo_wait *w = ctx;
    if (!atomic_exchange(&w->stop, 1))
        rd_interrupt_record(w->err, signo);
    rd_wake_kick(w->self);
    return 1;
}

static int begin_sink(struct rd_sink *dst)
{
    if (!dst->fifo_later)
        return rd_sink_begin(dst);
    struct fifo_wait w = { .self = pthread_self(), .err = rd_errctx_current() };
    struct rd_interrupt_hook before;
    rd_wake_install();
    rd_wake_unblock();
    dst->stop = &w.stop;
    rd_interrupt_set(interrupt_fifo_open, &w, &before);
    int rc = rd_sink_begin(dst);
    rd_interrupt_restore(&before);
    dst->stop = NULL;
    if (!rc && atomic_load(&w.stop))   /* the signal came as the open succeeded: it still ends it */
        rc = rd_error_or(RD_EIO);
    return rc;
}

/* The served sender's other stripes, if it has any; then nothing more is accepted on TCP
 * (rd_listener_close_tcp: another sender is refused at once) */
static int take_stripes(struct rd_listener *lis, struct rd_transport **tpp, struct rd_params *agreed)
{
    int rc = agreed->streams > 1 ? rd_stripe_accept(lis, tpp, agreed) : RD_OK;
    rd_listener_close_tcp(lis);
    return rc;
}

static int serve_sink(const struct rd_opts *o, struct rd_listener *lis, struct rd_transport **tpp,
                      const struct rd_params *won, void *ctx)
{
    struct rd_sink *dst = ctx;
    struct rd_params agreed = *won;
    struct rd_counters cnt = { 0 };
    struct rd_report rep = { 0 };
    int rc = take_stripes(lis, tpp, &agreed);
    if (rc)
        return rc;
    struct rd_transport *tp = *tpp;
    char why[200];
    set_local_params(o, &agreed, tp, why, sizeof why);
    if (o->verbose)
        rd_warn("receiving from %s over %s (chunk %u, depth %u) into %s; lanes %u (%s)%s%s", tp->peer, tp->desc,
                agreed.chunk_size, agreed.depth, dst->name, agreed.lanes, why,
                cipher_name(&agreed) ? ", encrypted with " : "", cipher_name(&agreed) ? cipher_name(&agreed) : "");
    if (agreed.depth_asked)   /* it works, slower than it could: say why, once */
        rd_warn("warning: ulimit -l lets this end pin %u frames in flight, not the %u the sender asked for; "
                "raise it for full speed (rdcheck names the value)", agreed.depth, agreed.depth_asked);
    rc = begin_sink(dst);
    if (rc) {   /* the sender is in and waits: tell it why, as the engine would */
        rd_send_reason(tp, RD_ABORT, rc, rd_error_msg());
        return rc;
    }
    double t0 = rd_now();
    if (o->progress)
        rd_progress_start(&rep, &cnt, 0);
    rc = rd_engine_recv(tp, dst, &agreed, &cnt);
    rd_progress_stop(&rep);
    double t1 = rd_now();
    if (o->verbose && dst->synced)
        rd_warn("flushed %s to the disk in %.2f s (--no-sync skips this)", dst->name, dst->sync_seconds);
    summarize(o, "rdrecv", tp, &agreed, NULL, &cnt, t1 - t0, rc);
    return rc;
}

/* The addresses of this host's active RDMA ports (of -d's devices), for RAILS. */
static void rails_of(const char *devices, struct rd_rails *out)
{
    struct rd_port_addr ports[RD_MAX_RAILS];
    rd_rails_of_ports(ports, rd_rails_local(devices, ports, RD_MAX_RAILS), out);
}

/* Listen, run the handshake of every connection at once (rd_waiting), and serve the first
 * that completes (or give up when the timeout passes). */
static int serve_relay(const struct rd_opts *o, struct rd_listener *lis, struct rd_transport **tpp,
                       const struct rd_params *won, void *ctx);

static int accept_loop(const struct rd_opts *o, serve_fn serve, void *ctx)
{
    struct rd_key key;
    struct rd_listener lis;
    struct rd_throttle throttle;   /* rdrecv slows down addresses that keep failing */
    struct rd_params agreed = { 0 };
    struct rd_transport *tp = NULL;
    int served = 0;
    int rc = derive(o, &key);
    if (rc)
        goto out;
    struct rd_reach reach = rd_reach_of(o);
    rc = rd_listen_any(&reach, &lis);
    if (rc)
        goto wipe_key;
    /* PORT 0 is a port the system picked: unless --ready-fd reports it, only this line can */
    int port_unknown = strtol(o->port, NULL, 10) == 0 && o->ready_fd < 0;
    if (o->verbose || port_unknown)
        rd_warn("listening on port %u (%s)", lis.lis[0]->local_port,
                lis.count == 2 ? "tcp and rdma" : lis.lis[0]->ops->name);
    if (o->ready_fd >= 0) {   /* whoever waits for the port must not wait forever */
        char line[16];
        int n = snprintf(line, sizeof line, "%u\n", lis.lis[0]->local_port);
        if (write(o->ready_fd, line, (size_t)n) != n) {
            rc = rd_fail(RD_EIO, "cannot write the port to --ready-fd %d: %s", o->ready_fd, strerror(errno));
            goto close_listener;
        }
        if (o->ready_fd > STDERR_FILENO)   /* its end of file; 0-2 stay this tool's */
            close(o->ready_fd);
    }
    /* rd_waiting runs the handshake of every accepted connection at once, each in a thread of
     * its own: a stalled peer costs the others nothing */
    atomic_int claim = 0;   /* one stream: the first sender to prove the key takes it */
    struct rd_receiver_arg ha = {
        .key = &key,
        .claim = &claim,
        .limits = {
            .chunk_size = o->chunk_set ? o->chunk_size : RD_RECV_MAX_CHUNK,
            .depth = o->depth_set ? o->depth : RD_RECV_MAX_DEPTH,
            .max_inflight = o->chunk_set || o->depth_set ? 0 : RD_RECV_MAX_INFLIGHT,
            .streams = o->streams_set ? o->streams : RD_MAX_STREAMS,   /* a relay's too: it passes them on */
            .caps = rd_cipher_grant() | RD_FLAG_COMPRESSED,   /* a sender may encrypt or compress */
            .require_caps = o->encrypt ? RD_FLAG_ENCRYPTED : 0,
            .relay = serve == serve_relay,
        },
    };
    if (o->transport != RD_T_TCP && !o->bind)   /* a sender may stripe over our rails (a relay's too) */
        rails_of(o->device, &ha.limits.rails);
    rd_throttle_init(&throttle);
    struct rd_waiting_cfg cfg = { .handshake = rd_session_receiver_arg, .arg = &ha, .arg_size = sizeof ha,
                                  .result_size = sizeof agreed, .deadline_ms = RD_HANDSHAKE_MS,
                                  .throttle = &throttle, .stripes_later = 1,
                                  .discarded = rd_session_receiver_discarded };
    struct rd_waiting *waiting = rd_waiting_new(&cfg);
    int timeout_ms = o->timeout_s < 0 ? -1 : o->timeout_s > INT_MAX / 1000 ? INT_MAX : o->timeout_s * 1000;
    rc = waiting ? rd_waiting_next(waiting, &lis, -1, timeout_ms, &tp, &agreed) : rd_error_or(RD_EIO);
    /* one sender is served: the other handshakes end here, before its stream starts; what
     * had not been read yet waits for its stripes' set, if it has stripes */
    rd_waiting_free(waiting);
    if (rc || agreed.streams <= 1)
        rd_waiting_drop_early(&lis);
    if (!rc) {
        served = 1;
        rc = serve(o, &lis, &tp, &agreed, ctx);
        if (tp)
            tp->ops->close(tp);
    }
close_listener:
    explicit_bzero(&agreed, sizeof agreed);   /* the session's keys */
    rd_waiting_drop_early(&lis);   /* stripes that came early and were not taken */
    rd_listener_close(&lis);
wipe_key:
    rd_key_wipe(&key);
out:
    if (rc) {
        rd_report();
        if (!served)
            summarize(o, "rdrecv", NULL, NULL, NULL, NULL, 0, rc);
    }
    return rc;
}

int rd_recv_sink(const struct rd_opts *o, struct rd_sink *dst)
{
    return accept_loop(o, serve_sink, dst);
}

/* ---- relay (rdrecv --relay-fd N, what rdpipe runs for a `cat` segment) ---- */

/* "HOST PORT KEY" on the relay fd: where the stream goes next. Blocks until the agent has
 * it (rdpipe says it only when the whole pipeline is set up). */
static int read_next_hop(int fd, char *host, char *port, char *key, size_t keycap)
{
    char line[1024];
    size_t got = 0;
    while (got < sizeof line - 1 && !memchr(line, '\n', got)) {
        ssize_t n = read(fd, line + got, sizeof line - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    line[got] = '\0';
    char fmt[64];
    snprintf(fmt, sizeof fmt, "%%255s %%31s %%%zus", keycap - 1);
    int ok = sscanf(line, fmt, host, port, key) == 3;
    memset(line, 0, sizeof line);
    return ok ? RD_OK : rd_fail(RD_EIO, "no next hop on the relay descriptor");
}

static int serve_relay(const struct rd_opts *o, struct rd_listener *lis, struct rd_transport **tpp,
                       const struct rd_params *won, void *ctx)
{
    (void)ctx;
    struct rd_params agreed = *won, down_agreed = { 0 };
    struct rd_counters cnt = { 0 };
    struct rd_report rep = { 0 };
    struct rd_transport *down = NULL;
    struct rd_key down_key;
    char host[256], port[32], keytext[512];
    double t0 = 0, t1 = 0;
    /* a striped upstream stays striped: its connections first (they are on their way now),
     * then downstream asks for as many, so no hop of a pipeline is one core's copy */
    int rc = take_stripes(lis, tpp, &agreed);
    struct rd_transport *up = *tpp;
    if (rc) {   /* upstream has its ABORT */
        summarize(o, "rdrecv", up, &agreed, NULL, &cnt, 0, rc);
        return rc;
    }
    if (agreed.depth_asked)   /* it works, slower than it could: say why, once */
        rd_warn("warning: ulimit -l lets this relay pin %u frames in flight (both hops' rings, the upstream's "
                "twice), not the %u the sender asked for; raise it for full speed", agreed.depth, agreed.depth_asked);
    rc = read_next_hop(o->relay_fd, host, port, keytext, sizeof keytext);
    if (rc)
        goto tell_upstream;
    struct rd_opts d = *o;
    d.is_sender = 1;
    d.host = host;
    d.port = port;
    d.bind = NULL;
    d.timeout_s = -1;
    /* -d names the ports this relay offers upstream as rails; downstream it goes out of the
     * first one named, every connection alike (a list would put connection i on entry i) */
    char first_dev[128];
    if (o->device && strchr(o->device, ',')) {
        snprintf(first_dev, sizeof first_dev, "%.*s", (int)strcspn(o->device, ","), o->device);
        d.device = first_dev;
    }
    rc = rd_key_derive(&down_key, keytext, strlen(keytext)) ? rd_fail(RD_EIO, "libcrypto cannot derive the key") : RD_OK;
    memset(keytext, 0, sizeof keytext);
    if (rc)
        goto tell_upstream;
    struct rd_reach down_reach = rd_reach_of(&d);
    rc = rd_connect_any(&down_reach, &down);
    if (rc)
        goto wipe_key;
    /* downstream: as many connections as came in, over this host's route to the next hop;
     * rails upstream are ours, not the next hop's (asking for its rails would get one
     * connection from a receiver with one port) */
    struct rd_params want = agreed;
    want.caps &= ~RD_CAP_RAILS;
    memset(&want.rails, 0, sizeof want.rails);
    rc = rd_session_sender(down, &down_key, &want, &down_agreed);
    if (!rc && down_agreed.streams > 1)
        rc = rd_stripe_join(&down_reach, &down, &down_agreed);
    if (!down)   /* the stripes took connection 0 with them */
        goto wipe_key;
    if (!rc && down_agreed.chunk_size < agreed.chunk_size)
        rc = rd_fail(RD_ESTREAM, "downstream %s takes chunks of at most %u bytes, the sender sends %u",
                     down->peer, down_agreed.chunk_size, agreed.chunk_size);
    /* frames pass on as they are: downstream must take each codec the sender's use, and their
     * cipher (every receiver opens GCM and ChaCha20-Poly1305; OCB only one that grants it) */
    uint32_t needs = agreed.caps & (RD_FLAG_COMPRESSED | RD_FLAG_ENCRYPTED);
    if ((needs & RD_FLAG_ENCRYPTED) && rd_cipher_agreed(agreed.caps) == RD_CIPHER_AES_256_OCB)
        needs |= RD_FLAG_AES_OCB;
    uint32_t missing = needs & ~down_agreed.caps;
    if (!rc && missing)
        rc = rd_fail(RD_ESTREAM, "downstream %s cannot %s the sender's %s chunks", down->peer,
                     missing & (RD_FLAG_ENCRYPTED | RD_FLAG_COMPRESSED) ? "take" : "open",
                     missing & RD_FLAG_ENCRYPTED ? "encrypted" : missing & RD_FLAG_COMPRESSED ? "compressed" : "aes-256-ocb");
    if (rc)
        goto close_down;
    if (o->verbose)
        rd_warn("relaying from %s over %s to %s over %s (chunk %u)", up->peer, up->desc, down->peer,
                down->desc, agreed.chunk_size);
    t0 = rd_now();
    if (o->progress)
        rd_progress_start(&rep, &cnt, 0);
    rc = rd_relay(up, down, &agreed, &cnt);
    rd_progress_stop(&rep);
    t1 = rd_now();
close_down:
    down->ops->close(down);
wipe_key:
    rd_key_wipe(&down_key);
tell_upstream:
    if (rc && !t0)
        rd_send_reason(up, RD_ABORT, rd_error_code(), rd_error_msg());
    summarize(o, "rdrecv", up, &agreed, NULL, &cnt, t1 - t0, rc);
    return rc;
}

int rd_run_relay(const struct rd_opts *o)
{
    return accept_loop(o, serve_relay, NULL);
}

/* FILE that this run created and no sender ever wrote (a timeout, no sender with the key):
 * gone again, so no empty file looks like an empty transfer. Only while the name is still
 * that empty file. */
static void unlink_untouched(const char *path, int fd)
{
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
        S_ISREG(b.st_mode) && b.st_size == 0)
        unlink(path);
}

struct created_file {
    const char *path;
    int fd;
};

/* A signal before any stream has begun: the FILE goes as after a timeout, and the tool dies
 * (a stream's own hook, the engine's, replaces this one while it runs). */
static int interrupt_waiting(void *ctx, int signo)
{
    (void)signo;
    const struct created_file *f = ctx;
    unlink_untouched(f->path, f->fd);
    return 0;
}

int rd_run_recv(const struct rd_opts *o)
{
    struct rd_sink dst;
    int rc = rd_sink_open(&dst, o->file);
    if (rc) {
        rd_report();
        if (o->json)
            summarize(o, "rdrecv", NULL, NULL, NULL, NULL, 0, rc);
        return rc;
    }
    dst.sync = o->sync;
    if (o->direct)
        rd_sink_use_direct(&dst);
    struct created_file created = { o->file, dst.fd };
    struct rd_interrupt_hook none;
    if (dst.dir_fd >= 0)
        rd_interrupt_set(interrupt_waiting, &created, &none);
    rc = rd_recv_sink(o, &dst);
    if (dst.dir_fd >= 0)
        rd_interrupt_restore(&none);
    if (rc && dst.dir_fd >= 0 && !dst.begun)
        unlink_untouched(o->file, dst.fd);
    rd_sink_close(&dst);
    return rc;
}

int rd_tool_main(int argc, char **argv, int is_sender)
{
    struct rd_opts o;
    rd_set_progname(is_sender ? "rdsend" : "rdrecv");
    /* a closed stdout or a dead peer must be an error return, not a silent death; so must a
     * file over `ulimit -f` (EFBIG: the sender is told why, not only that we vanished) */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    int rc = rd_cli_parse(argc, argv, is_sender, &o);
    if (rc == RD_CLI_EXIT_OK) {
        rd_cli_free(&o);
        return 0;
    }
    if (rc) {
        rd_report();
        rd_cli_free(&o);
        return rc;
    }
    /* SIGINT, SIGTERM, SIGHUP: the peer is told, then we die by the signal (rd_interrupt) */
    if (rd_interrupt_install())
        rd_warn("warning: cannot watch for signals; an interrupt will not be told to the peer");
    if (is_sender)
        rc = rd_run_send(&o);
    else
        rc = o.relay_fd >= 0 ? rd_run_relay(&o) : rd_run_recv(&o);
    rd_cli_free(&o);
    rd_interrupt_finish();
    return rc;
}
