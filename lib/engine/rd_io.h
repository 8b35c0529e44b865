/* rd_io.h - where the stream comes from (stdin or a file) and where it goes (stdout or a file). */
#ifndef RD_IO_H
#define RD_IO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Parts of a custom producer's chunk that a lane reads itself: the producer writes the rest
 * of the chunk (rdcp: its records) and leaves these bytes to be read from a file at their
 * offset, by whichever lane then tags the chunk, so one big file is read by all lanes at
 * once. The producer must not reuse a file's descriptor before its reads are done
 * (engine/rd_defer: its wait, which ends too when the transfer fails). */
#define RD_DEFER_MAX 8
struct rd_defer {
    unsigned n;
    struct rd_defer_seg {
        uint32_t at;      /* where in the chunk's payload */
        uint32_t len;
        uint64_t off;     /* where in the file */
        int fd;
    } seg[RD_DEFER_MAX];
};

/* A source or sink may also be a producer/consumer in the same process (rdcp's tree
 * stream): set the *_fn hooks with rd_source_custom / rd_sink_custom. */
struct rd_source {
    /* custom producer: fill up to cap bytes, 0 = end, -1 = error (rd_fail recorded) */
    ssize_t (*read_fn)(void *ctx, void *buf, size_t cap);
    /* custom producer that defers reads (rd_source_defer_reads): on a lane, every deferred
     * part of the chunk whose payload is `payload`, before its tag. 0, or an rd_err that
     * fails the stream (rd_fail recorded); a producer that copes with a failed read itself
     * (rdcp skips the file) returns 0. */
    int (*lane_read_fn)(void *ctx, unsigned char *payload, const struct rd_defer *d);
    /* where read_fn lists what it deferred in this call (set by the engine around each call;
     * NULL: nothing may be deferred, read it all) */
    struct rd_defer *defer;
    void *ctx;
    int fd;
    int fd_direct;       /* regular files: the same file opened O_DIRECT, or -1 */
    int is_regular;      /* a regular file: read full chunks, size known */
    int is_direct;       /* --direct: every aligned read bypasses the page cache */
    uint64_t size;       /* regular files: size at open; else 0 */
    uint64_t offset;     /* regular files: next read position */
    _Atomic uint64_t direct_bytes, cached_bytes;   /* how the bytes were read (for -v) */
    atomic_int direct_refused;   /* the file refused O_DIRECT once: buffered from then on */
    atomic_int no_cachestat;     /* cachestat(2) refused this file: mincore(2) instead */
    atomic_int *stop;    /* set by the engine: a read that rd_wake interrupts gives up (or NULL) */
    char name[256];      /* "stdin" or the path, for messages */
};

struct rd_sink {
    /* custom consumer: take all n bytes, or return an rd_err (rd_fail recorded) */
    int (*write_fn)(void *ctx, const void *buf, size_t n);
    int (*finish_fn)(void *ctx);   /* the stream is complete and verified; may be NULL */
    void *ctx;
    int fd;
    int fd_direct;       /* --direct on a regular file: the same file opened O_DIRECT, or -1 */
    int dir_fd;          /* a file this sink created: its directory, fsynced with it; or -1 */
    int begun;           /* rd_sink_begin ran: a sender authenticated */
    int positioned;      /* every write is a pwrite at offset (--direct, rd_sink_parallel) */
    uint64_t offset;     /* with positioned: where the next byte goes */
    atomic_int direct_refused;   /* the file refused an O_DIRECT write: buffered from then on */
    int is_regular;
    int syncable;        /* a regular file or a block device: fdatasync makes it durable */
    int sync;            /* syncable: fdatasync (and a new file's directory) before confirming */
    int synced;          /* rd_sink_finish flushed it, in sync_seconds (for -v) */
    double sync_seconds;
    char name[256];
    const char *fifo_later;   /* a FIFO with no reader yet: opened (waiting for one) by rd_sink_begin */
    atomic_int *stop;    /* as in rd_source: a write that rd_wake interrupts gives up */
    /* set by the receive engine while write_fn runs: lends the frame that holds the bytes
     * (rd_sink_hold); NULL outside it */
    struct rd_hold *(*lend_fn)(void *lend_ctx);
    void *lend_ctx;
};

