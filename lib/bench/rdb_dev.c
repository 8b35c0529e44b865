/* rdb_dev.c - RDMA devices, ports, GIDs and MTUs as libibverbs and sysfs show them, the
 * memory rdsend pins, and the route to an address (rdb_dev.h).
 * Where it sits: rdcheck's local checks and the bench server's INFO; no connection. */
#include "bench/rdb_dev.h"


#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* First line of a small text file, without the newline; -1 if unreadable. */
static int read_line(const char *path, char *out, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *r = fgets(out, (int)n, f);
    fclose(f);
    if (!r)
        return -1;
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

static unsigned mtu_bytes(enum ibv_mtu m)
{
    return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

static const char *state_name(enum ibv_port_state s)
{
    switch (s) {
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "NOP";
    }
}

/* "0000:0000:0000:0000:0000:ffff:0a00:0001" -> "10.0.0.1"; "fe80:..." -> "fe80::..."; 0 if all zero */
static int gid_text(const char *sysfs, char *out, size_t n, int *is_ip)
{
    struct in6_addr a;
    unsigned g[8];
    if (sscanf(sysfs, "%x:%x:%x:%x:%x:%x:%x:%x", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5], &g[6], &g[7]) != 8)
        return 0;
    int zero = 1;
    for (int i = 0; i < 8; i++) {
        a.s6_addr[2 * i] = (uint8_t)(g[i] >> 8);
        a.s6_addr[2 * i + 1] = (uint8_t)g[i];
        zero &= g[i] == 0;
    }
    if (zero)
        return 0;
    *is_ip = !IN6_IS_ADDR_LINKLOCAL(&a);
    if (IN6_IS_ADDR_V4MAPPED(&a))
        inet_ntop(AF_INET, a.s6_addr + 12, out, (socklen_t)n);
    else
        inet_ntop(AF_INET6, &a, out, (socklen_t)n);
    return 1;
}

static void scan_gids(struct rdb_port *p, unsigned tbl_len)
{
    char path[256], val[128], type[32], ndev[32], text[INET6_ADDRSTRLEN];
    if (tbl_len > 256)
        tbl_len = 256;
    for (unsigned i = 0; i < tbl_len; i++) {
        snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%u/gids/%u", p->dev, p->port, i);
        int is_ip = 0;
        if (read_line(path, val, sizeof val) || !gid_text(val, text, sizeof text, &is_ip))
            continue;
        p->ngids++;
        snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%u/gid_attrs/types/%u", p->dev, p->port, i);
        if (read_line(path, type, sizeof type))
            snprintf(type, sizeof type, "%s", p->ethernet ? "RoCE" : "IB");
        snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%u", p->dev, p->port, i);
        if (read_line(path, ndev, sizeof ndev))
            ndev[0] = '\0';
        if (!p->netdev[0] && ndev[0])
            snprintf(p->netdev, sizeof p->netdev, "%s", ndev);
        int v2 = strstr(type, "v2") != NULL;
        if (v2 && is_ip)
            p->nroce2++;
        /* the one worth naming: a RoCE v2 GID with an address, else the first */
        if (!p->gid_desc[0] || (v2 && is_ip && p->nroce2 == 1))
            snprintf(p->gid_desc, sizeof p->gid_desc, "GID %u %s %s%s%s%s", i, type, text,
                     ndev[0] ? " (" : "", ndev, ndev[0] ? ")" : "");
    }
}

static void netdev_info(struct rdb_port *p)
{
    char path[128], val[32];
    if (!p->netdev[0])
        return;
    snprintf(path, sizeof path, "/sys/class/net/%s/mtu", p->netdev);
    if (read_line(path, val, sizeof val) == 0)
        p->netdev_mtu = (unsigned)strtoul(val, NULL, 10);
    snprintf(path, sizeof path, "/sys/class/net/%s/operstate", p->netdev);
    p->netdev_up = read_line(path, val, sizeof val) == 0 && (!strcmp(val, "up") || !strcmp(val, "unknown"));
}

size_t rdb_ports(struct rdb_port *out, size_t cap, unsigned *ndev)
{
    int n = 0;
    size_t k = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    *ndev = list && n > 0 ? (unsigned)n : 0;
    for (int d = 0; list && d < n && k < cap; d++) {
        const char *name = ibv_get_device_name(list[d]);
        struct ibv_context *ctx = ibv_open_device(list[d]);
        struct ibv_device_attr da;
        if (!ctx || ibv_query_device(ctx, &da)) {
            struct rdb_port *p = &out[k++];
            memset(p, 0, sizeof *p);
            snprintf(p->dev, sizeof p->dev, "%s", name);
            p->port = 1;
            p->open_errno = errno ? errno : EIO;
            if (ctx)
                ibv_close_device(ctx);
            continue;
        }
        for (unsigned pn = 1; pn <= da.phys_port_cnt && k < cap; pn++) {
            struct rdb_port *p = &out[k++];
            struct ibv_port_attr pa;
            memset(p, 0, sizeof *p);
            snprintf(p->dev, sizeof p->dev, "%s", name);
            p->port = pn;
            if (ibv_query_port(ctx, (uint8_t)pn, &pa)) {
                p->open_errno = errno ? errno : EIO;
                continue;
            }
            p->state = pa.state;
            snprintf(p->state_name, sizeof p->state_name, "%s", state_name(pa.state));
            p->ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
            p->active_mtu = mtu_bytes(pa.active_mtu);
            p->max_mtu = mtu_bytes(pa.max_mtu);
            scan_gids(p, (unsigned)pa.gid_tbl_len);
            netdev_info(p);
        }
        ibv_close_device(ctx);
    }
    if (list)
        ibv_free_device_list(list);
    return k;
}

void rdb_port_range(char *out, size_t n)
{
    char val[64];
    unsigned lo, hi;
    if (read_line("/proc/sys/net/ipv4/ip_local_port_range", val, sizeof val) == 0 &&
        sscanf(val, "%u %u", &lo, &hi) == 2)
        snprintf(out, n, "%u-%u", lo, hi);
    else if (n)
        out[0] = '\0';
}

/* The interface the kernel routes dst through (from src when set): "" when unknown. */
static void route_ifname(const struct sockaddr *dst, socklen_t dlen, const struct sockaddr *src,
                         socklen_t slen, char *ifname, size_t iflen)
{
    ifname[0] = '\0';
    struct sockaddr_storage probe, local;
    memcpy(&probe, dst, dlen);
    ((struct sockaddr_in *)&probe)->sin_port = htons(9);   /* same offset for IPv6 */
    int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    socklen_t ll = sizeof local;
    if (fd < 0)
        return;
    if ((src && bind(fd, src, slen)) || connect(fd, (struct sockaddr *)&probe, dlen) ||
        getsockname(fd, (struct sockaddr *)&local, &ll)) {
        close(fd);
        return;
    }
    close(fd);
    struct ifaddrs *ifs, *i;
    if (getifaddrs(&ifs))
        return;
    for (i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != local.ss_family)
            continue;
        int same = local.ss_family == AF_INET
            ? ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == ((struct sockaddr_in *)&local)->sin_addr.s_addr
            : !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, &((struct sockaddr_in6 *)&local)->sin6_addr,
                      sizeof(struct in6_addr));
        if (same) {
            snprintf(ifname, iflen, "%s", i->ifa_name);
            break;
        }
    }
    freeifaddrs(ifs);
}

