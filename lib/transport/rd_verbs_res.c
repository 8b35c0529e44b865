/* rd_verbs_res.c - verbs resources of one connection: created once, torn down in reverse
 * (QP, MRs, CQs, completion channels, PD, then the CM id and its channel), every release
 * checked: a failure is one "RDMA teardown: CALL failed" line on stderr and does not change
 * the transfer's result, which was settled before (the peer confirmed every byte or not).
 * Queue capacities are explicit and nonzero because Soft-RoCE grants exactly what is asked. */
#include "transport/rd_link.h"
#include "transport/rd_verbs.h"
#include "util/rd_error.h"
#include "util/rd_memlock.h"
#include "wire/rd_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <numaif.h>
#include <sys/mman.h>

static size_t round_frame(size_t n)
{
    return (n + RD_BUF_ALIGN - 1) / RD_BUF_ALIGN * RD_BUF_ALIGN;
}

static int nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ibv_reg_mr failed: the usual cause is RLIMIT_MEMLOCK, so say which ulimit -l is needed:
 * `need`, what the whole connection pins (its ring's pool knows it: rd_verbs_pin_bytes, as
 * rdcheck counts it), or 0 for a control pool, registered before the ring's size is agreed. */
static int reg_failed(size_t bytes, uint64_t need)
{
    int e = errno, cap;
    uint64_t limit = rd_memlock_limit(&cap);
    if ((e == ENOMEM || e == EAGAIN || e == EPERM) && limit != UINT64_MAX) {
        unsigned long long have_kib = (unsigned long long)limit / 1024, need_kib = (need + 1023) / 1024;
        if (need && need_kib > have_kib)
            return rd_fail(RD_EIO, "cannot register %zu KiB of RDMA buffers: locked-memory limit "
                           "is %llu KiB; raise it (ulimit -l %llu or unlimited) or lower "
                           "--chunk-size/--depth", bytes / 1024, have_kib, need_kib);
        if (!need && bytes / 1024 + 2048 > have_kib)
            return rd_fail(RD_EIO, "cannot register %zu KiB of RDMA buffers: locked-memory limit "
                           "is %llu KiB, too low even for the control frames; raise it (rdcheck "
                           "names the ulimit -l for a --chunk-size and --depth)", bytes / 1024, have_kib);
    }
    return rd_fail(RD_EIO, "cannot register %zu KiB of RDMA buffers: %s", bytes / 1024,
                   strerror(e));
}

#define HUGE_PAGE (2u << 20)

/* one connection's ring of depth frames */
static uint64_t ring_bytes(uint32_t chunk, uint32_t depth)
{
    const uint64_t page = RD_BUF_ALIGN, lead = RD_BUF_ALIGN - RD_FRAME_HDR;
    uint64_t frame = (RD_FRAME_HDR + (uint64_t)chunk + page - 1) / page * page;
    if (depth < 4)
        depth = 4;   /* the verbs transport posts at least 4 */
    return lead + depth * frame;
}

uint64_t rd_verbs_pin_bytes(uint32_t chunk, uint32_t depth)
{
    const uint64_t page = RD_BUF_ALIGN, lead = RD_BUF_ALIGN - RD_FRAME_HDR;
    /* ring + control send (8 frames) and receive (16 frames) pools + queues */
    return ring_bytes(chunk, depth) + 2 * lead + 24 * page + (2u << 20);
}

/* the frames of each connection's ring: all of them on one, rd_stripe's share (at least 2)
 * on each of several */
static uint32_t share(uint32_t depth, unsigned conns)
{
    if (conns <= 1)
        return depth;
    uint32_t per = (depth + conns - 1) / conns;
    return per < 2 ? 2 : per;
}

uint64_t rd_verbs_pin_stream(uint32_t chunk, uint32_t depth, unsigned conns)
{
    return rd_verbs_pin_bytes(chunk, share(depth, conns)) * (conns ? conns : 1);
}

