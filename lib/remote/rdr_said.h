/* rdr_said.h - what an agent says after setup, parsed: the lines rdpipe's and rdcp's
 * initiators read beside the setup replies (rdr_link_setup_line).
 *
 * An agent's host may be hostile, so every field is checked here, once, and the initiators
 * act only on what passed: numbers are whole decimal words in range (never atoi or sscanf's
 * wrap-around), texts are hex that decodes to printable text (rdr_unhex_text), and a line of
 * any other shape is RDR_SAID_OTHER, which the initiators ignore - except an exit line, whose
 * bad status is RDR_SAID_CODE_MAX: a role ended, and a garbled word is never a success. The formats are those the
 * agent writes (rdp_agent*.c), kept here so that both ends and the fuzz target share them.
 */
#ifndef RDR_SAID_H
#define RDR_SAID_H

/* "stat ROLE BYTES SECONDS TRANSPORT": a role's statistics (TRANSPORT as rdr_stat_transport) */
#define RDR_SAID_STAT_FMT "stat %s %llu %.6f %s"
/* "exit ROLE CODE KILLED TEXT": a role ended; TEXT is the hex of its last error ("-": none) */
#define RDR_SAID_EXIT_FMT "exit %s %d %d %s"

/* The most an exit code can be: a process's own (0-255), or 128 + a signal's number. */
#define RDR_SAID_CODE_MAX 255
/* The most seconds a statistic may claim (about 31 years): more is a lie, taken as 0. */
#define RDR_SAID_SECONDS_MAX 1e9

enum rdr_said_kind {
    RDR_SAID_OTHER = 0,   /* not one of these lines, or one of them with a bad field */
    RDR_SAID_CLOSED,      /* "closed": the segment's command closed its input early */
    RDR_SAID_NOTE,        /* "note TEXT": for the user, -v or not */
    RDR_SAID_LOG,         /* "log TEXT": a role's stderr line */
    RDR_SAID_STAT,
    RDR_SAID_EXIT,
    RDR_SAID_MANIFEST,    /* "manifest HEX": an entry of rdcp's --resume manifest (rdc_tree.h) */
    RDR_SAID_ROOT,        /* "root HEX": a name a sending role writes at DST's top (rdr_role.h),
                           * rdr_said_root_name's */
    RDR_SAID_LISTED,      /* "listed": the sending role named them all */
};

struct rdr_said {
    enum rdr_said_kind kind;
    const char *role;            /* STAT, EXIT: the role's word as said (points into w) */
    const char *word;            /* STAT: the transport word; MANIFEST, ROOT: the hex */
    int code;                    /* EXIT: 0..RDR_SAID_CODE_MAX */
    int killed;                  /* EXIT: 0 or 1 (the agent ended it: not a failure to name) */
    unsigned long long bytes;    /* STAT */
    double seconds;              /* STAT: 0..RDR_SAID_SECONDS_MAX */
    char *text;                  /* NOTE, LOG, EXIT: printable text (malloc'd; "" for "-"; for
                                  * an EXIT whose text is not hex, a placeholder) */
};

/* Parse the n words of a split line (rdr_split) into *s; returns s->kind. The words must
 * outlive *s. Free s->text with rdr_said_free, whatever the kind. */
enum rdr_said_kind rdr_said_parse(char **w, int n, struct rdr_said *s);
void rdr_said_free(struct rdr_said *s);

/* hex is the hex of a name that can stand at a directory's top: 1..NAME_MAX bytes, no NUL,
 * no '/', not "." nor "..". 1 or 0. */
int rdr_said_root_name(const char *hex);

/* A whole word of digits with at most a point (as %f writes it) within [0, max]: 0, or -1. */
int rdr_parse_seconds(const char *word, double max, double *v);

#endif
