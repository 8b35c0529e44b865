/* test_out.c - what rdbench prints, writes and draws (lib/bench/rdb_out.c) for runs made up
 * here, compared with the exact text: the model's columns when there is no model (fewer than
 * 2 points: "-" and null, never a 0 that reads like a result), and the op rate when the points
 * do not constrain it ("no limit ... seen" and null, never a number like 1e19). */
#include "check.h"

#include "bench/rdb_bench.h"
#include "bench/rdb_model.h"
#include "run/rd_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CASE_TIMEOUT_S 30

/* A run over tcp of the n points (sizes, depths and results set by the caller), the model
 * fitted to them as the sweep does it, and the model's predictions filled in. */
static void make_run(struct rdb_bench *b, struct rdb_pt *pts, size_t n)
{
    memset(b, 0, sizeof *b);
    snprintf(b->client, sizeof b->client, "here");
    snprintf(b->started, sizeof b->started, "2026-11-28T00:00:00Z");
    b->host = "there";
    b->port = "5000";
    b->passes = 2;
    b->nruns = 1;
    struct rdb_run *r = &b->runs[0];
    snprintf(r->transport, sizeof r->transport, "tcp");
    snprintf(r->desc, sizeof r->desc, "tcp");
    snprintf(r->peer, sizeof r->peer, "127.0.0.1:5000");
    r->pts = pts;
    r->npts = n;
    r->seconds = 0.5;
    struct rdb_sample s[8] = { { 0, 0, 0 } };
    size_t k = 0;
    for (size_t i = 0; i < n && k < 8; i++)
        if (pts[i].measured)
            s[k++] = (struct rdb_sample){ pts[i].size, pts[i].depth, pts[i].r.bps };
    rdb_fit(s, k, &r->fit);
    for (size_t i = 0; i < n; i++) {
        pts[i].model_bps = rdb_model_bps(&r->fit, pts[i].size, pts[i].depth);
        pts[i].model_lat = rdb_model_latency(&r->fit, pts[i].size, pts[i].depth);
    }
}

static struct rdb_pt point(uint32_t size, unsigned depth, double ops_per_s, double p50)
{
    struct rdb_pt p = { .size = size, .depth = depth, .measured = 1, .pass = 1 };
    p.r = (struct rdb_result){ .ops = (uint64_t)(ops_per_s / 100), .seconds = 0.01, .ops_per_s = ops_per_s,
                               .bps = ops_per_s * size, .p50 = p50, .p99 = 2 * p50 };
    return p;
}

/* Output of fn for b, NUL-terminated (free it). */
static char *output(int (*fn)(FILE *, const struct rdb_bench *), const struct rdb_bench *b)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    if (!f)
        return NULL;
    int rc = fn(f, b);
    fclose(f);
    if (rc) {
        free(s);
        return NULL;
    }
    return s;
}

static void t_one_point_no_model(void)
{
    struct rdb_pt pts[1] = { point(4096, 1, 10000, 1e-4) };
    struct rdb_bench b;
    make_run(&b, pts, 1);
    CHECK(!b.runs[0].fit.ok);
    char *t = output(rdb_print_table, &b);
    CHECK_OR(t != NULL, return);
    char want[1024];
    snprintf(want, sizeof want,
             "rdbench %s: here -> there (there port 5000)\n"
             "\n"
             "tcp (tcp, to 127.0.0.1:5000): 1 points in 0.5 s, each the best of 2 passes\n"
             "      size  depth     p50 lat     p99 lat       ops/s      GB/s  model GB/s   error\n"
             "     4 KiB      1   100.0 µs   200.0 µs       10000     0.041           -       -\n"
             "model: too few points to fit\n", RD_VERSION);
    CHECK_STR_EQ(t, want);
    free(t);
    char *j = output(rdb_write_json, &b);
    CHECK_OR(j != NULL, return);
    CHECK_HAS(j, "\n{\"size\":4096,\"depth\":1,\"measured\":true,\"pass\":1,\"ops\":100,\"seconds\":0.01,"
                 "\"ops_per_s\":10000,\"gb_per_s\":0.04096,\"latency_p50_us\":100,\"latency_p99_us\":200,"
                 "\"model_gb_per_s\":null,\"model_latency_us\":null,\"model_error\":null}],\n"
                 "\"model\":{\"fitted\":false,\"points\":1}}");
    free(j);
    char *s = output(rdb_write_svg, &b);
    CHECK_OR(s != NULL, return);
    CHECK_HAS(s, "tcp: too few points for a model · 2026-11-28T00:00:00Z");
    free(s);
}

