/* rdc_send.c - `rdcp --tree-send`: walk the sources and serialize the tree into one rd engine
 * stream (a custom producer: the engine's reader thread calls fill(), which walks, reads and
 * encodes until the chunk is full, so walking, reading and sending overlap and small files
 * share chunks). Runs as a child of an rdpipe agent; the key comes in RDPIPE_KEY.
 */
#include "copy/rdc_tree.h"
#include "copy/rdc_count.h"
#include "copy/rdc_note.h"
#include "util/rd_clock.h"
#include "copy/rdc_end.h"
#include "copy/rdc_list.h"
#include "copy/rdc_safe.h"
#include "copy/rdc_walk.h"
#include "copy/rdc_xattr.h"

#include "run/rd_cli.h"
#include "util/rd_error.h"
#include "util/rd_secret.h"
#include "engine/rd_defer.h"
#include "engine/rd_io.h"
#include "remote/rdr_home.h"
#include "run/rd_report.h"
#include "run/rd_run.h"
#include "util/rd_thread.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#ifndef RDC_SEND_AHEAD_DEFAULT   /* a build for measuring may say 0 */
#define RDC_SEND_AHEAD_DEFAULT 256
#endif
/* file data the walk may hold open and read ahead, not yet taken by the reader */
#define RDC_WALK_AHEAD_BYTES (16u << 20)
/* A file this big is read by the engine's lanes (struct rd_defer): each chunk's part at its
 * offset, by the lane that tags the chunk, so one file is read on as many cores as there are
 * lanes, as rdsend reads a file. Smaller files are read here: they share chunks, and the
 * wait for the lanes at each file's end would cost more than their read. So are a big
 * file's parts under RDC_LANE_PART_MIN (the small extents of a sparse file), so that a
 * chunk is not cut short by its list of parts (RD_DEFER_MAX). */
#define RDC_LANE_FILE_MIN (8u << 20)
#define RDC_LANE_PART_MIN (64u << 10)

struct link_ent {
    dev_t dev;
    ino_t ino;
    uint32_t root;
    char *rel;
};

struct snd {
    int recursive, follow, resume;
    int atimes;                /* -p: the 'a' record goes first, every meta carries the atime */
    unsigned xattrs;           /* attribute families sent (rdc_xattr.h): -p ACLs, -X user.* */
    char **srcs;
    int nsrc, next_src;
    int nsrc_all;              /* the command's sources, on every host (where roots land) */
    uint32_t root;             /* index of the current root */
    const char *root_prefix;   /* where the current root lands, relative to DST (resume) */
    struct rdc_walk *w;        /* the walk, ahead of fill() on its own thread */
    struct rdc_buf pend;
    size_t pend_off;
    /* the current file */
    int fd;
    char *fpath;
    uint64_t size, pos, ext_end;
    struct timespec mtime;     /* as the walk saw it: a file written meanwhile fails (end_file) */
    int sparse, hashed;        /* hashed: the end record carries the file's XXH3-128 */
    XXH3_state_t *hs;
    /* a big file's data read by the lanes: the reads not yet done, and how they went */
    struct rd_source *src;     /* the engine's: src->defer takes this call's deferred reads */
    int lane_file;             /* the current file's data parts are left to the lanes */
    struct rd_defer_wait lane; /* its parts not read yet; -1 it shrank, else an errno */
    /* hard links: the files seen with st_nlink > 1, found by (dev, ino) through an open
     * addressing table of indexes + 1 into links (0 = empty), kept at most half full */
    struct link_ent *links;
    size_t nlinks, caplinks;
    size_t *lslot;
    size_t nslots;
    /* resume manifest, sorted by path */
    struct rdc_manifest_entry *man;
    size_t nman;
    int dst_is_dir;
    int finished;
    /* counters */
    uint64_t files, dirs, bytes, skipped, errors, holes;
    double last_progress;
};

static void err_path(struct snd *s, const char *what, const char *path, int e)
{
    char *p = rdc_shown(path);
    rd_warn("%s '%s': %s", what, p, strerror(e));
    free(p);
    s->errors++;
}

