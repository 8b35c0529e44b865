/* rdb_svg.c - the SVG writer of rdb_svg.h: grid of log-log panels, legend on the right.
 * Where it sits: rdbench's report hands it the measured and model lines; pure output. */
#include "bench/rdb_svg.h"

#include "bench/rdb_model.h"

#include <stdio.h>
#include <string.h>

#define PANEL_W 460.0
#define PANEL_H 330.0
#define PLOT_L 78.0      /* inside a panel: room for tick labels and the axis label */
#define PLOT_R 16.0
#define PLOT_T 30.0
#define PLOT_B 52.0
#define HEAD_H 62.0      /* title and subtitle */
#define LEGEND_W 190.0
#define MARGIN 16.0
#define MAX_TICKS 24

unsigned rdb_svg_color(unsigned k)
{
    static const unsigned palette[] = { 0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                        0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf };
    return palette[k % (sizeof palette / sizeof palette[0])];
}

/* Text as XML character data: markup characters escaped, control characters (not allowed
 * in XML 1.0) replaced. Bytes >= 0x80 pass: the callers' strings are UTF-8. */
static void put_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
        }
    }
}

static double base_of(enum rdb_unit u)
{
    return u == RDB_UNIT_BYTES ? 2.0 : 10.0;
}

/* The largest power of base <= v (v > 0). */
static double pow_floor(double v, double base)
{
    double p = 1;
    while (p > v)
        p /= base;
    while (p * base <= v * (1 + 1e-12))
        p *= base;
    return p;
}

static double pow_ceil(double v, double base)
{
    double p = pow_floor(v, base);
    return p < v * (1 - 1e-12) ? p * base : p;
}

size_t rdb_svg_ticks(enum rdb_unit unit, double min, double max, double *ticks, size_t cap)
{
    size_t n = 0;
    if (!(min > 0) || !(max >= min) || !cap)
        return 0;
    if (unit == RDB_UNIT_BYTES) {
        double step = 2;
        /* as few powers of two as keep the labels apart: 4 KiB, 16 KiB, ... */
        while (rdb_ln(max / min) / rdb_ln(step) > 9)
            step *= step;
        for (double v = pow_ceil(min, 2); v <= max * (1 + 1e-9) && n < cap; v *= step)
            ticks[n++] = v;
        return n;
    }
    double decades = rdb_ln(max / min) / rdb_ln(10);
    static const double fine[] = { 1, 2, 5 };
    for (double d = pow_floor(min, 10); d <= max * (1 + 1e-9); d *= 10)
        for (unsigned k = 0; k < (decades <= 2.01 ? 3u : 1u); k++) {
            double v = d * fine[k];
            if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9) && n < cap)
                ticks[n++] = v;
        }
    return n;
}

/* "%.3g" without trailing noise: 0.9999999 is 1 */
static void num(char *out, size_t n, double v)
{
    snprintf(out, n, "%.3g", v * (1 + 1e-9));
}

