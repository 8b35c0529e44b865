/* rdc_recv.c - `rdcp --tree-recv`: parse the tree stream (a custom consumer of the rd engine)
 * and build the tree under DST. Every file is written under a temporary name in its
 * directory (.rdcp.NAME.XXXXXX), preallocated, and renamed into place only once its whole-file
 * XXH3-128 matched; a failed file leaves nothing under its final name and no temporary file.
 * With --resume it first walks DST and reports a manifest (complete files with their hash,
 * partial temporary files with the hash of what they hold) on the ready fd, before the port.
 */
#include "rdc_tree.h"
#include "rdc_end.h"

#include "rd_cli.h"
#include "rd_error.h"
#include "rd_io.h"
#include "rd_report.h"
#include "rd_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

struct dirmeta {
    char *path;
    struct rdc_meta m;
};

struct rcv {
    const char *dst;
    int dst_is_dir, dst_exists, nsrc, preserve, owners, times;
    mode_t umask;
    /* roots */
    char **roots;             /* fs path of each root, NULL = failed */
    size_t nroots;
    char *root;               /* current root's fs path, NULL = records are dropped */
    /* the current file */
    int in_file, fd, discard;
    char *final, *tmp;
    uint64_t size, hpos;
    struct rdc_meta m;
    XXH3_state_t *hs;
    /* a 'D' record being consumed */
    uint64_t data_left, data_off;
    struct rdc_buf pend;
    struct dirmeta *dirs;
    size_t ndirs, capdirs;
    int ended;
    char *skip;               /* a directory that could not be made: its subtree is dropped */
    size_t skip_len;
    uint64_t files, ndir, bytes, skipped, errors;
};

static void err_path(struct rcv *r, const char *what, const char *path, int e)
{
    char *p = rdc_shown(path);
    rd_warn("%s '%s': %s", what, p, strerror(e));
    free(p);
    r->errors++;
}

static int bad_rel(const char *rel, size_t n)
{
    if (memchr(rel, '\0', n) || (n && rel[0] == '/'))
        return 1;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && rel[j] != '/')
            j++;
        if (j - i == 2 && rel[i] == '.' && rel[i + 1] == '.')
            return 1;
        i = j + 1;
    }
    return 0;
}

static char *path_of(struct rcv *r, const char *root, const char *rel, size_t n)
{
    char *t = strndup(rel, n);
    char *p = rdc_join(root, t);
    free(t);
    (void)r;
    return p;
}

static void drop_file(struct rcv *r)
{
    if (r->fd >= 0)
        close(r->fd);
    if (r->tmp)
        unlink(r->tmp);
    r->fd = -1;
}

static void clear_file(struct rcv *r)
{
    free(r->final);
    free(r->tmp);
    r->final = r->tmp = NULL;
    r->fd = -1;
    r->in_file = 0;
    r->discard = 0;
}

static void set_times_path(const char *p, const struct rdc_meta *m, int flags)
{
    struct timespec ts[2] = { { m->mtime_s, m->mtime_ns }, { m->mtime_s, m->mtime_ns } };
    utimensat(AT_FDCWD, p, ts, flags);
}

