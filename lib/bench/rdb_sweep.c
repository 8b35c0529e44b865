/* rdb_sweep.c - rdbench's run (rdb_bench.h): one connection per message size, every depth on
 * it, the model fitted to the points, then --io here and on the server.
 * Where it sits: between rdbench's command line (rdb_main.c) and the client (rdb_client.c). */
#include "bench/rdb_bench.h"

#include "bench/rdb_io.h"
#include "bench/rdb_svg.h"
#include "run/rd_cli.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* from, from x factor, ... below to, then to itself: a range ends where it was asked to end,
 * even off the grid (8K-64K x4: 8K, 32K, 64K). Counted in 64 bits: x16 past 256M would wrap. */
unsigned rdb_size_steps(uint32_t from, uint32_t to, unsigned factor, uint32_t *out, unsigned cap)
{
    unsigned n = 0;
    for (uint64_t v = from; v < to && n + 1 < cap; v *= factor)
        out[n++] = (uint32_t)v;
    if (cap)
        out[n++] = to;
    return n;
}

unsigned rdb_depth_steps(unsigned from, unsigned to, unsigned factor, unsigned *out, unsigned cap)
{
    return rdb_size_steps(from, to, factor, out, cap);   /* unsigned is uint32_t here */
}

uint32_t rdb_default_chunk(const char *transport)
{
    return strcmp(transport, "rdma") ? RD_TCP_DEFAULT_CHUNK : RD_DEFAULT_CHUNK;
}

static void progress(const struct rdb_bench_cfg *cfg, const struct rdb_run *run, size_t done,
                     size_t total, const struct rdb_pt *p)
{
    if (!cfg->progress)
        return;
    char size[32];
    rdb_svg_tick_label(RDB_UNIT_BYTES, p->size, size, sizeof size);
    fprintf(stderr, "\r%s: %s %s x %u: %.3f GB/s (%zu/%zu)\033[K", rd_progname(), run->transport, size,
            p->depth, p->r.bps / 1e9, done < total ? done : total, total);
    fflush(stderr);
}

static void fit_run(struct rdb_run *run)
{
    struct rdb_sample *s = calloc(run->npts ? run->npts : 1, sizeof *s);
    size_t n = 0;
    for (size_t i = 0; s && i < run->npts; i++)
        if (run->pts[i].measured && run->pts[i].r.bps > 0)
            s[n++] = (struct rdb_sample){ run->pts[i].size, run->pts[i].depth, run->pts[i].r.bps };
    rdb_fit(s, n, &run->fit);
    free(s);
    for (size_t i = 0; i < run->npts; i++) {
        run->pts[i].model_bps = rdb_model_bps(&run->fit, run->pts[i].size, run->pts[i].depth);
        run->pts[i].model_lat = rdb_model_latency(&run->fit, run->pts[i].size, run->pts[i].depth);
    }
}

/* One connection for messages of `size`: every depth of the grid that fits, measured into the
 * points pts[0..ndepths) where this pass does better than the passes before. */
static int one_size(const struct rdb_bench_cfg *cfg, struct rd_reach *reach, struct rdb_run *run,
                    struct rdb_pt *pts, unsigned pass, double t_begin, size_t *done)
{
    uint32_t size = pts[0].size;
    unsigned dmax = 0;
    for (unsigned di = 0; di < cfg->ndepths; di++)
        if (!pts[di].skipped[0] || pts[di].measured)
            dmax = pts[di].depth;
    if (!dmax)
        return RD_OK;
    struct rdb_conn c;
    int rc = rdb_connect(reach, cfg->key, size, dmax, &c);
    if (rc)
        return rc;
    for (unsigned di = 0; di < cfg->ndepths; di++)   /* what the server will not hold is not measured */
        if (pts[di].depth > c.agreed.depth && !pts[di].measured && !pts[di].skipped[0])
            snprintf(pts[di].skipped, sizeof pts[di].skipped, "depth x size above the server's limit (%u MiB in flight)",
                     (unsigned)((uint64_t)size * c.agreed.depth >> 20));
    if (reach->transport == RD_T_AUTO)   /* every size over the transport the first one got */
        reach->transport = strcmp(c.tp->ops->name, "rdma") ? RD_T_TCP : RD_T_RDMA;
    if (!run->transport[0]) {
        snprintf(run->transport, sizeof run->transport, "%.7s", c.tp->ops->name);
        snprintf(run->desc, sizeof run->desc, "%.63s", c.tp->desc);
        snprintf(run->peer, sizeof run->peer, "%s", c.tp->peer);
        if (rdb_get_info(&c, &run->info) == RD_OK)
            run->have_info = 1;
        else
            rc = rd_error_code();
    }
    for (unsigned di = 0; di < cfg->ndepths && !rc; di++) {
        struct rdb_pt *p = &pts[di];
        if (p->skipped[0] && !p->measured)
            continue;
        if (cfg->budget_s > 0 && rd_now() - t_begin > cfg->budget_s) {
            if (!p->measured)   /* a later pass only improves on the points it gets to */
                snprintf(p->skipped, sizeof p->skipped, "time budget of --quick spent");
            continue;
        }
        struct rdb_result r;
        rc = rdb_point(&c, size, p->depth, cfg->point_s, 4 * cfg->point_s + 0.5, 3, &r);
        if (rc)
            break;
        if (!p->measured || r.bps > p->r.bps) {
            p->r = r;
            p->pass = pass + 1;
        }
        p->measured = 1;
        p->skipped[0] = '\0';
        progress(cfg, run, ++*done, run->npts * cfg->passes, p);
    }
    rdb_close(&c, rc == RD_OK);
    return rc;
}

