/* test_plan.c - run/rd_plan: the default lanes are enough for the link and bounded by the
 * cores (the table below is the policy README states), so are a sender's default --streams,
 * a sender asks for a frame per lane
 * and some for the wire, the cores are the ones this process may run on; and
 * transport/rd_link: the rates the plans start from (InfiniBand speed codes, and loopback's
 * unknown speed found through a connected socket; a veth's 10 Gb/s: integration/netns.sh). */
#include "check.h"

#include "run/rd_plan.h"
#include "transport/rd_link.h"
#include "transport/rd_transport.h"
#include "util/rd_memlock.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define GBIT(x) ((uint64_t)(x) * 125000000ull)   /* Gb/s in bytes per second */

static uint32_t plan(uint64_t rate, unsigned cores, int compress, int slow)
{
    struct rd_plan_in in = { .link_rate = rate, .cores = cores, .compress = compress, .slow_cipher = slow };
    return rd_plan_lanes(&in);
}

static void t_unknown_link_half_the_cores(void)
{
    CHECK_EQ_U(plan(0, 1, 0, 0), 1);
    CHECK_EQ_U(plan(0, 2, 0, 0), 1);
    CHECK_EQ_U(plan(0, 6, 0, 0), 3);
    CHECK_EQ_U(plan(0, 16, 0, 0), 8);
    CHECK_EQ_U(plan(0, 128, 0, 0), 8);
    CHECK_EQ_U(plan(0, 0, 0, 0), 1);   /* no count: one */
}

static void t_known_link_enough_lanes(void)
{
    CHECK_EQ_U(plan(GBIT(1), 64, 0, 0), 1);     /* 1 GbE: one lane is plenty */
    CHECK_EQ_U(plan(GBIT(10), 64, 0, 0), 1);    /* 1.25 GB/s < 2 */
    CHECK_EQ_U(plan(GBIT(10), 16, 0, 0), 1);
    CHECK_EQ_U(plan(GBIT(25), 64, 0, 0), 2);    /* 3.125 GB/s */
    CHECK_EQ_U(plan(GBIT(100), 64, 0, 0), 7);   /* 12.5 GB/s */
    CHECK_EQ_U(plan(GBIT(100), 16, 0, 0), 7);
    CHECK_EQ_U(plan(GBIT(200), 64, 0, 0), 13);
    CHECK_EQ_U(plan(GBIT(400), 64, 0, 0), 25);  /* more than the old cap of 8 */
    CHECK_EQ_U(plan(GBIT(400), 256, 0, 0), 25);
}

static void t_bounded_by_the_cores(void)
{
    CHECK_EQ_U(plan(GBIT(400), 16, 0, 0), 14);   /* two cores for the network and the reader */
    CHECK_EQ_U(plan(GBIT(400), 4, 0, 0), 2);
    CHECK_EQ_U(plan(GBIT(400), 3, 0, 0), 1);
    CHECK_EQ_U(plan(GBIT(400), 2, 0, 0), 1);
    CHECK_EQ_U(plan(GBIT(400), 1, 0, 0), 1);
    CHECK_EQ_U(plan(GBIT(1600), 1024, 0, 0), 64);   /* RD_MAX_LANES */
}

static void t_slow_ciphers_need_three_times_the_lanes(void)
{
    CHECK_EQ_U(plan(GBIT(10), 64, 0, 1), 2);     /* 1.25 GB/s at 0.67 a lane */
    CHECK_EQ_U(plan(GBIT(25), 64, 0, 1), 5);
    CHECK_EQ_U(plan(GBIT(100), 64, 0, 1), 19);
    CHECK_EQ_U(plan(GBIT(400), 64, 0, 1), 62);   /* all but two cores */
    CHECK_EQ_U(plan(GBIT(100), 16, 0, 1), 14);
    CHECK_EQ_U(plan(0, 16, 0, 1), 8);            /* unknown link: as without */
}

