/* rdc_recv_stream.c - the tree receiver's stream side: cut the bytes the rd engine delivers
 * into records (a record may span chunks: it waits in pend, bounded by RDC_MAX_HDR), hand
 * them to rdc_recv.c, and the receiver's life: new, finish (directory metadata, durability),
 * report, free. A malformed stream ends the transfer; a record the destination refuses fails
 * on its own (see rdc_recv.c).
 */
#include "copy/rdc_recv_int.h"
#include "copy/rdc_flush.h"
#include "copy/rdc_manifest.h"
#include "copy/rdc_note.h"
#include "copy/rdc_safe.h"
#include "copy/rdc_xattr.h"

#include "remote/rdr_line.h"
#include "util/rd_error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One record at p (n bytes available). Returns its length, 0 if incomplete, -1 if malformed. */
static ssize_t record(struct rdc_rcv *r, const unsigned char *p, size_t n)
{
    struct rdc_rd rd = { p, n, 0, 0 };
    uint8_t type = rdc_get_u8(&rd);
    size_t pl = 0, tl = 0;
    const char *path = NULL, *t = NULL;
    struct rdc_meta m;
    if (type == 'x') {
        size_t len = 0;
        int ok = rdc_xattr_parse(p + 1, n - 1, &len);
        if (ok <= 0)
            return ok;
        if (!r->xfor)   /* it follows no file or directory header */
            return -1;
        rdc_rcv_xattrs(r, p + 1, len);
        r->xfor = 0;
        return (ssize_t)(1 + len);
    }
    if (n > 0) {
        r->xfor = 0;
        free(r->xmade);
        r->xmade = NULL;
        if (r->xfd >= 0)
            close(r->xfd);
        r->xfd = -1;
    }
    switch (type) {
    case 'R': {
        uint32_t idx = rdc_get_u32(&rd);
        uint8_t kind = rdc_get_u8(&rd), contents = rdc_get_u8(&rd);
        path = rdc_get_str(&rd, &pl);
        if (rd.short_)
            break;
        if (idx > 1000000 || r->in_file)
            return -1;
        rdc_rcv_root(r, idx, kind, contents, path, pl);
        return (ssize_t)rd.off;
    }
    case 'd':
        path = rdc_get_str(&rd, &pl);
        rdc_get_meta(&rd, &m, r->atimes);
        if (rd.short_)
            break;
        if (r->in_file)
            return -1;
        rdc_rcv_dir(r, path, pl, &m);
        r->xfor = 'd';
        return (ssize_t)rd.off;
    case 'f': {
        path = rdc_get_str(&rd, &pl);
        rdc_get_meta(&rd, &m, r->atimes);
        uint64_t size = rdc_get_u64(&rd), start = rdc_get_u64(&rd);
        uint8_t flags = rdc_get_u8(&rd);
        t = rdc_get_str(&rd, &tl);
        if (rd.short_)
            break;
        if (r->in_file || start > size)
            return -1;
        rdc_rcv_file(r, path, pl, &m, size, start, flags, t, tl);
        r->xfor = 'f';
        return (ssize_t)rd.off;
    }
    case 'D': {
        uint64_t off = rdc_get_u64(&rd), len = rdc_get_u64(&rd);
        if (rd.short_)
            break;
        if (!r->in_file || off < r->hpos || off + len > r->size || off + len < off)
            return -1;
        r->data_off = off;
        r->data_left = len;
        return (ssize_t)rd.off;
    }
    case 'e': {
        uint8_t status = rdc_get_u8(&rd);
        unsigned char h[16];
        rdc_get_bytes(&rd, h, 16);
        if (rd.short_)
            break;
        if (!r->in_file)
            return -1;
        rdc_rcv_end_file(r, status, h);
        return (ssize_t)rd.off;
    }
    case 'l':
        path = rdc_get_str(&rd, &pl);
        rdc_get_meta(&rd, &m, r->atimes);
        t = rdc_get_str(&rd, &tl);
        if (rd.short_)
            break;
        if (r->in_file)
            return -1;
        rdc_rcv_symlink(r, path, pl, &m, t, tl);
        return (ssize_t)rd.off;
    case 'n': {
        path = rdc_get_str(&rd, &pl);
        rdc_get_meta(&rd, &m, r->atimes);
        uint8_t node = rdc_get_u8(&rd);
        if (rd.short_)
            break;
        if (r->in_file)
            return -1;
        rdc_rcv_node(r, path, pl, &m, node);
        r->xfor = 'n';
        return (ssize_t)rd.off;
    }
    case 'h': {
        path = rdc_get_str(&rd, &pl);
        uint32_t root = rdc_get_u32(&rd);
        t = rdc_get_str(&rd, &tl);
        if (rd.short_)
            break;
        if (r->in_file)
            return -1;
        rdc_rcv_link(r, path, pl, root, t, tl);
        return (ssize_t)rd.off;
    }
    case 'a':   /* every meta from here on carries the atime too (rdc_tree.h) */
        if (r->in_file)
            return -1;
        r->atimes = 1;
        return (ssize_t)rd.off;
    case 'Z':
        if (r->in_file)
            return -1;
        r->ended = 1;
        return (ssize_t)rd.off;
    default:
        if (rd.short_)
            break;
        return -1;
    }
    if (rd.short_ == 2)
        return -1;
    return 0;
}