/* Open the file's temporary (new, or the partial one the sender continues). */
static void begin_file(struct rcv *r, const char *fs, const struct rdc_meta *m, uint64_t size,
                       uint64_t start, uint8_t flags, const char *tmpname, size_t tmplen)
{
    r->in_file = 1;
    r->final = strdup(fs);
    r->m = *m;
    r->size = size;
    r->hpos = 0;
    r->fd = -1;
    XXH3_128bits_reset(r->hs);
    char *dir = strdup(fs), *slash = strrchr(dir, '/');
    const char *base = fs;
    if (slash) {
        *slash = '\0';
        base = slash + 1;
        if (!*dir)
            strcpy(dir, "/");
    } else {
        strcpy(dir, ".");
    }
    if (start > 0 && tmplen) {
        char *t = strndup(tmpname, tmplen);
        int ours = !strchr(t, '/') && strncmp(t, RDC_TMP_PREFIX, strlen(RDC_TMP_PREFIX)) == 0;
        r->tmp = ours ? rdc_join(dir, t) : NULL;
        free(t);
        if (r->tmp)
            r->fd = open(r->tmp, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (r->fd < 0 || rdc_hash_prefix(r->fd, start, r->hs) || ftruncate(r->fd, (off_t)start)) {
            err_path(r, "cannot continue the partial file", r->tmp ? r->tmp : fs, errno);
            if (r->fd >= 0)
                close(r->fd);
            r->fd = -1;
            free(r->tmp);
            r->tmp = NULL;   /* leave it: it was not ours to remove in this run */
            r->discard = 1;
        } else {
            r->hpos = start;
            r->skipped += start;
        }
        free(dir);
        return;
    }
    size_t bl = strlen(base);
    if (bl > 200)
        bl = 200;
    size_t len = strlen(dir) + bl + 32;
    r->tmp = malloc(len);
    snprintf(r->tmp, len, "%s/" RDC_TMP_PREFIX "%.*sXXXXXX", dir, (int)bl, base);
    /* NAME. then the random suffix: .rdcp.NAME.XXXXXX */
    char *x = strstr(r->tmp + strlen(dir) + 1 + strlen(RDC_TMP_PREFIX) + bl, "XXXXXX");
    if (x) {
        memmove(x + 1, x, 7);
        *x = '.';
    }
    free(dir);
    r->fd = mkostemp(r->tmp, O_CLOEXEC);
    if (r->fd < 0) {
        err_path(r, "cannot create a file in the directory of", fs, errno);
        free(r->tmp);
        r->tmp = NULL;
        r->discard = 1;
        return;
    }
    if (size && !(flags & RDC_F_SPARSE)) {
        int e = fallocate(r->fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)size) ? errno : 0;
        if (e == ENOSPC || e == EDQUOT) {
            err_path(r, "cannot write", fs, e);
            drop_file(r);
            r->discard = 1;
        }
    }
}

static void end_file(struct rcv *r, uint8_t status, const unsigned char want[16])
{
    if (r->discard || status) {
        if (status && !r->discard)
            drop_file(r);   /* the sender said why */
        clear_file(r);
        return;
    }
    unsigned char got[16];
    rdc_hash_zeros(r->hs, r->size - r->hpos);
    rdc_hash_final(r->hs, got);
    int fd = r->fd;
    if (ftruncate(fd, (off_t)r->size)) {
        err_path(r, "cannot write", r->final, errno);
        goto fail;
    }
    if (memcmp(got, want, 16)) {
        char *p = rdc_shown(r->final);
        rd_warn("whole-file hash mismatch, not copied: '%s'", p);
        free(p);
        r->errors++;
        goto fail;
    }
    if (r->preserve) {
        if (r->owners && fchown(fd, r->m.uid, r->m.gid))
            err_path(r, "cannot set the owner of", r->final, errno);
        fchmod(fd, r->m.mode & 07777);
    } else {
        fchmod(fd, r->m.mode & 0777 & ~r->umask);
    }
    if (r->times) {
        struct timespec ts[2] = { { r->m.mtime_s, r->m.mtime_ns }, { r->m.mtime_s, r->m.mtime_ns } };
        futimens(fd, ts);
    }
    r->fd = -1;
    if (close(fd)) {
        err_path(r, "cannot write", r->final, errno);
        unlink(r->tmp);
        clear_file(r);
        return;
    }
    if (rename(r->tmp, r->final)) {
        err_path(r, "cannot rename into place", r->final, errno);
        unlink(r->tmp);
        clear_file(r);
        return;
    }
    r->files++;
    clear_file(r);
    return;
fail:
    drop_file(r);
    clear_file(r);
}

