/* rd_run.h - a whole rdsend / rdrecv run from parsed options (the tools' mains are thin). */
#ifndef RD_RUN_H
#define RD_RUN_H

#include "run/rd_cli.h"

/* Both return the process exit code (an rd_err) after printing any error line. */
int rd_run_send(const struct rd_opts *o);
int rd_run_recv(const struct rd_opts *o);
/* rdrecv --relay-fd: receive one stream and pass it on unchanged to the receiver named on
 * the relay fd (rd_relay.h). */
int rd_run_relay(const struct rd_opts *o);

/* The same with a source or sink the caller opened (a file, or a custom producer or
 * consumer such as rdcp's tree stream). */
struct rd_source;
struct rd_sink;
int rd_send_source(const struct rd_opts *o, struct rd_source *src);
int rd_recv_sink(const struct rd_opts *o, struct rd_sink *dst);

/* Parse argv and run; what the rdsend/rdrecv mains call. */
int rd_tool_main(int argc, char **argv, int is_sender);

#endif
