/* rd_verbs_file.c - send_ref over verbs: a page-cached input file's chunk goes out of the
 * file's own page-cache pages, so nothing copies it into the registered ring.
 *
 * The frame header stays in the ring slot; the payload is a second SGE into a window of the
 * file that we mapped (read-only, MAP_SHARED) and registered (ibv_reg_mr, local read only)
 * ourselves. The engine unmaps its own per-chunk mapping as soon as send_ref returns; our
 * registration keeps the pages pinned until the send completes, so the adapter never reads
 * memory that is gone. A window is registered once and serves the chunks after it; it is
 * dropped when a new one needs its place and nothing posted reads it any more.
 *
 * What is pinned is bounded: RD_V_FWIN_MAX windows of at most fmr_window bytes each (64 MiB:
 * with 4 MiB chunks at depth 8 the 32 MiB in flight fit in two windows, so a registration
 * never waits; 3 x 64 MiB at worst, beside the rings), and a window stops at the first page
 * that is not cached, so registering never reads the disk for chunks the engine would have
 * read with its lanes. Where pinning fails (a kernel or device that refuses file pages, the
 * locked-memory limit) the connection copies from then on: pread into the ring slot, what
 * the lanes would have done.
 *
 * Integrity: the lane tagged its own copy of the same page-cache pages. A file changed in
 * place is sent as it is at DMA time and fails its tag at the receiver (TCP sends the lane's
 * copy, so there it arrives as read); a file truncated while pinned leaves our pages orphaned
 * but valid memory (no SIGBUS, no crash), and the next lane's pread comes up short.
 *
 * Threads: send_ref is called by one thread (the engine's network thread, or a relay); it
 * alone registers and drops windows, so it may do that outside the connection's mutex.
 * Completions (under mu) only count inflight down.
 */
#include "transport/rd_verbs.h"
#include "util/rd_error.h"
#include "wire/rd_proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define PAGE 4096u

/* Can this kernel pin a read-only shared file mapping? Linux before 6.2 pins every user MR
 * for writing (FOLL_FORCE | FOLL_WRITE), which a read-only shared mapping refuses (EFAULT):
 * there the engine must not map chunks for us, the lanes' pread is the cheaper copy. A page
 * of a memfd stands for the input file. Once per process (the kernel decides, and a device
 * that refuses a real file later is still handled: that connection copies), before the
 * first QP exists, so no MR is ever deregistered under a QP but our windows. */
static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static int probe_state = -1, probe_errno;   /* -1 not yet, 0 refused (probe_errno), 1 can */

static int probe(struct ibv_pd *pd)
{
    int ok = 0, fd = (int)syscall(SYS_memfd_create, "rdpipe-probe", 1u /* MFD_CLOEXEC */);
    if (fd < 0)
        return -errno;
    uint8_t *m = MAP_FAILED;
    if (pwrite(fd, "p", 1, 0) == 1 && ftruncate(fd, PAGE) == 0)
        m = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);
    int e = errno;
    if (m != MAP_FAILED) {
        struct ibv_mr *mr = ibv_reg_mr(pd, m, PAGE, 0);
        e = errno;
        if (mr && ibv_dereg_mr(mr) == 0)
            ok = 1;
        munmap(m, PAGE);
    }
    close(fd);
    return ok ? 1 : -e;
}

void rd_v_file_probe(struct rd_v_conn *c)
{
    pthread_mutex_lock(&probe_mu);
    if (probe_state < 0) {
        int r = probe(c->pd);
        probe_state = r > 0;
        probe_errno = r > 0 ? 0 : -r;
    }
    c->fmr_pinnable = probe_state;
    pthread_mutex_unlock(&probe_mu);
}

