/* rd_lanes.h - per-chunk work on a pool of threads, handed back in the order it came in.
 *
 * The engine's byte work (tagging and checking frames, reading and writing files at their
 * offsets) is independent from chunk to chunk, so one stream can use many cores: the thread
 * that owns the order submits jobs in sequence, any lane does the work, and the thread that
 * needs the order back (the one posting to the wire, or writing to a pipe) takes them in the
 * same sequence. No job is copied: a job is the caller's pointer.
 */
#ifndef RD_LANES_H
#define RD_LANES_H

/* The work of one job, on lane number `lane` (0..n-1: per-lane state such as a tagger).
 * Returns 0, or an rd_err (rd_fail recorded) that the taker gets with the job. */
typedef int (*rd_lane_fn)(void *ctx, unsigned lane, void *job);

struct rd_lanes;

/* n lane threads (1..RD_MAX_LANES) and room for `window` jobs in flight, running on the CPUs
 * of NUMA node `node` (the device's, where the transport knows it; -1: wherever the creator
 * may run). NULL: out of memory or no thread could start (rd_fail recorded). */
struct rd_lanes *rd_lanes_new(unsigned n, unsigned window, int node, rd_lane_fn fn, void *ctx);
/* Queue job as the next in sequence; blocks while `window` jobs are in flight. 0, or -1 once
 * the lanes are closed or shut (the job was not taken). */
int rd_lanes_submit(struct rd_lanes *l, void *job);
/* The oldest job once its work is done, with its result in *rc; NULL when the lanes are closed
 * and every job was taken, or when they were shut. */
void *rd_lanes_take(struct rd_lanes *l, int *rc);
/* No more submits: takers drain what is queued, then get NULL. */
void rd_lanes_close(struct rd_lanes *l);
/* Stop at once: blocked submitters and takers return; work a lane is doing finishes, work
 * still queued never runs (rd_lanes_free waits for the lanes, then the caller still owns
 * every job it submitted and did not take: rd_lanes_drop lists them). */
void rd_lanes_shut(struct rd_lanes *l);
/* After shut: the next submitted job that was never taken, NULL when none is left. */
void *rd_lanes_drop(struct rd_lanes *l);
void rd_lanes_free(struct rd_lanes *l);

#define RD_MAX_LANES 64u

#endif