/* the 'x' record of a file (fd), directory or FIFO/socket (path) just put in pend, if any */
static void put_xattrs(struct snd *s, int fd, const char *path, int dir)
{
    if (!s->xattrs || rdc_xattr_record(&s->pend, fd, path, s->follow, s->xattrs, dir) == 0)
        return;
    if (errno == E2BIG || errno == ERANGE)   /* the file goes, without them */
        err_path(s, "not copied: the extended attributes (over 128 KiB) of", path, E2BIG);
    else
        err_path(s, "cannot read the extended attributes of", path, errno);
}

static void meta_of(const struct stat *st, struct rdc_meta *m)
{
    m->mode = st->st_mode & 07777;
    m->uid = st->st_uid;
    m->gid = st->st_gid;
    m->mtime_s = st->st_mtim.tv_sec;
    m->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
    m->atime_s = st->st_atim.tv_sec;   /* stat'ed before it was read (rdc_walk.c) */
    m->atime_ns = (uint32_t)st->st_atim.tv_nsec;
}

static size_t link_hash(dev_t dev, ino_t ino)
{
    uint64_t h = ((uint64_t)ino ^ ((uint64_t)dev << 32) ^ ((uint64_t)dev >> 32)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 29));
}

static struct link_ent *find_link(struct snd *s, dev_t dev, ino_t ino)
{
    if (!s->nslots)
        return NULL;
    for (size_t i = link_hash(dev, ino) & (s->nslots - 1);; i = (i + 1) & (s->nslots - 1)) {
        size_t k = s->lslot[i];
        if (!k)
            return NULL;
        if (s->links[k - 1].dev == dev && s->links[k - 1].ino == ino)
            return &s->links[k - 1];
    }
}

static void slot_link(struct snd *s, size_t k)
{
    size_t i = link_hash(s->links[k].dev, s->links[k].ino) & (s->nslots - 1);
    while (s->lslot[i])
        i = (i + 1) & (s->nslots - 1);
    s->lslot[i] = k + 1;
}

static void add_link(struct snd *s, dev_t dev, ino_t ino, const char *rel)
{
    if (s->nlinks == s->caplinks) {
        s->caplinks = s->caplinks ? s->caplinks * 2 : 64;
        s->links = realloc(s->links, s->caplinks * sizeof *s->links);
        if (!s->links)
            rd_oom();
    }
    s->links[s->nlinks++] = (struct link_ent){ dev, ino, s->root, strdup(rel) };
    if (2 * s->nlinks > s->nslots) {   /* grow: rehash every entry */
        free(s->lslot);
        s->nslots = s->nslots ? 2 * s->nslots : 128;
        s->lslot = calloc(s->nslots, sizeof *s->lslot);
        if (!s->lslot)
            rd_oom();
        for (size_t k = 0; k < s->nlinks; k++)
            slot_link(s, k);
    } else {
        slot_link(s, s->nlinks - 1);
    }
}

static int cmp_man(const void *a, const void *b)
{
    const struct rdc_manifest_entry *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    return c ? c : (int)x->kind - (int)y->kind;
}

