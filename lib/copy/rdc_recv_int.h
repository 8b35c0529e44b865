/* rdc_recv_int.h - the tree receiver's state, shared by its parts: rdc_recv_stream.c parses
 * the record stream, rdc_recv.c makes what each record says under DST, rdc_recv_pool.c writes
 * small files on worker threads. */
#ifndef RDC_RECV_INT_H
#define RDC_RECV_INT_H

#include "copy/rdc_recv.h"
#include "copy/rdc_set.h"
#include "copy/rdc_stale.h"
#include "copy/rdc_tree.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <xxhash.h>

/* A directory fd beneath DST (opened by rdc_safe), shared by the record stream's cache and
 * the file jobs that still write into it: closed when the last of them lets go. */
struct rdc_dir {
    int fd;
    atomic_int refs;
};
void rdc_dir_put(struct rdc_dir *d);

/* A small file whose records all arrived: its data in memory, written, renamed into place and
 * closed by a worker (rdc_recv_pool.c), in any order with the other jobs. Its bytes stay in
 * the engine's frames they came in (pieces, at most RDC_JOB_PIECES) and the worker writes them
 * from there: the stream thread, the one serial step of the receiver, never copies them. A
 * file with more pieces, or still gathering when a frame is handed back (the stream thread
 * holds no frame between calls, so a broken stream can always give them all back), is copied
 * into data (rdc_job_own). The stream thread
 * checked its path exactly as for a file it writes itself (place(): beneath DST, in a
 * directory this stream made); the worker only creates the temporary in dir, writes, renames.
 * Its outcome goes back to the stream thread, which says it (the same lines as when the
 * stream thread writes the file) and counts it. */
struct rdc_job {
    struct rdc_job *next;
    struct rdc_dir *dir;
    char *final, *name;       /* final: relative to base; name: in dir */
    uint64_t key;             /* hash of final: the stream thread's pending check */
    struct rdc_meta m;
    uint64_t size;
    uint64_t got;             /* the data bytes of it that crossed (counted once it is in place) */
    uint64_t held;            /* bytes of memory it holds in the pool (data: size; pieces and a
                               * big file: 0, their frames are the engine's ring) */
    unsigned char *data;      /* NULL (its bytes are its pieces) or size bytes (holes of the
                               * stream already zeros) */
    /* a big file (no data): its temporary, made by the stream thread, is written piece by
     * piece on the workers out of the engine's frames (struct rdc_piece), then finished as
     * a small one is. fd stays the stream thread's (r->fd) until the file's end record.
     * Under the pool's lock: its pieces not yet taken, how many are queued or being
     * written, whether a worker writes them now (one at a time, in order: a file is written
     * front to back, as a filesystem lays it out best, and ext4 and tmpfs take one write
     * into a file at a time anyway), whether it waits on the pool's list of files with
     * pieces; the job is queued once it ended and has no piece left. A small file's
     * pieces are the stream thread's until it is submitted, then its worker's */
    int fd;
    char *tmp;
    struct rdc_piece *pieces, **ptail;
    unsigned npieces;
    int writing, listed, ended;
    struct rdc_job *next_listed;
    atomic_int werr;          /* a piece's write failed: its errno (the first) */
    unsigned char *xattr;     /* its 'x' record's body as taken (rdc_xattr.h), or NULL */
    size_t xattr_len;
    /* outcome: what failed (NULL: renamed into place), errno; owner_err: fchown's errno;
     * xattr_err: fsetxattr's errno for the attribute xattr_failed (malloc'd) */
    const char *what;
    int err, owner_err, xattr_err;
    char *xattr_failed;
    unsigned xattr_more;      /* the other attributes that failed */
};

/* n bytes of a big file at off, in a frame the engine lent (rd_sink_hold): written by a
 * worker, then the frame given back. Pieces go before jobs: they free the ring. */
struct rdc_piece {
    struct rdc_piece *next;
    const unsigned char *p;
    size_t n;
    uint64_t off;
    struct rd_hold *hold;
};

/* The worker pool: at most RDC_POOL_JOBS jobs and RDC_POOL_BYTES bytes in flight (queued,
 * being written, or done and not yet reaped by the stream thread). */
#define RDC_POOL_MAX_FILE (1u << 20)   /* bigger files are written by the stream thread */
#define RDC_JOB_PIECES 4                /* a small file in more pieces is copied */
#define RDC_POOL_JOBS 256
#define RDC_POOL_BYTES (64u << 20)
struct rdc_pool {
    pthread_mutex_t lock;
    pthread_cond_t work, done_cv;
    struct rdc_job *queue, **qtail, *done;
    struct rdc_job *listed, **ltail;   /* big files with pieces and no worker on them */
    unsigned pieces_out;      /* queued or being written */
    int nthreads, stop, started;
    pthread_t th[8];
    /* the stream thread's own: jobs not yet reaped, with their keys */
    struct rdc_job *pending[RDC_POOL_JOBS];
    size_t npending;
    uint64_t bytes;
};

