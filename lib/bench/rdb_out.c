/* rdb_out.c - what rdbench shows (rdb_bench.h): the table on the terminal, the JSON object,
 * the SVG figure, and the limits of a transfer when --io measured the ends.
 * Where it sits: after the sweep; output only. */
#include "bench/rdb_bench.h"

#include "bench/rdb_svg.h"
#include "run/rd_cli.h"

#include <stdlib.h>
#include <string.h>

/* ---- numbers ---- */

static void fmt_time(double s, char *out, size_t n)
{
    if (s <= 0)
        snprintf(out, n, "-");
    else if (s < 1e-3)
        snprintf(out, n, "%.1f µs", s * 1e6);
    else if (s < 1)
        snprintf(out, n, "%.2f ms", s * 1e3);
    else
        snprintf(out, n, "%.2f s", s);
}

static void fmt_bytes(double v, char *out, size_t n)
{
    static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    unsigned k = 0;
    while (v >= 1024 && k < 4) {
        v /= 1024;
        k++;
    }
    if (v == (double)(long long)v)
        snprintf(out, n, "%lld %s", (long long)v, u[k]);
    else
        snprintf(out, n, "%.3g %s", v, u[k]);
}

static int is_finite(double v)
{
    return v == v && v - v == 0;
}

/* The fitted op rate in words: a number only where the points constrain it (rdb_model.h). */
static void op_rate_text(const struct rdb_fit *fit, char *out, size_t n)
{
    if (fit->op_rate > 0)
        snprintf(out, n, "at most %.0f messages/s", fit->op_rate);
    else
        snprintf(out, n, "no limit on messages/s seen");
}

static const char *server_name(const struct rdb_bench *b)
{
    for (unsigned i = 0; i < b->nruns; i++)
        if (b->runs[i].have_info && b->runs[i].info.host[0])
            return b->runs[i].info.host;
    return b->host ? b->host : "?";
}

/* ---- what limits a transfer ---- */

struct limits {
    int n;                 /* parts known */
    double part[3];        /* bytes/s: read here, link, write there (0 unknown) */
    const char *what[3];
    int limit;             /* index of the smallest known */
    double factor;         /* the next one up / the limit */
};

static const char *const part_names[3] = { "read here", "link", "write there" };

static double link_rate(const struct rdb_run *r, const char **what)
{
    uint32_t chunk = rdb_default_chunk(r->transport);
    for (size_t i = 0; i < r->npts; i++)
        if (r->pts[i].size == chunk && r->pts[i].depth == RD_DEFAULT_DEPTH && r->pts[i].measured) {
            *what = "measured at rdsend's chunk and depth";
            return r->pts[i].r.bps;
        }
    *what = "model at rdsend's chunk and depth";
    return rdb_model_bps(&r->fit, chunk, RD_DEFAULT_DEPTH);
}

static void find_limits(const struct rdb_bench *b, struct limits *l)
{
    memset(l, 0, sizeof *l);
    l->limit = -1;
    if (b->have_local_io) {
        l->part[0] = (double)(b->local_io.bps[RDB_IO_READ_COLD_1] ? b->local_io.bps[RDB_IO_READ_COLD_1]
                                                                   : b->local_io.bps[RDB_IO_READ_CACHED]);
        l->what[0] = b->local_io.bps[RDB_IO_READ_COLD_1] ? rdb_io_name(RDB_IO_READ_COLD_1) : rdb_io_name(RDB_IO_READ_CACHED);
    }
    if (b->nruns)
        l->part[1] = link_rate(&b->runs[0], &l->what[1]);
    if (b->have_remote_io) {
        l->part[2] = (double)b->remote_io.bps[RDB_IO_WRITE_1];
        l->what[2] = rdb_io_name(RDB_IO_WRITE_1);
    }
    for (int i = 0; i < 3; i++) {
        if (l->part[i] <= 0)
            continue;
        l->n++;
        if (l->limit < 0 || l->part[i] < l->part[l->limit])
            l->limit = i;
    }
    double next = 0;
    for (int i = 0; i < 3 && l->limit >= 0; i++)
        if (i != l->limit && l->part[i] > 0 && (next == 0 || l->part[i] < next))
            next = l->part[i];
    l->factor = l->limit >= 0 && next > 0 ? next / l->part[l->limit] : 0;
}

/* ---- the table ---- */

