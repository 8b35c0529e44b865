/* rdc_note.c - reading the "@rdcp ..." lines of the tree roles, strictly (rdc_note.h). */
#include "copy/rdc_note.h"

#include "remote/rdr_said.h"
#include "util/rd_number.h"

#include <limits.h>
#include <string.h>

#define MAX_WORDS 8

/* Split s (a copy of at most 255 bytes) on single spaces: a double space, or one at either
 * end, is an empty word, which no number is. Returns the count, or -1 past max. */
static int split_exact(char *s, char **w, int max)
{
    int n = 0;
    for (char *p = s;; p++) {
        if (n == max)
            return -1;
        w[n++] = p;
        if (!(p = strchr(p, ' ')))
            return n;
        *p = '\0';
    }
}

static int numbers(char **w, int n, unsigned long long *v)
{
    for (int i = 0; i < n; i++)
        if (rd_parse_decimal(w[i], ULLONG_MAX, &v[i]))
            return -1;
    return 0;
}

static int is_hex_name(const char *h)
{
    size_t n = strlen(h);
    return n && n % 2 == 0 && strspn(h, "0123456789abcdef") == n;
}

enum rdc_note_kind rdc_note_parse(const char *line, struct rdc_note *o)
{
    memset(o, 0, sizeof *o);
    const size_t tag = strlen(RDC_TAG);
    if (strncmp(line, RDC_TAG, tag) != 0) {
        /* a message; "@..." otherwise is some other tool's tag, for nobody */
        o->text = strncmp(line, "rdcp: ", 6) == 0 ? line + 6 : line;
        return o->kind = line[0] == '@' ? RDC_NOTE_TAGGED : RDC_NOTE_TEXT;
    }
    const char *rest = line + tag;
    o->kind = RDC_NOTE_TAGGED;
    if (strncmp(rest, "made ", 5) == 0) {
        if (is_hex_name(rest + 5)) {
            o->text = rest + 5;
            o->kind = RDC_NOTE_MADE;
        }
        return o->kind;
    }
    if (strcmp(rest, "notdir") == 0)
        return o->kind = RDC_NOTE_NOTDIR;
    char buf[256], *w[MAX_WORDS];
    if (strlen(rest) >= sizeof buf)
        return o->kind;
    strcpy(buf, rest);
    int n = split_exact(buf, w, MAX_WORDS);
    if (n == 4 && strcmp(w[0], "progress") == 0 && numbers(w + 1, 3, o->v) == 0)
        return o->kind = RDC_NOTE_PROGRESS;
    if (n == 3 && strcmp(w[0], "total") == 0 && numbers(w + 1, 2, o->v) == 0)
        return o->kind = RDC_NOTE_TOTAL;
    if (n == 7 && (strcmp(w[0], "sent") == 0 || strcmp(w[0], "recv") == 0) && numbers(w + 1, 5, o->v) == 0 &&
        rdr_parse_seconds(w[6], RDR_SAID_SECONDS_MAX, &o->secs) == 0)
        return o->kind = w[0][0] == 's' ? RDC_NOTE_SENT : RDC_NOTE_RECV;
    memset(o->v, 0, sizeof o->v);
    o->secs = 0;
    return o->kind;
}
