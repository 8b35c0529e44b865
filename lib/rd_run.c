#include "rd_run.h"

#include "rd_auth.h"
#include "rd_engine.h"
#include "rd_error.h"
#include "rd_report.h"
#include "rd_select.h"
#include "rd_session.h"

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
    struct rd_params want = { .chunk_size = o->chunk_size, .depth = o->depth }, agreed = { 0 };
    struct rd_counters cnt = { 0 };
    struct rd_report rep = { 0 };
    struct rd_transport shown = { 0 };   /* what the summary names after tp is gone */
    double t0 = 0, t1 = 0;
    int rc = derive(o, &key);
    if (rc)
        goto out;
    rc = rd_connect_any(o, &tp);
    if (rc)
        goto wipe_key;
    if (!o->chunk_set && tp->ops == &rd_tcp_ops)
        want.chunk_size = RD_TCP_DEFAULT_CHUNK;
    rc = rd_session_sender(tp, &key, &want, &agreed);
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
    shown = *tp;
    tp->ops->close(tp);
    tp = NULL;
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

/* One connection: handshake, then the stream. Returns RD_OK, an error of this peer that
 * leaves the receiver listening (*retry = 1), or a final error. */
static int serve(const struct rd_opts *o, struct rd_transport *tp, const struct rd_key *key,
                 struct rd_sink *dst, int *retry)
{
    struct rd_params limits = {
        .chunk_size = o->chunk_set ? o->chunk_size : RD_RECV_MAX_CHUNK,
        .depth = o->depth_set ? o->depth : RD_RECV_MAX_DEPTH,
    }, agreed = { 0 };
    struct rd_counters cnt = { 0 };
    struct rd_report rep = { 0 };
    *retry = 0;
    int rc = rd_session_receiver(tp, key, &limits, &agreed);
    if (rc) {
        /* nothing of this peer was written: keep listening for the right sender */
        *retry = 1;
        return rc;
    }
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
    summarize(o, "rdrecv", tp, &agreed, atomic_load(&cnt.bytes), t1 - t0, rc);
    return rc;
}

int rd_recv_sink(const struct rd_opts *o, struct rd_sink *dst)
{
    struct rd_key key;
    struct rd_listener lis;
    int served = 0;
    int rc = derive(o, &key);
    if (rc)
        goto out;
    rc = rd_listen_any(o, &lis);
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
        rc = rd_accept_any(&lis, &tp, left_ms);
        if (rc == RD_ECONNECT && deadline >= 0 && rd_now() >= deadline - 0.002)
            break;   /* timed out waiting for a sender */
        if (rc) {
            rd_report();   /* one line, and keep listening */
            rd_error_clear();
            continue;
        }
        int retry;
        rc = serve(o, tp, &key, dst, &retry);
        served = !retry;
        tp->ops->close(tp);
        if (rc && retry) {
            rd_report();
            rd_error_clear();
            continue;
        }
        break;
    }
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
    rc = is_sender ? rd_run_send(&o) : rd_run_recv(&o);
    rd_cli_free(&o);
    return rc;
}
