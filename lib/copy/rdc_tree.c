/* rdc_tree.c - rdcp's record encoding helpers, path mapping and hashing (no policy). */
#include "copy/rdc_tree.h"
#include "util/rd_error.h"

#include "remote/rdr_line.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

void rdc_put(struct rdc_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q)
            rd_oom();
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

void rdc_put_u8(struct rdc_buf *b, uint8_t v)
{
    rdc_put(b, &v, 1);
}

void rdc_put_u32(struct rdc_buf *b, uint32_t v)
{
    unsigned char x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    rdc_put(b, x, 4);
}

void rdc_put_u64(struct rdc_buf *b, uint64_t v)
{
    unsigned char x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    rdc_put(b, x, 8);
}

void rdc_put_str(struct rdc_buf *b, const char *s, size_t n)
{
    rdc_put_u32(b, (uint32_t)n);
    rdc_put(b, s, n);
}

void rdc_put_meta(struct rdc_buf *b, const struct rdc_meta *m, int atimes)
{
    rdc_put_u32(b, m->mode);
    rdc_put_u32(b, m->uid);
    rdc_put_u32(b, m->gid);
    rdc_put_u64(b, (uint64_t)m->mtime_s);
    rdc_put_u32(b, m->mtime_ns);
    if (atimes) {
        rdc_put_u64(b, (uint64_t)m->atime_s);
        rdc_put_u32(b, m->atime_ns);
    }
}

