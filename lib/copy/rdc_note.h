/* rdc_note.h - the "@rdcp ..." lines rdcp's tree roles write on stderr for the initiator
 * (progress, totals, statistics, names made), in one place for the writers and the reader.
 *
 * They reach the initiator as an agent's log lines (rdr_said.h), from a host that may be
 * hostile: rdc_note_parse takes only the exact shapes below, whole decimal words that fit, a
 * finite duration, lower-case hex; any other "@rdcp" line is RDC_NOTE_TAGGED, for nobody.
 */
#ifndef RDC_NOTE_H
#define RDC_NOTE_H

#include "copy/rdc_tree.h"

#define RDC_NOTE_PROGRESS_FMT RDC_TAG "progress %llu %llu %llu\n"   /* files bytes skipped */
#define RDC_NOTE_TOTAL_FMT RDC_TAG "total %llu %llu\n"              /* files bytes */
/* files dirs bytes skipped errors seconds */
#define RDC_NOTE_SENT_FMT RDC_TAG "sent %llu %llu %llu %llu %llu %.6f\n"
#define RDC_NOTE_RECV_FMT RDC_TAG "recv %llu %llu %llu %llu %llu %.6f\n"
#define RDC_NOTE_NOTDIR_LINE RDC_TAG "notdir\n"   /* the receiver's DST is not a directory */
#define RDC_NOTE_MADE_FMT RDC_TAG "made %s\n" /* the hex of a name it made (rdr_hex_str) */

enum rdc_note_kind {
    RDC_NOTE_TEXT = 0,    /* not tagged: a message for the user (text) */
    RDC_NOTE_TAGGED,      /* tagged, but none of these or malformed: shown to nobody */
    RDC_NOTE_PROGRESS,    /* v[0..2] */
    RDC_NOTE_TOTAL,       /* v[0..1] */
    RDC_NOTE_SENT,        /* v[0..4], secs */
    RDC_NOTE_RECV,        /* v[0..4], secs */
    RDC_NOTE_NOTDIR,
    RDC_NOTE_MADE,        /* text: the hex name, non-empty lower-case hex of whole bytes */
};

struct rdc_note {
    enum rdc_note_kind kind;
    unsigned long long v[5];
    double secs;          /* 0..RDR_SAID_SECONDS_MAX */
    const char *text;     /* TEXT, MADE: points into the parsed line */
};

/* Parse one line as an agent's log gave it (no newline). Returns o->kind. */
enum rdc_note_kind rdc_note_parse(const char *line, struct rdc_note *o);

#endif
