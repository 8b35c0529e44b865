/* rdp_main.h - rdpipe: a pipeline of commands across hosts (the initiator side).
 *
 * One agent per segment (`rdpipe --agent`, over ssh for remote segments, a local child for
 * segments on this machine) runs `rdrecv | bash -c CMD | rdsend`; the data goes from host to
 * host, the initiator only carries the control channels and its own stdin/stdout ends.
 */
#ifndef RDP_MAIN_H
#define RDP_MAIN_H

/* The whole tool: options, segments, run; returns the exit status. */
int rdp_main(int argc, char **argv);

#endif
