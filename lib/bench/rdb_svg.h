/* rdb_svg.h - a small SVG writer for rdbench's figures: panels of log-log line plots with
 * tick labels in units, grid, dashed or solid series, a legend and a title. No library:
 * Debian's C plotting options (cairo) would add a dependency for two kinds of chart.
 *
 * Both axes of every panel are logarithmic. A range left at 0..0 is taken from the data
 * and widened to whole ticks: powers of two for bytes (4 KiB, 16 KiB, ...), powers of ten
 * for rates (10 MB/s, 100 MB/s, 1 GB/s) and times (10 µs, 100 µs, 1 ms). Points with a
 * value <= 0 are gaps: the line breaks there. Everything outside a panel is clipped. */
#ifndef RDB_SVG_H
#define RDB_SVG_H

#include <stddef.h>
#include <stdio.h>

enum rdb_unit { RDB_UNIT_BYTES, RDB_UNIT_BPS, RDB_UNIT_SECONDS };

struct rdb_axis {
    const char *label;       /* "message size" */
    enum rdb_unit unit;
    double min, max;         /* 0, 0: from the data */
};

struct rdb_series {
    const char *name;        /* written as the polyline's <title> */
    unsigned rgb;            /* 0xRRGGBB */
    int dashed;              /* model lines */
    int markers;             /* a dot at every point (measured lines) */
    size_t n;
    const double *x, *y;
};

struct rdb_panel {
    const char *title;
    struct rdb_axis x, y;
    const struct rdb_series *series;
    size_t nseries;
};

struct rdb_legend_item {
    const char *label;
    unsigned rgb;
    int dashed, markers;
};

struct rdb_figure {
    const char *title;        /* first line, bold */
    const char *subtitle;     /* second line, may be NULL */
    const struct rdb_panel *panels;
    size_t npanels;
    unsigned cols;            /* panels per row (>= 1) */
    const struct rdb_legend_item *legend;
    size_t nlegend;
};

/* Write the whole SVG document. 0, or -1 when writing failed (errno tells why). */
int rdb_svg_write(FILE *f, const struct rdb_figure *fig);

/* The tick values of a log axis from min to max (both > 0), at most cap of them. */
size_t rdb_svg_ticks(enum rdb_unit unit, double min, double max, double *ticks, size_t cap);
/* "4 KiB", "1 MiB", "100 MB/s", "1 GB/s", "10 µs", "1 ms" */
void rdb_svg_tick_label(enum rdb_unit unit, double v, char *out, size_t n);
/* The colour of the k-th series of a family (depth 1, 2, 4, ...). */
unsigned rdb_svg_color(unsigned k);

#endif