static const struct rdc_manifest_entry *find_man(struct snd *s, const char *path, uint8_t kind)
{
    size_t lo = 0, hi = s->nman;
    struct rdc_manifest_entry key = { .kind = kind, .path = (char *)path };
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = cmp_man(&key, &s->man[mid]);
        if (c == 0)
            return &s->man[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static void progress(struct snd *s, int force)
{
    double now = rd_now();
    if (!force && now - s->last_progress < 0.5)
        return;
    s->last_progress = now;
    /* holes count as done for the progress line (they are part of the total) */
    dprintf(STDERR_FILENO, RDC_NOTE_PROGRESS_FMT, (unsigned long long)s->files,
            (unsigned long long)(s->bytes + s->holes), (unsigned long long)s->skipped);
}

#define PSEUDO_MAX (64u << 20)   /* /proc/kcore says 128 TiB: a pseudo file past this is refused */

/* A file of /proc or /sys holds what reading it returns, not what its size says (rd_io.h):
 * the record states the size before the data, so read it to its end first, into a memfd
 * that stands in for it. Returns the memfd, or -1 after a warning. */
static int pseudo_copy(int fd, const char *fs, struct stat *st)
{
    int m = memfd_create("rdcp-pseudo", MFD_CLOEXEC);
    char buf[65536];
    uint64_t total = 0;
    ssize_t n = -1;
    if (m >= 0)
        while ((n = read(fd, buf, sizeof buf)) != 0) {
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 || (total += (uint64_t)n) > PSEUDO_MAX || write(m, buf, (size_t)n) != n)
                break;
        }
    if (m < 0 || n != 0) {
        char *p = rdc_shown(fs);
        if (m >= 0 && n > 0 && total > PSEUDO_MAX)
            rd_warn("cannot copy '%s': a file of /proc or /sys larger than %u MiB", p, PSEUDO_MAX >> 20);
        else
            rd_warn("cannot read '%s': %s", p, strerror(errno));
        free(p);
        if (m >= 0)
            close(m);
        return -1;
    }
    st->st_size = (off_t)total;
    st->st_blocks = (blkcnt_t)((total + 511) / 512);   /* not sparse */
    return m;
}

/* Whether the directory of source file fs holds name (not followed): a partial file that the
 * destination's manifest names may be a source file named like one, copied there by an
 * earlier run; continuing from it would take that file for the start of this one. */
static int in_source(const char *fs, const char *name)
{
    const char *base;
    char *dir = rdc_dir_of(fs, &base), *p = rdc_join(dir, name);
    struct stat st;
    int there = fstatat(AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) == 0;
    free(p);
    free(dir);
    return there;
}

/* A regular file, opened and stat'ed by the walk: its header, and make it current (data
 * follows in fill()); fd is ours to close. */
static void start_file(struct snd *s, const char *fs, const char *rel, const struct stat *stp, int fd)
{
    struct stat st = *stp;
    struct timespec mtime = st.st_mtim;   /* what end_file compares with */
    if (rd_pseudo_file(fd)) {
        int m = pseudo_copy(fd, fs, &st);
        close(fd);
        if (m < 0) {
            s->errors++;
            return;
        }
        fd = m;
        struct stat ms;
        if (fstat(fd, &ms) == 0)   /* the copy is what is read now, and nothing writes it */
            mtime = ms.st_mtim;
    }
    if (st.st_nlink > 1) {
        struct link_ent *l = find_link(s, st.st_dev, st.st_ino);
        if (l) {
            rdc_put_u8(&s->pend, 'h');
            rdc_put_str(&s->pend, rel, strlen(rel));
            rdc_put_u32(&s->pend, l->root);
            rdc_put_str(&s->pend, l->rel, strlen(l->rel));
            s->files++;
            close(fd);
            return;
        }
        add_link(s, st.st_dev, st.st_ino, rel);
    }
    int linked = st.st_nlink > 1;   /* its other names may follow as 'h' records */
    struct rdc_meta m;
    meta_of(&st, &m);
    uint64_t size = (uint64_t)st.st_size, start = 0;
    uint8_t flags = 0;
    const char *tmp = "";
    XXH3_128bits_reset(s->hs);
    if (s->resume && s->root_prefix) {
        char *key = rdc_join(s->root_prefix, rel);
        const struct rdc_manifest_entry *e = find_man(s, key, 'F');
        char *pkey = rdc_tmp_key_path(key);   /* a partial file names a long NAME by its key */
        const struct rdc_manifest_entry *p = find_man(s, pkey, 'P');
        free(pkey);
        free(key);
        unsigned char h[16];
        if (e && e->size == size &&
            rdc_hash_prefix(fd, size, s->hs) == 0) {
            rdc_hash_final(s->hs, h);
            if (memcmp(h, e->hash, 16) == 0)
                flags |= RDC_F_SKIP;
            XXH3_128bits_reset(s->hs);
        }
        if (!(flags & RDC_F_SKIP) && p && p->size <= size && p->size > 0 && !in_source(fs, p->tmp) &&
            rdc_hash_prefix(fd, p->size, s->hs) == 0) {
            XXH3_state_t *cp = XXH3_createState();
            XXH3_copyState(cp, s->hs);
            rdc_hash_final(cp, h);
            XXH3_freeState(cp);
            if (memcmp(h, p->hash, 16) == 0) {
                start = p->size;
                tmp = p->tmp;
            } else {
                XXH3_128bits_reset(s->hs);
            }
        } else if (!(flags & RDC_F_SKIP)) {
            XXH3_128bits_reset(s->hs);
        }
    }
    int sparse = (uint64_t)st.st_blocks * 512 < size;
    if (sparse)
        flags |= RDC_F_SPARSE;
    if (start == 0)
        flags |= RDC_F_NOHASH;   /* the frame tags cover it (rdc_tree.h) */
    if (linked)
        flags |= RDC_F_LINKED;
    rdc_put_u8(&s->pend, 'f');
    rdc_put_str(&s->pend, rel, strlen(rel));
    rdc_put_meta(&s->pend, &m, s->atimes);
    rdc_put_u64(&s->pend, size);
    rdc_put_u64(&s->pend, start);
    rdc_put_u8(&s->pend, flags);
    rdc_put_str(&s->pend, tmp, strlen(tmp));
    s->files++;
    put_xattrs(s, fd, fs, 0);   /* before its data: set before it is named */
    if (flags & RDC_F_SKIP) {
        s->skipped += size;
        close(fd);
        return;
    }
    s->skipped += start;
    s->fd = fd;
    s->fpath = strdup(fs);
    s->size = size;
    s->mtime = mtime;
    s->pos = start;
    s->ext_end = start;
    s->sparse = sparse;
    s->hashed = !(flags & RDC_F_NOHASH);
    s->lane_file = s->src && s->src->lane_read_fn && !s->hashed && size - start >= RDC_LANE_FILE_MIN;
}

/* On a lane: the parts of a big file's data that fill() left in this chunk. A part that
 * cannot be read whole (the file shrank, or EIO) is zeroed and the file's end record says it
 * failed: the receiver drops the file, as when fill() reads it itself. */
static int lane_read(void *ctx, unsigned char *payload, const struct rd_defer *d)
{
    struct snd *s = ctx;
    for (unsigned i = 0; i < d->n; i++) {
        const struct rd_defer_seg *g = &d->seg[i];
        size_t got = 0;
        int err = 0;
        while (got < g->len) {
            ssize_t n = pread(g->fd, payload + g->at + got, g->len - got, (off_t)(g->off + got));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                err = n < 0 ? errno : -1;
                break;
            }
            got += (size_t)n;
        }
        if (err)
            memset(payload + g->at + got, 0, g->len - got);
        rd_defer_wait_done(&s->lane, err);
    }
    return RD_OK;
}