static int consume(struct rdc_rcv *r, const void *buf, size_t n);

/* One frame's payload. The file still gathering its pieces when the frame goes back to the
 * engine copies them: every frame the receiver keeps is then in a submitted job, which a
 * worker finishes whatever the stream does next, and the engine's wait for its frames (at
 * its end, also after a failure) ends. */
int rdc_rcv_consume(void *ctx, const void *buf, size_t n)
{
    struct rdc_rcv *r = ctx;
    int rc = consume(r, buf, n);
    if (r->job && r->job->pieces)
        rdc_job_own(r->job);
    return rc;
}

static int consume(struct rdc_rcv *r, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n > 0 && !r->lost) {   /* lost: set where a record or data hashed a hole */
        if (r->data_left) {
            size_t k = n < r->data_left ? n : (size_t)r->data_left;
            rdc_rcv_data(r, p, k);
            p += k;
            n -= k;
            continue;
        }
        if (r->ended)
            return rd_fail(RD_ESTREAM, "tree stream: data after its end");
        ssize_t used;
        if (r->pend.len == 0) {
            used = record(r, p, n);
            if (used > 0) {
                p += used;
                n -= (size_t)used;
                continue;
            }
            if (used < 0 || n >= RDC_MAX_HDR)
                return rd_fail(RD_ESTREAM, "tree stream: malformed record");
            rdc_put(&r->pend, p, n);
            return RD_OK;
        }
        size_t old = r->pend.len, add = n;
        if (add > RDC_MAX_HDR - old)
            add = RDC_MAX_HDR - old;
        rdc_put(&r->pend, p, add);
        used = record(r, r->pend.p, r->pend.len);
        if (used < 0 || (used == 0 && r->pend.len >= RDC_MAX_HDR))
            return rd_fail(RD_ESTREAM, "tree stream: malformed record");
        if (used == 0) {
            return RD_OK;   /* everything was taken into pend */
        }
        size_t took = (size_t)used - old;
        r->pend.len = 0;
        p += took;
        n -= took;
    }
    if (r->lost)
        return rd_fail_after(RD_ESTREAM, "tree stream: the transfer failed while a hole was hashed");
    rdc_flush_note(r->flush, r->bytes);
    return RD_OK;
}

int rdc_rcv_finish(void *ctx)
{
    struct rdc_rcv *r = ctx;
    rdc_pool_reap(r, 1);   /* every file in place before directory metadata and the sync */
    if (!r->ended || r->in_file || r->data_left || r->pend.len)
        return rd_fail(RD_ESTREAM, "tree stream ended inside a record");
    for (size_t i = r->ndirs; i-- > 0;) {   /* deepest first: a read-only dir last */
        struct dirmeta *d = &r->dirs[i];
        struct stat st;
        if (!r->preserve && !r->times && !d->drop && !d->xattr)
            continue;
        /* each failure is a line and exit 23, as for a file: a directory left with the
         * owner's rwx it was filled with, or without its times, is not what was asked for */
        int fd = rdc_open_beneath(r->base, d->path);
        if (fd < 0) {
            rdc_rcv_err(r, "cannot set the metadata of", d->path, errno);
            continue;
        }
        if (r->preserve) {
            if (r->owners && fchown(fd, d->m.uid, d->m.gid))
                rdc_rcv_err(r, "cannot set the owner of", d->path, errno);
            if (fchmod(fd, d->m.mode & 07777))
                rdc_rcv_err(r, "cannot set the mode of", d->path, errno);
        } else if (d->drop && fstat(fd, &st) == 0) {   /* never wider than it was made */
            if (fchmod(fd, st.st_mode & 07777 & ~d->drop))
                rdc_rcv_err(r, "cannot set the mode of", d->path, errno);
        }
        rdc_rcv_set_xattrs(r, fd, d->xattr, d->xattr_len, d->path);
        if (r->times) {
            struct timespec ts[2];
            rdc_meta_times(&d->m, ts);
            if (futimens(fd, ts))
                rdc_rcv_err(r, "cannot set the times of", d->path, errno);
        }
        close(fd);
    }
    /* exit 0 means durable: one syncfs of DST's filesystem measured far cheaper than an fsync
     * per file before its rename and per directory after its renames (20,000 files: 0.15-0.23 s
     * in syncfs against 8-42 s in fsync; README's rdcp section); it reports writeback errors
     * of the filesystem since base was opened (Linux >= 5.8) */
    rdc_flush_stop(r->flush);
    r->flush = NULL;
    if (!r->nosync && syncfs(r->base))
        return rd_fail(RD_EIO, "cannot make the copy durable (syncfs): %s", strerror(errno));
    for (size_t i = 0; i < r->nmounts; i++)
        if (syncfs(r->mount_fd[i]))
            return rd_fail(RD_EIO, "cannot make the copy durable (syncfs of a filesystem mounted beneath the destination): %s",
                           strerror(errno));
    if (r->more_mounts)
        sync();
    return RD_OK;
}

