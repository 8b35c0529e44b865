/* io_fault.c - an LD_PRELOAD shim for rdbench.sh: reads or writes on files opened with O_DIRECT
 * fail with the errno RDB_IO_FAULT names ("pread:EIO", "pwrite:ENOSPC"), as a failing disk or
 * a full one would, or "pwrite:EINVAL" as a filesystem without O_DIRECT; every other call goes
 * through. rdbench --io must report the first two, and show only the last as a measurement the
 * filesystem does not offer.
 *   cc -shared -fPIC -o io_fault.so io_fault.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* errno for call ("pread", "pwrite") on fd, 0 to let it through */
static int fault(const char *call, int fd)
{
    const char *f = getenv("RDB_IO_FAULT");
    size_t n = strlen(call);
    if (!f || strncmp(f, call, n) || f[n] != ':')
        return 0;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || !(fl & O_DIRECT))
        return 0;
    f += n + 1;
    return !strcmp(f, "EIO") ? EIO : !strcmp(f, "ENOSPC") ? ENOSPC : !strcmp(f, "EINVAL") ? EINVAL : 0;
}

ssize_t pread(int fd, void *buf, size_t count, off_t off)
{
    static ssize_t (*real)(int, void *, size_t, off_t);
    int e = fault("pread", fd);
    if (e) {
        errno = e;
        return -1;
    }
    if (!real)
        real = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
    return real(fd, buf, count, off);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t off)
{
    static ssize_t (*real)(int, const void *, size_t, off_t);
    int e = fault("pwrite", fd);
    if (e) {
        errno = e;
        return -1;
    }
    if (!real)
        real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    return real(fd, buf, count, off);
}
