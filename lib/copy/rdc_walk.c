/* rdc_walk.c - see rdc_walk.h. The walk is the one the sender always made (sources in order,
 * each directory's entries sorted by name, depth first), cut into steps that each hand over
 * an entry or two; the thread runs the steps, a full hand-over ring holds it back.
 */
#include "copy/rdc_walk.h"
#include "copy/rdc_safe.h"
#include "copy/rdc_tree.h"

#include "util/rd_error.h"
#include "util/rd_thread.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* a file's first bytes read ahead: enough for every small file, and a big one's reader
 * reads ahead by itself from there */
#define RA_MAX (2u << 20)

struct dent {
    char *name;
    unsigned char type;        /* d_type: DT_REG lets a file be opened without a stat first */
};

struct frame {
    dev_t dev;                 /* the directory, to recognise it again (loops with -L) */
    ino_t ino;
    char *fs, *rel;
    struct dent *ents;
    size_t n, i;
    int fd;                    /* open only while it is the top frame (-1: reopen by path) */
};

struct root_id {
    dev_t dev;
    ino_t ino;
    int contents;
    char *base;
};

struct rdc_walk {
    char **srcs;
    struct root_id *roots;     /* the roots started so far (nroots of nsrc) */
    int nroots;
    int nsrc, next, recursive, follow, threaded, stop, noatime_off;
    int attrs;                 /* -X or -p: directories and nodes hand an fd over for them */
    struct frame *st;
    int depth, cap;
    /* the hand-over ring: entries walked, not yet taken */
    pthread_mutex_t lock;
    pthread_cond_t more, room;
    struct rdc_ent *q;
    size_t qcap, qhead, qn;
    uint64_t qbytes, max_bytes;
    int ended;                 /* RDC_E_END was handed over: no more steps */
    pthread_t th;
};

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s = NULL;
    if (vasprintf(&s, f, ap) < 0)
        rd_oom();
    va_end(ap);
    return s;
}

/* hand e over; waits while the ring is full (threaded); 0, or -1 when stopping */
static int put(struct rdc_walk *w, struct rdc_ent *e)
{
    uint64_t b = e->kind == RDC_E_FILE && e->fd >= 0 ? (uint64_t)e->st.st_size : 0;
    pthread_mutex_lock(&w->lock);
    while (!w->stop && (w->qn == w->qcap || (w->qn && w->qbytes + b > w->max_bytes)))
        pthread_cond_wait(&w->room, &w->lock);
    if (w->stop) {
        pthread_mutex_unlock(&w->lock);
        rdc_ent_free(e);
        return -1;
    }
    w->q[(w->qhead + w->qn++) % w->qcap] = *e;
    w->qbytes += b;
    pthread_cond_signal(&w->more);
    pthread_mutex_unlock(&w->lock);
    return 0;
}

static int put_msg(struct rdc_walk *w, int counted, char *line)
{
    struct rdc_ent e = { .kind = RDC_E_MSG, .fd = -1, .target = line, .err = counted };
    return put(w, &e);
}

/* "WHAT 'path': strerror", counted */
static int put_err(struct rdc_walk *w, const char *what, const char *fs, int err)
{
    char *p = rdc_shown(fs);
    char *line = fmt("%s '%s': %s", what, p, strerror(err));
    free(p);
    return put_msg(w, 1, line);
}

static int cmp_dent(const void *a, const void *b)
{
    return strcmp(((const struct dent *)a)->name, ((const struct dent *)b)->name);
}

static void close_top(struct rdc_walk *w)
{
    if (w->depth > 0 && w->st[w->depth - 1].fd >= 0) {
        close(w->st[w->depth - 1].fd);
        w->st[w->depth - 1].fd = -1;
    }
}

/* The directory name in dfd (AT_FDCWD: a source argument, by its path), without following a
 * last symlink unless -L. A subdirectory is opened from its parent's fd, never by its path, so
 * a tree deeper than PATH_MAX is walked whole, as tar walks it. */
static int open_dir(struct rdc_walk *w, int dfd, const char *name)
{
    int nofollow = dfd != AT_FDCWD && !w->follow ? O_NOFOLLOW : 0;
    return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | nofollow);
}