struct rdc_rcv *rdc_rcv_new(const char *dst, int nsrc, int preserve, int xattrs, int nosync)
{
    struct rdc_rcv *r = calloc(1, sizeof *r);
    if (!r)
        rd_oom();
    rdc_pool_init(r);
    r->fd = r->pfd = r->base = r->xfd = r->tdfd = -1;
    r->dst = dst;
    r->nsrc = nsrc;
    r->preserve = preserve;
    r->nosync = nosync;
    r->times = preserve;
    r->xattrs = (preserve ? RDC_XATTR_ACLS : 0) | (xattrs ? RDC_XATTR_USER : 0);
    r->max_file = UINT64_MAX;
    r->owners = preserve && geteuid() == 0;
    struct stat st;
    const char *what = "access";
    if (stat(dst, &st) == 0) {
        r->dst_exists = 1;
        r->dst_is_dir = S_ISDIR(st.st_mode);
        r->dst_special = S_ISCHR(st.st_mode) ? "a character device" : S_ISBLK(st.st_mode) ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : NULL;
    } else if (errno != ENOENT && errno != ENOTDIR) {
        /* ENOTDIR: "FILE/" (or "FILE/x"), a name with a slash after a non-directory: no
         * directory is there, as for a missing "DIR/": each root says so (exit 23), as cp
         * says "Not a directory" for it; before 2026-12-07 it was exit 5, "cannot access" */
        goto fail;
    }
    if (r->dst_is_dir) {   /* DST itself is the user's word: it may be reached through links */
        r->pre = strdup("");
        r->base = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        rdc_set_add(&r->made_dirs, "");
    } else {
        const char *nm;
        char *d = strdup(dst);
        for (size_t n = strlen(d); n > 1 && d[n - 1] == '/';)
            d[--n] = '\0';
        char *dir = rdc_dir_of(d, &nm);
        r->pre = rdc_basename(d);
        free(d);
        what = "open the directory of";
        r->base = open(*dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        free(dir);
    }
    if (r->base < 0)
        goto fail;
    struct stat bst;
    r->base_dev = fstat(r->base, &bst) == 0 ? bst.st_dev : 0;
    r->hs = XXH3_createState();
    if (!r->nosync)
        r->flush = rdc_flush_start(r->base);
    return r;
fail: {
    int e = errno;
    char *p = rdc_shown(dst);
    rd_warn("cannot %s destination '%s': %s", what, p, strerror(e));
    free(p);
    rdc_rcv_free(r);
    return NULL;
}
}

void rdc_rcv_manifest(struct rdc_rcv *r, int out, const struct rdc_roots *roots)
{
    r->resume = 1;
    rdc_make_manifest(out, r->base, r->pre, r->dst_is_dir, roots);
}

void rdc_rcv_sink(struct rdc_rcv *r, struct rd_sink *s)
{
    r->sink = s;
}

void rdc_rcv_max_file(struct rdc_rcv *r, uint64_t size)
{
    r->max_file = size;
}

uint64_t rdc_rcv_errors(const struct rdc_rcv *r)
{
    return r->errors;
}

void rdc_rcv_report(struct rdc_rcv *r, double secs)
{
    rdc_pool_reap(r, 1);   /* the files whose records all arrived are complete: in place */
    int werr = rdc_rcv_settle(r);
    if (werr && r->in_file && !r->discard && r->fd >= 0) {
        rdc_rcv_err(r, "cannot write", r->final, werr);   /* nothing worth keeping */
        close(r->fd);
        r->fd = -1;
        unlinkat(r->pfd, r->tmp, 0);
    }
    if (r->in_file && !r->discard && r->fd >= 0) {
        /* the stream broke inside a file: what the temporary file holds was verified chunk by
         * chunk, so it stays for --resume (never under the final name) */
        close(r->fd);
        r->fd = -1;
        const char *nm;
        char *dir = rdc_dir_of(r->final, &nm), *t = rdc_join(dir, r->tmp), *p = rdc_rcv_disp(r, t);
        rd_warn("kept the partial file '%s' for --resume", p);
        free(p);
        free(t);
        free(dir);
    }
    if (r->dst_not_dir)   /* the initiator runs no other source host's copy into it */
        dprintf(STDERR_FILENO, RDC_NOTE_NOTDIR_LINE);
    dprintf(STDERR_FILENO, RDC_NOTE_RECV_FMT, (unsigned long long)r->files,
            (unsigned long long)r->ndir, (unsigned long long)r->copied, (unsigned long long)r->skipped,
            (unsigned long long)r->errors, secs);
}

void rdc_rcv_earlier(struct rdc_rcv *r, const char *rel)
{
    rdc_set_add(&r->earlier, rel);
}

/* the made lines, written a buffer at a time (tens of thousands of names) */
struct made_out {
    char buf[1 << 16];
    size_t n;
};

static void made_flush(struct made_out *o)
{
    for (size_t off = 0; off < o->n;) {
        ssize_t w = write(STDERR_FILENO, o->buf + off, o->n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;   /* the agent is gone: nobody to tell */
        off += (size_t)w;
    }
    o->n = 0;
}

static void made_line(const char *rel, void *ctx)
{
    struct made_out *o = ctx;
    char *h = rdr_hex_str(rel);
    if (!h)
        rd_oom();
    size_t need = strlen(RDC_NOTE_MADE_FMT) - 2 + strlen(h);   /* and snprintf's NUL: +1 */
    if (o->n + need + 1 > sizeof o->buf)
        made_flush(o);
    if (need + 1 > sizeof o->buf) {   /* longer than PATH_MAX: never made */
        free(h);
        return;
    }
    o->n += (size_t)snprintf(o->buf + o->n, sizeof o->buf - o->n, RDC_NOTE_MADE_FMT, h);
    free(h);
}

void rdc_rcv_report_made(const struct rdc_rcv *r)
{
    struct made_out *o = malloc(sizeof *o);
    if (!o)
        rd_oom();
    o->n = 0;
    rdc_set_each(&r->made_files, made_line, o);
    rdc_set_each(&r->made_others, made_line, o);
    made_flush(o);
    free(o);
}

void rdc_rcv_free(struct rdc_rcv *r)
{
    if (!r)
        return;
    rdc_pool_stop(r);   /* every piece written: r->big's file is r->fd's alone */
    rdc_flush_stop(r->flush);
    rdc_rcv_orphans_free(r);
    if (r->orphan && r->tmp && r->tdfd >= 0)   /* a linked file's data cut short: no partial to continue */
        unlinkat(r->tdfd, r->tmp, 0);
    rdc_job_free(r->job);
    rdc_job_free(r->big);
    for (size_t i = 0; i < r->ndirs; i++) {
        free(r->dirs[i].path);
        free(r->dirs[i].xattr);
    }
    free(r->dirs);
    for (size_t i = 0; i < r->nroots; i++)
        free(r->roots[i]);
    free(r->roots);
    rdc_set_free(&r->made_dirs);
    rdc_set_free(&r->made_files);
    rdc_set_free(&r->made_others);
    rdc_set_free(&r->earlier);
    rdc_set_free(&r->failed_files);
    rdc_set_free(&r->made_folded);
    rdc_stale_free(&r->stale);
    rdc_buf_free(&r->pend);
    free(r->skip);
    free(r->final);
    free(r->name);
    free(r->tmp);
    free(r->xattr);
    free(r->xmade);
    if (r->xfd >= 0)
        close(r->xfd);
    free(r->pdir);
    free(r->pre);
    if (r->fd >= 0)
        close(r->fd);
    rdc_dir_put(r->pdh);
    if (r->base >= 0)
        close(r->base);
    for (size_t i = 0; i < r->nmounts; i++)
        close(r->mount_fd[i]);
    if (r->hs)
        XXH3_freeState(r->hs);
    free(r);
}
