#include "engine/rd_io.h"
#include "util/rd_clock.h"

#include "util/rd_error.h"
#include "util/rd_stdfd.h"
#include "wire/rd_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define PIPE_SIZE (1 << 20)   /* what we ask of stdin/stdout pipes (pipe-max-size allows 1 MiB) */
#define PIPE_IDLE_MS 5   /* a pipe that is quiet this long gets its partial chunk sent */
#define DIO_ALIGN 4096u  /* O_DIRECT: buffer address, file offset and length in whole 4 KiB */

/* Files of the kernel's pseudo filesystems (/proc, /sys, ...) are made when read: their
 * size is a guess (a sysfs attribute says 4096 and holds a line), so they are read as a
 * stream, to the end, as cat reads them, not chunk by chunk up to that size. */
int rd_pseudo_file(int fd)
{
    static const uint32_t magic[] = { PROC_SUPER_MAGIC, SYSFS_MAGIC, DEBUGFS_MAGIC, TRACEFS_MAGIC,
                                      SECURITYFS_MAGIC, CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
                                      BPF_FS_MAGIC, EFIVARFS_MAGIC, PSTOREFS_MAGIC,
                                      0x62656570 /* configfs */ };
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0)
        return 0;
    for (size_t i = 0; i < sizeof magic / sizeof magic[0]; i++)
        if ((uint32_t)fs.f_type == magic[i])
            return 1;
    return 0;
}

