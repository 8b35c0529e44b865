/* rdb_io.c - the --io measurements of rdb_io.h: a scratch file in lanes, and a pipe.
 * Where it sits: rdbench --io on the client, and a bench server with --io when asked. */
#include "bench/rdb_io.h"

#include "util/rd_clock.h"
#include "util/rd_error.h"
#include "util/rd_thread.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LANES 64

struct lane {
    pthread_t th;
    int fd;
    int write;
    uint64_t off, len;
    uint8_t *buf;
    int err;   /* errno of the first failure, 0 */
};

static void *lane_main(void *arg)
{
    struct lane *l = arg;
    uint64_t done = 0;
    rd_thread_name("rdb-lane");
    while (done < l->len && !l->err) {
        size_t n = l->len - done < RDB_IO_BLOCK ? (size_t)(l->len - done) : RDB_IO_BLOCK;
        ssize_t r = l->write ? pwrite(l->fd, l->buf, n, (off_t)(l->off + done))
                             : pread(l->fd, l->buf, n, (off_t)(l->off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            l->err = r < 0 ? errno : EIO;   /* a read of 0 here: the file shrank */
        else
            done += (uint64_t)r;
    }
    return NULL;
}

/* One pass over the file with `lanes` threads; bytes per second, or 0 with *err set. */
static double pass(int fd, int write, uint64_t bytes, unsigned lanes, uint8_t **bufs, int sync, int *err)
{
    struct lane l[MAX_LANES];
    uint64_t per = bytes / lanes / RDB_IO_BLOCK * RDB_IO_BLOCK;
    unsigned started = 0;
    *err = 0;
    /* every write pass starts from an empty file, as rdrecv's output does: the filesystem
     * allocates in each, so 1 lane and N lanes pay the same */
    if (write && (ftruncate(fd, 0) || fdatasync(fd))) {
        *err = errno;
        return 0;
    }
    double t0 = rd_now();
    for (unsigned i = 0; i < lanes; i++) {
        l[i] = (struct lane){ .fd = fd, .write = write, .off = i * per,
                              .len = i + 1 == lanes ? bytes - i * per : per, .buf = bufs[i] };
        if (rd_thread_create(&l[i].th, NULL, lane_main, &l[i])) {
            *err = EAGAIN;
            break;
        }
        started++;
    }
    for (unsigned i = 0; i < started; i++) {
        pthread_join(l[i].th, NULL);
        if (l[i].err && !*err)
            *err = l[i].err;
    }
    if (!*err && sync && fdatasync(fd))
        *err = errno;
    double dt = rd_now() - t0;
    return *err || dt <= 0 ? 0 : (double)bytes / dt;
}

/* Share of the file's pages in the page cache, 0..1 (1 when it cannot be told). */
static double resident(int fd, uint64_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return 1;
    size_t pages = (bytes + (uint64_t)page - 1) / (uint64_t)page, in = 0;
    unsigned char *vec = malloc(pages);
    if (vec && mincore(m, bytes, vec) == 0)
        for (size_t i = 0; i < pages; i++)
            in += vec[i] & 1;
    else
        in = pages;
    free(vec);
    munmap(m, bytes);
    return pages ? (double)in / (double)pages : 1;
}

/* Drop the file from the page cache; 1 if it left. */
static int evict(int fd, uint64_t bytes)
{
    if (fdatasync(fd))
        return 0;
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    return resident(fd, bytes) < 0.1;
}

struct pipe_job {
    int fd;
    uint64_t bytes;
    uint8_t *buf;
    int err;
};

static void *pipe_writer(void *arg)
{
    struct pipe_job *j = arg;
    uint64_t done = 0;
    rd_thread_name("rdb-pipe");
    while (done < j->bytes) {
        size_t n = j->bytes - done < RDB_IO_BLOCK ? (size_t)(j->bytes - done) : RDB_IO_BLOCK;
        ssize_t r = write(j->fd, j->buf, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            j->err = errno;
            break;
        }
        done += (uint64_t)r;
    }
    close(j->fd);
    return NULL;
}

/* Bytes per second through a pipe: one thread writes 1 MiB at a time, this one reads; 0 with
 * *err set when the pipe or the thread cannot be had, or the bytes did not all come through. */
static double pipe_rate(uint64_t bytes, uint8_t *wbuf, uint8_t *rbuf, int *err)
{
    int p[2];
    *err = 0;
    if (pipe2(p, O_CLOEXEC)) {
        *err = errno;
        return 0;
    }
    struct pipe_job j = { .fd = p[1], .bytes = bytes, .buf = wbuf };
    pthread_t th;
    double t0 = rd_now();
    if (rd_thread_create(&th, NULL, pipe_writer, &j)) {
        close(p[0]);
        close(p[1]);
        *err = EAGAIN;
        return 0;
    }
    uint64_t got = 0;
    for (;;) {
        ssize_t r = read(p[0], rbuf, RDB_IO_BLOCK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            *err = errno;
        if (r <= 0)
            break;
        got += (uint64_t)r;
    }
    double dt = rd_now() - t0;
    close(p[0]);
    pthread_join(th, NULL);
    if (!*err)
        *err = j.err ? j.err : got != bytes ? EIO : 0;
    return !*err && dt > 0 ? (double)bytes / dt : 0;
}

/* What the filesystem does not offer: O_DIRECT on tmpfs (EINVAL before Linux 6.6) and
 * elsewhere (EOPNOTSUPP). Such a measurement stays 0 ("-"); any other failure (EIO, ENOSPC)
 * is the disk's or ours, and is the run's error. */
static int not_offered(int err)
{
    return err == EINVAL || err == EOPNOTSUPP;
}

static int io_fail(const char *what, const char *dir, int err)
{
    return rd_fail(RD_EIO, "--io %s: %s a scratch file there: %s", dir, what, strerror(err));
}

int rdb_io_measure(const char *dir, uint64_t bytes, unsigned lanes, struct rdb_io *out)
{
    memset(out, 0, sizeof *out);
    if (lanes < 1)
        lanes = 1;
    if (lanes > MAX_LANES)
        lanes = MAX_LANES;
    if (bytes < RDB_IO_MIN)
        bytes = RDB_IO_MIN;
    bytes = bytes / ((uint64_t)lanes * RDB_IO_BLOCK) * ((uint64_t)lanes * RDB_IO_BLOCK);
    if (!bytes)
        bytes = (uint64_t)lanes * RDB_IO_BLOCK;
    out->lanes = lanes;
    out->bytes = bytes;

    struct stat st;
    if (stat(dir, &st))
        return rd_fail(RD_EIO, "--io %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return rd_fail(RD_EIO, "--io %s: not a directory (rdbench writes a scratch file inside it)", dir);
    char path[4096];
    if (snprintf(path, sizeof path, "%s/.rdbench-io.XXXXXX", dir) >= (int)sizeof path)
        return rd_fail(RD_EIO, "--io %s: path too long", dir);
    int fd = mkstemp(path);
    if (fd < 0)
        return rd_fail(RD_EIO, "cannot create a scratch file in %s: %s", dir, strerror(errno));
    uint8_t *bufs[MAX_LANES] = { 0 };
    int rc = RD_OK, err, dfd = -1;
    for (unsigned i = 0; i < lanes; i++) {
        if (posix_memalign((void **)&bufs[i], 4096, RDB_IO_BLOCK)) {
            rc = rd_fail(RD_EIO, "out of memory");
            goto out;
        }
        /* incompressible bytes, so a compressing filesystem shows its real speed */
        uint64_t x = 0x9e3779b97f4a7c15ull * (i + 1);
        for (size_t k = 0; k < RDB_IO_BLOCK; k += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(bufs[i] + k, &x, 8);
        }
    }
    /* buffered writes, flushed as rdrecv flushes before it confirms */
    out->bps[RDB_IO_WRITE_1] = (uint64_t)pass(fd, 1, bytes, 1, bufs, 1, &err);
    if (!err)
        out->bps[RDB_IO_WRITE_N] = (uint64_t)pass(fd, 1, bytes, lanes, bufs, 1, &err);
    if (err) {
        rc = rd_fail(RD_EIO, "writing %llu bytes to a scratch file in %s: %s", (unsigned long long)bytes,
                     dir, strerror(err));
        goto out;
    }
    dfd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
    if (dfd < 0 && !not_offered(errno)) {
        rc = io_fail("opening (O_DIRECT)", dir, errno);
        goto out;
    }
    if (dfd >= 0) {
        out->bps[RDB_IO_WRITE_DIRECT_1] = (uint64_t)pass(dfd, 1, bytes, 1, bufs, 1, &err);
        if (!err)
            out->bps[RDB_IO_WRITE_DIRECT_N] = (uint64_t)pass(dfd, 1, bytes, lanes, bufs, 1, &err);
        if (err && !not_offered(err)) {
            rc = io_fail("writing (O_DIRECT)", dir, err);
            goto out;
        }
        if (err)   /* not offered, and the pass emptied the file first: fill it for the reads */
            pass(fd, 1, bytes, lanes, bufs, 1, &err);
        if (err) {
            rc = io_fail("writing", dir, err);
            goto out;
        }
    }
    if (evict(fd, bytes))   /* a file that will not leave the cache (tmpfs) is not read "not cached" */
        out->bps[RDB_IO_READ_COLD_1] = (uint64_t)pass(fd, 0, bytes, 1, bufs, 0, &err);
    if (!err && evict(fd, bytes))
        out->bps[RDB_IO_READ_COLD_N] = (uint64_t)pass(fd, 0, bytes, lanes, bufs, 0, &err);
    if (!err)
        pass(fd, 0, bytes, lanes, bufs, 0, &err);   /* bring it all in */
    if (!err)
        out->bps[RDB_IO_READ_CACHED] = (uint64_t)pass(fd, 0, bytes, 1, bufs, 0, &err);
    if (err) {
        rc = io_fail("reading", dir, err);
        goto out;
    }
    if (dfd >= 0) {
        out->bps[RDB_IO_READ_DIRECT_1] = (uint64_t)pass(dfd, 0, bytes, 1, bufs, 0, &err);
        if (!err)
            out->bps[RDB_IO_READ_DIRECT_N] = (uint64_t)pass(dfd, 0, bytes, lanes, bufs, 0, &err);
        if (err && !not_offered(err)) {
            rc = io_fail("reading (O_DIRECT)", dir, err);
            goto out;
        }
    }
    if (lanes < 2 && !(bufs[1] = malloc(RDB_IO_BLOCK))) {
        rc = rd_fail(RD_EIO, "out of memory");
        goto out;
    }
    out->bps[RDB_IO_PIPE] = (uint64_t)pipe_rate(bytes < (1ull << 30) ? bytes : (1ull << 30), bufs[0], bufs[1], &err);
    if (err)
        rc = rd_fail(RD_EIO, "--io: a pipe between two threads: %s", strerror(err));
out:
    if (dfd >= 0)
        close(dfd);
    close(fd);
    unlink(path);
    for (unsigned i = 0; i < MAX_LANES; i++)
        free(bufs[i]);
    return rc;
}
