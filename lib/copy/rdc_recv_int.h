/* rdc_recv_int.h - the tree receiver's state, shared by its two halves: rdc_recv_stream.c
 * parses the record stream, rdc_recv.c makes what each record says under DST. */
#ifndef RDC_RECV_INT_H
#define RDC_RECV_INT_H

#include "copy/rdc_recv.h"
#include "copy/rdc_set.h"
#include "copy/rdc_tree.h"

#include <stdint.h>
#include <sys/types.h>
#include <xxhash.h>

struct dirmeta {
    char *path;               /* relative to base */
    struct rdc_meta m;
};

struct rdc_rcv {
    const char *dst;
    int dst_is_dir, dst_exists, nsrc, preserve, owners, times, nosync;
    uint64_t max_file;        /* bigger files fail (EFBIG): the fuzzer's guard */
    mode_t umask;
    int base;                 /* DST (dst_is_dir) or DST's directory: every path is beneath it */
    char *pre;                /* "" or DST's name in base */
    /* roots: their path relative to base, NULL = failed */
    char **roots;
    size_t nroots;
    char *root;               /* the current root's path, NULL = records are dropped */
    struct rdc_set made_dirs, made_files;
    /* the directory of the last record, kept open (records come directory by directory) */
    char *pdir;
    int pfd;
    /* the current file */
    int in_file, fd, discard;
    char *final, *name, *tmp; /* final: relative to base; name, tmp: in pfd */
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

/* a base-relative path as the user knows it (DST/...), escaped for messages; malloc'd */
char *rdc_rcv_disp(struct rdc_rcv *r, const char *rel);
/* one line "WHAT 'path': strerror(e)", counted as an error */
void rdc_rcv_err(struct rdc_rcv *r, const char *what, const char *rel, int e);

/* the records ('R', 'd', 'f', 'l', 'h'; paths as they came, not NUL-terminated) */
void rdc_rcv_root(struct rdc_rcv *r, uint32_t idx, uint8_t kind, uint8_t contents, const char *base, size_t bl);
void rdc_rcv_dir(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m);
void rdc_rcv_file(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m, uint64_t size,
                  uint64_t start, uint8_t flags, const char *t, size_t tl);
void rdc_rcv_symlink(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m, const char *t,
                     size_t tl);
void rdc_rcv_link(struct rdc_rcv *r, const char *path, size_t pl, uint32_t root, const char *t, size_t tl);
/* the current file: n bytes of a 'D' record, and its 'e' record */
void rdc_rcv_data(struct rdc_rcv *r, const unsigned char *p, size_t n);
void rdc_rcv_end_file(struct rdc_rcv *r, uint8_t status, const unsigned char want[16]);

#endif
