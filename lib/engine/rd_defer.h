/* rd_defer.h - how a custom producer waits for the parts of its chunks that the lanes read
 * (struct rd_defer, engine/rd_io.h).
 *
 * The producer (rdcp's tree sender) writes a file's records and leaves each chunk's part of
 * the file to the lane that tags the chunk; at the file's end it waits for those reads, so
 * that its end record can say whether they all went well, and only then closes the file. A
 * transfer that fails meanwhile shuts the lanes, and parts still queued are never read: so
 * the wait also ends when the engine sets the source's stop flag. */
#ifndef RD_DEFER_H
#define RD_DEFER_H

#include <pthread.h>
#include <stdatomic.h>

struct rd_defer_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned pending;   /* parts handed to the lanes and not read yet */
    int err;            /* the first failure: -1 the file ended early, else an errno; 0 none */
};

#define RD_DEFER_STOPPED (-2)   /* rd_defer_wait_all: the transfer failed, parts left unread */

void rd_defer_wait_init(struct rd_defer_wait *w);
void rd_defer_wait_destroy(struct rd_defer_wait *w);
/* The producer hands one more part to the lanes. */
void rd_defer_wait_add(struct rd_defer_wait *w);
/* A lane read one part: whole (err 0), or not (-1 or an errno). */
void rd_defer_wait_done(struct rd_defer_wait *w, int err);
/* A failure the producer met itself (a part it read). */
void rd_defer_wait_fail(struct rd_defer_wait *w, int err);
/* Has a read failed? (then the producer sends no more of that file) */
int rd_defer_wait_failed(struct rd_defer_wait *w);
/* Wait until every part handed over was read: 0, or the first failure, and the count starts
 * again for the next file. RD_DEFER_STOPPED as soon as *stop is set (stop may be NULL). */
int rd_defer_wait_all(struct rd_defer_wait *w, const atomic_int *stop);

#endif
