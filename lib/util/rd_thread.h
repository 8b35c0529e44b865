/* rd_thread.h - names for the threads of a transfer, so that `top -H`, `ps -L`, perf and gdb
 * say which one is busy (a lane, the reader, an rdcp worker) instead of the program's name. */
#ifndef RD_THREAD_H
#define RD_THREAD_H

/* Name the calling thread (printf format; the kernel keeps the first 15 bytes). */
void rd_thread_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