/* 0: it is the top frame; 1: it could not be listed (said); -1: stopping */
static int push_dir(struct rdc_walk *w, int dfd, const char *name, const char *fs, const char *rel,
                    const struct stat *st)
{
    int fd = open_dir(w, dfd, name);
    int lfd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        int e = errno;
        if (lfd >= 0)
            close(lfd);
        if (fd >= 0)
            close(fd);
        return put_err(w, "cannot open directory", fs, e) ? -1 : 1;
    }
    struct frame f = { .dev = st->st_dev, .ino = st->st_ino, .fs = strdup(fs), .rel = strdup(rel), .fd = fd };
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (f.n == cap) {
            cap = cap ? cap * 2 : 16;
            f.ents = realloc(f.ents, cap * sizeof *f.ents);
            if (!f.ents)
                rd_oom();
        }
        f.ents[f.n++] = (struct dent){ strdup(de->d_name), de->d_type };
    }
    closedir(d);
    if (f.n)
        qsort(f.ents, f.n, sizeof *f.ents, cmp_dent);
    close_top(w);   /* one directory fd at a time, whatever the depth */
    if (w->depth == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 16;
        w->st = realloc(w->st, (size_t)w->cap * sizeof *w->st);
        if (!w->st)
            rd_oom();
    }
    w->st[w->depth++] = f;
    return 0;
}

/* The parent of the top frame again, from the top frame's fd (its ".."), as long as that is
 * still the directory the walk came from (same device and inode): no path is looked up, so
 * depth has no limit. Else the parent stays closed and step() reopens it by its path. */
static void reopen_parent(struct rdc_walk *w)
{
    struct frame *child = &w->st[w->depth - 1], *parent = &w->st[w->depth - 2];
    if (child->fd < 0 || parent->fd >= 0)
        return;
    int fd = openat(child->fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) || st.st_dev != parent->dev || st.st_ino != parent->ino)) {
        close(fd);   /* moved meanwhile, or reached through a symlink (-L) */
        fd = -1;
    }
    parent->fd = fd;
}

static void free_frame(struct frame *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->ents[i].name);
    free(f->ents);
    free(f->fs);
    free(f->rel);
    if (f->fd >= 0)
        close(f->fd);
}

static void pop_dir(struct rdc_walk *w)
{
    if (w->depth > 1)
        reopen_parent(w);
    free_frame(&w->st[--w->depth]);
}

/* open a regular file for reading, without following a last symlink unless -L, never
 * blocking on a fifo swapped in meanwhile; O_NOATIME where allowed (a first read of a file
 * newer than its atime would dirty its inode) */
static int open_file(struct rdc_walk *w, int dfd, const char *name)
{
    return rdc_open_noatime(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (w->follow ? 0 : O_NOFOLLOW),
                            &w->noatime_off);
}

/* a regular file: open it, stat it through the fd, start reading it into the page cache.
 * 0: handed over; 1: not a regular file now (nothing handed over); -1: stopping */
static int file_ent(struct rdc_walk *w, int dfd, const char *name, const char *fs, const char *rel)
{
    struct rdc_ent e = { .kind = RDC_E_FILE, .fd = -1 };
    int fd = open_file(w, dfd, name);
    if (fd < 0 && (errno == ELOOP || errno == ENXIO))
        return 1;   /* a symlink or a socket now: walk it as what it is */
    if (fd < 0) {
        e.what = errno == ENOENT ? "source vanished:" : "cannot open";
        e.err = errno;
    } else if (fstat(fd, &e.st)) {
        e.what = "cannot stat";
        e.err = errno;
        close(fd);
    } else if (!S_ISREG(e.st.st_mode)) {
        close(fd);   /* replaced since it was listed (or stat'ed): walk it as what it is now */
        return 1;
    } else {
        e.fd = fd;
        int sparse = (uint64_t)e.st.st_blocks * 512 < (uint64_t)e.st.st_size;
        if (e.st.st_size > 0 && !sparse)
            readahead(fd, 0, (size_t)e.st.st_size < RA_MAX ? (size_t)e.st.st_size : RA_MAX);
    }
    e.fs = strdup(fs);
    e.rel = strdup(rel);
    return put(w, &e) ? -1 : 0;
}

