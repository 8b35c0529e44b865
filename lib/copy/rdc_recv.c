/* rdc_recv.c - the tree receiver's filesystem side: what each record makes under DST (the
 * stream is parsed in rdc_recv_stream.c). Every file is written under a temporary name in its
 * directory (.rdcp.NAME.XXXXXX) and renamed into place only once all of it arrived (and, for a
 * file sent with its whole-file XXH3-128, once that matched: rdc_tree.h, RDC_F_NOHASH); a failed
 * file leaves nothing under its final name and no temporary file. Small files are written by
 * worker threads (rdc_recv_pool.c); big ones are made here, preallocated, and written on the
 * workers too, piece by piece, out of the frames the engine lends (rd_sink_hold), or here
 * where it cannot lend them.
 *
 * The stream may be hostile (scp's CVE-2019-6111 class: "a -> /etc", then "a/passwd"). So
 * every filesystem call is relative to a directory fd beneath DST opened without following
 * any symlink (rdc_safe.h), names are plain relative paths, and a record may only go into
 * the DST root or a directory this stream made (a 'd' record that found or made a real
 * directory); a hard link may only point at a file this stream wrote. Anything else fails on
 * its own: one line naming it, the rest goes on, exit 23.
 */
#include "copy/rdc_recv_int.h"
#include "copy/rdc_anon.h"
#include "copy/rdc_fold.h"
#include "copy/rdc_safe.h"
#include "copy/rdc_xattr.h"
#include "copy/rdc_set.h"
#include "copy/rdc_tree.h"

#include "engine/rd_hold.h"
#include "engine/rd_io.h"
#include "util/rd_error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

/* base-relative path -> the path the user knows (DST/...), malloc'd */
char *rdc_rcv_disp(struct rdc_rcv *r, const char *rel)
{
    size_t pl = strlen(r->pre);
    char *j;
    if (pl && !(strncmp(rel, r->pre, pl) == 0 && (rel[pl] == '/' || !rel[pl]))) {
        const char *name;   /* DST names a file, and rel is beside it (its partial file) */
        char *dir = rdc_dir_of(r->dst, &name);
        j = rdc_join(dir, rel);
        free(dir);
    } else {
        j = rdc_join(r->dst, pl ? rel + pl + (rel[pl] == '/') : rel);
    }
    char *s = rdc_shown(j);
    free(j);
    return s;
}

void rdc_rcv_err(struct rdc_rcv *r, const char *what, const char *rel, int e)
{
    char *p = rdc_rcv_disp(r, rel);
    rd_warn("%s '%s': %s", what, p, strerror(e));
    free(p);
    r->errors++;
}

void rdc_rcv_xattr_err(struct rdc_rcv *r, const char *name, unsigned more, const char *rel, int e)
{
    char *p = rdc_rcv_disp(r, rel), *n = rdc_shown(name ? name : ""), others[48] = "";
    if (more)
        snprintf(others, sizeof others, " (and %u more)", more);
    rd_warn("cannot set extended attribute '%s'%s of '%s': %s", n, others, p, strerror(e));
    free(n);
    free(p);
    r->errors++;
}

void rdc_rcv_set_xattrs(struct rdc_rcv *r, int fd, const unsigned char *p, size_t n, const char *rel)
{
    char *bad = NULL;
    unsigned more = 0;
    int e = p ? rdc_xattr_apply(fd, p, n, &bad, &more) : 0;
    if (e)
        rdc_rcv_xattr_err(r, bad, more, rel, e);
    free(bad);
}

static void refuse(struct rdc_rcv *r, const char *rel, const char *why)
{
    char *p = rdc_rcv_disp(r, rel);
    rd_warn("refusing '%s': %s", p, why);
    free(p);
    r->errors++;
}

/* a name that is no path: shown with its bad bytes escaped (NUL as \000) */
static void refuse_raw(struct rdc_rcv *r, const char *name, size_t n, const char *why)
{
    char *s = malloc(4 * n + 1), *o = s;
    if (!s)
        rd_oom();
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7f || c == '\\')
            o += sprintf(o, "\\%03o", c);
        else
            *o++ = (char)c;
    }
    *o = '\0';
    char *p = rdc_rcv_disp(r, r->root ? r->root : "");   /* s is shown already: not twice */
    rd_warn("refusing '%s/%s': %s", p, s, why);
    free(p);
    free(s);
    r->errors++;
}

/* A directory the records go into, on a filesystem other than DST's (mounted beneath it):
 * keep an fd of it, for its syncfs at the end */
static void note_mount(struct rdc_rcv *r, int fd)
{
    struct stat st;
    if (r->nosync || fstat(fd, &st) || st.st_dev == r->base_dev)
        return;
    for (size_t i = 0; i < r->nmounts; i++)
        if (r->mount_dev[i] == st.st_dev)
            return;
    if (r->nmounts == RDC_MAX_MOUNTS) {
        r->more_mounts = 1;
        return;
    }
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) {
        r->more_mounts = 1;
        return;
    }
    r->mount_dev[r->nmounts] = st.st_dev;
    r->mount_fd[r->nmounts++] = dup;
}

/* The directory of the records (kept open, and shared with the jobs that write into it); -1
 * with errno if it cannot be reached safely. */
static int parent_fd(struct rdc_rcv *r, const char *dir)
{
    if (r->pfd >= 0 && strcmp(r->pdir, dir) == 0)
        return r->pfd;
    rdc_dir_put(r->pdh);
    r->pdh = NULL;
    r->pfd = -1;
    free(r->pdir);
    r->pdir = NULL;
    int fd = rdc_open_beneath(r->base, dir);
    if (fd < 0)
        return -1;
    note_mount(r, fd);
    r->pdh = malloc(sizeof *r->pdh);
    if (!r->pdh)
        rd_oom();
    r->pdh->fd = fd;
    atomic_init(&r->pdh->refs, 1);
    r->pfd = fd;
    r->pdir = strdup(dir);
    return r->pfd;
}

/* The record path rel of the current root: its base-relative path (malloc'd) and the fd of
 * its directory, or NULL after one line saying why (the record is then dropped). */
static char *place(struct rdc_rcv *r, const char *rel, size_t n, int *pfd, const char **name)
{
    if (n) {
        const char *why = rdc_name_bad(rel, n);
        if (why) {
            refuse_raw(r, rel, n, why);
            return NULL;
        }
    }
    char *t = strndup(rel, n), *f = rdc_join(r->root, t);
    free(t);
    if (!*f) {
        refuse(r, f, "the destination directory itself is not a file");
        free(f);
        return NULL;
    }
    char *dir = rdc_dir_of(f, name);
    /* the root itself goes into base; anything else only into a directory this stream made */
    if (strcmp(f, r->root) != 0 && !rdc_set_has(&r->made_dirs, dir)) {
        refuse(r, f, "not inside a directory this copy made (a symlink, a file or a foreign directory is in the way)");
        free(dir);
        free(f);
        return NULL;
    }
    *pfd = parent_fd(r, dir);
    if (*pfd < 0) {
        rdc_rcv_err(r, "cannot open the directory of", f, errno);
        free(dir);
        free(f);
        return NULL;
    }
    free(dir);
    return f;
}

