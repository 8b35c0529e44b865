/* rdc_stale.h - the partial files (".rdcp.NAME.XXXXXX") an interrupted copy left for --resume,
 * removed once a later copy completes NAME itself, with or without --resume: rsync's
 * temporaries do not outlive their file either. A partial file that a running rdcp writes is
 * locked by it (rdc_tmp_lock) and stays; so does anything that is not a regular file. Only
 * the directories that were there before the copy are listed, once each, when the first file
 * record names them: a directory the copy made holds none. */
#ifndef RDC_STALE_H
#define RDC_STALE_H

#include "copy/rdc_set.h"

#include <stddef.h>

struct rdc_stale {
    struct rdc_set listed;     /* base-relative directories listed (or made by this copy) */
    struct rdc_set finals;     /* base-relative final paths that have partial files */
    struct rdc_stale_file {
        char *final;           /* base-relative path of NAME, its name as rdc_tmp_key keeps it */
        char *tmp;             /* its partial file's name in the directory; NULL once removed */
    } *f;
    size_t n, cap;
};

/* dir (base-relative, "" for base) holds no partial file: this copy made it. */
void rdc_stale_made(struct rdc_stale *s, const char *dir);

/* List dir (open as dfd) for partial files, the first time it is named. */
void rdc_stale_list(struct rdc_stale *s, int dfd, const char *dir);

/* Whether this copy made, or is making, base-relative path rel: a source file may itself be
 * named like a partial file (a tree that an interrupted rdcp wrote into, copied on). */
typedef int (*rdc_stale_ours_fn)(void *ctx, const char *rel);

/* final (base-relative, its name in dfd) is in place: remove its partial files that no
 * process holds locked and that ours() does not claim. */
void rdc_stale_done(struct rdc_stale *s, int dfd, const char *final, rdc_stale_ours_fn ours, void *ctx);

void rdc_stale_free(struct rdc_stale *s);

#endif
