/* rd_plan.h - how many lanes an end runs when --lanes does not say: enough for its link,
 * bounded by its cores.
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

struct rd_plan_in {
    uint64_t link_rate;   /* bytes/s of this end's link(s); 0 = unknown */
    unsigned cores;       /* the cores this process may run on */
    int compress;         /* rdsend --compress */
    int slow_cipher;      /* --encrypt with AES-256-GCM or ChaCha20-Poly1305 */
};

uint32_t rd_plan_lanes(const struct rd_plan_in *in);
/* The frames in flight a sender asks for so that `lanes` lanes have a chunk each while the
 * network sends others: depth, or more for many lanes (--depth not given). Over RDMA the
 * rings are pinned: the sender asks for what its ulimit -l allows (rd_verbs_pinnable_depth),
 * and the receiver grants what its own allows. */
uint32_t rd_plan_depth(uint32_t lanes, uint32_t depth);
/* The cores this process may run on: its CPU affinity (taskset, a container's cpuset), else
 * the online cores; at least 1. */
unsigned rd_plan_cores(void);

#endif
