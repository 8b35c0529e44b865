/* rdr_spec.h - rdpipe's pipeline description: parsing "[user@]host:'cmd'" arguments and
 * turning them into a plan in which every segment knows where its input comes from and
 * where its output goes (pure functions, no IO). */
#ifndef RDR_SPEC_H
#define RDR_SPEC_H

enum rdr_kind {
    RDR_CMD,      /* bash -c CMD */
    RDR_READ,     /* "<file": the file is the stream */
    RDR_WRITE,    /* ">file": the stream goes into the file (created / truncated) */
    RDR_APPEND,   /* ">>file": appended */
    RDR_PASS,     /* no command: the initiator's own stdin or stdout end */
    RDR_ROLE,     /* a sibling tool's end of the stream instead of rdsend/rdrecv (rdr_role.h);
                   * only agents see it: the seg line names the role */
};
enum rdr_in { RDR_IN_NONE, RDR_IN_STDIN, RDR_IN_RECV };
enum rdr_out { RDR_OUT_NONE, RDR_OUT_STDOUT, RDR_OUT_SEND };

struct rdr_seg {
    char *dest;       /* what ssh connects to ("user@host"); NULL = runs on the initiator */
    char *host;       /* for messages: "h1", "localhost" */
    char *text;       /* the segment's command text as typed */
    enum rdr_kind kind;
    char *cmd;        /* RDR_CMD */
    char *path;       /* RDR_READ / RDR_WRITE / RDR_APPEND, as typed (a leading "~" expanded by the agent) */
    enum rdr_in in;
    enum rdr_out out;
    int pseudo;       /* 1: the initiator's stdin end, 2: its stdout end */
    int redirect;     /* a '<', '>' or '>>' segment whose one word bash expands ('< $HOME/f'),
                       * run as the command "exec cat <WORD": 1 reads a file, 2 writes one */
};

/* Parse one argument. Returns 0, or -1 with a message in err (an argument that begins with
 * '-', or a host or user that does, is refused: see rdr_dest_check). */
int rdr_parse_segment(const char *arg, struct rdr_seg *s, char *err, int errlen);
/* The user's segments plus the initiator's stdin/stdout ends where they are needed, with
 * in/out filled in. has_input: the local stdin feeds the pipeline (it is not a terminal).
 * Returns 0 and a malloc'd array in *out (entries share the strings of `segs`), or -1. */
int rdr_plan(const struct rdr_seg *segs, int n, int has_input, struct rdr_seg **out, int *nout,
             char *err, int errlen);
/* An ssh destination "[user@]host" is safe to hand to ssh: no part empty or beginning with
 * '-' (ssh would parse it as an option: "-oProxyCommand=..." runs a command), no whitespace or
 * control characters. Returns 0, or -1 with one line naming the bad host or user in err.
 * rdpipe and rdcp check every destination they parse; rdr_link_spawn checks again. */
int rdr_dest_check(const char *dest, char *err, int errlen);
const char *rdr_kind_name(enum rdr_kind k);
void rdr_seg_free(struct rdr_seg *s);

#endif
