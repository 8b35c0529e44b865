/* rd_adapt.h - --compress=auto: the zstd level, including off, picked from what it measures,
 * and adapted as the data and the link change (like `zstd --adapt`).
 *
 * The sender's network thread reports each chunk in stream order: its raw and wire bytes and
 * its own seconds handing the chunk to the transport. Every RD_ADAPT_WINDOW chunks it looks at
 * the window: how many raw bytes per second went out, and whether the link was the limit (the
 * thread spent most of the window blocked in sending, or it put out as much as when the link
 * last pushed back) or the lanes were (it spent it waiting for chunks). Only chunks made at
 * the current level count, and the first window after a change is not judged (buffers fill
 * or drain at the new rate). The levels form a ladder:
 * off, zstd's fast levels -5, -3, -1, then 1 to 12. It starts at 1, and after each window:
 *   - the chunks did not shrink (ratio < 1.02): off;
 *   - the link was the limit: one level up (fewer bytes to send);
 *   - the lanes were: with raw not measured yet (and two windows in a row), off for a window
 *     to measure it, then back, or straight to -5 if raw was faster, or off if even the
 *     fastest level could not beat raw (a third of raw's rate: zstd -5 is at best about
 *     three times level 1); with raw known, the same test, else one level down (at -5: off
 *     if raw was faster). Raw is not measured where it cannot win: when the lanes deliver
 *     more than the link drained when it last pushed back, raw, which cannot cross faster,
 *     would lose; and a measurement of raw that already took longer than the level would
 *     have for its three windows ends there, so on a slow link it costs a few chunks, not
 *     two windows at the link's rate. (Early on, buffers that still take everything make a
 *     slow link look idle.)
 *   - off: back to the level it left only while the link is the limit, and not before a hold
 *     that doubles (64 to 1024 chunks) each time raw wins again, so incompressible data or a
 *     fast link pays for a retry rarely;
 * and never to a rung it measured slower than where it is. A fixed --compress=LEVEL keeps its
 * level. The lanes read the level without a lock.
 */
#ifndef RD_ADAPT_H
#define RD_ADAPT_H

#include <stdatomic.h>
#include <stdint.h>

#define RD_ADAPT_WINDOW 8
#define RD_ADAPT_HOLD 64
#define RD_ADAPT_MAX_HOLD 1024

struct rd_adapt {
    atomic_int level;        /* what the lanes use now; 0: send raw */
    int automatic;
    int rung, last_on;       /* auto: where on its ladder of levels it is, and was when on */
    /* the current window */
    unsigned n;
    uint64_t raw, wire;
    double send_s, t0;
    int settled;             /* a window at this level has passed since it was set */
    /* what was learnt: raw bytes/s measured at each rung (0: not yet; the compressing rungs are
     * measured anew at each retry) */
    double rate[16];
    double link_rate;        /* wire bytes/s of the last window in which the link pushed back */
    unsigned hold, backoff;  /* chunks to stay off; the next hold */
    int measuring;           /* off for one window to measure raw against the level it left */
    double probe_t0, probe_raw;   /* ... since when, and the raw bytes sent since */
    int doubted;             /* the last window looked lanes-bound with raw unknown */
    double now;              /* the last chunk's time */
    int trace;               /* RDPIPE_ADAPT_TRACE set: each decision on stderr */
};

/* mode: 0 off, 1 auto, 2 fixed at level. */
void rd_adapt_init(struct rd_adapt *a, int mode, int level);
static inline int rd_adapt_level(struct rd_adapt *a)
{
    return atomic_load_explicit(&a->level, memory_order_relaxed);
}
/* One chunk, in stream order (network thread), made at `level` (what the lane read), at time
 * now (seconds, any epoch). */
void rd_adapt_chunk(struct rd_adapt *a, int level, uint32_t raw, uint32_t wire, double send_s, double now);

#endif
