/* rdc_safe.c - see rdc_safe.h. */
#include "copy/rdc_safe.h"
#include "util/rd_error.h"
#include "copy/rdc_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xxhash.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

const char *rdc_name_bad(const char *p, size_t n)
{
    if (n == 0)
        return "empty name";
    if (memchr(p, '\0', n))
        return "NUL byte in the name";
    if (p[0] == '/')
        return "absolute path";
    for (size_t i = 0; i <= n;) {
        size_t j = i;
        while (j < n && p[j] != '/')
            j++;
        size_t k = j - i;
        if (k == 0)
            return "empty path component";
        if (k == 1 && p[i] == '.')
            return "'.' component";
        if (k == 2 && p[i] == '.' && p[i + 1] == '.')
            return "'..' component";
        i = j + 1;
    }
    return NULL;
}

/* -1 unknown, 0 the kernel has no openat2 (or RDCP_NO_OPENAT2 is set, for the tests), 1 has */
static int have_openat2 = -1;

static int walk_open(int base, const char *rel)
{
    int fd = fcntl(base, F_DUPFD_CLOEXEC, 0);
    const char *p = rel;
    while (fd >= 0 && *p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char *c = strndup(p, n);
        if (!c) {
            close(fd);
            errno = ENOMEM;
            return -1;
        }
        int nfd = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e2 = errno;
        free(c);
        close(fd);
        errno = e2;
        fd = nfd;
        p += n;
        while (*p == '/')
            p++;
    }
    return fd;
}

/* rel of PATH_MAX bytes or more (a tree deeper than the kernel resolves in one call): its
 * first part up to a '/' below PATH_MAX, then the rest beneath that */
static int open_long(int base, const char *rel, size_t len)
{
    size_t cut = PATH_MAX - 1;
    while (cut > 0 && rel[cut] != '/')
        cut--;
    if (cut == 0) {   /* one component longer than any name */
        errno = ENAMETOOLONG;
        return -1;
    }
    char *head = strndup(rel, cut);
    if (!head) {
        errno = ENOMEM;
        return -1;
    }
    int fd = rdc_open_beneath(base, head);
    free(head);
    if (fd < 0 || cut + 1 >= len)
        return fd;
    int sub = rdc_open_beneath(fd, rel + cut + 1);
    int e = errno;
    close(fd);
    errno = e;
    return sub;
}

int rdc_open_beneath(int base, const char *rel)
{
    if (!*rel)
        return fcntl(base, F_DUPFD_CLOEXEC, 0);
    size_t len = strlen(rel);
    if (len >= PATH_MAX)
        return open_long(base, rel, len);
    if (have_openat2 < 0)
        have_openat2 = getenv("RDCP_NO_OPENAT2") ? 0 : 1;
    if (have_openat2) {
        struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
        long fd = -1;
        for (int i = 0; i < 64; i++) {   /* EAGAIN: a rename raced the lookup, try again */
            fd = syscall(SYS_openat2, base, rel, &how, sizeof how);
            if (fd >= 0 || errno != EAGAIN)
                break;
        }
        if (fd >= 0 || (errno != ENOSYS && errno != EAGAIN))
            return (int)fd;
        if (errno == ENOSYS)
            have_openat2 = 0;
    }
    return walk_open(base, rel);
}

int rdc_tmp_try(int dfd, const char *name, char **tmp, int (*make)(int dfd, const char *t, void *arg), void *arg)
{
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    char *key = rdc_tmp_key(name);
    size_t len = strlen(RDC_TMP_PREFIX) + strlen(key) + 8 + 1;
    char *t = malloc(len);
    if (!t) {
        free(key);
        errno = ENOMEM;
        return -1;
    }
    for (int tries = 0; tries < 100; tries++) {
        unsigned char rnd[6];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
            uint64_t x = (uint64_t)getpid() * 2654435761u + (uint64_t)tries * 40503u + (uint64_t)(uintptr_t)t;
            memcpy(rnd, &x, sizeof rnd);
        }
        char sfx[7];
        for (int i = 0; i < 6; i++)
            sfx[i] = al[rnd[i] % (sizeof al - 1)];
        sfx[6] = '\0';
        snprintf(t, len, RDC_TMP_PREFIX "%s.%s", key, sfx);
        int rc = make(dfd, t, arg);
        if (rc >= 0) {
            free(key);
            *tmp = t;
            return rc;
        }
        if (errno != EEXIST)
            break;
    }
    int e = errno;
    free(key);
    free(t);
    errno = e;
    return -1;
}

static int create_excl(int dfd, const char *t, void *arg)
{
    int fd = openat(dfd, t, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, *(mode_t *)arg);
    if (fd >= 0)
        (void)rdc_tmp_lock(fd);   /* new: nobody else holds it */
    return fd;
}