static void t_compressing_takes_the_cores(void)
{
    CHECK_EQ_U(plan(0, 2, 1, 0), 2);
    CHECK_EQ_U(plan(GBIT(1), 2, 1, 0), 2);
    CHECK_EQ_U(plan(GBIT(400), 64, 1, 0), 8);
    CHECK_EQ_U(plan(0, 1, 1, 0), 1);
}

/* --streams when the sender does not say: TCP a connection per 10 Gb/s, at most one per
 * core; RDMA a queue pair per 100 Gb/s; one where the speed is unknown */
static void t_streams_for_the_link(void)
{
    CHECK_EQ_U(rd_plan_streams(0, 0, 64), 1);            /* loopback, virtual NICs */
    CHECK_EQ_U(rd_plan_streams(0, 1, 64), 1);
    CHECK_EQ_U(rd_plan_streams(GBIT(1), 0, 64), 1);
    CHECK_EQ_U(rd_plan_streams(GBIT(10), 0, 64), 1);     /* a veth: the tests' links */
    CHECK_EQ_U(rd_plan_streams(GBIT(10) + 1, 0, 64), 2);
    CHECK_EQ_U(rd_plan_streams(GBIT(25), 0, 64), 3);
    CHECK_EQ_U(rd_plan_streams(GBIT(100), 0, 64), 10);   /* the issue: about 12 to reach the line */
    CHECK_EQ_U(rd_plan_streams(GBIT(400), 0, 64), 16);   /* RD_MAX_STREAMS */
    CHECK_EQ_U(rd_plan_streams(GBIT(100), 0, 4), 4);     /* a core each */
    CHECK_EQ_U(rd_plan_streams(GBIT(100), 0, 2), 2);
    CHECK_EQ_U(rd_plan_streams(GBIT(100), 0, 1), 1);
    CHECK_EQ_U(rd_plan_streams(GBIT(100), 0, 0), 1);     /* no count: one */
    CHECK_EQ_U(rd_plan_streams(GBIT(10), 1, 64), 1);     /* rxe on a veth */
    CHECK_EQ_U(rd_plan_streams(GBIT(100), 1, 64), 1);    /* EDR 4x: one QP carries it */
    CHECK_EQ_U(rd_plan_streams(GBIT(200), 1, 64), 2);    /* HDR */
    CHECK_EQ_U(rd_plan_streams(GBIT(400), 1, 64), 4);    /* NDR: 4 QPs reached 47 GB/s */
    CHECK_EQ_U(rd_plan_streams(GBIT(400), 1, 1), 4);     /* QPs have no thread: not bound by cores */
    CHECK_EQ_U(rd_plan_streams(GBIT(3200), 1, 64), 16);
}

static void t_depth_a_frame_per_lane_and_two_per_connection(void)
{
    CHECK_EQ_U(rd_plan_depth(1, 1, 8), 8);
    CHECK_EQ_U(rd_plan_depth(4, 1, 8), 8);
    CHECK_EQ_U(rd_plan_depth(7, 1, 8), 11);
    CHECK_EQ_U(rd_plan_depth(25, 1, 8), 29);
    CHECK_EQ_U(rd_plan_depth(64, 1, 8), 68);
    /* two frames a connection: one on the wire, one the receiver takes in */
    CHECK_EQ_U(rd_plan_depth(1, 4, 8), 8);
    CHECK_EQ_U(rd_plan_depth(1, 10, 8), 20);
    CHECK_EQ_U(rd_plan_depth(7, 10, 8), 20);
    CHECK_EQ_U(rd_plan_depth(25, 10, 8), 29);
    CHECK_EQ_U(rd_plan_depth(1, 16, 8), 32);
    CHECK_EQ_U(rd_plan_depth(1, 10, 40), 40);   /* never less than asked */
}