/* the current file's pieces written, its job forgotten: r->fd is the stream thread's alone
 * again (to close it, or keep it for --resume). Returns a piece's write error, or 0. */
int rdc_rcv_settle(struct rdc_rcv *r)
{
    if (!r->big)
        return 0;
    rdc_pool_quiesce(r);
    int e = atomic_load(&r->big->werr);
    rdc_job_free(r->big);
    r->big = NULL;
    return e;
}

static void drop_file(struct rdc_rcv *r)
{
    if (r->final)   /* its hard links say why they are not made */
        rdc_set_add(&r->failed_files, r->final);
    rdc_rcv_settle(r);
    if (r->fd >= 0)
        close(r->fd);
    if (r->tmp && r->tdfd >= 0)
        unlinkat(r->tdfd, r->tmp, 0);
    r->fd = -1;
}

/* The current file's temporary, complete, kept for its hard links (struct rdc_orphan) */
static void keep_orphan(struct rdc_rcv *r)
{
    int dfd = fcntl(r->tdfd, F_DUPFD_CLOEXEC, 0);
    if (dfd < 0) {
        unlinkat(r->tdfd, r->tmp, 0);
        return;
    }
    if (r->norphans == r->caporphans) {
        r->caporphans = r->caporphans ? r->caporphans * 2 : 16;
        r->orphans = realloc(r->orphans, r->caporphans * sizeof *r->orphans);
        if (!r->orphans)
            rd_oom();
    }
    r->orphans[r->norphans++] = (struct rdc_orphan){ .final = r->final, .dfd = dfd, .tmp = r->tmp };
    r->final = r->tmp = NULL;
}

static struct rdc_orphan *find_orphan(struct rdc_rcv *r, const char *final)
{
    for (size_t i = r->norphans; i-- > 0;)   /* the latest: a name may fail twice (two roots) */
        if (strcmp(r->orphans[i].final, final) == 0)
            return &r->orphans[i];
    return NULL;
}

void rdc_rcv_orphans_free(struct rdc_rcv *r)
{
    for (size_t i = 0; i < r->norphans; i++) {
        struct rdc_orphan *o = &r->orphans[i];
        if (o->tmp)   /* none of its names could be made */
            unlinkat(o->dfd, o->tmp, 0);
        close(o->dfd);
        free(o->final);
        free(o->alias);
        free(o->tmp);
    }
    free(r->orphans);
    r->orphans = NULL;
    r->norphans = r->caporphans = 0;
}

static void clear_file(struct rdc_rcv *r)
{
    rdc_rcv_settle(r);
    rdc_job_free(r->job);
    r->job = NULL;
    free(r->final);
    free(r->name);
    free(r->tmp);
    free(r->xattr);
    r->xattr = NULL;
    r->final = r->name = r->tmp = NULL;
    r->fd = -1;
    r->tdfd = -1;
    r->linked = r->orphan = 0;
    r->in_file = 0;
    r->discard = 0;
    r->got = 0;
}

/* rel is a name this copy made, or is making (in a worker, or here): rdc_stale_ours_fn */
static int made_or_making(void *ctx, const char *rel)
{
    struct rdc_rcv *r = ctx;
    return rdc_set_has(&r->made_files, rel) || rdc_set_has(&r->made_others, rel) ||
           rdc_set_has(&r->earlier, rel) || rdc_pool_pending(r, rel) || (r->in_file && r->final && strcmp(r->final, rel) == 0);
}

/* a file whose records are read and dropped */
static void discard_file(struct rdc_rcv *r, uint64_t size, uint8_t flags)
{
    if (flags & RDC_F_SKIP)
        return;
    r->in_file = 1;
    r->discard = 1;
    r->size = size;
    r->hpos = 0;
}

static void set_times_at(int dfd, const char *name, const struct rdc_meta *m)
{
    struct timespec ts[2];
    rdc_meta_times(m, ts);
    utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW);
}

/* The mode a new file is made with. Without -p, as cp makes one: the source's permission
 * bits, and the kernel applies the umask or the directory's default ACL (an fchmod to
 * mode & ~umask afterwards overrode the ACL: a directory whose default ACL keeps others out
 * got world-readable copies), plus owner read and write while it is written (--resume reads
 * and writes a partial file again), taken back by final_mode. With -p: 0600 until the exact
 * mode is set at the end. */
static mode_t create_mode(const struct rdc_rcv *r, mode_t mode)
{
    return r->preserve ? 0600 : (mode & 0777) | 0600;
}

/* The file's mode before it is named: with -p the source's, all 12 bits, but setuid, setgid
 * and sticky only on a file that has the source's owner and group (cp -p drops them too
 * when it cannot set both: a setuid program copied by another user must not run as that
 * user); else what it was made with, less the owner bits the source lacks (nothing to do,
 * and no syscall, for the usual owner rw). Never wider than the kernel made it. */
static void final_mode(const struct rdc_rcv *r, int fd, const struct rdc_meta *m)
{
    struct stat st;
    mode_t mode = m->mode & 07777, drop = 0600 & ~mode;
    if (r->preserve) {
        if ((mode & 07000) && (fstat(fd, &st) || st.st_uid != m->uid || st.st_gid != m->gid))
            mode &= 0777;
        fchmod(fd, mode);
    } else if (drop && fstat(fd, &st) == 0) {
        fchmod(fd, st.st_mode & 07777 & ~drop);
    }
}

/* A file for the pool: sent whole and unhashed (the tags cover it), small, no holes. */
static int pooled(const struct rdc_rcv *r, uint64_t size, uint64_t start, uint8_t flags)
{
    return r->workers > 0 && (flags & RDC_F_NOHASH) && !(flags & (RDC_F_SPARSE | RDC_F_LINKED)) && start == 0 &&
           size <= RDC_POOL_MAX_FILE && size <= r->max_file;
}

/* Open the file's temporary (new, or the partial one the sender continues) in pfd; or, for the
 * pool, start gathering its data. */
