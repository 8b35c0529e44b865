/* rd_tcp.h - raw frame IO on a TCP connection, beside the transport interface, for code that
 * manages its own buffers: a relay between two TCP connections (frames pass from socket to
 * socket with splice, so the relay host never copies or even reads a payload), and the
 * striped transport of --streams (rd_stripe.c). None of these touch the connection's pools. */
#ifndef RD_TCP_H
#define RD_TCP_H

#include <stddef.h>
#include <stdint.h>

#include "wire/rd_proto.h"
#include "transport/rd_transport.h"

int rd_tcp_is(const struct rd_transport *tp);
/* The connection's socket, for poll() only. */
int rd_tcp_fd(const struct rd_transport *tp);
/* The next frame's RD_FRAME_HDR header bytes and its whole length (header included); the
 * payload stays in the socket for rd_tcp_recv_payload or rd_tcp_splice_frame. */
int rd_tcp_recv_head(struct rd_transport *tp, uint8_t head[RD_FRAME_HDR], size_t *frame_len);
int rd_tcp_recv_payload(struct rd_transport *tp, uint8_t *buf, size_t n);
/* The next whole frame into b (b->cap bytes at most), as recv gives it;
 * b stays the caller's (no pool involved). */
int rd_tcp_recv_into(struct rd_transport *tp, struct rd_buf *b);
/* One whole frame (header + payload) from memory. */
int rd_tcp_send_frame(struct rd_transport *tp, const uint8_t *frame, size_t len);
/* The same, of a header and a payload that lies elsewhere (a relay's received frame). */
int rd_tcp_send_parts(struct rd_transport *tp, const uint8_t hdr[RD_FRAME_HDR], const uint8_t *payload,
                      size_t len);
/* Send head, then move the n payload bytes still waiting in in's socket to out's socket
 * through pipefd (a pipe the caller owns and keeps empty between calls). *out_failed tells
 * which connection an error came from. */
int rd_tcp_splice_frame(struct rd_transport *in, struct rd_transport *out,
                        const uint8_t head[RD_FRAME_HDR], size_t n, const int pipefd[2],
                        int *out_failed);
/* ops->forward of TCP (rd_tcp_forward.c): headers read, DATA payloads spliced. */
int rd_tcp_forward(struct rd_transport *tp, struct rd_transport *to, struct rd_forward *fw);

#endif
