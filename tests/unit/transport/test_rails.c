/* test_rails.c - multi-rail by default (transport/rd_rails): pairing the sender's RDMA ports
 * with the addresses the receiver names, the receiver's list, and the reach lists the
 * stripe's connections take their rails from. No device needed: the pairing is pure. */
#include "check.h"

#include "transport/rd_rails.h"
#include "transport/rd_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static struct rd_rail_addr ip(const char *s)
{
    struct rd_rail_addr a = { 0 };
    if (inet_pton(AF_INET, s, a.addr) == 1)
        a.family = 4;
    else if (inet_pton(AF_INET6, s, a.addr) == 1)
        a.family = 6;
    else
        check_fail_at(__FILE__, __LINE__, "bad test address %s", s);
    return a;
}

static struct rd_port_addr port(const char *addr, unsigned prefix, const char *dev, unsigned num)
{
    struct rd_port_addr p = { .a = ip(addr), .prefix = prefix, .port = num };
    snprintf(p.dev, sizeof p.dev, "%s", dev);
    return p;
}

/* the receiver's list: an address per port unless ports says which port each is on */
static struct rd_rails rails_on(unsigned n, const char *const *addrs, const uint8_t *ports)
{
    struct rd_rails r = { .count = (uint8_t)n };
    for (unsigned i = 0; i < n; i++) {
        r.a[i] = ip(addrs[i]);
        r.a[i].port = ports ? ports[i] : (uint8_t)i;
    }
    return r;
}

static struct rd_rails rails(unsigned n, const char *const *addrs)
{
    return rails_on(n, addrs, NULL);
}

#define PAIR(p, h, b, d)                        \
    do {                                        \
        CHECK_STR_EQ((p).host, h);              \
        CHECK_STR_EQ((p).bind, b);              \
        CHECK_STR_EQ((p).dev, d);               \
    } while (0)

/* the usual layout: one subnet per rail; connection 0 took rail 0 */
static void t_two_subnets(void)
{
    struct rd_port_addr local[] = { port("10.0.0.2", 24, "mlx5_0", 1), port("10.0.1.2", 24, "mlx5_1", 1) };
    struct rd_rails r = rails(2, (const char *[]){ "10.0.0.1", "10.0.1.1" });
    struct rd_rail_addr l0 = ip("10.0.0.2");
    struct rd_rail_pair p[RD_MAX_RAILS];
    CHECK_EQ_U(rd_rails_pair(local, 2, &r, &l0, p, RD_MAX_RAILS), 1);
    PAIR(p[0], "10.0.1.1", "10.0.1.2", "mlx5_1");
}

/* both ends on one host (the VM): an address of the receiver's own is never a local end */
static void t_same_host(void)
{
    struct rd_port_addr local[] = { port("10.0.0.1", 24, "rxe_a", 1), port("10.0.0.2", 24, "rxe_b", 1),
                                    port("10.0.1.1", 24, "rxe_c", 1), port("10.0.1.2", 24, "rxe_d", 1) };
    struct rd_rails r = rails(2, (const char *[]){ "10.0.0.1", "10.0.1.1" });
    struct rd_rail_addr l0 = ip("10.0.0.2");
    struct rd_rail_pair p[RD_MAX_RAILS];
    CHECK_EQ_U(rd_rails_pair(local, 4, &r, &l0, p, RD_MAX_RAILS), 1);
    PAIR(p[0], "10.0.1.1", "10.0.1.2", "rxe_d");
    /* a receiver that names all four: every port is its own, none is the sender's */
    struct rd_rails all = rails(4, (const char *[]){ "10.0.0.1", "10.0.0.2", "10.0.1.1", "10.0.1.2" });
    CHECK_EQ_U(rd_rails_pair(local, 4, &all, &l0, p, RD_MAX_RAILS), 0);
}