static void begin_file(struct rdc_rcv *r, char *f, const char *name, const struct rdc_meta *m, uint64_t size,
                       uint64_t start, uint8_t flags, const char *tmpname, size_t tmplen)
{
    r->in_file = 1;
    r->final = f;
    r->name = strdup(name);
    r->m = *m;
    r->size = size;
    r->hpos = 0;
    r->fd = -1;
    r->tdfd = r->pfd;
    r->linked = (flags & RDC_F_LINKED) != 0;
    /* a continued file is always hashed: the prefix already here was never in a tagged frame */
    r->hashed = !(flags & RDC_F_NOHASH) || start > 0;
    if (pooled(r, size, start, flags)) {
        struct rdc_job *j = calloc(1, sizeof *j);
        if (!j)
            rd_oom();
        j->final = strdup(f);
        j->name = strdup(name);
        j->key = rdc_pool_key(f);
        j->m = *m;
        j->size = size;
        j->fd = -1;
        j->ptail = &j->pieces;
        j->dir = r->pdh;
        atomic_fetch_add(&r->pdh->refs, 1);
        r->job = j;
        return;
    }
    XXH3_128bits_reset(r->hs);
    if (start > 0 && tmplen) {
        char *t = strndup(tmpname, tmplen);
        int ours = strlen(t) == tmplen && !strchr(t, '/') &&
                   strncmp(t, RDC_TMP_PREFIX, strlen(RDC_TMP_PREFIX)) == 0;
        int made = 0;   /* a name this copy made (a source file named like a partial) is no partial */
        if (ours) {
            const char *nm;
            char *dir = rdc_dir_of(f, &nm), *rel = rdc_join(dir, t);
            made = made_or_making(r, rel);
            free(rel);
            free(dir);
        }
        struct stat st;
        if (ours && !made)
            r->fd = openat(r->pfd, t, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (r->fd >= 0 && (fstat(r->fd, &st) || !S_ISREG(st.st_mode))) {
            close(r->fd);
            r->fd = -1;
            errno = EINVAL;
        }
        if (r->fd >= 0 && st.st_nlink != 1) {
            /* one rdcp made has one name: another one may lead out of DST, and it is
             * written in place */
            close(r->fd);
            r->fd = -1;
            errno = EMLINK;
        }
        if (r->fd >= 0 && rdc_tmp_lock(r->fd)) {
            close(r->fd);   /* another rdcp is writing it */
            r->fd = -1;
            errno = EBUSY;
        }
        if (r->fd < 0 || rdc_hash_prefix(r->fd, start, r->hs) || ftruncate(r->fd, (off_t)start)) {
            rdc_rcv_err(r, "cannot continue the partial file of", f, made ? EEXIST : ours ? errno : EINVAL);
            if (r->fd >= 0)
                close(r->fd);
            r->fd = -1;
            free(t);   /* leave it: it was not ours to remove in this run */
            r->discard = 1;
        } else {
            r->tmp = t;
            r->hpos = start;
            r->skipped += start;
        }
        return;
    }
    r->fd = rdc_create_tmp(r->pfd, name, create_mode(r, m->mode), &r->tmp);
    if (r->fd < 0) {
        rdc_rcv_err(r, "cannot create a file in the directory of", f, errno);
        r->tmp = NULL;
        if (r->linked && start == 0 && size <= r->max_file &&
            (r->fd = rdc_create_tmp(r->base, name, create_mode(r, m->mode), &r->tmp)) >= 0) {
            r->tdfd = r->base;   /* kept for its hard links (an orphan) */
            r->orphan = 1;
            return;
        }
        r->tmp = NULL;
        r->fd = -1;
        rdc_set_add(&r->failed_files, f);   /* its hard links say why they are not made */
        r->discard = 1;
        return;
    }
    struct statvfs vs;
    if (size > r->max_file) {
        rdc_rcv_err(r, "cannot write", f, EFBIG);
        drop_file(r);
        r->discard = 1;
    } else if (size && !(flags & RDC_F_SPARSE)) {
        /* more than is free fails at once, without filling the disk for everyone first */
        int e = fstatvfs(r->fd, &vs) == 0 && vs.f_frsize && size / vs.f_frsize >= vs.f_bavail ? ENOSPC : 0;
        if (!e && fallocate(r->fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)size))
            e = errno;
        if (e == ENOSPC || e == EDQUOT) {
            rdc_rcv_err(r, "cannot write", f, e);
            drop_file(r);
            r->discard = 1;
        }
    }
}

/* n zeros into the current file's hash (a hole of a hashed file, whose size the sender
 * names): 0, or -1 once the transfer failed meanwhile (r->lost; the file stays partial) */
static int hash_hole(struct rdc_rcv *r, uint64_t n)
{
    if (rdc_hash_zeros(r->hs, n, r->sink ? r->sink->stop : NULL) == 0)
        return 0;
    r->lost = 1;
    return -1;
}

void rdc_rcv_end_file(struct rdc_rcv *r, uint8_t status, const unsigned char want[16])
{
    if (r->job) {   /* all of it is here: a worker writes it (or nobody: the source failed) */
        struct rdc_job *j = r->job;
        r->job = NULL;
        if (status) {
            rdc_job_free(j);
        } else {
            if (j->data)   /* pieces: the worker sets the size, a tail hole stays one */
                memset(j->data + r->hpos, 0, (size_t)(j->size - r->hpos));
            j->got = r->got;
            rdc_pool_submit(r, j);
        }
        clear_file(r);
        return;
    }
    if (r->discard || status) {
        if (status && !r->discard)
            drop_file(r);   /* the sender said why */
        clear_file(r);
        return;
    }
    if (r->big) {   /* its pieces are on the workers: so is the rest */
        struct rdc_job *j = r->big;
        r->big = NULL;
        j->name = r->name;
        j->size = r->size;
        j->m = r->m;
        j->tmp = r->tmp;
        j->xattr = r->xattr;
        j->xattr_len = r->xattr_len;
        j->got = r->got;
        r->name = r->tmp = NULL;
        r->xattr = NULL;
        r->fd = -1;
        rdc_pool_end_big(r, j);
        clear_file(r);
        return;
    }
    unsigned char got[16] = { 0 };
    if (r->hashed) {
        if (hash_hole(r, r->size - r->hpos))
            return;
        rdc_hash_final(r->hs, got);
    }
    int fd = r->fd;
    if (ftruncate(fd, (off_t)r->size)) {
        rdc_rcv_err(r, "cannot write", r->final, errno);
        goto fail;
    }
    if (r->hashed && memcmp(got, want, 16)) {
        char *p = rdc_rcv_disp(r, r->final);
        rd_warn("whole-file hash mismatch, not copied: '%s'", p);
        free(p);
        r->errors++;
        goto fail;
    }
    if (r->preserve && r->owners && fchown(fd, r->m.uid, r->m.gid))
        rdc_rcv_err(r, "cannot set the owner of", r->final, errno);
    final_mode(r, fd, &r->m);
    rdc_rcv_set_xattrs(r, fd, r->xattr, r->xattr_len, r->final);   /* after the owner: a chown clears some */
    if (r->times) {
        struct timespec ts[2];
        rdc_meta_times(&r->m, ts);
        futimens(fd, ts);
    }
    r->fd = -1;
    if (close(fd)) {
        rdc_rcv_err(r, "cannot write", r->final, errno);
        unlinkat(r->tdfd, r->tmp, 0);
        clear_file(r);
        return;
    }
    if (r->orphan) {   /* its name was refused (said): its hard links may take it */
        keep_orphan(r);
        clear_file(r);
        return;
    }
    if (renameat(r->pfd, r->tmp, r->pfd, r->name)) {
        rdc_rcv_err(r, "cannot rename into place", r->final, errno);
        if (r->linked)   /* something in the way: its other names still get it */
            keep_orphan(r);
        else
            unlinkat(r->pfd, r->tmp, 0);
        clear_file(r);
        return;
    }
    rdc_set_add(&r->made_files, r->final);
    rdc_stale_done(&r->stale, r->pfd, r->final, made_or_making, r);
    r->files++;
    r->copied += r->got;
    clear_file(r);
    return;
fail:
    drop_file(r);
    clear_file(r);
}