/* Leave the next part of a big file's data, want bytes at out + at (its 'D' record before
 * it), to the lane that tags this chunk. 0 when this chunk's list of parts is full. */
static int defer_part(struct snd *s, uint32_t at, size_t want)
{
    struct rd_defer *d = s->src->defer;
    if (!d || d->n == RD_DEFER_MAX)
        return 0;
    d->seg[d->n++] = (struct rd_defer_seg){ .at = at, .len = (uint32_t)want, .off = s->pos, .fd = s->fd };
    rd_defer_wait_add(&s->lane);
    return 1;
}


/* The sources: "~" expanded, and a pattern that names no file expanded by glob(3), sorted, as
 * the shell would (dot files only where the pattern spells the dot); one that matches nothing
 * stays, and fails as a name that is not there. Sets *out (malloc'd), returns the count. */
static int expand_sources(char **argv, int n, char ***out)
{
    size_t cap = (size_t)n + 1, k = 0;
    char **v = calloc(cap, sizeof *v);
    if (!v)
        rd_oom();
    for (int i = 0; i < n; i++) {
        char *p = rdr_home_expand(argv[i]);
        glob_t g;
        if (rdc_expands_here(p) && glob(p, 0, NULL, &g) == 0) {
            for (size_t j = 0; j < g.gl_pathc; j++) {
                if (k + 1 >= cap && !(v = realloc(v, (cap *= 2) * sizeof *v)))
                    rd_oom();
                if (!(v[k++] = strdup(g.gl_pathv[j])))
                    rd_oom();
            }
            globfree(&g);
            free(p);
            continue;
        }
        if (k + 1 >= cap && !(v = realloc(v, (cap *= 2) * sizeof *v)))
            rd_oom();
        v[k++] = p;
    }
    *out = v;
    return (int)k;
}

