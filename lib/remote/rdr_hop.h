/* rdr_hop.h - wiring one hop between two agents (rdpipe: between segments, rdcp: source to
 * destination): the per-run key the receiving end expects, and the address the sending end
 * connects to. */
#ifndef RDR_HOP_H
#define RDR_HOP_H

#include <stddef.h>

/* 32 random bytes as 64 hex digits (getrandom; the clock if there is no entropy source). */
void rdr_hop_key(char out[65]);
/* Where the sender connects to: a remote receiver at the address its sshd was reached at (its
 * "hello" srv, else its host name); a local one at -H hostname, or 127.0.0.1 from a local
 * sender, or "@initiator" (the remote sender's own SSH_CONNECTION client address). */
void rdr_hop_addr(const char *to_dest, const char *to_host, const char *to_srv,
                  const char *from_dest, const char *hostname, char *out, size_t len);

#endif
