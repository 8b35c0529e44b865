/* rdc_end.h - the start the two ends of rdcp's tree stream share (`rdcp --tree-send` and
 * `rdcp --tree-recv`): both are run by an rdpipe agent, report to it in JSON on stderr, and
 * take --transport as the initiator validated it. */
#ifndef RDC_END_H
#define RDC_END_H

#include "run/rd_cli.h"

/* Zeroed engine options with JSON statistics and no ready fd; messages say "rdcp: ...", and
 * SIGPIPE is ignored (a broken stream is an error return, not a death). */
void rdc_end_init(struct rd_opts *o);
/* "tcp", "rdma", anything else: auto. */
enum rd_transport_choice rdc_end_transport(const char *name);
/* --lanes N as the initiator validated it (1..RD_MAX_LANES; anything else: planned, 0). */
uint32_t rdc_end_lanes(const char *n);
/* --streams N likewise (1..RD_MAX_STREAMS: o->streams and streams_set; else as rdsend's default). */
void rdc_end_streams(const char *n, struct rd_opts *o);

#endif
