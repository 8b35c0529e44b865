/* rdb_door.h - the bench server's doorman: while one client is served (rdb_listen.c), a
 * thread of its own goes on accepting and running handshakes on the server's rd_waiting set,
 * so that a second client is told within a second (RDB_BUSY_WAIT_MS) that the server is
 * busy (its handshake finds the one stream claimed: rd_receiver_arg.claim, .busy) instead of
 * waiting unanswered in the listen queue until the first is done (30 s and "timed out"
 * before 2026-12-07).
 *
 * The set belongs to one thread at a time: the doorman between rdb_door_open and
 * rdb_door_close, the accept loop otherwise (the handover is the thread's start and join). */
#ifndef RDB_DOOR_H
#define RDB_DOOR_H

#include <pthread.h>

#include "transport/rd_select.h"
#include "transport/rd_waiting.h"

struct rdb_door {
    struct rd_waiting *waiting;
    struct rd_listener *lis;
    int stop[2];        /* a pipe: rdb_door_close wakes the thread (rd_waiting_next's watch_fd) */
    pthread_t th;
    int running;
};

/* Make a closed door (no thread, no pipe yet). */
void rdb_door_init(struct rdb_door *d, struct rd_waiting *waiting, struct rd_listener *lis);
/* Start turning clients away. Without a pipe or a thread it stays closed: connections then
 * wait in the listen queue, as before (one line on stderr). */
void rdb_door_open(struct rdb_door *d);
/* Stop and join the thread: the set is the caller's again. */
void rdb_door_close(struct rdb_door *d);
/* Close it and free the pipe. */
void rdb_door_free(struct rdb_door *d);

#endif
