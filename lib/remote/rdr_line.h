/* rdr_line.h - rdpipe's control channel: one text line per message over a pipe or socket.
 *
 * Values that may contain spaces or arbitrary bytes (commands, paths, messages, keys) travel
 * hex-encoded, so a line is always "word word ...\n" and parsing is a split on spaces.
 */
#ifndef RDR_LINE_H
#define RDR_LINE_H

#include <stddef.h>
#include <sys/types.h>

#define RDR_PROTO "rdpipe-agent-1"
#define RDR_MAX_LINE (1u << 20)

struct rdr_chan {
    int rfd, wfd;
    char *buf;
    size_t off, len, cap;   /* buf[off, len): read, not yet taken as lines */
    int eof;        /* the peer closed its end (or an error happened) */
};

void rdr_chan_init(struct rdr_chan *c, int rfd, int wfd);
void rdr_chan_free(struct rdr_chan *c);
/* Read what is available (one read). Returns bytes read, 0 at EOF or error (c->eof set),
 * -1 if it would block, or if the buffer is full of complete lines (take them first). A line
 * longer than RDR_MAX_LINE ends the channel (c->eof). */
ssize_t rdr_chan_fill(struct rdr_chan *c);
/* Take the next complete line out of the buffer into *out (malloc'd, no newline).
 * Returns 1 with a line, 0 if no complete line is buffered. */
int rdr_chan_line(struct rdr_chan *c, char **out);
/* Write one formatted line (the newline is added). 0 on success, -1 if the peer is gone. */
int rdr_send(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Hex helpers: encode n bytes into out (2n+1 chars, "-" for n == 0). */
char *rdr_hex(const void *p, size_t n);                 /* malloc'd */
char *rdr_hex_str(const char *s);                       /* malloc'd, s may be NULL */
char *rdr_unhex(const char *hex, size_t *n);            /* malloc'd, NUL-terminated; NULL if malformed */
/* rdr_unhex for text an agent says that is shown to the user: every control byte (C0, DEL,
 * C1 as U+0080-U+009F or a lone 0x80-0x9f) and every byte that is not valid UTF-8 becomes
 * \ooo, so a hostile host's messages cannot move the cursor, clear the screen or end a
 * line early to forge one; printable UTF-8 (names in any script) stays, and so does a
 * backslash (rdcp shows a name's bad bytes as \ooo already). */
char *rdr_unhex_text(const char *hex);

/* The same for n bytes of text already at hand (a command as typed, shown in a message). */
char *rdr_printable(const char *text, size_t n);

/* A stat line's transport word as the tool said it: the agent writes its spaces as '-' (words
 * are space separated: "tcp, 3 streams" travels as "tcp,-3-streams"). Any byte but printable
 * ASCII becomes '?' (transports are named in ASCII; the text goes to the terminal). */
void rdr_stat_transport(const char *word, char *out, size_t n);

/* Split a line into at most max words in place; returns the count. */
int rdr_split(char *line, char **w, int max);

#endif
