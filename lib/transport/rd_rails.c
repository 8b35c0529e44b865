/* rd_rails.c - pairing the sender's RDMA ports with the receiver's (no IO here). */
#include "transport/rd_rails.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

int rd_rail_addr_of(const struct sockaddr *sa, struct rd_rail_addr *out)
{
    memset(out, 0, sizeof *out);
    if (sa->sa_family == AF_INET) {
        out->family = 4;
        memcpy(out->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a6)) {   /* an IPv4 peer on a dual-stack listener */
            out->family = 4;
            memcpy(out->addr, a6->s6_addr + 12, 4);
        } else {
            out->family = 6;
            memcpy(out->addr, a6->s6_addr, 16);
        }
        return 0;
    }
    return -1;
}

int rd_rail_addr_eq(const struct rd_rail_addr *x, const struct rd_rail_addr *y)
{
    return x->family == y->family && !memcmp(x->addr, y->addr, sizeof x->addr);
}

static int same_port(const struct rd_port_addr *x, const struct rd_port_addr *y)
{
    return x->port == y->port && !strcmp(x->dev, y->dev);
}

void rd_rails_of_ports(const struct rd_port_addr *p, unsigned n, struct rd_rails *out)
{
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < n && i < RD_MAX_RAILS; i++) {
        unsigned k = 0;
        while (k < i && !same_port(&p[k], &p[i]))
            k++;
        out->a[i] = p[i].a;
        out->a[i].port = (uint8_t)k;   /* the port's number: where its first address is */
        out->count++;
    }
}

unsigned rd_rails_distinct(const struct rd_rails *r)
{
    unsigned ports = 0;
    for (unsigned i = 0; i < r->count; i++) {
        unsigned k = 0;
        while (k < i && r->a[k].port != r->a[i].port)
            k++;
        ports += k == i;
    }
    return ports;
}

void rd_rails_advert(const struct rd_rails *ports, const struct rd_rail_addr *first, struct rd_rails *out)
{
    memset(out, 0, sizeof *out);
    out->a[out->count] = *first;
    out->a[out->count++].port = 0xff;   /* an address not among ours: a port of its own */
    for (unsigned i = 0; i < ports->count; i++)
        if (rd_rail_addr_eq(&ports->a[i], first))
            out->a[0].port = ports->a[i].port;
    for (unsigned i = 0; i < ports->count && out->count < RD_MAX_RAILS; i++)
        if (!rd_rail_addr_eq(&ports->a[i], first))
            out->a[out->count++] = ports->a[i];
}

/* Are x and y in one subnet of prefix bits? */
static int same_subnet(const struct rd_rail_addr *x, const struct rd_rail_addr *y, unsigned prefix)
{
    unsigned bits = x->family == 4 ? 32 : 128;
    if (x->family != y->family || prefix == 0 || prefix > bits)
        return 0;
    unsigned whole = prefix / 8, rest = prefix % 8;
    if (memcmp(x->addr, y->addr, whole))
        return 0;
    uint8_t mask = (uint8_t)(0xff00u >> rest);
    return !rest || !((x->addr[whole] ^ y->addr[whole]) & mask);
}

static void addr_str(const struct rd_rail_addr *a, char *out, size_t n)
{
    if (!inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->addr, out, (socklen_t)n))
        snprintf(out, n, "?");
}

/* An address the receiver names as its own is no port of ours to send from: both ends are
 * on this host (a test), and that port is the receiver's. */
static int theirs(const struct rd_rails *remote, const struct rd_rail_addr *a)
{
    for (unsigned i = 0; i < remote->count; i++)
        if (rd_rail_addr_eq(&remote->a[i], a))
            return 1;
    return 0;
}

/* Is port p among the n in used? */
static int in_use(const struct rd_port_addr *const *used, unsigned n, const struct rd_port_addr *p)
{
    for (unsigned u = 0; u < n; u++)
        if (same_port(used[u], p))
            return 1;
    return 0;
}

/* The local port whose address a is, or NULL. */
static const struct rd_port_addr *port_of(const struct rd_port_addr *local, unsigned nl, const struct rd_rail_addr *a)
{
    for (unsigned i = 0; i < nl; i++)
        if (rd_rail_addr_eq(&local[i].a, a))
            return &local[i];
    return NULL;
}

