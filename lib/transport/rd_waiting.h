/* rd_waiting.h - connections a receiver accepted and has not authenticated yet: every one
 * runs its handshake at the same time as the others, and the first to complete is served.
 *
 * Anyone who can reach the port can open connections, and a connection that stalls (silent,
 * a length prefix and then nothing, one byte a second) must cost the others nothing. So each
 * accepted connection gets a thread of its own that runs the caller's handshake on it (for
 * rdrecv rd_session_receiver, for the stripes of --streams rd_session_accept_join).
 *
 * Why threads and not one poll loop: the handshake is a blocking black box (it is being
 * rewritten into a PAKE, with CPU work of its own between the round trips); a poll-driven
 * state machine would have to split every version of the protocol into steps, where a thread
 * runs it as it is. The set is bounded, each thread has a small stack and blocks in poll()
 * most of its life, and a stalled peer costs one idle thread until its deadline.
 *
 * Bounds, each dropped connection one line on stderr (at most 20 in 10 s, then one for the
 * rest):
 *  - RD_WAITING_MAX connections at once; when a new one arrives at a full set, an unfinished
 *    handshake of the network (/24, IPv6 /64) with the most pending goes, one that has not
 *    spoken yet first, else the oldest (the right sender, one connection that needs a few
 *    round trips, is the last to go; one that goes all the same tries again, rd_run.c);
 *  - RD_WAITING_PER_SOURCE from one address (1 from an address the throttle slows down), so
 *    one host flooding the port evicts its own connections, not those of other hosts;
 *  - a connection that sends nothing within RD_HELLO_MS is dropped; one that has not finished
 *    the handshake RD_HANDSHAKE_MS (cfg.deadline_ms) after it arrived (plus the throttle's
 *    wait) is shut down from here, whatever the handshake is doing.
 *
 * Errors: each thread keeps its own (rd_errctx_bind(NULL)), so a failed stranger never becomes the
 * transfer's error; rd_waiting_next prints one line per failed peer. It records an error of
 * its own only after stopping every handshake. */
#ifndef RD_WAITING_H
#define RD_WAITING_H

#include <stddef.h>

#include "transport/rd_select.h"
#include "transport/rd_throttle.h"

#define RD_WAITING_MAX 64
#define RD_WAITING_PER_SOURCE 8

/* The handshake on one connection, run in its own thread: arg is this connection's copy of
 * cfg.arg (taken when it arrived), result cfg.result_size bytes it fills on RD_OK. */
typedef int (*rd_handshake_fn)(struct rd_transport *tp, void *arg, void *result);

struct rd_waiting_cfg {
    rd_handshake_fn handshake;
    const void *arg;
    size_t arg_size;
    size_t result_size;
    int deadline_ms;                 /* the whole handshake, from the connection's arrival */
    struct rd_throttle *throttle;    /* NULL: no address is slowed down, failures not counted */
    /* The sessions' handshakes (not their stripes): a connection whose first frame is a JOIN
     * is a stripe of a session that won in another thread an instant before this loop saw
     * it. It gets no handshake and does not count against its address; it is kept, JOIN
     * unread, for the next set on the same listener (the one that gathers the stripes). */
    int stripes_later;
    /* NULL, or called with a job's copy of arg when a handshake that succeeded is dropped
     * all the same (stopped an instant before it said so): what it took is given back */
    void (*discarded)(void *arg);
};

struct rd_waiting;

/* NULL (error recorded) when out of memory. */
struct rd_waiting *rd_waiting_new(const struct rd_waiting_cfg *cfg);

/* Accept from lis and run handshakes until one completes: RD_OK with *out its connection and
 * result (cfg.result_size bytes) filled; the other handshakes go on. watch_fd >= 0 is watched
 * too: when it becomes readable, RD_OK with *out = NULL. timeout_ms -1 = forever; when it
 * passes, every handshake is stopped and RD_ECONNECT "timed out waiting for a sender" is
 * recorded. */
int rd_waiting_next(struct rd_waiting *w, struct rd_listener *lis, int watch_fd, int timeout_ms,
                    struct rd_transport **out, void *result);

/* Stop every handshake still running (their connections are closed without a word) and free
 * the set. A handshake that failed meanwhile, or had turned its peer away (RD_EAUTH) when it
 * was stopped, still gets its line. With cfg.stripes_later, the connections not read from yet (silent so far, or a
 * JOIN) are kept instead for the next set on the listener, which takes them first. NULL is
 * fine. */
void rd_waiting_free(struct rd_waiting *w);

/* Close what was kept for the next set on lis and nobody took (NULL: whatever was kept). */
void rd_waiting_drop_early(const struct rd_listener *lis);

#endif
