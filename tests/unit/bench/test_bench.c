/* test_bench.c - rdbench's pure parts and its protocol: the IO-limits model and its fit, the
 * SVG writer (ticks, labels, escaping, gaps, dashes), the bench messages against hostile
 * bytes, and a client and a server talking over the in-memory transport.
 *
 * The fit is checked against points made from known parameters: exactly (it must recover
 * them), and with +-15% noise (the median error must stay inside 25%). */
#include "check.h"
#include "mem_transport.h"

#include "bench/rdb_bench.h"
#include "bench/rdb_guard.h"
#include "bench/rdb_model.h"
#include "bench/rdb_msg.h"
#include "bench/rdb_net.h"
#include "bench/rdb_svg.h"
#include "run/rd_cli.h"
#include "transport/rd_session.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"
#include "wire/rd_auth.h"
#include "wire/rd_proto.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CASE_TIMEOUT_S 60

static double rel(double got, double want)
{
    double d = got / want - 1;
    return d < 0 ? -d : d;
}

/* ---- the model ---- */

static const double sizes[] = { 4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20 };
static const double depths[] = { 1, 2, 4, 8, 16, 32, 64 };
#define NS (sizeof sizes / sizeof sizes[0])
#define ND (sizeof depths / sizeof depths[0])

/* points from a known model, each times a factor from noise[] (1 = exact) */
static size_t make_points(const struct rdb_fit *truth, double noise, struct rdb_sample *out)
{
    uint64_t x = 88172645463325252ull;
    size_t n = 0;
    for (size_t i = 0; i < NS; i++)
        for (size_t j = 0; j < ND; j++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            double u = (double)(x % 20001) / 10000.0 - 1;   /* -1 .. 1 */
            out[n++] = (struct rdb_sample){ sizes[i], depths[j],
                                            rdb_model_bps(truth, sizes[i], depths[j]) * (1 + noise * u) };
        }
    return n;
}

static void t_model_shape(void)
{
    struct rdb_fit f = { .ok = 1, .latency = 20e-6, .bandwidth = 2e9, .op_rate = 1e6 };
    /* depth 1, big message: nearly the bandwidth; tiny message: latency-bound */
    double big = rdb_model_bps(&f, 64 << 20, 1), small = rdb_model_bps(&f, 4096, 1);
    CHECK(big < 2e9 && big > 1.99e9);
    CHECK(rel(small, 4096 / (20e-6 + 4096 / 2e9)) < 1e-12);
    /* depth multiplies until the busy link caps it: size / (1/op_rate + size/bandwidth) */
    CHECK(rel(rdb_model_bps(&f, 4096, 4), 4 * small) < 1e-12);
    CHECK(rel(rdb_model_bps(&f, 4096, 64), 4096 / (1e-6 + 4096 / 2e9)) < 1e-12);
    /* Little's law for the latency */
    CHECK(rel(rdb_model_latency(&f, 4096, 1), 20e-6 + 4096 / 2e9) < 1e-12);
    CHECK(rel(rdb_model_latency(&f, 4096, 64), 64 * 4096 / rdb_model_bps(&f, 4096, 64)) < 1e-12);
    struct rdb_fit none = { 0 };
    CHECK(rdb_model_bps(&none, 4096, 1) == 0);
}

static void t_model_depth_for(void)
{
    struct rdb_fit f = { .ok = 1, .latency = 20e-6, .bandwidth = 2e9, .op_rate = 1e9, .n_half = 40000 };
    /* ceil(0.9 * (1 + n_half / size)) */
    CHECK_EQ_U(rdb_depth_for(&f, 40000, 0.9), 2);      /* 0.9 * 2 = 1.8 */
    CHECK_EQ_U(rdb_depth_for(&f, 4000, 0.9), 10);      /* 0.9 * 11 = 9.9 */
    CHECK_EQ_U(rdb_depth_for(&f, 4 << 20, 0.9), 1);
    CHECK_EQ_U(rdb_depth_for(&f, 400, 0.5), 51);       /* 0.5 * 101 = 50.5 */
    /* the depth found really reaches the fraction, one less does not */
    unsigned d = rdb_depth_for(&f, 4000, 0.9);
    CHECK(rdb_model_bps(&f, 4000, d) >= 0.9 * 2e9);
    CHECK(rdb_model_bps(&f, 4000, d - 1) < 0.9 * 2e9);
    /* an op rate that caps 4 KiB below 90% of the link: no depth does it */
    f.op_rate = 1e5;
    CHECK_EQ_U(rdb_depth_for(&f, 4096, 0.9), 0);
}

static void t_fit_exact(void)
{
    struct rdb_fit truth = { .ok = 1, .latency = 35e-6, .bandwidth = 3.1e9, .op_rate = 120000 }, f;
    struct rdb_sample s[NS * ND];
    size_t n = make_points(&truth, 0, s);
    rdb_fit(s, n, &f);
    CHECK(f.ok);
    CHECK_EQ_U(f.points, NS * ND);
    CHECK(rel(f.latency, truth.latency) < 0.02);
    CHECK(rel(f.bandwidth, truth.bandwidth) < 0.02);
    CHECK(rel(f.op_rate, truth.op_rate) < 0.02);
    CHECK(rel(f.n_half, f.latency * f.bandwidth) < 1e-12);
    CHECK(f.err_median < 0.01);
    CHECK(f.err_max < 0.05);
}

static void t_fit_no_op_limit(void)
{
    /* the plain formula of the issue: depth * size / (latency + size / bandwidth), capped */
    struct rdb_fit truth = { .ok = 1, .latency = 2e-6, .bandwidth = 12e9, .op_rate = 1e12 }, f;
    struct rdb_sample s[NS * ND];
    size_t n = make_points(&truth, 0, s);
    rdb_fit(s, n, &f);
    CHECK(f.ok);
    CHECK(rel(f.latency, 2e-6) < 0.02);
    CHECK(rel(f.bandwidth, 12e9) < 0.02);
    CHECK(f.err_max < 0.03);
    /* no point is held back by an op rate: the fit names none (it drifted to 1e19 before) */
    CHECK(f.op_rate == 0);
    CHECK(rel(rdb_model_bps(&f, 64 << 20, 64), 12e9) < 0.02);   /* the busy link: the bandwidth */
}