unsigned rd_rails_pair(const struct rd_port_addr *local, unsigned nl, const struct rd_rails *remote,
                       const struct rd_rail_addr *local0, struct rd_rail_pair *out, unsigned max)
{
    const struct rd_port_addr *used[RD_MAX_RAILS + 1];   /* the ports that carry a rail */
    unsigned nused = 0, got = 0;
    if ((used[0] = port_of(local, nl, local0)))
        nused = 1;
    uint8_t done[RD_MAX_RAILS] = { remote->a[0].port };   /* the receiver's ports with a rail */
    unsigned ndone = 1;
    /* first every receiver port a free port of ours reaches, then those that must share one:
     * with fewer connections than pairs, the first pairs are the ones that add a port */
    for (int share = 0; share < 2; share++)
        for (unsigned r = 1; r < remote->count && got < max; r++) {
            const struct rd_rail_addr *ra = &remote->a[r];
            unsigned d = 0;
            while (d < ndone && done[d] != ra->port)
                d++;
            if (d < ndone)
                continue;   /* another address of a port that has its rail */
            const struct rd_port_addr *best = NULL;
            for (unsigned i = 0; i < nl && !best; i++)
                if (!theirs(remote, &local[i].a) && same_subnet(&local[i].a, ra, local[i].prefix) &&
                    (share || !in_use(used, nused, &local[i])))
                    best = &local[i];
            if (!best)
                continue;
            if (!share)
                used[nused++] = best;
            done[ndone++] = ra->port;
            addr_str(ra, out[got].host, sizeof out[got].host);
            addr_str(&best->a, out[got].bind, sizeof out[got].bind);
            snprintf(out[got].dev, sizeof out[got].dev, "%s", best->dev);
            got++;
        }
    return got;
}

/* Append ",s" (or "s" to an empty list). */
static void add(char *list, size_t cap, const char *s)
{
    size_t len = strlen(list);
    snprintf(list + len, cap - len, "%s%s", len ? "," : "", s);
}

unsigned rd_rails_reach(const struct rd_reach *o, const struct rd_transport *tp, const struct rd_rails *remote,
                        const struct rd_port_addr *local, unsigned nl, struct rd_rail_lists *l,
                        struct rd_reach *out)
{
    struct rd_rail_pair pairs[RD_MAX_RAILS];
    struct rd_rail_addr local0;
    *out = *o;
    if (rd_rail_addr_of((const struct sockaddr *)&tp->local, &local0))
        return 1;
    unsigned n = rd_rails_pair(local, nl, remote, &local0, pairs, RD_MAX_RAILS - 1);
    if (!n)
        return 1;
    /* rail 0: connection 0 as it is, from the address and device it took */
    struct rd_rail r0;
    struct rd_reach first = rd_reach_rail(o, 0, &r0);
    const struct rd_port_addr *p0 = port_of(local, nl, &local0);
    char bind0[48];
    addr_str(&local0, bind0, sizeof bind0);
    l->host[0] = l->bind[0] = l->dev[0] = 0;
    add(l->host, sizeof l->host, first.host);
    add(l->bind, sizeof l->bind, bind0);
    add(l->dev, sizeof l->dev, p0 ? p0->dev : first.device ? first.device : "");
    for (unsigned i = 0; i < n; i++) {
        add(l->host, sizeof l->host, pairs[i].host);
        add(l->bind, sizeof l->bind, pairs[i].bind);
        add(l->dev, sizeof l->dev, pairs[i].dev);
    }
    out->host = l->host;
    out->bind = l->bind;
    out->device = l->dev;
    return n + 1;
}

void rd_rails_str(const struct rd_rails *r, char *out, size_t n)
{
    size_t len = 0;
    out[0] = 0;
    for (unsigned i = 0; i < r->count && len < n; i++) {
        char a[48];
        addr_str(&r->a[i], a, sizeof a);
        int w = snprintf(out + len, n - len, "%s%s (port %u)", i ? ", " : "", a, r->a[i].port);
        len += w > 0 ? (size_t)w : 0;
    }
}

void rd_ports_str(const struct rd_port_addr *p, unsigned np, char *out, size_t n)
{
    size_t len = 0;
    out[0] = 0;
    for (unsigned i = 0; i < np && len < n; i++) {
        char a[48];
        addr_str(&p[i].a, a, sizeof a);
        int w = snprintf(out + len, n - len, "%s%s/%u %s:%u", i ? ", " : "", a, p[i].prefix, p[i].dev, p[i].port);
        len += w > 0 ? (size_t)w : 0;
    }
}
