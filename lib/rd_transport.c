#include "rd_transport.h"

#include "rd_proto.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

struct rd_transport *rd_transport_new(const struct rd_transport_ops *ops)
{
    struct rd_transport *tp = calloc(1, sizeof *tp);
    if (tp) {
        tp->ops = ops;
        snprintf(tp->desc, sizeof tp->desc, "%s", ops->name);
    }
    return tp;
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
    uint8_t *base = rd_alloc_aligned(size + FRAME_LEAD);
    return base ? base + FRAME_LEAD : NULL;
}

void rd_frame_free(uint8_t *frame)
{
    if (frame)
        free(frame - FRAME_LEAD);
}

void rd_frame_region(uint8_t *frame, size_t size, void **start, size_t *len)
{
    *start = frame - FRAME_LEAD;
    *len = size + FRAME_LEAD;
}