static void data(struct rcv *r, const unsigned char *p, size_t n)
{
    if (r->discard || r->fd < 0) {
        r->data_off += n;
        r->data_left -= n;
        return;
    }
    if (r->data_off > r->hpos) {
        rdc_hash_zeros(r->hs, r->data_off - r->hpos);
        r->hpos = r->data_off;
    }
    XXH3_128bits_update(r->hs, p, n);
    r->hpos += n;
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(r->fd, p + done, n - done, (off_t)(r->data_off + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            err_path(r, "cannot write", r->final, w < 0 ? errno : ENOSPC);
            drop_file(r);
            r->discard = 1;
            break;
        }
        done += (size_t)w;
    }
    r->bytes += n;
    r->data_off += n;
    r->data_left -= n;
}

static void start_root(struct rcv *r, uint32_t idx, uint8_t kind, uint8_t contents, const char *base, size_t bl)
{
    char *b = strndup(base, bl);
    r->root = NULL;
    free(r->skip);
    r->skip = NULL;
    if (idx >= r->nroots) {
        size_t n = idx + 1;
        r->roots = realloc(r->roots, n * sizeof *r->roots);
        for (size_t i = r->nroots; i < n; i++)
            r->roots[i] = NULL;
        r->nroots = n;
    }
    int weird = !*b || strchr(b, '/') || strcmp(b, ".") == 0 || strcmp(b, "..") == 0;
    const char *rel = rdc_root_rel(r->dst_is_dir, r->nsrc, contents || weird, b);
    if (!rel) {
        static int said;
        char *p = rdc_shown(r->dst);
        if (!said++)
            rd_warn("destination '%s' is not a directory", p);
        free(p);
        r->errors++;
        free(b);
        return;
    }
    if (kind == 'd' && r->dst_exists && !r->dst_is_dir && !*rel) {
        char *p = rdc_shown(r->dst);
        rd_warn("cannot overwrite non-directory '%s' with a directory", p);
        free(p);
        r->errors++;
        free(b);
        return;
    }
    r->roots[idx] = rdc_join(r->dst, rel);
    r->root = r->roots[idx];
    free(b);
}

static void add_dirmeta(struct rcv *r, const char *fs, const struct rdc_meta *m)
{
    if (r->ndirs == r->capdirs) {
        r->capdirs = r->capdirs ? r->capdirs * 2 : 64;
        r->dirs = realloc(r->dirs, r->capdirs * sizeof *r->dirs);
    }
    r->dirs[r->ndirs++] = (struct dirmeta){ strdup(fs), *m };
}

static void remove_old(struct rcv *r, const char *fs)
{
    struct stat st;
    if (lstat(fs, &st) == 0 && !S_ISDIR(st.st_mode))
        unlink(fs);
    (void)r;
}

static int skipped_path(struct rcv *r, const char *rel, size_t n)
{
    return r->skip && n > r->skip_len && rel[r->skip_len] == '/' && memcmp(rel, r->skip, r->skip_len) == 0;
}