static void t_fit_noisy(void)
{
    struct rdb_fit truth = { .ok = 1, .latency = 25e-6, .bandwidth = 2.5e9, .op_rate = 60000 }, f;
    struct rdb_sample s[NS * ND];
    size_t n = make_points(&truth, 0.15, s);
    rdb_fit(s, n, &f);
    CHECK(f.ok);
    CHECK(f.err_median <= 0.25);
    CHECK(f.err_max <= 0.5);
    CHECK(rel(f.bandwidth, truth.bandwidth) < 0.2);
    CHECK(rel(f.latency, truth.latency) < 0.3);
}

static void t_fit_degenerate(void)
{
    struct rdb_fit f;
    struct rdb_sample one = { 4096, 1, 1e8 }, bad[3] = { { 4096, 1, 0 }, { 0, 1, 1e8 }, { 4096, 0, 1e8 } };
    rdb_fit(&one, 1, &f);
    CHECK(!f.ok);
    CHECK_EQ_U(f.points, 1);
    rdb_fit(bad, 3, &f);   /* nothing usable: zero rate, size or depth */
    CHECK(!f.ok);
    CHECK_EQ_U(f.points, 0);
    rdb_fit(NULL, 0, &f);
    CHECK(!f.ok);
}

static void t_percentile_ln(void)
{
    double v[] = { 5, 1, 4, 2, 3, 10, 9, 8, 7, 6 };
    CHECK(rdb_percentile(v, 10, 50) == 5);
    CHECK(rdb_percentile(v, 10, 99) == 10);
    CHECK(rdb_percentile(v, 10, 0) == 1);
    CHECK(rdb_percentile(v, 1, 50) == 1);
    CHECK(rdb_percentile(NULL, 0, 50) == 0);
    CHECK(rel(rdb_ln(2), 0.693147180559945309) < 1e-14);
    CHECK(rel(rdb_ln(10), 2.302585092994045684) < 1e-14);
    CHECK(rel(rdb_ln(1e-6), -13.815510557964274) < 1e-13);
    CHECK(rel(rdb_ln(3e12), 28.729633404596657) < 1e-13);
    CHECK(rdb_ln(1) == 0);
    CHECK(rdb_ln(0) < -1e299 && rdb_ln(-1) < -1e299);
}

/* ---- the SVG writer ---- */

static void t_svg_ticks(void)
{
    double t[32];
    char l[32];
    size_t n = rdb_svg_ticks(RDB_UNIT_BYTES, 4096, 64 << 20, t, 32);
    static const char *const want_b[] = { "4 KiB", "16 KiB", "64 KiB", "256 KiB", "1 MiB", "4 MiB", "16 MiB", "64 MiB" };
    CHECK_EQ_U(n, 8);
    for (size_t i = 0; i < n && i < 8; i++) {
        rdb_svg_tick_label(RDB_UNIT_BYTES, t[i], l, sizeof l);
        CHECK_STR_EQ(l, want_b[i]);
    }
    n = rdb_svg_ticks(RDB_UNIT_BPS, 1e8, 1e10, t, 32);   /* two decades: 1, 2, 5 steps */
    static const char *const want_r[] = { "100 MB/s", "200 MB/s", "500 MB/s", "1 GB/s", "2 GB/s", "5 GB/s", "10 GB/s" };
    CHECK_EQ_U(n, 7);
    for (size_t i = 0; i < n && i < 7; i++) {
        rdb_svg_tick_label(RDB_UNIT_BPS, t[i], l, sizeof l);
        CHECK_STR_EQ(l, want_r[i]);
    }
    n = rdb_svg_ticks(RDB_UNIT_SECONDS, 1e-5, 1, t, 32);   /* five decades: decades only */
    static const char *const want_s[] = { "10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s" };
    CHECK_EQ_U(n, 6);
    for (size_t i = 0; i < n && i < 6; i++) {
        rdb_svg_tick_label(RDB_UNIT_SECONDS, t[i], l, sizeof l);
        CHECK_STR_EQ(l, want_s[i]);
    }
    CHECK_EQ_U(rdb_svg_ticks(RDB_UNIT_BPS, 0, 10, t, 32), 0);
    CHECK_EQ_U(rdb_svg_ticks(RDB_UNIT_BPS, 10, 1, t, 32), 0);
    CHECK_EQ_U(rdb_svg_ticks(RDB_UNIT_BYTES, 1, 1u << 30, t, 3), 3);   /* bounded by cap */
    CHECK(rdb_svg_color(0) != rdb_svg_color(1));
}