/* A small file's bytes into fd: its data, or its pieces out of the frames they came in (each
 * frame given back as soon as it is written). 0, or the errno of the write that failed. */
static int write_small(int fd, struct rdc_job *j)
{
    if (j->data)
        return rdc_pwrite_all(fd, j->data, (size_t)j->size, 0);
    uint64_t end = 0;
    while (j->pieces) {
        struct rdc_piece *pc = j->pieces;
        int e = rdc_pwrite_all(fd, pc->p, pc->n, pc->off);
        if (e)
            return e;   /* the rest go back with the job */
        end = pc->off + pc->n;
        j->pieces = pc->next;
        j->npieces--;
        rd_hold_drop(pc->hold);
        free(pc);
    }
    j->ptail = &j->pieces;
    return end < j->size && ftruncate(fd, (off_t)j->size) ? errno : 0;
}

/* A worker: the job's file, the same calls (less the hash and the preallocation, which one
 * write of at most RDC_POOL_MAX_FILE bytes does not need) as the stream thread makes for a
 * file it writes itself, but made without a name (rdc_anon.h) where the kernel can: named
 * only once complete, with one directory entry instead of a temporary one and a rename; a
 * name already taken is replaced by a rename as before. The outcome stays in the job for
 * rdc_rcv_job_done. */
void rdc_rcv_write_job(const struct rdc_rcv *r, struct rdc_job *j)
{
    int dfd = j->dir->fd;
    char *tmp = j->tmp;
    int fd = j->fd, anon = 0;
    j->tmp = NULL;
    j->fd = -1;
    if (fd >= 0) {   /* a big file: made by the stream thread, its pieces written */
        if ((j->err = atomic_load(&j->werr)) || ftruncate(fd, (off_t)j->size)) {
            j->what = "cannot write";
            j->err = j->err ? j->err : errno;
            goto fail;
        }
        goto written;
    }
    fd = rdc_anon_open(dfd, create_mode(r, j->m.mode));
    anon = fd >= 0;
    if (!anon)
        fd = rdc_create_tmp(dfd, j->name, create_mode(r, j->m.mode), &tmp);
    if (fd < 0) {
        j->what = "cannot create a file in the directory of";
        j->err = errno;
        return;
    }
    if ((j->err = write_small(fd, j))) {
        j->what = "cannot write";
        goto fail;
    }
written:
    if (r->preserve && r->owners && fchown(fd, j->m.uid, j->m.gid))
        j->owner_err = errno;
    final_mode(r, fd, &j->m);
    if (j->xattr)
        j->xattr_err = rdc_xattr_apply(fd, j->xattr, j->xattr_len, &j->xattr_failed, &j->xattr_more);
    if (r->times) {
        struct timespec ts[2];
        rdc_meta_times(&j->m, ts);
        futimens(fd, ts);
    }
    if (anon) {
        if (rdc_anon_link(fd, dfd, j->name) == 0) {
            if (close(fd) == 0)
                return;
            /* a late write error after the name was given: take the name back */
            j->what = "cannot write";
            j->err = errno;
            unlinkat(dfd, j->name, 0);
            return;
        }
        if (errno != EEXIST) {
            j->what = "cannot create a file in the directory of";
            j->err = errno;
            goto fail;
        }
        if (rdc_anon_replace(fd, dfd, j->name, &j->what))
            j->err = errno;
        return;
    }
    int c = close(fd);
    fd = -1;
    if (c) {
        j->what = "cannot write";
        j->err = errno;
        goto fail;
    }
    if (renameat(dfd, tmp, dfd, j->name)) {
        j->what = "cannot rename into place";
        j->err = errno;
        goto fail;
    }
    free(tmp);
    return;
fail:
    if (fd >= 0)
        close(fd);
    if (tmp)
        unlinkat(dfd, tmp, 0);
    free(tmp);
}

void rdc_rcv_job_done(struct rdc_rcv *r, struct rdc_job *j)
{
    if (j->owner_err)
        rdc_rcv_err(r, "cannot set the owner of", j->final, j->owner_err);
    if (j->xattr_err)
        rdc_rcv_xattr_err(r, j->xattr_failed, j->xattr_more, j->final, j->xattr_err);
    if (j->what) {
        rdc_rcv_err(r, j->what, j->final, j->err);
        rdc_set_add(&r->failed_files, j->final);
        return;
    }
    rdc_set_add(&r->made_files, j->final);
    rdc_stale_done(&r->stale, j->dir->fd, j->final, made_or_making, r);
    r->files++;
    r->copied += j->got;
}

