/* rdc_stale.c - see rdc_stale.h. */
#include "copy/rdc_stale.h"
#include "util/rd_error.h"
#include "copy/rdc_safe.h"
#include "copy/rdc_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void rdc_stale_made(struct rdc_stale *s, const char *dir)
{
    rdc_set_add(&s->listed, dir);
}

static void add(struct rdc_stale *s, char *final, char *tmp)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct rdc_stale_file *f = realloc(s->f, cap * sizeof *f);
        if (!f)
            rd_oom();
        s->f = f;
        s->cap = cap;
    }
    s->f[s->n++] = (struct rdc_stale_file){ final, tmp };
    rdc_set_add(&s->finals, final);
}

void rdc_stale_list(struct rdc_stale *s, int dfd, const char *dir)
{
    if (rdc_set_has(&s->listed, dir))
        return;
    rdc_set_add(&s->listed, dir);
    int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;   /* nothing removed: the partial files stay, as before */
    }
    rewinddir(d);   /* the dup shares its offset with dfd */
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
            continue;
        char *name = rdc_tmp_final(de->d_name);
        if (name) {
            add(s, rdc_join(dir, name), strdup(de->d_name));
            free(name);
        }
    }
    closedir(d);
}

/* Remove tmp from dfd if it is a regular file that nobody holds locked: its writer is gone.
 * The lock is held across the unlink, and the name must still be the file locked. */
static void remove_unheld(int dfd, const char *tmp)
{
    int fd = openat(dfd, tmp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat a, b;
    if (fstat(fd, &a) == 0 && S_ISREG(a.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        fstatat(dfd, tmp, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        unlinkat(dfd, tmp, 0);
    close(fd);
}

void rdc_stale_done(struct rdc_stale *s, int dfd, const char *final, rdc_stale_ours_fn ours, void *ctx)
{
    if (!s->n)
        return;
    char *key = rdc_tmp_key_path(final);   /* how its partial files name it */
    if (!rdc_set_has(&s->finals, key)) {
        free(key);
        return;
    }
    const char *base;
    char *dir = rdc_dir_of(final, &base);
    for (size_t i = 0; i < s->n; i++) {
        struct rdc_stale_file *f = &s->f[i];
        if (f->tmp && strcmp(f->final, key) == 0) {
            char *rel = rdc_join(dir, f->tmp);
            if (!ours(ctx, rel))
                remove_unheld(dfd, f->tmp);
            free(rel);
            free(f->tmp);
            f->tmp = NULL;
        }
    }
    free(dir);
    free(key);
}

void rdc_stale_free(struct rdc_stale *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->f[i].final);
        free(s->f[i].tmp);
    }
    free(s->f);
    rdc_set_free(&s->listed);
    rdc_set_free(&s->finals);
    *s = (struct rdc_stale){ 0 };
}
