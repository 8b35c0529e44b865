/* rd_verbs.c - RDMA transport (placeholder until the verbs transport lands). */
#include "rd_error.h"
#include "rd_transport.h"

#include <infiniband/verbs.h>

int rd_verbs_available(void)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (list)
        ibv_free_device_list(list);
    return n > 0;
}

static int no_dev(struct rd_transport *tp, const struct rd_addr *a)
{
    return rd_fail(RD_ENODEV, "no RDMA device: the RDMA transport is not built yet");
}

const struct rd_transport_ops rd_verbs_ops = {
    .name = "rdma",
    .listen = no_dev,
    .connect = no_dev,
};