void rdb_svg_tick_label(enum rdb_unit unit, double v, char *out, size_t n)
{
    char s[32];
    static const char *const bytes[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    switch (unit) {
    case RDB_UNIT_BYTES: {
        unsigned u = 0;
        while (v >= 1024 && u < 4) {
            v /= 1024;
            u++;
        }
        num(s, sizeof s, v);
        snprintf(out, n, "%s %s", s, bytes[u]);
        return;
    }
    case RDB_UNIT_BPS: {
        static const char *const rate[] = { "B/s", "kB/s", "MB/s", "GB/s", "TB/s" };
        unsigned u = 0;
        while (v >= 1000 * (1 - 1e-9) && u < 4) {
            v /= 1000;
            u++;
        }
        num(s, sizeof s, v);
        snprintf(out, n, "%s %s", s, rate[u]);
        return;
    }
    case RDB_UNIT_SECONDS: {
        static const char *const t[] = { "s", "ms", "µs", "ns" };
        unsigned u = 0;
        while (v < 1 * (1 - 1e-9) && u < 3) {
            v *= 1000;
            u++;
        }
        num(s, sizeof s, v);
        snprintf(out, n, "%s %s", s, t[u]);
        return;
    }
    }
    snprintf(out, n, "?");
}

/* The axis range: as given, or the data's, widened to powers of the unit's base. */
static void axis_range(const struct rdb_panel *p, int is_y, double *lo, double *hi)
{
    const struct rdb_axis *a = is_y ? &p->y : &p->x;
    if (a->min > 0 && a->max > a->min) {
        *lo = a->min;
        *hi = a->max;
        return;
    }
    double mn = 0, mx = 0;
    for (size_t s = 0; s < p->nseries; s++)
        for (size_t i = 0; i < p->series[s].n; i++) {
            double v = is_y ? p->series[s].y[i] : p->series[s].x[i];
            if (!(v > 0))
                continue;
            if (mn == 0 || v < mn)
                mn = v;
            if (v > mx)
                mx = v;
        }
    if (mn == 0) {
        mn = 1;
        mx = 10;
    }
    double b = base_of(a->unit);
    *lo = pow_floor(mn, b);
    *hi = pow_ceil(mx, b);
    if (*hi <= *lo)
        *hi = *lo * b;
}

struct frame {
    double x0, y0, w, h;      /* plot area */
    double lx0, lx1, ly0, ly1; /* ln of the ranges */
};

static double px(const struct frame *fr, double v)
{
    return fr->x0 + (rdb_ln(v) - fr->lx0) / (fr->lx1 - fr->lx0) * fr->w;
}

static double py(const struct frame *fr, double v)
{
    return fr->y0 + fr->h - (rdb_ln(v) - fr->ly0) / (fr->ly1 - fr->ly0) * fr->h;
}

static void series(FILE *f, const struct frame *fr, const struct rdb_series *s)
{
    fprintf(f, "<g><title>");
    put_text(f, s->name);
    fprintf(f, "</title>\n");
    size_t i = 0;
    while (i < s->n) {
        while (i < s->n && !(s->x[i] > 0 && s->y[i] > 0))
            i++;
        size_t j = i;
        while (j < s->n && s->x[j] > 0 && s->y[j] > 0)
            j++;
        if (j > i) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"#%06x\" stroke-width=\"%s\"%s points=\"",
                    s->rgb, s->dashed ? "1.6" : "2", s->dashed ? " stroke-dasharray=\"6 4\"" : "");
            for (size_t k = i; k < j; k++)
                fprintf(f, "%s%.1f,%.1f", k > i ? " " : "", px(fr, s->x[k]), py(fr, s->y[k]));
            fprintf(f, "\"/>\n");
            if (s->markers)
                for (size_t k = i; k < j; k++)
                    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.6\" fill=\"#%06x\"/>\n",
                            px(fr, s->x[k]), py(fr, s->y[k]), s->rgb);
        }
        i = j;
    }
    fprintf(f, "</g>\n");
}

