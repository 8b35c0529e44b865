/* rdc_count.c - rdcp --count: the progress line's total, walked beside the transfer.
 *
 * Each directory is opened from its parent's fd, as the walk opens them (nftw goes by path
 * and stops at PATH_MAX). The first COUNT_OPEN levels keep their directory open while what is
 * below is counted. Deeper, a directory's entries are read at once and its fd is given up
 * while each subdirectory is counted, then found again as that subdirectory's "..", checked
 * by device and inode: so a tree of any depth costs at most COUNT_OPEN + 3 fds, and the walk
 * keeps the rest of RLIMIT_NOFILE. Where ".." is not the directory we came from (with -L, a
 * directory reached through a symlink; a tree moved meanwhile), the rest of that directory is
 * left out: the total is a guide, as it is for what cannot be read.
 */
#include "copy/rdc_count.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COUNT_OPEN 32

struct dir_id {
    dev_t dev;
    ino_t ino;
};

struct count_walk {
    int follow;
    struct dir_id *up;   /* up[0..depth]: the directory being counted and its ancestors */
    size_t cap;
    struct rdc_count total;
};

struct names {
    char **v;
    size_t n, cap;
};

static void count_node(struct count_walk *w, const struct stat *st)
{
    w->total.files++;
    if (S_ISREG(st->st_mode))
        w->total.bytes += (uint64_t)st->st_size;
}

static int is_dot(const char *n)
{
    return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]));
}

/* Should the directory st, found at depth + 1, be entered? Records it as up[depth + 1]. */
static int enter(struct count_walk *w, int depth, const struct stat *st)
{
    for (int i = 0; i <= depth; i++)   /* with -L a directory can be its own ancestor */
        if (w->up[i].dev == st->st_dev && w->up[i].ino == st->st_ino)
            return 0;
    if ((size_t)depth + 2 > w->cap) {
        size_t cap = w->cap * 2;
        struct dir_id *up = realloc(w->up, cap * sizeof *up);
        if (!up)
            return 0;
        w->up = up;
        w->cap = cap;
    }
    w->up[depth + 1] = (struct dir_id){ st->st_dev, st->st_ino };
    return 1;
}

static int open_sub(struct count_walk *w, int dfd, const char *name)
{
    return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (w->follow ? 0 : O_NOFOLLOW));
}

static int count_dir(struct count_walk *w, int dfd, int depth);

/* Below COUNT_OPEN levels: the directory stays open while its subdirectories are counted. */
static void count_open(struct count_walk *w, int dfd, int depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (is_dot(e->d_name) || fstatat(dirfd(d), e->d_name, &st, w->follow ? 0 : AT_SYMLINK_NOFOLLOW))
            continue;
        if (!S_ISDIR(st.st_mode)) {
            count_node(w, &st);
            continue;
        }
        int sub = enter(w, depth, &st) ? open_sub(w, dirfd(d), e->d_name) : -1;
        if (sub < 0)
            continue;
        int back = count_dir(w, sub, depth + 1);
        if (back >= 0)
            close(back);
    }
    closedir(d);
}

/* The subdirectories of dfd, the rest counted; 0, or -1 if it could not be read. */
static int read_subdirs(struct count_walk *w, int dfd, struct names *subs)
{
    int rfd = dup(dfd);
    DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
    if (!d) {
        if (rfd >= 0)
            close(rfd);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (is_dot(e->d_name) || fstatat(dfd, e->d_name, &st, w->follow ? 0 : AT_SYMLINK_NOFOLLOW))
            continue;
        if (!S_ISDIR(st.st_mode)) {
            count_node(w, &st);
            continue;
        }
        if (subs->n == subs->cap) {
            size_t cap = subs->cap ? subs->cap * 2 : 8;
            char **v = realloc(subs->v, cap * sizeof *v);
            if (!v)
                break;
            subs->v = v;
            subs->cap = cap;
        }
        if (!(subs->v[subs->n] = strdup(e->d_name)))
            break;
        subs->n++;
    }
    closedir(d);
    return 0;
}

/* From COUNT_OPEN levels down: dfd is given up while each subdirectory is counted, and found
 * again as its "..". Returns dfd's directory open again, or -1 once it is lost. */
static int count_deep(struct count_walk *w, int dfd, int depth)
{
    struct names subs = { 0 };
    int cur = dfd;
    if (read_subdirs(w, cur, &subs) == 0) {
        for (size_t i = 0; i < subs.n && cur >= 0; i++) {
            struct stat st;
            int sub = open_sub(w, cur, subs.v[i]);
            if (sub < 0)
                continue;
            if (fstat(sub, &st) || !enter(w, depth, &st)) {
                close(sub);
                continue;
            }
            close(cur);
            int back = count_dir(w, sub, depth + 1);
            cur = back >= 0 ? openat(back, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
            if (back >= 0)
                close(back);
            if (cur >= 0 && (fstat(cur, &st) || st.st_dev != w->up[depth].dev || st.st_ino != w->up[depth].ino)) {
                close(cur);
                cur = -1;
            }
        }
    }
    for (size_t i = 0; i < subs.n; i++)
        free(subs.v[i]);
    free(subs.v);
    return cur;
}

/* The tree below the directory dfd (up[depth] is its id): returns dfd, or a descriptor of
 * the same directory, for the caller to find its own way back from (its ".."), or -1 (then
 * dfd is closed, as it is whenever the caller does not need it back). */
static int count_dir(struct count_walk *w, int dfd, int depth)
{
    if (depth < COUNT_OPEN) {
        count_open(w, dfd, depth);
        return -1;
    }
    return count_deep(w, dfd, depth);
}

struct rdc_count rdc_count_sources(char *const *srcs, int nsrc, int recursive, int follow)
{
    struct count_walk w = { .follow = follow, .cap = 2 * COUNT_OPEN };
    w.up = calloc(w.cap, sizeof *w.up);
    for (int i = 0; w.up && i < nsrc; i++) {
        /* as the walk takes a source: with -r a symlink is itself (unless -L), and without
         * -r a directory is not copied */
        struct stat st;
        int through = follow || !recursive;
        if ((through ? stat(srcs[i], &st) : lstat(srcs[i], &st)) != 0)
            continue;
        if (!S_ISDIR(st.st_mode)) {
            count_node(&w, &st);
            continue;
        }
        int dfd = recursive ? open(srcs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (dfd < 0)
            continue;
        w.up[0] = (struct dir_id){ st.st_dev, st.st_ino };
        int back = count_dir(&w, dfd, 0);
        if (back >= 0)
            close(back);
    }
    free(w.up);
    return w.total;
}
