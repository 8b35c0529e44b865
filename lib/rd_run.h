/* rd_run.h - a whole rdsend / rdrecv run from parsed options (the tools' mains are thin). */
#ifndef RD_RUN_H
#define RD_RUN_H

#include "rd_cli.h"

/* Both return the process exit code (an rd_err) after printing any error line. */
int rd_run_send(const struct rd_opts *o);
int rd_run_recv(const struct rd_opts *o);

/* Parse argv and run; what the rdsend/rdrecv mains call. */
int rd_tool_main(int argc, char **argv, int is_sender);

#endif