void rd_v_file_setup(struct rd_transport *tp, unsigned depth)
{
    struct rd_v_conn *c = tp->priv;
    const char *env = getenv("RDPIPE_RDMA_FILE_MR");
    if ((env && env[0] == '0') || c->send_sge < 2 || c->fwin_of)
        return;
    if (!c->fmr_pinnable) {
        if (c->verbose > 1)
            fprintf(stderr, "%s: rdma: %s cannot register file pages read-only here (%s): "
                    "page-cached input is copied into the ring\n", rd_progname(),
                    ibv_get_device_name(c->pd->context->device), strerror(probe_errno));
        return;
    }
    const char *w = getenv("RDPIPE_RDMA_FILE_MR_WINDOW");   /* MiB */
    long mib = w ? atol(w) : 0;
    c->fmr_window = mib > 0 && mib <= 1024 ? (size_t)mib << 20 : RD_V_FWIN_BYTES;
    c->fwin_of = calloc(depth, 1);
    if (!c->fwin_of)
        return;   /* then no send_ref: the engine copies as without it */
    c->fmr = 1;
    tp->ops = &rd_verbs_file_ops;
}

void rd_v_file_sent(struct rd_v_conn *c, unsigned slot)
{
    if (!c->fwin_of || !c->fwin_of[slot])
        return;
    c->fwin[c->fwin_of[slot] - 1].inflight--;
    c->fwin_of[slot] = 0;
}

/* Only when nothing posted reads the window (or the QP is gone). */
static void window_drop(struct rd_v_fwin *w)
{
    if (w->mr) {
        int e = ibv_dereg_mr(w->mr);
        if (e) {
            rd_v_teardown_warn("ibv_dereg_mr (input file)", e);
            w->map = NULL;   /* still registered: leave the mapping rather than unmap under it */
        }
    }
    if (w->map)
        munmap(w->map, w->len);
    memset(w, 0, sizeof *w);
}

void rd_v_file_release(struct rd_v_conn *c)
{
    for (unsigned i = 0; i < RD_V_FWIN_MAX; i++)
        if (c->fwin[i].mr)
            window_drop(&c->fwin[i]);
}

/* How much of [0, len) of mapping m is cached, from page `from` on: the length up to the
 * first page that is not (len when all are, or when mincore cannot tell). */
static size_t cached_prefix(uint8_t *m, size_t len, size_t from)
{
    size_t pages = (len + PAGE - 1) / PAGE;
    unsigned char *vec = malloc(pages);
    if (!vec)
        return from * PAGE < len ? from * PAGE : len;
    size_t n = len;
    if (mincore(m, len, vec) == 0)
        for (size_t i = from; i < pages; i++)
            if (!(vec[i] & 1)) {
                n = i * PAGE;
                break;
            }
    free(vec);
    return n;
}

/* Register a window of file fd (st) from the page holding off, covering at least n bytes.
 * RD_OK, or -1 when it cannot (then the caller copies). */
static int window_new(struct rd_v_conn *c, struct rd_v_fwin *w, int fd, const struct stat *st,
                      uint64_t off, size_t n)
{
    uint64_t start = off / PAGE * PAGE, need = off + n - start;
    if ((uint64_t)st->st_size < off + n)
        return -1;   /* it shrank: the copy's pread says so */
    uint64_t len = (uint64_t)st->st_size - start;
    if (len > c->fmr_window)
        len = c->fmr_window > need ? c->fmr_window : need;
    uint8_t *m = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, (off_t)start);
    if (m == MAP_FAILED)
        return -1;
    size_t keep = cached_prefix(m, (size_t)len, (size_t)((need + PAGE - 1) / PAGE));
    if (keep < need)
        keep = (size_t)need;
    size_t mapped = ((size_t)len + PAGE - 1) / PAGE * PAGE, kept = (keep + PAGE - 1) / PAGE * PAGE;
    if (kept < mapped)
        munmap(m + kept, mapped - kept);   /* the uncached tail: the lanes read that */
    /* local read only: the adapter reads these pages, nothing writes them */
    struct ibv_mr *mr = ibv_reg_mr(c->pd, m, keep, 0);
    if (!mr) {
        int e = errno;
        munmap(m, kept);
        c->fmr = 0;
        if (c->verbose > 1)
            fprintf(stderr, "%s: rdma: cannot register the input file's pages (%s): copying "
                    "it into the ring instead\n", rd_progname(), strerror(e));
        return -1;
    }
    *w = (struct rd_v_fwin){ .fd = fd, .dev = (unsigned long long)st->st_dev,
                             .ino = (unsigned long long)st->st_ino, .off = start, .len = kept,
                             .map = m, .mr = mr };   /* len: what munmap takes; mr covers keep */
    c->stat_fmr_regs++;
    return RD_OK;
}