/* The entry at fs (rel inside the root; dfd + name reach it, d_type as listed). */
static int do_entry(struct rdc_walk *w, int dfd, const char *name, unsigned char type, const char *fs,
                    const char *rel)
{
    if (type == DT_REG && !w->follow) {
        int r = file_ent(w, dfd, name, fs, rel);
        if (r <= 0)
            return r;
    }
    struct stat st;
    if (fstatat(dfd, name, &st, w->follow ? 0 : AT_SYMLINK_NOFOLLOW)) {
        int e = errno;   /* -L and a dangling symlink: there, but nothing to follow (cp: "cannot stat") */
        int vanished = e == ENOENT && !(w->follow && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0);
        return put_err(w, vanished ? "source vanished:" : "cannot stat", fs, e);
    }
    if (S_ISDIR(st.st_mode)) {
        /* a directory that is its own ancestor (-L: "l -> ."; or a bind mount) would be
         * walked forever: one line, not copied */
        for (int i = 0; i < w->depth; i++) {
            if (w->st[i].dev == st.st_dev && w->st[i].ino == st.st_ino) {
                char *p = rdc_shown(fs), *q = rdc_shown(w->st[i].fs);
                char *line = fmt("directory loop, not copied: '%s' is '%s' again", p, q);
                free(q);
                free(p);
                return put_msg(w, 1, line);
            }
        }
        int r = push_dir(w, dfd, name, fs, rel, &st);
        if (r)
            return r < 0 ? -1 : 0;
        /* its own fd for its attributes (-X, -p), which a path deeper than PATH_MAX cannot reach */
        int xfd = w->attrs ? fcntl(w->st[w->depth - 1].fd, F_DUPFD_CLOEXEC, 0) : -1;
        struct rdc_ent e = { .kind = RDC_E_DIR, .fd = xfd, .st = st, .fs = strdup(fs), .rel = strdup(rel) };
        return put(w, &e);
    }
    if (S_ISREG(st.st_mode)) {
        int r = file_ent(w, dfd, name, fs, rel);
        if (r <= 0)
            return r;
        char *p = rdc_shown(fs);   /* changed type twice while we looked: say so, go on */
        char *line = fmt("source changed while being read (type): '%s'", p);
        free(p);
        return put_msg(w, 1, line);
    }
    if (S_ISLNK(st.st_mode)) {
        char *t = malloc((size_t)st.st_size + 4097);
        if (!t)
            rd_oom();
        ssize_t n = readlinkat(dfd, name, t, (size_t)st.st_size + 4096);
        if (n < 0) {
            int e = errno;
            free(t);
            return put_err(w, "cannot read link", fs, e);
        }
        struct rdc_ent e = { .kind = RDC_E_LINK, .fd = -1, .st = st, .fs = strdup(fs), .rel = strdup(rel),
                             .target = t, .tlen = (size_t)n };
        return put(w, &e);
    }
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {   /* made again, as cp -r makes them */
        int pfd = w->attrs ? openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC) : -1;   /* for its attributes */
        struct rdc_ent e = { .kind = RDC_E_NODE, .fd = pfd, .st = st, .fs = strdup(fs), .rel = strdup(rel) };
        return put(w, &e);
    }
    /* a device node would give whoever reads the copy the device: never made (rdc_tree.h) */
    char *p = rdc_shown(fs);
    char *line = fmt("not copied: device file '%s' (rdcp makes no device nodes)", p);
    free(p);
    return put_msg(w, 1, line);
}

/* Whether an earlier root is this one again: the same file or directory (dev, ino) landing
 * on the same name. Remembered otherwise. */
static int seen_root(struct rdc_walk *w, const struct stat *st, int contents, const char *base)
{
    for (int i = 0; i < w->nroots; i++) {
        const struct root_id *r = &w->roots[i];
        if (r->dev == st->st_dev && r->ino == st->st_ino && r->contents == contents &&
            (contents || strcmp(r->base, base) == 0))
            return 1;
    }
    if (!w->roots && !(w->roots = calloc((size_t)w->nsrc, sizeof *w->roots)))
        rd_oom();
    w->roots[w->nroots++] = (struct root_id){ st->st_dev, st->st_ino, contents, strdup(base) };
    return 0;
}

static int start_root(struct rdc_walk *w)
{
    const char *src = w->srcs[w->next];
    uint32_t idx = (uint32_t)w->next++;
    /* a symlink named on the command line is followed unless -r, as cp and scp follow it: the
     * user asked for the file's bytes, and the link alone would be dangling on most hosts */
    int follow = w->follow || !w->recursive;
    struct stat st;
    if ((follow ? stat(src, &st) : lstat(src, &st)))
        return put_err(w, "cannot stat", src, errno);
    if (S_ISDIR(st.st_mode) && !w->recursive) {
        char *p = rdc_shown(src);
        char *line = fmt("'%s' is a directory (not copied; use -r)", p);
        free(p);
        return put_msg(w, 1, line);
    }
    if ((S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) && !w->recursive) {
        /* its bytes (a pipe: 'rdcp <(cmd) host:f'), or an empty FIFO there? cp reads them,
         * scp and rsync refuse: the size must be known before the data, and a stream is
         * rdsend's */
        char *p = rdc_shown(src);
        char *line = fmt("'%s' is a %s, not a regular file (not copied: rdsend sends a stream, -r makes the %s again)",
                         p, S_ISFIFO(st.st_mode) ? "FIFO" : "socket", S_ISFIFO(st.st_mode) ? "FIFO" : "socket");
        free(p);
        return put_msg(w, 1, line);
    }
    char *base = rdc_basename(src);
    int contents = rdc_contents_source(src, base, S_ISDIR(st.st_mode));
    if (seen_root(w, &st, contents, base)) {
        /* 'f ./f': one source named twice, copied once as cp does (the second would be
         * refused as two sources with one name) */
        char *p = rdc_shown(src);
        char *line = fmt("warning: source '%s' named more than once (copied once)", p);
        free(p);
        free(base);
        return put_msg(w, 0, line);
    }
    struct rdc_ent e = { .kind = RDC_E_ROOT, .fd = -1, .root = idx, .base = base, .contents = contents,
                         .rkind = S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : 'f' };
    if (put(w, &e))
        return -1;
    int was = w->follow;
    w->follow = follow;   /* for the root alone: without -r nothing below it is walked */
    int r = do_entry(w, AT_FDCWD, src, DT_UNKNOWN, src, "");
    w->follow = was;
    return r;
}

