/* rd_io.h - where the stream comes from (stdin or a file) and where it goes (stdout or a file). */
#ifndef RD_IO_H
#define RD_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rd_source {
    int fd;
    int is_regular;      /* a regular file: read full chunks, size known */
    int is_direct;       /* opened with O_DIRECT */
    uint64_t size;       /* regular files: size at open; else 0 */
    char name[256];      /* "stdin" or the path, for messages */
};

struct rd_sink {
    int fd;
    int is_regular;
    int sync;            /* fdatasync before confirming */
    char name[256];
};

/* path NULL or "-" = stdin. direct: try O_DIRECT on regular files (falls back quietly). */
int rd_source_open(struct rd_source *s, const char *path, int direct);
/* Fill buf with up to cap bytes. Regular files: full reads. Pipes and sockets: as much as
 * arrives without a pause of more than a few milliseconds, so a slow producer's bytes still
 * flow promptly. Returns bytes read (0 = end of input) or -1 with rd_fail() recorded. */
ssize_t rd_source_read(struct rd_source *s, void *buf, size_t cap);
void rd_source_close(struct rd_source *s);

/* path NULL or "-" = stdout. Opens (creating) without truncating, so an unwritable path is
 * reported before any peer connects; rd_sink_begin truncates once a sender authenticated. */
int rd_sink_open(struct rd_sink *s, const char *path);
int rd_sink_begin(struct rd_sink *s);
int rd_sink_write(struct rd_sink *s, const void *buf, size_t n);
/* Flush (fdatasync with sync) and close; error if anything failed. */
int rd_sink_finish(struct rd_sink *s);
void rd_sink_close(struct rd_sink *s);

#endif
