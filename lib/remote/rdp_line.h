/* rdp_line.h - rdpipe's control channel: one text line per message over a pipe or socket.
 *
 * Values that may contain spaces or arbitrary bytes (commands, paths, messages, keys) travel
 * hex-encoded, so a line is always "word word ...\n" and parsing is a split on spaces.
 */
#ifndef RDP_LINE_H
#define RDP_LINE_H

#include <stddef.h>
#include <sys/types.h>

#define RDP_PROTO "rdpipe-agent-1"
#define RDP_MAX_LINE (1u << 20)

struct rdp_chan {
    int rfd, wfd;
    char *buf;
    size_t len, cap;
    int eof;        /* the peer closed its end (or an error happened) */
};

void rdp_chan_init(struct rdp_chan *c, int rfd, int wfd);
void rdp_chan_free(struct rdp_chan *c);
/* Read what is available (one read). Returns bytes read, 0 at EOF or error (c->eof set),
 * -1 if it would block. */
ssize_t rdp_chan_fill(struct rdp_chan *c);
/* Take the next complete line out of the buffer into *out (malloc'd, no newline).
 * Returns 1 with a line, 0 if no complete line is buffered. */
int rdp_chan_line(struct rdp_chan *c, char **out);
/* Write one formatted line (the newline is added). 0 on success, -1 if the peer is gone. */
int rdp_send(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Hex helpers: encode n bytes into out (2n+1 chars, "-" for n == 0). */
char *rdp_hex(const void *p, size_t n);                 /* malloc'd */
char *rdp_hex_str(const char *s);                       /* malloc'd, s may be NULL */
char *rdp_unhex(const char *hex, size_t *n);            /* malloc'd, NUL-terminated; NULL if malformed */

/* Split a line into at most max words in place; returns the count. */
int rdp_split(char *line, char **w, int max);

#endif
