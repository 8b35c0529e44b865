/* rdb_model.h - the IO-limits model of a link, and its fit to measured points (pure maths).
 *
 * Throughput = operations per second x size x parallelism, with latency as the floor under
 * the operations per second. One message of `size` bytes takes latency + size / bandwidth
 * from posting it until its answer is back, so with `depth` messages in flight
 *
 *     predicted(size, depth) = depth * size / (latency + size / bandwidth)
 *
 * bytes per second, until the link is busy all the time: then each message occupies it for
 * 1 / op_rate + size / bandwidth (a fixed cost per message, which caps the operations per
 * second of small ones, plus its bytes), and the link carries
 *
 *     size / (1 / op_rate + size / bandwidth)      (< bandwidth, -> bandwidth for big sizes)
 *
 * The prediction is the smaller of the two. Derived numbers:
 *   n_half = latency * bandwidth: the message size that reaches half the bandwidth at depth 1;
 *   depth_for(size, f): the least depth that reaches f of the bandwidth with that size (0 when
 *   the op rate keeps that size below it at any depth).
 * A message alone waits at least its own cost, so the fit keeps latency >= 1 / op_rate.
 * The fit minimises the squared log ratio of predicted to measured throughput over every
 * point (a relative error, so 4 KiB points weigh as much as 64 MiB ones). */
#ifndef RDB_MODEL_H
#define RDB_MODEL_H

#include <stddef.h>

struct rdb_sample {
    double size;    /* bytes per message */
    double depth;   /* messages in flight */
    double bps;     /* measured bytes per second (> 0) */
};

struct rdb_fit {
    int ok;              /* 0: too few points to fit */
    double latency;      /* seconds */
    double bandwidth;    /* bytes per second */
    double op_rate;      /* messages per second the busy link handles at most (size -> 0);
                          * 0: no such limit seen (RDB_OP_SEEN) */
    double n_half;       /* bytes */
    double err_median;   /* |predicted / measured - 1| over the points */
    double err_max;
    size_t points;
};

double rdb_model_bps(const struct rdb_fit *f, double size, double depth);
/* Seconds from posting a message to its answer, at that depth (Little's law). */
double rdb_model_latency(const struct rdb_fit *f, double size, double depth);
/* Depth needed to reach `fraction` (0 < f < 1) of the bandwidth with messages of size; 0
 * when no depth does (the op rate caps that size below it). */
unsigned rdb_depth_for(const struct rdb_fit *f, double size, double fraction);

/* An op rate above this many times the most messages per second any point measured changes
 * no prediction by more than about 1%: the points do not constrain it, and the fit, which
 * then only drifts upwards, reports none (op_rate 0) rather than a number like 1e19. */
#define RDB_OP_SEEN 100.0

/* Fit latency, bandwidth and op rate to n samples (those with bps <= 0 are ignored). */
void rdb_fit(const struct rdb_sample *s, size_t n, struct rdb_fit *out);

/* Percentile (0..100) of v[0..n) by nearest rank; sorts v. 0 when n == 0. */
double rdb_percentile(double *v, size_t n, double pct);

/* Natural logarithm without libm (the tools do not link it); x <= 0 gives -1e300. */
double rdb_ln(double x);

#endif