int rdc_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
    for (size_t done = 0; done < n;) {
        ssize_t w = pwrite(fd, (const char *)p + done, n - done, (off_t)(off + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : ENOSPC;
        done += (size_t)w;
    }
    return 0;
}

/* A big file's bytes to the workers, in the frame they came in: 1 when they took them. A
 * hashed file (--resume) stays here, hashed in order as it is written. So does a piece under
 * RDC_PIECE_MIN (a chunk's tail, a small extent of a sparse file): a stream of 1-byte 'D'
 * records would otherwise cost a piece per byte, bounded only by the ring it holds. */
#define RDC_PIECE_MIN (64u << 10)
static int lend_piece(struct rdc_rcv *r, const unsigned char *p, size_t n)
{
    if (r->hashed || r->linked || !r->sink || !r->workers || n < RDC_PIECE_MIN)
        return 0;
    struct rd_hold *h = rd_sink_hold(r->sink);
    if (!h)
        return 0;
    if (!r->big) {
        struct rdc_job *j = calloc(1, sizeof *j);
        if (!j)
            rd_oom();
        j->final = strdup(r->final);
        j->key = rdc_pool_key(r->final);
        j->fd = r->fd;
        j->ptail = &j->pieces;
        j->dir = r->pdh;
        atomic_fetch_add(&r->pdh->refs, 1);
        r->big = j;
    }
    if (rdc_pool_piece(r, r->big, p, n, r->data_off, h)) {
        rd_hold_drop(h);
        return 0;
    }
    return 1;
}

/* A small file's n bytes at r->data_off, kept in the frame they came in: 1 when the job took
 * them as a piece, 0 when they must be copied (into data it has already, past its pieces, or
 * with no frame to hold: a compressed frame, the fuzzer's stream). While file creation lags,
 * the ring is then the only cushion: the network waits for the workers. Copying once half the
 * ring was lent, to keep it flowing, cost CPU that file creation needed: 20,000 files of
 * 1-64 KiB copied locally, 6 rounds, median 1.79 s and 3.40 CPU s, against 1.63 s and 3.12
 * CPU s without, 1.98 s and 3.80 CPU s with every byte copied (2026-11-28). */
static int hold_small(struct rdc_rcv *r, struct rdc_job *j, const unsigned char *p, size_t n)
{
    if (j->data || j->npieces >= RDC_JOB_PIECES || !r->sink)
        return 0;
    struct rd_hold *h = rd_sink_hold(r->sink);
    if (!h)
        return 0;
    struct rdc_piece *pc = malloc(sizeof *pc);
    if (!pc)
        rd_oom();
    *pc = (struct rdc_piece){ .p = p, .n = n, .off = r->data_off, .hold = h };
    *j->ptail = pc;
    j->ptail = &pc->next;
    j->npieces++;
    return 1;
}

void rdc_rcv_data(struct rdc_rcv *r, const unsigned char *p, size_t n)
{
    if (r->job) {   /* record() kept [data_off, +n) inside the file and after hpos */
        struct rdc_job *j = r->job;
        if (!hold_small(r, j, p, n)) {
            if (!j->data)
                rdc_job_own(j);
            memset(j->data + r->hpos, 0, (size_t)(r->data_off - r->hpos));
            memcpy(j->data + r->data_off, p, n);
        }
        r->hpos = r->data_off + n;
        r->bytes += n;
        r->got += n;
        r->data_off += n;
        r->data_left -= n;
        return;
    }
    if (r->discard || r->fd < 0) {
        r->data_off += n;
        r->data_left -= n;
        return;
    }
    if (r->data_off > r->hpos) {
        if (r->hashed && hash_hole(r, r->data_off - r->hpos))
            return;
        r->hpos = r->data_off;
    }
    if (r->hashed)
        XXH3_128bits_update(r->hs, p, n);
    r->hpos += n;
    int e = lend_piece(r, p, n) ? 0 : rdc_pwrite_all(r->fd, p, n, r->data_off);
    if (e) {
        rdc_rcv_err(r, "cannot write", r->final, e);
        drop_file(r);
        r->discard = 1;
    }
    r->bytes += n;
    r->got += n;
    r->data_off += n;
    r->data_left -= n;
}

/* a root that cannot go where DST says: the line (fmt names DST; NULL: said already),
 * counted; its records are dropped (r->root stays NULL) */
static void refuse_root(struct rdc_rcv *r, const char *fmt, char *b) __attribute__((format(printf, 2, 0)));
static void refuse_root(struct rdc_rcv *r, const char *fmt, char *b)
{
    if (fmt) {
        char *p = rdc_shown(r->dst);
        rd_warn(fmt, p);
        free(p);
    }
    r->errors++;
    free(b);
}

void rdc_rcv_root(struct rdc_rcv *r, uint32_t idx, uint8_t kind, uint8_t contents, const char *base, size_t bl)
{
    char *b = strndup(base, bl);
    r->root = NULL;
    free(r->skip);
    r->skip = NULL;
    if (idx >= r->nroots) {
        size_t n = idx + 1;
        r->roots = realloc(r->roots, n * sizeof *r->roots);
        if (!r->roots)
            rd_oom();
        for (size_t i = r->nroots; i < n; i++)
            r->roots[i] = NULL;
        r->nroots = n;
    }
    free(r->roots[idx]);
    r->roots[idx] = NULL;
    /* a name that is no single component goes where the contents of a directory go */
    int weird = rdc_name_bad(base, bl) || strchr(b, '/');
    const char *rel = rdc_root_rel(r->dst_is_dir, r->nsrc, contents || weird, b);
    if (!rel) {   /* several sources into a DST that is no directory: said once */
        refuse_root(r, r->dst_not_dir++ ? NULL : "destination '%s' is not a directory", b);
        return;
    }
    /* "DIR/" names a directory: a file or a link must not take the name DIR (cp refuses too) */
    if (kind != 'd' && !r->dst_exists && !*rel && r->dst[0] && r->dst[strlen(r->dst) - 1] == '/') {
        refuse_root(r, "destination '%s' is not a directory", b);
        return;
    }
    /* cp writes into such a DST; renaming a file over it (as over a file) would replace the
     * node, exit 0, with nothing written to the device: `rdcp big host:/dev/null` as root
     * made /dev/null a file (before 2026-11-29) */
    if (r->dst_special && !*rel) {
        char fmt[160];
        snprintf(fmt, sizeof fmt, "destination '%%s' is %s: rdcp writes files, never into one (rdrecv FILE does)",
                 r->dst_special);
        refuse_root(r, fmt, b);
        return;
    }
    if (kind == 'd' && r->dst_exists && !r->dst_is_dir && !*rel) {
        refuse_root(r, "cannot overwrite non-directory '%s' with a directory", b);
        return;
    }
    r->roots[idx] = rdc_join(r->pre, rel);
    r->root = r->roots[idx];
    free(b);
}

static void add_dirmeta(struct rdc_rcv *r, const char *f, const struct rdc_meta *m, mode_t drop)
{
    if (r->ndirs == r->capdirs) {
        r->capdirs = r->capdirs ? r->capdirs * 2 : 64;
        r->dirs = realloc(r->dirs, r->capdirs * sizeof *r->dirs);
        if (!r->dirs)
            rd_oom();
    }
    r->dirs[r->ndirs++] = (struct dirmeta){ strdup(f), *m, drop, NULL, 0 };
}

/* a file or symlink in the way of a new link (never a directory) */
static void remove_old(int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
        unlinkat(dfd, name, 0);
}

static int skipped_path(struct rdc_rcv *r, const char *rel, size_t n)
{
    return r->skip && n > r->skip_len && rel[r->skip_len] == '/' && memcmp(rel, r->skip, r->skip_len) == 0;
}

static void skip_subtree(struct rdc_rcv *r, const char *rel, size_t n)
{
    if (!n) {
        r->root = NULL;   /* nothing of this root can be made */
        return;
    }
    free(r->skip);
    r->skip = malloc(n);   /* n bytes as they came: a NUL inside (refused) must not shorten it */
    if (r->skip)
        memcpy(r->skip, rel, n);
    r->skip_len = r->skip ? n : 0;
}

#define FOLDS_ONTO "this filesystem takes it for a name this copy just made (it folds case or Unicode's forms)"

/* pfd holds an entry spelled exactly name (readdir: a lookup would fold case) */
static int entry_named(int pfd, const char *name)
{
    int fd = fcntl(pfd, F_DUPFD_CLOEXEC, 0), found = 0;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 1;   /* cannot tell: as on a filesystem that tells case apart */
    }
    rewinddir(d);   /* the dup shares its offset with pfd */
    for (struct dirent *de; !found && (de = readdir(d));)
        found = strcmp(de->d_name, name) == 0;
    closedir(d);
    return found;
}

