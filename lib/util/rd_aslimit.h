/* rd_aslimit.h - living under an address-space limit (ulimit -v, RLIMIT_AS). glibc gives each
 * thread that contends for malloc an arena of its own, reserving 64 MiB of address space for
 * each: under ulimit -v 200000 the first two arenas took most of the limit and rdcp's receiver
 * died "out of memory" after 192 files, where under 100000 no arena fitted, every thread
 * shared the main one, and the same copy went through. With a finite limit every thread
 * shares one arena: a copy of a tree needs 80 MB then, not more with a higher limit. */
#ifndef RD_ASLIMIT_H
#define RD_ASLIMIT_H

/* first thing in main, beside rd_fd_limit_raise: one malloc arena when RLIMIT_AS is finite */
void rd_as_limit_adapt(void);

#endif