int rdc_tmp_lock(int fd)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)
        return 0;
    errno = EBUSY;
    return -1;
}

int rdc_open_noatime(int dfd, const char *name, int flags, int *denied)
{
    if (!*denied) {
        int fd = openat(dfd, name, flags | O_NOATIME);
        if (fd >= 0 || errno != EPERM)
            return fd;
        *denied = 1;
    }
    return openat(dfd, name, flags);
}

char *rdc_tmp_key(const char *name)
{
    size_t n = strlen(name);
    /* A long NAME's key is RDC_TMP_KEEP + 1 bytes: no name that is kept whole can equal it. */
    char *k = malloc(n <= RDC_TMP_KEEP ? n + 1 : RDC_TMP_KEEP + 2);
    if (!k)
        rd_oom();
    if (n <= RDC_TMP_KEEP) {
        memcpy(k, name, n + 1);
    } else {
        memcpy(k, name, RDC_TMP_KEEP - 16);
        snprintf(k + RDC_TMP_KEEP - 16, 18, "~%016llx", (unsigned long long)XXH3_64bits(name, n));
    }
    return k;
}

char *rdc_tmp_key_path(const char *rel)
{
    const char *base;
    char *dir = rdc_dir_of(rel, &base), *key = rdc_tmp_key(base), *p = rdc_join(dir, key);
    free(key);
    free(dir);
    return p;
}

char *rdc_tmp_final(const char *tmp)
{
    size_t pl = strlen(RDC_TMP_PREFIX), n = strlen(tmp);
    if (strncmp(tmp, RDC_TMP_PREFIX, pl) || n < pl + 8 || tmp[n - 7] != '.')
        return NULL;
    return strndup(tmp + pl, n - pl - 7);
}

int rdc_create_tmp(int dfd, const char *name, mode_t mode, char **tmp)
{
    return rdc_tmp_try(dfd, name, tmp, create_excl, &mode);
}

static int copy_all(int from, int to)
{
    loff_t in = 0, out = 0;
    for (;;) {
        ssize_t n = copy_file_range(from, &in, to, &out, 1 << 30, 0);
        if (n == 0)
            return 0;
        if (n > 0)
            continue;
        if (errno == EINTR)
            continue;
        if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
            return errno;
        break;   /* this filesystem cannot: by hand, from where it stopped */
    }
    char buf[1 << 16];
    for (;;) {
        ssize_t n = pread(from, buf, sizeof buf, in);
        if (n == 0)
            return 0;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        for (ssize_t done = 0; done < n;) {
            ssize_t w = pwrite(to, buf + done, (size_t)(n - done), out);
            if (w < 0 && errno != EINTR)
                return errno;
            if (w > 0) {
                done += w;
                out += w;
            }
        }
        in += n;
    }
}

/* fd's extended attributes (ACLs and user.* among them) onto out, as far as this process may
 * set them (a security.* label may stay the kernel's default) */
static void copy_xattrs(int fd, int out)
{
    ssize_t n = flistxattr(fd, NULL, 0);
    char *names = n > 0 ? malloc((size_t)n) : NULL;
    if (names && (n = flistxattr(fd, names, (size_t)n)) > 0) {
        for (char *k = names; k < names + n; k += strlen(k) + 1) {
            ssize_t v = fgetxattr(fd, k, NULL, 0);
            char *val = v >= 0 ? malloc((size_t)v + 1) : NULL;
            if (val && (v = fgetxattr(fd, k, val, (size_t)v)) >= 0)
                (void)fsetxattr(out, k, val, (size_t)v, 0);
            free(val);
        }
    }
    free(names);
}

int rdc_unshare(int dfd, const char *name, int fd, const struct stat *st)
{
    char *tmp;
    int out = rdc_create_tmp(dfd, name, 0600, &tmp);
    if (out < 0)
        return -1;
    int e = copy_all(fd, out);
    /* the file as it was, under one name: its owner first (a chown clears setuid), then its
     * mode and attributes; an owner that cannot be kept refuses the copy */
    if (!e && (st->st_uid != geteuid() || st->st_gid != getegid()) && fchown(out, st->st_uid, st->st_gid))
        e = errno;
    if (!e) {
        copy_xattrs(fd, out);
        if (fchmod(out, st->st_mode & 07777) || fsync(out) || renameat(dfd, tmp, dfd, name))
            e = errno;
    }
    if (e) {
        unlinkat(dfd, tmp, 0);
        close(out);
        out = -1;
    }
    free(tmp);
    errno = e;
    return out;
}

char *rdc_dir_of(const char *rel, const char **base)
{
    const char *s = strrchr(rel, '/');
    *base = s ? s + 1 : rel;
    char *d = s == rel ? strdup("/") : s ? strndup(rel, (size_t)(s - rel)) : strdup("");
    if (!d)
        rd_oom();
    return d;
}
