/* rdb_guard.h - the bench server's watchdog over the one connection it serves (and the
 * client's over its connection, for the sends alone: a server that stops reading leaves a
 * TCP send waiting as for a slow reader, for ever).
 *
 * A client that proved the key is still a stranger's program: it may keep the server busy
 * past --timeout (every message resets the per-message idle limit), or stop reading, so that
 * the server blocks in a send (a TCP send has no timeout; RDMA waits for credits). And while
 * it is served, nobody else reads the ssh channel of the rdcheck that started `rdrecv
 * --check`. So a thread of its own watches the three and shuts the connection down
 * (ops->shutdown: every blocked call on it fails at once) when
 *   - the serving deadline passes (--timeout),
 *   - a send has been blocked send_ms (marked by rdb_guard_sending), or
 *   - watch_fd reaches its end (rdcheck went away).
 * It looks twice a second: the limits are seconds long, and a send pays no syscall for it. */
#ifndef RDB_GUARD_H
#define RDB_GUARD_H

#include <pthread.h>
#include <stdatomic.h>

#include "transport/rd_transport.h"

enum rdb_guard_why { RDB_GUARD_NONE, RDB_GUARD_DEADLINE, RDB_GUARD_SEND, RDB_GUARD_GONE };
#define RDB_GUARD_GONE_TEXT "rdcheck went away (its channel closed) before its BYE"

struct rdb_guard {
    struct rd_transport *tp;
    double deadline;             /* rd_now() at which serving ends; < 0: none */
    int send_ms;                 /* a send blocked this long is a client that does not read */
    int watch_fd;                /* < 0: none */
    int stop[2];                 /* a pipe: rdb_guard_stop wakes the thread */
    pthread_t th;
    int running;
    atomic_llong send_since_ms;  /* rd_now() in ms when the send in progress began; 0: none */
    atomic_int why;              /* enum rdb_guard_why: what it shut the connection down for */
    atomic_int quit;             /* set by rdb_guard_stop */
    int of_client;               /* set after start: it guards a client's connection (the peer
                                  * that stopped reading is the server) */
};

/* Start watching tp. RD_OK, or RD_EIO recorded (no pipe or thread: serve without it). */
int rdb_guard_start(struct rdb_guard *g, struct rd_transport *tp, double deadline, int send_ms, int watch_fd);
/* A send on tp begins (1) or ended (0). NULL g: nothing. */
void rdb_guard_sending(struct rdb_guard *g, int begin);
/* Why it shut the connection down so far (RDB_GUARD_NONE: it did not). NULL g: NONE. */
int rdb_guard_why(const struct rdb_guard *g);
/* A serving error rc, told as what the guard did when it shut the connection down (the
 * broken pipe it caused says less); rc unchanged when it did nothing. NULL g: rc. */
int rdb_guard_explain(const struct rdb_guard *g, int rc);
/* Has the watched fd (readable now) reached its end? What rdcheck sends besides is dropped:
 * only its end counts. Also the accept loop's test, between clients. */
int rdb_watch_ended(int fd);
/* Stop the thread and join it; returns rdb_guard_why. */
int rdb_guard_stop(struct rdb_guard *g);

#endif