static int resolve(const char *host, struct sockaddr_storage *ss, socklen_t *len)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
    if (getaddrinfo(host, NULL, &hints, &ai))
        return -1;
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

int rdb_rdma_route(const char *host, const char *bind_addr, int timeout_ms, char *dev, size_t devlen,
                   unsigned *port, char *ifname, size_t iflen, char *addr, size_t addrlen, char *why,
                   size_t whylen)
{
    struct sockaddr_storage dst, src;
    socklen_t dlen, slen = 0;
    ifname[0] = addr[0] = dev[0] = '\0';
    *port = 0;
    if (resolve(host, &dst, &dlen)) {
        snprintf(why, whylen, "cannot resolve %s", host);
        return -1;
    }
    if (bind_addr && resolve(bind_addr, &src, &slen)) {
        snprintf(why, whylen, "cannot resolve --bind %s", bind_addr);
        return -1;
    }
    if (dst.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&dst)->sin_addr, addr, (socklen_t)addrlen);
    else
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&dst)->sin6_addr, addr, (socklen_t)addrlen);
    route_ifname((struct sockaddr *)&dst, dlen, bind_addr ? (struct sockaddr *)&src : NULL, slen, ifname, iflen);

    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *id = NULL;
    int rc = -1;
    if (!ch) {
        snprintf(why, whylen, "the RDMA connection manager is not available (%s)", strerror(errno));
        return -1;
    }
    if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
        snprintf(why, whylen, "cannot create an RDMA CM id (%s)", strerror(errno));
        goto out;
    }
    if (rdma_resolve_addr(id, bind_addr ? (struct sockaddr *)&src : NULL, (struct sockaddr *)&dst, timeout_ms)) {
        snprintf(why, whylen, "no RDMA device routes to %s (%s)", addr, strerror(errno));
        goto out;
    }
    struct pollfd pf = { .fd = ch->fd, .events = POLLIN };
    struct rdma_cm_event *ev;
    if (poll(&pf, 1, timeout_ms + 500) <= 0 || rdma_get_cm_event(ch, &ev)) {
        snprintf(why, whylen, "resolving %s over RDMA timed out", addr);
        goto out;
    }
    enum rdma_cm_event_type t = ev->event;
    rdma_ack_cm_event(ev);
    if (t != RDMA_CM_EVENT_ADDR_RESOLVED || !id->verbs) {
        snprintf(why, whylen, "no RDMA device routes to %s (%s)", addr, rdma_event_str(t));
        goto out;
    }
    snprintf(dev, devlen, "%s", ibv_get_device_name(id->verbs->device));
    *port = id->port_num;
    rc = 0;
out:
    if (id)
        rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return rc;
}
