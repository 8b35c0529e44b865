/* rdc_recv_pool.c - the tree receiver's workers: small files whose records all arrived are
 * created, written, renamed into place and closed by a few threads, in any order, while the
 * stream thread parses on (see struct rdc_job in rdc_recv_int.h). Only the stream thread
 * submits and reaps; a worker touches nothing but its job (and the job's directory fd), so
 * the receiver's state, its lines and its counts stay the stream thread's.
 *
 * Files over RDC_POOL_MAX_FILE come as pieces, in the engine's frames (struct rdc_piece):
 * the stream thread made the file, the workers write its pieces, one worker at a time per
 * file and in order, several files at once, and then finish it as a small one.
 *
 * A file's creation costs a dozen syscalls, each a trip into the filesystem's journal: on the
 * stream thread they serialise with the parsing and with the engine behind it, on workers
 * they overlap with both and with each other.
 */
#include "copy/rdc_recv_int.h"

#include "engine/rd_hold.h"
#include "run/rd_plan.h"
#include "util/rd_error.h"
#include "util/rd_thread.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One a core, 2 to 8 (the pool's threads). On 2 cores, 20,000 files of 1-64 KiB copied
 * locally to a journaled ext4 (2026-11-26, 3 rounds): 1 worker 1.09-1.19 s, 2 0.93-0.97,
 * 3 0.92-0.95, 4 0.90-0.96. Since files are made without a name (O_TMPFILE), workers meet
 * on a directory's lock only to link them; with temporary names and renames, 3-4 workers
 * were slower than 2 here. */
static int default_workers(void)
{
    unsigned n = rd_plan_cores();
    return n < 2 ? 2 : n > 8 ? 8 : (int)n;
}

void rdc_dir_put(struct rdc_dir *d)
{
    if (d && atomic_fetch_sub(&d->refs, 1) == 1) {
        close(d->fd);
        free(d);
    }
}

uint64_t rdc_pool_key(const char *final)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)final; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

/* pieces not written (a small file that failed or was dropped), their frames given back */
static void drop_pieces(struct rdc_job *j)
{
    for (struct rdc_piece *pc = j->pieces, *next; pc; pc = next) {
        next = pc->next;
        if (pc->hold)
            rd_hold_drop(pc->hold);
        free(pc);
    }
    j->pieces = NULL;
    j->ptail = &j->pieces;
    j->npieces = 0;
}

void rdc_job_own(struct rdc_job *j)
{
    if (!j->data && !(j->data = malloc(j->size ? (size_t)j->size : 1)))
        rd_oom();
    uint64_t pos = 0;
    for (struct rdc_piece *pc = j->pieces; pc; pc = pc->next) {
        memset(j->data + pos, 0, (size_t)(pc->off - pos));
        memcpy(j->data + pc->off, pc->p, pc->n);
        pos = pc->off + pc->n;
    }
    drop_pieces(j);
    j->held = j->size;
}

void rdc_job_free(struct rdc_job *j)
{
    if (!j)
        return;
    drop_pieces(j);   /* a small file's (a big file has none left when it is freed) */
    rdc_dir_put(j->dir);
    free(j->final);
    free(j->name);
    free(j->tmp);
    free(j->data);
    free(j->xattr);
    free(j->xattr_failed);
    free(j);
}

/* a job to the workers (lock held) */
static void enqueue(struct rdc_pool *p, struct rdc_job *j)
{
    j->next = NULL;
    *p->qtail = j;
    p->qtail = &j->next;
    pthread_cond_signal(&p->work);
}

/* One piece, at its offset. After a failed write the file's other pieces are dropped; its
 * job reports the error. */
static void write_piece(struct rdc_job *j, struct rdc_piece *pc)
{
    int e = atomic_load(&j->werr) ? 0 : rdc_pwrite_all(j->fd, pc->p, pc->n, pc->off);
    if (e)
        atomic_store(&j->werr, e);   /* the first: none is written after it */
    rd_hold_drop(pc->hold);
}

/* a big file with pieces, for the next free worker (lock held) */
static void list_file(struct rdc_pool *p, struct rdc_job *j)
{
    j->listed = 1;
    j->next_listed = NULL;
    *p->ltail = j;
    p->ltail = &j->next_listed;
    pthread_cond_signal(&p->work);
}

/* A worker's turn on the first listed file: its pieces in order until none is left (lock
 * held, let go while writing); then the file is finished once it ended. */
static void write_pieces(struct rdc_pool *p)
{
    struct rdc_job *j = p->listed;
    p->listed = j->next_listed;
    if (!p->listed)
        p->ltail = &p->listed;
    j->listed = 0;
    j->writing = 1;
    while (j->pieces) {
        struct rdc_piece *pc = j->pieces;
        j->pieces = NULL;
        j->ptail = &j->pieces;
        pthread_mutex_unlock(&p->lock);
        unsigned n = 0;
        while (pc) {
            struct rdc_piece *next = pc->next;
            write_piece(j, pc);
            free(pc);
            pc = next;
            n++;
        }
        pthread_mutex_lock(&p->lock);
        j->npieces -= n;
        p->pieces_out -= n;
    }
    j->writing = 0;
    if (!j->npieces && j->ended)
        enqueue(p, j);
    if (!p->pieces_out)
        pthread_cond_signal(&p->done_cv);   /* rdc_pool_quiesce */
}

