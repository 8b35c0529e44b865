/* rdc_flush.h - the tree receiver's early writeback: every RDC_FLUSH_BYTES written, a thread
 * syncs DST's filesystem while the copy goes on, so the one syncfs that makes exit 0 durable
 * (rdc_rcv_finish) finds little left to write. Below the kernel's background threshold (10% of
 * memory) nothing is written before that last syncfs otherwise, and the copy then waits for
 * all of it at once.
 *
 * The thread syncs through its own open file of DST's directory: syncfs reports a writeback
 * error once per open file, so its syncs can never take an error away from the final one. */
#ifndef RDC_FLUSH_H
#define RDC_FLUSH_H

#include <stdint.h>

#define RDC_FLUSH_BYTES (64u << 20)

struct rdc_flush;

/* for the filesystem of the directory dfd (reopened; dfd stays the caller's); NULL when no
 * thread could start (then nothing happens early) or RDCP_NO_EARLY_SYNC is set */
struct rdc_flush *rdc_flush_start(int dfd);
/* the receiver has written `bytes` in all: sync early when RDC_FLUSH_BYTES more arrived
 * since the last one began (never waits) */
void rdc_flush_note(struct rdc_flush *f, uint64_t bytes);
/* wait for a sync under way, stop the thread */
void rdc_flush_stop(struct rdc_flush *f);

#endif