static char *held_base;   /* the current root's base name, where root_prefix points into it */

/* The walk's next entries into records, until some are pending or everything was walked. */
static void walk(struct snd *s)
{
    while (s->pend.len == s->pend_off && s->fd < 0 && !s->finished) {
        struct rdc_ent e;
        rdc_walk_next(s->w, &e);
        struct rdc_meta m;
        meta_of(&e.st, &m);
        switch (e.kind) {
        case RDC_E_ROOT:
            s->root = e.root;
            s->root_prefix = rdc_root_rel(s->dst_is_dir, s->nsrc_all, e.contents, e.base);
            rdc_put_u8(&s->pend, 'R');
            rdc_put_u32(&s->pend, s->root);
            rdc_put_u8(&s->pend, (uint8_t)e.rkind);
            rdc_put_u8(&s->pend, (uint8_t)e.contents);
            rdc_put_str(&s->pend, e.base, strlen(e.base));
            if (s->root_prefix == e.base) {   /* keep it alive while the root is walked */
                free(held_base);
                held_base = e.base;
                e.base = NULL;
            }
            break;
        case RDC_E_DIR:
            rdc_put_u8(&s->pend, 'd');
            rdc_put_str(&s->pend, e.rel, strlen(e.rel));
            rdc_put_meta(&s->pend, &m, s->atimes);
            put_xattrs(s, e.fd, e.fs, 1);
            s->dirs++;
            break;
        case RDC_E_FILE:
            if (e.fd < 0) {
                err_path(s, e.what, e.fs, e.err);
                break;
            }
            start_file(s, e.fs, e.rel, &e.st, e.fd);
            e.fd = -1;
            break;
        case RDC_E_LINK:
            rdc_put_u8(&s->pend, 'l');
            rdc_put_str(&s->pend, e.rel, strlen(e.rel));
            rdc_put_meta(&s->pend, &m, s->atimes);
            rdc_put_str(&s->pend, e.target, e.tlen);
            s->files++;
            break;
        case RDC_E_NODE:
            rdc_put_u8(&s->pend, 'n');
            rdc_put_str(&s->pend, e.rel, strlen(e.rel));
            rdc_put_meta(&s->pend, &m, s->atimes);
            rdc_put_u8(&s->pend, S_ISFIFO(e.st.st_mode) ? 'p' : 's');
            put_xattrs(s, e.fd, e.fs, 0);   /* O_PATH: opening a FIFO would wait for a writer */
            s->files++;
            break;
        case RDC_E_MSG:
            rd_warn("%s", e.target);
            if (e.err)
                s->errors++;
            break;
        case RDC_E_END:
            rdc_put_u8(&s->pend, 'Z');
            s->finished = 1;
            break;
        }
        rdc_ent_free(&e);
    }
}

static void end_file(struct snd *s, int failed)
{
    /* Written to while it was read (after the walk's stat, which gave the size the header
     * names): the copy would be neither the old file nor the new one, or cut short of what it
     * grew to. It fails, as one that shrank does: the receiver drops it (tar warns "file
     * changed as we read it" and keeps it; cp and rsync say nothing). */
    struct stat now;
    if (!failed && fstat(s->fd, &now) == 0 &&
        (now.st_mtim.tv_sec != s->mtime.tv_sec || now.st_mtim.tv_nsec != s->mtime.tv_nsec ||
         (uint64_t)now.st_size != s->size)) {
        char *p = rdc_shown(s->fpath);
        rd_warn("source changed while being read: '%s'", p);
        free(p);
        s->errors++;
        failed = 1;
    }
    unsigned char h[16] = { 0 };
    if (s->hashed)
        rdc_hash_final(s->hs, h);
    rdc_put_u8(&s->pend, 'e');
    rdc_put_u8(&s->pend, (uint8_t)failed);
    rdc_put(&s->pend, h, 16);
    close(s->fd);
    s->fd = -1;
    free(s->fpath);
    s->fpath = NULL;
}

