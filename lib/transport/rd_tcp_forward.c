/* rd_tcp_forward.c - TCP's ops->forward: a relay between two TCP connections reads only the
 * headers; each DATA payload goes socket -> pipe -> socket with splice(2) and never enters
 * user space. The relay's checks (struct rd_forward) decide about every frame. */
#include "transport/rd_tcp.h"

#include "util/rd_error.h"

#include <fcntl.h>
#include <unistd.h>

#define FORWARD_PIPE_SIZE (1 << 20)

int rd_tcp_forward(struct rd_transport *tp, struct rd_transport *to, struct rd_forward *fw)
{
    int pfd[2];
    fw->down_failed = 0;
    fw->declined = 0;
    if (to->ops != tp->ops)
        return rd_fail(RD_EIO, "cannot forward from %s to %s", tp->ops->name, to->ops->name);
    if (pipe2(pfd, O_CLOEXEC))
        return rd_fail(RD_EIO, "cannot create a pipe");
    fcntl(pfd[1], F_SETPIPE_SZ, FORWARD_PIPE_SIZE);
    uint8_t frame[RD_CTRL_FRAME];
    uint64_t seq = 0;
    int rc;
    for (;; seq++) {
        size_t len;
        int is_data = 0;
        uint32_t raw = 0;
        rc = rd_tcp_recv_head(tp, frame, &len);
        if (!rc)
            rc = fw->check(fw->ctx, frame, len, seq, &is_data, &raw);
        if (rc)
            break;
        if (is_data) {
            rc = rd_tcp_splice_frame(tp, to, frame, len - RD_FRAME_HDR, pfd, &fw->down_failed);
            if (rc)
                break;
            fw->passed(fw->ctx, len, raw);
            continue;
        }
        if (len > sizeof frame) {   /* the check bounds control frames; never trust it blindly */
            rc = rd_fail(RD_ESTREAM, "protocol error from %s: a %zu-byte control frame", tp->peer, len);
            break;
        }
        rc = rd_tcp_recv_payload(tp, frame + RD_FRAME_HDR, len - RD_FRAME_HDR);
        if (rc)
            break;
        rc = fw->ctrl(fw->ctx, frame, len);   /* judged before it goes on: an ABORT does not */
        if (!rc && (rc = rd_tcp_send_frame(to, frame, len)))
            fw->down_failed = 1;
        break;
    }
    close(pfd[0]);
    close(pfd[1]);
    return rc;
}
