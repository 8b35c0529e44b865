/* rd_opterr.h - what getopt_long refused, as one line naming what the user typed. glibc's own
 * messages are two lines prefixed by argv[0] (a full path when run by path), and glibc reports
 * a value given to an option that takes none (--help=x) through the option's short letter,
 * which the user never typed. Call getopt_long with opterr = 0 and an optstring that starts
 * with ':' (after any '+'). */
#ifndef RD_OPTERR_H
#define RD_OPTERR_H

#include <stddef.h>

/* c: what getopt_long returned ('?' or ':'); argv, optind, optopt as getopt_long left them.
 * Writes "unknown option '--x'", "option '--x' needs a value" or "option '--x' takes no
 * value" into buf (n bytes, without the tool's name or a newline). */
void rd_opt_refused(char *buf, size_t n, int c, char *const argv[], int optind, int optopt);

#endif