/* Points of a link with no per-message limit to speak of (latency 20 µs, 2 GB/s, 1e15
 * messages/s): the fit finds no op rate in them. */
static void t_op_rate_not_seen(void)
{
    struct rdb_fit truth = { .ok = 1, .latency = 20e-6, .bandwidth = 2e9, .op_rate = 1e15 };
    static const uint32_t sizes[] = { 4096, 65536, 1 << 20, 16 << 20 };
    static const unsigned depths[] = { 1, 2 };
    struct rdb_pt pts[8];
    size_t n = 0;
    for (unsigned i = 0; i < 4; i++)
        for (unsigned d = 0; d < 2; d++) {
            double bps = rdb_model_bps(&truth, sizes[i], depths[d]);
            pts[n++] = point(sizes[i], depths[d], bps / sizes[i], depths[d] * sizes[i] / bps);
        }
    struct rdb_bench b;
    make_run(&b, pts, n);
    CHECK_OR(b.runs[0].fit.ok, return);
    CHECK(b.runs[0].fit.op_rate == 0);
    char *t = output(rdb_print_table, &b);
    CHECK_OR(t != NULL, return);
    CHECK_HAS(t, "\nmodel: latency 20.0 µs, bandwidth 2.000 GB/s, no limit on messages/s seen; n½ 39.1 KiB (the size that\n");
    CHECK_HAS(t, "\ndepth for 90% of the link: 4 KiB: 10, 64 KiB: 2, 1 MiB: 1, 16 MiB: 1\n");
    free(t);
    char *j = output(rdb_write_json, &b);
    CHECK_OR(j != NULL, return);
    CHECK_HAS(j, ",\"latency_us\":20,\"bandwidth_gb_per_s\":2,\"op_rate_per_s\":null,\"n_half_bytes\":40000,");
    free(j);
    char *s = output(rdb_write_svg, &b);
    CHECK_OR(s != NULL, return);
    CHECK_HAS(s, "tcp model: latency 20.0 µs, bandwidth 2.00 GB/s, no limit on messages/s seen, n½ 39.1 KiB · ");
    free(s);
}

/* ... and one whose busy link handles 50,000 messages a second: that is named */
static void t_op_rate_seen(void)
{
    struct rdb_fit truth = { .ok = 1, .latency = 40e-6, .bandwidth = 2e9, .op_rate = 50000 };
    static const uint32_t sizes[] = { 4096, 65536, 1 << 20 };
    static const unsigned depths[] = { 1, 8 };
    struct rdb_pt pts[6];
    size_t n = 0;
    for (unsigned i = 0; i < 3; i++)
        for (unsigned d = 0; d < 2; d++) {
            double bps = rdb_model_bps(&truth, sizes[i], depths[d]);
            pts[n++] = point(sizes[i], depths[d], bps / sizes[i], depths[d] * sizes[i] / bps);
        }
    struct rdb_bench b;
    make_run(&b, pts, n);
    CHECK_OR(b.runs[0].fit.ok, return);
    CHECK(b.runs[0].fit.op_rate > 49000 && b.runs[0].fit.op_rate < 51000);
    char *t = output(rdb_print_table, &b);
    CHECK_OR(t != NULL, return);
    CHECK_HAS(t, ", at most 5");   /* 50000 give or take the fit's last digits */
    CHECK_HAS(t, " messages/s; n½ ");
    free(t);
    char *s = output(rdb_write_svg, &b);
    CHECK_OR(s != NULL, return);
    CHECK_HAS(s, "k messages/s, n½ ");
    free(s);
}

int main(void)
{
    check_watchdog(CASE_TIMEOUT_S);
    RUN(t_one_point_no_model);
    RUN(t_op_rate_not_seen);
    RUN(t_op_rate_seen);
    return check_summary();
}
