/* rd_throttle.c - see rd_throttle.h. */
#include "transport/rd_throttle.h"

#include <stdio.h>
#include <string.h>

void rd_throttle_init(struct rd_throttle *t)
{
    memset(t, 0, sizeof *t);
}

static int expired(double last, double now)
{
    return now - last > RD_THROTTLE_WINDOW_S;
}

static int find(const struct rd_throttle *t, const char *addr)
{
    for (int i = 0; i < RD_THROTTLE_SLOTS; i++)
        if (t->e[i].addr[0] && !strcmp(t->e[i].addr, addr))
            return i;
    return -1;
}

/* The slot a new address takes: a free one, else the least worth keeping. */
static int victim(const struct rd_throttle *t, double now)
{
    int best = 0;
    for (int i = 0; i < RD_THROTTLE_SLOTS; i++) {
        if (!t->e[i].addr[0] || expired(t->e[i].last, now))
            return i;
        if (t->e[i].fails < t->e[best].fails ||
            (t->e[i].fails == t->e[best].fails && t->e[i].last < t->e[best].last))
            best = i;
    }
    return best;
}

void rd_throttle_failed(struct rd_throttle *t, const char *addr, double now)
{
    int i = find(t, addr);
    if (i < 0) {
        i = victim(t, now);
        snprintf(t->e[i].addr, sizeof t->e[i].addr, "%s", addr);
        t->e[i].fails = 0;
    } else if (expired(t->e[i].last, now)) {
        t->e[i].fails = 0;
    }
    if (t->e[i].fails < 1000000)   /* far past the cap already: no wrap-around */
        t->e[i].fails++;
    t->e[i].last = now;
}

double rd_throttle_delay(const struct rd_throttle *t, const char *addr, double now, unsigned *fails)
{
    int i = find(t, addr);
    *fails = i < 0 || expired(t->e[i].last, now) ? 0 : t->e[i].fails;
    if (*fails < RD_THROTTLE_FREE)
        return 0;
    double d = RD_THROTTLE_BASE_S;
    for (unsigned k = RD_THROTTLE_FREE; k < *fails && d < RD_THROTTLE_CAP_S; k++)
        d *= 2;
    return d < RD_THROTTLE_CAP_S ? d : RD_THROTTLE_CAP_S;
}

void rd_throttle_source(const char *peer, char out[RD_THROTTLE_ADDR])
{
    const char *p = peer, *end = strrchr(peer, ':');
    if (*p == '[') {   /* "[v6]:port" */
        p++;
        end = strchr(p, ']');
    }
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n >= 7 && !strncmp(p, "::ffff:", 7) && memchr(p + 7, '.', n - 7)) {
        p += 7;   /* an IPv4 peer of a dual-stack listener is the same host as over IPv4 */
        n -= 7;
    }
    if (n >= RD_THROTTLE_ADDR)
        n = RD_THROTTLE_ADDR - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}