/* one subnet, two ports a side: the free port is taken before connection 0's */
static void t_one_subnet_free_port_first(void)
{
    struct rd_port_addr local[] = { port("10.0.0.2", 16, "mlx5_0", 1), port("10.0.0.3", 16, "mlx5_0", 2) };
    struct rd_rails r = rails(3, (const char *[]){ "10.0.0.1", "10.0.9.4", "10.0.9.5" });
    struct rd_rail_addr l0 = ip("10.0.0.2");
    struct rd_rail_pair p[RD_MAX_RAILS];
    CHECK_EQ_U(rd_rails_pair(local, 2, &r, &l0, p, RD_MAX_RAILS), 2);
    PAIR(p[0], "10.0.9.4", "10.0.0.3", "mlx5_0");
    PAIR(p[1], "10.0.9.5", "10.0.0.2", "mlx5_0");   /* no port left free: one carries two */
}

/* a receiver port reached only through a port that already carries a connection comes after
 * one reached through a free port, whatever the receiver's order */
static void t_free_ports_first(void)
{
    struct rd_port_addr local[] = { port("10.0.0.2", 24, "mlx5_0", 1), port("10.0.1.2", 24, "mlx5_1", 1) };
    struct rd_rails r = rails(3, (const char *[]){ "10.0.0.1", "10.0.0.9", "10.0.1.1" });
    struct rd_rail_addr l0 = ip("10.0.0.2");
    struct rd_rail_pair p[RD_MAX_RAILS];
    CHECK_EQ_U(rd_rails_pair(local, 2, &r, &l0, p, RD_MAX_RAILS), 2);
    PAIR(p[0], "10.0.1.1", "10.0.1.2", "mlx5_1");
    PAIR(p[1], "10.0.0.9", "10.0.0.2", "mlx5_0");
    CHECK_EQ_U(rd_rails_pair(local, 2, &r, &l0, p, 1), 1);   /* room for one: the free port's */
    PAIR(p[0], "10.0.1.1", "10.0.1.2", "mlx5_1");
}

/* a receiver port on a network this host has no port on is left out */
static void t_unreachable_left_out(void)
{
    struct rd_port_addr local[] = { port("10.0.0.2", 24, "mlx5_0", 1), port("172.16.0.2", 24, "mlx5_1", 1) };
    struct rd_rails r = rails(3, (const char *[]){ "10.0.0.1", "192.168.5.1", "172.16.0.9" });
    struct rd_rail_addr l0 = ip("10.0.0.2");
    struct rd_rail_pair p[RD_MAX_RAILS];
    CHECK_EQ_U(rd_rails_pair(local, 2, &r, &l0, p, RD_MAX_RAILS), 1);
    PAIR(p[0], "172.16.0.9", "172.16.0.2", "mlx5_1");
    struct rd_rails none = rails(2, (const char *[]){ "10.0.0.1", "192.168.5.1" });
    CHECK_EQ_U(rd_rails_pair(local, 2, &none, &l0, p, RD_MAX_RAILS), 0);
    CHECK_EQ_U(rd_rails_pair(local, 2, &r, &l0, p, 0), 0);   /* no room */
}

/* netmasks that end inside a byte, and IPv6 */
static void t_prefixes(void)
{
    struct rd_rail_addr l0 = ip("10.9.9.9");
    struct rd_rail_pair p[RD_MAX_RAILS];
    struct rd_rails r = rails(2, (const char *[]){ "10.9.9.1", "10.0.3.9" });
    struct rd_port_addr wide = port("10.0.2.2", 23, "d", 1), narrow = port("10.0.2.2", 24, "d", 1);
    CHECK_EQ_U(rd_rails_pair(&wide, 1, &r, &l0, p, RD_MAX_RAILS), 1);
    CHECK_EQ_U(rd_rails_pair(&narrow, 1, &r, &l0, p, RD_MAX_RAILS), 0);
    struct rd_port_addr zero = port("10.0.2.2", 0, "d", 1);   /* no netmask known: no match */
    CHECK_EQ_U(rd_rails_pair(&zero, 1, &r, &l0, p, RD_MAX_RAILS), 0);
    struct rd_rails r6 = rails(3, (const char *[]){ "fd00::1", "2001:db8:1::1", "10.0.3.1" });
    struct rd_port_addr l6[] = { port("2001:db8:1::2", 64, "mlx5_1", 1), port("2001:db8:2::2", 64, "mlx5_2", 1) };
    CHECK_EQ_U(rd_rails_pair(l6, 2, &r6, &l0, p, RD_MAX_RAILS), 1);
    PAIR(p[0], "2001:db8:1::1", "2001:db8:1::2", "mlx5_1");
}

