/* rdb_bench.h - one rdbench run: the sweep of message size x depth over one or two
 * transports, the model fitted to it, the --io figures of both ends, and what is printed
 * (table), written (--json) and drawn (--svg) from them. */
#ifndef RDB_BENCH_H
#define RDB_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "bench/rdb_model.h"
#include "bench/rdb_net.h"

#define RDB_MAX_SIZES 16
#define RDB_MAX_DEPTHS 8

struct rdb_bench_cfg {
    struct rd_reach reach;       /* host, port, bind, device, timeout, verbose, transport */
    int all_transports;          /* --transport all: RDMA (when possible) and TCP */
    const struct rd_key *key;
    uint32_t sizes[RDB_MAX_SIZES];
    unsigned nsizes;
    unsigned depths[RDB_MAX_DEPTHS];
    unsigned ndepths;
    uint64_t max_inflight;       /* a point with depth x size above this is skipped */
    double point_s;              /* measured window of a point */
    unsigned passes;             /* times over the grid; a point keeps its best */
    double budget_s;             /* stop measuring after this long (0: no limit) */
    int progress;
    int quick;
    const char *io_dir;          /* --io DIR: measure here, and ask the server */
    uint64_t io_size;
    unsigned io_lanes;
};

struct rdb_pt {
    uint32_t size;
    unsigned depth;
    int measured;
    unsigned pass;               /* the pass (1..) whose result it keeps */
    char skipped[96];            /* why not, when not */
    struct rdb_result r;
    double model_bps, model_lat;
};

struct rdb_run {
    char transport[8];           /* "tcp", "rdma" */
    char desc[64];               /* this end: "rdma rxe_b port 1" */
    char peer[128];
    struct rdb_info info;        /* the server's */
    int have_info;
    struct rdb_pt *pts;
    size_t npts;
    struct rdb_fit fit;
    double seconds;
};

struct rdb_bench {
    char client[64];             /* this host's name */
    char started[32];            /* UTC, ISO 8601 */
    const char *host, *port;     /* as given */
    int quick;
    unsigned passes;
    struct rdb_run runs[2];
    unsigned nruns;
    int have_local_io, have_remote_io;
    const char *io_dir;
    struct rdb_io local_io, remote_io;
    char remote_io_note[128];    /* why the server's end is missing */
    double seconds;
};

/* Sizes from..to in steps of `factor` (sizes: powers of two, x4 or x16), depths likewise;
 * `to` is always the last, on the grid or not. */
unsigned rdb_size_steps(uint32_t from, uint32_t to, unsigned factor, uint32_t *out, unsigned cap);
unsigned rdb_depth_steps(unsigned from, unsigned to, unsigned factor, unsigned *out, unsigned cap);

/* Run the sweep (and --io); RD_OK or the error that stopped it (recorded). */
int rdb_bench_run(const struct rdb_bench_cfg *cfg, struct rdb_bench *b);
void rdb_bench_free(struct rdb_bench *b);

/* Output. Each returns 0, or -1 when writing failed. */
int rdb_print_table(FILE *f, const struct rdb_bench *b);
int rdb_write_json(FILE *f, const struct rdb_bench *b);
int rdb_write_svg(FILE *f, const struct rdb_bench *b);
/* The io figures alone (rdbench --io DIR without HOST). */
int rdb_print_io(FILE *f, const char *title, const struct rdb_io *io);

/* The chunk rdsend uses by default over this transport ("tcp" / "rdma"). */
uint32_t rdb_default_chunk(const char *transport);

#endif
