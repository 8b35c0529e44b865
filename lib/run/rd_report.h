/* rd_report.h - what the user sees about a transfer: the progress line, -v lines, --json. */
#ifndef RD_REPORT_H
#define RD_REPORT_H

#include <pthread.h>
#include <stdint.h>

#include "engine/rd_engine.h"

struct rd_report {
    struct rd_counters *cnt;
    uint64_t total_hint;      /* expected bytes (regular input file), 0 if unknown */
    double t0;                /* start of the data phase */
    int running;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
};


/* pv-style line on stderr, refreshed twice a second until rd_progress_stop. */
void rd_progress_start(struct rd_report *r, struct rd_counters *cnt, uint64_t total_hint);
void rd_progress_stop(struct rd_report *r);

struct rd_summary {
    const char *tool;         /* "rdsend" / "rdrecv" */
    const char *transport;    /* tp->desc or NULL */
    const char *peer;
    uint64_t bytes;
    uint64_t wire_bytes;      /* DATA payload bytes on the wire (fewer when compressed) */
    const char *compression;  /* "zstd auto", "zstd level N", "zstd" (the receiver) or NULL */
    double seconds;
    uint32_t chunk_size, depth;
    uint32_t streams;         /* connections (TCP) or QPs (RDMA) the stream ran over */
    /* rdsend: what it asked for, so that a reduced grant shows; rdrecv: has_asked 0 */
    int has_asked;
    uint32_t asked_chunk_size, asked_depth, asked_streams;
    uint32_t lanes;           /* threads of the per-chunk work */
    uint64_t link_rate;       /* bytes/s this end's link(s) reported, 0 = none */
    const char *cipher;       /* --encrypt: the AEAD in use, else NULL */
    int exit_code;
    const char *error;        /* NULL on success */
};

/* "Bandwidth 2.713 GB/s" (as the original tool prints it) and friends, for -v. */
void rd_print_bandwidth(const struct rd_summary *s);
void rd_print_json(const struct rd_summary *s);
/* "1.50 GiB" */
void rd_format_bytes(uint64_t n, char *out, size_t len);
/* " ETA M:SS" for left seconds; past RD_ETA_MAX_S (a rate near 0) " ETA >6000:00" */
#define RD_ETA_MAX_S (100 * 3600.0)
void rd_format_eta(double left, char *out, size_t len);

#endif
