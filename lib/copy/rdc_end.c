/* rdc_end.c - see rdc_end.h. */
#include "copy/rdc_end.h"

#include "engine/rd_lanes.h"
#include "transport/rd_session.h"
#include "util/rd_error.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

void rdc_end_init(struct rd_opts *o)
{
    memset(o, 0, sizeof *o);
    o->json = 1;
    o->ready_fd = -1;
    o->relay_fd = -1;
    o->streams = 1;
    rd_set_progname("rdcp");
    signal(SIGPIPE, SIG_IGN);
}

enum rd_transport_choice rdc_end_transport(const char *name)
{
    return strcmp(name, "tcp") == 0 ? RD_T_TCP : strcmp(name, "rdma") == 0 ? RD_T_RDMA : RD_T_AUTO;
}

uint32_t rdc_end_lanes(const char *n)
{
    char *end;
    unsigned long v = strtoul(n, &end, 10);
    return *n >= '1' && *n <= '9' && !*end && v <= RD_MAX_LANES ? (uint32_t)v : 0;
}

void rdc_end_streams(const char *n, struct rd_opts *o)
{
    char *end;
    unsigned long v = strtoul(n, &end, 10);
    if (*n >= '1' && *n <= '9' && !*end && v <= RD_MAX_STREAMS) {
        o->streams = (uint32_t)v;
        o->streams_set = 1;
    }
}