/* the receiver names connection 0's address first (numbered as its port), then its others,
 * once each, 8 at most; an address not among its ports' is a port of its own (0xff) */
static void t_advert(void)
{
    struct rd_rails ports = rails_on(4, (const char *[]){ "10.0.0.1", "10.0.1.1", "fd00::1", "10.0.2.1" },
                                     (const uint8_t[]){ 0, 1, 1, 3 }), out;
    struct rd_rail_addr first = ip("10.0.1.1");
    rd_rails_advert(&ports, &first, &out);
    struct rd_rails want = rails_on(4, (const char *[]){ "10.0.1.1", "10.0.0.1", "fd00::1", "10.0.2.1" },
                                    (const uint8_t[]){ 1, 0, 1, 3 });
    CHECK_EQ_U(out.count, 4);
    CHECK_MEM_EQ(&out, &want, sizeof want);
    CHECK_EQ_U(rd_rails_distinct(&out), 3);
    struct rd_rail_addr other = ip("10.7.0.1");
    struct rd_rails full = { .count = RD_MAX_RAILS };
    for (unsigned i = 0; i < RD_MAX_RAILS; i++)
        full.a[i] = (struct rd_rail_addr){ .family = 4, .port = (uint8_t)i, .addr = { 10, 0, (uint8_t)i, 1 } };
    rd_rails_advert(&full, &other, &out);
    CHECK_EQ_U(out.count, RD_MAX_RAILS);
    CHECK_EQ_U(out.a[0].port, 0xff);
    CHECK_MEM_EQ(out.a[0].addr, other.addr, sizeof other.addr);
    CHECK_MEM_EQ(&out.a[1], &full.a[0], sizeof other);
}

/* the receiver numbers its addresses by port: (device, port) pairs, in the order found */
static void t_of_ports(void)
{
    struct rd_port_addr p[] = { port("10.0.0.1", 24, "mlx5_0", 1), port("fd00::1", 64, "mlx5_1", 1),
                                port("10.0.1.1", 24, "mlx5_1", 1), port("fd00:1::1", 64, "mlx5_0", 1),
                                port("10.0.2.1", 24, "mlx5_0", 2) };
    struct rd_rails r;
    rd_rails_of_ports(p, 5, &r);
    CHECK_EQ_U(r.count, 5);
    CHECK_EQ_U(r.a[0].port, r.a[3].port);
    CHECK_EQ_U(r.a[1].port, r.a[2].port);
    CHECK_NE_U(r.a[0].port, r.a[1].port);
    CHECK_NE_U(r.a[4].port, r.a[0].port);
    CHECK_NE_U(r.a[4].port, r.a[1].port);
    CHECK_EQ_U(rd_rails_distinct(&r), 3);
    struct rd_rails few;
    rd_rails_of_ports(p, 1, &few);
    CHECK_EQ_U(rd_rails_distinct(&few), 1);
    rd_rails_of_ports(p, 0, &few);
    CHECK_EQ_U(rd_rails_distinct(&few), 0);
}

/* a receiver port with two addresses gets one rail, from the first address a local one
 * reaches; connection 0's port gets none (it has connection 0) */
