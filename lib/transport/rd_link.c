#include "transport/rd_link.h"

#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

/* An address as its family and bytes, an IPv4-mapped IPv6 address as its IPv4 address. */
struct ip {
    int family;
    unsigned char bytes[16];
};

static int ip_of(const struct sockaddr *sa, struct ip *ip)
{
    memset(ip, 0, sizeof *ip);
    if (!sa)
        return -1;
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in in;
        memcpy(&in, sa, sizeof in);
        ip->family = AF_INET;
        memcpy(ip->bytes, &in.sin_addr, 4);
        return 0;
    }
    if (sa->sa_family != AF_INET6)
        return -1;
    struct sockaddr_in6 in6;
    memcpy(&in6, sa, sizeof in6);
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
        ip->family = AF_INET;
        memcpy(ip->bytes, in6.sin6_addr.s6_addr + 12, 4);
    } else {
        ip->family = AF_INET6;
        memcpy(ip->bytes, in6.sin6_addr.s6_addr, 16);
    }
    return 0;
}

/* ethtool's speed of interface `name` in Mb/s, 0 when it has none. ETHTOOL_GLINKSETTINGS
 * first answers how many words its link mode masks take, then the settings. */
static uint64_t ethtool_mbps(int fd, const char *name)
{
    /* the settings and their three link mode masks of at most 127 words each */
    uint32_t buf[(sizeof(struct ethtool_link_settings) + 3 * 127 * 4) / 4 + 1];
    struct ethtool_link_settings *req = (struct ethtool_link_settings *)buf;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
    ifr.ifr_data = (void *)buf;
    memset(buf, 0, sizeof buf);
    req->cmd = ETHTOOL_GLINKSETTINGS;
    if (ioctl(fd, SIOCETHTOOL, &ifr) || req->link_mode_masks_nwords >= 0)
        return 0;
    int words = -req->link_mode_masks_nwords;   /* 1..128; room for 127 */
    if (words > 127)
        return 0;
    memset(buf, 0, sizeof buf);
    req->cmd = ETHTOOL_GLINKSETTINGS;
    req->link_mode_masks_nwords = (int8_t)words;
    if (ioctl(fd, SIOCETHTOOL, &ifr) || req->link_mode_masks_nwords != words)
        return 0;
    uint32_t mbps = req->speed;
    return mbps == 0 || mbps == (uint32_t)SPEED_UNKNOWN ? 0 : mbps;
}

uint64_t rd_netdev_rate(int fd, char *name, size_t n)
{
    struct sockaddr_storage local;
    socklen_t len = sizeof local;
    struct ifaddrs *all, *ia;
    struct ip want, have;
    uint64_t rate = 0;
    if (n)
        name[0] = '\0';
    if (getsockname(fd, (struct sockaddr *)&local, &len) || ip_of((struct sockaddr *)&local, &want) ||
        getifaddrs(&all))
        return 0;
    for (ia = all; ia; ia = ia->ifa_next)
        if (!ip_of(ia->ifa_addr, &have) && !memcmp(&have, &want, sizeof want))
            break;
    if (ia) {
        rate = ethtool_mbps(fd, ia->ifa_name) * 1000000 / 8;
        if (n)
            snprintf(name, n, "%s", ia->ifa_name);
    }
    freeifaddrs(all);
    return rate;
}

uint64_t rd_ib_port_rate(unsigned active_speed, unsigned active_width)
{
    /* data Mb/s of one lane (SDR to QDR lose a fifth to 8b/10b, FDR10 on a 64b/66b) */
    static const struct { unsigned code, mbps; } speeds[] = {
        { 1, 2000 }, { 2, 4000 }, { 4, 8000 }, { 8, 10000 }, { 16, 13636 },
        { 32, 25000 }, { 64, 50000 }, { 128, 100000 },
    };
    static const struct { unsigned code, lanes; } widths[] = {
        { 1, 1 }, { 2, 4 }, { 4, 8 }, { 8, 12 }, { 16, 2 },
    };
    uint64_t mbps = 0, lanes = 0;
    for (size_t i = 0; i < sizeof speeds / sizeof speeds[0]; i++)
        if (speeds[i].code == active_speed)
            mbps = speeds[i].mbps;
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
        if (widths[i].code == active_width)
            lanes = widths[i].lanes;
    return mbps * lanes * 1000000 / 8;
}