/* A file with other names (RDC_F_LINKED) whose first name could not be made: its data, complete,
 * under a temporary name, for the first of its hard links ('h' records naming final) that can
 * be made; the others link to that one (alias). Removed at the end if none could. */
struct rdc_orphan {
    char *final;              /* the first name, relative to base: what its 'h' records name */
    char *alias;              /* the name that became the file, or NULL */
    int dfd;                  /* tmp's directory */
    char *tmp;                /* NULL once renamed */
};

struct dirmeta {
    char *path;               /* relative to base */
    struct rdc_meta m;
    mode_t drop;              /* without -p: owner bits to take back once its files are in */
    unsigned char *xattr;     /* its attributes, set with the rest of its metadata at the end */
    size_t xattr_len;
};
/* what the directories' attributes may hold until the end (a hostile source sending a 128 KiB
 * 'x' record per directory would otherwise grow the receiver without bound) */
#define RDC_DIR_XATTR_BYTES (64u << 20)

#define RDC_MAX_MOUNTS 64

struct rdc_rcv {
    const char *dst;
    int dst_is_dir, dst_exists, nsrc, preserve, owners, times, nosync;
    const char *dst_special;  /* DST is (reaches) a device, FIFO or socket: what it is */
    unsigned xattrs;          /* the attribute families taken (RDC_XATTR_*): -p ACLs, -X user.* */
    uint64_t max_file;        /* bigger files fail (EFBIG): the fuzzer's guard */
    int base;                 /* DST (dst_is_dir) or DST's directory: every path is beneath it */
    /* the other filesystems written into (mounted beneath DST), each synced at the end as
     * base's is: an fd of the first directory on each, opened before anything was written
     * there (syncfs reports the writeback errors since its fd was opened) */
    dev_t base_dev;
    dev_t mount_dev[RDC_MAX_MOUNTS];
    int mount_fd[RDC_MAX_MOUNTS];
    size_t nmounts;
    int more_mounts;          /* more than RDC_MAX_MOUNTS: the rest get a plain sync() */
    char *pre;                /* "" or DST's name in base */
    /* roots: their path relative to base, NULL = failed */
    char **roots;
    size_t nroots;
    char *root;               /* the current root's path, NULL = records are dropped */
    struct rdc_set made_dirs, made_files;
    struct rdc_set made_others;   /* the symlinks, FIFOs, sockets and hard links it made */
    struct rdc_set earlier;   /* what the runs of this copy from other source hosts made */
    struct rdc_set failed_files;   /* files that failed: their hard links say so */
    unsigned dst_not_dir;     /* roots refused: several sources, and DST is no directory */
    struct rdc_set made_folded;   /* every path it took, ASCII case folded (folds_onto_made) */
    struct rdc_stale stale;   /* partial files an earlier copy left, removed once superseded */
    /* the directory of the last record, kept open (records come directory by directory) */
    char *pdir;
    int pfd;
    struct rdc_dir *pdh;      /* pfd, shared with the jobs writing into it */
    /* the worker pool (RDCP_RECV_WORKERS=0: none, every file on the stream thread) */
    struct rdc_pool pool;
    int workers;
    struct rdc_job *job;      /* the current file, when it goes to the pool */
    struct rdc_job *big;      /* the current file, when its pieces go to the pool */
    struct rd_sink *sink;     /* the engine's, which lends its frames (NULL: the fuzzer's) */
    int atimes;               /* an 'a' record came: metas carry the atime (rdc_tree.h) */
    int resume;               /* --resume: the sender may skip or continue a file (manifest sent) */
    int lost;                 /* the transfer failed while a hole was hashed: consume no more */
    /* the current file */
    int in_file, fd, discard;
    char *final, *name, *tmp; /* final: relative to base; name, tmp: in pfd */
    uint64_t size, hpos;
    struct rdc_meta m;
    int hashed;               /* its end record's hash is checked (not RDC_F_NOHASH) */
    int linked;               /* RDC_F_LINKED: written here (not on the pool), kept if its
                               * name fails (an orphan) */
    int orphan;               /* its name was refused: written into tdfd, kept as an orphan */
    int tdfd;                 /* the directory tmp is in (pfd, or base for an orphan) */
    struct rdc_orphan *orphans;
    size_t norphans, caporphans;
    unsigned char *xattr;     /* its attributes (rdc_xattr.h), when written by this thread */
    size_t xattr_len;
    /* what an 'x' record would belong to: 'f' the current file, 'd' the directory of the last
     * record (dirs[xdir], or none when xdir < 0), 'n' the FIFO or socket of the last record,
     * 0 nothing: an 'x' there is malformed. xmade: the base-relative path, in pfd, of what the
     * last record made or found complete by name (a FIFO or socket, a file --resume skips),
     * whose attributes are set there at once; NULL when it was not made. xfd: xmade opened and
     * checked (a file --resume skips: its attributes go to that file, not to a name swapped in
     * since), else -1 */
    char xfor;
    long xdir;
    char *xmade;
    int xfd;
    uint64_t dir_xattr_bytes;
    XXH3_state_t *hs;
    /* a 'D' record being consumed */
    uint64_t data_left, data_off;
    struct rdc_buf pend;
    struct dirmeta *dirs;
    size_t ndirs, capdirs;
    int ended;
    struct rdc_flush *flush;  /* early writeback (rdc_flush.h); NULL under --no-sync */
    char *skip;               /* a directory that could not be made: its subtree is dropped */
    size_t skip_len;
    uint64_t files, ndir, bytes, skipped, errors;
    uint64_t got;             /* the current file's data bytes that crossed */
    uint64_t copied;          /* data bytes of the files that landed: what -v and --json say
                               * was copied (bytes counts every byte that arrived) */
};

