/* rd_plan.h - how many lanes an end runs when --lanes does not say, and how many connections
 * a sender asks for without --streams: enough for its link, bounded by its cores.
 *
 * One lane reads and tags a page-cached file at 4.5 GB/s on this project's cores and checks
 * tags at 11 (bench/engine.sh, 1 lane: 0.222 and 0.089 CPU s per GB); AES-256-GCM and
 * ChaCha20-Poly1305 cost about three times the tag (README, --encrypt). A plan counts
 * RD_PLAN_LANE_RATE per lane (a third of that for those ciphers), which leaves room for older
 * cores and for a receiver's writes, and keeps two cores for the network thread and the
 * reader or writer. Where the link's rate is unknown (loopback, virtual NICs): half the
 * cores, at most 8. Compressing (rdsend --compress) costs 5-20 times a tag: every core, at
 * most 8, whatever the link. */
#ifndef RD_PLAN_H
#define RD_PLAN_H

#include <stdint.h>

#define RD_PLAN_LANE_RATE 2000000000ull   /* bytes/s a lane is counted on for (tags, OCB) */
/* What one connection is counted on when a sender plans its --streams: a TCP connection is
 * copied by one core on each end and carries 15-35 Gb/s on a 100 Gb/s host, where about 12
 * are needed to approach the line (the lanes issue's figures), so 10 Gb/s each; an RDMA
 * queue pair moves about 28 GB/s on a 400 Gb/s port and 4 of them 47, so 100 Gb/s each. */
#define RD_PLAN_TCP_STREAM_RATE 1250000000ull
#define RD_PLAN_QP_RATE 12500000000ull

struct rd_plan_in {
    uint64_t link_rate;   /* bytes/s of this end's link(s); 0 = unknown */
    unsigned cores;       /* the cores this process may run on */
    int compress;         /* rdsend --compress */
    int slow_cipher;      /* --encrypt with AES-256-GCM or ChaCha20-Poly1305 */
};

uint32_t rd_plan_lanes(const struct rd_plan_in *in);
/* The connections a sender asks for when neither --streams nor rails decide: one where the
 * link reports no speed (loopback, most virtual NICs) or one connection's worth; else a TCP
 * connection per 10 Gb/s, at most one per core (each has a thread on both ends), or an RDMA
 * queue pair per 100 Gb/s (no thread of their own); at most RD_MAX_STREAMS. */
uint32_t rd_plan_streams(uint64_t link_rate, int rdma, unsigned cores);
/* The frames in flight a sender asks for so that `lanes` lanes have a chunk each while the
 * network sends others, and each of `streams` connections has one on the wire while the
 * receiver takes in the one before: depth, or more for many lanes or connections (--depth
 * not given; a stripe splits the ring among its connections). Over RDMA the
 * rings are pinned: the sender asks for what its ulimit -l allows (rd_verbs_pinnable_depth),
 * and the receiver grants what its own allows. */
uint32_t rd_plan_depth(uint32_t lanes, uint32_t streams, uint32_t depth);
/* The cores this process may run on: its CPU affinity (taskset, a container's cpuset), else
 * the online cores; at least 1. */
unsigned rd_plan_cores(void);

#endif