static void t_one_rail_per_port(void)
{
    struct rd_port_addr local[] = { port("10.0.0.2", 24, "mlx5_0", 1), port("fd00:1::2", 64, "mlx5_1", 1),
                                    port("10.0.1.2", 24, "mlx5_1", 1) };
    struct rd_rails r = rails_on(4, (const char *[]){ "10.0.0.1", "fd00:0::1", "fd00:1::1", "10.0.1.1" },
                                 (const uint8_t[]){ 0, 0, 1, 1 });
    struct rd_rail_addr l0 = ip("10.0.0.2");
    struct rd_port_addr l0v6[] = { port("fd00::2", 64, "mlx5_0", 1) };
    struct rd_rail_pair p[RD_MAX_RAILS];
    CHECK_EQ_U(rd_rails_pair(local, 3, &r, &l0, p, RD_MAX_RAILS), 1);
    PAIR(p[0], "fd00:1::1", "fd00:1::2", "mlx5_1");
    /* fd00::1 is port 0's (connection 0's): never a rail, even where a local address reaches it */
    CHECK_EQ_U(rd_rails_pair(l0v6, 1, &r, &l0, p, RD_MAX_RAILS), 0);
}

/* the lists rd_stripe_join reads: entry 0 connection 0's, entry i rail i, wrapping */
static void t_reach_lists(void)
{
    struct rd_transport tp = { 0 };
    struct sockaddr_in *sin = (struct sockaddr_in *)&tp.local;
    sin->sin_family = AF_INET;
    inet_pton(AF_INET, "10.0.0.2", &sin->sin_addr);
    snprintf(tp.desc, sizeof tp.desc, "rdma rxe_b port 1");
    struct rd_port_addr local[] = { port("10.0.0.2", 24, "rxe_b", 1), port("10.0.1.2", 24, "rxe_d", 1) };
    struct rd_rails r = rails(2, (const char *[]){ "10.0.0.1", "10.0.1.1" });
    struct rd_reach o = { .host = "recv.example", .port = "7000", .timeout_s = 5 }, out;
    struct rd_rail_lists l;
    CHECK_EQ_U(rd_rails_reach(&o, &tp, &r, local, 2, &l, &out), 2);
    CHECK_STR_EQ(out.host, "recv.example,10.0.1.1");
    CHECK_STR_EQ(out.bind, "10.0.0.2,10.0.1.2");
    CHECK_STR_EQ(out.device, "rxe_b,rxe_d");
    CHECK_STR_EQ(out.port, "7000");
    struct rd_rail rail;
    struct rd_reach c3 = rd_reach_rail(&out, 3, &rail);   /* a 4th connection: rail 1 again */
    CHECK_STR_EQ(c3.host, "10.0.1.1");
    CHECK_STR_EQ(c3.bind, "10.0.1.2");
    CHECK_STR_EQ(c3.device, "rxe_d");
    CHECK_EQ_I(c3.timeout_s, 5);
    /* nothing pairs: o as it was */
    struct rd_rails far = rails(2, (const char *[]){ "10.0.0.1", "192.168.0.1" });
    CHECK_EQ_U(rd_rails_reach(&o, &tp, &far, local, 2, &l, &out), 1);
    CHECK(out.host == o.host && out.bind == NULL && out.device == NULL);
    /* a connection with no local address (TCP): no rails */
    struct rd_transport tcp = { 0 };
    CHECK_EQ_U(rd_rails_reach(&o, &tcp, &r, local, 2, &l, &out), 1);
}

int main(void)
{
    RUN(t_two_subnets);
    RUN(t_same_host);
    RUN(t_one_subnet_free_port_first);
    RUN(t_free_ports_first);
    RUN(t_unreachable_left_out);
    RUN(t_prefixes);
    RUN(t_advert);
    RUN(t_of_ports);
    RUN(t_one_rail_per_port);
    RUN(t_reach_lists);
    return check_summary();
}
