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

void rdc_roots_add_name(struct rdc_roots *o, const char *name)
{
    rdc_set_add(&o->names, name);
    char *k = rdc_tmp_key(name);
    rdc_set_add(&o->keys, k);
    free(k);
}

void rdc_roots_free(struct rdc_roots *o)
{
    rdc_set_free(&o->names);
    rdc_set_free(&o->keys);
}

/* name (a partial file's key when is_key) is one a root of o names; pat_keys: rdc_tmp_key of
 * each of o->pats */
static int listed(const struct rdc_roots *o, char *const *pat_keys, const char *name, int is_key)
{
    if (!o)
        return 1;
    if (rdc_set_has(is_key ? &o->keys : &o->names, name))
        return 1;
    for (int i = 0; i < o->npats; i++) {
        /* a source's pattern (rdc_is_pattern) lists what it may match, and the partial files
         * of those (a short name is its own key; a long one's, a hash, matches no pattern:
         * that file is sent again) */
        if (strcmp(name, is_key ? pat_keys[i] : o->pats[i]) == 0 ||
            (rdc_is_pattern(o->pats[i]) && fnmatch(o->pats[i], name, FNM_PERIOD) == 0))
            return 1;   /* (a name with '[' in it is itself too, as the source takes it) */
    }
    return 0;
}

/* the directory dfd, at rel (relative to DST); takes dfd */
static void walk(int out, int dfd, const char *rel, int depth, const struct rdc_roots *only, char *const *pat_keys)
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
            if (!listed(only, pat_keys, nm, 0))
                continue;
            int sub = depth < MAX_DEPTH ? openat(dfd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
            if (sub >= 0) {
                char *r = rdc_join(rel, nm);
                walk(out, sub, r, depth + 1, NULL, NULL);
                free(r);
            }
        } else if (S_ISREG(st.st_mode)) {
            char *fin = rdc_tmp_final(nm);
            if (!listed(only, pat_keys, fin ? fin : nm, fin != NULL)) {
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

void rdc_make_manifest(int out, int base, const char *pre, int dst_is_dir, const struct rdc_roots *roots)
{
    struct rdc_manifest_entry t = { .kind = 'T', .size = (uint64_t)dst_is_dir, .path = "", .tmp = "" };
    emit(out, &t);
    if (dst_is_dir) {
        int np = roots ? roots->npats : 0;
        char **keys = calloc((size_t)np + 1, sizeof *keys);
        if (!keys)
            rd_oom();
        for (int i = 0; i < np; i++)
            keys[i] = rdc_tmp_key(roots->pats[i]);
        int fd = fcntl(base, F_DUPFD_CLOEXEC, 0);
        if (fd >= 0)
            walk(out, fd, "", 0, roots, keys);
        for (int i = 0; i < np; i++)
            free(keys[i]);
        free(keys);
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