/* One step of the walk: 0, or -1 once it ended (or is stopping). */
static int step(struct rdc_walk *w)
{
    if (w->ended)
        return -1;
    if (w->depth > 0) {
        struct frame *f = &w->st[w->depth - 1];
        if (f->i == f->n) {
            pop_dir(w);
            return 0;
        }
        if (f->fd < 0)   /* back from a subdirectory: by path again (-1: paths alone) */
            f->fd = open(f->fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        const struct dent *d = &f->ents[f->i++];
        char *fs = rdc_join(f->fs, d->name), *rel = rdc_join(f->rel, d->name);
        int r = f->fd >= 0 ? do_entry(w, f->fd, d->name, d->type, fs, rel)
                           : do_entry(w, AT_FDCWD, fs, DT_UNKNOWN, fs, rel);
        free(fs);
        free(rel);
        return r;
    }
    if (w->next < w->nsrc)
        return start_root(w);
    w->ended = 1;
    struct rdc_ent e = { .kind = RDC_E_END, .fd = -1 };
    put(w, &e);
    return -1;
}

static void *walk_main(void *arg)
{
    struct rdc_walk *w = arg;
    rd_thread_name("rdc-walk");
    while (step(w) == 0)
        ;
    return NULL;
}

struct rdc_walk *rdc_walk_start(char **srcs, int nsrc, int recursive, int follow, int attrs, size_t ahead,
                                uint64_t ahead_bytes)
{
    struct rdc_walk *w = calloc(1, sizeof *w);
    if (!w)
        rd_oom();
    w->srcs = srcs;
    w->nsrc = nsrc;
    w->recursive = recursive;
    w->follow = follow;
    w->attrs = attrs;
    w->max_bytes = ahead ? ahead_bytes : UINT64_MAX;
    w->qcap = ahead ? ahead : 4;   /* a step hands over two entries at most */
    w->q = calloc(w->qcap, sizeof *w->q);
    if (!w->q)
        rd_oom();
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->more, NULL);
    pthread_cond_init(&w->room, NULL);
    if (ahead && rd_thread_create(&w->th, NULL, walk_main, w) == 0)
        w->threaded = 1;
    else
        w->max_bytes = UINT64_MAX;
    return w;
}

void rdc_walk_next(struct rdc_walk *w, struct rdc_ent *e)
{
    if (!w->threaded) {
        while (!w->qn && step(w) == 0)
            ;
    }
    pthread_mutex_lock(&w->lock);
    while (!w->qn)
        pthread_cond_wait(&w->more, &w->lock);
    *e = w->q[w->qhead];
    w->qhead = (w->qhead + 1) % w->qcap;
    w->qn--;
    if (e->kind == RDC_E_FILE && e->fd >= 0)
        w->qbytes -= (uint64_t)e->st.st_size;
    pthread_cond_signal(&w->room);
    pthread_mutex_unlock(&w->lock);
}

void rdc_ent_free(struct rdc_ent *e)
{
    if (e->fd >= 0)
        close(e->fd);
    free(e->fs);
    free(e->rel);
    free(e->target);
    free(e->base);
    memset(e, 0, sizeof *e);
    e->fd = -1;
}

void rdc_walk_stop(struct rdc_walk *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_broadcast(&w->room);
    pthread_mutex_unlock(&w->lock);
    if (w->threaded)
        pthread_join(w->th, NULL);
    while (w->qn) {
        rdc_ent_free(&w->q[w->qhead]);
        w->qhead = (w->qhead + 1) % w->qcap;
        w->qn--;
    }
    while (w->depth > 0)
        free_frame(&w->st[--w->depth]);
    free(w->st);
    free(w->q);
    for (int i = 0; i < w->nroots; i++)
        free(w->roots[i].base);
    free(w->roots);
    pthread_cond_destroy(&w->more);
    pthread_cond_destroy(&w->room);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
