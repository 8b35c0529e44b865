/* rdp_agent.h - `rdpipe --agent`: runs one segment of a pipeline on its host.
 *
 * Control protocol (one line per message, see rdp_line.h; hex = hex-encoded bytes, "-" = empty):
 *   initiator -> agent
 *     rdpipe-agent-1
 *     seg KIND IN OUT TRANSPORT VERBOSE CMDHEX PATHHEX   kind cmd|read|write|append|pass,
 *                                                       in none|stdin|recv, out none|stdout|send
 *     key HEX          the key of the incoming hop (in = recv)
 *     setup            -> the agent starts rdrecv on an ephemeral port
 *     next HOST PORT KEYHEX    where to send (out = send); HOST "@initiator" = the address
 *                              the agent's SSH connection came from
 *     start            -> the agent starts the command and rdsend
 *   agent -> initiator
 *     hello SERVERIP CLIENTIP PID   from SSH_CONNECTION ("-" when unknown)
 *     port N           the listening port of rdrecv
 *     ready
 *     log HEX          a line rdsend/rdrecv printed
 *     stat ROLE BYTES SECONDS TRANSPORT     a finished transfer (ROLE recv|send)
 *     exit ROLE CODE KILLED HEX   a finished process (ROLE recv|cmd|send|copy|file), KILLED 1
 *                                 when the agent stopped it because something else failed
 *     done             every process of the segment has exited
 * End of the channel (EOF) in either direction before "done" tears the segment down: the agent
 * kills its process group and exits.
 */
#ifndef RDP_AGENT_H
#define RDP_AGENT_H

#include <stddef.h>

#include "remote/rdp_spec.h"

int rdp_agent_main(int ctl_in, int ctl_out);

/* One line from the initiator, parsed without acting on it (what the fuzzer drives). */
enum rdp_agent_op {
    RDP_OP_IGNORE,     /* empty, the protocol banner, or unknown (a newer initiator's) */
    RDP_OP_SEG, RDP_OP_KEY, RDP_OP_MANIFEST, RDP_OP_SETUP, RDP_OP_NEXT, RDP_OP_START,
    RDP_OP_ABORT,
    RDP_OP_BAD,        /* a malformed seg line: the agent goes down */
};
struct rdp_agent_msg {
    enum rdp_agent_op op;
    enum rdp_kind kind;          /* seg */
    enum rdp_in in;
    enum rdp_out out;
    const char *transport;       /* seg; points into the line */
    int verbose;
    char *cmd, *path;            /* seg: decoded, malloc'd, the caller frees them */
    size_t cmd_len;
    const char *arg[3];          /* key, manifest: arg[0]; next: host, port, key (into the line) */
};
/* Splits line in place; returns m->op. */
enum rdp_agent_op rdp_agent_parse(char *line, struct rdp_agent_msg *m);

#endif
