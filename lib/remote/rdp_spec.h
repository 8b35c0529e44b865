/* rdp_spec.h - rdpipe's pipeline description: parsing "[user@]host:'cmd'" arguments and
 * turning them into a plan in which every segment knows where its input comes from and
 * where its output goes (pure functions, no IO). */
#ifndef RDP_SPEC_H
#define RDP_SPEC_H

enum rdp_kind {
    RDP_CMD,      /* bash -c CMD */
    RDP_READ,     /* "<file": the file is the stream */
    RDP_WRITE,    /* ">file": the stream goes into the file (created / truncated) */
    RDP_APPEND,   /* ">>file": appended */
    RDP_PASS,     /* no command: the initiator's own stdin or stdout end */
    RDP_TSEND,    /* rdcp: `rdcp --tree-send ARGS` walks and sends a tree (instead of rdsend) */
    RDP_TRECV,    /* rdcp: `rdcp --tree-recv ARGS` receives a tree (instead of rdrecv) */
};
enum rdp_in { RDP_IN_NONE, RDP_IN_STDIN, RDP_IN_RECV };
enum rdp_out { RDP_OUT_NONE, RDP_OUT_STDOUT, RDP_OUT_SEND };

struct rdp_seg {
    char *dest;       /* what ssh connects to ("user@host"); NULL = runs on the initiator */
    char *host;       /* for messages: "h1", "localhost" */
    char *text;       /* the segment's command text as typed */
    enum rdp_kind kind;
    char *cmd;        /* RDP_CMD */
    char *path;       /* RDP_READ / RDP_WRITE / RDP_APPEND, as typed ("~/" expanded by the agent) */
    enum rdp_in in;
    enum rdp_out out;
    int pseudo;       /* 1: the initiator's stdin end, 2: its stdout end */
};

/* Parse one argument. Returns 0, or -1 with a message in err (an argument that begins with
 * '-', or a host or user that does, is refused: see rdp_dest_check). */
int rdp_parse_segment(const char *arg, struct rdp_seg *s, char *err, int errlen);
/* The user's segments plus the initiator's stdin/stdout ends where they are needed, with
 * in/out filled in. has_input: the local stdin feeds the pipeline (it is not a terminal).
 * Returns 0 and a malloc'd array in *out (entries share the strings of `segs`), or -1. */
int rdp_plan(const struct rdp_seg *segs, int n, int has_input, struct rdp_seg **out, int *nout,
             char *err, int errlen);
/* An ssh destination "[user@]host" is safe to hand to ssh: no part empty or beginning with
 * '-' (ssh would parse it as an option: "-oProxyCommand=..." runs a command), no whitespace or
 * control characters. Returns 0, or -1 with one line naming the bad host or user in err.
 * rdpipe and rdcp check every destination they parse; rdp_link_spawn checks again. */
int rdp_dest_check(const char *dest, char *err, int errlen);
const char *rdp_kind_name(enum rdp_kind k);
void rdp_seg_free(struct rdp_seg *s);

#endif
