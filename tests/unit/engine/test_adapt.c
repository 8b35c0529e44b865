/* test_adapt.c - engine/rd_adapt: --compress=auto's level, driven by a model of a link and of
 * the lanes whose rates are known: each window's throughput is the smaller of what the lanes
 * compress and what the link drains (times the ratio), and the link is the limit when it is
 * the smaller. Auto must end where the model is fastest, or next to it. */
#include "check.h"

#include "engine/rd_adapt.h"

#include <stdio.h>

#define MB 1e6

struct model {
    double link;        /* wire bytes/s the link drains */
    double raw;         /* raw bytes/s when nothing is compressed (reading, copying) */
    double lanes_l1;    /* raw bytes/s the lanes compress at level 1; other levels scale */
    double ratio_l1;    /* ratio at level 1; fast levels less, higher levels more */
};

static double lanes_rate(const struct model *m, int level)
{
    if (level == 0)
        return m->raw;
    return level < 0 ? m->lanes_l1 * (1.0 + 0.4 * -level) : m->lanes_l1 / (1.0 + 0.35 * (level - 1));
}

static double ratio_at(const struct model *m, int level)
{
    if (level == 0 || m->ratio_l1 <= 1.0)
        return level == 0 ? 1.0 : m->ratio_l1;
    return level < 0 ? 1.0 + (m->ratio_l1 - 1.0) / (1.0 + 0.3 * -level) : m->ratio_l1 * (1.0 + 0.05 * (level - 1));
}

static double throughput(const struct model *m, int level)
{
    double lanes = lanes_rate(m, level), link = m->link * ratio_at(m, level);
    return lanes < link ? lanes : link;
}

static double clock_s;

/* Run `chunks` chunks of 1 MiB through the model; returns the level at the end. */
static int run(struct rd_adapt *a, const struct model *m, int chunks)
{
    for (int i = 0; i < chunks; i++) {
        int level = rd_adapt_level(a);
        double raw = 1 << 20, ratio = ratio_at(m, level), rate = throughput(m, level);
        double per_chunk = raw / rate, link_time = raw / ratio / m->link;
        clock_s += per_chunk;
        /* the network thread blocks in send for the part of the chunk's time the link takes */
        double send_s = link_time < per_chunk ? link_time : per_chunk;
        if (lanes_rate(m, level) < m->link * ratio)
            send_s *= 0.3;   /* lanes-bound: sends find room at once */
        rd_adapt_chunk(a, level, (uint32_t)raw, (uint32_t)(raw / ratio), send_s, clock_s);
    }
    return rd_adapt_level(a);
}

/* the best level of the model and whether auto's is within 10% of it */
static int near_best(const struct model *m, int level)
{
    double best = 0;
    for (int l = -5; l <= 12; l++)
        if (throughput(m, l) > best)
            best = throughput(m, l);
    if (throughput(m, 0) > best)
        best = throughput(m, 0);
    return throughput(m, level) >= 0.9 * best;
}

static void t_fixed_level_stays(void)
{
    struct rd_adapt a;
    struct model m = { 100 * MB, 2000 * MB, 300 * MB, 4.0 };
    rd_adapt_init(&a, 2, 7);
    CHECK_EQ_I(run(&a, &m, 200), 7);
    rd_adapt_init(&a, 0, 0);
    CHECK_EQ_I(run(&a, &m, 50), 0);
}

/* a slow link and text: compression wins, and the lanes can afford more than level 1 */
static void t_slow_link_text(void)
{
    struct rd_adapt a;
    struct model m = { 100 * MB, 2000 * MB, 800 * MB, 4.0 };
    rd_adapt_init(&a, 1, 0);
    int level = run(&a, &m, 400);
    CHECK(level >= 1);
    if (!near_best(&m, level))
        check_fail_at(__FILE__, __LINE__, "ended at level %d: %.0f MB/s", level, throughput(&m, level) / MB);
}

/* a fast link and text on slow lanes: raw wins, and auto stays off */
static void t_fast_link_text(void)
{
    struct rd_adapt a;
    struct model m = { 2000 * MB, 1000 * MB, 300 * MB, 4.0 };
    rd_adapt_init(&a, 1, 0);
    CHECK_EQ_I(run(&a, &m, 400), 0);
}

/* lanes a little slower than raw at level 1, but the fast levels beat raw: it goes down to them */
static void t_fast_levels(void)
{
    struct rd_adapt a;
    struct model m = { 250 * MB, 400 * MB, 300 * MB, 3.0 };
    rd_adapt_init(&a, 1, 0);
    int level = run(&a, &m, 600);
    CHECK(level < 0);
    if (!near_best(&m, level))
        check_fail_at(__FILE__, __LINE__, "ended at level %d: %.0f MB/s", level, throughput(&m, level) / MB);
}

/* incompressible data: off after the first judged window, and it stays off */
static void t_incompressible(void)
{
    struct rd_adapt a;
    struct model m = { 100 * MB, 2000 * MB, 1000 * MB, 1.0 };
    rd_adapt_init(&a, 1, 0);
    CHECK_EQ_I(run(&a, &m, 24), 0);
    int on = 0;
    for (int i = 0; i < 100; i++)
        on += run(&a, &m, 8) != 0;
    CHECK(on < 100 / 8);   /* retries are rare: at most a window in eight */
}

