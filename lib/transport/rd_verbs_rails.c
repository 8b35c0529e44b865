/* rd_verbs_rails.c - which addresses of this host are on active RDMA ports: each interface
 * address is bound with rdma_cm, which names the device and port behind it (RoCE through the
 * netdev's GIDs, InfiniBand through IPoIB), as a connection from it would use. */
#include "transport/rd_rails.h"
#include "transport/rd_verbs.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned prefix_of(const struct sockaddr *mask)
{
    struct rd_rail_addr m;
    unsigned bits = 0;
    if (!mask || rd_rail_addr_of(mask, &m))
        return 0;
    for (unsigned i = 0; i < (m.family == 4 ? 4u : 16u); i++)
        bits += (unsigned)__builtin_popcount(m.addr[i]);
    return bits;
}

/* The device and port an address of this host is on, when that port is active. */
static int active_port_of(const struct sockaddr *sa, const char *devices, struct rd_port_addr *p)
{
    struct rdma_cm_id *id;
    struct sockaddr_storage ss;
    int ok = 0;
    if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
        return 0;
    memcpy(&ss, sa, sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
    ((struct sockaddr_in *)&ss)->sin_port = 0;   /* sin6_port sits at the same place */
    if (!rdma_bind_addr(id, (struct sockaddr *)&ss) && id->verbs && rd_v_device_is(id, devices ? devices : "")) {
        struct ibv_port_attr attr;
        if (!ibv_query_port(id->verbs, id->port_num, &attr) && attr.state == IBV_PORT_ACTIVE) {
            snprintf(p->dev, sizeof p->dev, "%s", ibv_get_device_name(id->verbs->device));
            p->port = id->port_num;
            ok = 1;
        }
    }
    rdma_destroy_id(id);
    return ok;
}

unsigned rd_rails_local(const char *devices, struct rd_port_addr *out, unsigned max)
{
    struct ifaddrs *all;
    unsigned n = 0;
    if (!rd_verbs_available() || getifaddrs(&all))
        return 0;
    for (struct ifaddrs *i = all; i && n < max; i = i->ifa_next) {
        struct rd_port_addr p = { 0 };
        if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK) ||
            rd_rail_addr_of(i->ifa_addr, &p.a))
            continue;
        if (i->ifa_addr->sa_family == AF_INET6 &&
            IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
            continue;
        p.prefix = prefix_of(i->ifa_netmask);
        if (active_port_of(i->ifa_addr, devices, &p))
            out[n++] = p;
    }
    freeifaddrs(all);
    return n;
}

unsigned rd_rails_offer(const struct rd_reach *o, int streams_set, const struct rd_transport *tp,
                        struct rd_port_addr *local, unsigned *nl)
{
    const char *env = getenv("RDPIPE_RAILS");
    *nl = 0;
    if ((env && !strcmp(env, "0")) || streams_set || tp->ops != &rd_verbs_ops || rd_list_len(o->host) > 1 ||
        rd_list_len(o->bind) > 1 || rd_list_len(o->device) == 1)
        return 0;
    struct rd_rails mine;
    *nl = rd_rails_local(o->device, local, RD_MAX_RAILS);
    rd_rails_of_ports(local, *nl, &mine);
    unsigned ports = rd_rails_distinct(&mine);
    return ports >= 2 ? ports : 0;
}
