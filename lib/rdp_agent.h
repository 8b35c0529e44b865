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

int rdp_agent_main(int ctl_in, int ctl_out);

#endif