int rdb_print_io(FILE *f, const char *title, const struct rdb_io *io)
{
    char size[32];
    fmt_bytes((double)io->bytes, size, sizeof size);
    fprintf(f, "%s (scratch file of %s, N = %u lanes):\n", title, size, io->lanes);
    for (unsigned k = 0; k < RDB_IO_COUNT; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s", rdb_io_name(k));
        char *nl = strstr(name, "N lanes");
        if (nl)
            snprintf(nl, sizeof name - (size_t)(nl - name), "%u lanes", io->lanes);
        if (io->bps[k])
            fprintf(f, "  %-40s %8.3f GB/s\n", name, io->bps[k] / 1e9);
        else
            fprintf(f, "  %-40s %8s      (the filesystem cannot do this: tmpfs?)\n", name, "-");
    }
    return ferror(f) ? -1 : 0;
}

static void print_run(FILE *f, const struct rdb_run *r, unsigned passes)
{
    char a[32], c[32], d[32];
    size_t measured = 0, skipped = 0;
    for (size_t i = 0; i < r->npts; i++)
        measured += r->pts[i].measured;
    fprintf(f, "\n%s (%s, to %s): %zu points in %.1f s, each the best of %u passes\n", r->transport, r->desc,
            r->peer, measured, r->seconds, passes);
    fprintf(f, "%10s %6s %11s %11s %11s %9s %11s %7s\n", "size", "depth", "p50 lat", "p99 lat", "ops/s",
            "GB/s", "model GB/s", "error");
    uint32_t last = 0;
    for (size_t i = 0; i < r->npts; i++) {
        const struct rdb_pt *p = &r->pts[i];
        if (!p->measured) {
            skipped++;
            continue;
        }
        if (last && p->size != last)
            fputc('\n', f);
        last = p->size;
        fmt_bytes(p->size, a, sizeof a);
        fmt_time(p->r.p50, c, sizeof c);
        fmt_time(p->r.p99, d, sizeof d);
        fprintf(f, "%10s %6u %11s %11s %11.0f %9.3f", a, p->depth, c, d, p->r.ops_per_s, p->r.bps / 1e9);
        if (r->fit.ok && p->r.bps > 0)
            fprintf(f, " %11.3f %6.0f%%\n", p->model_bps / 1e9, (p->model_bps / p->r.bps - 1) * 100);
        else   /* no model: nothing to compare, not a 0 that reads like one */
            fprintf(f, " %11s %7s\n", "-", "-");
    }
    if (skipped) {
        const char *why = "";
        for (size_t i = 0; i < r->npts && !why[0]; i++)
            why = r->pts[i].skipped;
        fprintf(f, "(%zu points skipped: %s)\n", skipped, why);
    }
    if (!r->fit.ok) {
        fprintf(f, "model: too few points to fit\n");
        return;
    }
    fmt_time(r->fit.latency, a, sizeof a);
    fmt_bytes(r->fit.n_half, c, sizeof c);
    char ops[64];
    op_rate_text(&r->fit, ops, sizeof ops);
    fprintf(f, "model: latency %s, bandwidth %.3f GB/s, %s; n½ %s (the size that\n"
            "       gets half the bandwidth at depth 1); fit over %zu points: median error %.0f%%, max %.0f%%\n",
            a, r->fit.bandwidth / 1e9, ops, c, r->fit.points, r->fit.err_median * 100, r->fit.err_max * 100);
    fprintf(f, "depth for 90%% of the link:");
    uint32_t seen[64];
    unsigned ns = 0;
    for (size_t i = 0; i < r->npts && ns < 64; i++) {
        int dup = 0;
        for (unsigned k = 0; k < ns; k++)
            dup |= seen[k] == r->pts[i].size;
        if (dup)
            continue;
        seen[ns++] = r->pts[i].size;
        fmt_bytes(r->pts[i].size, a, sizeof a);
        unsigned d90 = rdb_depth_for(&r->fit, r->pts[i].size, 0.9);
        if (d90)
            fprintf(f, "%s %s: %u", ns > 1 ? "," : "", a, d90);
        else
            fprintf(f, "%s %s: none", ns > 1 ? "," : "", a);
    }
    fputc('\n', f);
}

