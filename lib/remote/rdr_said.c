/* rdr_said.c - the lines an agent says after setup, checked before anyone acts on them. */
#include "remote/rdr_said.h"

#include "remote/rdr_line.h"
#include "util/rd_number.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int rdr_parse_seconds(const char *word, double max, double *v)
{
    /* as %f writes it: strtod alone would take "inf", "nan", hex floats, spaces and signs */
    if (!word[0] || !strchr("0123456789", word[0]) || strspn(word, "0123456789.") != strlen(word))
        return -1;
    char *end;
    errno = 0;
    double x = strtod(word, &end);
    if (*end || errno || !isfinite(x) || x < 0 || x > max)
        return -1;
    *v = x;
    return 0;
}

/* an exit line's code or killed flag: within [0, max] */
static int parse_small(const char *word, int max, int *v)
{
    unsigned long long x;
    if (rd_parse_decimal(word, (unsigned long long)max, &x))
        return -1;
    *v = (int)x;
    return 0;
}

static enum rdr_said_kind other(struct rdr_said *s)
{
    free(s->text);
    s->text = NULL;
    return s->kind = RDR_SAID_OTHER;
}

int rdr_said_root_name(const char *hex)
{
    size_t len;
    char *name = rdr_unhex(hex, &len);
    int ok = name && len >= 1 && len <= NAME_MAX && strlen(name) == len && !strchr(name, '/') &&
             strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
    free(name);
    return ok;
}

enum rdr_said_kind rdr_said_parse(char **w, int n, struct rdr_said *s)
{
    memset(s, 0, sizeof *s);
    if (n < 1)
        return RDR_SAID_OTHER;
    if (strcmp(w[0], "closed") == 0 && n == 1)
        return s->kind = RDR_SAID_CLOSED;
    if ((strcmp(w[0], "note") == 0 || strcmp(w[0], "log") == 0) && n == 2) {
        if (!(s->text = rdr_unhex_text(w[1])))
            return other(s);
        return s->kind = w[0][0] == 'n' ? RDR_SAID_NOTE : RDR_SAID_LOG;
    }
    if (strcmp(w[0], "manifest") == 0 && n == 2) {
        s->word = w[1];
        return s->kind = RDR_SAID_MANIFEST;
    }
    if (strcmp(w[0], "root") == 0 && n == 2 && rdr_said_root_name(w[1])) {
        s->word = w[1];
        return s->kind = RDR_SAID_ROOT;
    }
    if (strcmp(w[0], "listed") == 0 && n == 1)
        return s->kind = RDR_SAID_LISTED;
    if (strcmp(w[0], "stat") == 0 && n == 5) {
        s->role = w[1];
        s->word = w[4];
        if (rd_parse_decimal(w[2], ULLONG_MAX, &s->bytes) || rdr_parse_seconds(w[3], RDR_SAID_SECONDS_MAX, &s->seconds))
            return other(s);
        return s->kind = RDR_SAID_STAT;
    }
    if (strcmp(w[0], "exit") == 0 && n == 5) {
        s->role = w[1];
        /* a role ended, even if the line is garbled: never taken for a success, and never
         * for a kill the agent chose, which names no failure */
        if (parse_small(w[2], RDR_SAID_CODE_MAX, &s->code) || parse_small(w[3], 1, &s->killed)) {
            s->code = RDR_SAID_CODE_MAX;
            s->killed = 0;
        }
        s->text = rdr_unhex_text(w[4]);
        if (!s->text && !(s->text = strdup("(a malformed message)")))
            return other(s);
        return s->kind = RDR_SAID_EXIT;
    }
    return RDR_SAID_OTHER;
}

void rdr_said_free(struct rdr_said *s)
{
    free(s->text);
    s->text = NULL;
}
