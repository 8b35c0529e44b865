/* rdc_walk.h - the tree sender's walk, run on its own thread ahead of the reader: it lists
 * directories, stats and opens files and starts reading them into the page cache
 * (readahead), and hands each entry over in walk order, so the engine's reader thread (fill()
 * in rdc_send.c) only reads and encodes. Opening, stat and listing overlap with reading and
 * sending, and a cold tree's reads are in flight several files ahead instead of one at a time.
 *
 * Messages about the walk (cannot stat, directory loops, special files) travel as entries
 * too, so the reader says them in walk order and counts them as before.
 */
#ifndef RDC_WALK_H
#define RDC_WALK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

enum rdc_ent_kind {
    RDC_E_ROOT,      /* a source argument begins: base, contents, kind ('d', 'f', 'l') */
    RDC_E_DIR,       /* a directory (its entries follow, in name order) */
    RDC_E_FILE,      /* a regular file: st, fd (open, read ahead), or err and what */
    RDC_E_LINK,      /* a symlink: st, target */
    RDC_E_NODE,      /* a FIFO or a socket: st */
    RDC_E_MSG,       /* a line to say; counted as an error when err is set */
    RDC_E_END,       /* nothing more */
};

struct rdc_ent {
    enum rdc_ent_kind kind;
    uint32_t root;
    char *fs, *rel;            /* path to open / inside the root (malloc'd) */
    struct stat st;
    int fd;                    /* RDC_E_FILE: -1 when it could not be opened (what, err);
                                * RDC_E_DIR, RDC_E_NODE: the directory, the node (O_PATH) for
                                * their attributes (-1: read them by path) */
    char *target;              /* RDC_E_LINK: the link's bytes (tlen of them); RDC_E_MSG: the line */
    size_t tlen;
    const char *what;
    int err;
    /* RDC_E_ROOT */
    char *base;
    int contents;
    char rkind;
};

struct rdc_walk;

/* Start walking srcs (nsrc of them; recursive: -r, follow: -L; attrs: directories and FIFOs
 * carry an fd for their attributes, -X or -p) on a thread that stays at most
 * `ahead` entries and about `ahead_bytes` of file data ahead of the reader. ahead 0: no
 * thread, rdc_walk_next walks on the caller's thread (RDCP_SEND_AHEAD=0, for measuring). */
struct rdc_walk *rdc_walk_start(char **srcs, int nsrc, int recursive, int follow, int attrs, size_t ahead,
                                uint64_t ahead_bytes);
/* The next entry, in walk order (waits for the thread); the caller owns it: rdc_ent_free. */
void rdc_walk_next(struct rdc_walk *w, struct rdc_ent *e);
void rdc_ent_free(struct rdc_ent *e);
/* Stop the thread and close what it opened ahead. */
void rdc_walk_stop(struct rdc_walk *w);

#endif