int rdb_print_table(FILE *f, const struct rdb_bench *b)
{
    if (b->have_local_io)
        rdb_print_io(f, "this host", &b->local_io);
    if (b->nruns)
        fprintf(f, "%srdbench %s: %s -> %s (%s port %s)%s\n", b->have_local_io ? "\n" : "", RD_VERSION,
                b->client, server_name(b), b->host, b->port, b->quick ? ", --quick" : "");
    for (unsigned i = 0; i < b->nruns; i++)
        print_run(f, &b->runs[i], b->passes);
    if (b->have_remote_io) {
        char t[128];
        snprintf(t, sizeof t, "\nthe server, %s", server_name(b));
        rdb_print_io(f, t, &b->remote_io);
    } else if (b->remote_io_note[0]) {
        fprintf(f, "\n%s\n", b->remote_io_note);
    }
    struct limits l;
    find_limits(b, &l);
    if (b->nruns && l.n >= 2) {
        fprintf(f, "\nlimits of a transfer from here to %s over %s:\n", server_name(b), b->runs[0].transport);
        for (int i = 0; i < 3; i++)
            if (l.part[i] > 0)
                fprintf(f, "  %-12s %8.3f GB/s  (%s)%s\n", part_names[i], l.part[i] / 1e9, l.what[i],
                        i == l.limit ? "  <- the limit" : "");
        fprintf(f, "the %s limits it, %.1fx below the next part\n", part_names[l.limit], l.factor);
    }
    return fflush(f) || ferror(f) ? -1 : 0;
}

/* ---- JSON ----
 * Rates are in GB/s (10^9 bytes a second), in keys ending _gb_per_s as rdsend's gb_per_s: its
 * link_gbps is a link's Gb/s. */

