/* rdr_link.h - the initiator's end of the control link to one rdpipe agent.
 *
 * rdpipe (one agent per segment) and rdcp (one on the source host, one on the destination
 * host) start their agents the same way - `rdpipe --agent` over ssh for a remote host, a local
 * child on a socketpair otherwise - and read the same setup replies from them; this is that
 * common part, so that both tools reach and talk to agents alike.
 */
#ifndef RDR_LINK_H
#define RDR_LINK_H

#include "remote/rdr_line.h"

#include <sys/types.h>

struct rdr_link {
    pid_t pid;
    int wfd, rfd, is_sock;     /* is_sock: a local agent (wfd == rfd, a socketpair) */
    struct rdr_chan ch;
    char srv[64], cli[64];     /* "hello": the agent's SSH_CONNECTION ends ("-" = none) */
    int hello, port, ready, done;
    int eof;                   /* the agent closed the link */
    int reaped, status;        /* its process (ssh or the local agent) exited with status */
    int signal;                /* ...or was killed by this signal (0: it exited; ssh's own 255 is no signal) */
};

/* How remote agents are reached: ssh_cmd (shell words) -- DEST 'exec REMOTE_PATH --agent'.
 * The "--" keeps a DEST that looks like an option from being one (an --ssh wrapper must
 * accept it, as ssh does). */
struct rdr_reach {
    const char *ssh_cmd;
    const char *remote_path;   /* NULL = rdpipe from the remote PATH */
};

/* The ssh argv that starts the agent on dest (malloc'd strings, NULL-terminated; NULL when
 * out of memory). */
char **rdr_link_ssh_argv(const struct rdr_reach *how, const char *dest);
void rdr_link_argv_free(char **v);

/* Start the agent: over ssh when dest is not NULL (its stdin/stdout are the link), else
 * `local_prog --agent --control-fd 3` with local_in/local_out as its stdin/stdout. Returns 0,
 * or -1 with errno set (EINVAL: dest fails rdr_dest_check, nothing was started). The link's
 * fds are -1 until it succeeds. */
int rdr_link_spawn(struct rdr_link *l, const struct rdr_reach *how, const char *dest,
                   const char *local_prog, int local_in, int local_out);
/* No more lines to the agent: it ends once it has finished (idempotent). */
void rdr_link_close(struct rdr_link *l);
/* waitpid without blocking; sets reaped/status once the process is gone. */
void rdr_link_reap(struct rdr_link *l);
/* Take the setup replies both initiators read the same way (hello, port, ready, done) out of a
 * split control line; returns 1 when w[0] was one of them. */
int rdr_link_setup_line(struct rdr_link *l, char **w, int n);
/* Release the buffer and whatever fds are still open. */
void rdr_link_free(struct rdr_link *l);

#endif
