#include "rd_io.h"

#include "rd_error.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIPE_IDLE_MS 5   /* a pipe that is quiet this long gets its partial chunk sent */

int rd_source_open(struct rd_source *s, const char *path, int direct)
{
    memset(s, 0, sizeof *s);
    if (!path || strcmp(path, "-") == 0) {
        s->fd = STDIN_FILENO;
        snprintf(s->name, sizeof s->name, "stdin");
    } else {
        snprintf(s->name, sizeof s->name, "%s", path);
        s->fd = open(path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
        if (s->fd < 0 && direct && errno == EINVAL)
            s->fd = open(path, O_RDONLY | O_CLOEXEC);   /* filesystem without O_DIRECT */
        else if (s->fd >= 0 && direct)
            s->is_direct = 1;
        if (s->fd < 0)
            return rd_fail(RD_EIO, "cannot open input file '%s': %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode)) {
        s->is_regular = 1;
        s->size = (uint64_t)st.st_size;
        posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    } else if (fstat(s->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        return rd_fail(RD_EIO, "input '%s' is a directory", s->name);
    }
    return RD_OK;
}

ssize_t rd_source_read(struct rd_source *s, void *buf, size_t cap)
{
    size_t got = 0;
    while (got < cap) {
        ssize_t n = read(s->fd, (char *)buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EINVAL && s->is_direct && got % 4096 == 0) {
            /* O_DIRECT refused this read (e.g. the unaligned tail): carry on buffered */
            fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) & ~O_DIRECT);
            s->is_direct = 0;
            continue;
        }
        if (n < 0) {
            rd_fail(RD_EIO, "cannot read %s: %s", s->name, strerror(errno));
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
        if (!s->is_regular && got < cap) {
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
    s->fd = -1;
}

int rd_sink_open(struct rd_sink *s, const char *path)
{
    memset(s, 0, sizeof *s);
    if (!path || strcmp(path, "-") == 0) {
        s->fd = STDOUT_FILENO;
        snprintf(s->name, sizeof s->name, "stdout");
    } else {
        snprintf(s->name, sizeof s->name, "%s", path);
        s->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        if (s->fd < 0)
            return rd_fail(RD_EIO, "cannot open output file '%s': %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode))
        s->is_regular = 1;
    return RD_OK;
}

int rd_sink_begin(struct rd_sink *s)
{
    if (s->is_regular && s->fd != STDOUT_FILENO && ftruncate(s->fd, 0))
        return rd_fail(RD_EIO, "cannot truncate %s: %s", s->name, strerror(errno));
    return RD_OK;
}

int rd_sink_write(struct rd_sink *s, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(s->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return rd_fail(RD_EIO, "cannot write %s: %s", s->name, strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return RD_OK;
}

int rd_sink_finish(struct rd_sink *s)
{
    if (s->sync && fdatasync(s->fd) && errno != EINVAL && errno != EROFS)
        return rd_fail(RD_EIO, "cannot flush %s: %s", s->name, strerror(errno));
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
    if (s->fd > STDERR_FILENO)
        close(s->fd);
    s->fd = -1;
}