/* On a filesystem that folds case (FAT, exFAT, ext4 casefold, SMB) 'a' after 'A' is the
 * entry 'A' again (on ext4 casefold, 'é' after 'e' + U+0301 too), and writing it would replace what this copy just made under another
 * spelling, with exit 0 (cp refuses it: "File exists"). Only a path whose folded spelling
 * (rdc_fold_key) this copy already took is looked at (so nothing is looked up per file): once
 * what the other spelling's worker writes is in place, a lookup of this name that finds an
 * entry no readdir spells so is that entry. 1: refused (one line, exit 23). */
static int folds_onto_made(struct rdc_rcv *r, const char *f, int pfd, const char *name)
{
    char *k = rdc_fold_key(f);
    int seen = rdc_set_has(&r->made_folded, k);
    if (!seen)
        rdc_set_add(&r->made_folded, k);
    free(k);
    if (!seen)
        return 0;
    rdc_pool_reap(r, 1);
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) || entry_named(pfd, name))
        return 0;
    refuse(r, f, FOLDS_ONTO);
    return 1;
}

void rdc_rcv_dir(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m)
{
    r->xdir = -1;
    if (!r->root || skipped_path(r, path, pl))
        return;
    char *t = strndup(path, pl), *f = rdc_join(r->root, t);
    free(t);
    if (!*f) {   /* the DST directory itself */
        add_dirmeta(r, f, m, 0);
        r->xdir = (long)r->ndirs - 1;
        r->ndir++;
        free(f);
        return;
    }
    free(f);
    int pfd;
    const char *name;
    f = place(r, path, pl, &pfd, &name);
    if (!f) {
        skip_subtree(r, path, pl);
        return;
    }
    if (rdc_pool_pending(r, f))   /* a job still writes that name: it comes first, as sent */
        rdc_pool_reap(r, 1);
    if (!rdc_set_has(&r->made_dirs, f) && folds_onto_made(r, f, pfd, name)) {   /* 'Dir' after 'dir' */
        free(f);
        skip_subtree(r, path, pl);
        return;
    }
    /* without -p as cp -r makes it: the source's bits and its sticky bit (not setuid or
     * setgid), the umask or the default ACL applied by the kernel, owner rwx while the copy
     * fills it (taken back at the end) */
    struct stat st;
    int made = mkdirat(pfd, name, r->preserve ? 0700 : (m->mode & 01777) | 0700) == 0;
    if (!made && !(errno == EEXIST && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))) {
        rdc_rcv_err(r, "cannot create directory", f, errno);
        skip_subtree(r, path, pl);
    } else {
        rdc_set_add(&r->made_dirs, f);
        if (made)
            rdc_stale_made(&r->stale, f);
        add_dirmeta(r, f, m, made && !r->preserve ? 0700 & ~m->mode : 0);
        r->xdir = (long)r->ndirs - 1;
        r->ndir++;
    }
    free(f);
}

/* Two sources of one copy that land on one name (rdcp a/x b/x DST/): the second would replace
 * what the first just made, and exit 0 with the first's data gone. cp refuses the second
 * ("will not overwrite just-created"); so does this, for anything but a directory made here
 * or still in a worker's hands. Refused: 1. */
static int refuse_just_made(struct rdc_rcv *r, const char *f)
{
    if (!made_or_making(r, f))
        return 0;
    refuse(r, f, "this copy just made it from another source (two sources with one name)");
    return 1;
}

/* A device node where a record would land (`rdcp ./null host:/dev/`): every record replaces
 * what is in its way (a file, a link, a FIFO), as rsync does, but a device node is refused
 * as DST itself is (rdc_rcv_root): renaming over /dev/null would replace it, exit 0. 1 if so
 * (said). */
static int device_in_the_way(struct rdc_rcv *r, const char *f, int pfd, const char *name)
{
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
        return 0;
    refuse(r, f, S_ISCHR(st.st_mode) ? "a character device is in the way: rdcp replaces no device node"
                                     : "a block device is in the way: rdcp replaces no device node");
    return 1;
}

/* Whether setting m on a file with st would change it: its owner or mode (-p), its mtime, or
 * its attributes (-X: they come after, and are not compared). */
static int meta_differs(const struct rdc_rcv *r, const struct stat *st, const struct rdc_meta *m)
{
    /* the mode skipped_file sets: setuid, setgid and sticky only with the source's owner */
    int owned = r->owners || (st->st_uid == m->uid && st->st_gid == m->gid);
    return (r->preserve && ((r->owners && (st->st_uid != m->uid || st->st_gid != m->gid)) ||
                            (st->st_mode & 07777) != (m->mode & (owned ? 07777 : 0777)))) ||
           (r->times && (st->st_mtim.tv_sec != m->mtime_s || st->st_mtim.tv_nsec != (long)m->mtime_ns)) ||
           r->xattrs;
}

/* A file complete at the destination (--resume): only its metadata, set through one fd that
 * was checked to be that regular file, of that size, under that one name. A file with other
 * names whose metadata would change (a hard link: from a snapshot made with cp -al, or by
 * anyone who could write here, to a file outside DST) is first made a file of its own, a copy
 * under a temporary name renamed over this one: the source's owner, mode, times and
 * attributes reach no other name (before 2026-11-29 they did, as rsync's do). */
