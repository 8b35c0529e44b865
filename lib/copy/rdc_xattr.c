/* rdc_xattr.c - see rdc_xattr.h */
#include "copy/rdc_xattr.h"
#include "util/rd_error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char ACL_ACCESS[] = "system.posix_acl_access";
static const char ACL_DEFAULT[] = "system.posix_acl_default";

static int is(const char *name, size_t n, const char *s)
{
    return n == strlen(s) && memcmp(name, s, n) == 0;
}

int rdc_xattr_wanted(const char *name, size_t n, unsigned which, int dir)
{
    if (n == 0 || n > RDC_XATTR_MAX_NAME || memchr(name, '\0', n))
        return 0;
    if (which & RDC_XATTR_ACLS) {
        if (is(name, n, ACL_ACCESS) || (dir && is(name, n, ACL_DEFAULT)))
            return 1;
    }
    return (which & RDC_XATTR_USER) && n > 5 && memcmp(name, "user.", 5) == 0;
}

static ssize_t list(int fd, const char *path, int follow, char *buf, size_t n)
{
    if (fd >= 0)
        return flistxattr(fd, buf, n);
    return follow ? listxattr(path, buf, n) : llistxattr(path, buf, n);
}

static ssize_t get(int fd, const char *path, int follow, const char *name, void *buf, size_t n)
{
    if (fd >= 0)
        return fgetxattr(fd, name, buf, n);
    return follow ? getxattr(path, name, buf, n) : lgetxattr(path, name, buf, n);
}

int rdc_xattr_record(struct rdc_buf *b, int fd, const char *path, int follow, unsigned which,
                     int dir)
{
    /* an O_PATH fd (a FIFO or a socket, which no open for reading may wait on) has no
     * f*xattr: its /proc/self/fd link reaches the node itself, whatever the depth */
    char via[40];
    if (fd >= 0 && (fcntl(fd, F_GETFL) & O_PATH)) {
        snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
        fd = -1;
        if (path == NULL || access(via, F_OK) == 0) {
            path = via;
            follow = 1;
        }
    }
    char *names = NULL;
    ssize_t ln;
    for (size_t cap = 1024;; cap *= 2) {   /* the list can grow between the calls */
        char *q = realloc(names, cap);
        if (!q)
            rd_oom();
        names = q;
        ln = list(fd, path, follow, names, cap);
        if (ln >= 0 || errno != ERANGE || cap >= RDC_MAX_HDR)
            break;
    }
    if (ln <= 0) {   /* most files: none */
        int e = errno;
        free(names);
        if (ln == 0 || e == ENOTSUP)   /* a filesystem without attributes has none to copy */
            return 0;
        errno = e;
        return -1;
    }
    struct rdc_buf body = { 0 };
    uint32_t count = 0;
    unsigned char *value = malloc(RDC_XATTR_MAX_VALUE);
    if (!value)
        rd_oom();
    int rc = 0;
    for (ssize_t i = 0; i < ln;) {
        const char *name = names + i;
        size_t nl = strnlen(name, (size_t)(ln - i));
        i += (ssize_t)nl + 1;
        if (!rdc_xattr_wanted(name, nl, which, dir))
            continue;
        ssize_t vl = get(fd, path, follow, name, value, RDC_XATTR_MAX_VALUE);
        if (vl < 0) {
            if (errno == ENODATA)   /* removed meanwhile */
                continue;
            rc = -1;
            break;
        }
        rdc_put_str(&body, name, nl);
        rdc_put_str(&body, (const char *)value, (size_t)vl);
        count++;
        if (body.len + 16 > RDC_MAX_HDR) {
            errno = E2BIG;
            rc = -1;
            break;
        }
    }
    int e = errno;
    if (rc == 0 && count) {
        rdc_put_u8(b, 'x');
        rdc_put_u32(b, count);
        rdc_put(b, body.p, body.len);
    }
    free(value);
    free(names);
    rdc_buf_free(&body);
    errno = e;
    return rc;
}

static void skip(struct rdc_rd *rd, size_t n)
{
    if (rd->short_ || rd->n - rd->off < n)
        rd->short_ = 1;
    else
        rd->off += n;
}

int rdc_xattr_parse(const unsigned char *p, size_t n, size_t *len)
{
    struct rdc_rd rd = { p, n, 0, 0 };
    uint32_t count = rdc_get_u32(&rd);
    if (!rd.short_ && count > RDC_MAX_HDR / 8)   /* each pair takes 8 bytes at least */
        return -1;
    /* each length is judged as soon as it is here, before the bytes it announces */
    for (uint32_t i = 0; i < count && !rd.short_; i++) {
        uint32_t nl = rdc_get_u32(&rd);
        if (!rd.short_ && (nl == 0 || nl > RDC_XATTR_MAX_NAME))
            return -1;
        skip(&rd, nl);
        uint32_t vl = rdc_get_u32(&rd);
        if (!rd.short_ && vl > RDC_XATTR_MAX_VALUE)
            return -1;
        skip(&rd, vl);
    }
    if (rd.short_)
        return 0;
    *len = rd.off;
    return 1;
}

/* the next (name, value) of a checked body: 1, or 0 at its end */
struct pair {
    const char *name, *value;
    size_t nl, vl;
};
static int next_pair(struct rdc_rd *rd, uint32_t *left, struct pair *x)
{
    if (*left == 0)
        return 0;
    (*left)--;
    x->name = rdc_get_str(rd, &x->nl);
    x->value = rdc_get_str(rd, &x->vl);
    return !rd->short_;
}

unsigned char *rdc_xattr_filter(const unsigned char *p, size_t n, unsigned which, int dir, size_t *out_len,
                                void (*refused)(void *ctx, const char *name, size_t n), void *ctx)
{
    struct rdc_rd rd = { p, n, 0, 0 };
    uint32_t left = rdc_get_u32(&rd), kept = 0;
    struct rdc_buf body = { 0 };
    rdc_put_u32(&body, 0);
    struct pair x;
    while (next_pair(&rd, &left, &x)) {
        if (!rdc_xattr_wanted(x.name, x.nl, which, dir)) {
            refused(ctx, x.name, x.nl);
            continue;
        }
        rdc_put_str(&body, x.name, x.nl);
        rdc_put_str(&body, x.value, x.vl);
        kept++;
    }
    if (!kept) {
        rdc_buf_free(&body);
        return NULL;
    }
    for (int i = 0; i < 4; i++)
        body.p[i] = (unsigned char)(kept >> (8 * i));
    *out_len = body.len;
    return body.p;
}

int rdc_xattr_apply(int fd, const unsigned char *p, size_t n, char **failed, unsigned *more)
{
    int first = 0;
    *more = 0;
    char via[64];
    int path_only = (fcntl(fd, F_GETFL) & O_PATH) != 0;
    snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
    struct rdc_rd rd = { p, n, 0, 0 };
    uint32_t left = rdc_get_u32(&rd);
    struct pair x;
    while (next_pair(&rd, &left, &x)) {
        char *nm = strndup(x.name, x.nl);
        if (!nm)
            rd_oom();
        if (path_only ? setxattr(via, nm, x.value, x.vl, 0) : fsetxattr(fd, nm, x.value, x.vl, 0)) {
            if (!first) {   /* one that fails (too big for this filesystem) costs the others nothing */
                first = errno;
                *failed = nm;
                continue;
            }
            ++*more;
        }
        free(nm);
    }
    return first;
}
