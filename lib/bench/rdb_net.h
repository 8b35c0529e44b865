/* rdb_net.h - rdbench's client and server over an authenticated rd_transport (rdb_msg.h
 * says what travels).
 *
 * A client connection is one rdsend-style session (rd_session_sender) that asked for
 * chunk = the largest message it will send and depth = the most it will keep in flight. A
 * point of the sweep posts DATA messages and keeps `depth` of them unanswered; the server
 * answers each with an ACK as soon as it arrived, so the time from posting a message to its
 * ACK is its latency (at depth 1 a ping-pong: one message of `size` bytes out, 32 back).
 * For traffic the other way (REVERSE) both ends add the ring of the other direction
 * (setup_ring) and the server sends while the client answers.
 *
 * Every call returns RD_OK or an rd_err code after recording a one-line message. */
#ifndef RDB_NET_H
#define RDB_NET_H

#include <stddef.h>
#include <stdint.h>

#include "bench/rdb_guard.h"
#include "bench/rdb_msg.h"
#include "transport/rd_select.h"
#include "transport/rd_session.h"

#define RDB_MAX_SIZE (64u << 20)     /* the largest message: what rdrecv grants too */
#define RDB_MAX_DEPTH 64u
#define RDB_LAT_SAMPLES (1u << 17)   /* latencies kept per point for the percentiles */
#define RDB_ANSWER_MS 30000          /* client: an answer that takes longer is a dead server */
#define RDB_SEND_MS 30000            /* client: a send blocked this long: the server stopped reading */
/* server: a client that sends nothing (its next request, an ACK), or reads nothing, this long
 * is dropped; every other client is turned away while one is served, so a stalled one holds
 * the server this long at most (before 2026-12-07: 60 s silent, 30 s not reading) */
#define RDB_STALL_MS 10000
/* server: the REJECT for a client that proves the key while another is served (rdb_door.h) */
#define RDB_BUSY_TEXT "busy with another client's test (rdbench --server runs one at a time)"
/* server: how long such a client's handshake waits for the served one to finish first: the
 * served client's next connection (one per message size) may come an instant before */
#define RDB_BUSY_WAIT_MS 1000
#define RDB_SERVER_INFLIGHT (256u << 20)   /* server: chunk x depth it grants a client at most
                                            * (each ring; rdbench's default --max-inflight) */

struct rdb_conn {
    struct rd_transport *tp;
    struct rd_params agreed;
    uint64_t seq;            /* next DATA number */
    int reverse_ring;        /* the receive ring for REVERSE is set up */
    int answer_ms;           /* an answer that takes longer is a dead server (0:
                              * RDB_ANSWER_MS); also what a REVERSE run may overrun its time */
    struct rdb_guard guard;  /* ends a send the server does not read (rdb_conn_guard) */
    int guarded;
};

/* What one point measured. */
struct rdb_result {
    uint64_t ops;            /* messages answered inside the measured window */
    double seconds;          /* the window */
    double bps;              /* ops * size / seconds */
    double ops_per_s;
    double p50, p99;         /* latency, seconds */
};

/* Connect and authenticate; want_size/want_depth: the largest message and depth to come. The
 * server may grant a smaller depth (it holds chunk x depth at most RDB_SERVER_INFLIGHT):
 * c->agreed.depth says how deep this connection goes. */
int rdb_connect(const struct rd_reach *reach, const struct rd_key *key, uint32_t want_size,
                uint32_t want_depth, struct rdb_conn *c);
/* Watch c's sends (rdb_connect does, with RDB_SEND_MS): one blocked send_ms ends the
 * connection, RD_ESTREAM "server ... read nothing". Without a thread for it, c goes unwatched. */
void rdb_conn_guard(struct rdb_conn *c, int send_ms);
/* Measure messages of size bytes at depth: at least min_s seconds and min_ops answers after
 * a warm-up of `depth` answers, at most max_s seconds in all. */
int rdb_point(struct rdb_conn *c, uint32_t size, unsigned depth, double min_s, double max_s,
              unsigned min_ops, struct rdb_result *r);
/* The server sends for ms milliseconds, size bytes at depth; r gets what arrived. A server
 * whose END has not come c->answer_ms after those ms is not running it: RD_ESTREAM. */
int rdb_reverse(struct rdb_conn *c, uint32_t size, unsigned depth, unsigned ms, struct rdb_result *r);
int rdb_get_info(struct rdb_conn *c, struct rdb_info *info);
/* The server measures its --io directory (bytes: scratch-file size wanted); *has = 0 when
 * it has none. */
int rdb_get_io(struct rdb_conn *c, uint64_t bytes, struct rdb_io *io, int *has);
/* Say BYE (when bye) and close. */
void rdb_close(struct rdb_conn *c, int bye);

/* ---- server ---- */

struct rdb_server_cfg {
    const char *io_dir;      /* --io DIR: measure it when a client asks; NULL: no */
    uint64_t io_size;        /* largest scratch file a client may ask for */
    unsigned io_lanes;
    int once;                /* rdrecv --check: stop after the first client's BYE */
    int verbose;
    const char *ready_line;  /* printf format for stdout once listening: %u port, %s
                              * transports, %s port range (NULL: nothing) */
    int watch_fd;            /* >= 0: stop (RD_ECONNECT) when it reaches its end: rdrecv
                              * --check's stdin, the ssh channel of the rdcheck that started it */
};

struct rdb_guard;
/* Serve one authenticated connection: *bye = 1 when it ended with BYE, -1 when the client
 * does not speak rdbench (an rdsend, told so), else 0. guard (may be NULL)
 * is told of every send, so that it can end one the client blocks (rdb_guard.h). */
int rdb_serve_conn(struct rd_transport *tp, const struct rd_params *agreed,
                   const struct rdb_server_cfg *cfg, struct rdb_guard *guard, int *bye);
/* Listen and serve clients one after another, until timeout_s (-1: forever) or, with
 * cfg->once, the first BYE. The handshakes of every connection run at once (rd_waiting), and
 * the first to complete is served, so connections that stall cost the client nothing; wrong
 * keys and broken clients cost one line on stderr each. */
int rdb_serve(const struct rd_reach *reach, const struct rd_key *key, const struct rdb_server_cfg *cfg);

/* ---- shared by the client and server files ---- */

/* Send one message; for DATA the payload is whatever the buffer holds (nobody reads it). */
int rdb_send_msg(struct rd_transport *tp, const struct rdb_hdr *h, const void *payload);
/* Receive and parse one message; an ERR, or an rdpipe REJECT/ABORT, becomes the error
 * ("WHO PEER: text"). The caller releases *b. */
int rdb_recv_msg(struct rd_transport *tp, int timeout_ms, struct rd_buf **b, struct rdb_hdr *h,
                 const char *who);

/* This host's INFO for a connection (tp may be NULL). */
void rdb_local_info(const struct rd_transport *tp, const struct rdb_server_cfg *cfg, struct rdb_info *info);

#endif