static void skipped_file(struct rdc_rcv *r, char *f, int pfd, const char *name, const struct rdc_meta *m,
                         uint64_t size)
{
    struct stat st;
    int fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        refuse(r, f, "said to be complete here, but no regular file is");
        goto refused;
    }
    if ((uint64_t)st.st_size != size) {
        refuse(r, f, "said to be complete here, but the file here has another size");
        goto refused;
    }
    if (st.st_nlink > 1 && meta_differs(r, &st, m)) {
        int own = rdc_unshare(pfd, name, fd, &st);
        if (own < 0) {
            rdc_rcv_err(r, "cannot make a file of its own (it is a hard link here) of", f, errno);
            goto refused;
        }
        close(fd);
        fd = own;
        if (fstat(fd, &st))
            st.st_uid = st.st_gid = (uid_t)-1;
    }
    if (r->preserve) {
        int owned = st.st_uid == m->uid && st.st_gid == m->gid;
        if (!owned && r->owners) {
            if (fchown(fd, m->uid, m->gid))
                rdc_rcv_err(r, "cannot set the owner of", f, errno);
            else
                owned = 1;
        }
        /* setuid, setgid and sticky only with the source's owner and group (final_mode) */
        if (fchmod(fd, m->mode & (owned ? 07777 : 0777)))
            rdc_rcv_err(r, "cannot set the mode of", f, errno);
    }
    if (r->times) {
        struct timespec ts[2];
        rdc_meta_times(m, ts);
        futimens(fd, ts);
    }
    rdc_set_add(&r->made_files, f);
    rdc_stale_done(&r->stale, pfd, f, made_or_making, r);
    r->skipped += size;
    r->files++;
    r->xmade = f;   /* its attributes, if an 'x' record follows, through xfd */
    r->xfd = fd;
    return;
refused:
    if (fd >= 0)
        close(fd);
    free(f);
}

/* A file with other names (RDC_F_LINKED) whose name was refused (said already), or lies in a
 * directory that could not be made: its data goes into a temporary in base, kept for the first
 * of its hard links that can be made (struct rdc_orphan). Else it is discarded. */
static void orphan_file(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m, uint64_t size,
                        uint64_t start, uint8_t flags)
{
    if (!(flags & RDC_F_LINKED) || (flags & RDC_F_SKIP) || start > 0 || !r->root ||
        (pl && rdc_name_bad(path, pl)) || size > r->max_file) {
        discard_file(r, size, flags);
        return;
    }
    char *t = strndup(path, pl), *f = rdc_join(r->root, t);
    free(t);
    const char *name;
    char *dir = rdc_dir_of(f, &name);
    free(dir);
    int fd = *f ? rdc_create_tmp(r->base, name, create_mode(r, m->mode), &r->tmp) : -1;
    if (fd < 0) {
        r->tmp = NULL;
        free(f);
        discard_file(r, size, flags);
        return;
    }
    r->in_file = 1;
    r->final = f;
    r->name = NULL;
    r->m = *m;
    r->size = size;
    r->hpos = 0;
    r->fd = fd;
    r->tdfd = r->base;
    r->linked = r->orphan = 1;
    r->hashed = !(flags & RDC_F_NOHASH);
    XXH3_128bits_reset(r->hs);
}

void rdc_rcv_file(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m, uint64_t size,
                  uint64_t start, uint8_t flags, const char *t, size_t tl)
{
    if (!r->root || skipped_path(r, path, pl)) {
        orphan_file(r, path, pl, m, size, start, flags);
        return;
    }
    int pfd;
    const char *name;
    char *f = place(r, path, pl, &pfd, &name);
    if (!f) {
        orphan_file(r, path, pl, m, size, start, flags);
        return;
    }
    if (((flags & RDC_F_SKIP) || start > 0) && !r->resume) {
        /* only a receiver that sent its manifest lets the sender skip a file or continue one:
         * either works on a file already here, in place */
        refuse(r, f, "skipped or continued by the sender, and this copy is not --resume");
        free(f);
        discard_file(r, size, flags);
        return;
    }
    if (refuse_just_made(r, f) || folds_onto_made(r, f, pfd, name) || device_in_the_way(r, f, pfd, name)) {
        free(f);
        orphan_file(r, path, pl, m, size, start, flags);
        return;
    }
    rdc_stale_list(&r->stale, pfd, r->pdir);
    if (!(flags & RDC_F_SKIP)) {
        begin_file(r, f, name, m, size, start, flags, t, tl);   /* takes f */
        return;
    }
    skipped_file(r, f, pfd, name, m, size);   /* takes f */
}

/* Where a record that is not a file or a directory (a node, a symlink, a hard link) goes:
 * NULL when its root or subtree is not being made, or place() refused it. */
static char *leaf(struct rdc_rcv *r, const char *path, size_t pl, int *pfd, const char **name)
{
    if (!r->root || skipped_path(r, path, pl))
        return NULL;
    char *f = place(r, path, pl, pfd, name);
    if (f && (refuse_just_made(r, f) || folds_onto_made(r, f, *pfd, *name) || device_in_the_way(r, f, *pfd, *name))) {
        free(f);
        return NULL;
    }
    return f;
}

/* A FIFO or a socket, made empty with the source's permission bits (the kernel applies the
 * umask or the default ACL; nothing is written into it, so no owner bits are added for the
 * while; -p: exactly). Any other type is refused: a
 * device node from a hostile source would hand its device to whoever can open the copy. */
void rdc_rcv_node(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m, uint8_t type)
{
    int pfd;
    const char *name;
    char *f = leaf(r, path, pl, &pfd, &name);
    if (!f)
        return;
    if (type != 'p' && type != 's') {
        refuse(r, f, "not a FIFO or a socket (rdcp makes no device nodes)");
        free(f);
        return;
    }
    remove_old(pfd, name);
    mode_t kind = type == 'p' ? S_IFIFO : S_IFSOCK;
    if (mknodat(pfd, name, kind | (r->preserve ? 0600 : (m->mode & 0777)), 0)) {
        rdc_rcv_err(r, type == 'p' ? "cannot create FIFO" : "cannot create socket", f, errno);
    } else {
        if (r->preserve) {
            if (r->owners && fchownat(pfd, name, m->uid, m->gid, AT_SYMLINK_NOFOLLOW))
                rdc_rcv_err(r, "cannot set the owner of", f, errno);
            if (fchmodat(pfd, name, m->mode & 07777, AT_SYMLINK_NOFOLLOW))
                rdc_rcv_err(r, "cannot set the mode of", f, errno);
        }
        if (r->times)
            set_times_at(pfd, name, m);
        r->files++;
        rdc_set_add(&r->made_others, f);
        r->xmade = f;   /* its 'x' record, if one follows: rdc_rcv_xattrs */
        return;
    }
    free(f);
}

