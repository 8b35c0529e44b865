#include "transport/rd_transport.h"

#include "wire/rd_proto.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

struct rd_transport *rd_transport_new(const struct rd_transport_ops *ops)
{
    struct rd_transport *tp = calloc(1, sizeof *tp);
    if (tp) {
        tp->ops = ops;
        snprintf(tp->desc, sizeof tp->desc, "%s", ops->name);
    }
    return tp;
}

void rd_ref_frame(struct rd_buf *o, struct rd_transport *from, struct rd_buf *b, size_t payload_len)
{
    memcpy(o->data, b->data, RD_FRAME_HDR);
    o->ref = b->data + RD_FRAME_HDR;
    o->ref_len = payload_len;
    o->ref_from = from;
    o->ref_buf = b;
}

void rd_ref_done(struct rd_buf *b)
{
    if (b->ref_buf)
        b->ref_from->ops->release(b->ref_from, b->ref_buf);
    b->ref = NULL;
    b->ref_len = 0;
    b->ref_from = NULL;
    b->ref_buf = NULL;
}

int rd_transport_node(struct rd_transport *tp)
{
    return tp->ops->numa_node ? tp->ops->numa_node(tp) : -1;
}

uint64_t rd_transport_link_rate(struct rd_transport *tp, char *link, size_t n)
{
    if (n)
        link[0] = '\0';
    return tp->ops->link_rate ? tp->ops->link_rate(tp, link, n) : 0;
}

void *rd_alloc_aligned(size_t size)
{
    void *p = NULL;
    size_t rounded = (size + RD_BUF_ALIGN - 1) / RD_BUF_ALIGN * RD_BUF_ALIGN;
    if (posix_memalign(&p, RD_BUF_ALIGN, rounded ? rounded : RD_BUF_ALIGN))
        return NULL;
    memset(p, 0, rounded);
    return p;
}

/* The header sits in the last bytes of a leading page, so the payload starts on the next. */
#define FRAME_LEAD (RD_BUF_ALIGN - RD_FRAME_HDR)

uint8_t *rd_frame_alloc(size_t size)
{
    /* anonymous pages are zero and only faulted in when first used: a ring of big frames
     * costs nothing until data flows (RDMA registration pins them anyway) */
    size_t total = size + FRAME_LEAD;
    uint8_t *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    memcpy(base, &total, sizeof total);   /* the lead page's spare bytes remember the size */
    return base + FRAME_LEAD;
}

void rd_frame_free(uint8_t *frame)
{
    if (!frame)
        return;
    size_t total;
    memcpy(&total, frame - FRAME_LEAD, sizeof total);
    munmap(frame - FRAME_LEAD, total);
}

void rd_frame_region(uint8_t *frame, size_t size, void **start, size_t *len)
{
    *start = frame - FRAME_LEAD;
    *len = size + FRAME_LEAD;
}
