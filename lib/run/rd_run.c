#include "run/rd_run.h"
#include "util/rd_clock.h"

#include "wire/rd_auth.h"
#include "engine/rd_engine.h"
#include "engine/rd_relay.h"
#include "util/rd_error.h"
#include "run/rd_report.h"
#include "transport/rd_select.h"
#include "transport/rd_session.h"
#include "transport/rd_stripe.h"
#include "transport/rd_waiting.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void summarize(const struct rd_opts *o, const char *tool, const struct rd_transport *tp,
                      const struct rd_params *p, uint64_t bytes, double seconds, int rc)
{
    struct rd_summary s = {
        .tool = tool, .transport = tp ? tp->desc : NULL, .peer = tp ? tp->peer : NULL,
        .bytes = bytes, .seconds = seconds, .chunk_size = p ? p->chunk_size : 0,
        .depth = p ? p->depth : 0, .exit_code = rc, .error = rc ? rd_error_msg() : NULL,
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

int rd_send_source(const struct rd_opts *o, struct rd_source *src)
{
    struct rd_key key;
    struct rd_transport *tp = NULL;
    struct rd_params want = { .chunk_size = o->chunk_size, .depth = o->depth, .streams = o->streams },
                     agreed = { 0 };
    struct rd_counters cnt = { 0 };
    struct rd_report rep = { 0 };
    struct rd_transport shown = { 0 };   /* what the summary names after tp is gone */
    double t0 = 0, t1 = 0;
    int rc = derive(o, &key);
    if (rc)
        goto out;
    struct rd_reach reach = rd_reach_of(o);
    rc = rd_connect_any(&reach, &tp);
    if (rc)
        goto wipe_key;
    if (!o->chunk_set && tp->ops == &rd_tcp_ops)
        want.chunk_size = RD_TCP_DEFAULT_CHUNK;
    rc = rd_session_sender(tp, &key, &want, &agreed);
    if (!rc && agreed.streams > 1)
        rc = rd_stripe_join(&reach, &tp, &agreed);
    if (rc)
        goto close_transport;
    if (o->verbose)
        rd_warn("sending %s to %s over %s (chunk %u, depth %u)", src->name, tp->peer, tp->desc,
                agreed.chunk_size, agreed.depth);
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
    summarize(o, "rdsend", shown.ops ? &shown : NULL, agreed.chunk_size ? &agreed : NULL,
              atomic_load(&cnt.bytes), t1 - t0, rc);
    return rc;
}

int rd_run_send(const struct rd_opts *o)
{
    struct rd_source src;
    int rc = rd_source_open(&src, o->file, o->direct);
    if (rc) {
        rd_report();
        if (o->json)
            summarize(o, "rdsend", NULL, NULL, 0, 0, rc);
        return rc;
    }
    rc = rd_send_source(o, &src);
    rd_source_close(&src);
    return rc;
}

/* What a receiver does with one connection: handshake, then the stream. Returns RD_OK, an
 * error of this peer that leaves the receiver listening (*retry = 1), or a final error. */
typedef int (*serve_fn)(const struct rd_opts *o, struct rd_listener *lis, struct rd_transport **tpp,
                        const struct rd_key *key, void *ctx, int *retry);

static int handshake(const struct rd_opts *o, struct rd_transport *tp, const struct rd_key *key,
                     struct rd_params *agreed, int *retry)
{
    struct rd_params limits = {
        .chunk_size = o->chunk_set ? o->chunk_size : RD_RECV_MAX_CHUNK,
        .depth = o->depth_set ? o->depth : RD_RECV_MAX_DEPTH,
        .streams = o->relay_fd >= 0 ? 1 : o->streams_set ? o->streams : RD_MAX_STREAMS,
    };
    int rc = rd_session_receiver(tp, key, &limits, agreed);
    /* nothing of a peer that failed here was written: keep listening for the right sender */
    *retry = rc != RD_OK;
    return rc;
}

static int serve_sink(const struct rd_opts *o, struct rd_listener *lis, struct rd_transport **tpp,
                      const struct rd_key *key, void *ctx, int *retry)
{
    struct rd_sink *dst = ctx;
    struct rd_params agreed = { 0 };
    struct rd_counters cnt = { 0 };
    struct rd_report rep = { 0 };
    int rc = handshake(o, *tpp, key, &agreed, retry);
    if (!rc && agreed.streams > 1)
        rc = rd_stripe_accept(lis, tpp, &agreed);
    if (rc)
        return rc;
    struct rd_transport *tp = *tpp;
    if (o->verbose)
        rd_warn("receiving from %s over %s (chunk %u, depth %u) into %s", tp->peer, tp->desc,
                agreed.chunk_size, agreed.depth, dst->name);
    rc = rd_sink_begin(dst);
    if (rc)
        return rc;
    double t0 = rd_now();
    if (o->progress)
        rd_progress_start(&rep, &cnt, 0);
    rc = rd_engine_recv(tp, dst, &agreed, &cnt);
    rd_progress_stop(&rep);
    double t1 = rd_now();
    if (o->verbose && dst->synced)
        rd_warn("flushed %s to the disk in %.2f s (--no-sync skips this)", dst->name, dst->sync_seconds);
    summarize(o, "rdrecv", tp, &agreed, atomic_load(&cnt.bytes), t1 - t0, rc);
    return rc;
}

/* Listen, then hand connections to serve until one is served (or the timeout passes). */
static int accept_loop(const struct rd_opts *o, serve_fn serve, void *ctx)
{
    struct rd_key key;
    struct rd_listener lis;
    struct rd_waiting waiting = { .n = 0 };
    int served = 0;
    int rc = derive(o, &key);
    if (rc)
        goto out;
    struct rd_reach reach = rd_reach_of(o);
    rc = rd_listen_any(&reach, &lis);
    if (rc)
        goto wipe_key;
    if (o->verbose)
        rd_warn("listening on port %u (%s)", lis.lis[0]->local_port,
                lis.count == 2 ? "tcp and rdma" : lis.lis[0]->ops->name);
    if (o->ready_fd >= 0) {
        dprintf(o->ready_fd, "%u\n", lis.lis[0]->local_port);
        close(o->ready_fd);
    }
    double deadline = o->timeout_s >= 0 ? rd_now() + o->timeout_s : -1;
    for (;;) {
        int left_ms = -1;
        if (deadline >= 0) {
            double left = deadline - rd_now();
            left_ms = left > 0 ? (int)(left * 1000) + 1 : 0;   /* round up: poll truncates */
        }
        struct rd_transport *tp;
        rc = rd_waiting_next(&waiting, &lis, -1, left_ms, &tp);
        if (rc == RD_ECONNECT && deadline >= 0 && rd_now() >= deadline - 0.002)
            break;   /* timed out waiting for a sender */
        if (rc) {
            rd_report();   /* one line, and keep listening */
            rd_error_clear();
            continue;
        }
        int retry;
        rc = serve(o, &lis, &tp, &key, ctx, &retry);
        served = !retry;
        if (tp)
            tp->ops->close(tp);
        if (rc && retry) {
            rd_report();
            rd_error_clear();
            continue;
        }
        break;
    }
    rd_waiting_close(&waiting);
    rd_listener_close(&lis);
wipe_key:
    rd_key_wipe(&key);
out:
    if (rc) {
        rd_report();
        if (!served)
            summarize(o, "rdrecv", NULL, NULL, 0, 0, rc);
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
                       const struct rd_key *key, void *ctx, int *retry)
{
    (void)ctx;
    (void)lis;
    struct rd_transport *up = *tpp;
    struct rd_params agreed = { 0 }, down_agreed = { 0 };
    struct rd_counters cnt = { 0 };
    struct rd_report rep = { 0 };
    struct rd_transport *down = NULL;
    struct rd_key down_key;
    char host[256], port[32], keytext[512];
    double t0 = 0, t1 = 0;
    int rc = handshake(o, up, key, &agreed, retry);
    if (rc)
        return rc;
    rc = read_next_hop(o->relay_fd, host, port, keytext, sizeof keytext);
    if (rc)
        goto tell_upstream;
    struct rd_opts d = *o;
    d.is_sender = 1;
    d.host = host;
    d.port = port;
    d.bind = NULL;
    d.timeout_s = -1;
    rc = rd_key_derive(&down_key, keytext, strlen(keytext)) ? rd_fail(RD_EIO, "libcrypto cannot derive the key") : RD_OK;
    memset(keytext, 0, sizeof keytext);
    if (rc)
        goto tell_upstream;
    struct rd_reach down_reach = rd_reach_of(&d);
    rc = rd_connect_any(&down_reach, &down);
    if (rc)
        goto wipe_key;
    rc = rd_session_sender(down, &down_key, &agreed, &down_agreed);
    if (!rc && down_agreed.chunk_size < agreed.chunk_size)
        rc = rd_fail(RD_ESTREAM, "downstream %s takes chunks of at most %u bytes, the sender sends %u",
                     down->peer, down_agreed.chunk_size, agreed.chunk_size);
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
    summarize(o, "rdrecv", up, &agreed, atomic_load(&cnt.bytes), t1 - t0, rc);
    return rc;
}

int rd_run_relay(const struct rd_opts *o)
{
    return accept_loop(o, serve_relay, NULL);
}

int rd_run_recv(const struct rd_opts *o)
{
    struct rd_sink dst;
    int rc = rd_sink_open(&dst, o->file);
    if (rc) {
        rd_report();
        if (o->json)
            summarize(o, "rdrecv", NULL, NULL, 0, 0, rc);
        return rc;
    }
    dst.sync = o->sync;
    if (o->direct)
        rd_sink_use_direct(&dst);
    rc = rd_recv_sink(o, &dst);
    rd_sink_close(&dst);
    return rc;
}

int rd_tool_main(int argc, char **argv, int is_sender)
{
    struct rd_opts o;
    rd_set_progname(is_sender ? "rdsend" : "rdrecv");
    /* a closed stdout or a dead peer must be an error return, not a silent death */
    signal(SIGPIPE, SIG_IGN);
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
    if (is_sender)
        rc = rd_run_send(&o);
    else
        rc = o.relay_fd >= 0 ? rd_run_relay(&o) : rd_run_recv(&o);
    rd_cli_free(&o);
    return rc;
}
