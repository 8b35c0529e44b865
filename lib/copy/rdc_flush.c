/* rdc_flush.c - see rdc_flush.h. */
#include "copy/rdc_flush.h"

#include "util/rd_error.h"
#include "util/rd_thread.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct rdc_flush {
    int fd;
    pthread_t th;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int want, stop;
    uint64_t last;             /* bytes when the last sync was asked for (the stream thread's) */
};

static void *flush_main(void *arg)
{
    struct rdc_flush *f = arg;
    rd_thread_name("rdc-sync");
    pthread_mutex_lock(&f->lock);
    for (;;) {
        while (!f->want && !f->stop)
            pthread_cond_wait(&f->cv, &f->lock);
        if (f->stop)
            break;
        f->want = 0;
        pthread_mutex_unlock(&f->lock);
        (void)syncfs(f->fd);   /* errors are the final syncfs's to report (rdc_flush.h) */
        pthread_mutex_lock(&f->lock);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

struct rdc_flush *rdc_flush_start(int dfd)
{
#ifdef RDC_NO_EARLY_SYNC   /* a build for measuring */
    return NULL;
#endif
    if (getenv("RDCP_NO_EARLY_SYNC"))
        return NULL;
    struct rdc_flush *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (f->fd < 0)
        goto fail;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cv, NULL);
    if (rd_thread_create(&f->th, NULL, flush_main, f))
        goto fail_sync;
    return f;
fail_sync:
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->lock);
    close(f->fd);
fail:
    free(f);
    return NULL;
}

void rdc_flush_note(struct rdc_flush *f, uint64_t bytes)
{
    if (!f || bytes - f->last < RDC_FLUSH_BYTES)
        return;
    f->last = bytes;
    pthread_mutex_lock(&f->lock);
    f->want = 1;   /* a sync under way absorbs the ask: one more follows it at most */
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->lock);
}

void rdc_flush_stop(struct rdc_flush *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    f->stop = 1;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->lock);
    pthread_join(f->th, NULL);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->lock);
    close(f->fd);
    free(f);
}