/* One record at p (n bytes available). Returns its length, 0 if incomplete, -1 if malformed. */
static ssize_t record(struct rcv *r, const unsigned char *p, size_t n)
{
    struct rdc_rd rd = { p, n, 0, 0 };
    uint8_t type = rdc_get_u8(&rd);
    size_t pl = 0, tl = 0;
    const char *path = NULL, *t = NULL;
    struct rdc_meta m;
    switch (type) {
    case 'R': {
        uint32_t idx = rdc_get_u32(&rd);
        uint8_t kind = rdc_get_u8(&rd), contents = rdc_get_u8(&rd);
        path = rdc_get_str(&rd, &pl);
        if (rd.short_)
            break;
        if (idx > 1000000 || r->in_file)
            return -1;
        start_root(r, idx, kind, contents, path, pl);
        return (ssize_t)rd.off;
    }
    case 'd':
        path = rdc_get_str(&rd, &pl);
        rdc_get_meta(&rd, &m);
        if (rd.short_)
            break;
        if (bad_rel(path, pl) || r->in_file)
            return -1;
        if (r->root && !skipped_path(r, path, pl)) {
            char *fs = path_of(r, r->root, path, pl);
            struct stat st;
            if (mkdir(fs, r->preserve ? 0700 : 0777) && !(errno == EEXIST && stat(fs, &st) == 0 && S_ISDIR(st.st_mode))) {
                err_path(r, "cannot create directory", fs, errno);
                if (!pl) {
                    r->root = NULL;   /* nothing of this root can be made */
                } else {
                    free(r->skip);
                    r->skip = strndup(path, pl);
                    r->skip_len = pl;
                }
            } else {
                add_dirmeta(r, fs, &m);
                r->ndir++;
            }
            free(fs);
        }
        return (ssize_t)rd.off;
    case 'f': {
        path = rdc_get_str(&rd, &pl);
        rdc_get_meta(&rd, &m);
        uint64_t size = rdc_get_u64(&rd), start = rdc_get_u64(&rd);
        uint8_t flags = rdc_get_u8(&rd);
        t = rdc_get_str(&rd, &tl);
        if (rd.short_)
            break;
        if (bad_rel(path, pl) || r->in_file || start > size)
            return -1;
        if (!r->root || skipped_path(r, path, pl)) {
            if (!(flags & RDC_F_SKIP)) {
                r->in_file = 1;
                r->discard = 1;
                r->size = size;
                r->hpos = 0;
            }
            return (ssize_t)rd.off;
        }
        char *fs = path_of(r, r->root, path, pl);
        if (flags & RDC_F_SKIP) {
            if (r->preserve)
                chmod(fs, m.mode & 07777);
            if (r->times)
                set_times_path(fs, &m, 0);
            r->skipped += size;
            r->files++;
        } else {
            begin_file(r, fs, &m, size, start, flags, t, tl);
        }
        free(fs);
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
        end_file(r, status, h);
        return (ssize_t)rd.off;
    }
    case 'l':
        path = rdc_get_str(&rd, &pl);
        rdc_get_meta(&rd, &m);
        t = rdc_get_str(&rd, &tl);
        if (rd.short_)
            break;
        if (bad_rel(path, pl) || r->in_file || memchr(t, '\0', tl))
            return -1;
        if (r->root && !skipped_path(r, path, pl)) {
            char *fs = path_of(r, r->root, path, pl), *target = strndup(t, tl);
            remove_old(r, fs);
            if (symlink(target, fs)) {
                err_path(r, "cannot create symlink", fs, errno);
            } else {
                if (r->preserve && r->owners)
                    lchown(fs, m.uid, m.gid);
                if (r->times)
                    set_times_path(fs, &m, AT_SYMLINK_NOFOLLOW);
                r->files++;
            }
            free(target);
            free(fs);
        }
        return (ssize_t)rd.off;
    case 'h': {
        path = rdc_get_str(&rd, &pl);
        uint32_t root = rdc_get_u32(&rd);
        t = rdc_get_str(&rd, &tl);
        if (rd.short_)
            break;
        if (bad_rel(path, pl) || bad_rel(t, tl) || r->in_file)
            return -1;
        if (r->root && !skipped_path(r, path, pl)) {
            char *fs = path_of(r, r->root, path, pl);
            if (root >= r->nroots || !r->roots[root]) {
                err_path(r, "cannot create hard link", fs, ENOENT);
            } else {
                char *target = path_of(r, r->roots[root], t, tl);
                remove_old(r, fs);
                if (link(target, fs))
                    err_path(r, "cannot create hard link", fs, errno);
                else
                    r->files++;
                free(target);
            }
            free(fs);
        }
        return (ssize_t)rd.off;
    }
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

static int consume(void *ctx, const void *buf, size_t n)
{
    struct rcv *r = ctx;
    const unsigned char *p = buf;
    while (n > 0) {
        if (r->data_left) {
            size_t k = n < r->data_left ? n : (size_t)r->data_left;
            data(r, p, k);
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
    return RD_OK;
}

static int finish(void *ctx)
{
    struct rcv *r = ctx;
    if (!r->ended || r->in_file || r->data_left || r->pend.len)
        return rd_fail(RD_ESTREAM, "tree stream ended inside a record");
    for (size_t i = r->ndirs; i-- > 0;) {   /* deepest first: a read-only dir last */
        struct dirmeta *d = &r->dirs[i];
        if (r->preserve) {
            if (r->owners)
                lchown(d->path, d->m.uid, d->m.gid);
            chmod(d->path, d->m.mode & 07777);
        }
        if (r->times)
            set_times_path(d->path, &d->m, 0);
    }
    return RD_OK;
}

/* ---- resume manifest ---- */

static int man_fd = -1;
static size_t man_base;
static int man_err;

static void emit(const struct rdc_manifest_entry *e)
{
    char *h = rdc_manifest_line(e);
    if (dprintf(man_fd, "m %s\n", h) < 0)
        man_err = 1;
    free(h);
}

static void man_file(const char *fs, const char *rel_final, const char *tmp, const struct stat *st)
{
    struct rdc_manifest_entry e = { .kind = tmp ? 'P' : 'F', .size = (uint64_t)st->st_size,
                                    .mtime_s = st->st_mtim.tv_sec, .mtime_ns = (uint32_t)st->st_mtim.tv_nsec,
                                    .path = (char *)rel_final, .tmp = (char *)tmp };
    if (e.size == 0 && tmp)
        return;
    int fd = open(fs, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    XXH3_state_t *hs = XXH3_createState();
    XXH3_128bits_reset(hs);
    if (rdc_hash_prefix(fd, e.size, hs) == 0) {
        rdc_hash_final(hs, e.hash);
        emit(&e);
    }
    XXH3_freeState(hs);
    close(fd);
}

/* ".rdcp.NAME.XXXXXX" -> "NAME" (malloc'd) or NULL */
static char *tmp_final(const char *base)
{
    size_t pl = strlen(RDC_TMP_PREFIX), n = strlen(base);
    if (strncmp(base, RDC_TMP_PREFIX, pl) || n < pl + 8 || base[n - 7] != '.')
        return NULL;
    return strndup(base + pl, n - pl - 7);
}

static int man_cb(const char *fs, const struct stat *st, int flag, struct FTW *f)
{
    if (flag != FTW_F || !S_ISREG(st->st_mode))
        return 0;
    const char *rel = fs + man_base;
    while (*rel == '/')
        rel++;
    const char *base = fs + f->base;
    char *fin = tmp_final(base);
    if (fin) {
        char *dir = strndup(rel, (size_t)(base - rel > 0 ? base - rel : 0));
        size_t dl = strlen(dir);
        if (dl && dir[dl - 1] == '/')
            dir[dl - 1] = '\0';
        char *relf = rdc_join(dir, fin);
        man_file(fs, relf, base, st);
        free(relf);
        free(dir);
        free(fin);
    } else {
        man_file(fs, rel, NULL, st);
    }
    return 0;
}

static void make_manifest(struct rcv *r)
{
    struct rdc_manifest_entry t = { .kind = 'T', .size = (uint64_t)r->dst_is_dir, .path = "", .tmp = "" };
    emit(&t);
    if (r->dst_is_dir) {
        man_base = strlen(r->dst);
        nftw(r->dst, man_cb, 32, FTW_PHYS);
        return;
    }
    struct stat st;
    if (r->dst_exists && lstat(r->dst, &st) == 0 && S_ISREG(st.st_mode))
        man_file(r->dst, "", NULL, &st);
    /* partial files of DST itself, in its directory */
    char *dir = strdup(r->dst), *slash = strrchr(dir, '/');
    char *base = rdc_basename(r->dst);
    if (slash)
        *slash = '\0';
    const char *d = slash ? (*dir ? dir : "/") : ".";
    DIR *dh = opendir(d);
    struct dirent *de;
    while (dh && (de = readdir(dh))) {
        char *fin = tmp_final(de->d_name);
        if (fin && strcmp(fin, base) == 0) {
            char *fs = rdc_join(d, de->d_name);
            if (lstat(fs, &st) == 0 && S_ISREG(st.st_mode))
                man_file(fs, "", de->d_name, &st);
            free(fs);
        }
        free(fin);
    }
    if (dh)
        closedir(dh);
    free(base);
    free(dir);
}

static void rcv_free(struct rcv *r)
{
    for (size_t i = 0; i < r->ndirs; i++)
        free(r->dirs[i].path);
    free(r->dirs);
    for (size_t i = 0; i < r->nroots; i++)
        free(r->roots[i]);
    free(r->roots);
    rdc_buf_free(&r->pend);
    free(r->skip);
    free(r->final);
    free(r->tmp);
    if (r->hs)
        XXH3_freeState(r->hs);
}

int rdc_tree_recv_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "transport", required_argument, NULL, 't' },
        { "ready-fd", required_argument, NULL, 'F' },
        { "resume", no_argument, NULL, 'R' },
        { "nsrc", required_argument, NULL, 'n' },
        { NULL, 0, NULL, 0 },
    };
    struct rcv r;
    memset(&r, 0, sizeof r);
    r.fd = -1;
    r.nsrc = 1;
    struct rd_opts o;
    rdc_end_init(&o);
    o.timeout_s = 120;
    int resume = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+rLpv", opts, NULL)) != -1) {
        switch (c) {
        case 't': o.transport = rdc_end_transport(optarg); break;
        case 'F': o.ready_fd = atoi(optarg); break;
        case 'R': resume = 1; break;
        case 'n': r.nsrc = atoi(optarg); break;
        case 'p': r.preserve = 1; break;
        case 'r': case 'L': break;
        case 'v': o.verbose++; break;
        default: return 1;
        }
    }
    const char *key = getenv("RDPIPE_KEY");
    if (!key || optind + 1 != argc || o.ready_fd < 0) {
        rd_warn("tree-recv: missing key, ready fd or destination");
        return 1;
    }
    o.key = strdup(key);
    o.key_len = strlen(key);
    o.port = "0";
    r.dst = argv[optind];
    r.times = r.preserve;
    r.owners = r.preserve && geteuid() == 0;
    r.umask = umask(0);
    umask(r.umask);
    struct stat st;
    if (stat(r.dst, &st) == 0) {
        r.dst_exists = 1;
        r.dst_is_dir = S_ISDIR(st.st_mode);
    } else if (errno != ENOENT) {
        char *p = rdc_shown(r.dst);
        rd_warn("cannot access destination '%s': %s", p, strerror(errno));
        free(p);
        free(o.key);
        return RD_EIO;
    }
    r.hs = XXH3_createState();
    man_fd = o.ready_fd;
    if (resume)
        make_manifest(&r);
    struct rd_sink dst;
    rd_sink_custom(&dst, r.dst, consume, finish, &r);
    double t0 = rd_now();
    int rc = rd_recv_sink(&o, &dst);
    double t1 = rd_now();
    if (r.in_file && !r.discard && r.fd >= 0) {
        /* the stream broke inside a file: what the temporary file holds was verified chunk by
         * chunk, so it stays for --resume (never under the final name) */
        close(r.fd);
        char *p = rdc_shown(r.tmp);
        rd_warn("kept the partial file '%s' for --resume", p);
        free(p);
    }
    dprintf(STDERR_FILENO, RDC_TAG "recv %llu %llu %llu %llu %llu %.6f\n", (unsigned long long)r.files,
            (unsigned long long)r.ndir, (unsigned long long)r.bytes, (unsigned long long)r.skipped,
            (unsigned long long)r.errors, t1 - t0);
    free(o.key);
    uint64_t errors = r.errors;
    rcv_free(&r);
    if (rc)
        return rc;
    return errors ? RDC_EXIT_PARTIAL : 0;
}