/* the affinity, not the machine's cores: what taskset or a cpuset allows */
static void t_cores_are_the_affinity(void)
{
    cpu_set_t was, one;
    CHECK_OR(sched_getaffinity(0, sizeof was, &was) == 0, return);
    CHECK_EQ_U(rd_plan_cores(), (unsigned)CPU_COUNT(&was));
    CPU_ZERO(&one);
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &was)) {
            CPU_SET(i, &one);
            break;
        }
    CHECK_OR(sched_setaffinity(0, sizeof one, &one) == 0, return);
    CHECK_EQ_U(rd_plan_cores(), 1);
    sched_setaffinity(0, sizeof was, &was);
}

/* ulimit -l: a process that may pin L bytes registers as deep a ring as fits in L (with the
 * control pools: rd_verbs_pin_bytes), one frame more does not fit; a stripe's connections
 * each take their share; where not even the smallest ring fits, 0. A relay counts both hops'
 * rings and the upstream's once more (rd_verbs_pin_relay). With CAP_IPC_LOCK, all.
 * Checked in a child as nobody (no capabilities), L at most 16 MiB (a container may not
 * raise its hard limit). */
static uint64_t pin(uint32_t chunk, uint32_t depth, unsigned conns, int relay)
{
    return relay ? rd_verbs_pin_relay(chunk, depth, conns) : rd_verbs_pin_stream(chunk, depth, conns);
}

static int deepest_fits(uint32_t chunk, uint32_t depth, unsigned conns, int relay, uint64_t l)
{
    uint32_t fit = rd_verbs_pinnable_depth(chunk, depth, conns, relay);
    if (fit == 0)
        return pin(chunk, 4, conns, relay) > l;
    return fit <= depth && pin(chunk, fit, conns, relay) <= l &&
           (fit == depth || pin(chunk, fit + 1, conns, relay) > l);
}

