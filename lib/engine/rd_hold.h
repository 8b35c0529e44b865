/* rd_hold.h - a received frame that a custom sink keeps after its write_fn returned, so its
 * bytes can be written elsewhere (rdcp's workers write a file's pieces on several cores)
 * without a copy. The receive engine lends the frame (rd_sink_hold, from write_fn only);
 * whoever holds it gives it back from any thread, and the frame returns to the transport
 * with the last hold. The engine returns only once every lent frame came back, so the
 * transport outlives them all. */
#ifndef RD_HOLD_H
#define RD_HOLD_H

#include <pthread.h>
#include <stdatomic.h>

#include "transport/rd_transport.h"

/* The engine's: how many frames are lent out, to wait for them at its end. */
struct rd_holds {
    pthread_mutex_t mu;
    pthread_cond_t back;
    unsigned out;
};

struct rd_hold {
    atomic_uint refs;
    struct rd_transport *tp;
    struct rd_buf *b;
    struct rd_holds *all;
};

void rd_holds_init(struct rd_holds *all);
/* wait until every lent frame came back, then free what the counter needs */
void rd_holds_wait(struct rd_holds *all);
/* b, lent out with one hold (the lender's); NULL when out of memory */
struct rd_hold *rd_hold_lend(struct rd_holds *all, struct rd_transport *tp, struct rd_buf *b);
/* one more hold on the same frame */
void rd_hold_more(struct rd_hold *h);
/* let go of one hold, from any thread: the last gives the frame back to its transport */
void rd_hold_drop(struct rd_hold *h);

#endif