static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void jnum(FILE *f, double v)
{
    if (is_finite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static void jnum_or_null(FILE *f, int known, double v)
{
    if (known)
        jnum(f, v);
    else
        fputs("null", f);
}

static void json_io(FILE *f, const struct rdb_io *io)
{
    fprintf(f, "{\"bytes\":%llu,\"lanes\":%u", (unsigned long long)io->bytes, io->lanes);
    for (unsigned k = 0; k < RDB_IO_COUNT; k++) {
        fprintf(f, ",\"%s_gb_per_s\":", rdb_io_key(k));
        if (io->bps[k])
            jnum(f, io->bps[k] / 1e9);
        else
            fputs("null", f);
    }
    fputc('}', f);
}

static void json_run(FILE *f, const struct rdb_run *r)
{
    fputs("{\"transport\":", f);
    jstr(f, r->transport);
    fputs(",\"local\":", f);
    jstr(f, r->desc);
    fputs(",\"peer\":", f);
    jstr(f, r->peer);
    fputs(",\"server\":", f);
    if (r->have_info) {
        fputs("{\"host\":", f);
        jstr(f, r->info.host);
        fputs(",\"version\":", f);
        jstr(f, r->info.version);
        fputs(",\"connection\":", f);
        jstr(f, r->info.desc);
        fputs(",\"devices\":[", f);
        for (unsigned i = 0; i < r->info.ndev; i++) {
            fprintf(f, "%s{\"name\":", i ? "," : "");
            jstr(f, r->info.dev[i].name);
            fprintf(f, ",\"port\":%u,\"mtu\":%u,\"netdev\":", r->info.dev[i].port, r->info.dev[i].mtu);
            jstr(f, r->info.dev[i].netdev);
            fprintf(f, ",\"netdev_mtu\":%u}", r->info.dev[i].netdev_mtu);
        }
        fputs("]}", f);
    } else {
        fputs("null", f);
    }
    fputs(",\"seconds\":", f);
    jnum(f, r->seconds);
    fputs(",\"points\":[", f);
    for (size_t i = 0; i < r->npts; i++) {
        const struct rdb_pt *p = &r->pts[i];
        fprintf(f, "%s\n{\"size\":%u,\"depth\":%u,\"measured\":%s", i ? "," : "", p->size, p->depth,
                p->measured ? "true" : "false");
        if (p->measured) {
            fprintf(f, ",\"pass\":%u,\"ops\":%llu,\"seconds\":", p->pass, (unsigned long long)p->r.ops);
            jnum(f, p->r.seconds);
            fputs(",\"ops_per_s\":", f);
            jnum(f, p->r.ops_per_s);
            fputs(",\"gb_per_s\":", f);
            jnum(f, p->r.bps / 1e9);
            fputs(",\"latency_p50_us\":", f);
            jnum(f, p->r.p50 * 1e6);
            fputs(",\"latency_p99_us\":", f);
            jnum(f, p->r.p99 * 1e6);
        } else {
            fputs(",\"skipped\":", f);
            jstr(f, p->skipped);
        }
        /* no model (too few points): null, never a 0 that reads like a result */
        fputs(",\"model_gb_per_s\":", f);
        jnum_or_null(f, r->fit.ok, p->model_bps / 1e9);
        fputs(",\"model_latency_us\":", f);
        jnum_or_null(f, r->fit.ok, p->model_lat * 1e6);
        if (p->measured) {
            fputs(",\"model_error\":", f);
            jnum_or_null(f, r->fit.ok && p->r.bps > 0, p->r.bps > 0 ? p->model_bps / p->r.bps - 1 : 0);
        }
        fputc('}', f);
    }
    fprintf(f, "],\n\"model\":{\"fitted\":%s,\"points\":%zu", r->fit.ok ? "true" : "false", r->fit.points);
    if (r->fit.ok) {
        fputs(",\"latency_us\":", f);
        jnum(f, r->fit.latency * 1e6);
        fputs(",\"bandwidth_gb_per_s\":", f);
        jnum(f, r->fit.bandwidth / 1e9);
        fputs(",\"op_rate_per_s\":", f);   /* null: no limit seen */
        jnum_or_null(f, r->fit.op_rate > 0, r->fit.op_rate);
        fputs(",\"n_half_bytes\":", f);
        jnum(f, r->fit.n_half);
        fputs(",\"median_error\":", f);
        jnum(f, r->fit.err_median);
        fputs(",\"max_error\":", f);
        jnum(f, r->fit.err_max);
        fputs(",\"depth_for_90pct\":[", f);
        uint32_t last = 0;
        int first = 1;
        for (size_t i = 0; i < r->npts; i++) {
            if (r->pts[i].size == last)
                continue;
            last = r->pts[i].size;
            unsigned d90 = rdb_depth_for(&r->fit, last, 0.9);
            fprintf(f, "%s{\"size\":%u,\"depth\":", first ? "" : ",", last);
            if (d90)
                fprintf(f, "%u}", d90);
            else
                fputs("null}", f);
            first = 0;
        }
        fputc(']', f);
    }
    fputs("}}", f);
}

int rdb_write_json(FILE *f, const struct rdb_bench *b)
{
    fputs("{\"tool\":\"rdbench\",\"version\":", f);
    jstr(f, RD_VERSION);
    fputs(",\"started\":", f);
    jstr(f, b->started);
    fputs(",\"seconds\":", f);
    jnum(f, b->seconds);
    fprintf(f, ",\"quick\":%s,\"passes\":%u,\"client\":", b->quick ? "true" : "false", b->passes);
    jstr(f, b->client);
    fputs(",\"host\":", f);
    if (b->host)
        jstr(f, b->host);
    else
        fputs("null", f);
    fputs(",\"port\":", f);
    if (b->port)
        jstr(f, b->port);
    else
        fputs("null", f);
    fputs(",\"runs\":[", f);
    for (unsigned i = 0; i < b->nruns; i++) {
        fputs(i ? ",\n" : "\n", f);
        json_run(f, &b->runs[i]);
    }
    fputs("],\n\"io\":", f);
    if (b->have_local_io || b->have_remote_io || b->remote_io_note[0]) {
        fputs("{\"dir\":", f);
        jstr(f, b->io_dir);
        fputs(",\"local\":", f);
        if (b->have_local_io)
            json_io(f, &b->local_io);
        else
            fputs("null", f);
        fputs(",\"remote\":", f);
        if (b->have_remote_io)
            json_io(f, &b->remote_io);
        else
            fputs("null", f);
        if (b->remote_io_note[0]) {
            fputs(",\"remote_note\":", f);
            jstr(f, b->remote_io_note);
        }
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    struct limits l;
    find_limits(b, &l);
    fputs(",\n\"limits\":", f);
    if (b->nruns && l.n >= 2) {
        fputs("{", f);
        for (int i = 0; i < 3; i++) {
            static const char *const keys[3] = { "read_here_gb_per_s", "link_gb_per_s", "write_there_gb_per_s" };
            fprintf(f, "\"%s\":", keys[i]);
            if (l.part[i] > 0)
                jnum(f, l.part[i] / 1e9);
            else
                fputs("null", f);
            fputc(',', f);
        }
        fputs("\"limit\":", f);
        jstr(f, part_names[l.limit]);
        fputs(",\"factor\":", f);
        jnum(f, l.factor);
        fputs("}", f);
    } else {
        fputs("null", f);
    }
    fputs("}\n", f);
    return fflush(f) || ferror(f) ? -1 : 0;
}

/* ---- SVG ---- */

#define MODEL_STEPS 97

/* x with x^n = target (target >= 1), by bisection: no libm */
static double nth_root(double target, unsigned n)
{
    double lo = 1, hi = target > 1 ? target : 1;
    for (int it = 0; it < 200; it++) {
        double mid = (lo + hi) / 2, p = 1;
        for (unsigned g = 0; g < n; g++)
            p *= mid;
        if (p < target)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

int rdb_write_svg(FILE *f, const struct rdb_bench *b)
{
    unsigned nd = 0;
    unsigned depths[RDB_MAX_DEPTHS];
    uint32_t smin = 0, smax = 0;
    for (unsigned i = 0; i < b->nruns; i++)
        for (size_t k = 0; k < b->runs[i].npts; k++) {
            const struct rdb_pt *p = &b->runs[i].pts[k];
            int seen = 0;
            for (unsigned j = 0; j < nd; j++)
                seen |= depths[j] == p->depth;
            if (!seen && nd < RDB_MAX_DEPTHS)
                depths[nd++] = p->depth;
            if (!smin || p->size < smin)
                smin = p->size;
            if (p->size > smax)
                smax = p->size;
        }
    /* per run: 2 panels (bandwidth, latency), each with a measured and a model line per depth */
    size_t nser = 4 * (size_t)nd * 2 + 1;
    size_t per_line = 2 * RDB_MAX_SIZES + 2 * MODEL_STEPS;
    struct rdb_panel panels[4];
    struct rdb_series *ser = calloc(nser, sizeof *ser);
    double *mem = calloc((size_t)b->nruns * 2 * nd * per_line + 1, sizeof *mem);
    char (*names)[48] = calloc(nser, sizeof *names), (*titles)[64] = calloc(4, sizeof *titles);
    if (!ser || !mem || !names || !titles) {
        free(ser);
        free(mem);
        free(names);
        free(titles);
        return -1;
    }
    double grid[MODEL_STEPS], ratio = smax > smin ? nth_root((double)smax / smin, MODEL_STEPS - 1) : 1;
    grid[0] = smin;
    for (unsigned g = 1; g < MODEL_STEPS; g++)   /* geometric from smin to smax */
        grid[g] = grid[g - 1] * ratio;
    grid[MODEL_STEPS - 1] = smax;
    double *m = mem;
    size_t np = 0, s = 0;
    for (unsigned i = 0; i < b->nruns; i++) {
        const struct rdb_run *r = &b->runs[i];
        for (int kind = 0; kind < 2; kind++) {   /* 0 bandwidth, 1 latency */
            struct rdb_series *first = &ser[s];
            for (unsigned d = 0; d < nd; d++) {
                double *x = m, *y = m + RDB_MAX_SIZES;
                size_t n = 0;
                m += per_line;
                for (size_t k = 0; k < r->npts && n < RDB_MAX_SIZES; k++) {
                    const struct rdb_pt *p = &r->pts[k];
                    if (p->depth != depths[d])
                        continue;
                    x[n] = p->size;
                    y[n++] = !p->measured ? 0 : kind == 0 ? p->r.bps : p->r.p50;
                }
                snprintf(names[s], sizeof names[s], "%s %s, depth %u, measured", r->transport,
                         kind ? "latency p50" : "bandwidth", depths[d]);
                ser[s] = (struct rdb_series){ .name = names[s], .rgb = rdb_svg_color(d), .markers = 1,
                                              .n = n, .x = x, .y = y };
                s++;
                if (!r->fit.ok)
                    continue;
                /* the model over the sizes measured at this depth, not beyond */
                double lo = 0, hi = 0;
                for (size_t k = 0; k < n; k++)
                    if (y[k] > 0) {
                        if (!lo || x[k] < lo)
                            lo = x[k];
                        if (x[k] > hi)
                            hi = x[k];
                    }
                double *mx = x + 2 * RDB_MAX_SIZES, *my = mx + MODEL_STEPS;
                for (unsigned g = 0; g < MODEL_STEPS; g++) {
                    int in = grid[g] >= lo * (1 - 1e-9) && grid[g] <= hi * (1 + 1e-9);
                    mx[g] = grid[g];
                    my[g] = !in ? 0 : kind == 0 ? rdb_model_bps(&r->fit, grid[g], depths[d])
                                               : rdb_model_latency(&r->fit, grid[g], depths[d]);
                }
                snprintf(names[s], sizeof names[s], "%s %s, depth %u, model", r->transport,
                         kind ? "latency" : "bandwidth", depths[d]);
                ser[s] = (struct rdb_series){ .name = names[s], .rgb = rdb_svg_color(d), .dashed = 1,
                                              .n = MODEL_STEPS, .x = mx, .y = my };
                s++;
            }
            snprintf(titles[np], sizeof titles[np], "%s: %s", r->transport,
                     kind ? "latency (p50, post to answer)" : "bandwidth");
            panels[np] = (struct rdb_panel){
                .title = titles[np],
                .x = { .label = "message size", .unit = RDB_UNIT_BYTES },
                .y = { .label = kind ? "latency" : "bandwidth", .unit = kind ? RDB_UNIT_SECONDS : RDB_UNIT_BPS },
                .series = first, .nseries = (size_t)(&ser[s] - first),
            };
            np++;
        }
    }
    struct rdb_legend_item legend[RDB_MAX_DEPTHS + 3];
    char dnames[RDB_MAX_DEPTHS][24];
    size_t nl = 0;
    for (unsigned d = 0; d < nd; d++) {
        snprintf(dnames[d], sizeof dnames[d], "depth %u", depths[d]);
        legend[nl++] = (struct rdb_legend_item){ .label = dnames[d], .rgb = rdb_svg_color(d), .markers = 1 };
    }
    legend[nl++] = (struct rdb_legend_item){ .label = "", .rgb = 0xffffffffu };
    legend[nl++] = (struct rdb_legend_item){ .label = "measured", .rgb = 0x555555, .markers = 1 };
    legend[nl++] = (struct rdb_legend_item){ .label = "model (fitted)", .rgb = 0x555555, .dashed = 1 };
    char title[256], sub[512];
    size_t used = 0;
    const char *srv = server_name(b);
    int same = b->host && !strcmp(srv, b->host);
    snprintf(title, sizeof title, "rdbench: %s → %s%s%s%s over %s%s%s", b->client, srv, same ? "" : " (",
             same ? "" : b->host, same ? "" : ")", b->nruns ? b->runs[0].transport : "?",
             b->nruns > 1 ? " and " : "", b->nruns > 1 ? b->runs[1].transport : "");
    sub[0] = '\0';
    for (unsigned i = 0; i < b->nruns && used < sizeof sub; i++) {
        const struct rdb_run *r = &b->runs[i];
        char lat[32], nh[32], ops[64];
        fmt_time(r->fit.latency, lat, sizeof lat);
        fmt_bytes(r->fit.n_half, nh, sizeof nh);
        if (r->fit.op_rate > 0)
            snprintf(ops, sizeof ops, "%.0fk messages/s", r->fit.op_rate / 1e3);
        else
            op_rate_text(&r->fit, ops, sizeof ops);
        int k = r->fit.ok
            ? snprintf(sub + used, sizeof sub - used, "%s model: latency %s, bandwidth %.2f GB/s, "
                       "%s, n½ %s · ", r->transport, lat, r->fit.bandwidth / 1e9, ops, nh)
            : snprintf(sub + used, sizeof sub - used, "%s: too few points for a model · ", r->transport);
        if (k > 0)
            used += (size_t)k;
    }
    if (used < sizeof sub)
        snprintf(sub + used, sizeof sub - used, "%s%s", b->started, b->quick ? " (--quick)" : "");
    struct rdb_figure fig = { .title = title, .subtitle = sub, .panels = panels, .npanels = np, .cols = 2,
                              .legend = legend, .nlegend = nl };
    int rc = rdb_svg_write(f, &fig);
    free(ser);
    free(mem);
    free(names);
    free(titles);
    return rc;
}
