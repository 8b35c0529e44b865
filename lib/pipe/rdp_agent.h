/* rdp_agent.h - `rdpipe --agent`: runs one segment of a pipeline on its host.
 *
 * The agent runs rdsend, rdrecv, bash and cat, and no other tool by name: a segment whose
 * KIND is a role (remote/rdr_role.h, e.g. rdcp's tree sender and receiver) runs the sibling
 * tool of that role's row in the table, in the calling convention described there, as the
 * segment's receiving or sending end. The line only picks a row; a KIND that is neither one
 * of the agent's own nor a role's name, or in/out words other than the role's end, is a
 * malformed seg line.
 *
 * Control protocol (one line per message, see rdr_line.h; hex = hex-encoded bytes, "-" = empty):
 *   initiator -> agent
 *     rdpipe-agent-1
 *     seg KIND IN OUT TRANSPORT VERBOSE CMDHEX PATHHEX   kind cmd|read|write|append|pass,
 *                                                       in none|stdin|recv, out none|stdout|send
 *                      or kind = a role's name, in/out "recv none" (a receiving role) or
 *                      "none send" (a sending one), CMDHEX its NUL-terminated arguments
 *     key HEX [STREAM]  the key of the incoming hop (in = recv); STREAM: the stream's
 *                      end-to-end key when this segment is its sink (RDPIPE_STREAM_KEY)
 *     manifest LINE    one line for a role's stdin: a sending role's (what the receiving end
 *                      reported), a receiving role's when given before setup (rdcp: what
 *                      the runs from other source hosts made)
 *     setup            -> the agent starts rdrecv (or the receiving role) on an ephemeral port
 *     next HOST PORT KEYHEX [STREAM]   where to send (out = send); HOST "@initiator" = the
 *                      address the agent's SSH connection came from; STREAM as for key, when
 *                      this segment is the stream's origin
 *     start            -> the agent starts the command and rdsend (or the sending role)
 *   agent -> initiator
 *     hello SERVERIP CLIENTIP PID   from SSH_CONNECTION ("-" when unknown)
 *     manifest LINE    a receiving role reported LINE before its port
 *     port N           the listening port of rdrecv (or the receiving role)
 *     ready
 *     log HEX          a line rdsend/rdrecv printed
 *     stat ROLE BYTES SECONDS TRANSPORT     a finished transfer (ROLE recv|send)
 *     exit ROLE CODE KILLED HEX   a finished process (ROLE recv|relay|cmd|send|copy|file), KILLED 1
 *                                 when the agent stopped it because something else failed, or
 *                                 when its failure was the command's choice (closed)
 *     closed           the command closed its input early (its rdrecv: a broken pipe): the
 *                      hops before are cut, this segment and what follows run on
 *     done             every process of the segment has exited
 * End of the channel (EOF) in either direction before "done" tears the segment down: the agent
 * kills its process group and exits.
 */
#ifndef RDP_AGENT_H
#define RDP_AGENT_H

#include <stddef.h>

#include "remote/rdr_role.h"
#include "remote/rdr_spec.h"

int rdp_agent_main(int ctl_in, int ctl_out);

/* One line from the initiator, parsed without acting on it (what the fuzzer drives). */
enum rdp_agent_op {
    RDP_OP_IGNORE,     /* empty, the protocol banner, or unknown (a newer initiator's) */
    RDP_OP_SEG, RDP_OP_KEY, RDP_OP_MANIFEST, RDP_OP_LIST, RDP_OP_SETUP, RDP_OP_NEXT, RDP_OP_START,
    RDP_OP_ABORT,
    RDP_OP_BAD,        /* a malformed seg line: the agent goes down */
};
struct rdp_agent_msg {
    enum rdp_agent_op op;
    enum rdr_kind kind;          /* seg */
    const struct rdr_role *role; /* seg of kind RDR_ROLE: its row of the table, else NULL */
    enum rdr_in in;
    enum rdr_out out;
    const char *transport;       /* seg; points into the line */
    int verbose;
    int encrypt;                 /* seg: the optional 9th word, a comma list of "encrypt" */
    char compress[8];            /* ...and "compress=LEVEL" (rdpipe --encrypt, --compress) */
    unsigned lanes;              /* ...and "lanes=N" (--lanes; 0: not said) */
    unsigned streams;            /* ...and "streams=N" (--streams; 0: not said) */
    char *cmd, *path;            /* seg: decoded, malloc'd, the caller frees them */
    size_t cmd_len;
    const char *arg[4];          /* key: key [stream key]; manifest: arg[0]; next: host, port, key
                                  * [stream key] (into the line; NULL when absent) */
};
/* Splits line in place; returns m->op. */
enum rdp_agent_op rdp_agent_parse(char *line, struct rdp_agent_msg *m);

#endif
