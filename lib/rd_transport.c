#include "rd_transport.h"

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