uint64_t rd_verbs_pin_relay(uint32_t chunk, uint32_t depth, unsigned conns)
{
    return 2 * rd_verbs_pin_stream(chunk, depth, conns) + ring_bytes(chunk, share(depth, conns)) * (conns ? conns : 1);
}

uint32_t rd_verbs_pinnable_depth(uint32_t chunk, uint32_t depth, unsigned conns, int relay)
{
    int cap = 0;
    uint64_t limit = rd_memlock_limit(&cap);
    if (cap || limit == UINT64_MAX)
        return depth;
    uint64_t (*pin)(uint32_t, uint32_t, unsigned) = relay ? rd_verbs_pin_relay : rd_verbs_pin_stream;
    while (depth > 0 && pin(chunk, depth, conns) > limit)
        depth--;   /* at most RD_MAX_DEPTH steps, once per connection */
    return depth;
}

/* The NUMA node of the device's PCI function (sysfs), -1 when unknown or not NUMA. */
static int device_node(struct ibv_context *ctx)
{
    char path[256];
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/device/numa_node",
             ibv_get_device_name(ctx->device));
    FILE *f = fopen(path, "r");
    int node = -1;
    if (f) {
        if (fscanf(f, "%d", &node) != 1)
            node = -1;
        fclose(f);
    }
    return node;
}

int rd_v_numa_node(struct rd_transport *tp)
{
    struct rd_v_conn *c = tp->priv;
    return c && c->pd ? device_node(c->pd->context) : -1;
}

uint64_t rd_v_link_rate(struct rd_transport *tp, char *link, size_t n)
{
    struct rd_v_conn *c = tp->priv;
    struct ibv_port_attr pa;
    if (!c || !c->id || !c->id->verbs || ibv_query_port(c->id->verbs, c->id->port_num, &pa))
        return 0;
    snprintf(link, n, "%s:%u", ibv_get_device_name(c->id->verbs->device), (unsigned)c->id->port_num);
    return rd_ib_port_rate(pa.active_speed, pa.active_width);
}

/* A ring's memory (mapped, zero, faulted in only when registered): from hugetlbfs pages when
 * some are reserved (vm.nr_hugepages), else asking for transparent huge pages, so the HCA
 * translates and the kernel pins 2 MiB at a time; on the device's NUMA node where it has
 * one, so DMA does not cross the socket interconnect. RDPIPE_RDMA_HUGE=0 turns huge pages
 * off (to measure). Small pools (the control frames) take plain pages. In the Soft-RoCE VM
 * (tests/rxe, RXE_ONLY=measure) huge pages measured no slower than small ones. */
static uint8_t *pool_map(struct rd_v_conn *c, size_t bytes, size_t *len, int *huge)
{
    const char *env = getenv("RDPIPE_RDMA_HUGE");
    int want = bytes >= HUGE_PAGE && !(env && env[0] == '0');
    uint8_t *m = MAP_FAILED;
    *huge = 0;
    *len = bytes;
    if (want) {
        *len = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        *huge = m != MAP_FAILED ? 2 : 0;
    }
    if (m == MAP_FAILED)
        m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (want && !*huge && madvise(m, *len, MADV_HUGEPAGE) == 0)
        *huge = 1;
    else if (!want && bytes >= HUGE_PAGE)
        (void)madvise(m, *len, MADV_NOHUGEPAGE);   /* off means off, also where THP is "always" */
    int node = c->pd ? device_node(c->pd->context) : -1;
    if (node >= 0 && node < 64) {
        unsigned long mask = 1ul << node;
        (void)mbind(m, *len, MPOL_PREFERRED, &mask, 64ul, 0u);   /* a hint */
    }
    return m;
}

