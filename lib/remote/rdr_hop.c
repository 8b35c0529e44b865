/* rdr_hop.c - see rdr_hop.h. */
#include "remote/rdr_hop.h"

#include "remote/rdr_line.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

void rdr_hop_key(char out[65])
{
    unsigned char b[32];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            /* no entropy source at all: fall back to the time (still a per-run secret) */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            for (size_t i = got; i < sizeof b; i++)
                b[i] = (unsigned char)(ts.tv_nsec >> (i % 4 * 8)) ^ (unsigned char)getpid();
            break;
        }
        got += (size_t)n;
    }
    char *h = rdr_hex(b, sizeof b);
    snprintf(out, 65, "%s", h);
    free(h);
}

void rdr_hop_addr(const char *to_dest, const char *to_host, const char *to_srv,
                  const char *from_dest, const char *hostname, char *out, size_t len)
{
    if (to_dest)
        snprintf(out, len, "%s", strcmp(to_srv, "-") && to_srv[0] ? to_srv : to_host);
    else if (!from_dest)
        snprintf(out, len, "%s", hostname ? hostname : "127.0.0.1");
    else
        snprintf(out, len, "%s", hostname ? hostname : "@initiator");
}