int rd_source_open(struct rd_source *s, const char *path, int direct)
{
    memset(s, 0, sizeof *s);
    s->fd_direct = -1;
    if (!path || strcmp(path, "-") == 0) {
        s->fd = STDIN_FILENO;
        snprintf(s->name, sizeof s->name, "stdin");
        int fl = fcntl(STDIN_FILENO, F_GETFL);   /* before connecting, as cat <&- or 0>>f fails */
        if (rd_stdfd_was_closed(STDIN_FILENO) || (fl >= 0 && (fl & O_ACCMODE) == O_WRONLY))
            return rd_fail(RD_EIO, "cannot read stdin: %s", strerror(EBADF));
    } else {
        snprintf(s->name, sizeof s->name, "%s", path);
        s->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (s->fd < 0)
            return rd_fail(RD_EIO, "cannot open input file '%s': %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(s->fd, &st) != 0)
        return RD_OK;   /* read as a stream; read() will say what is wrong */
    if (S_ISDIR(st.st_mode))
        return rd_fail(RD_EIO, "input '%s' is a directory", s->name);
    if (S_ISFIFO(st.st_mode))
        fcntl(s->fd, F_SETPIPE_SZ, PIPE_SIZE);   /* fewer, larger reads; best effort */
    if (S_ISREG(st.st_mode) && !rd_pseudo_file(s->fd)) {
        s->is_regular = 1;
        s->size = (uint64_t)st.st_size;
        s->offset = (uint64_t)lseek(s->fd, 0, SEEK_CUR);   /* stdin may be a file opened mid-way */
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", s->fd);
        s->fd_direct = open(self, O_RDONLY | O_CLOEXEC | O_DIRECT);   /* -1: fs without O_DIRECT */
        s->is_direct = direct && s->fd_direct >= 0;
    }
    return RD_OK;
}

static long page_size(void)
{
    static _Atomic long page;   /* lanes ask at once */
    long p = atomic_load_explicit(&page, memory_order_relaxed);
    if (!p) {
        p = sysconf(_SC_PAGESIZE);
        atomic_store_explicit(&page, p, memory_order_relaxed);
    }
    return p;
}

/* Are the pages of this mapping in the page cache? mincore() touches none of them, so
 * nothing is read (preadv2 RWF_NOWAIT would start readahead as a side effect). */
static int resident(void *m, size_t len)
{
    long page = page_size();
    size_t pages = (len + (size_t)page - 1) / (size_t)page;
    unsigned char vec[4096];
    if (pages > sizeof vec)
        pages = sizeof vec;   /* the first 16 MiB decide for the rest of the read */
    int cached = mincore(m, pages * (size_t)page, vec) == 0;
    for (size_t i = 0; cached && i < pages; i++)
        cached = vec[i] & 1;
    return cached;
}

#ifndef __NR_cachestat
#define __NR_cachestat 451   /* the same number on every architecture but alpha */
#endif

/* cachestat(2), Linux 6.5 (not in Debian 12's headers or glibc). */
struct rd_cachestat_range {
    uint64_t off, len;
};
struct rd_cachestat {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/* Is the whole range in the page cache? cachestat walks the page cache's tree once and needs
 * no mapping; without it (a kernel before 6.5, or a file the caller may not write, which
 * cachestat refuses as mincore hides it) mincore() on a throw-away mapping, which costs an
 * mmap, a lookup per page and a munmap (with its TLB shootdown) for every read. */
static int range_cached(struct rd_source *s, uint64_t off, size_t len)
{
    static atomic_int no_cachestat;   /* ENOSYS: the kernel has none */
    if (!atomic_load_explicit(&no_cachestat, memory_order_relaxed) &&
        !atomic_load_explicit(&s->no_cachestat, memory_order_relaxed)) {
        struct rd_cachestat_range r = { off, len };
        struct rd_cachestat cs;
        if (syscall(__NR_cachestat, s->fd, &r, &cs, 0) == 0)
            return cs.nr_cache >= (len + (size_t)page_size() - 1) / (size_t)page_size();
        atomic_store_explicit(errno == ENOSYS ? &no_cachestat : &s->no_cachestat, 1, memory_order_relaxed);
    }
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, s->fd, (off_t)off);
    if (m == MAP_FAILED)
        return 1;
    int cached = resident(m, len);
    munmap(m, len);
    return cached;
}

static int stopped(atomic_int *stop);

/* One read of a regular file at off into buf: through the page cache where the range is
 * cached (or cannot go direct), else around it with O_DIRECT. */
static ssize_t read_regular(struct rd_source *s, char *buf, size_t want, uint64_t off)
{
    int aligned = s->fd_direct >= 0 && !atomic_load(&s->direct_refused) && ((uintptr_t)buf % 4096) == 0 &&
                  off % 4096 == 0 && want >= 4096 && off + 4096 <= __atomic_load_n(&s->size, __ATOMIC_RELAXED);
    if (!aligned || (!s->is_direct && range_cached(s, off, want))) {
        ssize_t n = pread(s->fd, buf, want, (off_t)off);
        if (n > 0)
            atomic_fetch_add(&s->cached_bytes, (uint64_t)n);
        return n;
    }
    /* not in the page cache (or --direct): straight from the device */
    ssize_t n = pread(s->fd_direct, buf, want & ~(size_t)4095, (off_t)off);
    if (n < 0 && errno == EINVAL) {   /* this file refuses O_DIRECT after all */
        atomic_store(&s->direct_refused, 1);
        n = pread(s->fd, buf, want, (off_t)off);
        if (n > 0)
            atomic_fetch_add(&s->cached_bytes, (uint64_t)n);
        return n;
    }
    if (n > 0)
        atomic_fetch_add(&s->direct_bytes, (uint64_t)n);
    return n;
}

ssize_t rd_source_read_at(struct rd_source *s, void *buf, size_t want, uint64_t offset)
{
    size_t got = 0;
    while (got < want) {
        ssize_t n = read_regular(s, (char *)buf + got, want - got, offset + got);
        if (n < 0 && errno == EINTR && stopped(s->stop))
            return -1;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rd_fail(RD_EIO, "cannot read %s: %s", s->name, strerror(errno));
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

void rd_source_custom(struct rd_source *s, const char *name,
                      ssize_t (*read_fn)(void *ctx, void *buf, size_t cap), void *ctx)
{
    memset(s, 0, sizeof *s);
    s->fd = s->fd_direct = -1;
    s->read_fn = read_fn;
    s->ctx = ctx;
    snprintf(s->name, sizeof s->name, "%s", name);
}

void rd_source_defer_reads(struct rd_source *s,
                           int (*lane_read_fn)(void *ctx, unsigned char *payload, const struct rd_defer *d))
{
    s->lane_read_fn = lane_read_fn;
}

void rd_sink_custom(struct rd_sink *s, const char *name,
                    int (*write_fn)(void *ctx, const void *buf, size_t n),
                    int (*finish_fn)(void *ctx), void *ctx)
{
    memset(s, 0, sizeof *s);
    s->fd = s->fd_direct = s->dir_fd = -1;
    s->write_fn = write_fn;
    s->finish_fn = finish_fn;
    s->ctx = ctx;
    snprintf(s->name, sizeof s->name, "%s", name);
}

struct rd_hold *rd_sink_hold(struct rd_sink *s)
{
    return s->lend_fn ? s->lend_fn(s->lend_ctx) : NULL;
}

static int stopped(atomic_int *stop)
{
    return stop && atomic_load(stop);
}

ssize_t rd_source_read(struct rd_source *s, void *buf, size_t cap)
{
    if (s->read_fn)
        return s->read_fn(s->ctx, buf, cap);
    if (s->is_regular) {   /* full reads, at s->offset */
        ssize_t n = rd_source_read_at(s, buf, cap, s->offset);
        if (n > 0)
            s->offset += (uint64_t)n;
        return n;
    }
    size_t got = 0;
    while (got < cap) {
        ssize_t n = read(s->fd, (char *)buf + got, cap - got);
        if (n < 0 && errno == EINTR && stopped(s->stop))
            return -1;   /* the transfer failed elsewhere and said why */
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rd_fail(RD_EIO, "cannot read %s: %s", s->name, strerror(errno));
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
        if (got < cap) {
            struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
            if (poll(&pfd, 1, PIPE_IDLE_MS) == 0)
                break;
        }
    }
    return (ssize_t)got;
}

void rd_source_close(struct rd_source *s)
{
    if (s->fd > STDERR_FILENO)
        close(s->fd);
    if (s->fd_direct >= 0)
        close(s->fd_direct);
    s->fd = s->fd_direct = -1;
}

/* The directory a new file's name lives in, opened so that fsync can make the name durable;
 * -1 when it cannot be opened (then only the file's data is synced). */
static int open_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    size_t len = slash == path ? 1 : (size_t)(slash - path);
    char *dir = strndup(path, len);
    if (!dir)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    return fd;
}

int rd_sink_open(struct rd_sink *s, const char *path)
{
    memset(s, 0, sizeof *s);
    s->fd_direct = s->dir_fd = -1;
    if (!path || strcmp(path, "-") == 0) {
        s->fd = STDOUT_FILENO;
        snprintf(s->name, sizeof s->name, "stdout");
        if (rd_stdfd_was_closed(STDOUT_FILENO))   /* before anyone connects */
            return rd_fail(RD_EIO, "cannot write stdout: %s", strerror(EBADF));
        int fl = fcntl(STDOUT_FILENO, F_GETFL);
        if (fl >= 0 && (fl & O_ACCMODE) == O_RDONLY)   /* '1< file': as closed, for writing */
            return rd_fail(RD_EIO, "cannot write stdout: it is open for reading only");
    } else {
        snprintf(s->name, sizeof s->name, "%s", path);
        /* a FIFO whose reader has not come yet: opening it would block before we even listen
         * (and --timeout, --ready-fd with it); it is opened once a sender is in */
        struct stat pre;
        if (stat(path, &pre) == 0 && S_ISFIFO(pre.st_mode)) {
            s->fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
            if (s->fd < 0 && errno == ENXIO) {
                s->fifo_later = path;
                return RD_OK;
            }
            if (s->fd >= 0)
                fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) & ~O_NONBLOCK);
        } else {
            /* O_EXCL first: only a name this run created needs its directory synced */
            s->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (s->fd >= 0)
                s->dir_fd = open_parent(path);
            else if (errno == EEXIST)
                s->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        }
        if (s->fd < 0)
            return rd_fail(RD_EIO, "cannot open output file '%s': %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(s->fd, &st) == 0) {
        s->is_regular = S_ISREG(st.st_mode);
        s->syncable = S_ISREG(st.st_mode) || S_ISBLK(st.st_mode);   /* pipes, sockets, ttys: nothing to sync */
        if (S_ISFIFO(st.st_mode))
            fcntl(s->fd, F_SETPIPE_SZ, PIPE_SIZE);
    }
    return RD_OK;
}

void rd_sink_use_direct(struct rd_sink *s)
{
    int fl = fcntl(s->fd, F_GETFL);
    /* O_APPEND (a shell's >>): the bytes go wherever the end is then, not to an offset we know */
    if (!s->is_regular || s->fd_direct >= 0 || fl < 0 || (fl & O_APPEND))
        return;
    off_t pos = lseek(s->fd, 0, SEEK_CUR);   /* stdout may be a file opened mid-way */
    if (pos < 0)
        return;
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", s->fd);
    s->fd_direct = open(self, O_WRONLY | O_CLOEXEC | O_DIRECT);
    s->offset = (uint64_t)pos;
    s->positioned = 1;   /* from now on both descriptors write at s->offset, never at the fd's position */
}

int rd_sink_begin(struct rd_sink *s)
{
    s->begun = 1;
    if (s->fifo_later) {   /* until its reader comes, as a write to a full pipe waits for it */
        do
            s->fd = open(s->fifo_later, O_WRONLY | O_CLOEXEC);
        while (s->fd < 0 && errno == EINTR && !(s->stop && atomic_load(s->stop)));
        if (s->fd < 0)   /* stopped: the reason (a signal) is recorded already */
            return rd_fail(RD_EIO, "cannot open output file '%s': %s", s->fifo_later, strerror(errno));
        s->fifo_later = NULL;
        fcntl(s->fd, F_SETPIPE_SZ, PIPE_SIZE);
    }
    if (s->is_regular && s->fd != STDOUT_FILENO && ftruncate(s->fd, 0))
        return rd_fail(RD_EIO, "cannot truncate %s: %s", s->name, strerror(errno));
    return RD_OK;
}

/* The next piece of p[0..n) to write at s->offset, and whether O_DIRECT can take it. Only
 * when the buffer and the file offset sit at the same place within a block can blocks of
 * both line up: then the head up to the next block boundary goes buffered, the whole blocks
 * after it direct, the ragged tail buffered. Otherwise all of it goes buffered. */
static size_t next_piece(struct rd_sink *s, const char *p, size_t n, uint64_t off, int *direct)
{
    *direct = 0;
    if (s->fd_direct < 0 || atomic_load(&s->direct_refused))
        return n;
    size_t phase = (size_t)(off % DIO_ALIGN);
    if (phase != (uintptr_t)p % DIO_ALIGN)
        return n;
    if (phase)
        return n < DIO_ALIGN - phase ? n : DIO_ALIGN - phase;
    if (n < DIO_ALIGN)
        return n;
    *direct = 1;
    return n & ~(size_t)(DIO_ALIGN - 1);
}

/* Pipes get write(), one copy into the pipe's pages. Measured and dropped: vmsplice from the
 * receive buffer (2 GiB in 1 MiB chunks into `cat > /dev/null`: 0.09 writer CPU s per GB
 * against 0.20 for write()). The pipe then holds our pages, not a copy, and nothing tells
 * when its reader is done with them: FIONREAD says what left the pipe, but a reader that
 * splices it on (pv, a relay to a socket, tee) passes our pages along, and reusing the buffer
 * rewrote bytes already "consumed" (shown with a splice(2) reader: wrong output). Safe only
 * with a buffer never reused (a fresh mapping per chunk, unmapped once spliced): 0.39 CPU s
 * per GB, twice write()'s. */
/* Write p[0..n) at *off (advanced as it goes): pwrite where positional, else write() (a pipe).
 * A file that refuses O_DIRECT after all gets the same bytes again, buffered, same offset; the
 * direct descriptor stays open until rd_sink_finish, as other lanes may be using it. */
static int write_span(struct rd_sink *s, const char *p, size_t n, uint64_t *off, int positional)
{
    while (n) {
        int direct;
        size_t len = next_piece(s, p, n, *off, &direct);
        ssize_t w = direct       ? pwrite(s->fd_direct, p, len, (off_t)*off)
                    : positional ? pwrite(s->fd, p, len, (off_t)*off)
                                 : write(s->fd, p, len);
        if (w < 0 && errno == EINTR && stopped(s->stop))
            return rd_error_or(RD_EIO);   /* the transfer failed elsewhere and said why */
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && direct && errno == EINVAL) {
            atomic_store(&s->direct_refused, 1);
            continue;
        }
        if (w < 0)
            return rd_fail(RD_EIO, "cannot write %s: %s", s->name, strerror(errno));
        if (w == 0)   /* no error and no progress: never loop on it, never skip it */
            return rd_fail(RD_EIO, "cannot write %s: it took 0 of %zu bytes", s->name, len);
        p += w;
        n -= (size_t)w;
        *off += (uint64_t)w;
    }
    return RD_OK;
}

int rd_sink_write(struct rd_sink *s, const void *buf, size_t n)
{
    if (s->write_fn)
        return s->write_fn(s->ctx, buf, n);
    uint64_t off = s->offset;
    int rc = write_span(s, buf, n, &off, s->positioned);
    s->offset = off;
    return rc;
}

int rd_sink_parallel(struct rd_sink *s)
{
    if (s->write_fn || !s->is_regular)
        return 0;
    int fl = fcntl(s->fd, F_GETFL);
    if (fl < 0 || (fl & O_APPEND))
        return 0;
    if (!s->positioned) {
        off_t pos = lseek(s->fd, 0, SEEK_CUR);   /* stdout may be a file opened mid-way */
        if (pos < 0)
            return 0;
        s->offset = (uint64_t)pos;
        s->positioned = 1;
    }
    return 1;
}

int rd_sink_write_at(struct rd_sink *s, const void *buf, size_t n, uint64_t off)
{
    return write_span(s, buf, n, &off, 1);
}

/* fsync-family failures that mean "nothing to sync here" rather than "not durable" */
static int sync_failed(int rc)
{
    return rc && errno != EINVAL && errno != EROFS;
}

int rd_sink_finish(struct rd_sink *s)
{
    if (s->write_fn)
        return s->finish_fn ? s->finish_fn(s->ctx) : RD_OK;
    if (s->fd_direct >= 0) {
        close(s->fd_direct);
        s->fd_direct = -1;
    }
    if (s->positioned)
        lseek(s->fd, (off_t)s->offset, SEEK_SET);   /* a shared stdout continues after our bytes */
    if (s->sync && s->syncable) {
        double t0 = rd_now();
        if (sync_failed(fdatasync(s->fd)))
            return rd_fail(RD_EIO, "cannot flush %s: %s", s->name, strerror(errno));
        if (s->dir_fd >= 0 && sync_failed(fsync(s->dir_fd)))
            return rd_fail(RD_EIO, "cannot flush the directory of %s: %s", s->name, strerror(errno));
        s->synced = 1;
        s->sync_seconds = rd_now() - t0;
    }
    if (s->dir_fd >= 0) {
        close(s->dir_fd);
        s->dir_fd = -1;
    }
    if (s->fd > STDERR_FILENO) {
        int rc = close(s->fd);
        s->fd = -1;
        if (rc)
            return rd_fail(RD_EIO, "cannot close %s: %s", s->name, strerror(errno));
    }
    return RD_OK;
}

void rd_sink_close(struct rd_sink *s)
{
    if (s->positioned && s->fd >= 0 && s->fd <= STDERR_FILENO)
        lseek(s->fd, (off_t)s->offset, SEEK_SET);   /* a failed transfer too: after what was written */
    if (s->fd > STDERR_FILENO)
        close(s->fd);
    if (s->fd_direct >= 0)
        close(s->fd_direct);
    if (s->dir_fd >= 0)
        close(s->dir_fd);
    s->fd = s->fd_direct = s->dir_fd = -1;
}
