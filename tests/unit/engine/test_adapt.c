/* test_adapt.c - engine/rd_adapt: --compress=auto's level, driven by a model of a link and of
 * the lanes whose rates are known: each window's throughput is the smaller of what the lanes
 * compress and what the link drains (times the ratio), and the link is the limit when it is
 * the smaller. Auto must end where the model is fastest, or next to it. */
#include "check.h"

#include "engine/rd_adapt.h"

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
    RUN(t_fast_link_text);
    RUN(t_fast_levels);
    RUN(t_incompressible);
    RUN(t_comes_back);
    RUN(t_other_levels_ignored);
    return check_summary();
}
