#include "engine/rd_adapt.h"

#include <stdio.h>
#include <stdlib.h>

/* The levels auto moves between, fastest first: zstd's fast levels, then the usual ones. */
static const int rungs[] = { 0, -5, -3, -1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
#define NRUNGS ((int)(sizeof rungs / sizeof rungs[0]))
#define START_RUNG 4   /* level 1 */
#define FAST_GAIN 3.0  /* how much faster than level 1 zstd's fastest level may be, at best */

void rd_adapt_init(struct rd_adapt *a, int mode, int level)
{
    *a = (struct rd_adapt){ .automatic = mode == 1, .rung = START_RUNG, .last_on = START_RUNG,
                            .backoff = RD_ADAPT_HOLD };
    atomic_store(&a->level, mode == 0 ? 0 : mode == 1 ? rungs[START_RUNG] : level);
    a->trace = getenv("RDPIPE_ADAPT_TRACE") != NULL;
}

static void set_rung(struct rd_adapt *a, int rung)
{
    if (rung == a->rung)
        return;
    a->settled = 0;
    if (a->rung > 0)
        a->last_on = a->rung;
    a->rung = rung;
    atomic_store_explicit(&a->level, rungs[rung], memory_order_relaxed);
}

/* Off because raw won or nothing shrank: stay off a while, twice as long each time in a row. */
static int go_off(struct rd_adapt *a)
{
    a->hold = a->backoff;
    a->backoff = a->backoff < RD_ADAPT_MAX_HOLD ? 2 * a->backoff : RD_ADAPT_MAX_HOLD;
    return 0;
}

/* Worth moving from rung r to `to`: not measured slower there (5% is noise). */
static int worth(const struct rd_adapt *a, int r, int to)
{
    return a->rate[to] == 0 || a->rate[to] >= 0.95 * a->rate[r];
}

/* A full window of `seconds`: move by at most one rung (or to off), in the direction the limit
 * points to, unless that rung was measured slower. */
static void decide(struct rd_adapt *a, double seconds)
{
    int r = a->rung, next = r;
    double rate = (double)a->raw / seconds, wire_rate = (double)a->wire / seconds;
    /* The link pushes back (the thread spent most of the window blocked in sending): what went
     * out is what it drains. Buffers in front of it (the socket's, a qdisc's) hide that while
     * they fill or drain, so a window that put out as much as the link drained counts too. */
    int blocked = a->send_s > 0.5 * seconds;
    if (blocked)
        a->link_rate = wire_rate;
    int link_bound = blocked || (a->link_rate > 0 && wire_rate >= 0.9 * a->link_rate);
    double ratio = a->wire ? (double)a->raw / (double)a->wire : 1e9;
    a->rate[r] = a->rate[r] > 0 ? 0.5 * (a->rate[r] + rate) : rate;
    double off = a->rate[0];
    if (r == 0 && a->measuring) {
        /* raw measured against the level just left: back to it, or down to the fast levels,
         * or stay */
        double was = a->rate[a->last_on];
        a->measuring = 0;
        if (was * FAST_GAIN < off)
            next = go_off(a);
        else if (was < 0.95 * off)
            next = 1;
        else
            next = a->last_on;
    } else if (r == 0) {
        if (a->hold > RD_ADAPT_WINDOW) {
            a->hold -= RD_ADAPT_WINDOW;
        } else if (link_bound) {
            /* the link is the limit: try compressing again, measured anew */
            for (int i = 1; i < NRUNGS; i++)
                a->rate[i] = 0;
            a->hold = 0;
            next = a->last_on;
        }   /* else the limit is elsewhere: compressing would only cost */
    } else if (ratio < 1.02) {
        next = go_off(a);   /* nothing shrinks */
    } else if (link_bound) {
        a->backoff = RD_ADAPT_HOLD;   /* compression is what keeps up with the link */
        if (r + 1 < NRUNGS && worth(a, r, r + 1))
            next = r + 1;
    } else if (off == 0 && a->link_rate > 0 && rate > 1.05 * a->link_rate) {
        /* the lanes are the limit, but they beat raw, which cannot cross faster than the link
         * drains: no need to measure raw; a faster level if not measured slower */
        if (r > 1 && worth(a, r, r - 1))
            next = r - 1;
    } else if (off == 0 && !a->doubted) {
        a->doubted = 1;   /* a second window first: buffers still filling look like this */
    } else if (off == 0) {
        /* the lanes are the limit, and raw is unknown: measure it */
        next = 0, a->measuring = 1;
        a->probe_t0 = a->now;
        a->probe_raw = 0;
    } else if (rate * FAST_GAIN < off || (r == 1 && rate < 0.95 * off)) {
        next = go_off(a);   /* not even the fastest level could beat raw */
    } else if (r > 1 && worth(a, r, r - 1)) {
        next = r - 1;   /* faster, fewer bytes saved */
    }
    if (next != r || link_bound)
        a->doubted = 0;
    if (a->trace)
        fprintf(stderr, "rdsend: adapt: level %d: %.3f GB/s, ratio %.2f, %s-bound -> level %d\n", rungs[r],
                rate / 1e9, ratio, link_bound ? "link" : "lanes", rungs[next]);
    set_rung(a, next);
}

/* Measuring raw, and raw already took longer than the level it left would have taken for the
 * chunks in flight, a settling window and a judged one (3 windows): raw is slower, and every
 * chunk more of it costs. Ends the measurement (1) with what raw reached. On a slow link a
 * measurement of raw would otherwise cost 16 chunks at the link's rate. */
static int raw_too_slow(struct rd_adapt *a, uint32_t raw, double now)
{
    double was = a->rate[a->last_on], spent = now - a->probe_t0;
    if (!a->measuring || a->rung != 0 || was <= 0 || spent * was <= 3.0 * RD_ADAPT_WINDOW * raw)
        return 0;
    double reached = a->probe_raw / spent;
    a->rate[0] = reached;
    a->link_rate = reached;   /* raw was held back: the link drains no more than this */
    a->measuring = 0;
    a->n = 0;
    if (a->trace)
        fprintf(stderr, "rdsend: adapt: level 0: %.3f GB/s after %.3f s, slower than level %d -> level %d\n",
                reached / 1e9, spent, rungs[a->last_on], rungs[a->last_on]);
    set_rung(a, a->last_on);
    return 1;
}

void rd_adapt_chunk(struct rd_adapt *a, int level, uint32_t raw, uint32_t wire, double send_s, double now)
{
    a->now = now;
    if (a->automatic && level == 0 && a->measuring) {
        a->probe_raw += raw;
        if (raw_too_slow(a, raw, now))
            return;
    }
    /* only chunks made at the current level count, and after a change one window settles (the
     * socket's and the link's buffers fill or drain at the new rate) */
    if (level != rungs[a->rung] && a->automatic) {
        a->n = 0;
        a->settled = 0;
        return;
    }
    if (a->n == 0) {
        a->t0 = now;   /* this chunk starts the window: its own time belongs to the last one */
        a->raw = a->wire = 0;
        a->send_s = 0;
        a->n = 1;
        return;
    }
    a->raw += raw;
    a->wire += wire;
    a->send_s += send_s;
    if (++a->n <= RD_ADAPT_WINDOW)
        return;
    a->n = 0;
    if (!a->settled) {
        a->settled = 1;
        return;
    }
    if (a->automatic && now > a->t0)
        decide(a, now - a->t0);
}
