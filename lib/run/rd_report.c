#include "run/rd_report.h"
#include "util/rd_error.h"
#include "util/rd_clock.h"
#include "util/rd_thread.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void rd_format_bytes(uint64_t n, char *out, size_t len)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, len, "%llu B", (unsigned long long)n);
    else
        snprintf(out, len, "%.2f %s", v, units[u]);
}

void rd_format_eta(double left, char *out, size_t len)
{
    if (!(left < RD_ETA_MAX_S)) {   /* (int) of a double past INT_MAX is undefined; NaN too */
        snprintf(out, len, " ETA >%d:00", (int)(RD_ETA_MAX_S / 60));
        return;
    }
    int s = left > 0 ? (int)left : 0;
    snprintf(out, len, " ETA %d:%02d", s / 60, s % 60);
}

static void draw(struct rd_report *r, int final)
{
    uint64_t b = atomic_load(&r->cnt->bytes);
    double dt = rd_now() - r->t0;
    char done[32], eta[32] = "";
    rd_format_bytes(b, done, sizeof done);
    double rate = dt > 0 ? b / dt : 0;
    if (r->total_hint && rate > 0 && b < r->total_hint && !final) {
        rd_format_eta((double)(r->total_hint - b) / rate, eta, sizeof eta);
    }
    int pct = r->total_hint ? (int)(b * 100 / r->total_hint) : -1;
    char pcts[16] = "";
    if (pct >= 0)
        snprintf(pcts, sizeof pcts, " %3d%%", pct > 100 ? 100 : pct);
    fprintf(stderr, "\r%12s %9.3f GB/s %d:%02d:%02d%s%s\033[K%s", done, rate / 1e9, (int)dt / 3600,
            (int)dt / 60 % 60, (int)dt % 60, pcts, eta, final ? "\n" : "");
}

static void *progress_main(void *arg)
{
    struct rd_report *r = arg;
    rd_thread_name("rd-progress");
    pthread_mutex_lock(&r->lock);
    while (r->running) {
        struct timespec ts;
        rd_deadline_ns(&ts, 500000000LL);
        rd_cond_wait_until(&r->wake, &r->lock, &ts);
        if (r->running)
            draw(r, 0);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

void rd_progress_start(struct rd_report *r, struct rd_counters *cnt, uint64_t total_hint)
{
    memset(r, 0, sizeof *r);
    r->cnt = cnt;
    r->total_hint = total_hint;
    r->t0 = rd_now();
    r->running = 1;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    if (rd_thread_create(&r->thread, NULL, progress_main, r))
        r->running = 0;
}

void rd_progress_stop(struct rd_report *r)
{
    if (!r->cnt)
        return;
    pthread_mutex_lock(&r->lock);
    int was = r->running;
    r->running = 0;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    if (was) {
        pthread_join(r->thread, NULL);
        draw(r, 1);
    }
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->wake);
    r->cnt = NULL;
}

void rd_print_bandwidth(const struct rd_summary *s)
{
    char b[32];
    rd_format_bytes(s->bytes, b, sizeof b);
    double gbs = s->seconds > 0 ? s->bytes / s->seconds / 1e9 : 0;
    fprintf(stderr, "%s: %llu bytes (%s) in %.3f s\n", s->tool, (unsigned long long)s->bytes, b, s->seconds);
    fprintf(stderr, "Bandwidth %.3f GB/s\n", gbs);
    if (s->compression)
        fprintf(stderr, "%s: %llu bytes as %llu on the wire (ratio %.2f, %s)\n", s->tool,
                (unsigned long long)s->bytes, (unsigned long long)s->wire_bytes,
                s->wire_bytes ? (double)s->bytes / (double)s->wire_bytes : 1.0, s->compression);
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

void rd_print_json(const struct rd_summary *s)
{
    FILE *f = stderr;
    double gbs = s->seconds > 0 ? s->bytes / s->seconds / 1e9 : 0;
    fprintf(f, "{\"tool\":");
    json_string(f, s->tool);
    fprintf(f, ",\"transport\":");
    if (s->transport) json_string(f, s->transport); else fputs("null", f);
    fprintf(f, ",\"peer\":");
    if (s->peer && *s->peer) json_string(f, s->peer); else fputs("null", f);
    fprintf(f, ",\"bytes\":%llu,\"seconds\":%.6f,\"gb_per_s\":%.4f,\"chunk_size\":%u,\"depth\":%u,"
               "\"lanes\":%u,\"cipher\":",
            (unsigned long long)s->bytes, s->seconds, gbs, s->chunk_size, s->depth, s->lanes);
    if (s->cipher) json_string(f, s->cipher); else fputs("null", f);
    fputs(",\"link_gbps\":", f);
    if (s->link_rate) fprintf(f, "%.3f", (double)s->link_rate * 8 / 1e9); else fputs("null", f);
    /* the ratio as -v prints it: raw bytes per wire byte (1 when nothing crossed) */
    fprintf(f, ",\"wire_bytes\":%llu,\"ratio\":%.4f,\"compression\":", (unsigned long long)s->wire_bytes,
            s->wire_bytes ? (double)s->bytes / (double)s->wire_bytes : 1.0);
    if (s->compression) json_string(f, s->compression); else fputs("null", f);
    fprintf(f, ",\"streams\":%u,\"asked\":", s->streams);
    if (s->has_asked)
        fprintf(f, "{\"chunk_size\":%u,\"depth\":%u,\"streams\":%u}", s->asked_chunk_size, s->asked_depth,
                s->asked_streams);
    else
        fputs("null", f);
    fprintf(f, ",\"exit_code\":%d,\"error\":", s->exit_code);
    if (s->error) json_string(f, s->error); else fputs("null", f);
    fputs("}\n", f);
}
