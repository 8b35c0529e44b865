/* rdb_listen.c - rdb_serve (rdb_net.h): the bench server's accept loop, for rdbench --server
 * and rdrecv --check.
 *
 * Like rdrecv's: every accepted connection runs its handshake (rd_session_receiver, the same
 * authentication) in a thread of its own beside the others (transport/rd_waiting), and the
 * first to complete is served, so a connection that is silent, or sends half a HELLO and
 * stalls, costs the client nothing; an address whose handshakes keep failing is slowed down
 * (transport/rd_throttle). The set lives as long as the server: handshakes that arrive while
 * a client is served go on. One client is served at a time: while it is, the doorman
 * (rdb_door.h) accepts the rest, and each that proves the key is told within a second that the
 * server is busy (exit 2 there), as iperf3 does; before 2026-12-07 it waited unanswered 30 s.
 * Serving is bounded by --timeout, and a client that stalls (RDB_STALL_MS) is dropped, the
 * guard (rdb_guard) ending a send it does not read. */
#include "bench/rdb_net.h"

#include "bench/rdb_dev.h"
#include "bench/rdb_door.h"
#include "bench/rdb_guard.h"
#include "transport/rd_throttle.h"
#include "transport/rd_waiting.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* One authenticated client, served under the guard; *bye as rdb_serve_conn. The guard's
 * verdict, for the loop: RDB_GUARD_GONE ends it. */
static int serve_one(struct rd_transport *tp, const struct rd_params *agreed, const struct rdb_server_cfg *cfg,
                     double deadline, int *bye)
{
    struct rdb_guard g;
    int guarded = rdb_guard_start(&g, tp, deadline, RDB_STALL_MS, cfg->watch_fd) == RD_OK;
    if (!guarded) {   /* out of threads: serve it anyway; its own limits still hold */
        rd_report();
        rd_error_clear();
    }
    if (cfg->verbose)
        rd_warn("client %s over %s (messages up to %u bytes, depth %u)", tp->peer, tp->desc, agreed->chunk_size,
                agreed->depth);
    int rc = rdb_serve_conn(tp, agreed, cfg, guarded ? &g : NULL, bye);
    int why = guarded ? rdb_guard_stop(&g) : RDB_GUARD_NONE;
    if (guarded)
        rc = rdb_guard_explain(&g, rc);
    if (rc) {
        if (why != RDB_GUARD_GONE)
            rd_report();   /* one line, and keep serving */
        rd_error_clear();
    }
    return why;
}

int rdb_serve(const struct rd_reach *reach, const struct rd_key *key, const struct rdb_server_cfg *cfg)
{
    struct rd_listener lis;
    int rc = rd_listen_any(reach, &lis), served = 0, came = 0;
    if (rc)
        return rc;
    unsigned port = lis.lis[0]->local_port;
    const char *kinds = lis.count == 2 ? "tcp,rdma" : lis.lis[0]->ops->name;
    if (cfg->ready_line) {
        char range[32];
        rdb_port_range(range, sizeof range);
        printf(cfg->ready_line, port, kinds, range[0] ? range : "?");
        fflush(stdout);
    }
    if (cfg->verbose)
        rd_warn("listening on port %u (%s)", port, kinds);
    struct rd_throttle throttle;   /* an address that keeps failing handshakes is slowed down */
    rd_throttle_init(&throttle);
    atomic_int claim = 0;   /* the one client served: the others are told RDB_BUSY_TEXT */
    struct rd_receiver_arg ha = {
        .key = key,
        .claim = &claim,
        .busy = RDB_BUSY_TEXT,
        .claim_wait_ms = RDB_BUSY_WAIT_MS,
        .limits = { .chunk_size = RDB_MAX_SIZE, .depth = RDB_MAX_DEPTH, .streams = 1,
                    .max_inflight = RDB_SERVER_INFLIGHT },
    };
    struct rd_params agreed = { 0 };
    struct rd_waiting_cfg wcfg = { .handshake = rd_session_receiver_arg, .arg = &ha, .arg_size = sizeof ha,
                                   .result_size = sizeof agreed, .deadline_ms = RD_HANDSHAKE_MS,
                                   .throttle = &throttle, .discarded = rd_session_receiver_discarded };
    struct rd_waiting *waiting = rd_waiting_new(&wcfg);
    if (!waiting) {
        rd_listener_close(&lis);
        return rd_error_or(RD_EIO);
    }
    struct rdb_door door;
    rdb_door_init(&door, waiting, &lis);
    double deadline = reach->timeout_s >= 0 ? rd_now() + reach->timeout_s : -1;
    for (;;) {
        struct rd_transport *tp = NULL;
        rc = rd_waiting_next(waiting, &lis, cfg->watch_fd, rd_ms_until(deadline), &tp, &agreed);
        if (rc) {   /* --timeout ran out (rd_waiting stopped every handshake) or poll failed */
            if (rc == RD_ECONNECT && served && !cfg->once) {
                rd_error_clear();   /* a server that served someone ran its time */
                rc = RD_OK;
            } else if (rc == RD_ECONNECT) {
                rc = rd_fail_instead(RD_ECONNECT, "timed out after %d s%s", reach->timeout_s,
                                     cfg->once ? " without a BYE from rdcheck"
                                     : came    ? " without an rdbench client"
                                               : " waiting for a client");
            }
            break;
        }
        if (!tp) {   /* watch_fd is readable */
            if (rdb_watch_ended(cfg->watch_fd)) {
                rc = rd_fail(RD_ECONNECT, "%s", RDB_GUARD_GONE_TEXT);
                break;
            }
            continue;
        }
        came++;
        int bye = 0;
        rdb_door_open(&door);
        int why = serve_one(tp, &agreed, cfg, deadline, &bye);
        /* the claim is given back once the door is closed: a handshake that takes it is
         * the loop's to serve, never the doorman's. One that waits for it (RDB_BUSY_WAIT_MS)
         * is the client's next connection, come while its last one was being closed here */
        rdb_door_close(&door);
        atomic_store(&claim, 0);
        served += bye >= 0;   /* an rdsend, refused, was not served */
        explicit_bzero(&agreed, sizeof agreed);   /* the session's keys */
        tp->ops->close(tp);
        if (why == RDB_GUARD_GONE) {
            rc = rd_fail(RD_ECONNECT, "%s", RDB_GUARD_GONE_TEXT);
            break;
        }
        if (cfg->once && bye == 1)
            break;
        if (deadline >= 0 && rd_now() >= deadline) {
            rc = cfg->once ? rd_fail(RD_ECONNECT, "timed out after %d s without a BYE from rdcheck", reach->timeout_s)
                 : served  ? RD_OK
                           : rd_fail(RD_ECONNECT, "timed out after %d s without an rdbench client", reach->timeout_s);
            break;
        }
    }
    rdb_door_free(&door);
    rd_waiting_free(waiting);
    rd_listener_close(&lis);
    return rc;
}