int rd_v_pool_create(struct rd_v_conn *c, struct rd_v_pool *p, enum rd_v_kind kind,
                     unsigned n, size_t frame)
{
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->n = n;
    p->frame = frame;
    p->stride = round_frame(frame);
    /* frame i starts RD_FRAME_HDR bytes before a page, so every payload is page aligned */
    size_t lead = RD_BUF_ALIGN - RD_FRAME_HDR;
    size_t bytes = lead + p->stride * n;
    p->mem = pool_map(c, bytes, &p->mem_len, &p->huge);
    p->bufs = calloc(n, sizeof *p->bufs);
    p->free = calloc(n, sizeof *p->free);
    if (!p->mem || !p->bufs || !p->free) {
        rd_v_pool_destroy(p);
        return rd_fail(RD_EIO, "out of memory for %zu KiB of RDMA buffers", bytes / 1024);
    }
    /* local access only: nothing here is ever the target of a remote read or write */
    p->mr = ibv_reg_mr(c->pd, p->mem, bytes, IBV_ACCESS_LOCAL_WRITE);
    if (!p->mr) {
        int ring = kind == K_RING_SEND || kind == K_RING_RECV;
        int rc = reg_failed(bytes, ring ? rd_verbs_pin_bytes((uint32_t)(frame - RD_FRAME_HDR), n) : 0);
        rd_v_pool_destroy(p);
        return rc;
    }
    for (unsigned i = 0; i < n; i++) {
        p->bufs[i].data = p->mem + lead + (size_t)i * p->stride;
        p->bufs[i].cap = p->frame;
        p->bufs[i].slot = i;
        p->bufs[i].owner = p;
        p->free[i] = n - 1 - i;
    }
    p->nfree = (kind == K_CTRL_SEND || kind == K_RING_SEND) ? n : 0;
    return RD_OK;
}

void rd_v_teardown_warn(const char *call, int err)
{
    rd_warn("RDMA teardown: %s failed: %s (errno %d)", call, strerror(err), err);
}

int rd_v_pool_destroy(struct rd_v_pool *p)
{
    int rc = 0;
    if (p->mr) {
        int e = ibv_dereg_mr(p->mr);
        if (e) {
            rd_v_teardown_warn("ibv_dereg_mr", e);
            p->mem = NULL;   /* still registered: leak it rather than free it under the MR */
            rc = -1;
        }
    }
    if (p->mem)
        munmap(p->mem, p->mem_len);
    free(p->bufs);
    free(p->free);
    memset(p, 0, sizeof *p);
    return rc;
}

int rd_v_post_recv(struct rd_v_conn *c, struct rd_v_pool *p, unsigned slot)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)p->bufs[slot].data,
        .length = (uint32_t)p->frame,
        .lkey = p->mr->lkey,
    };
    struct ibv_recv_wr wr = {
        .wr_id = ((uint64_t)p->kind << 32) | slot,
        .sg_list = &sge,
        .num_sge = 1,
    }, *bad;
    int e = ibv_post_recv(c->id->qp, &wr, &bad);
    if (e)
        return rd_fail(RD_ESTREAM, "connection to %s: cannot post RDMA receive: %s",
                       c->peer, strerror(e));
    return RD_OK;
}

/* ---- teardown steps: each undoes one step of rd_v_res_create, tolerates "never done",
 * reports a failure as one warning line and goes on ---- */

/* What rdma_destroy_qp does for a QP on our own CQs, but with the result (it returns void). */
static void destroy_qp(struct rd_v_conn *c)
{
    if (!c->id || !c->id->qp)
        return;
    int e = ibv_destroy_qp(c->id->qp);
    if (e)
        rd_v_teardown_warn("ibv_destroy_qp", e);
    c->id->qp = NULL;
}

/* send_ref's frames whose send never completed (the QP is gone): their payloads go back to
 * the connections they came from, which outlive this one (a relay closes downstream first). */
static void return_refs(struct rd_v_conn *c)
{
    struct rd_v_pool *pools[] = { &c->ring_send, &c->ctrl_send };
    for (unsigned k = 0; k < 2; k++)
        for (unsigned i = 0; i < pools[k]->n; i++)
            if (pools[k]->bufs[i].ref_from)
                rd_ref_done(&pools[k]->bufs[i]);
}

