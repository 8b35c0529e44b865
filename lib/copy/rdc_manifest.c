/* rdc_manifest.c - see rdc_manifest.h. */
#include "copy/rdc_manifest.h"
#include "util/rd_error.h"
#include "copy/rdc_safe.h"
#include "copy/rdc_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define MAX_DEPTH 512   /* each level holds one fd */

static void emit(int out, const struct rdc_manifest_entry *e)
{
    char *h = rdc_manifest_line(e);
    dprintf(out, "m %s\n", h);
    free(h);
}

/* rdc_open_noatime: hashing DST for the manifest would otherwise stamp every file in it
 * "read now" */
static int noatime_denied;

static void man_file(int out, int dfd, const char *name, const char *rel_final, const char *tmp)
{
    int fd = rdc_open_noatime(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, &noatime_denied);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_size == 0 && tmp)) {
        close(fd);
        return;
    }
    struct rdc_manifest_entry e = { .kind = tmp ? 'P' : 'F', .size = (uint64_t)st.st_size,
                                    .mtime_s = st.st_mtim.tv_sec, .mtime_ns = (uint32_t)st.st_mtim.tv_nsec,
                                    .path = (char *)rel_final, .tmp = (char *)tmp };
    XXH3_state_t *hs = XXH3_createState();
    XXH3_128bits_reset(hs);
    if (rdc_hash_prefix(fd, e.size, hs) == 0) {
        rdc_hash_final(hs, e.hash);
        emit(out, &e);
    }
    XXH3_freeState(hs);
    close(fd);
}

/* The names a walk of DST lists at its top: each root, and its partial files by its
 * temporary key (rdc_tmp_key); NULL: every name. */
struct only {
    char *const *roots;
    char **keys;
    int n;
};

static int listed(const struct only *o, const char *name, int is_key)
{
    if (!o)
        return 1;
    for (int i = 0; i < o->n; i++) {
        /* a source's pattern (rdc_is_pattern) lists what it may match, and the partial files
         * of those (a short name is its own key; a long one's, a hash, matches no pattern:
         * that file is sent again) */
        if (strcmp(name, is_key ? o->keys[i] : o->roots[i]) == 0 ||
            (rdc_is_pattern(o->roots[i]) && fnmatch(o->roots[i], name, FNM_PERIOD) == 0))
            return 1;   /* (a name with '[' in it is itself too, as the source takes it) */
    }
    return 0;
}

/* the directory dfd, at rel (relative to DST); takes dfd */
static void walk(int out, int dfd, const char *rel, int depth, const struct only *only)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW))
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (!listed(only, nm, 0))
                continue;
            int sub = depth < MAX_DEPTH ? openat(dfd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
            if (sub >= 0) {
                char *r = rdc_join(rel, nm);
                walk(out, sub, r, depth + 1, NULL);
                free(r);
            }
        } else if (S_ISREG(st.st_mode)) {
            char *fin = rdc_tmp_final(nm);
            if (!listed(only, fin ? fin : nm, fin != NULL)) {
                free(fin);
                continue;
            }
            char *r = rdc_join(rel, fin ? fin : nm);
            man_file(out, dfd, nm, r, fin ? nm : NULL);
            free(r);
            free(fin);
        }
    }
    closedir(d);
}

void rdc_make_manifest(int out, int base, const char *pre, int dst_is_dir, char *const *roots, int nroots)
{
    struct rdc_manifest_entry t = { .kind = 'T', .size = (uint64_t)dst_is_dir, .path = "", .tmp = "" };
    emit(out, &t);
    if (dst_is_dir) {
        struct only o = { roots, calloc((size_t)nroots + 1, sizeof *o.keys), nroots };
        if (!o.keys)
            rd_oom();
        for (int i = 0; i < nroots; i++)
            o.keys[i] = rdc_tmp_key(roots[i]);
        int fd = fcntl(base, F_DUPFD_CLOEXEC, 0);
        if (fd >= 0)
            walk(out, fd, "", 0, nroots > 0 ? &o : NULL);
        for (int i = 0; i < nroots; i++)
            free(o.keys[i]);
        free(o.keys);
        return;
    }
    /* DST is a file (or missing): itself, and its partial files in its directory */
    man_file(out, base, pre, "", NULL);
    int fd = fcntl(base, F_DUPFD_CLOEXEC, 0);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    char *key = rdc_tmp_key(pre);
    while ((de = readdir(d))) {
        char *fin = rdc_tmp_final(de->d_name);
        if (fin && strcmp(fin, key) == 0)
            man_file(out, fd, de->d_name, "", de->d_name);
        free(fin);
    }
    free(key);
    closedir(d);
}