void rdc_buf_free(struct rdc_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static const unsigned char *take(struct rdc_rd *r, size_t n)
{
    if (r->short_ || r->n - r->off < n) {
        r->short_ = 1;
        return NULL;
    }
    const unsigned char *p = r->p + r->off;
    r->off += n;
    return p;
}

uint8_t rdc_get_u8(struct rdc_rd *r)
{
    const unsigned char *p = take(r, 1);
    return p ? p[0] : 0;
}

uint32_t rdc_get_u32(struct rdc_rd *r)
{
    const unsigned char *p = take(r, 4);
    uint32_t v = 0;
    for (int i = 0; p && i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

uint64_t rdc_get_u64(struct rdc_rd *r)
{
    const unsigned char *p = take(r, 8);
    uint64_t v = 0;
    for (int i = 0; p && i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

const char *rdc_get_str(struct rdc_rd *r, size_t *len)
{
    uint32_t n = rdc_get_u32(r);
    if (r->short_)
        return NULL;
    if (n > RDC_MAX_HDR) {   /* garbage: make the caller see a short record it can never finish */
        r->short_ = 2;
        return NULL;
    }
    const unsigned char *p = take(r, n);
    *len = n;
    return (const char *)p;
}

void rdc_get_meta(struct rdc_rd *r, struct rdc_meta *m, int atimes)
{
    m->mode = rdc_get_u32(r);
    m->uid = rdc_get_u32(r);
    m->gid = rdc_get_u32(r);
    m->mtime_s = (int64_t)rdc_get_u64(r);
    m->mtime_ns = rdc_get_u32(r);
    m->atime_s = m->mtime_s;
    m->atime_ns = m->mtime_ns;
    if (atimes) {
        m->atime_s = (int64_t)rdc_get_u64(r);
        m->atime_ns = rdc_get_u32(r);
        if (!r->short_ && m->atime_ns >= 1000000000u)
            r->short_ = 2;
    }
}

void rdc_meta_times(const struct rdc_meta *m, struct timespec ts[2])
{
    ts[0].tv_sec = (time_t)m->atime_s;
    ts[0].tv_nsec = (long)m->atime_ns;
    ts[1].tv_sec = (time_t)m->mtime_s;
    ts[1].tv_nsec = (long)m->mtime_ns;
}

void rdc_get_bytes(struct rdc_rd *r, void *out, size_t n)
{
    const unsigned char *p = take(r, n);
    if (p)
        memcpy(out, p, n);
    else
        memset(out, 0, n);
}

int rdc_is_pattern(const char *path)
{
    return strpbrk(path, "*?[") != NULL;
}

int rdc_expands_here(const char *path)
{
    struct stat st;
    return rdc_is_pattern(path) && lstat(path, &st) != 0;
}

const char *rdc_root_rel(int dst_is_dir, int nsrc, int contents, const char *basename)
{
    if (contents)
        return "";
    if (dst_is_dir)
        return basename;
    if (nsrc > 1)
        return NULL;
    return "";
}

char *rdc_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 2);
    if (!s)
        rd_oom();
    if (!la) {
        memcpy(s, b, lb + 1);
    } else if (!lb) {
        memcpy(s, a, la + 1);
    } else {
        memcpy(s, a, la);
        size_t k = la;
        if (a[la - 1] != '/')
            s[k++] = '/';
        memcpy(s + k, b, lb + 1);
    }
    return s;
}

int rdc_contents_source(const char *src, const char *base, int is_dir)
{
    size_t len = strlen(src);
    return is_dir && ((len > 1 && src[len - 1] == '/') || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
                      strcmp(base, "/") == 0);
}

char *rdc_basename(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t s = n;
    while (s > 0 && path[s - 1] != '/')
        s--;
    char *b = malloc(n - s + 2);
    if (!b)
        rd_oom();
    if (n == 1 && path[0] == '/') {
        strcpy(b, "/");
        return b;
    }
    memcpy(b, path + s, n - s);
    b[n - s] = '\0';
    return b;
}

char *rdc_manifest_line(const struct rdc_manifest_entry *e)
{
    struct rdc_buf b = { 0 };
    rdc_put_u8(&b, e->kind);
    rdc_put_u64(&b, e->size);
    rdc_put_u64(&b, (uint64_t)e->mtime_s);
    rdc_put_u32(&b, e->mtime_ns);
    rdc_put(&b, e->hash, 16);
    rdc_put_str(&b, e->path ? e->path : "", e->path ? strlen(e->path) : 0);
    rdc_put_str(&b, e->tmp ? e->tmp : "", e->tmp ? strlen(e->tmp) : 0);
    char *h = rdr_hex(b.p, b.len);
    rdc_buf_free(&b);
    return h;
}

int rdc_manifest_parse(const char *hex, struct rdc_manifest_entry *e)
{
    size_t n;
    char *raw = rdr_unhex(hex, &n);
    if (!raw)
        return -1;
    struct rdc_rd r = { (const unsigned char *)raw, n, 0, 0 };
    memset(e, 0, sizeof *e);
    e->kind = rdc_get_u8(&r);
    e->size = rdc_get_u64(&r);
    e->mtime_s = (int64_t)rdc_get_u64(&r);
    e->mtime_ns = rdc_get_u32(&r);
    rdc_get_bytes(&r, e->hash, 16);
    size_t lp = 0, lt = 0;
    const char *p = rdc_get_str(&r, &lp);
    const char *t = rdc_get_str(&r, &lt);
    if (r.short_) {
        free(raw);
        return -1;
    }
    e->path = strndup(p, lp);
    e->tmp = strndup(t, lt);
    free(raw);
    return e->path && e->tmp ? 0 : -1;
}

static const unsigned char zeros[1 << 16];

int rdc_hash_zeros(struct XXH3_state_s *st, uint64_t n, atomic_int *stop)
{
    for (unsigned i = 0; n; i++) {
        size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        if (stop && i % 1024 == 0 && atomic_load(stop))   /* every 64 MiB */
            return -1;
        XXH3_128bits_update(st, zeros, k);
        n -= k;
    }
    return 0;
}

int rdc_hash_prefix(int fd, uint64_t len, struct XXH3_state_s *st)
{
    size_t bs = 1 << 20;
    char *buf = malloc(bs);
    if (!buf)
        return -1;
    uint64_t off = 0;
    while (off < len) {
        size_t want = len - off < bs ? (size_t)(len - off) : bs;
        ssize_t n = pread(fd, buf, want, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ENODATA;
            free(buf);
            return -1;
        }
        XXH3_128bits_update(st, buf, (size_t)n);
        off += (uint64_t)n;
    }
    free(buf);
    return 0;
}

void rdc_hash_final(struct XXH3_state_s *st, unsigned char out[16])
{
    XXH128_hash_t h = XXH3_128bits_digest(st);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    memcpy(out, c.digest, 16);
}

char *rdc_shown(const char *path)
{
    size_t n = strlen(path);
    char *s = malloc(4 * n + 1), *o = s;
    if (!s)
        rd_oom();
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (*p < 0x20 || *p == 0x7f || *p == '\\') {
            o += sprintf(o, "\\%03o", *p);
        } else {
            *o++ = (char)*p;
        }
    }
    *o = '\0';
    return s;
}