static void t_pinnable_within_memlock(void)
{
    int cap = 0;
    rd_memlock_limit(&cap);
    if (cap) {
        CHECK_EQ_U(rd_verbs_pinnable_depth(64u << 20, 1024, 16, 0), 1024);
        CHECK_EQ_U(rd_verbs_pinnable_depth(64u << 20, 1024, 16, 1), 1024);
    }
    /* a relay of one connection: its two streams, and its upstream ring (4048 bytes to the first
     * payload's page, then 1 MiB + a page a frame) once more */
    CHECK_EQ_U(rd_verbs_pin_relay(1u << 20, 8, 1), 2 * rd_verbs_pin_bytes(1u << 20, 8) + 4048 + 8 * 1052672ull);
    /* two connections of 4 frames each */
    CHECK_EQ_U(rd_verbs_pin_relay(1u << 20, 8, 2), 4 * rd_verbs_pin_bytes(1u << 20, 4) + 2 * (4048 + 4 * 1052672ull));
    pid_t pid = fork();
    CHECK_OR(pid >= 0, return);
    if (pid == 0) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_MEMLOCK, &rl))
            _exit(99);
        uint64_t l = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (16u << 20) ? rl.rlim_max : 16u << 20;
        rl.rlim_cur = rl.rlim_max = l;
        if (setrlimit(RLIMIT_MEMLOCK, &rl) || (geteuid() == 0 && setuid(65534)))
            _exit(98);
        uint64_t fit = l / rd_verbs_pin_bytes(64u << 10, 4);   /* connections that fit */
        int bad = (fit >= 1 && rd_verbs_pinnable_depth(64u << 10, 4, (unsigned)fit, 0) != 4) |
                  (rd_verbs_pinnable_depth(64u << 10, 4, (unsigned)fit + 1, 0) != 0) << 1 |
                  (rd_verbs_pinnable_depth(64u << 20, 1024, 16, 0) != 0) << 2 |
                  !deepest_fits(1u << 20, 1024, 1, 0, l) << 3 |
                  !deepest_fits(1u << 20, 64, 3, 0, l) << 4 |
                  !deepest_fits(256u << 10, 12, 1, 0, l) << 5 |
                  !deepest_fits(256u << 10, 64, 1, 1, l) << 6 |
                  !deepest_fits(64u << 10, 64, 2, 1, l) << 7 |
                  !deepest_fits(1u << 20, 64, 1, 1, l) << 8;
        if (l == 16u << 20)   /* 16 MiB: 13 frames of 1 MiB on one connection; a relay of
                               * 256 KiB chunks: 15 (54 for one stream) */
            bad |= (rd_verbs_pinnable_depth(1u << 20, 64, 1, 0) != 13) << 9 |
                   (rd_verbs_pinnable_depth(256u << 10, 64, 1, 1) != 15) << 10 |
                   (rd_verbs_pinnable_depth(256u << 10, 64, 1, 0) != 54) << 11;
        if (bad)
            fprintf(stderr, "pinnable depths: checks 0x%x failed\n", (unsigned)bad);
        _exit(bad ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK_EQ_I(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
}

static void t_ib_port_rates(void)
{
    CHECK_EQ_U(rd_ib_port_rate(4, 2), GBIT(32));      /* QDR 4x: 40 Gb/s signalled, 32 carried */
    CHECK_EQ_U(rd_ib_port_rate(8, 1), GBIT(10));      /* FDR10 1x (rxe on a 10 Gb/s netdev) */
    CHECK_EQ_U(rd_ib_port_rate(32, 2), GBIT(100));    /* EDR 4x */
    CHECK_EQ_U(rd_ib_port_rate(64, 2), GBIT(200));    /* HDR 4x */
    CHECK_EQ_U(rd_ib_port_rate(128, 2), GBIT(400));   /* NDR 4x */
    CHECK_EQ_U(rd_ib_port_rate(1, 1), GBIT(2));
    CHECK_EQ_U(rd_ib_port_rate(3, 2), 0);    /* not a speed code */
    CHECK_EQ_U(rd_ib_port_rate(32, 3), 0);   /* not a width code */
}

/* A connected pair of TCP sockets between addresses a (listening) and b. */
static int pair(const char *a, const char *b, int fd[2])
{
    struct sockaddr_in la = { .sin_family = AF_INET }, lb = { .sin_family = AF_INET };
    socklen_t len = sizeof la;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    fd[0] = fd[1] = -1;
    inet_pton(AF_INET, a, &la.sin_addr);
    inet_pton(AF_INET, b, &lb.sin_addr);
    if (l < 0 || bind(l, (struct sockaddr *)&la, sizeof la) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&la, &len))
        goto fail;
    fd[1] = socket(AF_INET, SOCK_STREAM, 0);
    if (fd[1] < 0 || bind(fd[1], (struct sockaddr *)&lb, sizeof lb) ||
        connect(fd[1], (struct sockaddr *)&la, sizeof la) || (fd[0] = accept(l, NULL, NULL)) < 0)
        goto fail;
    close(l);
    return 0;
fail:
    if (l >= 0)
        close(l);
    if (fd[1] >= 0)
        close(fd[1]);
    return -1;
}

static void t_loopback_has_no_speed(void)
{
    int fd[2];
    char name[32];
    CHECK_OR(pair("127.0.0.1", "127.0.0.1", fd) == 0, return);
    CHECK_EQ_U(rd_netdev_rate(fd[0], name, sizeof name), 0);
    CHECK_STR_EQ(name, "lo");
    CHECK_EQ_U(rd_netdev_rate(fd[1], name, sizeof name), 0);
    CHECK_STR_EQ(name, "lo");
    close(fd[0]);
    close(fd[1]);
}

int main(void)
{
    RUN(t_unknown_link_half_the_cores);
    RUN(t_known_link_enough_lanes);
    RUN(t_bounded_by_the_cores);
    RUN(t_slow_ciphers_need_three_times_the_lanes);
    RUN(t_compressing_takes_the_cores);
    RUN(t_streams_for_the_link);
    RUN(t_depth_a_frame_per_lane_and_two_per_connection);
    RUN(t_cores_are_the_affinity);
    RUN(t_pinnable_within_memlock);
    RUN(t_ib_port_rates);
    RUN(t_loopback_has_no_speed);
    return check_summary();
}
