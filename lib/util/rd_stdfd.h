/* rd_stdfd.h - fds 0, 1 and 2 as the tool was started with them. Started with one of them
 * closed (cron, `2>&-`, `<&-`), a tool would hand that number to the next file or socket it
 * opens, and its messages or its data would go there: stderr into the output file, stdin read
 * from its own connection. Each closed one is taken by a descriptor that still behaves as a
 * closed one (every read and write fails with EBADF), so the number stays taken. */
#ifndef RD_STDFD_H
#define RD_STDFD_H

/* first thing in main: take each closed one of fds 0-2, and note which were; and at exit,
 * write what stdio holds for stdout, exiting 5 with one line if that fails */
void rd_stdfd_reserve(void);
/* A write to stdout failed with errno e: the exit check names e (stdio has forgotten it by
 * then); said: the tool told the user already, so the check only exits 5. */
void rd_stdout_failed(int e, int said);
/* 1 if fd (0, 1 or 2) was closed when the tool started */
int rd_stdfd_was_closed(int fd);

#endif