static char *svg_of(const struct rdb_figure *fig, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    *rc = rdb_svg_write(f, fig);
    fclose(f);
    return buf;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void t_svg_document(void)
{
    double x[] = { 4096, 65536, 1 << 20, 16 << 20 };
    double y1[] = { 1e8, 0, 1e9, 2e9 };          /* a gap: two pieces, the first a single point */
    double y2[] = { 2e8, 6e8, 1.5e9, 2.1e9 };
    double lat[] = { 2e-5, 4e-5, 5e-4, 8e-3 };
    struct rdb_series bw[] = {
        { .name = "depth 1 <measured>", .rgb = 0x1f77b4, .markers = 1, .n = 4, .x = x, .y = y1 },
        { .name = "depth 1 & model", .rgb = 0x1f77b4, .dashed = 1, .n = 4, .x = x, .y = y2 },
    };
    struct rdb_series lt[] = { { .name = "latency", .rgb = 0xff7f0e, .markers = 1, .n = 4, .x = x, .y = lat } };
    struct rdb_panel p[] = {
        { .title = "tcp: bandwidth", .x = { "message size", RDB_UNIT_BYTES, 0, 0 },
          .y = { "bandwidth", RDB_UNIT_BPS, 0, 0 }, .series = bw, .nseries = 2 },
        { .title = "tcp: latency", .x = { "message size", RDB_UNIT_BYTES, 0, 0 },
          .y = { "latency", RDB_UNIT_SECONDS, 0, 0 }, .series = lt, .nseries = 1 },
    };
    struct rdb_legend_item leg[] = { { .label = "depth 1", .rgb = 0x1f77b4, .markers = 1 },
                                     { .label = "model", .rgb = 0x555555, .dashed = 1 } };
    struct rdb_figure fig = { .title = "rdbench: a<b & \"c\" → d", .subtitle = "sub\001title", .panels = p,
                              .npanels = 2, .cols = 2, .legend = leg, .nlegend = 2 };
    int rc = -2;
    char *s = svg_of(&fig, &rc);
    CHECK_OR(s != NULL, return);
    CHECK_EQ_I(rc, 0);
    CHECK(!strncmp(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"", 77));
    CHECK(strlen(s) > 7 && !strcmp(s + strlen(s) - 7, "</svg>\n"));
    CHECK_HAS(s, "rdbench: a&lt;b &amp; &quot;c&quot; → d");
    CHECK_HAS(s, "sub?title");                      /* a control character is not XML */
    CHECK_HAS(s, "depth 1 &lt;measured&gt;");
    CHECK_EQ_U(count(s, "<g class=\"panel\">"), 2);
    CHECK_EQ_U(count(s, "<polyline"), 4);          /* 2 pieces + 1 dashed + 1 latency */
    CHECK_EQ_U(count(s, "stroke-dasharray"), 2);   /* the dashed series and its legend entry */
    CHECK_EQ_U(count(s, "<circle"), 3 + 4 + 1);    /* measured points (not the gap) + legend */
    CHECK_EQ_U(count(s, "<g"), count(s, "</g>"));
    CHECK_EQ_U(count(s, "<text"), count(s, "</text>"));
    /* axes: the tick labels with their units, the axis labels */
    CHECK_HAS(s, ">4 KiB</text>");
    CHECK_HAS(s, ">16 MiB</text>");
    CHECK_HAS(s, ">100 MB/s</text>");
    CHECK_HAS(s, ">2 GB/s</text>");
    CHECK_HAS(s, ">10 µs</text>");
    CHECK_HAS(s, ">10 ms</text>");
    CHECK_HAS(s, ">message size</text>");
    CHECK_HAS(s, "rotate(-90");
    CHECK_HAS(s, "clip-path=\"url(#clip1)\"");
    free(s);
}

static void t_svg_write_error(void)
{
    FILE *f = fopen("/dev/full", "w");
    CHECK_OR(f != NULL, return);
    struct rdb_figure fig = { .title = "t", .cols = 1 };
    CHECK_EQ_I(rdb_svg_write(f, &fig), -1);
    fclose(f);
}

/* ---- messages ---- */

static void t_msg_header(void)
{
    uint8_t b[64];
    struct rdb_hdr h = { .type = RDB_REVERSE, .a = 7, .seq = 0x0102030405060708ull, .b = 1u << 20 }, g;
    rdb_hdr_encode(&h, b);
    CHECK_MEM_EQ(b, "RDB1", 4);
    CHECK_EQ_I(rdb_hdr_decode(b, RDB_HDR, &g), RDB_P_OK);
    CHECK_EQ_U(g.type, RDB_REVERSE);
    CHECK_EQ_U(g.a, 7);
    CHECK_EQ_U(g.seq, 0x0102030405060708ull);
    CHECK_EQ_U(g.b, 1u << 20);
    CHECK_EQ_I(rdb_hdr_decode(b, RDB_HDR - 1, &g), RDB_P_SHORT);
    CHECK_EQ_I(rdb_hdr_decode(b, RDB_HDR + 1, &g), RDB_P_LENGTH);   /* len says 0 */
    /* DATA: any length, but exactly the frame's */
    h = (struct rdb_hdr){ .type = RDB_DATA, .len = 32 };
    rdb_hdr_encode(&h, b);
    CHECK_EQ_I(rdb_hdr_decode(b, 64, &g), RDB_P_OK);
    CHECK_EQ_I(rdb_hdr_decode(b, 63, &g), RDB_P_LENGTH);
    /* an ACK, a BYE, a request carry nothing */
    h = (struct rdb_hdr){ .type = RDB_ACK, .len = 1 };
    rdb_hdr_encode(&h, b);
    CHECK_EQ_I(rdb_hdr_decode(b, RDB_HDR + 1, &g), RDB_P_LENGTH);
    /* INFO at most RDB_TEXT_MAX */
    h = (struct rdb_hdr){ .type = RDB_INFO, .len = RDB_TEXT_MAX + 1 };
    rdb_hdr_encode(&h, b);
    CHECK_EQ_I(rdb_hdr_decode(b, RDB_HDR + RDB_TEXT_MAX + 1, &g), RDB_P_LENGTH);
    /* type, flags, reserved, magic */
    h = (struct rdb_hdr){ .type = RDB_BYE };
    rdb_hdr_encode(&h, b);
    b[4] = 0;
    CHECK_EQ_I(rdb_hdr_decode(b, RDB_HDR, &g), RDB_P_TYPE);
    b[4] = RDB_TYPE_MAX + 1;
    CHECK_EQ_I(rdb_hdr_decode(b, RDB_HDR, &g), RDB_P_TYPE);
    b[4] = RDB_BYE;
    b[5] = 1;
    CHECK_EQ_I(rdb_hdr_decode(b, RDB_HDR, &g), RDB_P_TYPE);
    b[5] = 0;
    b[7] = 1;
    CHECK_EQ_I(rdb_hdr_decode(b, RDB_HDR, &g), RDB_P_TYPE);
    b[7] = 0;
    b[0] = 'X';
    CHECK_EQ_I(rdb_hdr_decode(b, RDB_HDR, &g), RDB_P_MAGIC);
    CHECK_STR_EQ(rdb_type_name(RDB_ACK), "ACK");
    CHECK_STR_EQ(rdb_type_name(200), "?");
    CHECK_STR_EQ(rdb_perr_str(RDB_P_MAGIC), "not an rdbench message");
}

static void t_msg_info(void)
{
    struct rdb_info in = { .host = "beta", .version = "0.1.0", .desc = "rdma rxe_a port 1", .range = "32768-60999",
                           .io = "yes", .ndev = 2 }, out;
    in.dev[0] = (struct rdb_info_dev){ "rxe_a", 1, 4096, 9000, "va" };
    in.dev[1] = (struct rdb_info_dev){ "mlx5_0", 2, 1024, 0, "" };
    char text[RDB_TEXT_MAX];
    size_t n = rdb_info_encode(&in, text, sizeof text);
    CHECK(n > 0);
    CHECK_EQ_I(rdb_info_decode((const uint8_t *)text, n, &out), 0);
    CHECK_STR_EQ(out.host, "beta");
    CHECK_STR_EQ(out.desc, "rdma rxe_a port 1");
    CHECK_STR_EQ(out.range, "32768-60999");
    CHECK_STR_EQ(out.io, "yes");
    CHECK_EQ_U(out.ndev, 2);
    CHECK_STR_EQ(out.dev[0].name, "rxe_a");
    CHECK_EQ_U(out.dev[0].mtu, 4096);
    CHECK_EQ_U(out.dev[0].netdev_mtu, 9000);
    CHECK_STR_EQ(out.dev[0].netdev, "va");
    CHECK_STR_EQ(out.dev[1].netdev, "");
    CHECK_EQ_U(out.dev[1].port, 2);
    /* does not fit: 0 */
    CHECK_EQ_U(rdb_info_encode(&in, text, 20), 0);
}

static void t_msg_info_hostile(void)
{
    struct rdb_info out;
    char big[3000];
    memset(big, 'h', sizeof big);
    memcpy(big, "host=", 5);
    big[sizeof big - 1] = '\n';
    /* an overlong value is cut to its field; the rest past RDB_TEXT_MAX is never looked at */
    rdb_info_decode((const uint8_t *)big, sizeof big, &out);
    CHECK_EQ_U(strlen(out.host), sizeof out.host - 1);
    static const char evil[] =
        "host=a\033[2Jb\nversion\nnokey=1\n=x\ndev=\ndev=x\ndev=x 1\ndev=x 1 2 3\ndev=x 99999 1 1 y\n"
        "dev=x 1 4096 9000 va\ndev=x 1 99999999 1 y\ndesc=\x01\xff\n\n"
        "dev=\x01x 1 1 1 y\ndev=x 1 1 1 y z\n";   /* a name or device with a control byte or blank */
    int skipped = rdb_info_decode((const uint8_t *)evil, sizeof evil - 1, &out);
    CHECK_STR_EQ(out.host, "a?[2Jb");
    CHECK_STR_EQ(out.desc, "??");
    CHECK_EQ_U(out.ndev, 1);
    CHECK_STR_EQ(out.dev[0].netdev, "va");
    CHECK_EQ_I(skipped, 11);   /* the empty line is not counted */
    /* more devices than fit: the rest are skipped, none overflows */
    char many[RDB_TEXT_MAX];
    size_t used = 0;
    for (int i = 0; i < 20; i++)
        used += (size_t)snprintf(many + used, sizeof many - used, "dev=d%d 1 4096 1500 e%d\n", i, i);
    rdb_info_decode((const uint8_t *)many, used, &out);
    CHECK_EQ_U(out.ndev, RDB_INFO_DEVS);
    /* a device name that starts with a NUL is no name (found by fuzz_bench) */
    static const char nul_dev[] = "dev=\0\0\0\xf3rxe_a 1 4096 9000 va\n";
    CHECK_EQ_I(rdb_info_decode((const uint8_t *)nul_dev, sizeof nul_dev - 1, &out), 1);
    CHECK_EQ_U(out.ndev, 0);
    /* a NUL inside a value ends it */
    static const char nul[] = "host=ab\0cd\n";
    rdb_info_decode((const uint8_t *)nul, sizeof nul - 1, &out);
    CHECK_STR_EQ(out.host, "ab");
}

static void t_msg_io(void)
{
    struct rdb_io io = { .lanes = 4, .bytes = 1u << 30 }, got;
    for (unsigned i = 0; i < RDB_IO_COUNT; i++)
        io.bps[i] = 1000000007ull * (i + 1);
    uint8_t b[RDB_IO_LEN + 1];
    CHECK_EQ_U(rdb_io_encode(&io, b), RDB_IO_LEN);
    CHECK_EQ_I(rdb_io_decode(b, RDB_IO_LEN, &got), RDB_P_OK);
    CHECK_MEM_EQ(&got.bps, &io.bps, sizeof io.bps);
    CHECK_EQ_U(got.lanes, 4);
    CHECK_EQ_U(got.bytes, 1u << 30);
    CHECK_EQ_I(rdb_io_decode(b, RDB_IO_LEN - 1, &got), RDB_P_LENGTH);
    CHECK_EQ_I(rdb_io_decode(b, RDB_IO_LEN + 1, &got), RDB_P_LENGTH);
    CHECK_STR_EQ(rdb_io_key(RDB_IO_PIPE), "pipe");
    CHECK_STR_EQ(rdb_io_name(RDB_IO_COUNT), "?");
}

/* ---- the agent's ready line ---- */

static void t_ready_line(void)
{
    struct rdb_ready r;
    CHECK_EQ_I(rdb_ready_parse("ready 35141 tcp,rdma 32768-60999", &r), 0);
    CHECK_STR_EQ(r.port, "35141");
    CHECK_STR_EQ(r.kinds, "tcp,rdma");
    CHECK_STR_EQ(r.range, "32768-60999");
    CHECK_EQ_I(rdb_ready_parse("ready 1 rdma ?", &r), 0);
    CHECK_STR_EQ(r.kinds, "rdma");
    CHECK_STR_EQ(r.range, "?");
    CHECK_EQ_I(rdb_ready_parse("ready 65535 tcp 1-65535", &r), 0);
    /* a port that is not a number would be looked up as a service: ssh is 22 */
    static const char *const bad[] = {
        "ready ssh tcp 1-2", "ready 22x tcp 1-2", "ready 0 tcp 1-2", "ready 65536 tcp 1-2", "ready 022 tcp 1-2",
        "ready -1 tcp 1-2", "ready 5 udp 1-2", "ready 5 tcp,rdma,x 1-2", "ready 5 tcp 2-1", "ready 5 tcp 1-",
        "ready 5 tcp 1-2 x", "ready 5 tcp \033[2J", "ready 5 tcp", "ready  5 tcp 1-2", "ready 5", "",
        "rdrecv: cannot listen", "ready 5 tcp 99999-100000",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_I(rdb_ready_parse(bad[i], &r), -1);
        CHECK_STR_EQ(r.port, "");
    }
}

/* ---- the grid ---- */

/* A range ends at its MAX, on the grid or not (it was dropped before: 8K-64K measured 8K, 32K) */
static void t_steps(void)
{
    uint32_t s[RDB_MAX_SIZES];
    unsigned d[RDB_MAX_DEPTHS];
    CHECK_EQ_U(rdb_size_steps(8192, 65536, 4, s, RDB_MAX_SIZES), 3);
    CHECK(s[0] == 8192 && s[1] == 32768 && s[2] == 65536);
    CHECK_EQ_U(rdb_size_steps(4096, 64u << 20, 4, s, RDB_MAX_SIZES), 8);   /* the default: on the grid */
    CHECK(s[0] == 4096 && s[7] == 64u << 20);
    CHECK_EQ_U(rdb_size_steps(4096, 64u << 20, 16, s, RDB_MAX_SIZES), 5);  /* --quick's x16 up to 64M */
    CHECK(s[3] == 16u << 20 && s[4] == 64u << 20);
    CHECK_EQ_U(rdb_size_steps(65536, 65536, 4, s, RDB_MAX_SIZES), 1);
    CHECK_EQ_U(s[0], 65536);
    CHECK_EQ_U(rdb_depth_steps(1, 8, 4, d, RDB_MAX_DEPTHS), 3);           /* --quick's x4 */
    CHECK(d[0] == 1 && d[1] == 4 && d[2] == 8);
    CHECK_EQ_U(rdb_depth_steps(1, 64, 2, d, RDB_MAX_DEPTHS), 7);
    CHECK(d[6] == 64);
    CHECK_EQ_U(rdb_size_steps(4096, 64u << 20, 2, s, 4), 4);               /* cut short: MAX still last */
    CHECK(s[0] == 4096 && s[2] == 16384 && s[3] == 64u << 20);
}

/* ---- client and server over the in-memory transport ---- */

static const char secret[] = "bench unit test key 0123456789";

struct srv {
    struct rd_transport *tp;
    int rc, bye;
    struct rdb_server_cfg cfg;
    uint64_t inflight;   /* the server's limit on chunk x depth (0: rdb_serve's) */
};

static void *server_main(void *arg)
{
    struct srv *s = arg;
    struct rd_key k;
    struct rd_params limits = { .chunk_size = RDB_MAX_SIZE, .depth = RDB_MAX_DEPTH, .streams = 1,
                                .max_inflight = s->inflight ? s->inflight : RDB_SERVER_INFLIGHT }, agreed;
    rd_key_derive(&k, secret, strlen(secret));
    s->rc = rd_session_receiver(s->tp, &k, &limits, &agreed);
    if (!s->rc)
        s->rc = rdb_serve_conn(s->tp, &agreed, &s->cfg, NULL, &s->bye);
    rd_key_wipe(&k);
    s->tp->ops->close(s->tp);
    return NULL;
}

static int client_open_limited(struct rdb_conn *c, struct srv *s, pthread_t *th, uint32_t size, uint32_t depth,
                               uint64_t inflight)
{
    struct rd_key k;
    memset(c, 0, sizeof *c);
    memset(s, 0, sizeof *s);
    s->inflight = inflight;
    if (mem_pair(&c->tp, &s->tp) != RD_OK || rd_thread_create(th, NULL, server_main, s))
        return -1;
    rd_key_derive(&k, secret, strlen(secret));
    struct rd_params want = { .chunk_size = size, .depth = depth, .streams = 1 };
    int rc = rd_session_sender(c->tp, &k, &want, &c->agreed);
    rd_key_wipe(&k);
    return rc;
}

static int client_open(struct rdb_conn *c, struct srv *s, pthread_t *th, uint32_t size, uint32_t depth)
{
    return client_open_limited(c, s, th, size, depth, 0);
}

static void t_client_server(void)
{
    struct rdb_conn c;
    struct srv s;
    pthread_t th;
    CHECK_OR(client_open(&c, &s, &th, 8192, 8) == RD_OK, return);
    struct rdb_result r;
    CHECK_EQ_I(rdb_point(&c, 8192, 4, 0.05, 2, 3, &r), RD_OK);
    CHECK(r.ops >= 3);
    CHECK(r.seconds > 0 && r.bps > 0);
    CHECK(rel(r.bps, r.ops_per_s * 8192) < 1e-9);
    CHECK(r.p50 > 0 && r.p50 <= r.p99);
    CHECK_EQ_I(rdb_point(&c, 4096, 1, 0.02, 2, 3, &r), RD_OK);   /* smaller and shallower on the same one */
    CHECK(r.ops >= 3);
    /* out of what the connection agreed: refused here, before anything is sent */
    CHECK_EQ_I(rdb_point(&c, 16384, 1, 0.02, 2, 3, &r), RD_EUSAGE);
    CHECK_EQ_I(rdb_point(&c, 4096, 9, 0.02, 2, 3, &r), RD_EUSAGE);
    rd_error_clear();
    struct rdb_info info;
    CHECK_EQ_I(rdb_get_info(&c, &info), RD_OK);
    CHECK_STR_EQ(info.version, RD_VERSION);
    CHECK_STR_EQ(info.io, "no");
    CHECK_STR_EQ(info.desc, "mem");
    struct rdb_io io;
    int has = 1;
    CHECK_EQ_I(rdb_get_io(&c, 1u << 24, &io, &has), RD_OK);
    CHECK_EQ_I(has, 0);
    /* the other way: the server sends for 50 ms, twice (the ring is set up once) */
    CHECK_EQ_I(rdb_reverse(&c, 8192, 2, 50, &r), RD_OK);
    CHECK(r.ops >= 1 && r.bps > 0);
    CHECK_EQ_I(rdb_reverse(&c, 4096, 8, 20, &r), RD_OK);
    /* and forward again after it */
    CHECK_EQ_I(rdb_point(&c, 8192, 8, 0.02, 2, 3, &r), RD_OK);
    rdb_close(&c, 1);
    pthread_join(th, NULL);
    CHECK_EQ_I(s.rc, RD_OK);
    CHECK_EQ_I(s.bye, 1);
}

/* The server holds chunk x depth at most its limit (rdbench's --max-inflight, 256 MiB): a
 * client that asks for more gets a smaller depth, never less than 1, and can use that. */
static void t_server_inflight(void)
{
    struct rdb_conn c;
    struct srv s;
    pthread_t th;
    struct rdb_result r;
    CHECK_OR(client_open_limited(&c, &s, &th, 16384, 64, 65536) == RD_OK, return);
    CHECK_EQ_U(c.agreed.chunk_size, 16384);
    CHECK_EQ_U(c.agreed.depth, 4);
    CHECK_EQ_I(rdb_point(&c, 16384, 4, 0.01, 2, 3, &r), RD_OK);
    CHECK_EQ_I(rdb_point(&c, 16384, 5, 0.01, 2, 3, &r), RD_EUSAGE);
    rd_error_clear();
    rdb_close(&c, 1);
    pthread_join(th, NULL);
    CHECK_EQ_I(s.rc, RD_OK);
    CHECK_OR(client_open_limited(&c, &s, &th, 131072, 2, 65536) == RD_OK, return);   /* one message over it */
    CHECK_EQ_U(c.agreed.depth, 1);
    rdb_close(&c, 1);
    pthread_join(th, NULL);
}

/* The next frame from the server, raw: both ends share this process's one error, so what
 * the server said is read from the frame itself. */
static int next_frame(struct rd_transport *tp, uint8_t *out, size_t cap, size_t *len)
{
    struct rd_buf *b;
    int rc = tp->ops->recv(tp, &b, 5000);
    if (rc)
        return rc;
    *len = b->len < cap ? b->len : cap;
    memcpy(out, b->data, *len);
    tp->ops->release(tp, b);
    return RD_OK;
}

/* A client that breaks the rules: the server ends the connection with an ERR that names it. */
static void server_refuses(const struct rdb_hdr *h, const char *want_err)
{
    struct rdb_conn c;
    struct srv s;
    pthread_t th;
    uint8_t f[RD_CTRL_FRAME];
    size_t n = 0;
    CHECK_OR(client_open(&c, &s, &th, 4096, 2) == RD_OK, return);
    CHECK_EQ_I(rdb_send_msg(c.tp, h, NULL), RD_OK);
    struct rdb_hdr got;
    char text[RDB_TEXT_MAX + 1] = "";
    CHECK_EQ_I(next_frame(c.tp, f, sizeof f, &n), RD_OK);
    CHECK_EQ_I(rdb_hdr_decode(f, n, &got), RDB_P_OK);
    CHECK_EQ_U(got.type, RDB_ERR);
    rdb_text_clean(f + RDB_HDR, got.len, text, sizeof text);
    CHECK_HAS(text, want_err);
    rdb_close(&c, 0);
    pthread_join(th, NULL);
    CHECK_EQ_I(s.rc, RD_ESTREAM);
    CHECK_EQ_I(s.bye, 0);
}

static void t_server_refuses(void)
{
    struct rdb_hdr h = { .type = RDB_REVERSE, .a = 3, .b = 4096, .seq = 10 };   /* depth 3 > 2 agreed */
    server_refuses(&h, "is outside");
    h = (struct rdb_hdr){ .type = RDB_REVERSE, .a = 1, .b = 8192, .seq = 10 };   /* size > chunk */
    server_refuses(&h, "is outside");
    h = (struct rdb_hdr){ .type = RDB_REVERSE, .a = 1, .b = 4096, .seq = RDB_REVERSE_MAX_MS + 1 };
    server_refuses(&h, "is outside");
    h = (struct rdb_hdr){ .type = RDB_ACK, .seq = 1 };   /* the server's message, from the client */
    server_refuses(&h, "ACK out of turn");
    h = (struct rdb_hdr){ .type = RDB_END };
    server_refuses(&h, "END out of turn");
}

/* rdsend (an rdpipe DATA frame) at a bench server: it is told, in its own protocol, why. */
static void t_server_tells_rdsend(void)
{
    struct rdb_conn c;
    struct srv s;
    pthread_t th;
    uint8_t f[RD_CTRL_FRAME];
    size_t n = 0;
    CHECK_OR(client_open(&c, &s, &th, 4096, 2) == RD_OK, return);
    struct rd_buf *b;
    CHECK_OR(c.tp->ops->get_send_buf(c.tp, &b) == RD_OK, return);
    memset(b->data, 0, RD_FRAME_HDR + 16);
    b->len = rd_frame_seal(b->data, RD_DATA, 0, 16, 0);
    CHECK_EQ_I(c.tp->ops->send(c.tp, b), RD_OK);
    CHECK_EQ_I(next_frame(c.tp, f, sizeof f, &n), RD_OK);
    struct rd_frame fr;
    struct rd_reason r;
    CHECK_OR(rd_frame_parse(f, n, RD_CTRL_FRAME, &fr) == RD_P_OK, goto out);
    CHECK_EQ_U(fr.type, RD_ABORT);
    CHECK_OR(rd_reason_decode(fr.payload, fr.length, &r) == RD_P_OK, goto out);
    CHECK_HAS(r.text, "this is an rdbench server");
    CHECK_HAS(r.text, "not rdrecv");
out:
    rdb_close(&c, 0);
    pthread_join(th, NULL);
    CHECK_EQ_I(s.rc, RD_ESTREAM);
}

/* A server that answers REVERSE with DATA for ever and never its END, reading the client's
 * ACK after each (read_acks) or none of them. */
static void reverse_for_ever(struct rd_transport *tp, int read_acks)
{
    struct rd_key k;
    struct rd_params limits = { .chunk_size = RDB_MAX_SIZE, .depth = RDB_MAX_DEPTH, .streams = 1 }, agreed;
    struct rd_buf *b;
    struct rdb_hdr h;
    rd_key_derive(&k, secret, strlen(secret));
    int rc = rd_session_receiver(tp, &k, &limits, &agreed);
    rd_key_wipe(&k);
    if (!rc)
        rc = rdb_recv_msg(tp, 5000, &b, &h, "client");
    if (!rc) {
        tp->ops->release(tp, b);
        rc = tp->ops->setup_ring(tp, RD_DIR_SEND, RD_FRAME_HDR + (size_t)agreed.chunk_size, agreed.depth);
    }
    for (uint64_t seq = 0; !rc; seq++) {   /* until the client hangs up or is shut down */
        struct rdb_hdr d = { .type = RDB_DATA, .len = 4096, .seq = seq };
        rc = rdb_send_msg(tp, &d, NULL);
        if (!rc && read_acks)
            rc = rdb_recv_msg(tp, 5000, &b, &h, "client");
        if (!rc && read_acks)
            tp->ops->release(tp, b);
    }
    tp->ops->close(tp);
}

/* in order and in time, never its END: the client gives up answer_ms after the run's time */
static void *endless_main(void *arg)
{
    reverse_for_ever(arg, 1);
    return NULL;
}

/* A client of a server thread that runs server_fn over its end of an in-memory pair: the
 * handshake done (4 KiB messages, depth 2). -1 when the thread or the pair did not start. */
static int client_of(struct rdb_conn *c, void *(*server_fn)(void *), pthread_t *th)
{
    struct rd_transport *stp;
    struct rd_key k;
    memset(c, 0, sizeof *c);
    if (mem_pair(&c->tp, &stp) != RD_OK || pthread_create(th, NULL, server_fn, stp))
        return -1;
    rd_key_derive(&k, secret, strlen(secret));
    struct rd_params want = { .chunk_size = 4096, .depth = 2, .streams = 1 };
    int rc = rd_session_sender(c->tp, &k, &want, &c->agreed);
    rd_key_wipe(&k);
    return rc;
}

static void t_reverse_deadline(void)
{
    struct rdb_conn c;
    pthread_t th;
    int rc = client_of(&c, endless_main, &th);
    CHECK_OR(rc != -1, return);
    CHECK_OR(rc == RD_OK, goto out);
    c.answer_ms = 300;
    struct rdb_result r;
    double t0 = rd_now();
    CHECK_EQ_I(rdb_reverse(&c, 4096, 1, 100, &r), RD_ESTREAM);
    double took = rd_now() - t0;
    CHECK_HAS(rd_error_msg(), "did not end its 100 ms REVERSE run within 0.3 s more");
    CHECK(took >= 0.39 && took < 5);
    rd_error_clear();
out:
    rdb_close(&c, 0);
    pthread_join(th, NULL);
}

/* ---- the guard over a served client ---- */

/* A server that serves one client under a guard, in a thread with an error context of its
 * own (pthread_create), so that its error is its own to read. */
struct guarded {
    struct rd_transport *tp;
    double in_s;        /* serving deadline, seconds after the handshake; < 0: none */
    int send_ms, watch_fd;
    int rc, why, bye;
    double took;        /* seconds serving took */
    char msg[512];
};

static void *guarded_main(void *arg)
{
    struct guarded *s = arg;
    struct rd_key k;
    struct rd_params limits = { .chunk_size = RDB_MAX_SIZE, .depth = RDB_MAX_DEPTH, .streams = 1 }, agreed;
    struct rdb_server_cfg cfg = { .watch_fd = -1 };
    struct rdb_guard g;
    rd_key_derive(&k, secret, strlen(secret));
    s->rc = rd_session_receiver(s->tp, &k, &limits, &agreed);
    rd_key_wipe(&k);
    double t0 = rd_now();
    if (!s->rc)
        s->rc = rdb_guard_start(&g, s->tp, s->in_s < 0 ? -1 : t0 + s->in_s, s->send_ms, s->watch_fd);
    if (!s->rc) {
        s->rc = rdb_serve_conn(s->tp, &agreed, &cfg, &g, &s->bye);
        s->why = rdb_guard_stop(&g);
        s->rc = rdb_guard_explain(&g, s->rc);
    }
    s->took = rd_now() - t0;
    rd_error_copy(s->msg, sizeof s->msg);
    s->tp->ops->close(s->tp);
    return NULL;
}

static int guarded_open(struct rdb_conn *c, struct guarded *s, pthread_t *th)
{
    struct rd_key k;
    memset(c, 0, sizeof *c);
    if (mem_pair(&c->tp, &s->tp) != RD_OK || pthread_create(th, NULL, guarded_main, s))
        return -1;
    rd_key_derive(&k, secret, strlen(secret));
    struct rd_params want = { .chunk_size = 4096, .depth = 2, .streams = 1 };
    int rc = rd_session_sender(c->tp, &k, &want, &c->agreed);
    rd_key_wipe(&k);
    return rc;
}

/* A client that proved the key and then sits there: served until the deadline, not the
 * per-message idle limit (RDB_STALL_MS, 10 s) */
static void t_guard_deadline(void)
{
    struct rdb_conn c;
    struct guarded s = { .in_s = 0.3, .send_ms = RDB_SEND_MS, .watch_fd = -1 };
    pthread_t th;
    CHECK_OR(guarded_open(&c, &s, &th) == RD_OK, return);
    pthread_join(th, NULL);
    CHECK_EQ_I(s.why, RDB_GUARD_DEADLINE);
    CHECK_EQ_I(s.rc, RD_ECONNECT);
    CHECK_HAS(s.msg, "still being served when --timeout ran out: cut off");
    CHECK(s.took >= 0.29 && s.took < 5);
    rdb_close(&c, 0);
}

/* A client that sends DATA and never reads the ACKs: the server's send blocks (the in-memory
 * transport's receive pool of 4 frames is full), and the guard ends it */
static void t_guard_send(void)
{
    struct rdb_conn c;
    struct guarded s = { .in_s = -1, .send_ms = 300, .watch_fd = -1 };
    pthread_t th;
    CHECK_OR(guarded_open(&c, &s, &th) == RD_OK, return);
    for (uint64_t i = 0; i < 6; i++) {   /* 4 ACKs fill the pool, the 5th blocks; 2 more fit the ring */
        struct rdb_hdr h = { .type = RDB_DATA, .len = 16, .seq = i };
        CHECK_EQ_I(rdb_send_msg(c.tp, &h, NULL), RD_OK);
    }
    pthread_join(th, NULL);
    CHECK_EQ_I(s.why, RDB_GUARD_SEND);
    CHECK_EQ_I(s.rc, RD_ECONNECT);
    CHECK_HAS(s.msg, "read nothing for 0 s (a send to it was blocked): dropped");
    CHECK(s.took >= 0.29 && s.took < 5);
    rdb_close(&c, 0);
}

/* rdrecv --check: the ssh channel of the rdcheck that started it closes while a client is
 * served; the server stops serving at once */
static void t_guard_watch(void)
{
    struct rdb_conn c;
    int p[2];
    CHECK_OR(pipe(p) == 0, return);
    struct guarded s = { .in_s = -1, .send_ms = RDB_SEND_MS, .watch_fd = p[0] };
    pthread_t th;
    CHECK_OR(guarded_open(&c, &s, &th) == RD_OK, goto out);
    CHECK_EQ_I((int)write(p[1], "x", 1), 1);   /* what it says besides is no reason to stop */
    usleep(100000);
    close(p[1]);
    p[1] = -1;
    pthread_join(th, NULL);
    CHECK_EQ_I(s.why, RDB_GUARD_GONE);
    CHECK_EQ_I(s.rc, RD_ECONNECT);
    CHECK_HAS(s.msg, "rdcheck went away");
    CHECK(s.took >= 0.09 && s.took < 5);
    rdb_close(&c, 0);
out:
    close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
}

/* and reads nothing after the request: not the client's ACKs either */
static void *deaf_main(void *arg)
{
    reverse_for_ever(arg, 0);
    return NULL;
}

/* The client's own guard: a server that stops reading blocks the client's send (its ACKs
 * fill the in-memory transport's 4 receive frames, as a TCP window closes), and the client
 * gives up after send_ms instead of waiting for ever */
static void t_client_guard_send(void)
{
    struct rdb_conn c;
    pthread_t th;
    int rc = client_of(&c, deaf_main, &th);
    CHECK_OR(rc != -1, return);
    CHECK_OR(rc == RD_OK, goto out);
    rdb_conn_guard(&c, 300);
    CHECK(c.guarded);
    c.answer_ms = 10000;   /* the guard, not a missing answer or the run's end, must end it */
    struct rdb_result r;
    double t0 = rd_now();
    CHECK_EQ_I(rdb_reverse(&c, 4096, 1, 5000, &r), RD_ESTREAM);
    double took = rd_now() - t0;
    CHECK_HAS(rd_error_msg(), "read nothing for 0 s (a send to it was blocked): gave up");
    CHECK(took >= 0.29 && took < 5);
    rd_error_clear();
out:
    rdb_close(&c, 0);
    pthread_join(th, NULL);
}

static void before(void)
{
    rd_error_clear();
}

int main(void)
{
    check_before_each = before;
    check_watchdog(CASE_TIMEOUT_S);
    RUN(t_model_shape);
    RUN(t_model_depth_for);
    RUN(t_fit_exact);
    RUN(t_fit_no_op_limit);
    RUN(t_fit_noisy);
    RUN(t_fit_degenerate);
    RUN(t_percentile_ln);
    RUN(t_steps);
    RUN(t_ready_line);
    RUN(t_svg_ticks);
    RUN(t_svg_document);
    RUN(t_svg_write_error);
    RUN(t_msg_header);
    RUN(t_msg_info);
    RUN(t_msg_info_hostile);
    RUN(t_msg_io);
    RUN(t_client_server);
    RUN(t_server_refuses);
    RUN(t_server_tells_rdsend);
    RUN(t_server_inflight);
    RUN(t_reverse_deadline);
    RUN(t_guard_deadline);
    RUN(t_guard_send);
    RUN(t_guard_watch);
    RUN(t_client_guard_send);
    return check_summary();
}