/* a base-relative path as the user knows it (DST/...), escaped for messages; malloc'd */
char *rdc_rcv_disp(struct rdc_rcv *r, const char *rel);
/* one line "WHAT 'path': strerror(e)", counted as an error */
void rdc_rcv_err(struct rdc_rcv *r, const char *what, const char *rel, int e);
/* one line "cannot set extended attribute 'NAME' of 'path': strerror(e)", counted */
void rdc_rcv_xattr_err(struct rdc_rcv *r, const char *name, unsigned more, const char *rel, int e);
/* set an 'x' body as taken (NULL: nothing) on fd, which is rel; a failure is that line */
void rdc_rcv_set_xattrs(struct rdc_rcv *r, int fd, const unsigned char *p, size_t n, const char *rel);

/* all n bytes at off: 0, or the errno of the write that failed (ENOSPC for a write of none) */
int rdc_pwrite_all(int fd, const void *p, size_t n, uint64_t off);
/* the current file's pieces written and its job forgotten (r->fd is the stream thread's
 * alone again): a piece's write error, or 0 */
int rdc_rcv_settle(struct rdc_rcv *r);
/* the orphans none of whose names could be made removed, the rest forgotten */
void rdc_rcv_orphans_free(struct rdc_rcv *r);

/* the records ('R', 'd', 'f', 'l', 'h'; paths as they came, not NUL-terminated) */
void rdc_rcv_root(struct rdc_rcv *r, uint32_t idx, uint8_t kind, uint8_t contents, const char *base, size_t bl);
void rdc_rcv_dir(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m);
void rdc_rcv_file(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m, uint64_t size,
                  uint64_t start, uint8_t flags, const char *t, size_t tl);
void rdc_rcv_node(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m, uint8_t type);
void rdc_rcv_symlink(struct rdc_rcv *r, const char *path, size_t pl, const struct rdc_meta *m, const char *t,
                     size_t tl);
void rdc_rcv_link(struct rdc_rcv *r, const char *path, size_t pl, uint32_t root, const char *t, size_t tl);
/* an 'x' record's body (checked by rdc_xattr_parse) for what r->xfor says */
void rdc_rcv_xattrs(struct rdc_rcv *r, const unsigned char *p, size_t n);
/* the current file: n bytes of a 'D' record, and its 'e' record */
void rdc_rcv_data(struct rdc_rcv *r, const unsigned char *p, size_t n);
void rdc_rcv_end_file(struct rdc_rcv *r, uint8_t status, const unsigned char want[16]);

/* the pool (rdc_recv_pool.c), driven by the stream thread only */
uint64_t rdc_pool_key(const char *final);
void rdc_pool_init(struct rdc_rcv *r);
/* queue a job (waits while the pool is full, reaping what is done meanwhile) */
void rdc_pool_submit(struct rdc_rcv *r, struct rdc_job *j);
/* say and count the finished jobs; all = wait until every submitted job finished */
void rdc_pool_reap(struct rdc_rcv *r, int all);
/* a big file's piece, in a frame held by hold: 0, or -1 when no worker runs (write it here;
 * the hold is still the caller's) */
int rdc_pool_piece(struct rdc_rcv *r, struct rdc_job *j, const unsigned char *p, size_t n, uint64_t off,
                   struct rd_hold *hold);
/* a big file's end: finished by a worker once its pieces are written */
void rdc_pool_end_big(struct rdc_rcv *r, struct rdc_job *j);
/* wait until every piece queued is written (before closing the file they are written to) */
void rdc_pool_quiesce(struct rdc_rcv *r);
/* 1 if a job not yet reaped writes final (a record about it must wait for it) */
int rdc_pool_pending(struct rdc_rcv *r, const char *final);
/* every job finished and reaped, the workers joined */
void rdc_pool_stop(struct rdc_rcv *r);
void rdc_job_free(struct rdc_job *j);
/* a small file's pieces copied into its data (allocated: size bytes, zeros between them), their
 * frames given back */
void rdc_job_own(struct rdc_job *j);
/* what a worker does with one job (rdc_recv.c) */
void rdc_rcv_write_job(const struct rdc_rcv *r, struct rdc_job *j);
/* the stream thread's side of a finished job: its lines, its counts (rdc_recv.c) */
void rdc_rcv_job_done(struct rdc_rcv *r, struct rdc_job *j);

#endif