/* The sweep over one transport: `passes` times over the grid, one connection per size, and
 * each point keeps its best pass (the least disturbed by whatever else runs on the hosts). */
static int sweep(const struct rdb_bench_cfg *cfg, enum rd_transport_choice choice, struct rdb_run *run,
                 double t_begin)
{
    struct rd_reach reach = cfg->reach;
    reach.transport = choice;
    run->npts = (size_t)cfg->nsizes * cfg->ndepths;
    run->pts = calloc(run->npts, sizeof *run->pts);
    if (!run->pts)
        return rd_fail(RD_EIO, "out of memory");
    size_t done = 0;
    double t0 = rd_now();
    int rc = RD_OK;
    for (unsigned si = 0; si < cfg->nsizes; si++)
        for (unsigned di = 0; di < cfg->ndepths; di++) {
            struct rdb_pt *p = &run->pts[si * cfg->ndepths + di];
            p->size = cfg->sizes[si];
            p->depth = cfg->depths[di];
            if ((uint64_t)p->size * p->depth > cfg->max_inflight)
                snprintf(p->skipped, sizeof p->skipped, "depth x size above --max-inflight %llu",
                         (unsigned long long)cfg->max_inflight);
        }
    for (unsigned pass = 0; pass < cfg->passes && !rc; pass++)
        for (unsigned si = 0; si < cfg->nsizes && !rc; si++)
            rc = one_size(cfg, &reach, run, &run->pts[si * cfg->ndepths], pass, t_begin, &done);
    run->seconds = rd_now() - t0;
    if (cfg->progress)
        fprintf(stderr, "\r\033[K");
    fit_run(run);
    return rc;
}

static int remote_io(const struct rdb_bench_cfg *cfg, enum rd_transport_choice choice, struct rdb_bench *b)
{
    struct rd_reach reach = cfg->reach;
    reach.transport = choice;
    struct rdb_conn c;
    int has = 0, rc = rdb_connect(&reach, cfg->key, RD_MIN_CHUNK, 1, &c);
    if (rc)
        return rc;
    if (cfg->progress)
        fprintf(stderr, "%s: the server measures its --io directory...\033[K\r", rd_progname());
    rc = rdb_get_io(&c, cfg->io_size, &b->remote_io, &has);
    if (cfg->progress)
        fprintf(stderr, "\r\033[K");
    rdb_close(&c, rc == RD_OK);
    if (!rc && !has)
        snprintf(b->remote_io_note, sizeof b->remote_io_note,
                 "the server was started without --io DIR: its end is not measured");
    b->have_remote_io = !rc && has;
    return rc;
}

int rdb_bench_run(const struct rdb_bench_cfg *cfg, struct rdb_bench *b)
{
    memset(b, 0, sizeof *b);
    double t0 = rd_now();
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(b->started, sizeof b->started, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (gethostname(b->client, sizeof b->client - 1))
        snprintf(b->client, sizeof b->client, "?");
    b->host = cfg->reach.host;
    b->port = cfg->reach.port;
    b->quick = cfg->quick;
    b->passes = cfg->passes;
    b->io_dir = cfg->io_dir;
    int rc = RD_OK;
    if (cfg->io_dir) {
        if (cfg->progress)
            fprintf(stderr, "%s: measuring --io %s...\033[K\r", rd_progname(), cfg->io_dir);
        rc = rdb_io_measure(cfg->io_dir, cfg->io_size, cfg->io_lanes, &b->local_io);
        if (cfg->progress)
            fprintf(stderr, "\r\033[K");
        if (rc)
            return rc;
        b->have_local_io = 1;
    }
    if (!cfg->reach.host) {
        b->seconds = rd_now() - t0;
        return RD_OK;
    }
    enum rd_transport_choice order[2] = { cfg->reach.transport, RD_T_AUTO };
    unsigned n = 1;
    if (cfg->all_transports) {
        order[0] = RD_T_RDMA;
        order[1] = RD_T_TCP;
        n = 2;
        if (!rd_verbs_available()) {
            order[0] = RD_T_TCP;
            n = 1;
        }
    }
    for (unsigned i = 0; i < n && !rc; i++) {
        struct rdb_run *r = &b->runs[b->nruns];
        rc = sweep(cfg, order[i], r, t0);
        if (r->transport[0]) {
            b->nruns++;
        } else {
            free(r->pts);
            r->pts = NULL;
            if (!rc)
                rc = rd_fail(RD_EUSAGE, "no point fits --max-inflight %llu",
                             (unsigned long long)cfg->max_inflight);
        }
    }
    if (!rc && cfg->io_dir)
        rc = remote_io(cfg, b->nruns && !strcmp(b->runs[0].transport, "rdma") ? RD_T_RDMA : RD_T_TCP, b);
    b->seconds = rd_now() - t0;
    return rc;
}

void rdb_bench_free(struct rdb_bench *b)
{
    for (unsigned i = 0; i < b->nruns; i++)
        free(b->runs[i].pts);
    b->nruns = 0;
}
