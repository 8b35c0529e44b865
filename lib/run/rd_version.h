/* rd_version.h - what --version prints, the same for all four tools. */
#ifndef RD_VERSION_H
#define RD_VERSION_H

#include <stdio.h>

/* "TOOL (rdpipe) VERSION", the commit it was built from, and what this build can do on this
 * machine: transports, the RDMA devices found now (not at build time), codecs, and the ciphers
 * of --encrypt with their libraries and the one this machine offers first. */
void rd_print_version(FILE *f, const char *tool);

#endif