/* the data turns compressible on a slow link: auto comes back */
static void t_comes_back(void)
{
    struct rd_adapt a;
    struct model incompressible = { 100 * MB, 2000 * MB, 1000 * MB, 1.0 };
    struct model text = { 100 * MB, 2000 * MB, 800 * MB, 4.0 };
    rd_adapt_init(&a, 1, 0);
    run(&a, &incompressible, 400);
    CHECK(run(&a, &text, 3000) != 0);
}

/* Run `chunks` chunks of 1 MiB through the model as the engine runs them: the lanes make
 * chunks ahead of the network thread (up to `depth` in flight), and buffers between it and the
 * link (the socket's, a qdisc's) hold `buffer` wire bytes, so a send blocks only once they are
 * full: at the start the link looks idle to the sender while it is the limit. Returns the
 * seconds until the last byte is across; *raw_chunks counts the chunks sent uncompressed. */
static double run_buffered(struct rd_adapt *a, const struct model *m, int chunks, double buffer, int *raw_chunks)
{
    enum { depth = 8 };
    double ready = 0, sent = 0, queued = 0, sent_at[depth] = { 0 };
    *raw_chunks = 0;
    for (int i = 0; i < chunks; i++) {
        int level = rd_adapt_level(a);   /* as the lane that makes it reads it */
        double raw = 1 << 20, wire = raw / ratio_at(m, level);
        double start = ready > sent_at[i % depth] ? ready : sent_at[i % depth];   /* a free slot */
        ready = start + raw / lanes_rate(m, level);
        double t = ready > sent ? ready : sent, wait = 0;   /* the network thread takes it */
        queued = queued > m->link * (t - sent) ? queued - m->link * (t - sent) : 0;
        if (queued + wire > buffer) {   /* no room: it blocks until the link makes some */
            wait = (queued + wire - buffer) / m->link;
            queued = buffer - wire;
        }
        queued += wire;
        sent = sent_at[i % depth] = t + wait;
        *raw_chunks += level == 0;
        rd_adapt_chunk(a, level, (uint32_t)raw, (uint32_t)wire, wait + 1e-5, sent);
    }
    return sent + queued / m->link;
}

/* A slow link and text, behind 5 MB of buffers that fill first: the first windows look
 * lanes-bound. Auto may look at raw once, briefly (two windows of raw at the link's rate cost
 * what compressing saves over many), and must take at most 15% longer than the best fixed
 * level (exploring costs: 256 chunks are about 16 of its windows). */
static void t_slow_link_buffers_fill_first(void)
{
    static const struct model models[] = {
        { 118 * MB, 2000 * MB, 600 * MB, 5.0 },   /* the 1 Gbit/s veth, text (compress-bench) */
        { 118 * MB, 2000 * MB, 500 * MB, 3.2 },   /* ... the mixed corpus */
        { 100 * MB, 2000 * MB, 800 * MB, 4.0 },
    };
    for (unsigned k = 0; k < sizeof models / sizeof models[0]; k++) {
        const struct model *m = &models[k];
        struct rd_adapt a;
        int raw_chunks, ignore;
        double best = 1e9;
        for (int l = -5; l <= 12; l++) {
            if (l == 0)
                continue;
            rd_adapt_init(&a, 2, l);
            double t = run_buffered(&a, m, 256, 5 * MB, &ignore);
            best = t < best ? t : best;
        }
        rd_adapt_init(&a, 1, 0);
        double t = run_buffered(&a, m, 256, 5 * MB, &raw_chunks);
        printf("info model %u: auto %.3f s, best fixed level %.3f s, %d chunks raw\n", k, t, best, raw_chunks);
        if (raw_chunks > RD_ADAPT_WINDOW + 2)   /* the build before: two windows and more */
            check_fail_at(__FILE__, __LINE__, "model %u: %d of 256 chunks sent raw", k, raw_chunks);
        if (t > 1.15 * best)
            check_fail_at(__FILE__, __LINE__, "model %u: auto took %.3f s, the best fixed level %.3f", k, t, best);
    }
}

/* chunks made at another level (in flight when it changed) are not counted */
static void t_other_levels_ignored(void)
{
    struct rd_adapt a;
    rd_adapt_init(&a, 1, 0);
    for (int i = 0; i < 100; i++)   /* incompressible, but made at level 5: ignored */
        rd_adapt_chunk(&a, 5, 1 << 20, 1 << 20, 0.001, clock_s += 0.01);
    CHECK_EQ_I(rd_adapt_level(&a), 1);
}

int main(void)
{
    RUN(t_fixed_level_stays);
    RUN(t_slow_link_text);
    RUN(t_slow_link_buffers_fill_first);
    RUN(t_fast_link_text);
    RUN(t_fast_levels);
    RUN(t_incompressible);
    RUN(t_comes_back);
    RUN(t_other_levels_ignored);
    return check_summary();
}
