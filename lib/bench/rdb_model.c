/* rdb_model.c - the IO-limits model and its least-squares fit (rdb_model.h).
 * Where it sits: called by the sweep once every point is measured, and by the report for
 * the dashed model lines; no IO. */
#include "bench/rdb_model.h"

#include <stdlib.h>
#include <string.h>

#define INF 1e300

/* The few functions of libm this needs, so that the tools do not link it. */
double rdb_ln(double x)
{
    if (!(x > 0))
        return -1e300;
    if (x > 1e300)
        x = 1e300;
    int e = 0;
    while (x >= 65536) {
        x /= 65536;
        e += 16;
    }
    while (x >= 2) {
        x /= 2;
        e++;
    }
    while (x < 1.0 / 65536) {
        x *= 65536;
        e -= 16;
    }
    while (x < 1) {
        x *= 2;
        e--;
    }
    /* ln x = 2 atanh((x - 1) / (x + 1)), |z| <= 1/3 for x in [1, 2) */
    double z = (x - 1) / (x + 1), z2 = z * z, term = z, sum = 0;
    for (int k = 1; k < 80 && (term > 1e-19 || term < -1e-19); k += 2) {
        sum += term / k;
        term *= z2;
    }
    return 2 * sum + e * 0.693147180559945309417;
}

static double absd(double x)
{
    return x < 0 ? -x : x;
}

static double ceil_d(double x)
{
    double t = (double)(long long)x;
    return t < x ? t + 1 : t;
}

/* the busy link: size / (1 / op_rate + size / bandwidth); op_rate 0: no per-message cost seen */
static double busy(const struct rdb_fit *f, double size)
{
    return size / ((f->op_rate > 0 ? 1 / f->op_rate : 0) + size / f->bandwidth);
}

double rdb_model_bps(const struct rdb_fit *f, double size, double depth)
{
    if (!f->ok || size <= 0 || depth <= 0)
        return 0;
    double x = depth * size / (f->latency + size / f->bandwidth), cap = busy(f, size);
    return x < cap ? x : cap;
}

double rdb_model_latency(const struct rdb_fit *f, double size, double depth)
{
    double x = rdb_model_bps(f, size, depth);
    return x > 0 ? depth * size / x : 0;
}

unsigned rdb_depth_for(const struct rdb_fit *f, double size, double fraction)
{
    if (!f->ok || size <= 0 || fraction <= 0 || busy(f, size) < fraction * f->bandwidth)
        return 0;
    double d = ceil_d(fraction * (1 + f->n_half / size) - 1e-9);
    if (d < 1)
        d = 1;
    return d > 1e6 ? 1000000u : (unsigned)d;
}

static double cost(const struct rdb_sample *s, size_t n, const double p[3])
{
    struct rdb_fit f = { .ok = 1, .latency = p[0], .bandwidth = p[1], .op_rate = p[2] };
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].bps <= 0)
            continue;
        double r = rdb_ln(rdb_model_bps(&f, s[i].size, s[i].depth) / s[i].bps);
        sum += r * r;
    }
    return sum;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double rdb_percentile(double *v, size_t n, double pct)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    double rank = ceil_d(pct / 100.0 * (double)n);
    size_t i = rank < 1 ? 0 : (size_t)rank - 1;
    return v[i < n ? i : n - 1];
}

/* Starting point: a straight line through the depth-1 points, time per message against size
 * (t = latency + size / bandwidth), each weighted by 1 / t^2 so the error is relative. */
static void start(const struct rdb_sample *s, size_t n, double *lat, double *bw, double *ops)
{
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, best = 0, tmin = INF, opmax = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].bps <= 0)
            continue;
        if (s[i].bps > best)
            best = s[i].bps;
        if (s[i].bps / s[i].size > opmax)
            opmax = s[i].bps / s[i].size;
        double t = s[i].depth * s[i].size / s[i].bps;
        if (t < tmin)
            tmin = t;
        if (s[i].depth != 1)
            continue;
        double w = 1 / (t * t);
        sw += w;
        sx += w * s[i].size;
        sy += w * t;
        sxx += w * s[i].size * s[i].size;
        sxy += w * s[i].size * t;
        m++;
    }
    *lat = tmin < INF ? tmin / 2 : 1e-3;
    *bw = best;
    *ops = 2 * opmax > 1 / *lat ? 2 * opmax : 1 / *lat;
    double det = sw * sxx - sx * sx;
    if (m >= 2 && det > 0) {
        double slope = (sw * sxy - sx * sy) / det, icpt = (sy - slope * sx) / sw;
        if (slope > 0)
            *bw = 1 / slope;
        if (icpt > 0)
            *lat = icpt;
    }
}

/* The most messages per second of any point. */
static double most_ops(const struct rdb_sample *s, size_t n)
{
    double most = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].bps > 0 && s[i].size > 0 && s[i].bps / s[i].size > most)
            most = s[i].bps / s[i].size;
    return most;
}

void rdb_fit(const struct rdb_sample *s, size_t n, struct rdb_fit *out)
{
    size_t used = 0;
    for (size_t i = 0; i < n; i++)
        used += s[i].bps > 0 && s[i].size > 0 && s[i].depth > 0;
    *out = (struct rdb_fit){ .points = used };
    if (used < 2)
        return;
    double p[3];
    start(s, n, &p[0], &p[1], &p[2]);
    /* pattern search: a move of one parameter by factor f that lowers the cost is kept; f
     * shrinks towards 1 when no parameter can move */
    double c = cost(s, n, p), f = 2.0;
    for (int it = 0; it < 6000 && f - 1 > 1e-7; it++) {
        int moved = 0;
        for (int k = 0; k < 6; k++) {
            double q[3] = { p[0], p[1], p[2] };
            q[k / 2] = k % 2 ? q[k / 2] / f : q[k / 2] * f;
            if (1 / q[2] > q[0])
                continue;   /* one message alone waits at least its own cost: latency >= 1 / op_rate */
            double nc = cost(s, n, q);
            if (nc < c) {
                memcpy(p, q, sizeof q);
                c = nc;
                moved = 1;
            }
        }
        if (!moved)
            f = 1 + (f - 1) / 2;
    }
    out->ok = 1;
    out->latency = p[0];
    out->bandwidth = p[1];
    out->op_rate = p[2] > RDB_OP_SEEN * most_ops(s, n) ? 0 : p[2];
    out->n_half = out->latency * out->bandwidth;
    double *err = malloc(used * sizeof *err);
    size_t m = 0;
    for (size_t i = 0; i < n && err; i++) {
        if (s[i].bps <= 0 || s[i].size <= 0 || s[i].depth <= 0)
            continue;
        double e = absd(rdb_model_bps(out, s[i].size, s[i].depth) / s[i].bps - 1);
        err[m++] = e;
        if (e > out->err_max)
            out->err_max = e;
    }
    out->err_median = err ? rdb_percentile(err, m, 50) : 0;
    free(err);
}