static void dereg_foreign(struct rd_v_conn *c)
{
    for (unsigned i = 0; i < c->nforeign; i++) {
        int e = c->foreign[i].mr ? ibv_dereg_mr(c->foreign[i].mr) : 0;
        if (e)
            rd_v_teardown_warn("ibv_dereg_mr", e);
    }
    c->nforeign = 0;
}

struct ibv_mr *rd_v_foreign_mr(struct rd_v_conn *c, const struct rd_v_pool *p)
{
    for (unsigned i = 0; i < c->nforeign; i++)
        if (c->foreign[i].mem == p->mem)
            return c->foreign[i].mr;
    if (c->nforeign == RD_V_FOREIGN_MAX || !p->mr)
        return NULL;
    /* local read only: we send from it, nothing writes it through us */
    struct ibv_mr *mr = ibv_reg_mr(c->pd, p->mr->addr, p->mr->length, 0);
    if (!mr && c->verbose)
        rd_warn("cannot register an upstream receive ring for sends to %s too (%s): copying its frames",
                c->peer, strerror(errno));
    c->foreign[c->nforeign++] = (struct rd_v_foreign){ p->mem, mr };
    return mr;
}

static void dereg_pools(struct rd_v_conn *c)
{
    rd_v_pool_destroy(&c->ring_recv);
    rd_v_pool_destroy(&c->ring_send);
    rd_v_pool_destroy(&c->ctrl_recv);
    rd_v_pool_destroy(&c->ctrl_send);
}

static void destroy_cq(struct ibv_cq **cq, unsigned *unacked)
{
    if (*cq) {
        ibv_ack_cq_events(*cq, *unacked);   /* ibv_destroy_cq waits for every event's ack */
        int e = ibv_destroy_cq(*cq);
        if (e)
            rd_v_teardown_warn("ibv_destroy_cq", e);
    }
    *cq = NULL;
    *unacked = 0;
}

static void destroy_channel(struct ibv_comp_channel **cc)
{
    if (*cc) {
        int e = ibv_destroy_comp_channel(*cc);
        if (e)
            rd_v_teardown_warn("ibv_destroy_comp_channel", e);
    }
    *cc = NULL;
}

static void dealloc_pd(struct rd_v_conn *c)
{
    if (c->pd) {
        int e = ibv_dealloc_pd(c->pd);
        if (e)
            rd_v_teardown_warn("ibv_dealloc_pd", e);
    }
    c->pd = NULL;
}

/* PD, completion channels, CQs, control buffers (MRs), QP, posted receives: the order in which
 * rd_v_res_destroy and the unwind labels below take them down again, QP first. */