/* The engine's producer: fill buf with records and file data. */
static ssize_t fill(void *ctx, void *buf, size_t cap)
{
    struct snd *s = ctx;
    unsigned char *out = buf;
    size_t got = 0;
    progress(s, 0);
    for (;;) {
        if (s->pend_off < s->pend.len) {
            size_t k = s->pend.len - s->pend_off;
            if (k > cap - got)
                k = cap - got;
            memcpy(out + got, s->pend.p + s->pend_off, k);
            got += k;
            s->pend_off += k;
            if (s->pend_off == s->pend.len)
                s->pend.len = s->pend_off = 0;
            if (got == cap)
                return (ssize_t)got;
            continue;
        }
        if (s->fd >= 0) {
            /* a big file ends once the lanes' reads of it are done, so that its end record says
             * how they went: at its end, or as soon as one failed (no more of it is sent) */
            if (s->lane_file && (s->pos >= s->size || rd_defer_wait_failed(&s->lane))) {
                if (s->src->defer && s->src->defer->n)
                    return (ssize_t)got;   /* this chunk's parts first go to a lane */
                int err = rd_defer_wait_all(&s->lane, s->src->stop);
                if (err == RD_DEFER_STOPPED)   /* the transfer failed: its lanes are gone */
                    return -1;
                if (err) {
                    char *p = rdc_shown(s->fpath);
                    if (err < 0)
                        rd_warn("source changed while being read (shrank): '%s'", p);
                    else
                        rd_warn("cannot read '%s': %s", p, strerror(err));
                    free(p);
                    s->errors++;
                }
                end_file(s, err != 0);
                continue;
            }
            if (s->pos == s->ext_end) {   /* find the next extent */
                if (s->pos >= s->size) {
                    end_file(s, 0);
                    continue;
                }
                uint64_t data = s->pos, end = s->size;
                if (s->sparse) {
                    off_t d = lseek(s->fd, (off_t)s->pos, SEEK_DATA);
                    if (d < 0) {
                        data = s->size;   /* ENXIO: a hole up to the end */
                    } else {
                        data = (uint64_t)d;
                        off_t h = lseek(s->fd, d, SEEK_HOLE);
                        end = h < 0 ? s->size : (uint64_t)h;
                    }
                    if (data > s->size)
                        data = s->size;
                    if (end > s->size)
                        end = s->size;
                }
                if (s->hashed && rdc_hash_zeros(s->hs, data - s->pos, s->src ? s->src->stop : NULL))
                    return -1;   /* the transfer failed meanwhile */
                s->holes += data - s->pos;
                s->pos = data;
                s->ext_end = end;
                continue;
            }
            if (cap - got < 17 + 4096)
                return (ssize_t)got;
            size_t want = cap - got - 17;
            if (want > s->ext_end - s->pos)
                want = (size_t)(s->ext_end - s->pos);
            ssize_t n;
            if (s->lane_file && want >= RDC_LANE_PART_MIN) {   /* its 'D' record now, its bytes on a lane */
                if (!defer_part(s, (uint32_t)(got + 17), want))
                    return (ssize_t)got;
                n = (ssize_t)want;
                goto record;
            }
            do
                n = pread(s->fd, out + got + 17, want, (off_t)s->pos);
            while (n < 0 && errno == EINTR);
            if (n <= 0 && s->lane_file) {   /* as a lane's failed read: the file ends above */
                rd_defer_wait_fail(&s->lane, n < 0 ? errno : -1);
                continue;
            }
            if (n <= 0) {
                char *p = rdc_shown(s->fpath);
                if (n == 0)
                    rd_warn("source changed while being read (shrank): '%s'", p);
                else
                    rd_warn("cannot read '%s': %s", p, strerror(errno));
                free(p);
                s->errors++;
                end_file(s, 1);
                continue;
            }
        record:;
            struct rdc_buf hb = { 0 };
            rdc_put_u8(&hb, 'D');
            rdc_put_u64(&hb, s->pos);
            rdc_put_u64(&hb, (uint64_t)n);
            memcpy(out + got, hb.p, 17);
            rdc_buf_free(&hb);
            if (s->hashed)
                XXH3_128bits_update(s->hs, out + got + 17, (size_t)n);
            got += 17 + (size_t)n;
            s->pos += (uint64_t)n;
            s->bytes += (uint64_t)n;
            continue;
        }
        if (s->finished)
            return (ssize_t)got;
        walk(s);
    }
}

