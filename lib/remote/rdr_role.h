/* rdr_role.h - roles: the ends of a stream that a sibling tool runs for an agent in place of
 * rdsend or rdrecv (rdcp's tree sender and receiver).
 *
 * The agent (pipe/rdp_agent) knows no tool but rdsend and rdrecv. A seg line whose KIND is
 * a role's name makes it run that role: it looks the name up here, and what it starts is
 * always the sibling tool of this table (installed next to the agent's own executable, else
 * found in PATH) with this table's role argument; the control line chooses among the rows,
 * never a program or an option. A tool that wants an agent to run a new role adds a row here
 * and implements the calling convention below.
 *
 * Calling convention (rdr_role_argv builds the argv; CMD = the seg line's NUL-terminated
 * words, passed on as the role's arguments):
 *   receiving end: TOOL ARG --transport T [OPTS...] --ready-fd 3 WORDS...
 *     env RDPIPE_KEY (the key line's hop key), stdin: the manifest lines the agent was
 *     given before setup, one a line (empty when none). It writes on fd 3 what it has to report
 *     before the stream starts, one line each: "m WORD" for each manifest line (one word,
 *     hex: passed to the initiator as "manifest WORD", which gives them to the sending end),
 *     then its port.
 *     It may take long (walking a big destination); the agent waits without a short timeout.
 *   sending end:   TOOL ARG --transport T --host HOST --port PORT WORDS...
 *     started at "start" once the next hop is known, env RDPIPE_KEY (the next line's key),
 *     stdin: the manifest lines received so far, one a line (empty when none).
 *   a sending end asked to "list" before "setup" (rdcp --resume, a contents source):
 *                  TOOL ARG --list-fd 3 WORDS...
 *     run at setup, to its end, before "ready": it writes on fd 3 "r" + the hex of each name
 *     the stream will write at DST's top (passed to the initiator as "root HEX"); the agent
 *     then says "listed". An agent that predates this ignores "list" and says no "listed".
 *   Both: stderr is captured; a JSON line ('{') is the end's statistics, a line beginning
 *   with RDR_ROLE_REPORT is a report for the initiator (passed on as a log line, never the
 *   reason of a failure), any other line a message.
 */
#ifndef RDR_ROLE_H
#define RDR_ROLE_H

#include <stddef.h>

/* Which end of the stream a role is: what the agent does with it at setup and start. */
enum rdr_role_end { RDR_ROLE_SENDS, RDR_ROLE_RECEIVES };

struct rdr_role {
    const char *name;        /* the seg line's KIND word */
    const char *tool;        /* a sibling tool's file name, never a path */
    const char *arg;         /* its first argument, which selects the role */
    enum rdr_role_end end;
};

enum rdr_role_id { RDR_ROLE_TREE_SEND, RDR_ROLE_TREE_RECV, RDR_NROLES };
extern const struct rdr_role rdr_roles[RDR_NROLES];

/* stderr lines of a role that begin with this are reports for the initiator */
#define RDR_ROLE_REPORT '@'

/* The row named name, or NULL. */
const struct rdr_role *rdr_role_find(const char *name);
/* argv for role r (see above); host and port only for a sending end (not NULL there); opts:
 * NULL or a NULL-terminated list of the stream's options (--encrypt, --compress=L), which
 * every role accepts. 
 * words: len bytes of NUL-separated words, and words[len] == '\0' (a last word without its
 * own NUL counts too). Returns a NULL-terminated array whose strings but v[0] point into
 * words, transport, host and port; free it with rdr_role_argv_free. NULL when out of memory. */
char **rdr_role_argv(const struct rdr_role *r, const char *transport, const char *const *opts,
                     const char *host, const char *port, const char *words, size_t len);
/* argv for the listing run of a sending role (above), as rdr_role_argv; NULL for a receiving
 * one. */
char **rdr_role_list_argv(const struct rdr_role *r, const char *words, size_t len);
void rdr_role_argv_free(char **v);

#endif