int rd_v_res_create(struct rd_v_conn *c)
{
    struct ibv_context *ctx = c->id->verbs;
    struct ibv_device_attr da;
    int rc = RD_ECONNECT;

    if (ibv_query_device(ctx, &da))
        return rd_fail(RD_ECONNECT, "cannot query RDMA device %s",
                       ibv_get_device_name(ctx->device));
    c->sq_cap = RD_MAX_DEPTH + RD_V_CTRL_SEND + RD_V_SQ_EXTRA;
    c->rq_cap = RD_MAX_DEPTH + RD_V_CTRL_RECV;
    if (c->sq_cap > (unsigned)da.max_qp_wr)
        c->sq_cap = (unsigned)da.max_qp_wr;
    if (c->rq_cap > (unsigned)da.max_qp_wr)
        c->rq_cap = (unsigned)da.max_qp_wr;

    c->pd = ibv_alloc_pd(ctx);
    if (!c->pd)
        return rd_fail(RD_ECONNECT, "cannot allocate RDMA protection domain: %s",
                       strerror(errno));
    c->scc = ibv_create_comp_channel(ctx);
    c->rcc = ibv_create_comp_channel(ctx);
    if (!c->scc || !c->rcc || nonblock(c->scc->fd) || nonblock(c->rcc->fd)) {
        rd_fail(RD_ECONNECT, "cannot create RDMA completion channels: %s", strerror(errno));
        goto out_destroy_channels;
    }
    c->scq = ibv_create_cq(ctx, (int)c->sq_cap, c, c->scc, 0);
    c->rcq = ibv_create_cq(ctx, (int)c->rq_cap, c, c->rcc, 0);
    if (!c->scq || !c->rcq || ibv_req_notify_cq(c->scq, 0) || ibv_req_notify_cq(c->rcq, 0)) {
        rd_fail(RD_ECONNECT, "cannot create RDMA completion queues: %s", strerror(errno));
        goto out_destroy_cqs;
    }
    /* the buffers before the QP, so that the QP goes first on the way down */
    if ((rc = rd_v_pool_create(c, &c->ctrl_send, K_CTRL_SEND, RD_V_CTRL_SEND, RD_CTRL_FRAME)) ||
        (rc = rd_v_pool_create(c, &c->ctrl_recv, K_CTRL_RECV, RD_V_CTRL_RECV, RD_CTRL_FRAME)))
        goto out_dereg_pools;
    struct ibv_qp_init_attr qa = {
        .send_cq = c->scq,
        .recv_cq = c->rcq,
        .cap = { .max_send_wr = c->sq_cap, .max_recv_wr = c->rq_cap,
                 .max_send_sge = 2, .max_recv_sge = 1 },   /* send_ref: header + payload */
        .qp_type = IBV_QPT_RC,
    };
    if (rdma_create_qp(c->id, c->pd, &qa)) {
        rc = rd_fail(RD_ECONNECT, "cannot create RDMA queue pair (%u/%u work requests): %s",
                     c->sq_cap, c->rq_cap, strerror(errno));
        goto out_dereg_pools;
    }
    /* receives are posted before connect/accept: the peer may send as soon as it is up */
    for (unsigned i = 0; i < RD_V_CTRL_RECV; i++)
        if ((rc = rd_v_post_recv(c, &c->ctrl_recv, i)))
            goto out_destroy_qp;
    return RD_OK;

out_destroy_qp:
    destroy_qp(c);
out_dereg_pools:
    dereg_pools(c);
out_destroy_cqs:
    destroy_cq(&c->rcq, &c->rcq_events);
    destroy_cq(&c->scq, &c->scq_events);
out_destroy_channels:
    destroy_channel(&c->rcc);
    destroy_channel(&c->scc);
    dealloc_pd(c);
    return rc ? rc : RD_ECONNECT;
}

/* The mirror of rd_v_res_create, also for a partial build and for the rings that
 * rd_v_setup_ring added later: the QP goes first, so that no posted work request points into
 * a buffer whose MR is deregistered or whose memory is freed. */
void rd_v_res_destroy(struct rd_v_conn *c)
{
    destroy_qp(c);
    return_refs(c);
    dereg_foreign(c);
    dereg_pools(c);
    destroy_cq(&c->rcq, &c->rcq_events);
    destroy_cq(&c->scq, &c->scq_events);
    destroy_channel(&c->rcc);
    destroy_channel(&c->scc);
    dealloc_pd(c);
}

void rd_v_destroy_id(struct rdma_cm_id *id)
{
    if (id && rdma_destroy_id(id))
        rd_v_teardown_warn("rdma_destroy_id", errno);
}

void rd_v_conn_free(struct rd_v_conn *c)
{
    if (!c)
        return;
    /* mirror of setup: verbs resources, then each CM id before its event channel */
    rd_v_res_destroy(c);
    rd_v_destroy_id(c->id);
    if (c->ch)
        rdma_destroy_event_channel(c->ch);   /* returns nothing to check */
    rd_v_destroy_id(c->lid);
    if (c->lch)
        rdma_destroy_event_channel(c->lch);
    if (c->wake_fd >= 0)
        close(c->wake_fd);
    if (c->watch_ep >= 0)
        close(c->watch_ep);
    free(c->ready);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