/* --count: the totals for the progress line, counted beside the transfer (rdc_count.h) */
static void *count_main(void *arg)
{
    struct snd *s = arg;
    rd_thread_name("rdc-count");
    struct rdc_count c = rdc_count_sources(s->srcs, s->nsrc, s->recursive, s->follow);
    dprintf(STDERR_FILENO, RDC_NOTE_TOTAL_FMT, (unsigned long long)c.files,
            (unsigned long long)c.bytes);
    return NULL;
}

/* How many entries the walk may run ahead of the reader (each file or directory among them
 * holds an open fd): RDCP_SEND_AHEAD (0: walk on the reader's thread), else 256, within RLIMIT_NOFILE. */
static size_t walk_ahead(void)
{
    const char *e = getenv("RDCP_SEND_AHEAD");
    long n = e && *e ? atol(e) : RDC_SEND_AHEAD_DEFAULT;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        long room = ((long)rl.rlim_cur - 64) / 2;
        if (n > room)
            n = room;
    }
    return n > 0 ? (size_t)n : 0;
}

static void read_manifest(struct snd *s)
{
    FILE *f = fdopen(dup(STDIN_FILENO), "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0, capm = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' '))
            line[--n] = '\0';
        struct rdc_manifest_entry e;
        if (!n || rdc_manifest_parse(line, &e))
            continue;
        if (e.kind == 'T') {
            s->dst_is_dir = e.size == 1;
            free(e.path);
            free(e.tmp);
            continue;
        }
        if (s->nman == capm) {
            capm = capm ? capm * 2 : 256;
            s->man = realloc(s->man, capm * sizeof *s->man);
            if (!s->man)
                rd_oom();
        }
        s->man[s->nman++] = e;
    }
    free(line);
    fclose(f);
    if (s->nman)
        qsort(s->man, s->nman, sizeof *s->man, cmp_man);
}

static void snd_free(struct snd *s)
{
    rdc_walk_stop(s->w);
    rdc_buf_free(&s->pend);
    if (s->fd >= 0)
        close(s->fd);
    free(s->fpath);
    for (size_t i = 0; i < s->nlinks; i++)
        free(s->links[i].rel);
    free(s->links);
    free(s->lslot);
    for (size_t i = 0; i < s->nman; i++) {
        free(s->man[i].path);
        free(s->man[i].tmp);
    }
    free(s->man);
    if (s->hs)
        XXH3_freeState(s->hs);
    free(held_base);
    held_base = NULL;
    if (s->src)
        rd_defer_wait_destroy(&s->lane);
}

