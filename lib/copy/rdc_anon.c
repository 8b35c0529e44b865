/* rdc_anon.c - see rdc_anon.h. */
#include "copy/rdc_anon.h"
#include "copy/rdc_safe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int rdc_anon_open(int dfd, mode_t mode)
{
    static atomic_int off = -1;   /* -1 not yet known, 1 RDCP_NO_TMPFILE or no O_TMPFILE here */
    /* without /proc (a bare chroot) an unprivileged process could not name the file later */
    if (atomic_load(&off) < 0)
        atomic_store(&off, getenv("RDCP_NO_TMPFILE") || access("/proc/self/fd", X_OK) ? 1 : 0);
    if (atomic_load(&off)) {
        errno = EOPNOTSUPP;
        return -1;
    }
    int fd = openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
    if (fd >= 0)
        (void)rdc_tmp_lock(fd);   /* it may get a temporary name (rdc_anon_replace) */
    /* kernels before 3.11 take O_TMPFILE for O_DIRECTORY (EISDIR); filesystems without it
     * say EOPNOTSUPP: try no more in this process */
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR))
        atomic_store(&off, 1);
    return fd;
}

int rdc_anon_link(int fd, int dfd, const char *name)
{
    /* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH (ENOENT without it); /proc/self/fd/N does not,
     * and names the same open file (AT_SYMLINK_FOLLOW follows the magic link to it, not a
     * path); the new name is always one component in dfd and is never followed */
    static atomic_int no_empty;
    if (!atomic_load(&no_empty)) {
        if (linkat(fd, "", dfd, name, AT_EMPTY_PATH) == 0)
            return 0;
        if (errno != ENOENT && errno != EPERM)
            return -1;
        atomic_store(&no_empty, 1);
    }
    char p[40];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, p, dfd, name, AT_SYMLINK_FOLLOW);
}

static int link_cb(int dfd, const char *t, void *arg)
{
    return rdc_anon_link(*(int *)arg, dfd, t);
}

int rdc_anon_replace(int fd, int dfd, const char *name, const char **what)
{
    char *tmp = NULL;
    int e;
    if (rdc_tmp_try(dfd, name, &tmp, link_cb, &fd) < 0) {
        e = errno;
        *what = "cannot create a file in the directory of";
        close(fd);
        goto fail;
    }
    if (close(fd)) {   /* a late write error: the old file stays as it was */
        e = errno;
        *what = "cannot write";
        goto fail_named;
    }
    if (renameat(dfd, tmp, dfd, name)) {
        e = errno;
        *what = "cannot rename into place";
        goto fail_named;
    }
    free(tmp);
    return 0;
fail_named:
    unlinkat(dfd, tmp, 0);
fail:
    free(tmp);
    errno = e;
    return -1;
}
