/* rdp_agent_int.h - the agent's state, shared by its files: rdp_agent.c (the control lines and
 * the segment's setup) and rdp_agent_child.c (its children: the watchdog, starting the tools,
 * their reports, reaping). Private to lib/pipe. */
#ifndef RDP_AGENT_INT_H
#define RDP_AGENT_INT_H

#include "remote/rdr_line.h"
#include "remote/rdr_spec.h"

#include <sys/types.h>

enum { C_RECV, C_CMD, C_SEND, C_COPY, NCHILD };
static const char *const role_name[NCHILD] = { "recv", "cmd", "send", "copy" };

struct child {
    pid_t pid;           /* 0 = not started */
    int exited, code, reported, killed;
    int stopped;         /* we signalled it alone (its exit is then not a cause) */
    int cap;             /* read end of its stderr (rdsend/rdrecv), -1 if none */
    struct rdr_chan capch;
    int have_stat;
    unsigned long long bytes;
    double seconds;
    char transport[32];
    char *error;         /* its reason: the JSON's, else its last message (rdpa_read_capture) */
    int json_error;      /* error came from its JSON: no later line replaces it */
};

struct agent {
    int cin, cout;
    pid_t wpid;          /* the watchdog = process group of the children */
    int death_w;         /* the watchdog's lifeline */
    enum rdr_kind kind;
    const struct rdr_role *role;   /* kind RDR_ROLE: the row of the role table */
    enum rdr_in in;
    enum rdr_out out;
    char transport[16];
    int verbose;
    int encrypt;         /* the seg said "encrypt": every rdsend/rdrecv here gets --encrypt */
    char compress[24];   /* the seg said "compress=L": every rdsend here gets --compress=L */
    char lanes[24];      /* the seg said "lanes=N": every rdsend and rdrecv here gets --lanes=N */
    char streams[24];    /* the seg said "streams=N": every rdsend and rdrecv here gets --streams=N */
    char *cmd, *path;
    size_t cmd_len;
    int manifest_fd;     /* a sending role: the manifest lines received so far (memfd), -1 if none */
    char *in_key, *in_stream;   /* hop key in; the stream's end-to-end key when we are its sink */
    char *next_host, *next_port, *out_key, *out_stream;
    int file_fd;         /* read / write / append */
    int recv_out;        /* read end of rdrecv's stdout pipe, -1 if it writes elsewhere */
    int recv_hold;       /* its write end, kept here until rdrecv exits 0 or the stage that reads
                          * it exits: a cut stream never reaches that stage as an EOF, which a
                          * whole one ends with ('cat > part && mv part final' committed the
                          * first 28-50 of 150 MB), -1 none */
    int relay_w;         /* relay: where rdrecv --relay-fd learns the next hop at start, or -1 */
    struct child ch[NCHILD];
    int started, killing, no_children, file_failed;
    int want_list;       /* a sending role asked to "list" its roots at setup (rdr_role.h) */
    char ssh_server[64], ssh_client[64];
    double left_since;   /* when only processes the command left behind were still running */
    int left_said;       /* ... and the initiator was told which (rdpa_note_leftovers) */
};

/* To the initiator: one control line (fmt with one %s), or a whole line. A dead channel is
 * remembered (cout = -1), not reported: the agent then tears down at its next read. */
void rdpa_say(struct agent *a, const char *fmt, const char *arg);
void rdpa_send_line(struct agent *a, const char *line);
/* The segment's own processes have all ended, and what they started is still running: the
 * agent waits for every one (a process substitution may still be writing its file), and
 * once RDPA_LEFT_S have passed it says which, once, so a wait is never silent. */
#define RDPA_LEFT_S 5
void rdpa_note_leftovers(struct agent *a);
/* The processes the agent adopted as subreaper (their parent died): up to max, from /proc. */
#define RDPA_ORPHANS 64
struct rdpa_orphan {
    pid_t pid;
    char name[24];
};
int rdpa_orphans(const struct agent *a, struct rdpa_orphan *out, int max);

/* The watchdog: the leader of the children's process group, which kills the group when the
 * agent dies, however it dies (it waits on a pipe only the agent holds, *death_w). Its pid,
 * or -1. */
pid_t rdpa_start_watchdog(int *death_w);
void rdpa_kill_children(struct agent *a, int sig);
/* Stop every child (SIGTERM, up to 1 s, SIGKILL) and exit with code. */
void rdpa_teardown(struct agent *a, int code) __attribute__((noreturn));
/* Start child idx (C_RECV, C_SEND, ...): rdsend/rdrecv or a role's tool with its keys in the
 * environment and its stderr captured (--json, log lines), or a plain command. */
int rdpa_start_tool(struct agent *a, int idx, char **argv, const char *key, int in, int out, int fd3);
pid_t rdpa_start_plain(struct agent *a, int idx, char **argv, int in, int out);
/* What a child printed: its --json (bytes, seconds, transport, error), its other lines as log. */
void rdpa_read_capture(struct agent *a, struct child *c);
/* Wait up to 1 s for child c's report pipe fd (its fd 3) to be readable, while its stderr is
 * drained and the control channel watched for its hang-up only (its lines are the main
 * loop's): the initiator gone or a SIGTERM, SIGINT or SIGHUP tears everything down. 1: fd is
 * readable (or at its end), 0: not yet, -1: poll failed. */
int rdpa_wait_report(struct agent *a, struct child *c, int fd);
/* "list": the sending role's tool names its roots (rdr_role.h), each said as "root HEX";
 * it runs to its end in C_SEND's slot and leaves it empty. Its exit code (0: listed), and
 * then *why its reason (malloc'd) or NULL. */
int rdpa_list_roots(struct agent *a, char **why);
/* Report finished children (stat, exit); a failure ends the segment. */
void rdpa_report(struct agent *a);
/* Collect exited children and descendants (the agent is a subreaper). */
void rdpa_reap(struct agent *a);

#endif