struct rd_hold;
/* From a custom sink's write_fn only: keep the bytes it was just handed valid after it
 * returns, until rd_hold_drop (engine/rd_hold.h), so they can be written on another thread
 * without a copy. NULL when they cannot be lent (a decompressed chunk lives in a buffer the
 * engine reuses; no engine, as in the fuzzer): then use them before returning. Each call is
 * one more hold on the same frame. */
struct rd_hold *rd_sink_hold(struct rd_sink *s);

/* path NULL or "-" = stdin. Regular files are read adaptively: what is in the page cache is
 * copied from there (preadv2 RWF_NOWAIT), what is not is read with O_DIRECT, which costs
 * far less CPU and does not evict the cache. direct = 1 uses O_DIRECT for everything. */
int rd_source_open(struct rd_source *s, const char *path, int direct);
/* Fill buf with up to cap bytes. Regular files: full reads. Pipes and sockets: as much as
 * arrives without a pause of more than a few milliseconds, so a slow producer's bytes still
 * flow promptly. Returns bytes read (0 = end of input) or -1 with rd_fail() recorded. */
ssize_t rd_source_read(struct rd_source *s, void *buf, size_t cap);
void rd_source_close(struct rd_source *s);
/* Regular files only: up to `want` bytes at `offset`, as rd_source_read reads them (cached
 * pages copied, others read with O_DIRECT), without touching s->offset: so lanes can read
 * the chunks of one file in parallel, each at its own offset. Returns bytes read (short only
 * at the end of the file) or -1 with rd_fail() recorded. Thread-safe. */
ssize_t rd_source_read_at(struct rd_source *s, void *buf, size_t want, uint64_t offset);
/* 1 when fd is a file of the kernel's pseudo filesystems (/proc, /sys, debugfs, cgroup, ...):
 * its size says nothing of what it holds (a sysfs attribute says 4096 and holds a line,
 * /proc/version says 0), so it is read to its end, as cat reads it. */
int rd_pseudo_file(int fd);
void rd_source_custom(struct rd_source *s, const char *name,
                      ssize_t (*read_fn)(void *ctx, void *buf, size_t cap), void *ctx);
/* A custom producer whose read_fn may leave parts of a chunk to lane_read_fn (struct rd_defer). */
void rd_source_defer_reads(struct rd_source *s,
                           int (*lane_read_fn)(void *ctx, unsigned char *payload, const struct rd_defer *d));

/* path NULL or "-" = stdout. Opens (creating) without truncating, so an unwritable path is
 * reported before any peer connects; rd_sink_begin truncates once a sender authenticated.
 * A path that did not exist keeps its directory open, to make the new name durable too. */
int rd_sink_open(struct rd_sink *s, const char *path);
/* Write whole aligned pages with O_DIRECT from now on (regular files only, not O_APPEND).
 * Every byte still goes to its own offset: what O_DIRECT cannot take (an unaligned head or
 * tail, a buffer whose alignment differs from the file offset's) is written buffered. */
void rd_sink_use_direct(struct rd_sink *s);
int rd_sink_begin(struct rd_sink *s);
/* All n bytes or an error (rd_fail recorded); a short or failed write is never skipped. */
int rd_sink_write(struct rd_sink *s, const void *buf, size_t n);
/* May the stream's chunks be written by many threads at once, each at its own offset, in any
 * order (the receiver's lanes)? Yes (1) for a regular file, FILE or stdout redirected to one,
 * unless it was opened O_APPEND (a shell's >>: every write goes to wherever the end is then):
 * the sink is then positioned and s->offset is where the stream's first byte goes (stdout may
 * be a file opened mid-way). No (0) for pipes, sockets, terminals, block devices and custom
 * sinks: rd_sink_write in order. */
int rd_sink_parallel(struct rd_sink *s);
/* Thread-safe: all n bytes at offset off, as rd_sink_write writes them (with --direct: the
 * whole aligned blocks with O_DIRECT), or an error (rd_fail recorded). s->offset is left to the
 * caller: advance it in order, so that rd_sink_finish leaves a shared stdout after our bytes. */
int rd_sink_write_at(struct rd_sink *s, const void *buf, size_t n, uint64_t off);
/* Make durable (with sync: fdatasync a regular file, fsync a new file's directory) and close;
 * error if anything failed. */
int rd_sink_finish(struct rd_sink *s);
void rd_sink_close(struct rd_sink *s);
void rd_sink_custom(struct rd_sink *s, const char *name,
                    int (*write_fn)(void *ctx, const void *buf, size_t n),
                    int (*finish_fn)(void *ctx), void *ctx);

#endif