static void panel(FILE *f, const struct rdb_panel *p, double ox, double oy, unsigned id)
{
    struct frame fr = { .x0 = ox + PLOT_L, .y0 = oy + PLOT_T, .w = PANEL_W - PLOT_L - PLOT_R,
                        .h = PANEL_H - PLOT_T - PLOT_B };
    double xlo, xhi, ylo, yhi, t[MAX_TICKS];
    char label[48];
    axis_range(p, 0, &xlo, &xhi);
    axis_range(p, 1, &ylo, &yhi);
    fr.lx0 = rdb_ln(xlo);
    fr.lx1 = rdb_ln(xhi);
    fr.ly0 = rdb_ln(ylo);
    fr.ly1 = rdb_ln(yhi);
    fprintf(f, "<g class=\"panel\">\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\" "
            "text-anchor=\"middle\">", fr.x0 + fr.w / 2, oy + 18);
    put_text(f, p->title);
    fprintf(f, "</text>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fff\" "
            "stroke=\"#444\"/>\n", fr.x0, fr.y0, fr.w, fr.h);
    /* grid and tick labels */
    size_t nt = rdb_svg_ticks(p->x.unit, xlo, xhi, t, MAX_TICKS);
    fprintf(f, "<g class=\"x-axis\" font-size=\"11\" text-anchor=\"middle\">\n");
    for (size_t i = 0; i < nt; i++) {
        double x = px(&fr, t[i]);
        rdb_svg_tick_label(p->x.unit, t[i], label, sizeof label);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">", x, fr.y0, x, fr.y0 + fr.h, x, fr.y0 + fr.h + 15);
        put_text(f, label);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", fr.x0 + fr.w / 2,
            fr.y0 + fr.h + 36);
    put_text(f, p->x.label);
    fprintf(f, "</text>\n</g>\n");
    nt = rdb_svg_ticks(p->y.unit, ylo, yhi, t, MAX_TICKS);
    fprintf(f, "<g class=\"y-axis\" font-size=\"11\" text-anchor=\"end\">\n");
    for (size_t i = 0; i < nt; i++) {
        double y = py(&fr, t[i]);
        rdb_svg_tick_label(p->y.unit, t[i], label, sizeof label);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">", fr.x0, y, fr.x0 + fr.w, y, fr.x0 - 5, y + 4);
        put_text(f, label);
        fprintf(f, "</text>\n");
    }
    double lx = ox + 14, ly = fr.y0 + fr.h / 2;
    fprintf(f, "<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 %.1f %.1f)\">", lx, ly, lx, ly);
    put_text(f, p->y.label);
    fprintf(f, "</text>\n</g>\n");
    /* the lines, clipped to the plot area */
    fprintf(f, "<clipPath id=\"clip%u\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>"
            "</clipPath>\n<g clip-path=\"url(#clip%u)\">\n", id, fr.x0, fr.y0, fr.w, fr.h, id);
    for (size_t s = 0; s < p->nseries; s++)
        series(f, &fr, &p->series[s]);
    fprintf(f, "</g>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#444\"/>\n</g>\n", fr.x0, fr.y0, fr.w, fr.h);
}

static void legend(FILE *f, const struct rdb_figure *fig, double x, double y)
{
    fprintf(f, "<g class=\"legend\" font-size=\"12\">\n");
    for (size_t i = 0; i < fig->nlegend; i++) {
        const struct rdb_legend_item *it = &fig->legend[i];
        double yy = y + 20.0 * (double)i;
        if (it->rgb != 0xffffffffu) {
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#%06x\" "
                    "stroke-width=\"2\"%s/>", x, yy, x + 30, yy, it->rgb,
                    it->dashed ? " stroke-dasharray=\"6 4\"" : "");
            if (it->markers)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.6\" fill=\"#%06x\"/>", x + 15, yy, it->rgb);
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + 38, yy + 4);
        put_text(f, it->label);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</g>\n");
}

int rdb_svg_write(FILE *f, const struct rdb_figure *fig)
{
    unsigned cols = fig->cols ? fig->cols : 1;
    size_t rows = (fig->npanels + cols - 1) / cols;
    if (!rows)
        rows = 1;
    double w = MARGIN + cols * PANEL_W + LEGEND_W, h = HEAD_H + (double)rows * PANEL_H + MARGIN;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
            "<title>", w, h, w, h);
    put_text(f, fig->title);
    fprintf(f, "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
            "<text class=\"title\" x=\"%.1f\" y=\"26\" font-size=\"17\" font-weight=\"bold\">", MARGIN);
    put_text(f, fig->title);
    fprintf(f, "</text>\n");
    if (fig->subtitle) {
        fprintf(f, "<text class=\"subtitle\" x=\"%.1f\" y=\"48\" font-size=\"12\" fill=\"#333\">", MARGIN);
        put_text(f, fig->subtitle);
        fprintf(f, "</text>\n");
    }
    for (size_t i = 0; i < fig->npanels; i++)
        panel(f, &fig->panels[i], MARGIN + (double)(i % cols) * PANEL_W,
              HEAD_H + (double)(i / cols) * PANEL_H, (unsigned)i);
    legend(f, fig, MARGIN + cols * PANEL_W + 8, HEAD_H + PLOT_T + 10);
    fprintf(f, "</svg>\n");
    return fflush(f) || ferror(f) ? -1 : 0;
}