static void *worker_main(void *arg)
{
    struct rdc_rcv *r = arg;
    struct rdc_pool *p = &r->pool;
    rd_thread_name("rdc-worker");
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->queue && !p->listed && !p->stop)
            pthread_cond_wait(&p->work, &p->lock);
        if (p->listed) {
            write_pieces(p);
            continue;
        }
        struct rdc_job *j = p->queue;
        if (!j)
            break;   /* stopping, and nothing is left */
        p->queue = j->next;
        if (!p->queue)
            p->qtail = &p->queue;
        pthread_mutex_unlock(&p->lock);
        rdc_rcv_write_job(r, j);
        /* the bytes are in the file (or will never be): give them back now, the frames too
         * (the engine waits for every frame before it returns, and only then is j reaped) */
        free(j->data);
        j->data = NULL;
        drop_pieces(j);
        pthread_mutex_lock(&p->lock);
        j->next = p->done;
        p->done = j;
        pthread_cond_signal(&p->done_cv);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

void rdc_pool_init(struct rdc_rcv *r)
{
    struct rdc_pool *p = &r->pool;
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    p->qtail = &p->queue;
    p->ltail = &p->listed;
    /* RDCP_RECV_WORKERS: how many (0: none, the stream thread writes every file itself) */
    const char *e = getenv("RDCP_RECV_WORKERS");
    int n = e && *e ? atoi(e) : default_workers();
    if (n < 0)
        n = 0;
    if (n > (int)(sizeof p->th / sizeof p->th[0]))
        n = (int)(sizeof p->th / sizeof p->th[0]);
    r->workers = n;
}

/* the workers start with the first job: a tree without small files never has them */
static void start_workers(struct rdc_rcv *r)
{
    struct rdc_pool *p = &r->pool;
    p->started = 1;
    for (int i = 0; i < r->workers; i++) {
        if (rd_thread_create(&p->th[p->nthreads], NULL, worker_main, r) == 0)
            p->nthreads++;
    }
}

/* take the finished jobs (lock held by the caller), say and count them outside the lock */
static void reap_locked(struct rdc_rcv *r)
{
    struct rdc_pool *p = &r->pool;
    struct rdc_job *d = p->done;
    p->done = NULL;
    pthread_mutex_unlock(&p->lock);
    while (d) {
        struct rdc_job *next = d->next;
        for (size_t i = 0; i < p->npending; i++) {
            if (p->pending[i] == d) {
                p->pending[i] = p->pending[--p->npending];
                break;
            }
        }
        p->bytes -= d->held;
        rdc_rcv_job_done(r, d);
        rdc_job_free(d);
        d = next;
    }
    pthread_mutex_lock(&p->lock);
}

void rdc_pool_reap(struct rdc_rcv *r, int all)
{
    struct rdc_pool *p = &r->pool;
    if (!p->npending)
        return;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (p->done) {   /* reap_locked lets go of the lock: look again before waiting */
            reap_locked(r);
            continue;
        }
        if (!all || !p->npending)
            break;
        pthread_cond_wait(&p->done_cv, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
}

/* j among the pending jobs once there is room (lock held on return) */
static void admit(struct rdc_rcv *r, struct rdc_job *j)
{
    struct rdc_pool *p = &r->pool;
    pthread_mutex_lock(&p->lock);
    while (p->npending == RDC_POOL_JOBS || (p->npending && p->bytes + j->held > RDC_POOL_BYTES)) {
        if (p->done)
            reap_locked(r);
        else
            pthread_cond_wait(&p->done_cv, &p->lock);
    }
    if (p->done)
        reap_locked(r);
    p->pending[p->npending++] = j;
    p->bytes += j->held;
}

void rdc_pool_submit(struct rdc_rcv *r, struct rdc_job *j)
{
    struct rdc_pool *p = &r->pool;
    if (!p->started)
        start_workers(r);
    if (!p->nthreads) {   /* no thread could start: write it here */
        rdc_rcv_write_job(r, j);
        rdc_rcv_job_done(r, j);
        rdc_job_free(j);
        return;
    }
    admit(r, j);
    enqueue(p, j);
    pthread_mutex_unlock(&p->lock);
}

int rdc_pool_piece(struct rdc_rcv *r, struct rdc_job *j, const unsigned char *data, size_t n, uint64_t off,
                   struct rd_hold *hold)
{
    struct rdc_pool *p = &r->pool;
    if (!p->started)
        start_workers(r);
    struct rdc_piece *pc = malloc(sizeof *pc);
    if (!p->nthreads || !pc) {
        free(pc);
        return -1;
    }
    *pc = (struct rdc_piece){ .p = data, .n = n, .off = off, .hold = hold };
    pthread_mutex_lock(&p->lock);
    *j->ptail = pc;
    j->ptail = &pc->next;
    j->npieces++;
    p->pieces_out++;
    if (!j->writing && !j->listed)
        list_file(p, j);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void rdc_pool_end_big(struct rdc_rcv *r, struct rdc_job *j)
{
    struct rdc_pool *p = &r->pool;
    admit(r, j);
    j->ended = 1;
    if (!j->npieces)
        enqueue(p, j);
    pthread_mutex_unlock(&p->lock);
}

void rdc_pool_quiesce(struct rdc_rcv *r)
{
    struct rdc_pool *p = &r->pool;
    if (!p->started)
        return;
    pthread_mutex_lock(&p->lock);
    while (p->pieces_out)
        pthread_cond_wait(&p->done_cv, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

int rdc_pool_pending(struct rdc_rcv *r, const char *final)
{
    struct rdc_pool *p = &r->pool;
    if (!p->npending)
        return 0;
    uint64_t k = rdc_pool_key(final);
    for (size_t i = 0; i < p->npending; i++)
        if (p->pending[i]->key == k && strcmp(p->pending[i]->final, final) == 0)
            return 1;
    return 0;
}

void rdc_pool_stop(struct rdc_rcv *r)
{
    struct rdc_pool *p = &r->pool;
    rdc_pool_reap(r, 1);
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->th[i], NULL);
    p->nthreads = 0;
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->lock);
}