int rdc_tree_send_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "host", required_argument, NULL, 'H' },
        { "port", required_argument, NULL, 'P' },
        { "transport", required_argument, NULL, 't' },
        { "resume", no_argument, NULL, 'R' },
        { "dst-dir", required_argument, NULL, 'D' },
        { "count", no_argument, NULL, 'c' },
        { "no-sync", no_argument, NULL, 'S' },   /* the receiver's */
        { "encrypt", no_argument, NULL, 'E' },
        { "compress", optional_argument, NULL, 'Z' },
        { "lanes", required_argument, NULL, 'l' },
        { "streams", required_argument, NULL, 's' },
        { "nsrc", required_argument, NULL, 'n' },
        { "list-fd", required_argument, NULL, 'F' },   /* list the roots there, send nothing */
        { NULL, 0, NULL, 0 },
    };
    struct snd s;
    memset(&s, 0, sizeof s);
    s.fd = -1;
    struct rd_opts o;
    rdc_end_init(&o);
    o.is_sender = 1;
    o.timeout_s = -1;
    o.chunk_size = RD_DEFAULT_CHUNK;
    o.depth = RD_DEFAULT_DEPTH;
    int count = 0, list_fd = -1;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+rLpXv", opts, NULL)) != -1) {
        switch (c) {
        case 'F': list_fd = atoi(optarg); break;
        case 'H': o.host = optarg; break;
        case 'P': o.port = optarg; break;
        case 'E': o.encrypt = 1; break;
        case 'Z':
            if (rd_parse_compress(optarg, &o))
                return rd_report();
            break;
        case 't': o.transport = rdc_end_transport(optarg); break;
        case 'l': o.lanes = rdc_end_lanes(optarg); break;
        case 's': rdc_end_streams(optarg, &o); break;
        case 'R': s.resume = 1; break;
        case 'D': s.dst_is_dir = atoi(optarg); break;
        case 'n': s.nsrc_all = atoi(optarg); break;
        case 'c': count = 1; break;
        case 'r': s.recursive = 1; break;
        case 'L': s.follow = 1; break;
        case 'p': s.xattrs |= RDC_XATTR_ACLS; s.atimes = 1; break;
        case 'X': s.xattrs |= RDC_XATTR_USER; break;
        case 'S': break;
        case 'v': o.verbose++; break;
        default: return 1;
        }
    }
    if (list_fd >= 0 && optind < argc) {
        char **v;
        int n = expand_sources(argv + optind, argc - optind, &v), rc = rdc_list_roots(list_fd, v, n, s.recursive, s.follow);
        for (int i = 0; i < n; i++)
            free(v[i]);
        free(v);
        if (rc)
            rd_warn("cannot list the sources' names for --resume: %s", strerror(errno));
        return rc;
    }
    const char *key = getenv("RDPIPE_KEY");
    if (!o.host || !o.port || !key || optind >= argc) {
        rd_warn("tree-send: missing host, port, key or sources");
        return 1;
    }
    o.key = strdup(key);
    o.key_len = strlen(key);
    rd_secret_env_drop("RDPIPE_KEY");
    /* as long-lived as argv: the --count thread reads them until the process exits */
    static char **srcs;
    s.nsrc = expand_sources(argv + optind, argc - optind, &srcs);
    s.srcs = srcs;
    if (s.nsrc_all < s.nsrc)   /* an initiator that does not say: these are all */
        s.nsrc_all = s.nsrc;
    s.hs = XXH3_createState();
    if (s.resume)
        read_manifest(&s);
    pthread_t ct;
    if (count && rd_thread_create(&ct, NULL, count_main, &s) == 0)
        pthread_detach(ct);
    if (s.atimes)   /* before any record with a meta (rdc_tree.h) */
        rdc_put_u8(&s.pend, 'a');
    s.w = rdc_walk_start(s.srcs, s.nsrc, s.recursive, s.follow, s.xattrs != 0, walk_ahead(),
                         RDC_WALK_AHEAD_BYTES);
    struct rd_source src;
    rd_source_custom(&src, "tree", fill, &s);
    rd_source_defer_reads(&src, lane_read);
    s.src = &src;
    rd_defer_wait_init(&s.lane);
    double t0 = rd_now();
    int rc = rd_send_source(&o, &src);
    double t1 = rd_now();
    progress(&s, 1);
    dprintf(STDERR_FILENO, RDC_NOTE_SENT_FMT, (unsigned long long)s.files,
            (unsigned long long)s.dirs, (unsigned long long)s.bytes, (unsigned long long)s.skipped,
            (unsigned long long)s.errors, t1 - t0);
    if (o.key)
        explicit_bzero(o.key, o.key_len);   /* the key outlives no use of it */
    free(o.key);
    uint64_t errors = s.errors;
    snd_free(&s);
    if (rc)
        return rc;
    return errors ? RD_EPARTIAL : 0;
}
