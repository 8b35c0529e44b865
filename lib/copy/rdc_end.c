/* rdc_end.c - see rdc_end.h. */
#include "copy/rdc_end.h"

#include "engine/rd_lanes.h"
#include "remote/rdr_opts.h"
#include "transport/rd_session.h"
#include "util/rd_error.h"

#include <signal.h>
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
    signal(SIGXFSZ, SIG_IGN);   /* a file over `ulimit -f` is that file's error (EFBIG) */
}

enum rd_transport_choice rdc_end_transport(const char *name)
{
    return strcmp(name, "tcp") == 0 ? RD_T_TCP : strcmp(name, "rdma") == 0 ? RD_T_RDMA : RD_T_AUTO;
}

uint32_t rdc_end_lanes(const char *n)
{
    return rdr_count(n, RD_MAX_LANES);
}

void rdc_end_streams(const char *n, struct rd_opts *o)
{
    unsigned v = rdr_count(n, RD_MAX_STREAMS);
    if (v) {
        o->streams = v;
        o->streams_set = 1;
    }
}
