/* rd_tcp_watch.h - a receiver whose reader is slow is not a dead one.
 *
 * A peer that closes its receive window (its consumer pauses: zfs recv, a tape, a disk busy
 * flushing) is alive and answers the kernel's window probes; the sender must wait for it as
 * long as it takes, as a pipe waits for its reader. But since Linux 5.11, TCP_USER_TIMEOUT
 * also ends a connection whose window stays closed that long, however the peer answers: a
 * consumer pausing 20 s failed the transfer ("timed out while sending"), on every connection
 * with data queued, whether or not a thread was sending on it (a --streams connection waiting
 * for its next frame too).
 *
 * So one thread watches every TCP connection twice a second (TCP_INFO): while a peer's window
 * is closed, the connection's TCP_USER_TIMEOUT is off (the kernel then keeps it open as long
 * as the probes are answered, RFC 1122), and on again once it opens. A peer that stops
 * answering meanwhile (2 probes in a row, and no ACK for the timeout) is dead: the watcher
 * marks the connection silent and shuts it down, and every blocked call on it fails at once,
 * as the timeout would have ended it. The probes come at least every half timeout
 * (TCP_RTO_MAX_MS, Linux 6.15), not every 2 minutes as the kernel backs them off to, so that
 * happens about a timeout after the peer went, however long the pause had lasted. Meanwhile
 * a close is abortive (SO_LINGER 0), so a process killed while its peer's window is closed
 * resets the connection at once instead of leaving the kernel an orphan to probe for minutes.
 * Connections whose window is open keep the kernel's TCP_USER_TIMEOUT for data that is never
 * acknowledged, and keepalive when idle. */
#ifndef RD_TCP_WATCH_H
#define RD_TCP_WATCH_H

#include <stdatomic.h>

struct rd_tcp_watched {
    int fd;
    int user_timeout_ms;     /* what TCP_USER_TIMEOUT is while the window is open */
    int lifted;              /* the watcher's: TCP_USER_TIMEOUT is off now */
    int rto_max_ms;          /* the watcher's: TCP_RTO_MAX_MS to put back, 0 none */
    atomic_int silent;       /* the peer stopped answering while its window was closed */
    struct rd_tcp_watched *next;
};

/* Watch fd (its TCP_USER_TIMEOUT already set to user_timeout_ms). The watcher thread starts
 * with the first; if it cannot start, connections keep the kernel's behaviour. */
void rd_tcp_watch_add(struct rd_tcp_watched *w, int fd, int user_timeout_ms);
/* Before fd is closed: once this returns the watcher no longer touches it, and a close is
 * graceful again with the timeout back on. */
void rd_tcp_watch_remove(struct rd_tcp_watched *w);

#endif