/* The window that holds [off, off + n) of fd, registering one if needed; -1: copy instead. */
static int window_for(struct rd_v_conn *c, int fd, uint64_t off, size_t n)
{
    struct stat st;
    if (fstat(fd, &st))
        return -1;
    int hit = -1, spare = -1;
    pthread_mutex_lock(&c->mu);
    for (unsigned i = 0; i < RD_V_FWIN_MAX; i++) {
        struct rd_v_fwin *w = &c->fwin[i];
        if (w->mr && w->fd == fd && w->dev == (unsigned long long)st.st_dev &&
            w->ino == (unsigned long long)st.st_ino && off >= w->off &&
            off + n <= w->off + w->mr->length)
            hit = (int)i;
        else if (spare < 0 && (!w->mr || !w->inflight))
            spare = (int)i;
    }
    pthread_mutex_unlock(&c->mu);
    if (hit >= 0)
        return hit;
    if (spare < 0)
        return -1;   /* every window still in flight: this chunk is copied */
    if (c->fwin[spare].mr)
        window_drop(&c->fwin[spare]);   /* idle, and only this thread posts from windows */
    return window_new(c, &c->fwin[spare], fd, &st, off, n) ? -1 : spare;
}

/* The copying path: the payload into the ring slot, as the lanes would have read it. */
static int copy_in(struct rd_transport *tp, struct rd_buf *b)
{
    uint8_t *to = b->data + RD_FRAME_HDR;
    size_t n = b->ref_len, got = 0;
    if (b->ref == to)
        return RD_OK;   /* the engine read the chunk into this slot already */
    if (b->ref_fd < 0) {
        memcpy(to, b->ref, n);   /* memory the caller owns (a relay's received frame) */
        return RD_OK;
    }
    /* pread, not the mapping: a file that shrank is a short read here, never a SIGBUS */
    while (got < n) {
        ssize_t r = pread(b->ref_fd, to + got, n - got, (off_t)(b->ref_off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rd_v_release(tp, b);
            return rd_fail(RD_EIO, "cannot read the input: %s", strerror(errno));
        }
        if (r == 0) {
            rd_v_release(tp, b);
            return rd_fail(RD_EIO, "the input file shrank while it was being sent");
        }
        got += (size_t)r;
    }
    return RD_OK;
}

int rd_v_send_ref(struct rd_transport *tp, struct rd_buf *b)
{
    struct rd_v_conn *c = tp->priv;
    size_t n = b->ref_len;
    if (b->cap < RD_FRAME_HDR || n > b->cap - RD_FRAME_HDR) {
        rd_v_release(tp, b);
        return rd_fail(RD_EIO, "a frame of %zu bytes does not fit the RDMA ring", n);
    }
    b->len = RD_FRAME_HDR + n;
    int w = -1;
    if (n && b->ref_fd >= 0 && c->fmr && b->owner == &c->ring_send)
        w = window_for(c, b->ref_fd, b->ref_off, n);
    if (w >= 0) {
        const struct rd_v_fwin *fw = &c->fwin[w];
        struct ibv_sge sge = { .addr = (uintptr_t)(fw->map + (b->ref_off - fw->off)),
                               .length = (uint32_t)n, .lkey = fw->mr->lkey };
        int rc = rd_v_send_frame(c, b, RD_FRAME_HDR, &sge, w);
        if (!rc)
            c->stat_fmr_bytes += n;
        return rc;
    }
    int rc = copy_in(tp, b);
    if (rc)
        return rc;
    c->stat_fmr_copied += n;
    return rd_v_send_frame(c, b, b->len, NULL, -1);
}