void rdc_rcv_symlink(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m, const char *t,
                     size_t tl)
{
    int pfd;
    const char *name;
    char *f = leaf(r, path, pl, &pfd, &name);
    if (!f)
        return;
    if (memchr(t, '\0', tl)) {
        refuse(r, f, "NUL byte in the link target");
        free(f);
        return;
    }
    char *target = strndup(t, tl);
    remove_old(pfd, name);
    if (symlinkat(target, pfd, name)) {
        rdc_rcv_err(r, "cannot create symlink", f, errno);
    } else {
        if (r->preserve && r->owners && fchownat(pfd, name, m->uid, m->gid, AT_SYMLINK_NOFOLLOW))
            rdc_rcv_err(r, "cannot set the owner of", f, errno);
        if (r->times)
            set_times_at(pfd, name, m);
        r->files++;
        rdc_set_add(&r->made_others, f);
    }
    free(target);
    free(f);
}

void rdc_rcv_link(struct rdc_rcv *r, const char *path, size_t pl, uint32_t root, const char *t, size_t tl)
{
    int pfd;
    const char *name;
    char *f = leaf(r, path, pl, &pfd, &name);
    if (!f)
        return;
    /* an empty target is its root itself: a file named as a source ('rdcp a/x a/y DIR/') */
    const char *why = tl ? rdc_name_bad(t, tl) : NULL;
    char *tf = NULL;
    if (!why && (root >= r->nroots || !r->roots[root]))
        why = "its target's root was not copied";
    if (!why) {
        char *tt = strndup(t, tl);
        tf = rdc_join(r->roots[root], tt);
        free(tt);
        if (rdc_pool_pending(r, tf))   /* the target is being written (f itself: refused by leaf) */
            rdc_pool_reap(r, 1);
        struct rdc_orphan *o = rdc_set_has(&r->made_files, tf) ? NULL : find_orphan(r, tf);
        if (o && o->alias) {   /* an earlier hard link became the file: link to that */
            free(tf);
            tf = strdup(o->alias);
        } else if (o && strcmp(tf, f) != 0) {   /* the first of its names that can be made */
            if (renameat(o->dfd, o->tmp, pfd, name)) {
                rdc_rcv_err(r, "cannot create hard link", f, errno);
            } else {
                free(o->tmp);
                o->tmp = NULL;
                o->alias = strdup(f);
                r->files++;
                rdc_set_add(&r->made_files, f);
            }
            free(tf);
            free(f);
            return;
        }
        if (!rdc_set_has(&r->made_files, tf) && rdc_set_has(&r->failed_files, tf))
            why = "not made, as its first name failed (said above)";
        else if (!rdc_set_has(&r->made_files, tf))
            why = "its target is not a file this copy made";
        else if (strcmp(tf, f) == 0)
            why = "it links to itself";
    }
    if (why) {
        char msg[128];
        snprintf(msg, sizeof msg, "hard link: %s", why);
        refuse(r, f, msg);
    } else {
        const char *tname;
        char *tdir = rdc_dir_of(tf, &tname);
        int tfd = rdc_open_beneath(r->base, tdir);
        free(tdir);
        remove_old(pfd, name);
        if (tfd < 0 || linkat(tfd, tname, pfd, name, 0)) {
            rdc_rcv_err(r, "cannot create hard link", f, errno);
        } else {
            r->files++;
            rdc_set_add(&r->made_others, f);
        }
        if (tfd >= 0)
            close(tfd);
    }
    free(tf);
    free(f);
}

struct xrefused {
    struct rdc_rcv *r;
    const char *rel;
};

static void xattr_refused(void *ctx, const char *name, size_t n)
{
    struct xrefused *x = ctx;
    char *nm = strndup(name, n), *sn = rdc_shown(nm ? nm : ""), *p = rdc_rcv_disp(x->r, x->rel);
    rd_warn("refusing extended attribute '%s' of '%s': not a user.* attribute (-X) or an ACL (-p)",
            sn, p);
    free(p);
    free(sn);
    free(nm);
    x->r->errors++;
}

/* The attributes of what the last record made or found by name (a FIFO's or a socket's ACL, a
 * skipped file's), set through an O_PATH fd: opening a FIFO for reading would wait for a
 * writer, and a socket cannot be opened at all. */
static void made_xattrs(struct rdc_rcv *r, const unsigned char *kept, size_t kl)
{
    if (r->xfd >= 0) {   /* opened and checked already */
        rdc_rcv_set_xattrs(r, r->xfd, kept, kl, r->xmade);
        return;
    }
    const char *name = strrchr(r->xmade, '/');
    name = name ? name + 1 : r->xmade;
    int fd = openat(r->pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    int e = fd < 0 ? errno
            : fstat(fd, &st) ? errno
            : S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISREG(st.st_mode) ? 0 : EINVAL;
    if (e)
        rdc_rcv_xattr_err(r, NULL, 0, r->xmade, e);
    else
        rdc_rcv_set_xattrs(r, fd, kept, kl, r->xmade);
    if (fd >= 0)
        close(fd);
}

void rdc_rcv_xattrs(struct rdc_rcv *r, const unsigned char *p, size_t n)
{
    int dir = r->xfor == 'd';
    const char *rel = dir ? (r->xdir >= 0 ? r->dirs[r->xdir].path : NULL)
                    : r->xmade ? r->xmade
                                     : (r->in_file && !r->discard ? r->final : NULL);
    if (!rel)   /* its file or directory was refused or dropped: said already */
        return;
    struct xrefused x = { r, rel };
    size_t kl = 0;
    unsigned char *kept = rdc_xattr_filter(p, n, r->xattrs, dir, &kl, xattr_refused, &x);
    if (!kept)
        return;
    if (dir) {
        struct dirmeta *d = &r->dirs[r->xdir];
        if (r->dir_xattr_bytes + kl > RDC_DIR_XATTR_BYTES) {
            char *s = rdc_rcv_disp(r, rel);
            rd_warn("not set: the extended attributes of '%s' (the directories' attributes waiting "
                    "for the end exceed %u MiB)", s, RDC_DIR_XATTR_BYTES >> 20);
            free(s);
            r->errors++;
            free(kept);
            return;
        }
        r->dir_xattr_bytes += kl;
        free(d->xattr);
        d->xattr = kept;
        d->xattr_len = kl;
    } else if (r->xmade) {
        made_xattrs(r, kept, kl);
        free(kept);
    } else if (r->job) {
        free(r->job->xattr);
        r->job->xattr = kept;
        r->job->xattr_len = kl;
    } else {
        free(r->xattr);
        r->xattr = kept;
        r->xattr_len = kl;
    }
}
