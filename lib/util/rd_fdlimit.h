/* rd_fdlimit.h - enough file descriptors. Every connection, stripe, lane pipe and open file
 * of rdcp is one; a tool that ran out in the middle would stop with an error at a random
 * point (or, out of them while listening, could never take its sender). So each tool raises
 * its soft RLIMIT_NOFILE as far as the hard limit allows, up to RD_FDS_WANTED, and refuses
 * to start under RD_FDS_NEEDED, where not even a plain transfer fits. */
#ifndef RD_FDLIMIT_H
#define RD_FDLIMIT_H

#define RD_FDS_WANTED 1024   /* what select() still takes: children started with it are safe */
#define RD_FDS_NEEDED 16     /* a plain transfer holds 9; the libraries open a few at start */

/* first thing in main, after rd_stdfd_reserve: raise the soft limit; under RD_FDS_NEEDED
 * even then, one line naming the limit and exit 5 */
void rd_fd_limit_raise(void);
/* the soft limit now (for messages); 0 when unknown, UINT64_MAX when unlimited */
unsigned long long rd_fd_limit(void);

#endif
